//! `/api/cameras/{id}/recordings` (the recorded spans of a window) and
//! `/api/cameras/{id}/recording.mp4` (a stretch as one MP4, with ranges).

use serde::Serialize;
use uuid::Uuid;

use super::media;
use super::no_such_camera;
use crate::app::App;
use crate::clock::now_ms;
use crate::error::Error;
use crate::event::{format_timestamp, parse_timestamp};
use crate::recording::{MAX_CLIP, MAX_LISTING};
use crate::web::query;
use crate::web::reply::Reply;

/// The window listed when none is given: the last 24 hours.
const DEFAULT_LISTING_MS: i64 = 24 * 3600 * 1000;

#[derive(Serialize)]
struct SpanView {
    start: String,
    end: String,
}

/// `GET /api/cameras/{id}/recordings[?start=&end=]`: the recorded spans
/// within the window (default: the last 24 hours), oldest first.
pub fn spans(app: &App, id: Uuid, query: &str) -> Result<Reply, Error> {
    let end = time(query, "end")?.unwrap_or_else(now_ms);
    let start = time(query, "start")?.unwrap_or(end - DEFAULT_LISTING_MS);
    check_window(start, end, MAX_LISTING.as_millis() as i64, "31 days")?;
    app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    let spans = app.recordings.spans(id, start, end)?;
    let views: Vec<SpanView> = spans
        .iter()
        .map(|s| SpanView {
            start: format_timestamp(s.start_ms),
            end: format_timestamp(s.end_ms),
        })
        .collect();
    Ok(Reply::json(200, &views))
}

/// `GET /api/cameras/{id}/recording.mp4?start=&end=`: at most an hour, from
/// the key frame at or before `start`; `Range` requests get 206.
pub fn mp4(app: &App, id: Uuid, query: &str, range: Option<&str>) -> Result<Reply, Error> {
    let required =
        |name| time(query, name)?.ok_or_else(|| Error::bad_request(format!("{name} is required")));
    let (start, end) = (required("start")?, required("end")?);
    check_window(start, end, MAX_CLIP.as_millis() as i64, "1 hour")?;
    app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    let clip = app.recordings.clip(id, start, end)?;
    let name = format_timestamp(clip.start_ms).replace([':', '.'], "-");
    let read = |start, end| -> std::io::Result<Box<dyn std::io::Read + Send>> {
        Ok(Box::new(clip.reader(start, end)))
    };
    Ok(media::reply("video/mp4", clip.len(), range, read)?
        // A stretch that reaches now grows; a player must not keep an old copy.
        .with_header("Cache-Control", "no-cache")
        .with_header(
            "Content-Disposition",
            format!("inline; filename=\"recording-{name}.mp4\""),
        ))
}

fn time(query: &str, name: &str) -> Result<Option<i64>, Error> {
    query::param(query, name)?
        .map(|text| parse_timestamp(name, &text))
        .transpose()
}

fn check_window(start: i64, end: i64, longest_ms: i64, longest: &str) -> Result<(), Error> {
    if end <= start {
        return Err(Error::bad_request("end must be after start"));
    }
    if end - start > longest_ms {
        return Err(Error::bad_request(format!(
            "the stretch from start to end must be at most {longest}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        assert!(check_window(0, 3_600_000, 3_600_000, "1 hour").is_ok());
        let over = check_window(0, 3_600_001, 3_600_000, "1 hour").unwrap_err();
        assert!(over.message.contains("at most 1 hour"), "{}", over.message);
        for (start, end) in [(5, 5), (6, 5)] {
            let err = check_window(start, end, 10, "x").unwrap_err();
            assert_eq!(err.message, "end must be after start");
        }
        assert_eq!(
            time("start=2026-11-22T10:04:05.123Z", "start").unwrap(),
            Some(1_795_341_845_123)
        );
        assert_eq!(time("", "start").unwrap(), None);
        let bad = time("start=yesterday", "start").unwrap_err();
        assert!(
            bad.message.starts_with("start must be an ISO 8601"),
            "{}",
            bad.message
        );
    }
}

//! `/api/events`: detection events; the most recent are listed newest first,
//! and detectors on this machine add new ones.

use std::net::IpAddr;

use serde::Serialize;
use uuid::Uuid;

use crate::app::App;
use crate::error::Error;
use crate::error::Kind;
use crate::event::{Event, NewEvent, format_timestamp};
use crate::reply::Reply;

/// The spec's limit on events returned.
const RECENT_EVENTS: u32 = 50;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventView<'a> {
    id: String,
    camera_id: String,
    kind: &'a str,
    score: f64,
    started_at: String,
    ended_at: String,
    clip_status: &'a str,
}

impl<'a> EventView<'a> {
    fn new(event: &'a Event) -> EventView<'a> {
        EventView {
            id: event.id.to_string(),
            camera_id: event.camera_id.to_string(),
            kind: &event.kind,
            score: event.score,
            started_at: format_timestamp(event.started_at_ms),
            ended_at: format_timestamp(event.ended_at_ms),
            clip_status: &event.clip_status,
        }
    }
}

pub fn list(app: &App) -> Result<Reply, Error> {
    let events = app.db(|s| s.recent_events(RECENT_EVENTS))?;
    let views: Vec<EventView> = events.iter().map(EventView::new).collect();
    Ok(Reply::json(200, &views))
}

/// `POST /api/events`, from this machine only: the API has no authentication,
/// and events must not be forged from the LAN.
pub fn add(app: &App, peer: Option<IpAddr>, body: &[u8]) -> Result<Reply, Error> {
    if !peer.is_some_and(|ip| ip.to_canonical().is_loopback()) {
        return Err(Error::new(
            Kind::Forbidden,
            "events are accepted from this machine only",
        ));
    }
    let new = NewEvent::from_json(body)?;
    if let Some(clip) = &new.clip_path
        && !is_file_inside(&app.data_dir, clip)
    {
        return Err(Error::bad_request("clipPath names no file under DATA_DIR"));
    }
    let event = Event {
        id: Uuid::new_v4(),
        camera_id: new.camera_id,
        kind: new.kind,
        score: new.score,
        started_at_ms: new.started_at_ms,
        ended_at_ms: new.ended_at_ms,
        clip_status: "local".to_owned(),
        clip_path: new.clip_path,
    };
    let dropped = app.db(|s| {
        if s.camera(event.camera_id)?.is_none() {
            return Ok(None);
        }
        s.insert_event(&event, app.max_events).map(Some)
    })?;
    let dropped = dropped.ok_or_else(|| Error::bad_request("cameraId names no camera"))?;
    app.remove_clips(&dropped);
    Ok(Reply::json(201, &EventView::new(&event)))
}

/// Whether `relative` is a regular file inside `dir`, links resolved.
fn is_file_inside(dir: &std::path::Path, relative: &str) -> bool {
    let (Ok(dir), Ok(file)) = (dir.canonicalize(), dir.join(relative).canonicalize()) else {
        return false;
    };
    file.starts_with(dir) && file.is_file()
}

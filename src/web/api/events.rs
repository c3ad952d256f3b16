//! `/api/events`: detection events; the most recent are listed newest first,
//! detectors on this machine add new ones, and each one's clip and thumbnail.

use std::io::{Read, Seek, SeekFrom};
use std::net::IpAddr;
use std::time::Duration;

use uuid::Uuid;

use super::media;
use crate::app::App;
use crate::clips::Job;
use crate::error::Error;
use crate::error::Kind;
use crate::event::{
    Event, EventView, Kind as EventKind, Marks, NewEvent, camera_id, checked_zone_name,
    parse_timestamp,
};
use crate::json_body::object;
use crate::notices::Notice;
use crate::store::{EventFilter, Flagged};
use crate::sys::data_file::is_absent;
use crate::web::query::param;
use crate::web::reply::Reply;

/// The spec's limit on events returned.
const RECENT_EVENTS: u32 = 50;

/// `GET /api/events?before=&after=&cameraId=&kind=&zone=&reviewed=&keep=`: the newest
/// 50 that the parameters let through.
pub fn list(app: &App, query: &str) -> Result<Reply, Error> {
    let filter = filter(query)?;
    let events = app.db(|s| s.events(&filter, RECENT_EVENTS))?;
    let views: Vec<EventView> = events.iter().map(EventView::new).collect();
    Ok(Reply::json(200, &views))
}

/// Ids an undo names at most: their JSON fits the 64 KiB body.
const MAX_IDS: usize = 1000;

/// The list's parameters, from the query; a bad one is refused by name.
fn filter(query: &str) -> Result<EventFilter, Error> {
    filter_of(|name| param(query, name))
}

/// The same filter from a JSON body's fields (strings, or booleans for the flags).
fn body_filter(fields: &serde_json::Map<String, serde_json::Value>) -> Result<EventFilter, Error> {
    use serde_json::Value;
    filter_of(|name| match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Bool(flag)) if matches!(name, "reviewed" | "keep") => {
            Ok(Some(flag.to_string()))
        }
        Some(_) if matches!(name, "reviewed" | "keep") => Ok(Some(String::new())),
        Some(_) => Err(Error::bad_request(format!("{name} must be a string"))),
    })
}

/// The filter of events, each parameter as `value` gives it by name.
fn filter_of(value: impl Fn(&str) -> Result<Option<String>, Error>) -> Result<EventFilter, Error> {
    let flag = |name: &str| match value(name)?.as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(Error::bad_request(format!("{name} must be true or false"))),
    };
    let kind = value("kind")?;
    if let Some(kind) = &kind
        && EventKind::from_name(kind).is_none()
    {
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        return Err(Error::bad_request(format!(
            "kind must be one of {}",
            names.join(", ")
        )));
    }
    let time = |name: &str| value(name)?.map(|t| parse_timestamp(name, &t)).transpose();
    Ok(EventFilter {
        before_ms: time("before")?,
        after_ms: time("after")?,
        camera_id: value("cameraId")?.map(|id| camera_id(&id)).transpose()?,
        kind,
        zone: value("zone")?
            .map(|name| checked_zone_name("zone", &serde_json::Value::String(name)))
            .transpose()?,
        reviewed: flag("reviewed")?,
        keep: flag("keep")?,
    })
}

/// `PATCH /api/events/{id}`: marks it reviewed or not, kept or not.
pub fn update(app: &App, id: Uuid, body: &[u8]) -> Result<Reply, Error> {
    let marks = Marks::from_json(body)?;
    let budget = app.clips.keep_max_bytes();
    match app.db(|s| s.mark_event(id, marks.reviewed, marks.keep, budget))? {
        Flagged::Done(event) => {
            if marks.keep.is_some() {
                app.clips.keep_changed();
            }
            Ok(Reply::json(200, &EventView::new(&event)))
        }
        Flagged::NoSuchEvent => Err(Error::not_found("no such event")),
        Flagged::OverKeepBudget {
            kept_bytes,
            event_bytes,
        } => Err(Error::new(
            Kind::Conflict,
            format!(
                "cannot keep this event: kept events take {kept_bytes} bytes of their \
                 {budget} (CLIPS_KEEP_MAX_BYTES), and this one takes {event_bytes}; to free \
                 room, stop keeping some (PATCH /api/events/{{id}} with {{\"keep\": false}}; \
                 GET /api/events?keep=true lists them) or raise CLIPS_KEEP_MAX_BYTES"
            ),
        )),
    }
}

/// `POST /api/events/reviewed`: marks reviewed the events the list's
/// filters let through (`before` required: what the person saw); answers
/// how many and which (`dryRun`: would be, marking none).
pub fn mark_reviewed(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let fields = object(body)?;
    let filter = body_filter(&fields)?;
    if filter.before_ms.is_none() {
        return Err(Error::bad_request("before is required"));
    }
    let dry_run = match fields.get("dryRun") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(flag)) => *flag,
        Some(_) => return Err(Error::bad_request("dryRun must be true or false")),
    };
    let ids = app.db(|s| {
        if let Some(camera) = filter.camera_id
            && s.camera(camera)?.is_none()
        {
            return Ok(None);
        }
        s.mark_reviewed(&filter, dry_run).map(Some)
    })?;
    let ids = ids.ok_or_else(|| Error::bad_request("cameraId names no camera"))?;
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    Ok(Reply::json(
        200,
        &serde_json::json!({ "marked": ids.len(), "ids": ids }),
    ))
}

/// `POST /api/events/unreviewed`: marks the events `ids` not reviewed (the
/// undo of a mark); answers how many were reviewed.
pub fn unmark_reviewed(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let ids = event_ids(&object(body)?)?;
    let unmarked = app.db(|s| s.unmark_reviewed(&ids))?;
    Ok(Reply::json(
        200,
        &serde_json::json!({ "unmarked": unmarked }),
    ))
}

/// `ids`: 1 to MAX_IDS event ids.
fn event_ids(fields: &serde_json::Map<String, serde_json::Value>) -> Result<Vec<Uuid>, Error> {
    let bad = || Error::bad_request(format!("ids must be an array of 1 to {MAX_IDS} event ids"));
    let list = match fields.get("ids") {
        Some(serde_json::Value::Array(list)) if (1..=MAX_IDS).contains(&list.len()) => list,
        _ => return Err(bad()),
    };
    list.iter()
        .enumerate()
        .map(|(i, id)| {
            id.as_str()
                .and_then(|id| Uuid::try_parse(id).ok())
                .ok_or_else(|| Error::bad_request(format!("ids[{i}] must be an event id (a UUID)")))
        })
        .collect()
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
    // The detector's own clip: taken only if it is there, as the node would
    // serve and upload it.
    if let Some(clip) = &new.clip_path
        && app.clips.open(clip).is_err()
    {
        return Err(Error::bad_request(
            "clipPath names no regular file below DATA_DIR/clips (symbolic links are not followed)",
        ));
    }
    let event = Event {
        id: crate::id::new_id(),
        camera_id: new.camera_id,
        kind: new.kind,
        score: new.score,
        started_at_ms: new.started_at_ms,
        ended_at_ms: new.ended_at_ms,
        clip_status: "local".to_owned(),
        clip_path: new.clip_path,
        thumbnail_path: None,
        zones: new.zones,
        in_progress: false,
        reviewed: false,
        keep: false,
        objects: Vec::new(),
        loitering: false,
    };
    if !app.clips.add_event(&event)? {
        return Err(Error::bad_request("cameraId names no camera"));
    }
    app.notices.send(Notice::EventPosted { event: event.id });
    // Without a clip of its own, the camera's recording gives it one.
    if event.clip_path.is_some() {
        app.notices.send(Notice::EventFinished { event: event.id });
    } else {
        app.clips.request(Job::of(&event));
    }
    Ok(Reply::json(201, &EventView::new(&event)))
}

/// `GET /api/events/{id}/clip.mp4`: the event's clip, by ranges.
pub fn clip(app: &App, id: Uuid, range: Option<&str>) -> Result<Reply, Error> {
    let path = event_file(app, id, |e| e.clip_path, "clip")?;
    file(app, &path, "video/mp4", range)
}

/// `GET /api/events/{id}/thumbnail.jpg`.
/// The event's thumbnail; until it is made (at the event's end), the
/// picture taken for its alert, if there was one.
pub fn thumbnail(app: &App, id: Uuid) -> Result<Reply, Error> {
    match event_file(app, id, |e| e.thumbnail_path, "thumbnail") {
        Ok(path) => file(app, &path, "image/jpeg", None),
        Err(e) if e.kind == Kind::NotFound => match app.pictures.get(id, Duration::ZERO) {
            Some(jpeg) => {
                Ok(Reply::shared(200, "image/jpeg", jpeg).with_header("Cache-Control", "no-store"))
            }
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// The path of the event's `what` (`which` of it), or why there is none.
fn event_file(
    app: &App,
    id: Uuid,
    which: fn(Event) -> Option<String>,
    what: &str,
) -> Result<String, Error> {
    let event = app
        .db(|s| s.event(id))?
        .ok_or_else(|| Error::not_found("no such event"))?;
    which(event).ok_or_else(|| Error::not_found(format!("this event has no {what}")))
}

/// An event's file, or 404 when it is gone (deleted by hand, say) or is not
/// a regular file below `clips/` reached through no symbolic link.
fn file(
    app: &App,
    path: &str,
    content_type: &'static str,
    range: Option<&str>,
) -> Result<Reply, Error> {
    let (file, len) = app.clips.open(path).map_err(|e| match is_absent(&e) {
        true => Error::not_found("the file of this event is gone"),
        false => Error::internal("opening an event's file", &e),
    })?;
    let read = move |start: u64, end: u64| -> std::io::Result<Box<dyn Read + Send>> {
        let mut file = file;
        file.seek(SeekFrom::Start(start))?;
        Ok(Box::new(file.take(end - start)))
    };
    // Clips and thumbnails never change once made.
    Ok(media::reply(content_type, len, range, read)?
        .with_header("Cache-Control", "private, max-age=86400"))
}

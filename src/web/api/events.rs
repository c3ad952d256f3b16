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
    Event, EventView, Kind as EventKind, Marks, NewEvent, ReviewedBefore, camera_id,
    checked_zone_name, parse_timestamp,
};
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

/// The list's parameters; a bad one is refused by name.
fn filter(query: &str) -> Result<EventFilter, Error> {
    let flag = |name: &str| match param(query, name)?.as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(Error::bad_request(format!("{name} must be true or false"))),
    };
    let kind = param(query, "kind")?;
    if let Some(kind) = &kind
        && EventKind::from_name(kind).is_none()
    {
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        return Err(Error::bad_request(format!(
            "kind must be one of {}",
            names.join(", ")
        )));
    }
    let time = |name: &str| {
        param(query, name)?
            .map(|t| parse_timestamp(name, &t))
            .transpose()
    };
    Ok(EventFilter {
        before_ms: time("before")?,
        after_ms: time("after")?,
        camera_id: param(query, "cameraId")?
            .map(|id| camera_id(&id))
            .transpose()?,
        kind,
        zone: param(query, "zone")?
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

/// `POST /api/events/reviewed`: marks reviewed the events (of a camera, or
/// all) started before a moment; answers how many it marked.
pub fn mark_reviewed(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let ReviewedBefore {
        before_ms,
        camera_id,
    } = ReviewedBefore::from_json(body)?;
    let marked = app.db(|s| {
        if let Some(camera) = camera_id
            && s.camera(camera)?.is_none()
        {
            return Ok(None);
        }
        s.mark_reviewed_before(before_ms, camera_id).map(Some)
    })?;
    let marked = marked.ok_or_else(|| Error::bad_request("cameraId names no camera"))?;
    Ok(Reply::json(200, &serde_json::json!({ "marked": marked })))
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

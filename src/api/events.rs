//! `GET /api/events`: the most recent detection events, newest first.

use serde::Serialize;

use crate::app::App;
use crate::error::Error;
use crate::event::{Event, format_timestamp};
use crate::http::Reply;

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

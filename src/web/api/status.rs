//! `GET /api/status`: the node, its cloud link, the relay's health and version, the
//! cameras and the recordings' and events' clips' use of storage. With an
//! `ETag`, so a client polling it (the UI, every 3 s) is answered
//! `304 Not Modified`, without the body, while nothing in it has changed.

use serde::Serialize;
use uuid::Uuid;

use super::cameras::CameraView;
use super::tls::{Https, HttpsView};
use crate::app::{App, StatusBody};
use crate::clock;
use crate::error::Error;
use crate::event::format_timestamp;
use crate::mqtt;
use crate::web::reply::Reply;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    node_id: Option<String>,
    node_name: &'a str,
    version: &'static str,
    cloud: serde_json::Value,
    relay_healthy: bool,
    /// The version the relay names, while it is up.
    relay_version: Option<String>,
    /// The link to the MQTT broker for Home Assistant.
    mqtt: serde_json::Value,
    /// Whether motion events can be classified, and how it goes.
    classifier: serde_json::Value,
    /// The node's HTTPS, when it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    https: Option<HttpsView>,
    /// "the clock is not set" and what the node does meanwhile, in plain
    /// words; null when it is set.
    clock: Option<&'static str>,
    cameras: Vec<CameraEntry<'a>>,
    /// The events not reviewed, of all cameras.
    unreviewed_events: u64,
    storage: StorageView,
    /// Whether alerts go out, cameras snoozed, and how delivering to each
    /// destination goes.
    alerts: serde_json::Value,
}

/// A camera as the status shows it: as everywhere, and its events not reviewed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CameraEntry<'a> {
    #[serde(flatten)]
    camera: CameraView<'a>,
    unreviewed_events: u64,
}

/// What recordings and events' clips take of the disk.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StorageView {
    used_bytes: u64,
    /// Of which footage of cameras the node does not know (its database
    /// was lost): kept, and deleted oldest first when room is needed.
    unclaimed_bytes: u64,
    budget_bytes: Option<u64>,
    reserve_bytes: u64,
    free_bytes: Option<u64>,
    total_bytes: Option<u64>,
    oldest_recording_at: Option<String>,
    /// What keeps recordings from being made or cleaned up, and what to
    /// do, in plain words; null when all is well.
    message: Option<String>,
    /// The last deletion of recordings and the rule that made it; null
    /// until one since the node started.
    last_deletion: Option<DeletionView>,
    clips_bytes: u64,
    /// The last deletion of events and the rule that made it; null until
    /// one since the node started.
    last_events_deletion: Option<EventsDeletionView>,
    clips_budget_bytes: u64,
    clips_reserve_bytes: u64,
    /// The kept events' files, apart from `clipsBytes` (the others', which
    /// `clipsBudgetBytes` bounds): no rule deletes them.
    kept_bytes: u64,
    kept_budget_bytes: u64,
    /// The clips' disk, only when it is not the recordings'.
    #[serde(skip_serializing_if = "Option::is_none")]
    clips_free_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clips_total_bytes: Option<u64>,
}

/// Segments one rule deleted: `rule` is `RECORDINGS_MAX_BYTES`,
/// `RECORDINGS_RESERVE` or `retainDays` (then `cameraId` is the camera's).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeletionView {
    at: String,
    rule: &'static str,
    camera_id: Option<String>,
    segments: u64,
    bytes: u64,
}

/// Events deleted at once, with their clips and thumbnails: `rule` is
/// `MAX_EVENTS`, `CLIPS_MAX_BYTES`, `CLIPS_RESERVE` or `EVENTS_RETAIN_DAYS`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventsDeletionView {
    at: String,
    rule: &'static str,
    events: u64,
    bytes: u64,
}

/// The body, or 304 when `if_none_match` (the request's `If-None-Match`)
/// names its tag.
pub fn get(app: &App, https: Option<&Https>, if_none_match: Option<&str>) -> Result<Reply, Error> {
    let body = app.status_body(|app| build(app, https))?;
    let reply = match if_none_match {
        Some(tags) if names_tag(tags, &body.etag) => Reply::empty(304),
        _ => Reply::shared(200, "application/json", body.json),
    };
    Ok(reply.with_header("ETag", &*body.etag))
}

/// Whether an `If-None-Match` value (tags separated by commas, or `*`)
/// names `etag`, by RFC 9110's weak comparison: `W/` is ignored.
fn names_tag(tags: &str, etag: &str) -> bool {
    tags.split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// FNV-1a, 64 bits: an entity tag needs no more than telling bodies apart.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn build(app: &App, https: Option<&Https>) -> Result<StatusBody, Error> {
    let json = serialize(app, https)?;
    Ok(StatusBody {
        etag: format!("\"{:016x}\"", hash(&json)).into(),
        json: json.into(),
    })
}

fn serialize(app: &App, https: Option<&Https>) -> Result<Vec<u8>, Error> {
    let (node_id, cameras, tallies) =
        app.db(|s| Ok((s.node_id()?, s.cameras()?, s.event_tallies()?)))?;
    let unreviewed = |camera: &Uuid| tallies.unreviewed.get(camera).copied().unwrap_or(0);
    let status = Status {
        node_id,
        node_name: &app.node_name(),
        version: env!("CARGO_PKG_VERSION"),
        cloud: app.cloud_state().to_json(),
        relay_healthy: app.relay_healthy(),
        relay_version: app.relay_version(),
        mqtt: mqtt_view(app.mqtt_state()),
        classifier: classifier_view(app),
        https: https.map(HttpsView::new),
        clock: clock::doubt().map(|doubt| match doubt {
            clock::Doubt::Behind => {
                "the clock is not set: recordings are timed from the newest one on until it is, then moved to their true times"
            }
            clock::Doubt::Ahead => {
                "the clock jumped ahead and is not synchronised: recordings are timed on from before the jump until it is, \
                 or it has held for an hour, and nothing is deleted by age meanwhile"
            }
            clock::Doubt::AheadAtStart => {
                "the clock was ahead of the newest recording when the node started, and is not synchronised: \
                 recordings are timed by it, but nothing is deleted by age until it is synchronised or has held \
                 for an hour"
            }
        }),
        cameras: cameras
            .iter()
            .map(|c| CameraEntry {
                camera: CameraView::new(c, app),
                unreviewed_events: unreviewed(&c.id),
            })
            .collect(),
        unreviewed_events: tallies.unreviewed.values().sum(),
        alerts: super::alerts::status_view(app)?,
        storage: {
            let storage = app.recordings.storage();
            let clips = app.clips.storage();
            StorageView {
                used_bytes: storage.used_bytes,
                unclaimed_bytes: storage.unclaimed_bytes,
                budget_bytes: storage.budget_bytes,
                reserve_bytes: storage.reserve_bytes,
                free_bytes: storage.free_bytes,
                total_bytes: storage.total_bytes,
                oldest_recording_at: storage.oldest_ms.map(format_timestamp),
                // Both, when both say something: the recordings' first.
                message: match (storage.message, clips.message) {
                    (Some(recordings), Some(clips)) => Some(format!("{recordings}; {clips}")),
                    (recordings, clips) => recordings.or(clips),
                },
                last_deletion: storage.last_deletion.map(|d| DeletionView {
                    at: format_timestamp(d.at_ms),
                    rule: d.rule,
                    camera_id: d.camera_id.map(|id| id.to_string()),
                    segments: d.segments,
                    bytes: d.bytes,
                }),
                clips_bytes: clips.used_bytes,
                last_events_deletion: clips.last_deletion.map(|d| EventsDeletionView {
                    at: format_timestamp(d.at_ms),
                    rule: d.rule,
                    events: d.events,
                    bytes: d.bytes,
                }),
                clips_budget_bytes: clips.budget_bytes,
                clips_reserve_bytes: clips.reserve_bytes,
                kept_bytes: tallies.kept_bytes,
                kept_budget_bytes: app.clips.keep_max_bytes(),
                clips_free_bytes: clips.disk.map(|d| d.free),
                clips_total_bytes: clips.disk.map(|d| d.total),
            }
        },
    };
    Ok(serde_json::to_vec(&status).expect("status serializes"))
}

/// `{"installed", "running", "failures"}`: the program and its model are
/// there; its process is up with its model loaded; how often it failed
/// since the node started.
fn classifier_view(app: &App) -> serde_json::Value {
    let figures = app.classifier.figures();
    serde_json::json!({
        "installed": app.classifier.installed(),
        "running": figures.pid.is_some(),
        "failures": figures.failures,
    })
}

/// `{"state": "disabled" | "connecting" | "connected" | "error", "message"}`:
/// why, for an error; never a secret (the session's messages carry none).
fn mqtt_view(state: Option<mqtt::State>) -> serde_json::Value {
    let (name, message) = match state {
        None => ("disabled", None),
        Some(mqtt::State::Connecting) => ("connecting", None),
        Some(mqtt::State::Connected) => ("connected", None),
        Some(mqtt::State::Error(message)) => ("error", Some(message)),
    };
    serde_json::json!({ "state": name, "message": message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_names_the_tag() {
        let etag = "\"00000000000000ab\"";
        let cases = [
            ("\"00000000000000ab\"", true),
            ("W/\"00000000000000ab\"", true),
            ("*", true),
            ("\"1\", \"00000000000000ab\"", true),
            ("\"1\",W/\"00000000000000ab\" ", true),
            ("\"00000000000000ac\"", false),
            ("00000000000000ab", false),
            ("\"00000000000000AB\"", false),
            ("", false),
            ("\"1\", \"2\"", false),
        ];
        for (tags, named) in cases {
            assert_eq!(names_tag(tags, etag), named, "{tags:?}");
        }
    }

    #[test]
    fn the_hash_is_fnv_1a() {
        // FNV-1a 64 test vectors (draft-eastlake-fnv).
        assert_eq!(hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash(b"foobar"), 0x8594_4171_f739_67e8);
    }
}

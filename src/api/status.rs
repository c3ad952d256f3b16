//! `GET /api/status`: the node, its cloud link, the relay's health and version, the
//! cameras and the recordings' and events' clips' use of storage.

use serde::Serialize;

use super::cameras::CameraView;
use crate::app::App;
use crate::error::Error;
use crate::event::format_timestamp;
use crate::mqtt;
use crate::reply::Reply;

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
    cameras: Vec<CameraView<'a>>,
    storage: StorageView,
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
    clips_bytes: u64,
    clips_budget_bytes: u64,
    clips_reserve_bytes: u64,
    /// The clips' disk, only when it is not the recordings'.
    #[serde(skip_serializing_if = "Option::is_none")]
    clips_free_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clips_total_bytes: Option<u64>,
}

pub fn get(app: &App) -> Result<Reply, Error> {
    let body = app.status_body(build)?;
    Ok(Reply::bytes(200, "application/json", body.to_vec()))
}

fn build(app: &App) -> Result<Vec<u8>, Error> {
    let (node_id, cameras) = app.db(|s| Ok((s.node_id()?, s.cameras()?)))?;
    let status = Status {
        node_id,
        node_name: &app.node_name,
        version: env!("CARGO_PKG_VERSION"),
        cloud: app.cloud_state().to_json(),
        relay_healthy: app.relay_healthy(),
        relay_version: app.relay_version(),
        mqtt: mqtt_view(app.mqtt_state()),
        classifier: classifier_view(app),
        cameras: cameras.iter().map(|c| CameraView::new(c, app)).collect(),
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
                message: storage.message,
                clips_bytes: clips.used_bytes,
                clips_budget_bytes: clips.budget_bytes,
                clips_reserve_bytes: clips.reserve_bytes,
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

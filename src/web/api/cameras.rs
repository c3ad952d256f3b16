//! `/api/cameras`: list, add, delete and re-probe cameras, and their
//! snapshots. No response ever carries a camera URL.

use std::time::Instant;

use serde::Serialize;
use uuid::Uuid;

use super::no_such_camera;
use crate::app::App;
use crate::background::follow;
use crate::cameras::camera::{Camera, Capabilities, Settings, SettingsPatch, Zone};
use crate::cameras::neighbours;
use crate::cameras::prober::ProbeError;
use crate::cameras::rtsp_url::redact;
use crate::clock::now_ms;
use crate::error::{Error, Kind};
use crate::event::format_timestamp;
use crate::media::polygon::Polygon;
use crate::motion::key_frames::KeyFrames;
use crate::motion::snapshot::NoPicture;
use crate::recording::codecs::{self, Audio};
use crate::web::reply::Reply;

/// A camera as every response shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CameraView<'a> {
    id: String,
    name: &'a str,
    make: &'a str,
    model: &'a str,
    enabled: bool,
    record: bool,
    detect: bool,
    detect_sensitivity: &'static str,
    classify: bool,
    kinds: Vec<&'static str>,
    motion_masks: &'a [Polygon],
    zones: &'a [Zone],
    auto_mask: bool,
    /// The motion decoder decodes every frame all the time.
    full_rate: bool,
    /// What the node has learnt is always moving (left out while `auto_mask`).
    suggested_masks: Vec<Polygon>,
    /// Recorded segments older than this many days are deleted; null: no age limit.
    retain_days: Option<u32>,
    capabilities: CapabilitiesField,
    has_substream: bool,
    /// The audio the camera sends (the probe's name for it); null: none, or not probed.
    audio_codec: Option<&'a str>,
    /// The audio its recordings carry; null: none.
    recorded_audio: Option<&'a str>,
    /// What the user should know of how it is recorded, in plain words.
    warnings: Vec<String>,
    online: bool,
    recording: RecordingView,
    onvif: Option<OnvifView<'a>>,
    /// The stream's key frames and how its motion is decoded; null where
    /// the camera is not watched for motion.
    key_frames: Option<KeyFramesView>,
    /// null: the default (both where the ONVIF device offers events, else node).
    motion_source: Option<&'static str>,
    motion_events: MotionEventsView,
}

/// A watched camera's key frames and pace.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyFramesView {
    /// Null until two key frames came.
    interval_seconds: Option<f64>,
    /// `key`: key frames only, nothing moving; `full`: every frame.
    pace: &'static str,
    warning: Option<String>,
}

impl KeyFramesView {
    fn new(k: KeyFrames) -> KeyFramesView {
        KeyFramesView {
            interval_seconds: k.interval_seconds(),
            pace: if k.full { "full" } else { "key" },
            warning: k.warning(),
        }
    }
}

/// What the camera's own motion events are doing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MotionEventsView {
    /// The effective motion source.
    source: &'static str,
    state: &'static str,
    detail: Option<String>,
    last_message_at: Option<String>,
}

/// The ONVIF device a camera is, and what following it did.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OnvifView<'a> {
    endpoint: &'a str,
    address: &'a str,
    /// The end of the hardware address the node saw while the camera
    /// worked, enough for a person to know the device. The whole address and
    /// the serial number stay the node's evidence that a device which
    /// answers elsewhere is the camera (see `background/follow.rs`).
    hardware_address: Option<String>,
    message: Option<String>,
    /// The address of a device that claims to be the camera, for
    /// `PATCH {"onvif": {"confirmMove": …}}`.
    claim: Option<String>,
}

/// What the camera's recorder is doing.
#[derive(Serialize)]
struct RecordingView {
    state: &'static str,
    since: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

impl<'a> CameraView<'a> {
    pub fn new(camera: &'a Camera, app: &App) -> CameraView<'a> {
        let settings = &camera.settings;
        let has_substream = settings.rtsp_sub_url.is_some();
        let caps = camera.capabilities.as_ref();
        let capabilities = match &camera.capabilities {
            // The list shape leaves audioCodec out; only the probe response has it.
            Some(caps) => {
                CapabilitiesField::Known(CapabilitiesView::new(caps, has_substream, false))
            }
            None => CapabilitiesField::Empty {},
        };
        CameraView {
            id: camera.id.to_string(),
            name: &settings.name,
            make: &settings.make,
            model: &settings.model,
            enabled: settings.enabled,
            record: settings.record,
            detect: settings.detect,
            detect_sensitivity: settings.detect_sensitivity.name(),
            classify: settings.classify,
            kinds: settings.kinds.iter().map(|k| k.name()).collect(),
            motion_masks: &settings.motion_masks,
            zones: &settings.zones,
            auto_mask: settings.auto_mask,
            full_rate: settings.full_rate,
            suggested_masks: app.motion.suggested_masks(camera.id),
            retain_days: settings.retain_days,
            capabilities,
            has_substream,
            audio_codec: caps.and_then(|c| c.audio_codec.as_deref()),
            recorded_audio: Audio::of(caps).recorded(caps),
            warnings: codecs::warnings(caps),
            online: app.is_online(camera.id),
            recording: {
                let recorder = app.recordings.state(camera);
                RecordingView {
                    state: recorder.state.name(),
                    since: format_timestamp(recorder.since_ms),
                    message: recorder.message,
                }
            },
            onvif: settings.onvif.as_ref().map(|link| OnvifView {
                endpoint: &link.endpoint,
                address: &link.address,
                hardware_address: link.seen.mac.as_deref().map(neighbours::shown),
                message: app.finder.message(camera.id),
                claim: app.finder.claim(camera.id).map(|c| c.address.to_string()),
            }),
            key_frames: app.motion.key_frames(camera.id).map(KeyFramesView::new),
            motion_source: settings.motion_source.map(|s| s.name()),
            motion_events: {
                let events = app.motion.camera_events(camera);
                MotionEventsView {
                    source: events.source.name(),
                    state: events.state,
                    detail: events.detail,
                    last_message_at: events.last_message_ms.map(format_timestamp),
                }
            },
        }
    }
}

/// `{}` for a camera whose probe failed.
#[derive(Serialize)]
#[serde(untagged)]
enum CapabilitiesField {
    Known(CapabilitiesView),
    Empty {},
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CapabilitiesView {
    has_substream: bool,
    video_codec: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    audio_codec: Option<String>,
    width: u32,
    height: u32,
    fps: u32,
}

impl CapabilitiesView {
    fn new(caps: &Capabilities, has_substream: bool, with_audio: bool) -> CapabilitiesView {
        CapabilitiesView {
            has_substream,
            video_codec: caps.video_codec.clone(),
            audio_codec: caps.audio_codec.clone().filter(|_| with_audio),
            width: caps.width,
            height: caps.height,
            fps: caps.fps,
        }
    }
}

pub fn list(app: &App) -> Result<Reply, Error> {
    let cameras = app.db(|s| s.cameras())?;
    let views: Vec<CameraView> = cameras.iter().map(|c| CameraView::new(c, app)).collect();
    Ok(Reply::json(200, &views))
}

/// Probes first (without the database lock), then stores: a failed probe
/// still adds the camera, with empty capabilities. Past `MAX_CAMERAS` it is
/// refused before the probe, and again under the lock with the insert (for
/// two added at once).
pub fn add(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let settings = Settings::from_json(body, app.classifier.installed())?;
    let max = app.max_cameras;
    if app.db(|s| s.cameras())?.len() >= max {
        return Err(too_many(max));
    }
    let probed = app.prober.probe(&settings.rtsp_url);
    if let Err(e) = probed {
        let (name, url) = (&settings.name, redact(&settings.rtsp_url));
        log::info!("new camera {name:?} ({url}): {}", e.message());
    }
    // After a lost database, the camera finds its old recordings again. The
    // folders are read first, without the lock; whose they are is decided
    // under it, with the insert: a camera of the same address added
    // meanwhile, whose recorder may have made its folder since, keeps it.
    let folders = app.recordings.folders_recording(&settings.rtsp_url);
    let added = app.db(|s| {
        if s.cameras()?.len() >= max {
            return Ok(None);
        }
        let earlier = s.first_unknown_camera(&folders)?;
        let camera = Camera {
            id: earlier.unwrap_or_else(crate::id::new_id),
            settings,
            capabilities: probed.ok(),
        };
        s.insert_camera(&camera, now_ms())?;
        Ok(Some((camera, earlier)))
    })?;
    let (camera, earlier) = added.ok_or_else(|| too_many(max))?;
    log::info!("added camera {} {:?}", camera.id, camera.settings.name);
    if earlier.is_some() {
        log::info!(
            "camera {}: takes over the recordings an earlier camera with the same address left",
            camera.id
        );
    }
    // Disabled cameras count as offline, whatever they answer.
    app.set_online(
        camera.id,
        camera.settings.enabled && camera.capabilities.is_some(),
    );
    app.cameras_changed();
    Ok(Reply::json(201, &CameraView::new(&camera, app)))
}

fn too_many(max: usize) -> Error {
    Error::new(
        Kind::Conflict,
        format!(
            "the node has {max} cameras, its most (MAX_CAMERAS): delete one first, \
             or raise MAX_CAMERAS on a board with the memory for more"
        ),
    )
}

/// Changes the fields given (see [`App::update_camera`]), moving the camera
/// where the user confirms a device that claims to be it is. A change that
/// would send the camera's account to a new host needs its password
/// (`account::Guesses::check`): refused before anything is called.
pub fn update(app: &App, id: Uuid, body: &[u8]) -> Result<Reply, Error> {
    let patch = SettingsPatch::from_json(body)?;
    let before = app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    app.guesses
        .check(&before.settings, &patch, Instant::now())?;
    let camera = match patch.confirm_move {
        Some(to) => follow::confirm(app, id, to, patch)?,
        None => app.update_camera(id, &patch)?,
    };
    let camera = camera.ok_or_else(no_such_camera)?;
    Ok(Reply::json(200, &CameraView::new(&camera, app)))
}

pub fn delete(app: &App, id: Uuid) -> Result<Reply, Error> {
    let (camera, clips) = app
        .db(|s| s.delete_camera(id))?
        .ok_or_else(no_such_camera)?;
    app.clips.remove_files(&clips);
    log::info!("deleted camera {id} {:?}", camera.settings.name);
    app.forget_online(id);
    app.finder.forget(id);
    app.cameras_changed();
    Ok(Reply::no_content())
}

/// What deleting a camera deletes with it, for the UI to say before it does.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredView {
    recordings: u64,
    recording_bytes: u64,
    recorded_seconds: i64,
    recorded_from: Option<String>,
    recorded_to: Option<String>,
    events: u64,
    kept: u64,
}

/// `GET /api/cameras/{id}/stored`.
pub fn stored(app: &App, id: Uuid) -> Result<Reply, Error> {
    let s = app
        .db(|s| s.camera_stored(id))?
        .ok_or_else(no_such_camera)?;
    Ok(Reply::json(
        200,
        &StoredView {
            recordings: s.segments,
            recording_bytes: s.segment_bytes,
            recorded_seconds: s.recorded_ms / 1000,
            recorded_from: s.first_ms.map(format_timestamp),
            recorded_to: s.last_ms.map(format_timestamp),
            events: s.events,
            kept: s.kept,
        },
    ))
}

/// Re-probes the main stream; a failure leaves the stored capabilities as
/// they were. A node too busy to probe says so (503) and has learnt nothing
/// of the camera.
pub fn probe(app: &App, id: Uuid) -> Result<Reply, Error> {
    let camera = app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    match app.prober.probe(&camera.settings.rtsp_url) {
        Err(ProbeError::Busy) => Err(busy(ProbeError::Busy.message())),
        Ok(caps) => {
            if !app.db(|s| s.set_capabilities(id, &caps))? {
                return Err(no_such_camera());
            }
            app.set_online(id, camera.settings.enabled);
            let view = CapabilitiesView::new(&caps, camera.settings.rtsp_sub_url.is_some(), true);
            Ok(Reply::json(200, &view))
        }
        Err(e) => {
            log::info!(
                "camera {id} ({}): {}",
                redact(&camera.settings.rtsp_url),
                e.message()
            );
            app.set_online(id, false);
            Err(Error::new(Kind::BadGateway, e.message()))
        }
    }
}

/// `GET /api/cameras/{id}/snapshot.jpg`: the camera's picture now (see
/// `snapshot.rs`); never kept by a cache, as it changes with each frame.
pub fn snapshot(app: &App, id: Uuid) -> Result<Reply, Error> {
    let camera = app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    let jpeg = app
        .snapshots
        .take(&camera, &app.motion)
        .map_err(|e| match e {
            NoPicture::Stream(ProbeError::Busy) => busy(e.message()),
            _ => Error::new(Kind::BadGateway, e.message()),
        })?;
    Ok(Reply::bytes(200, "image/jpeg", jpeg).with_header("Cache-Control", "no-store"))
}

/// Too many streams are being read on request already.
fn busy(message: String) -> Error {
    Error::new(Kind::Unavailable, message)
}

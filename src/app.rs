//! The node's shared state: the database behind its lock, the prober, the
//! relay client, the recordings, snapshots and the live state kept in memory.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::alerts::pictures::Pictures;
use crate::alerts::send::Sender;
use crate::alerts::webpush::Vapid;
use crate::cameras::camera::account::Guesses;
use crate::cameras::camera::{Camera, SettingsPatch};
use crate::cameras::discover::Finder;
use crate::cameras::prober::{self, Prober};
use crate::changes::StateChanges;
use crate::channel;
use crate::classify::{self, Classifier};
use crate::clips::{self, Clips};
use crate::clock;
use crate::config::{Config, Environment};
use crate::db::Db;
use crate::error::Error;
use crate::link_state::LinkState;
use crate::lock::lock;
use crate::media::gate::Gate;
use crate::motion::snapshot::Snapshots;
use crate::motion::{self, Motion};
use crate::mqtt;
use crate::notices::Notices;
use crate::recording::{self, Recordings};
use crate::relay::client::{Relay, RelayError};
use crate::relay::sessions::Sessions;
use crate::store::{self, Store};

mod settings;

pub struct App {
    /// `NODE_NAME`, which a person may change while the node runs.
    node_name: Mutex<Arc<str>>,
    /// The environment the node started with, and the settings changed in
    /// the UI then (see `settings.rs`).
    env: Environment,
    settings_at_start: Vec<(String, String)>,
    /// Held while settings change, one change at a time.
    changing_settings: Mutex<()>,
    /// Where people reach the node, for links in alerts and Home
    /// Assistant (`NODE_URL`, else `http://HOST NAME:PORT`).
    pub node_url: String,
    pub host_name: String,
    pub allowed_hosts: Vec<String>,
    /// `MAX_CAMERAS`.
    pub max_cameras: usize,
    pub prober: Prober,
    pub relay: Relay,
    pub whep_sessions: Sessions,
    db: Arc<Db>,
    pub recordings: Arc<Recordings>,
    pub clips: Arc<Clips>,
    pub motion: Motion,
    pub snapshots: Snapshots,
    pub classifier: Arc<Classifier>,
    /// ONVIF discovery, and what following moved cameras did.
    pub finder: Finder,
    /// Wrong camera passwords, held back (`cameras::camera::account`).
    pub guesses: Guesses,
    relay_healthy: AtomicBool,
    /// The version the relay named at its last health check.
    relay_version: Mutex<Option<String>>,
    cloud: Mutex<LinkState>,
    /// Whether each camera answered its last check or probe; in memory, so an idle node writes nothing.
    online: Mutex<HashMap<Uuid, bool>>,
    /// Asks the relay sync loop for a reconcile.
    relay_nudges: channel::Sender<()>,
    state_changes: Arc<StateChanges>,
    /// Motion and events as they happen, for Home Assistant and alerts.
    pub notices: Arc<Notices>,
    /// What alerts were about, pictured when they were made.
    pub pictures: Pictures,
    /// Sends alerts, and tests of their destinations.
    pub alert_sender: Sender,
    /// Changes with alerts' destinations and settings, for the thread
    /// that sends them.
    alerts_generation: AtomicU64,
    /// Alerts were delivered, failed or queued since the status last
    /// showed it (the status takes that in at most once a second).
    deliveries_changed: AtomicBool,
    deliveries_shown: Mutex<Instant>,
    vapid: OnceLock<Arc<Vapid>>,
    /// Whether alerts go out: the database's, kept here too for Home
    /// Assistant's view, built four times a second; and since when (ms
    /// since the epoch), with the changes before, for the alerts of
    /// events the node learnt of before a change and judges after it.
    armed: Mutex<VecDeque<(i64, bool)>>,
    /// The MQTT connection's state; None: MQTT is off.
    mqtt: Mutex<Option<mqtt::State>>,
    /// The last status body, with the [`Versions`] it
    /// was built at: status is asked for far more often than it changes.
    status_body: Mutex<Option<(Versions, StatusBody)>>,
}

/// How often the status takes in alerts' deliveries at the most.
const DELIVERIES_SHOWN_EVERY: Duration = Duration::from_secs(1);

/// Changes of `armed` kept: far more than a person makes while an
/// alert waits to be judged.
const ARMED_CHANGES_KEPT: usize = 16;

/// A status body as built, with its entity tag: kept, and shared by the
/// answers, until what status shows changes.
#[derive(Clone)]
pub struct StatusBody {
    pub json: Arc<[u8]>,
    /// Its `ETag` as sent, quoted: formatted once a body, not once an answer.
    pub etag: Arc<str>,
}

/// (`state_changes`, the store's generation and its events', why the clock
/// is not believed).
type Versions = (u64, u64, u64, Option<clock::Doubt>);

impl App {
    pub fn new(
        config: &Config,
        store: Store,
        relay_nudges: channel::Sender<()>,
        node_url: String,
        env: Environment,
    ) -> App {
        let armed = store.armed().unwrap_or(true);
        let settings_at_start = store.settings().unwrap_or_default();
        let db = Arc::new(Db::new(store));
        let state_changes = Arc::new(StateChanges::default());
        let notices = Arc::new(Notices::default());
        // Another on the probes and snapshots that requests start.
        let readers = prober::readers();
        let prober = Prober::new(config.ffprobe.clone(), readers.clone());
        // One bound on the ffmpeg that recorders and watchers start at once.
        let gate = Arc::new(Gate::default());
        let recordings = Arc::new(Recordings::new(
            recording::Settings::from_config(config),
            recording::Limits::from_config(config),
            db.clone(),
            state_changes.clone(),
            gate.clone(),
        ));
        let clips = Arc::new(Clips::new(
            clips::Settings::from_config(config),
            clips::Limits::from_config(config),
            db.clone(),
            recordings.clone(),
            notices.clone(),
            state_changes.clone(),
        ));
        let classifier = Arc::new(Classifier::new(
            classify::Settings {
                program: config.classifier.clone(),
                model_dir: config.model_dir.clone(),
            },
            state_changes.clone(),
        ));
        let motion = Motion::new(
            motion::Settings {
                ffmpeg: config.ffmpeg.clone(),
                gate,
            },
            db.clone(),
            clips.clone(),
            recordings.clone(),
            notices.clone(),
            classifier.clone(),
            state_changes.clone(),
        );
        App {
            node_name: Mutex::new(config.node_name.as_str().into()),
            env,
            settings_at_start,
            changing_settings: Mutex::new(()),
            node_url,
            host_name: config.host_name.clone(),
            allowed_hosts: config.allowed_hosts.clone(),
            max_cameras: config.max_cameras,
            prober,
            relay: Relay::new(&config.relay_url),
            whep_sessions: Sessions::default(),
            db,
            recordings,
            clips,
            motion,
            snapshots: Snapshots::new(config.ffmpeg.clone(), readers),
            classifier,
            finder: Finder::new(config.discovery_interfaces.clone(), state_changes.clone()),
            guesses: Guesses::default(),
            relay_healthy: AtomicBool::new(false),
            relay_version: Mutex::new(None),
            cloud: Mutex::new(LinkState::Disabled),
            online: Mutex::new(HashMap::new()),
            relay_nudges,
            state_changes,
            status_body: Mutex::new(None),
            notices,
            pictures: Pictures::default(),
            alert_sender: Sender::default(),
            alerts_generation: AtomicU64::new(0),
            deliveries_changed: AtomicBool::new(false),
            deliveries_shown: Mutex::new(Instant::now()),
            vapid: OnceLock::new(),
            armed: Mutex::new(VecDeque::from([(i64::MIN, armed)])),
            mqtt: Mutex::new(None),
        }
    }

    /// Alerts' destinations or settings changed, or how delivering goes:
    /// the status shows it, and the alerts' thread takes it in.
    pub fn alerts_changed(&self) {
        self.alerts_generation.fetch_add(1, Ordering::Release);
        self.live_changed();
    }

    /// Alerts were delivered, failed or queued: the status shows it within
    /// a second (a flood of alerts must not rebuild it for each).
    pub fn deliveries_changed(&self) {
        self.deliveries_changed.store(true, Ordering::Release);
    }

    pub fn alerts_generation(&self) -> u64 {
        self.alerts_generation.load(Ordering::Acquire)
    }

    pub fn armed(&self) -> bool {
        self.armed_at(i64::MAX)
    }

    /// Whether alerts went out at `at_ms` (as far as the changes kept tell).
    pub fn armed_at(&self, at_ms: i64) -> bool {
        let changes = lock(&self.armed);
        changes
            .iter()
            .rev()
            .find(|(since, _)| *since <= at_ms)
            .or(changes.front())
            .is_none_or(|(_, armed)| *armed)
    }

    /// Arms or disarms the node's alerts (the API, Home Assistant).
    pub fn set_armed(&self, armed: bool) -> Result<(), Error> {
        if self.armed() == armed {
            return Ok(());
        }
        self.db(|s| s.set_armed(armed))?;
        let mut changes = lock(&self.armed);
        if changes.len() == ARMED_CHANGES_KEPT {
            changes.pop_front();
        }
        changes.push_back((clock::now_ms(), armed));
        drop(changes);
        log::info!("alerts: {}", if armed { "armed" } else { "disarmed" });
        self.alerts_changed();
        Ok(())
    }

    /// The node's VAPID key pair, made at its first use and kept for good.
    pub fn vapid(&self) -> Result<Arc<Vapid>, Error> {
        if let Some(vapid) = self.vapid.get() {
            return Ok(vapid.clone());
        }
        let pkcs8 = self.db(|s| s.vapid_key(Vapid::generate))?;
        let vapid = Vapid::from_pkcs8(&pkcs8).ok_or_else(|| {
            Error::new(
                crate::error::Kind::Internal,
                "the node's VAPID key is unreadable",
            )
        })?;
        Ok(self.vapid.get_or_init(|| Arc::new(vapid)).clone())
    }

    /// Runs `f` under the database lock. Keep `f` short: no I/O beyond SQLite.
    pub fn db<T>(&self, f: impl FnOnce(&mut Store) -> store::Result<T>) -> Result<T, Error> {
        self.db.run(f)
    }

    pub fn cloud_state(&self) -> LinkState {
        lock(&self.cloud).clone()
    }

    /// Changes the link's state, logging each change once (not each retry).
    pub fn set_cloud_state(&self, state: LinkState) {
        let mut current = lock(&self.cloud);
        if *current == state {
            return;
        }
        match &state {
            LinkState::Error { message } => log::warn!("cloud link: error: {message}"),
            LinkState::Unclaimed { .. } if current.name() == "unclaimed" => {
                log::info!("cloud link: new claim code")
            }
            _ => log::info!("cloud link: {}", state.name()),
        }
        *current = state;
        drop(current);
        self.live_changed();
    }

    fn live_changed(&self) {
        self.state_changes.bump();
    }

    /// The status body for the current state, from `build` only when
    /// something status shows has changed since it was last built.
    pub fn status_body(
        &self,
        build: impl FnOnce(&App) -> Result<StatusBody, Error>,
    ) -> Result<StatusBody, Error> {
        if self.deliveries_changed.load(Ordering::Acquire) {
            let mut shown = lock(&self.deliveries_shown);
            if shown.elapsed() >= DELIVERIES_SHOWN_EVERY {
                *shown = Instant::now();
                self.deliveries_changed.store(false, Ordering::Release);
                self.live_changed();
            }
        }
        // Versions first, state after: a change racing the build leaves a
        // newer body under an older key, which the next call rebuilds.
        let live = self.state_changes.get();
        let (generation, events) = self.db.generations();
        let key = (live, generation, events, clock::doubt());
        if let Some((built_at, body)) = lock(&self.status_body).as_ref()
            && *built_at == key
        {
            return Ok(body.clone());
        }
        let body = build(self)?;
        *lock(&self.status_body) = Some((key, body.clone()));
        Ok(body)
    }

    /// What the heartbeat tells the cloud: version, relay health, cameras.
    pub fn cloud_summary(&self) -> serde_json::Value {
        let cameras = self.db(|s| s.cameras()).unwrap_or_default();
        let enabled = cameras.iter().filter(|c| c.settings.enabled).count();
        let online = cameras.iter().filter(|c| self.is_online(c.id)).count();
        serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "relayHealthy": self.relay_healthy(),
            "cameras": { "total": cameras.len(), "enabled": enabled, "online": online },
        })
    }

    pub fn relay_healthy(&self) -> bool {
        self.relay_healthy.load(Ordering::Relaxed)
    }

    pub fn relay_version(&self) -> Option<String> {
        lock(&self.relay_version).clone()
    }

    /// Records a health check: `Ok` with the version the relay named, or why
    /// it is down. Returns whether it was healthy before.
    pub fn set_relay_health(&self, health: Result<Option<String>, RelayError>) -> bool {
        let healthy = health.is_ok();
        let version = health.ok().flatten();
        let was = self.relay_healthy.swap(healthy, Ordering::Relaxed);
        let version_changed = {
            let mut current = lock(&self.relay_version);
            let changed = *current != version;
            *current = version;
            changed
        };
        if was != healthy || version_changed {
            self.live_changed();
        }
        was
    }

    pub fn mqtt_state(&self) -> Option<mqtt::State> {
        lock(&self.mqtt).clone()
    }

    pub fn set_mqtt_state(&self, state: mqtt::State) {
        let mut current = lock(&self.mqtt);
        if current.as_ref() != Some(&state) {
            *current = Some(state);
            drop(current);
            self.live_changed();
        }
    }

    /// Changes the fields `patch` gives, for the API and for commands from
    /// Home Assistant alike. A new main URL is probed first, without the
    /// database lock; the change itself is read, applied and written under
    /// it. A patch that changes nothing writes nothing (a flood of commands
    /// must not wear the flash). None: no such camera.
    pub fn update_camera(&self, id: Uuid, patch: &SettingsPatch) -> Result<Option<Camera>, Error> {
        let Some(before) = self.db(|s| s.camera(id))? else {
            return Ok(None);
        };
        let new_url = patch
            .rtsp_url
            .as_ref()
            .filter(|url| **url != before.settings.rtsp_url);
        let probed = new_url.map(|url| self.prober.probe(url));
        let changed = self.db(|s| {
            let Some(mut camera) = s.camera(id)? else {
                return Ok(None);
            };
            let settings = patch.apply(&camera.settings);
            if settings == camera.settings && probed.is_none() {
                return Ok(Some((camera, false)));
            }
            camera.settings = settings;
            if let Some(probed) = &probed {
                camera.capabilities = probed.clone().ok();
            }
            Ok(s.update_camera(&camera)?.then_some((camera, true)))
        })?;
        let Some((camera, written)) = changed else {
            return Ok(None);
        };
        if !written {
            return Ok(Some(camera));
        }
        log::info!("updated camera {id} {:?}", camera.settings.name);
        if let Some(probed) = probed {
            self.set_online(id, camera.settings.enabled && probed.is_ok());
        }
        if !camera.settings.enabled {
            self.set_online(id, false);
        }
        if camera.settings != before.settings {
            self.cameras_changed();
        }
        Ok(Some(camera))
    }

    pub fn is_online(&self, id: Uuid) -> bool {
        lock(&self.online).get(&id).copied().unwrap_or(false)
    }

    pub fn set_online(&self, id: Uuid, online: bool) {
        let was = lock(&self.online).insert(id, online);
        if was != Some(online) {
            self.live_changed();
        }
    }

    pub fn forget_online(&self, id: Uuid) {
        if lock(&self.online).remove(&id).is_some() {
            self.live_changed();
        }
    }

    /// Drops the state of cameras for which `keep` is false.
    pub fn retain_online(&self, keep: impl Fn(&Uuid) -> bool) {
        self.state_changes.retain(&self.online, keep);
    }

    /// Tells the relay sync loop and the recorders that cameras changed;
    /// never blocks on either.
    pub fn cameras_changed(&self) {
        // The loop only stops with the process.
        let _ = self.relay_nudges.send(());
        self.recordings.cameras_changed();
        self.motion.cameras_changed();
    }

    /// Starts the background work of recording, clips and motion detection.
    pub fn start(&self) {
        self.recordings.start();
        self.clips.start();
        self.motion.start();
    }

    /// Stops the watchers and the recorders (each recorder finishing its
    /// segment), all at once, waiting for them until `deadline`.
    pub fn stop(&self, deadline: Instant) {
        thread::scope(|scope| {
            // Side by side, or one after the other when no thread can be made.
            let beside = thread::Builder::new().spawn_scoped(scope, || self.motion.stop(deadline));
            if beside.is_err() {
                self.motion.stop(deadline);
            }
            self.recordings.stop(deadline);
        });
    }
}

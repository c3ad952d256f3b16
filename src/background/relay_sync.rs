//! Keeps the relay in step with the node: watches its health and reconciles
//! its stream list with the cameras (at start, after each camera change, when
//! the relay comes back, and every 10 s while it is healthy).

use crate::channel::{self, RecvTimeoutError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::app::App;
use crate::cameras::camera::Camera;
use crate::cameras::rtsp_url::{redact, with_lowercase_scheme};
use crate::relay::client::RelayError;

const HEALTH_INTERVAL: Duration = Duration::from_secs(5);
const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);

/// go2rtc stream names: the camera id, and `{id}_sub` for the sub stream.
pub fn stream_name(id: Uuid, sub: bool) -> String {
    if sub {
        format!("{id}_sub")
    } else {
        id.to_string()
    }
}

/// Streams named like ours are ours; anything else someone else set up.
fn is_ours(name: &str) -> bool {
    let id = name.strip_suffix("_sub").unwrap_or(name);
    id.len() == 36 && Uuid::try_parse(id).is_ok()
}

/// The streams the relay should have: enabled cameras' main and sub streams,
/// each source with its scheme in lowercase, as go2rtc takes it.
fn desired(cameras: &[Camera]) -> BTreeMap<String, String> {
    let enabled = cameras.iter().filter(|c| c.settings.enabled);
    enabled
        .flat_map(|c| {
            let main = Some((stream_name(c.id, false), &c.settings.rtsp_url));
            let sub = (c.settings.rtsp_sub_url.as_ref()).map(|url| (stream_name(c.id, true), url));
            main.into_iter().chain(sub)
        })
        .map(|(name, url)| (name, with_lowercase_scheme(url)))
        .collect()
}

/// Starts the background loop. A message on `nudges` asks for a reconcile soon.
pub fn spawn(app: Arc<App>, nudges: channel::Receiver<()>) {
    crate::spawn::spawn(thread::Builder::new(), move || {
        let mut next_health_check = Instant::now();
        let mut last_reconcile: Option<Instant> = None;
        let mut pending = true;
        let mut first_check = true;
        // Whether this run of the relay was said to keep changes it could not save.
        let mut unsaved_told = false;
        loop {
            if Instant::now() >= next_health_check {
                let health = app.relay.health();
                let healthy = health.is_ok();
                let was_healthy = app.set_relay_health(health);
                if healthy != was_healthy || first_check {
                    log::info!(
                        "relay is {}",
                        if healthy { "healthy" } else { "unreachable" }
                    );
                }
                // A relay that comes back may have restarted with no streams.
                pending |= healthy && !was_healthy;
                unsaved_told &= healthy;
                first_check = false;
                next_health_check = Instant::now() + HEALTH_INTERVAL;
            }
            let due = last_reconcile.is_none_or(|t| t.elapsed() >= RECONCILE_INTERVAL);
            if app.relay_healthy() && (pending || due) {
                match reconcile(&app) {
                    Ok(outcome) => {
                        // Each failed change was logged; the next health tick tries again.
                        pending = outcome.failed;
                        if outcome.unsaved && !unsaved_told {
                            log::warn!(
                                "relay: it applied stream changes but could not save them (is its \
                                 configuration file missing or read-only?); they are made again \
                                 after it restarts"
                            );
                            unsaved_told = true;
                        }
                    }
                    Err(e) => log::warn!("relay: listing its streams failed: {e}"),
                }
                last_reconcile = Some(Instant::now());
            }
            let next_reconcile = match last_reconcile {
                Some(t) if app.relay_healthy() => t + RECONCILE_INTERVAL,
                _ => next_health_check,
            };
            let wake = next_health_check.min(next_reconcile);
            let wait = wake.saturating_duration_since(Instant::now());
            match nudges.recv_timeout(wait) {
                Ok(()) => {
                    while nudges.try_recv().is_ok() {}
                    pending = true;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    })
    .expect("failed to spawn thread");
}

/// A change the relay was asked to make: a stream to set to a source, or to remove.
struct Change<'a> {
    name: &'a str,
    src: Option<&'a str>,
    /// Whether the stream was there before (for the log line).
    replaces: bool,
}

impl Change<'_> {
    fn made_in(&self, streams: &BTreeMap<String, Vec<String>>) -> bool {
        match self.src {
            Some(src) => streams
                .get(self.name)
                .is_some_and(|s| s.len() == 1 && s[0] == src),
            None => !streams.contains_key(self.name),
        }
    }

    fn log_done(&self) {
        match (self.src, self.replaces) {
            (Some(src), true) => {
                log::info!("relay: replaced stream {} ({})", self.name, redact(src))
            }
            (Some(src), false) => {
                log::info!("relay: registered stream {} ({})", self.name, redact(src))
            }
            (None, _) => log::info!("relay: removed stream {}", self.name),
        }
    }
}

/// How the changes of a reconcile went.
#[derive(Default)]
struct Outcome {
    /// A change was not made.
    failed: bool,
    /// The relay refused a change with 400 although it made it: go2rtc does
    /// when it cannot write its configuration file (or runs without one).
    unsaved: bool,
}

/// Adds missing streams, replaces those whose source differs, and removes
/// ours that no camera needs. One failed change does not stop the others,
/// and each is logged with its stream's name. Fails only if the relay's
/// streams cannot be listed. Holds the database lock only to read cameras.
fn reconcile(app: &App) -> Result<Outcome, RelayError> {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return Ok(Outcome::default());
    };
    let want = desired(&cameras);
    let have = app.relay.streams()?;
    let puts = want.iter().map(|(name, src)| Change {
        name,
        src: Some(src),
        replaces: have.contains_key(name),
    });
    let deletes = have
        .keys()
        .filter(|n| is_ours(n) && !want.contains_key(*n))
        .map(|name| Change {
            name,
            src: None,
            replaces: true,
        });
    let mut refused = Vec::new();
    let mut outcome = Outcome::default();
    for change in puts.chain(deletes).filter(|c| !c.made_in(&have)) {
        let result = match change.src {
            Some(src) => app.relay.put_stream(change.name, src),
            None => app.relay.delete_stream(change.name),
        };
        match result {
            Ok(()) => change.log_done(),
            Err(RelayError::Status(400)) => refused.push(change),
            Err(e) => {
                log::warn!("relay: changing stream {} failed: {e}", change.name);
                outcome.failed = true;
            }
        }
    }
    if !refused.is_empty() {
        // go2rtc answers 400 when it cannot save a change it made: see what took.
        let now = app.relay.streams()?;
        for change in refused {
            if change.made_in(&now) {
                change.log_done();
                outcome.unsaved = true;
            } else {
                let refusal = RelayError::Status(400);
                log::warn!("relay: changing stream {} failed: {refusal}", change.name);
                outcome.failed = true;
            }
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::Settings;

    #[test]
    fn ownership_of_stream_names() {
        let id = "0f8fad5b-d9cb-469f-a165-70867728950e";
        let table = [
            (id.to_owned(), true),
            (format!("{id}_sub"), true),
            (format!("{id}_sub_sub"), false),
            (format!("{id}x"), false),
            ("garage".to_owned(), false),
            ("0f8fad5bd9cb469fa16570867728950e".to_owned(), false),
        ];
        for (name, ours) in table {
            assert_eq!(is_ours(&name), ours, "{name}");
        }
    }

    #[test]
    fn desired_streams() {
        let camera = |enabled, sub: Option<&str>| Camera {
            id: Uuid::new_v4(),
            settings: Settings {
                name: "c".into(),
                make: String::new(),
                model: String::new(),
                rtsp_url: "rtsp://h/main".into(),
                rtsp_sub_url: sub.map(str::to_owned),
                enabled,
                record: true,
                detect: true,
                detect_sensitivity: Default::default(),
                classify: true,
                kinds: crate::event::Kind::CLASSIFIED.to_vec(),
                onvif: None,
                motion_masks: Vec::new(),
                zones: Vec::new(),
                auto_mask: true,
                retain_days: None,
                full_rate: false,
                motion_source: None,
            },
            capabilities: None,
        };
        let (a, b, off) = (
            camera(true, Some("RTSP://h/sub")),
            camera(true, None),
            camera(false, None),
        );
        let want = desired(&[a.clone(), b.clone(), off]);
        let expected: BTreeMap<String, String> = [
            (a.id.to_string(), "rtsp://h/main".to_owned()),
            (format!("{}_sub", a.id), "rtsp://h/sub".to_owned()),
            (b.id.to_string(), "rtsp://h/main".to_owned()),
        ]
        .into();
        assert_eq!(want, expected);
    }
}

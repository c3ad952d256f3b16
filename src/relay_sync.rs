//! Keeps the relay in step with the node: watches its health and reconciles
//! its stream list with the cameras (at start, after each camera change, when
//! the relay comes back, and every 10 s while it is healthy).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::app::App;
use crate::camera::Camera;
use crate::relay::RelayError;
use crate::rtsp_url::redact;

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

/// The streams the relay should have: enabled cameras' main and sub streams.
fn desired(cameras: &[Camera]) -> BTreeMap<String, String> {
    let enabled = cameras.iter().filter(|c| c.settings.enabled);
    enabled
        .flat_map(|c| {
            let main = Some((stream_name(c.id, false), c.settings.rtsp_url.clone()));
            let sub = (c.settings.rtsp_sub_url.clone()).map(|url| (stream_name(c.id, true), url));
            main.into_iter().chain(sub)
        })
        .collect()
}

/// Starts the background loop. A message on `nudges` asks for a reconcile soon.
pub fn spawn(app: Arc<App>, nudges: mpsc::Receiver<()>) {
    thread::spawn(move || {
        let mut next_health_check = Instant::now();
        let mut last_reconcile: Option<Instant> = None;
        let mut pending = true;
        let mut first_check = true;
        loop {
            if Instant::now() >= next_health_check {
                let healthy = app.relay.is_healthy();
                let was_healthy = app.set_relay_healthy(healthy);
                if healthy != was_healthy || first_check {
                    log::info!(
                        "relay is {}",
                        if healthy { "healthy" } else { "unreachable" }
                    );
                }
                // A relay that comes back may have restarted with no streams.
                pending |= healthy && !was_healthy;
                first_check = false;
                next_health_check = Instant::now() + HEALTH_INTERVAL;
            }
            let due = last_reconcile.is_none_or(|t| t.elapsed() >= RECONCILE_INTERVAL);
            if app.relay_healthy() && (pending || due) {
                match reconcile(&app) {
                    Ok(()) => pending = false,
                    Err(e) => log::warn!("relay: reconciling streams failed: {e}"),
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
    });
}

/// Adds missing streams, replaces those whose source differs, and removes
/// ours that no camera needs. Holds the database lock only to read cameras.
fn reconcile(app: &App) -> Result<(), RelayError> {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return Ok(());
    };
    let want = desired(&cameras);
    let have = app.relay.streams()?;
    for (name, src) in &want {
        let current = have.get(name);
        if current.is_some_and(|sources| sources.len() == 1 && &sources[0] == src) {
            continue;
        }
        app.relay.put_stream(name, src)?;
        let verb = if current.is_some() {
            "replaced"
        } else {
            "registered"
        };
        log::info!("relay: {verb} stream {name} ({})", redact(src));
    }
    for name in have.keys().filter(|n| is_ours(n) && !want.contains_key(*n)) {
        app.relay.delete_stream(name)?;
        log::info!("relay: removed stream {name}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::Settings;

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
            },
            capabilities: None,
        };
        let (a, b, off) = (
            camera(true, Some("rtsp://h/sub")),
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

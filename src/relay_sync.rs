//! Background work that keeps the relay in step with the node: registering
//! and removing camera streams, and watching the relay's health.

use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use uuid::Uuid;

use crate::app::App;
use crate::camera::{Camera, redact};

/// How often the relay's health is checked.
const HEALTH_INTERVAL: Duration = Duration::from_secs(5);

pub enum StreamChange {
    Add {
        id: Uuid,
        main: String,
        sub: Option<String>,
    },
    Remove {
        id: Uuid,
        had_sub: bool,
    },
}

impl StreamChange {
    pub fn add(camera: &Camera) -> StreamChange {
        StreamChange::Add {
            id: camera.id,
            main: camera.settings.rtsp_url.clone(),
            sub: camera.settings.rtsp_sub_url.clone(),
        }
    }
}

/// go2rtc stream names: the camera id, and `{id}_sub` for the sub stream.
fn stream_names(id: Uuid) -> (String, String) {
    (id.to_string(), format!("{id}_sub"))
}

/// Starts the worker that applies stream changes in order, one at a time.
pub fn spawn_stream_worker(app: Arc<App>, changes: mpsc::Receiver<StreamChange>) {
    thread::spawn(move || {
        for change in changes {
            apply(&app, change);
        }
    });
}

fn apply(app: &App, change: StreamChange) {
    match change {
        StreamChange::Add { id, main, sub } => {
            let (main_name, sub_name) = stream_names(id);
            let sources = [(main_name, Some(main)), (sub_name, sub)];
            for (name, src) in sources {
                let Some(src) = src else { continue };
                match app.relay.put_stream(&name, &src) {
                    Ok(()) => log::info!("relay: registered stream {name} ({})", redact(&src)),
                    Err(e) => log::warn!("relay: registering stream {name} failed: {e}"),
                }
            }
        }
        StreamChange::Remove { id, had_sub } => {
            let (main_name, sub_name) = stream_names(id);
            let names = if had_sub {
                vec![main_name, sub_name]
            } else {
                vec![main_name]
            };
            for name in names {
                match app.relay.delete_stream(&name) {
                    Ok(()) => log::info!("relay: removed stream {name}"),
                    Err(e) => log::warn!("relay: removing stream {name} failed: {e}"),
                }
            }
        }
    }
}

/// Starts the health check. Each time the relay comes up (also at start) every
/// enabled camera is registered again, since a restarted relay has lost them.
pub fn spawn_health_check(app: Arc<App>) {
    thread::spawn(move || {
        for check in 0_u64.. {
            let healthy = app.relay.is_healthy();
            let was_healthy = app.set_relay_healthy(healthy);
            if healthy != was_healthy || check == 0 {
                log::info!(
                    "relay is {}",
                    if healthy { "healthy" } else { "unreachable" }
                );
            }
            if healthy && !was_healthy {
                register_all(&app);
            }
            thread::sleep(HEALTH_INTERVAL);
        }
    });
}

fn register_all(app: &App) {
    match app.db(|s| s.cameras()) {
        Ok(cameras) => cameras
            .iter()
            .filter(|c| c.settings.enabled)
            .for_each(|c| app.sync_streams(StreamChange::add(c))),
        Err(e) => log::error!("relay: cannot list cameras to register: {e}"),
    }
}

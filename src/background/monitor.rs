//! Camera liveness: every enabled camera gets an RTSP `OPTIONS` request on a
//! timer, all in parallel; any RTSP status line means it is online. The state
//! lives in memory only, so an idle node writes nothing to its flash.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::app::App;
use uuid::Uuid;

use crate::cameras::answers::answers_options;

/// How long one check may take, connection included.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the monitor: a round at once, then one every `interval`. Each check
/// runs on its own thread; a camera still being checked is skipped in the
/// next round, so a slow camera never delays the others.
pub fn spawn(app: Arc<App>, interval: Duration) {
    let spawned = crate::spawn::spawn(
        thread::Builder::new()
            .name("monitor".into())
            // Reads the cameras (SQLite) and starts the checks.
            .stack_size(256 * 1024),
        move || {
            let checking = Arc::new(Mutex::new(HashSet::new()));
            loop {
                let started = Instant::now();
                start_round(&app, &checking);
                thread::sleep(interval.saturating_sub(started.elapsed()));
            }
        },
    );
    if let Err(e) = spawned {
        log::error!("cannot start the camera monitor: {e}");
    }
}

fn start_round(app: &Arc<App>, checking: &Arc<Mutex<HashSet<Uuid>>>) {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return;
    };
    app.retain_online(|id| cameras.iter().any(|c| c.id == *id));
    for camera in cameras.iter() {
        if !camera.settings.enabled {
            app.set_online(camera.id, false);
            continue;
        }
        if !checking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(camera.id)
        {
            continue;
        }
        let (app, checks) = (app.clone(), checking.clone());
        let (id, url) = (camera.id, camera.settings.rtsp_url.clone());
        let check = move || {
            let online = answers_options(&url, CHECK_TIMEOUT);
            app.set_online(id, online);
            checks.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        };
        // One a camera, for at most 5 s: a name lookup (getaddrinfo), a
        // small request and a 256-byte buffer on the stack.
        let spawned = crate::spawn::spawn(
            thread::Builder::new()
                .name("check".into())
                .stack_size(128 * 1024),
            check,
        );
        if let Err(e) = spawned {
            log::warn!("cannot check camera {id}: {e}");
            checking
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        }
    }
}

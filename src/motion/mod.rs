//! Motion detection: for each enabled camera with `detect` on, a watcher
//! (an ffmpeg decoding small grey frames, 5 a second, and the detector)
//! finds motion, and each motion becomes an event of kind `motion`, with a
//! clip and a thumbnail. [`Motion`] is the handle the node holds; its
//! supervisor keeps one watcher per camera (`workers.rs`).

pub mod detector;
pub mod episodes;
mod watcher;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Instant;

use uuid::Uuid;

use crate::camera::{Camera, Sensitivity};
use crate::clips::Clips;
use crate::db::{Db, lock};
use crate::media::gate::Gate;
use crate::notices::Notices;
use crate::recording::Recordings;
use crate::workers::{self, Order, Workers};
use detector::Params;
use watcher::{Spec, Watcher};

pub struct Settings {
    pub ffmpeg: PathBuf,
    /// Bounds how many ffmpeg start at once (shared with the recorders).
    pub gate: Arc<Gate>,
}

/// What the watchers share.
struct Shared {
    settings: Settings,
    db: Arc<Db>,
    clips: Arc<Clips>,
    recordings: Arc<Recordings>,
    notices: Arc<Notices>,
}

pub struct Motion {
    shared: Arc<Shared>,
    supervisor: mpsc::Sender<Order>,
    pending: Mutex<Option<mpsc::Receiver<Order>>>,
    running: Mutex<Option<thread::JoinHandle<()>>>,
}

impl Motion {
    pub fn new(
        settings: Settings,
        db: Arc<Db>,
        clips: Arc<Clips>,
        recordings: Arc<Recordings>,
        notices: Arc<Notices>,
    ) -> Motion {
        let (supervisor, orders) = mpsc::channel();
        Motion {
            shared: Arc::new(Shared {
                settings,
                db,
                clips,
                recordings,
                notices,
            }),
            supervisor,
            pending: Mutex::new(Some(orders)),
            running: Mutex::new(None),
        }
    }

    pub fn start(&self) {
        let Some(orders) = lock(&self.pending).take() else {
            return;
        };
        let shared = self.shared.clone();
        let supervisor = thread::Builder::new()
            .name("watchers".into())
            .spawn(move || supervise(&shared, &orders))
            .expect("spawn the motion watchers' supervisor");
        *lock(&self.running) = Some(supervisor);
    }

    /// Cameras changed: watchers start or stop within 2 s.
    pub fn cameras_changed(&self) {
        let _ = self.supervisor.send(Order::CamerasChanged);
    }

    /// Stops every watcher (an event under way is stored) and waits for
    /// them until `deadline`.
    pub fn stop(&self, deadline: Instant) {
        workers::stop_supervisor(&self.supervisor, &self.running, deadline);
    }
}

fn supervise(shared: &Arc<Shared>, orders: &mpsc::Receiver<Order>) {
    let mut watchers = Workers::new("motion watcher");
    workers::supervise(orders, || {
        if let Ok(cameras) = shared.db.run(|s| s.cameras()) {
            let start = |camera, spec, stop| {
                let watcher = Watcher::new(shared.clone(), camera, spec, stop);
                move || watcher.run()
            };
            watchers.reconcile(&wanted(&cameras), start);
        }
    });
    watchers.stop_all();
}

/// What each camera that detects watches: its sub stream, or its main one.
fn wanted(cameras: &[Camera]) -> HashMap<Uuid, Spec> {
    cameras
        .iter()
        .filter(|c| c.settings.enabled && c.settings.detect)
        .map(|c| {
            let url = c
                .settings
                .rtsp_sub_url
                .clone()
                .unwrap_or_else(|| c.settings.rtsp_url.clone());
            let params = match c.settings.detect_sensitivity {
                Sensitivity::Low => Params::LOW,
                Sensitivity::Medium => Params::MEDIUM,
                Sensitivity::High => Params::HIGH,
            };
            (c.id, Spec { url, params })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support;

    #[test]
    fn who_watches_what() {
        let mut main_only = test_support::camera("a");
        main_only.settings.detect_sensitivity = Sensitivity::High;
        let mut with_sub = test_support::camera("b");
        with_sub.settings.rtsp_sub_url = Some("rtsp://h/sub".into());
        let mut not_detecting = test_support::camera("c");
        not_detecting.settings.detect = false;
        let mut disabled = test_support::camera("d");
        disabled.settings.enabled = false;
        let wanted = wanted(&[main_only.clone(), with_sub.clone(), not_detecting, disabled]);
        assert_eq!(wanted.len(), 2);
        assert_eq!(
            wanted[&main_only.id],
            Spec {
                url: "rtsp://u:p@h/main".into(),
                params: Params::HIGH
            }
        );
        assert_eq!(
            wanted[&with_sub.id],
            Spec {
                url: "rtsp://h/sub".into(),
                params: Params::MEDIUM
            }
        );
    }
}

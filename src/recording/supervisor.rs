//! Keeps one recorder running for each camera that is enabled and has
//! `record` on: after start-up recovery, and then whenever cameras change
//! (and every 10 s, which also restarts a recorder whose thread died), it
//! stops the recorders no longer wanted or whose source changed, and starts
//! the missing ones.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use uuid::Uuid;

use super::recorder::{Recorder, Source};
use super::{Clean, Order, Shared, State, recovery};
use crate::camera::Camera;

const RECHECK: Duration = Duration::from_secs(10);

/// Audio codecs a browser plays from MP4: copied into recordings; any other
/// audio (G.711 and the like) is left out.
const PLAYABLE_AUDIO: [&str; 2] = ["aac", "opus"];

struct Running {
    source: Source,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

pub(super) fn run(shared: &Arc<Shared>, orders: mpsc::Receiver<Order>) {
    recovery::recover(shared);
    shared.clean(Clean::Check);
    let mut running: HashMap<Uuid, Running> = HashMap::new();
    loop {
        if let Ok(cameras) = shared.db.run(|s| s.cameras()) {
            reconcile(shared, &mut running, &wanted(&cameras));
            // The deleted cameras' states go with them.
            shared.retain_states(|id| cameras.iter().any(|c| c.id == *id));
        }
        match orders.recv_timeout(RECHECK) {
            Ok(Order::CamerasChanged) | Err(RecvTimeoutError::Timeout) => {
                // Several changes in a row need one pass.
                let mut stop = false;
                while let Ok(order) = orders.try_recv() {
                    stop |= matches!(order, Order::Stop);
                }
                if stop {
                    break;
                }
            }
            Ok(Order::Stop) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    stop_all(shared, running.into_iter().collect());
}

/// What each camera that should record records.
fn wanted(cameras: &[Camera]) -> HashMap<Uuid, Source> {
    cameras
        .iter()
        .filter(|c| c.settings.enabled && c.settings.record)
        .map(|c| {
            let audio = c
                .capabilities
                .as_ref()
                .and_then(|caps| caps.audio_codec.as_deref())
                .is_some_and(|codec| PLAYABLE_AUDIO.contains(&codec));
            let source = Source {
                url: c.settings.rtsp_url.clone(),
                audio,
            };
            (c.id, source)
        })
        .collect()
}

fn reconcile(
    shared: &Arc<Shared>,
    running: &mut HashMap<Uuid, Running>,
    wanted: &HashMap<Uuid, Source>,
) {
    let stale: Vec<Uuid> = running
        .iter()
        .filter(|(id, r)| wanted.get(id) != Some(&r.source) || r.thread.is_finished())
        .map(|(id, _)| *id)
        .collect();
    let stopping: Vec<(Uuid, Running)> = stale
        .iter()
        .filter_map(|id| running.remove_entry(id))
        .collect();
    stop_all(shared, stopping);
    for (id, source) in wanted {
        if running.contains_key(id) {
            continue;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let recorder = Recorder::new(shared.clone(), *id, source.clone(), stop.clone());
        let spawned = thread::Builder::new()
            .name(format!("recorder {id}"))
            .stack_size(256 * 1024)
            .spawn(move || recorder.run());
        match spawned {
            Ok(thread) => {
                running.insert(
                    *id,
                    Running {
                        source: source.clone(),
                        stop,
                        thread,
                    },
                );
            }
            Err(e) => log::error!("cannot start the recorder of camera {id}: {e}"),
        }
    }
    shared.recorders.store(running.len(), Ordering::Relaxed);
}

/// Asks each recorder to stop, all at once, then waits for them: each
/// finishes its segment or kills its ffmpeg within its grace.
fn stop_all(shared: &Shared, recorders: Vec<(Uuid, Running)>) {
    for (_, r) in &recorders {
        r.stop.store(true, Ordering::Release);
    }
    for (id, r) in recorders {
        let _ = r.thread.join();
        shared.set_state(id, State::Off, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::Capabilities;
    use crate::store::test_support;

    fn camera(enabled: bool, record: bool, audio: Option<&str>) -> Camera {
        let mut camera = test_support::camera("c");
        (camera.settings.enabled, camera.settings.record) = (enabled, record);
        camera.capabilities = audio.map(|codec| Capabilities {
            video_codec: "h264".into(),
            width: 640,
            height: 360,
            fps: 25,
            audio_codec: (!codec.is_empty()).then(|| codec.to_owned()),
        });
        camera
    }

    #[test]
    fn who_records_what() {
        let cameras = [
            camera(true, true, Some("aac")),
            camera(true, true, Some("pcm_alaw")),
            camera(true, true, Some("opus")),
            camera(true, true, None),
            camera(false, true, Some("aac")),
            camera(true, false, Some("aac")),
        ];
        let wanted = wanted(&cameras);
        let audio = |i: usize| wanted.get(&cameras[i].id).map(|s| s.audio);
        assert_eq!(
            (0..6).map(audio).collect::<Vec<_>>(),
            vec![Some(true), Some(false), Some(true), Some(false), None, None]
        );
    }
}

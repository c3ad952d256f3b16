//! Keeps one recorder running for each camera that is enabled and has
//! `record` on (`workers.rs` does the keeping), after start-up recovery.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use uuid::Uuid;

use super::recorder::{Recorder, Source};
use super::{Clean, Shared, State, recovery};
use crate::camera::Camera;
use crate::workers::{self, Order, Workers};

/// Audio codecs a browser plays from MP4: copied into recordings; any other
/// audio (G.711 and the like) is left out.
const PLAYABLE_AUDIO: [&str; 2] = ["aac", "opus"];

pub(super) fn run(shared: &Arc<Shared>, orders: mpsc::Receiver<Order>) {
    recovery::recover(shared);
    shared.clean(Clean::Check);
    let mut recorders = Workers::new("recorder");
    workers::supervise(&orders, || {
        let Ok(cameras) = shared.db.run(|s| s.cameras()) else {
            return;
        };
        let start = |camera, source, stop| {
            let recorder = Recorder::new(shared.clone(), camera, source, stop);
            move || recorder.run()
        };
        let wanted = wanted(&cameras);
        for camera in recorders.reconcile(&wanted, start) {
            shared.set_state(camera, State::Off, None);
            if !wanted.get(&camera).is_some_and(|source| source.ring) {
                shared.ring.forget(camera);
            }
        }
        shared.recorders.store(recorders.len(), Ordering::Relaxed);
        // The deleted cameras' states go with them.
        shared.retain_states(|id| cameras.iter().any(|c| c.id == *id));
    });
    for camera in recorders.stop_all() {
        shared.set_state(camera, State::Off, None);
    }
}

/// What each camera that should record records: one that detects without
/// recording keeps only a ring, for its motion clips.
fn wanted(cameras: &[Camera]) -> HashMap<Uuid, Source> {
    cameras
        .iter()
        .filter(|c| c.settings.enabled && (c.settings.record || c.settings.detect))
        .map(|c| {
            let audio = c
                .capabilities
                .as_ref()
                .and_then(|caps| caps.audio_codec.as_deref())
                .is_some_and(|codec| PLAYABLE_AUDIO.contains(&codec));
            let source = Source {
                url: c.settings.rtsp_url.clone(),
                audio,
                ring: !c.settings.record,
            };
            (c.id, source)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::Capabilities;
    use crate::store::test_support;

    fn camera(enabled: bool, record: bool, audio: Option<&str>) -> Camera {
        let mut camera = test_support::camera("c");
        (camera.settings.enabled, camera.settings.record) = (enabled, record);
        camera.settings.detect = false;
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
        assert!(wanted.values().all(|s| !s.ring));
        // Detecting without recording: a ring only.
        let mut detector = camera(true, false, None);
        detector.settings.detect = true;
        assert!(super::wanted(&[detector.clone()])[&detector.id].ring);
    }
}

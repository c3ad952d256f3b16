//! Keeps one recorder running for each camera that is enabled and has
//! `record` on (`workers.rs` does the keeping) while the recordings folder
//! is this node's, and a ring for each that detects; checks the folder's
//! identity at each pass (every 10 s), and starts the reconciliation of
//! folder and index when the folder is found.

use crate::channel;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use uuid::Uuid;

use super::codecs::{self, Audio};
use super::recorder::{Recorder, Source};
use super::{Clean, Disk, Shared, State, disk, recovery};
use crate::cameras::camera::Camera;
use crate::clock::now_ms;
use crate::lock::lock;
use crate::workers::{self, Order, Workers};

pub(super) fn run(shared: &Arc<Shared>, orders: channel::Receiver<Order>) {
    let mut recorders = Workers::new("recorder");
    workers::supervise(&orders, || {
        let disk_ready = check_disk(shared);
        if disk_ready
            && shared.reconcile_wanted.load(Ordering::Acquire)
            && !shared.reconciling.swap(true, Ordering::AcqRel)
        {
            shared.reconcile_wanted.store(false, Ordering::Release);
            recovery::spawn(shared.clone());
        }
        let Ok(cameras) = shared.db.run(|s| s.cameras()) else {
            return;
        };
        let start = |camera, source, stop| {
            let recorder = Recorder::new(shared.clone(), camera, source, stop);
            move || recorder.run()
        };
        let wanted = wanted(&cameras, disk_ready);
        for camera in recorders.reconcile(&wanted, start) {
            shared.set_state(camera, State::Off, None);
            if !wanted.get(&camera).is_some_and(|source| source.ring) {
                shared.ring.forget(camera);
            }
        }
        let recording: HashSet<Uuid> = wanted
            .iter()
            .filter(|(_, source)| !source.ring)
            .map(|(id, _)| *id)
            .collect();
        let stopped = {
            let mut current = lock(&shared.recording);
            let stopped = current.iter().any(|id| !recording.contains(id));
            *current = recording;
            stopped
        };
        if stopped {
            // A deleted camera's folder can be emptied now its recorder is gone.
            shared.clean(Clean::Check);
        }
        // The deleted cameras' states go with them.
        shared.retain_states(|id| cameras.iter().any(|c| c.id == *id));
    });
    for camera in recorders.stop_all() {
        shared.set_state(camera, State::Off, None);
    }
}

/// Looks at the recordings folder's identity (every pass: every 10 s and
/// after each change); whether the node may use it. When it becomes usable,
/// the folder and the index are reconciled and the cleaner looks at it.
fn check_disk(shared: &Shared) -> bool {
    let was_ready = shared.disk_ready();
    match disk::check(&shared.settings.dir, &shared.db) {
        Ok(id) => {
            shared.set_disk(Disk::Ready(id));
            if !was_ready {
                shared.reconcile_wanted.store(true, Ordering::Release);
                shared.clean(Clean::Check);
            }
            true
        }
        Err(why) => {
            let since_ms = match &*lock(&shared.disk) {
                Disk::Refused(_, since_ms) => *since_ms,
                _ => now_ms(),
            };
            shared.set_disk(Disk::Refused(why, since_ms));
            false
        }
    }
}

/// What each camera that should record records: into the recordings folder
/// when it records and the folder is usable; only a ring, for its motion
/// clips, when it detects but does not record, or cannot (the disk is
/// missing: its events keep their clips meanwhile).
fn wanted(cameras: &[Camera], disk_ready: bool) -> HashMap<Uuid, Source> {
    cameras
        .iter()
        .filter(|c| c.settings.enabled)
        .filter_map(|c| {
            let records = c.settings.record && disk_ready;
            if !records && !c.settings.detect {
                return None;
            }
            let caps = c.capabilities.as_ref();
            let source = Source {
                url: c.settings.rtsp_url.clone(),
                audio: Audio::of(caps),
                video_tag: codecs::video_tag(caps),
                ring: !records,
            };
            Some((c.id, source))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::Capabilities;
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
            camera(true, true, Some("vorbis")),
            camera(true, true, None),
            camera(false, true, Some("aac")),
            camera(true, false, Some("aac")),
        ];
        let wanted = wanted(&cameras, true);
        let audio = |i: usize| wanted.get(&cameras[i].id).map(|s| s.audio);
        use Audio::{Copy, None as No, ToAac};
        assert_eq!(
            (0..7).map(audio).collect::<Vec<_>>(),
            vec![
                Some(Copy),
                Some(ToAac),
                Some(Copy),
                Some(No),
                Some(No),
                None,
                None
            ]
        );
        assert!(wanted.values().all(|s| !s.ring));
        // Detecting without recording: a ring only.
        let mut detector = camera(true, false, None);
        detector.settings.detect = true;
        assert!(super::wanted(&[detector.clone()], true)[&detector.id].ring);
        // The disk missing: nothing is written there; a camera that also
        // detects keeps a ring for its events' clips.
        let mut both = camera(true, true, None);
        both.settings.detect = true;
        let missing = super::wanted(&[cameras[0].clone(), both.clone()], false);
        assert!(!missing.contains_key(&cameras[0].id));
        assert!(missing[&both.id].ring);
    }
}

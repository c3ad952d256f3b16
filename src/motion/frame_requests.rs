//! Requests for a watcher's next colour frame, for a camera's snapshot: the
//! watcher of a camera that classifies decodes colour frames up to 640
//! pixels wide anyway, so a snapshot need not read the stream again. A
//! request waits in its camera's slot, which the watcher looks at with each
//! frame (a lock and a map lookup); only a frame asked for is copied, so at
//! rest no frame is held.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::frame::Format;
use crate::channel;
use crate::lock::lock;

/// A watcher that has sent no colour frame for this long (stopped, or
/// restarting its decoder) is not waited for.
const FRESH: Duration = Duration::from_secs(5);

/// A colour frame as the watcher's decoder writes it (`pgmyuv`): YUV 4:2:0,
/// the luma plane, then for each chroma row the U row (half the width)
/// followed by the V row.
pub struct Yuv420Frame {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

impl Yuv420Frame {
    /// The frame as planar `yuv420p` (the luma plane, the whole U plane,
    /// then the whole V plane), which is what ffmpeg's raw video input
    /// takes; None when its bytes are not a frame of its size.
    pub fn planar(&self) -> Option<Vec<u8>> {
        let (w, h) = (self.width, self.height);
        if w % 2 != 0 || h % 2 != 0 || self.data.len() != w * h * 3 / 2 {
            return None;
        }
        let (luma, chroma) = self.data.split_at(w * h);
        let mut planar = Vec::with_capacity(self.data.len());
        planar.extend_from_slice(luma);
        for half in 0..2 {
            for row in chroma.chunks_exact(w) {
                planar.extend_from_slice(&row[half * w / 2..(half + 1) * w / 2]);
            }
        }
        Some(planar)
    }
}

#[derive(Default)]
pub struct FrameRequests {
    slots: Mutex<HashMap<Uuid, Slot>>,
}

struct Slot {
    /// When its watcher last sent a colour frame.
    seen: Instant,
    waiting: Vec<channel::SyncSender<Arc<Yuv420Frame>>>,
}

impl FrameRequests {
    /// A watcher's frame as it comes: given to whoever waits for one of
    /// `camera`, if it is in colour.
    pub fn offer(&self, camera: Uuid, format: Format, width: usize, height: usize, data: &[u8]) {
        if format != Format::Yuv420 {
            return;
        }
        let mut slots = lock(&self.slots);
        let slot = slots.entry(camera).or_insert_with(|| Slot {
            seen: Instant::now(),
            waiting: Vec::new(),
        });
        slot.seen = Instant::now();
        if slot.waiting.is_empty() {
            return;
        }
        let frame = Arc::new(Yuv420Frame {
            width,
            height,
            data: data.to_vec(),
        });
        for waiting in slot.waiting.drain(..) {
            // One that gave up meanwhile is gone.
            let _ = waiting.try_send(frame.clone());
        }
    }

    /// Whether someone waits for `camera`'s next frame: its watcher then
    /// decodes at full rate, so that one comes at once.
    pub fn wanted(&self, camera: Uuid) -> bool {
        lock(&self.slots)
            .get(&camera)
            .is_some_and(|slot| !slot.waiting.is_empty())
    }

    /// `camera`'s next colour frame, waiting at most `wait`; None at once
    /// when no watcher has sent one of it lately.
    pub fn next(&self, camera: Uuid, wait: Duration) -> Option<Arc<Yuv420Frame>> {
        let (sender, receiver) = channel::sync_channel(1);
        {
            let mut slots = lock(&self.slots);
            // Stopped watchers' slots go (their requests, if any, end at once).
            slots.retain(|_, slot| slot.seen.elapsed() < FRESH);
            slots.get_mut(&camera)?.waiting.push(sender);
        }
        receiver.recv_timeout(wait).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn a_request_gets_the_next_colour_frame_and_none_is_kept() {
        let requests = Arc::new(FrameRequests::default());
        let (camera, other) = (Uuid::new_v4(), Uuid::new_v4());
        let wait = Duration::from_secs(5);
        assert!(
            requests.next(camera, wait).is_none(),
            "no watcher sent a frame: no wait"
        );
        requests.offer(other, Format::Grey, 4, 2, &[1; 8]);
        assert!(
            requests.next(other, wait).is_none(),
            "grey frames do not count"
        );
        requests.offer(camera, Format::Yuv420, 2, 2, &[0; 6]);
        let waiting = {
            let requests = requests.clone();
            thread::spawn(move || requests.next(camera, wait))
        };
        while lock(&requests.slots)[&camera].waiting.is_empty() {
            thread::sleep(Duration::from_millis(5));
        }
        requests.offer(other, Format::Yuv420, 2, 2, &[9; 6]);
        requests.offer(camera, Format::Yuv420, 2, 2, &[1, 2, 3, 4, 5, 6]);
        let frame = waiting.join().unwrap().expect("the next frame");
        assert_eq!(
            (frame.width, frame.height, frame.data.as_slice()),
            (2, 2, &[1, 2, 3, 4, 5, 6][..])
        );
        assert!(lock(&requests.slots)[&camera].waiting.is_empty());
        // A watcher that stopped sending is not waited for.
        lock(&requests.slots).get_mut(&camera).unwrap().seen -= FRESH;
        let started = Instant::now();
        assert!(requests.next(camera, wait).is_none());
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

//! Between a camera's stream and its motion decoder: an ffmpeg (the
//! receiver) copies the stream as it comes, as fragmented MP4 of one frame
//! a fragment, and the pacer passes the decoder the init and, while the
//! watcher asks for key frames only, just the key frames; at full rate,
//! every frame. Decoding a P-frame needs every frame since the key frame, so
//! those are held here: a switch to full rate passes them at once, and full
//! rate begins at the frame the switch came, on the same connection, with no
//! wait for the next key frame (measured against restarting the decoder with
//! other options in `docs/design/motion.md`). The stream's key-frame
//! interval is measured from its own timestamps.

use std::collections::VecDeque;
use std::io::Write;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::key_frames::KEY_PACE_LONGEST;
use crate::media::child::{Child, Filled, MALLOC_TRIM};
use crate::media::fmp4::{self, Init};
use crate::media::input::Input;

/// The receiver's own bound on each wait for the camera (RTSP socket timeout).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);
/// A receiver that sends nothing for this long is stuck.
const WATCHDOG: Duration = Duration::from_secs(30);
const TICK: Duration = Duration::from_millis(200);
const STOP_GRACE: Duration = Duration::from_millis(1500);
/// The largest init part and frame taken (a 4K key frame is about 1 MB).
const MAX_INIT_BYTES: usize = 1 << 20;
const MAX_FRAME_BYTES: usize = 16 << 20;
/// The most held since the last key frame; past it, a switch to full rate
/// waits for the next key frame.
const MAX_HELD_BYTES: usize = 8 << 20;
/// Of a stream of key frames only (MJPEG, intra-only), no more than 5 a
/// second at full rate and 1 at key-frame pace are decoded.
const INTRA_FULL_MS: i64 = 190;
const INTRA_KEY_MS: i64 = 900;
/// The decoder's `select` filter (in `watcher.rs`) passes on a frame at
/// least this long after the last it passed on, by the stream's clock.
const SELECT_US: i64 = 190_000;
/// Frame times kept for the watcher at most (a decoder that never answers).
const MAX_QUEUED: usize = 256;
const KEY_PACE_LONGEST_MS: i64 = KEY_PACE_LONGEST.as_millis() as i64;

/// What the watcher and the pacer share.
#[derive(Default)]
pub struct Pace {
    /// Every frame is wanted (else key frames only).
    full: AtomicBool,
    /// The last interval between key frames, ms by the stream's clock; 0:
    /// not known yet.
    key_interval_ms: AtomicU32,
    /// The stream time (ms) of each picture the decoder is to send, in
    /// order: what its `select` filter keeps of the frames passed on.
    pictures: Mutex<VecDeque<i64>>,
    /// The stream's init part was passed on: the camera sends.
    streaming: AtomicBool,
}

impl Pace {
    pub fn set_full(&self, full: bool) {
        self.full.store(full, Ordering::Release);
    }

    pub fn full(&self) -> bool {
        self.full.load(Ordering::Acquire)
    }

    /// Whether the stream's init part was passed on.
    pub fn streaming(&self) -> bool {
        self.streaming.load(Ordering::Acquire)
    }

    /// The stream time (ms) of the decoder's next picture; None if not known.
    pub fn next_picture(&self) -> Option<i64> {
        crate::lock::lock(&self.pictures).pop_front()
    }

    /// The stream's key-frame interval, None until two key frames came.
    pub fn key_interval(&self) -> Option<Duration> {
        match self.key_interval_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(Duration::from_millis(u64::from(ms))),
        }
    }
}

/// What to pass on, frame by frame: pure, the stream's time passed in.
#[derive(Default)]
struct Pacing {
    /// The frames since the last key frame (that first), their stream
    /// times (µs), and whether each was passed on.
    held: Vec<(Vec<u8>, i64, bool)>,
    held_bytes: usize,
    /// The stream's time of the last key frame, and of the last frame
    /// passed on (µs).
    last_key_us: Option<i64>,
    last_passed_us: Option<i64>,
    /// Key frames in a row, up to this one.
    key_run: u32,
    /// The stream time (µs) of the last frame the decoder's filter kept.
    last_selected_us: Option<i64>,
    /// The wait for a key frame last told as the interval (µs).
    waited_us: Option<i64>,
    /// The stream time of the first frame (µs), which the wait for the
    /// first key frame counts from.
    first_us: Option<i64>,
    /// The last interval measured between key frames (µs): a wait shorter
    /// than it is not told.
    interval_us: Option<i64>,
}

/// A frame to pass on, and its stream time (µs).
type Passed = (Vec<u8>, i64);

impl Pacing {
    /// A frame came (`key`, at `at_us` by the stream's clock); what to pass
    /// on now, in order, at full rate or not (`full`), and the key-frame
    /// interval (µs) when this frame measured one.
    fn frame(
        &mut self,
        bytes: Vec<u8>,
        key: bool,
        at_us: i64,
        full: bool,
    ) -> (Vec<Passed>, Option<i64>) {
        if key {
            self.first_us.get_or_insert(at_us);
            let interval = self.last_key_us.map(|t| at_us - t).filter(|&i| i > 0);
            if interval.is_some() {
                self.interval_us = interval;
            }
            self.last_key_us = Some(at_us);
            self.key_run = self.key_run.saturating_add(1);
            self.held.clear();
            self.held_bytes = 0;
            // In a run of key frames alone each decodes by itself: thinned
            // by time, but held, should P-frames follow.
            let least = 1000 * if full { INTRA_FULL_MS } else { INTRA_KEY_MS };
            if self.key_run > 2 && self.last_passed_us.is_some_and(|t| at_us - t < least) {
                self.held_bytes = bytes.len();
                self.held.push((bytes, at_us, false));
                return (Vec::new(), interval);
            }
            self.last_passed_us = Some(at_us);
            self.held.push((Vec::new(), at_us, true));
            return (vec![(bytes, at_us)], interval);
        }
        self.key_run = 0;
        // A stream whose key frames stop: the interval grows as it waits,
        // told in whole seconds.
        let since = *self.first_us.get_or_insert(at_us);
        let least = self
            .interval_us
            .unwrap_or(0)
            .max(1000 * KEY_PACE_LONGEST_MS);
        let waited = Some(self.last_key_us.unwrap_or(since))
            .map(|t| (at_us - t + 999_999) / 1_000_000 * 1_000_000)
            .filter(|&w| w > least && Some(w) != self.waited_us);
        if waited.is_some() {
            self.waited_us = waited;
        }
        if self.held.is_empty() {
            // Nothing to decode it from.
            return (Vec::new(), waited);
        }
        self.held_bytes += bytes.len();
        if self.held_bytes > MAX_HELD_BYTES {
            self.held.clear();
            return (Vec::new(), waited);
        }
        self.held.push((bytes, at_us, false));
        if !full {
            return (Vec::new(), waited);
        }
        self.last_passed_us = Some(at_us);
        let passed = self
            .held
            .iter_mut()
            .filter(|(_, _, passed)| !*passed)
            .map(|(bytes, at, passed)| {
                *passed = true;
                (std::mem::take(bytes), *at)
            })
            .collect();
        (passed, waited)
    }
}

impl Pacing {
    /// Of frames passed on, the stream time (ms) of those the decoder's
    /// `select` filter keeps.
    fn selected(&mut self, passed: &[Passed]) -> Vec<i64> {
        passed
            .iter()
            .map(|(_, t)| *t)
            .filter(|&t| {
                let keep = self.last_selected_us.is_none_or(|s| t - s >= SELECT_US);
                if keep {
                    self.last_selected_us = Some(t);
                }
                keep
            })
            .map(|t| t / 1000)
            .collect()
    }
}

impl Pace {
    /// Notes the pictures the decoder is to send of the frames `passed` on.
    fn passing(&self, pacing: &mut Pacing, passed: &[Passed]) {
        let mut pictures = crate::lock::lock(&self.pictures);
        pictures.extend(pacing.selected(passed));
        let over = pictures.len().saturating_sub(MAX_QUEUED);
        pictures.drain(..over);
    }
}

/// The receiver's command: the stream copied, video alone, one frame a
/// fragment, on stdout.
fn receiver(ffmpeg: &std::path::Path) -> Command {
    let mut command = Command::new(ffmpeg);
    command
        .env(MALLOC_TRIM.0, MALLOC_TRIM.1)
        .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
        .args(Input::args())
        .args(["-an", "-c:v", "copy", "-f", "mp4"])
        .args(["-movflags", "empty_moov+frag_every_frame+default_base_moof"])
        .arg("pipe:1");
    command
}

/// Receives `url` and passes frames to `decoder` as `pace` asks, until
/// `done`, the receiver ends, or it sends nothing for 30 s. The receiver is
/// this thread's child: it dies with it.
pub fn run(
    ffmpeg: &std::path::Path,
    url: &str,
    mut decoder: impl Write,
    pace: &Pace,
    done: &AtomicBool,
) {
    let input = Input::rtsp(url, SOCKET_TIMEOUT);
    let mut child = match input.spawn(&mut receiver(ffmpeg)) {
        Ok(child) => child,
        Err(e) => {
            log::error!("cannot run {}: {e}", ffmpeg.display());
            return;
        }
    };
    let mut reader = Boxes {
        child: &mut child,
        done,
        last: Instant::now(),
    };
    let mut init: Option<Init> = None;
    let mut head = Vec::new();
    let mut pacing = Pacing::default();
    let mut moof: Option<Vec<u8>> = None;
    while let Some((kind, bytes)) = reader.next() {
        match &kind {
            b"ftyp" => head = bytes,
            b"moov" => {
                let Ok(parsed) = fmp4::parse_moov(&bytes) else {
                    break;
                };
                head.extend_from_slice(&bytes);
                if decoder.write_all(&head).is_err() {
                    break;
                }
                pace.streaming.store(true, Ordering::Release);
                init = Some(parsed);
            }
            b"moof" => moof = Some(bytes),
            b"mdat" => {
                let (Some(init), Some(mut frame)) = (&init, moof.take()) else {
                    continue;
                };
                let Some((key, at_us)) = about(&frame, &bytes, init) else {
                    continue;
                };
                frame.extend_from_slice(&bytes);
                let (pass, interval) = pacing.frame(frame, key, at_us, pace.full());
                if let Some(us) = interval {
                    let ms = u32::try_from(us / 1000).unwrap_or(u32::MAX);
                    pace.key_interval_ms.store(ms, Ordering::Release);
                }
                // Noted before written: the picture may come before this
                // thread runs again.
                pace.passing(&mut pacing, &pass);
                if pass.iter().any(|(f, _)| decoder.write_all(f).is_err()) {
                    break;
                }
            }
            _ => {}
        }
    }
    // The decoder reads the end, and ends.
    drop(decoder);
    child.stop(STOP_GRACE);
}

/// Whether a fragment (`moof` and `mdat`) holds a key frame, and its time
/// by the stream's clock (µs).
fn about(moof: &[u8], mdat: &[u8], init: &Init) -> Option<(bool, i64)> {
    let video = init.video()?;
    let fragment = fmp4::parse_moof(moof, 0, (8, mdat.len() as u64), init).ok()?;
    let run = fragment.run(video.id)?;
    let us = u128::from(run.decode_time) * 1_000_000 / u128::from(video.timescale.max(1));
    Some((run.starts_with_key_frame, i64::try_from(us).ok()?))
}

/// The receiver's boxes, one at a time.
struct Boxes<'a> {
    child: &'a mut Child,
    done: &'a AtomicBool,
    /// When the last bytes came.
    last: Instant,
}

impl Boxes<'_> {
    /// The next box, whole (header and body); None at the end, when told
    /// to stop, after 30 s of nothing, or for a box that is not one.
    fn next(&mut self) -> Option<([u8; 4], Vec<u8>)> {
        let mut header = [0u8; 8];
        self.fill(&mut header)?;
        let size = u32::from_be_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let kind: [u8; 4] = header[4..].try_into().expect("4 bytes");
        let limit = if &kind == b"moov" || &kind == b"ftyp" {
            MAX_INIT_BYTES
        } else {
            MAX_FRAME_BYTES
        };
        if !(8..=limit).contains(&size) {
            return None;
        }
        let mut bytes = vec![0u8; size];
        bytes[..8].copy_from_slice(&header);
        self.fill(&mut bytes[8..])?;
        Some((kind, bytes))
    }

    fn fill(&mut self, buf: &mut [u8]) -> Option<()> {
        loop {
            if self.done.load(Ordering::Acquire) || self.last.elapsed() >= WATCHDOG {
                return None;
            }
            match self.child.read_exact(buf, TICK) {
                Filled::Full => {
                    self.last = Instant::now();
                    return Some(());
                }
                Filled::Quiet => {}
                Filled::Closed => return None,
            }
        }
    }
}

/// The pacer of one decoder run, on its own thread.
pub struct Pacer {
    pub pace: Arc<Pace>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pacer {
    /// Starts receiving `url`, passing frames to `decoder`: every frame
    /// until the watcher asks otherwise, as the stream's key-frame interval
    /// is not known yet.
    pub fn start(
        ffmpeg: std::path::PathBuf,
        url: String,
        decoder: std::io::PipeWriter,
    ) -> std::io::Result<Pacer> {
        let pace = Arc::new(Pace::default());
        pace.set_full(true);
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (pace.clone(), done.clone());
        let thread = crate::spawn::spawn(
            std::thread::Builder::new()
                .name("motion pacer".into())
                .stack_size(128 * 1024),
            move || run(&ffmpeg, &url, decoder, &p, &d),
        )?;
        Ok(Pacer {
            pace,
            done,
            thread: Some(thread),
        })
    }

    /// Whether the receiver ended (the thread is done).
    pub fn ended(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the receiver, and waits for the thread.
    pub fn stop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds frames `(key, at_ms, full)`, each its own one-byte body (its
    /// index); what was passed on, by index, the intervals measured (ms),
    /// and the stream times (ms) of the pictures the decoder sends.
    fn feed(frames: &[(bool, i64, bool)]) -> (Vec<u8>, Vec<i64>, Vec<i64>) {
        let mut pacing = Pacing::default();
        let (mut passed, mut intervals, mut pictures) = (Vec::new(), Vec::new(), Vec::new());
        for (i, &(key, at, full)) in frames.iter().enumerate() {
            let (pass, interval) = pacing.frame(vec![i as u8], key, at * 1000, full);
            pictures.extend(pacing.selected(&pass));
            passed.extend(pass.into_iter().map(|(f, _)| f[0]));
            intervals.extend(interval.map(|us| us / 1000));
        }
        (passed, intervals, pictures)
    }

    #[test]
    fn key_frames_alone_while_still_and_the_held_frames_at_once_on_a_switch() {
        let k = |at| (true, at, false);
        let p = |at, full| (false, at, full);
        let (passed, intervals, pictures) = feed(&[
            // Before any key frame: nothing to decode from.
            p(0, true),
            k(100),
            p(200, false),
            p(300, false),
            k(1100),
            p(1200, false),
            // The switch: the two held come at once, then every frame.
            p(1300, true),
            p(1400, true),
            p(1500, true),
            // Back to key frames.
            p(1600, false),
            k(2100),
        ]);
        assert_eq!(passed, [1, 4, 5, 6, 7, 8, 10]);
        assert_eq!(intervals, [1000, 1000]);
        // The decoder's filter keeps frames 190 ms apart or more.
        assert_eq!(pictures, [100, 1100, 1300, 1500, 2100]);
    }

    #[test]
    fn a_stream_of_key_frames_alone_is_thinned_by_time() {
        // MJPEG at 10 a second: 1 a second at key pace, 5 at full rate.
        let frames: Vec<_> = (0..20).map(|i| (true, i * 100, i >= 10)).collect();
        let (passed, _, _) = feed(&frames);
        assert_eq!(passed, [0, 1, 10, 12, 14, 16, 18]);
    }

    #[test]
    fn a_stream_that_starts_far_from_a_key_frame_tells_its_wait() {
        let frames: Vec<_> = (0..=30).map(|i| (false, i * 100, false)).collect();
        let (passed, intervals, _) = feed(&frames);
        assert!(passed.is_empty());
        assert_eq!(intervals, [3000], "3 s waited for the first");
    }

    #[test]
    fn key_frames_that_stop_coming_lengthen_the_interval() {
        let mut frames = vec![(true, 0, false), (true, 1000, false)];
        frames.extend((1..=40).map(|i| (false, 1000 + i * 100, false)));
        let (_, intervals, _) = feed(&frames);
        assert_eq!(intervals, [1000, 3000, 4000], "told once a second past 2 s");
        // Key frames 10 s apart: the wait after one is not told until it
        // is longer than 10 s.
        let mut frames = vec![(true, 0, false), (true, 10_000, false)];
        frames.extend((1..=120).map(|i| (false, 10_000 + i * 100, false)));
        let (_, intervals, _) = feed(&frames);
        assert_eq!(intervals, [10_000, 11_000, 12_000]);
    }
}

//! Playback: a stretch of a camera's recording as one MP4 that a browser's
//! `<video>` plays and seeks, built from the index and the files' boxes with
//! no re-encoding, no ffmpeg and no copy. The file is the init part of the
//! first segment (with the total length filled in), a segment index
//! (`sidx`) of the fragments, then the fragments themselves, read from
//! their files as they are sent, each `moof` given its place in the new
//! timeline. Real gaps stay gaps (the timeline follows the wall clock).
//! Knows nothing of HTTP: a [`Clip`] has a length, and a [`ClipReader`]
//! reads any range of it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::db::lock;
use crate::media::fmp4::{self, Field, Fragment, Init, Reference};
use crate::store::Segment;

/// A gap this short between segments of one run is the jitter of placing
/// them on the wall clock, not a gap in the recording: playback closes it.
const SNAP_MS: i128 = 250;

/// One fragment of the clip: where it is read from, and what changes in
/// its `moof`.
struct Part {
    file: Arc<Path>,
    /// Where the fragment starts in its file.
    offset: u64,
    moof_len: u32,
    /// The `moof` and its `mdat`.
    len: u64,
    /// Where it starts in the clip.
    at: u64,
    sequence_field: Field,
    sequence: u32,
    /// Each run's decode-time field and its value in the clip.
    decode_times: Vec<(Field, u64)>,
}

pub struct Clip {
    header: Vec<u8>,
    parts: Vec<Part>,
    len: u64,
    /// Wall-clock start of what the clip holds, ms since the epoch: the key
    /// frame at or before the start asked for.
    pub start_ms: i64,
}

impl Clip {
    pub fn len(&self) -> u64 {
        self.len
    }

    /// A reader of bytes `start..end` of the clip.
    pub fn reader(self: &Arc<Clip>, start: u64, end: u64) -> ClipReader {
        ClipReader {
            clip: self.clone(),
            pos: start,
            end: end.min(self.len),
            file: None,
            moof: None,
        }
    }

    /// Builds the clip of `segments` (one camera's, oldest first) over
    /// `[from_ms, to_ms)`: from the last key frame at or before `from_ms` to
    /// the end of the fragment holding `to_ms`. A segment with other tracks
    /// or codec settings than the first ends the clip before it. None when
    /// nothing readable was recorded in the stretch.
    pub fn build(dir: &Path, segments: &[Segment], from_ms: i64, to_ms: i64) -> Option<Clip> {
        let mut init: Option<Init> = None;
        // (file, the segment's start, fragment)
        let mut chosen: Vec<(Arc<Path>, i64, Fragment)> = Vec::new();
        for segment in segments {
            let path = dir.join(&segment.path);
            let index = match scan(&path) {
                Ok(index) => index,
                Err(e) => {
                    // Deleted by retention meanwhile, or unreadable: leave it out.
                    log::debug!("playback: {}: {e}", segment.path);
                    continue;
                }
            };
            if let Some(current) = &init
                && !current.compatible(&index.init)
            {
                if chosen.is_empty() {
                    init = None;
                } else {
                    break;
                }
            }
            let init = init.get_or_insert_with(|| index.init.clone());
            let Some(video) = init.video().map(|t| t.id) else {
                continue;
            };
            let file: Arc<Path> = path.into();
            let mut last_key: Option<(Arc<Path>, i64, Fragment)> = None;
            for fragment in index.fragments {
                let (start, end) = wall_clock(init, segment.start_ms, &fragment, video);
                let key = fragment.run(video).is_some_and(|r| r.starts_with_key_frame);
                if end <= from_ms {
                    // Before the stretch: the last key frame may still be needed.
                    if key {
                        last_key = Some((file.clone(), segment.start_ms, fragment));
                    }
                    continue;
                }
                if start >= to_ms {
                    break;
                }
                if chosen.is_empty() && !key {
                    // The stretch starts in a fragment that is no key frame.
                    if let Some(previous) = last_key.take() {
                        chosen.push(previous);
                    } else {
                        continue;
                    }
                }
                chosen.push((file.clone(), segment.start_ms, fragment));
            }
        }
        let init = init.filter(|_| !chosen.is_empty())?;
        Some(assemble(&init, chosen))
    }
}

fn scan(path: &Path) -> io::Result<fmp4::FileIndex> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    fmp4::scan(&mut file, len)
}

/// A fragment's wall-clock start and end (ms), by its video run, or its
/// first run when it has no video.
fn wall_clock(init: &Init, segment_start: i64, fragment: &Fragment, video: u32) -> (i64, i64) {
    let Some(run) = fragment.run(video).or(fragment.runs.first()) else {
        return (segment_start, segment_start);
    };
    let timescale = init.track(run.track_id).map_or(1000, |t| t.timescale);
    let ms = |t: u64| (i128::from(t) * 1000 / i128::from(timescale)) as i64;
    let start = segment_start + ms(run.decode_time);
    (start, start + ms(run.duration))
}

/// Lays the chosen fragments out in one timeline and writes the header.
fn assemble(init: &Init, chosen: Vec<(Arc<Path>, i64, Fragment)>) -> Clip {
    let video = init.video().expect("clips are built of video");
    let base_ms = wall_clock(init, chosen[0].1, &chosen[0].2, video.id).0;
    // Per track: where its last run ends in the clip's timeline.
    let mut track_end: HashMap<u32, u64> = HashMap::new();
    let mut parts = Vec::with_capacity(chosen.len());
    // Per part: its video decode time in the clip and whether it starts
    // with a key frame, if it has video.
    let mut video_times: Vec<Option<(u64, bool)>> = Vec::with_capacity(chosen.len());
    for (sequence, (file, segment_start, fragment)) in chosen.into_iter().enumerate() {
        let offset_ms = i128::from(segment_start - base_ms);
        let mut decode_times = Vec::with_capacity(fragment.runs.len());
        let mut video_time = None;
        for run in &fragment.runs {
            let timescale = init
                .track(run.track_id)
                .map_or(1000, |t| i128::from(t.timescale));
            // Its place on the wall clock, but never before what came before,
            // and right after it when the gap is only the wall clock's jitter.
            let wanted = (offset_ms * timescale / 1000 + i128::from(run.decode_time)).max(0) as u64;
            let end = track_end.entry(run.track_id).or_insert(0);
            let jitter = (SNAP_MS * timescale / 1000) as u64;
            let time = if wanted.saturating_sub(*end) <= jitter {
                *end
            } else {
                wanted
            };
            *end = time + run.duration;
            decode_times.push((run.decode_time_field, time));
            if run.track_id == video.id {
                video_time = Some((time, run.starts_with_key_frame));
            }
        }
        video_times.push(video_time);
        parts.push(Part {
            file,
            offset: fragment.offset,
            moof_len: fragment.moof_len,
            len: fragment.len,
            at: 0,
            sequence_field: fragment.sequence_field,
            sequence: sequence as u32 + 1,
            decode_times,
        });
    }
    let track_durations: Vec<(u32, u64)> = track_end.iter().map(|(id, end)| (*id, *end)).collect();
    let movie_duration = track_durations
        .iter()
        .map(|(id, end)| {
            let timescale = init.track(*id).map_or(1000, |t| u64::from(t.timescale));
            (u128::from(*end) * u128::from(init.movie_timescale) / u128::from(timescale)) as u64
        })
        .max()
        .unwrap_or(0);
    let mut header = init.for_joined_file(movie_duration, &track_durations);
    if let Some(sidx) = fmp4::sidx(
        video.id,
        video.timescale,
        0,
        &references(&parts, &video_times, &track_end, video.id),
    ) {
        header.extend_from_slice(&sidx);
    }
    let mut at = header.len() as u64;
    for part in &mut parts {
        part.at = at;
        at += part.len;
    }
    Clip {
        header,
        parts,
        len: at,
        start_ms: base_ms,
    }
}

/// The `sidx` entries: one per fragment with video, those without (audio
/// left over at a segment's end) joined to the one before.
fn references(
    parts: &[Part],
    video_times: &[Option<(u64, bool)>],
    track_end: &HashMap<u32, u64>,
    video: u32,
) -> Vec<Reference> {
    let starts: Vec<(usize, u64, bool)> = video_times
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|(time, key)| (i, time, key)))
        .collect();
    let video_end = track_end.get(&video).copied().unwrap_or(0);
    starts
        .iter()
        .enumerate()
        .map(|(n, &(first, time, key))| {
            let (last, next_time) = match starts.get(n + 1) {
                Some(&(next, next_time, _)) => (next, next_time),
                None => (parts.len(), video_end),
            };
            let size: u64 = parts[first..last].iter().map(|p| p.len).sum();
            Reference {
                size: u32::try_from(size).unwrap_or(u32::MAX),
                duration: u32::try_from(next_time - time).unwrap_or(u32::MAX),
                starts_with_key_frame: key,
            }
        })
        .collect()
}

/// Reads a range of a clip: the header from memory, each `moof` from its
/// file with its new timing, each `mdat` straight from its file.
pub struct ClipReader {
    clip: Arc<Clip>,
    pos: u64,
    end: u64,
    file: Option<(Arc<Path>, File)>,
    /// The rewritten `moof` of the part being read.
    moof: Option<(usize, Vec<u8>)>,
}

impl ClipReader {
    fn file(&mut self, path: &Arc<Path>) -> io::Result<&File> {
        if !self
            .file
            .as_ref()
            .is_some_and(|(p, _)| Arc::ptr_eq(p, path))
        {
            self.file = Some((path.clone(), File::open(path)?));
        }
        Ok(&self.file.as_ref().expect("just opened").1)
    }
}

impl Read for ClipReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.end || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min((self.end - self.pos).min(usize::MAX as u64) as usize);
        let clip = self.clip.clone();
        let header_len = clip.header.len() as u64;
        if self.pos < header_len {
            let from = self.pos as usize;
            let n = want.min(clip.header.len() - from);
            buf[..n].copy_from_slice(&clip.header[from..from + n]);
            self.pos += n as u64;
            return Ok(n);
        }
        let index = clip.parts.partition_point(|p| p.at <= self.pos) - 1;
        let part = &clip.parts[index];
        let within = self.pos - part.at;
        let n = if within < u64::from(part.moof_len) {
            if self.moof.as_ref().is_none_or(|(i, _)| *i != index) {
                let mut moof = vec![0; part.moof_len as usize];
                self.file(&part.file)?
                    .read_exact_at(&mut moof, part.offset)?;
                let sequence = (part.sequence_field, part.sequence);
                fmp4::rewrite_moof(&mut moof, sequence, &part.decode_times);
                self.moof = Some((index, moof));
            }
            let moof = &self.moof.as_ref().expect("just read").1;
            let from = within as usize;
            let n = want.min(moof.len() - from);
            buf[..n].copy_from_slice(&moof[from..from + n]);
            n
        } else {
            let n = want.min((part.len - within).min(usize::MAX as u64) as usize);
            let read = self
                .file(&part.file)?
                .read_at(&mut buf[..n], part.offset + within)?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "a recording's file ended early (deleted meanwhile?)",
                ));
            }
            read
        };
        self.pos += n as u64;
        Ok(n)
    }
}

/// Clips recently asked for, so that a player's many range requests for one
/// clip all see the same layout, even as new segments arrive.
#[derive(Default)]
pub struct Cache {
    entries: Mutex<Vec<(Key, Arc<Clip>, Instant)>>,
}

type Key = (Uuid, i64, i64);

/// Clips kept at once, and for how long unused.
const CACHED_CLIPS: usize = 4;
const CACHE_IDLE: Duration = Duration::from_secs(600);

impl Cache {
    pub fn get(&self, key: Key) -> Option<Arc<Clip>> {
        let mut entries = lock(&self.entries);
        entries.retain(|(_, _, used)| used.elapsed() < CACHE_IDLE);
        let entry = entries.iter_mut().find(|(k, _, _)| *k == key)?;
        entry.2 = Instant::now();
        Some(entry.1.clone())
    }

    pub fn put(&self, key: Key, clip: Arc<Clip>) {
        let mut entries = lock(&self.entries);
        entries.retain(|(k, _, _)| *k != key);
        if entries.len() >= CACHED_CLIPS {
            let oldest = entries
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(i, _)| i)
                .expect("full");
            entries.remove(oldest);
        }
        entries.push((key, clip, Instant::now()));
    }
}

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
use std::sync::Arc;

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
    /// Wall-clock start and end of what the clip holds, ms since the epoch:
    /// the start is the key frame at or before the start asked for.
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Clip {
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the clip reads from `file`.
    pub fn reads(&self, file: &Path) -> bool {
        self.parts.iter().any(|p| *p.file == *file)
    }

    /// Whether every file it reads from is still there (retention may have
    /// deleted one since it was built).
    pub fn files_present(&self) -> bool {
        let mut files: Vec<&Arc<Path>> = self.parts.iter().map(|p| &p.file).collect();
        files.dedup_by(|a, b| Arc::ptr_eq(a, b));
        files.iter().all(|f| f.is_file())
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
        Clip::build_with(dir, segments, from_ms, to_ms, |path| {
            scan(path).map(Arc::new)
        })
    }

    /// [`Clip::build`], with each file's boxes from `index` (a cache).
    pub fn build_with(
        dir: &Path,
        segments: &[Segment],
        from_ms: i64,
        to_ms: i64,
        mut index: impl FnMut(&Path) -> io::Result<Arc<fmp4::FileIndex>>,
    ) -> Option<Clip> {
        let mut init: Option<Init> = None;
        // (file, the segment's start, fragment)
        let mut chosen: Vec<(Arc<Path>, i64, Fragment)> = Vec::new();
        for segment in segments {
            let path = dir.join(&segment.path);
            let index = match index(&path) {
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
            for fragment in &index.fragments {
                let (start, end) = wall_clock(init, segment.start_ms, fragment, video);
                let key = fragment.run(video).is_some_and(|r| r.starts_with_key_frame);
                if end <= from_ms {
                    // Before the stretch: the last key frame may still be needed.
                    if key {
                        last_key = Some((file.clone(), segment.start_ms, fragment.clone()));
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
                chosen.push((file.clone(), segment.start_ms, fragment.clone()));
            }
        }
        let init = init.filter(|_| !chosen.is_empty())?;
        Some(assemble(&init, chosen))
    }
}

/// The boxes of the recording at `path`.
pub fn scan(path: &Path) -> io::Result<fmp4::FileIndex> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    fmp4::scan(&mut file, len)
}

/// A fragment's wall-clock start and end (ms), by its video run, or its
/// first run when it has no video. They saturate: a file's times can be
/// anything, and a time past the year 292 million is in no stretch.
fn wall_clock(init: &Init, segment_start: i64, fragment: &Fragment, video: u32) -> (i64, i64) {
    let Some(run) = fragment.run(video).or(fragment.runs.first()) else {
        return (segment_start, segment_start);
    };
    let timescale = init.track(run.track_id).map_or(1000, |t| t.timescale);
    let ms =
        |t: u64| i64::try_from(i128::from(t) * 1000 / i128::from(timescale)).unwrap_or(i64::MAX);
    let start = segment_start.saturating_add(ms(run.decode_time));
    (start, start.saturating_add(ms(run.duration)))
}

/// Lays the chosen fragments out in one timeline and writes the header.
/// Times saturate (at u64::MAX ticks, i64::MAX ms) rather than wrap: only
/// a file's nonsense comes near them, and what it makes must not panic.
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
        let offset_ms = i128::from(segment_start) - i128::from(base_ms);
        let mut decode_times = Vec::with_capacity(fragment.runs.len());
        let mut video_time = None;
        for run in &fragment.runs {
            let timescale = init
                .track(run.track_id)
                .map_or(1000, |t| i128::from(t.timescale));
            // Its place on the wall clock, but never before what came before,
            // and right after it when the gap is only the wall clock's jitter.
            let wanted = offset_ms * timescale / 1000 + i128::from(run.decode_time);
            let wanted = u64::try_from(wanted.max(0)).unwrap_or(u64::MAX);
            let end = track_end.entry(run.track_id).or_insert(0);
            let jitter = (SNAP_MS * timescale / 1000) as u64;
            let time = if wanted.saturating_sub(*end) <= jitter {
                *end
            } else {
                wanted
            };
            *end = time.saturating_add(run.duration);
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
            let duration =
                u128::from(*end) * u128::from(init.movie_timescale) / u128::from(timescale);
            u64::try_from(duration).unwrap_or(u64::MAX)
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
    let duration_ms = u128::from(movie_duration) * 1000 / u128::from(init.movie_timescale);
    let duration_ms = i64::try_from(duration_ms).unwrap_or(i64::MAX);
    Clip {
        header,
        parts,
        len: at,
        start_ms: base_ms,
        end_ms: base_ms.saturating_add(duration_ms),
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
        // What is left can be over 4 GiB, more than a 32-bit usize: no
        // more than a buffer is wanted anyway.
        let left = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let want = buf.len().min(left(self.end - self.pos));
        let clip = self.clip.clone();
        let in_header = usize::try_from(self.pos).ok();
        if let Some(from) = in_header.filter(|&from| from < clip.header.len()) {
            let n = want.min(clip.header.len() - from);
            buf[..n].copy_from_slice(&clip.header[from..from + n]);
            self.pos += n as u64;
            return Ok(n);
        }
        let index = clip.parts.partition_point(|p| p.at <= self.pos) - 1;
        let part = &clip.parts[index];
        let within = self.pos - part.at;
        let in_moof = usize::try_from(within).ok();
        let n = if let Some(from) = in_moof.filter(|_| within < u64::from(part.moof_len)) {
            if self.moof.as_ref().is_none_or(|(i, _)| *i != index) {
                let len = usize::try_from(part.moof_len).map_err(io::Error::other)?;
                let mut moof = vec![0; len];
                self.file(&part.file)?
                    .read_exact_at(&mut moof, part.offset)?;
                let sequence = (part.sequence_field, part.sequence);
                fmp4::rewrite_moof(&mut moof, sequence, &part.decode_times);
                self.moof = Some((index, moof));
            }
            let moof = &self.moof.as_ref().expect("just read").1;
            let n = want.min(moof.len() - from);
            buf[..n].copy_from_slice(&moof[from..from + n]);
            n
        } else {
            let n = want.min(left(part.len - within));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::fmp4::mutations::{self, SEGMENT};
    use crate::media::fmp4::tests::{init_bytes, recording};
    use std::io::Cursor;
    use std::time::Instant;
    use uuid::Uuid;

    const T0: i64 = 1_795_383_374_000;

    /// Writes a 10-fragment (10 s) recording per start, as segments of one camera.
    fn segments(dir: &Path, starts: &[(i64, &[u8])]) -> Vec<Segment> {
        std::fs::create_dir_all(dir).unwrap();
        starts
            .iter()
            .map(|&(start, stsd)| {
                let path = format!("{start}.mp4");
                let mut bytes = recording(10);
                if stsd != b"avc1" {
                    let init = init_bytes(stsd);
                    let old = init_bytes(b"avc1").len();
                    bytes.splice(..old, init);
                }
                std::fs::write(dir.join(&path), &bytes).unwrap();
                Segment {
                    camera_id: Uuid::nil(),
                    start_ms: start,
                    end_ms: start + 10_000,
                    bytes: bytes.len() as u64,
                    path,
                }
            })
            .collect()
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("nvr-node-playback-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn read_all(clip: &Arc<Clip>) -> Vec<u8> {
        let mut bytes = Vec::new();
        clip.reader(0, clip.len()).read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, clip.len());
        bytes
    }

    /// The video decode times of the clip's fragments, in seconds.
    fn video_times(bytes: &[u8]) -> Vec<f64> {
        let index = fmp4::scan(&mut Cursor::new(bytes), bytes.len() as u64).unwrap();
        index
            .fragments
            .iter()
            .filter_map(|f| f.run(1))
            .map(|r| r.decode_time as f64 / 12800.0)
            .collect()
    }

    #[test]
    fn a_stretch_across_segments_is_one_continuous_file() {
        let dir = temp("across");
        let segments = segments(
            &dir,
            &[
                (T0, b"avc1"),
                (T0 + 10_000, b"avc1"),
                (T0 + 20_000, b"avc1"),
            ],
        );
        let clip = Arc::new(Clip::build(&dir, &segments, T0 + 5_500, T0 + 24_200).unwrap());
        // From the key frame at 5 s to the end of the fragment holding 24.2 s.
        assert_eq!(clip.start_ms, T0 + 5_000);
        let bytes = read_all(&clip);
        let times = video_times(&bytes);
        assert_eq!(times, (0..20).map(f64::from).collect::<Vec<_>>());
        let index = fmp4::scan(&mut Cursor::new(&bytes), bytes.len() as u64).unwrap();
        assert_eq!(
            index.complete_len,
            bytes.len() as u64,
            "every fragment is whole"
        );
        let audio: Vec<u64> = index
            .fragments
            .iter()
            .map(|f| f.run(2).unwrap().decode_time)
            .collect();
        // The test fragments hold 3 audio frames a second: the audio keeps its times.
        assert!(audio.windows(2).all(|w| w[1] == w[0] + 16_000), "{audio:?}");
        // The header: a mehd with the length (20 s at the movie's 1000), and a sidx of 20.
        let mehd = bytes.windows(4).position(|w| w == b"mehd").unwrap();
        assert_eq!(
            u64::from_be_bytes(bytes[mehd + 8..mehd + 16].try_into().unwrap()),
            20_000
        );
        let sidx = bytes.windows(4).position(|w| w == b"sidx").unwrap();
        let count = u16::from_be_bytes(bytes[sidx + 34..sidx + 36].try_into().unwrap());
        assert_eq!(count, 20);
        let sizes: u64 = (0..20)
            .map(|i| {
                let at = sidx + 36 + 12 * i;
                u64::from(u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()))
            })
            .sum();
        assert_eq!(sizes, bytes.len() as u64 - index.fragments[0].offset);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn any_range_reads_as_the_whole_does() {
        let dir = temp("ranges");
        let segments = segments(&dir, &[(T0, b"avc1"), (T0 + 10_000, b"avc1")]);
        let clip = Arc::new(Clip::build(&dir, &segments, T0, T0 + 20_000).unwrap());
        let whole = read_all(&clip);
        for (start, end) in [
            (0, 1),
            (0, 700),
            (5, 2000),
            (1000, 1300),
            (whole.len() as u64 - 10, whole.len() as u64),
        ] {
            let mut part = Vec::new();
            let mut reader = clip.reader(start, end);
            // Small reads cross the boundaries of header, moofs and mdats.
            let mut buf = [0u8; 97];
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                part.extend_from_slice(&buf[..n]);
            }
            assert_eq!(part, whole[start as usize..end as usize], "{start}..{end}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn gaps_stay_and_jitter_closes() {
        let dir = temp("gaps");
        // A segment 100 ms late (the wall clock's jitter), then one 20 s later.
        let segments = segments(
            &dir,
            &[
                (T0, b"avc1"),
                (T0 + 10_100, b"avc1"),
                (T0 + 40_100, b"avc1"),
            ],
        );
        let clip = Arc::new(Clip::build(&dir, &segments, T0, T0 + 50_100).unwrap());
        let times = video_times(&read_all(&clip));
        assert_eq!(times.len(), 30);
        assert_eq!(times[10], 10.0, "jitter closed");
        assert_eq!(times[19], 19.0);
        assert!(
            (times[20] - 40.1).abs() < 0.001,
            "the gap stays: {}",
            times[20]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn other_codec_settings_end_the_clip_and_nothing_is_none() {
        let dir = temp("settings");
        let segments = segments(&dir, &[(T0, b"avc1"), (T0 + 10_000, b"avc1-other")]);
        let clip = Arc::new(Clip::build(&dir, &segments, T0, T0 + 20_000).unwrap());
        assert_eq!(video_times(&read_all(&clip)).len(), 10);
        // Starting in the second: its own settings.
        let later = Arc::new(Clip::build(&dir, &segments, T0 + 12_000, T0 + 20_000).unwrap());
        assert_eq!(video_times(&read_all(&later)).len(), 8);
        assert!(Clip::build(&dir, &segments, T0 + 30_000, T0 + 40_000).is_none());
        assert!(Clip::build(&dir, &[], T0, T0 + 40_000).is_none());
        // A file deleted meanwhile is left out.
        std::fs::remove_file(dir.join(&segments[0].path)).unwrap();
        let rest = Arc::new(Clip::build(&dir, &segments, T0, T0 + 20_000).unwrap());
        assert_eq!(video_times(&read_all(&rest)).len(), 10);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn times_past_any_clock_saturate() {
        let file = recording(1);
        let index = fmp4::scan(&mut Cursor::new(&file), file.len() as u64).unwrap();
        let with_times = |timescale: u32, decode_time: u64, duration: u64| {
            let mut init = index.init.clone();
            init.tracks[0].timescale = timescale;
            let mut fragment = index.fragments[0].clone();
            fragment.runs[0].decode_time = decode_time;
            fragment.runs[0].duration = duration;
            (init, fragment)
        };
        let max = u64::MAX;
        // Segment start, video timescale, decode time, duration: start and end (ms).
        let table = [
            (T0, 12_800, 12_800, 6_400, (T0 + 1_000, T0 + 1_500)),
            (T0, 1, max - 10, 10, (i64::MAX, i64::MAX)),
            (i64::MAX - 5, 12_800, 12_800, 12_800, (i64::MAX, i64::MAX)),
            (i64::MIN, 1_000, 0, max, (i64::MIN, -1)),
        ];
        for (start, timescale, decode_time, duration, expected) in table {
            let (init, fragment) = with_times(timescale, decode_time, duration);
            let read = wall_clock(&init, start, &fragment, 1);
            assert_eq!(
                read, expected,
                "{start} {timescale} {decode_time} {duration}"
            );
        }
        // Fragments at both ends of the clock, with the longest durations, in one clip.
        let path: Arc<Path> = Path::new("unread.mp4").into();
        let (init, first) = with_times(1, 0, max);
        let (_, last) = with_times(1, max - 1, 1);
        let chosen = vec![(path.clone(), i64::MIN, first), (path, i64::MAX, last)];
        let clip = assemble(&init, chosen);
        assert_eq!((clip.start_ms, clip.end_ms), (i64::MIN, -1));
        let header = &clip.header[init.ftyp.len()..];
        assert!(fmp4::parse_moov(header).is_ok());
    }

    /// Clips over a mutated segment `middle`, alone and between two real
    /// ones (3 s each, from T0), are read whole and read back as whole
    /// fragments; read again after the mutated file is cut and deleted,
    /// they fail or not, but do not panic. Returns the clips' fragments.
    fn check_build(dir: &Path, middle: &[u8]) -> Vec<usize> {
        std::fs::write(dir.join("b.mp4"), middle).unwrap();
        let segment = |path: &str, start: i64| Segment {
            camera_id: Uuid::nil(),
            start_ms: T0 + start,
            end_ms: T0 + start + 3_000,
            bytes: 0,
            path: path.into(),
        };
        let segments = [
            segment("a.mp4", 0),
            segment("b.mp4", 3_000),
            segment("c.mp4", 6_000),
        ];
        // Each starts within a fragment: its key frame is looked for.
        let stretches = [
            (&segments[1..2], T0 + 3_500, T0 + 6_000),
            (&segments[..], T0 + 1_500, T0 + 9_000),
        ];
        let clips: Vec<Arc<Clip>> = stretches
            .into_iter()
            .filter_map(|(segments, from, to)| Clip::build(dir, segments, from, to))
            .map(Arc::new)
            .collect();
        for clip in &clips {
            let bytes = read_all(clip);
            let index = fmp4::scan(&mut Cursor::new(&bytes), clip.len()).expect("the clip reads");
            assert_eq!(index.fragments.len(), clip.parts.len());
            assert_eq!(index.complete_len, clip.len());
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("b.mp4"))
            .unwrap();
        file.set_len(middle.len() as u64 / 2).unwrap();
        drop(file);
        for clip in &clips {
            let _ = clip.reader(0, clip.len()).read_to_end(&mut Vec::new());
        }
        std::fs::remove_file(dir.join("b.mp4")).unwrap();
        for clip in &clips {
            let _ = clip.reader(0, clip.len()).read_to_end(&mut Vec::new());
        }
        clips.iter().map(|c| c.parts.len()).collect()
    }

    #[test]
    fn mutated_segments_never_panic_loop_or_balloon() {
        let dir = temp("mutated");
        std::fs::create_dir_all(&dir).unwrap();
        for path in ["a.mp4", "c.mp4"] {
            std::fs::write(dir.join(path), SEGMENT).unwrap();
        }
        // From a's second fragment; all of b's, and c's.
        assert_eq!(check_build(&dir, SEGMENT), [4, 3 + 4 + 4]);
        let started = Instant::now();
        let check_dir = dir.clone();
        // Three files scanned (within 16 times their bytes, as in fmp4's
        // test), and a clip of them read into memory. Measured: 1.5 times.
        let bound = |len| 16 * (len + 2 * SEGMENT.len()) + (64 << 10);
        let cases = mutations::cases(SEGMENT);
        let summary = mutations::run(cases, bound, move |bytes| {
            check_build(&check_dir, bytes);
        });
        eprintln!("playback: {summary}, {:?} in all", started.elapsed());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

//! Fragmented MP4 (ISO/IEC 14496-12) as ffmpeg writes recordings with
//! `movflags=+frag_keyframe+empty_moov+default_base_moof`: an init part
//! (`ftyp`, `moov` without samples) and fragments (`moof` + `mdat`), each
//! starting at a key frame, with sample data addressed from its own `moof`.
//! This reads what indexing and playback need (the tracks, and each
//! fragment's place, timing and key frame) and writes the few boxes that
//! join fragments of several files into one file. Pure: bytes in, facts or
//! bytes out; [`scan`] reads through any `Read + Seek`.

use std::io::{self, Read, Seek, SeekFrom};

/// Why a file is not a recording this module can read.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a readable fragmented MP4: {}", self.0)
    }
}

type Result<T> = std::result::Result<T, Malformed>;

/// A `moof` larger than this is not one ffmpeg wrote for a camera.
const MAX_MOOF_BYTES: u64 = 4 * 1024 * 1024;
/// Likewise for the init part.
const MAX_INIT_BYTES: u64 = 1024 * 1024;

/// `trun`'s sample flags: the sample is not a sync sample (key frame).
const NON_SYNC_SAMPLE: u32 = 0x0001_0000;

/// A track of the init part, with its fragment defaults (`trex`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    pub id: u32,
    pub timescale: u32,
    pub handler: [u8; 4],
    /// The sample description (`stsd`), to tell whether files can be joined.
    stsd: Vec<u8>,
    default_duration: u32,
    default_size: u32,
    default_flags: u32,
    /// Where the durations of `tkhd` and `mdhd` sit in the `moov`.
    tkhd_duration: Field,
    mdhd_duration: Field,
}

impl Track {
    pub fn is_video(&self) -> bool {
        &self.handler == b"vide"
    }
}

/// A number inside a box: its position and whether it is 64-bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub at: usize,
    pub wide: bool,
}

impl Field {
    pub fn write(self, bytes: &mut [u8], value: u64) {
        if self.wide {
            bytes[self.at..self.at + 8].copy_from_slice(&value.to_be_bytes());
        } else {
            let value = u32::try_from(value).unwrap_or(u32::MAX);
            bytes[self.at..self.at + 4].copy_from_slice(&value.to_be_bytes());
        }
    }
}

/// The init part of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Init {
    pub ftyp: Vec<u8>,
    pub moov: Vec<u8>,
    pub movie_timescale: u32,
    pub tracks: Vec<Track>,
    mvhd_duration: Field,
    /// Where the `mvex` body starts (where a `mehd` goes), and the `mehd`
    /// duration if there is one.
    mvex_body: usize,
    mehd_duration: Option<Field>,
}

impl Init {
    /// The first video track.
    pub fn video(&self) -> Option<&Track> {
        self.tracks.iter().find(|t| t.is_video())
    }

    pub fn track(&self, id: u32) -> Option<&Track> {
        self.tracks.iter().find(|t| t.id == id)
    }

    /// Whether fragments written under `other` can follow fragments written
    /// under this init in one file: the same tracks, timescales and sample
    /// descriptions.
    pub fn compatible(&self, other: &Init) -> bool {
        let key = |t: &Track| (t.id, t.timescale, t.handler, t.stsd.clone());
        self.tracks.len() == other.tracks.len()
            && self.tracks.iter().map(key).eq(other.tracks.iter().map(key))
    }

    /// This init part for a file of `duration` (in the movie's timescale)
    /// whose tracks last `track_durations` (track id, duration in the
    /// track's timescale): the durations filled in, and a `mehd` so that
    /// players know the length before reading the fragments.
    pub fn for_joined_file(&self, duration: u64, track_durations: &[(u32, u64)]) -> Vec<u8> {
        let mut moov = self.moov.clone();
        self.mvhd_duration.write(&mut moov, duration);
        for track in &self.tracks {
            let track_duration = track_durations
                .iter()
                .find(|(id, _)| *id == track.id)
                .map_or(0, |(_, d)| *d);
            track.tkhd_duration.write(&mut moov, duration);
            track.mdhd_duration.write(&mut moov, track_duration);
        }
        if let Some(mehd) = self.mehd_duration {
            mehd.write(&mut moov, duration);
        } else {
            let mut mehd = full_box(b"mehd", 1, 0, 8);
            mehd.extend_from_slice(&duration.to_be_bytes());
            moov.splice(self.mvex_body..self.mvex_body, mehd.iter().copied());
            // The `mvex` header is just before its body; `moov`'s at the start.
            grow_box(&mut moov, self.mvex_body - 8, mehd.len());
            grow_box(&mut moov, 0, mehd.len());
        }
        let mut out = self.ftyp.clone();
        out.extend_from_slice(&moov);
        out
    }
}

/// Adds `by` to the 32-bit size of the box whose header is at `at`.
fn grow_box(bytes: &mut [u8], at: usize, by: usize) {
    let size = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let grown = size + by as u32;
    bytes[at..at + 4].copy_from_slice(&grown.to_be_bytes());
}

/// The header of a full box of `body_len` bytes after version and flags.
fn full_box(kind: &[u8; 4], version: u8, flags: u32, body_len: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + body_len);
    b.extend_from_slice(&((12 + body_len) as u32).to_be_bytes());
    b.extend_from_slice(kind);
    b.push(version);
    b.extend_from_slice(&flags.to_be_bytes()[1..]);
    b
}

/// One track's part of a fragment (a `traf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub track_id: u32,
    /// The decode time of its first sample (`tfdt`), in the track's timescale.
    pub decode_time: u64,
    /// Where that decode time sits in the `moof`.
    pub decode_time_field: Field,
    /// The sum of its sample durations.
    pub duration: u64,
    pub samples: u32,
    pub starts_with_key_frame: bool,
}

/// A `moof` and the `mdat` after it, as found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Where the `moof` starts in the file.
    pub offset: u64,
    pub moof_len: u32,
    /// `moof` and `mdat` together.
    pub len: u64,
    /// Where the sequence number (`mfhd`) sits in the `moof`.
    pub sequence_field: Field,
    pub runs: Vec<Run>,
}

impl Fragment {
    pub fn run(&self, track_id: u32) -> Option<&Run> {
        self.runs.iter().find(|r| r.track_id == track_id)
    }
}

/// What [`scan`] found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIndex {
    pub init: Init,
    pub fragments: Vec<Fragment>,
    /// Where the last whole fragment ends: past it is what a crash cut short
    /// (or the `mfra` index ffmpeg adds at the end).
    pub complete_len: u64,
}

impl FileIndex {
    /// The length of the video in the file, in the video track's timescale.
    pub fn video_duration(&self) -> u64 {
        let Some(video) = self.init.video() else {
            return 0;
        };
        self.fragments
            .iter()
            .filter_map(|f| f.run(video.id))
            .map(|r| r.duration)
            .sum()
    }
}

/// Reads the boxes of a recording of `len` bytes, skipping the media data.
/// A fragment cut short and anything after it are left out.
pub fn scan(file: &mut (impl Read + Seek), len: u64) -> io::Result<FileIndex> {
    let malformed = |m: Malformed| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut pos = 0;
    let mut ftyp = Vec::new();
    let mut init: Option<Init> = None;
    let mut fragments = Vec::new();
    let mut complete_len = 0;
    // A `moof` waiting for its `mdat`: (offset, bytes).
    let mut moof: Option<(u64, Vec<u8>)> = None;
    while pos + 8 <= len {
        file.seek(SeekFrom::Start(pos))?;
        let mut head = [0u8; 16];
        file.read_exact(&mut head[..8])?;
        let kind: [u8; 4] = head[4..8].try_into().expect("4 bytes");
        let (size, header_len) = match u32::from_be_bytes(head[..4].try_into().expect("4")) {
            0 => (len - pos, 8),
            1 => {
                if pos + 16 > len {
                    break;
                }
                file.read_exact(&mut head[8..16])?;
                (u64::from_be_bytes(head[8..16].try_into().expect("8")), 16)
            }
            n => (u64::from(n), 8),
        };
        if size < header_len || pos + size > len {
            break; // cut short
        }
        match &kind {
            b"ftyp" => ftyp = read_box(file, pos, size, MAX_INIT_BYTES)?,
            b"moov" => {
                let moov = read_box(file, pos, size, MAX_INIT_BYTES)?;
                let mut parsed = parse_moov(&moov).map_err(malformed)?;
                parsed.ftyp = std::mem::take(&mut ftyp);
                init = Some(parsed);
                complete_len = pos + size;
            }
            b"moof" => moof = Some((pos, read_box(file, pos, size, MAX_MOOF_BYTES)?)),
            b"mdat" => {
                let (Some(init), Some((offset, bytes))) = (&init, moof.take()) else {
                    return Err(malformed(Malformed("media data before its moof")));
                };
                if offset + bytes.len() as u64 != pos {
                    return Err(malformed(Malformed("a moof not followed by its mdat")));
                }
                let fragment = parse_moof(&bytes, offset, size, init).map_err(malformed)?;
                fragments.push(fragment);
                complete_len = pos + size;
            }
            _ => {}
        }
        pos += size;
    }
    let init = init.ok_or_else(|| malformed(Malformed("no moov")))?;
    Ok(FileIndex {
        init,
        fragments,
        complete_len,
    })
}

/// Whether the bytes of `file` from `from` to `len` are whole boxes (an
/// `mfra` index, padding): then nothing there was cut short, and a file
/// whose last fragment ends at `from` is whole as it is.
pub fn whole_boxes(file: &mut (impl Read + Seek), from: u64, len: u64) -> io::Result<bool> {
    let mut pos = from;
    while pos < len {
        if len - pos < 8 {
            return Ok(false);
        }
        file.seek(SeekFrom::Start(pos))?;
        let mut head = [0u8; 16];
        file.read_exact(&mut head[..8])?;
        let size = match u32::from_be_bytes(head[..4].try_into().expect("4")) {
            0 => len - pos,
            1 if len - pos >= 16 => {
                file.read_exact(&mut head[8..16])?;
                u64::from_be_bytes(head[8..16].try_into().expect("8"))
            }
            1 => return Ok(false),
            n => u64::from(n),
        };
        if size < 8 || size > len - pos {
            return Ok(false);
        }
        pos += size;
    }
    Ok(true)
}

/// The whole box of `size` bytes at `pos`, if it is at most `limit` bytes.
fn read_box(file: &mut (impl Read + Seek), pos: u64, size: u64, limit: u64) -> io::Result<Vec<u8>> {
    if size > limit {
        let error = Malformed("a box is too large").to_string();
        return Err(io::Error::new(io::ErrorKind::InvalidData, error));
    }
    let mut bytes = vec![0; size as usize];
    file.seek(SeekFrom::Start(pos))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// A cursor over a box's bytes that fails instead of panicking.
struct Bytes<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn new(bytes: &'a [u8], pos: usize) -> Bytes<'a> {
        Bytes { bytes, pos }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(Malformed("a box ends early"))?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A 32- or 64-bit number, remembering where it is.
    fn field(&mut self, wide: bool) -> Result<(Field, u64)> {
        let field = Field { at: self.pos, wide };
        let value = if wide {
            self.u64()?
        } else {
            self.u32()?.into()
        };
        Ok((field, value))
    }

    /// Version and flags of a full box.
    fn version_flags(&mut self) -> Result<(u8, u32)> {
        let word = self.u32()?;
        Ok(((word >> 24) as u8, word & 0x00ff_ffff))
    }
}

/// The children of the box whose body is `bytes[start..end]`: (kind, body
/// start, body end), positions in `bytes`.
fn children(bytes: &[u8], start: usize, end: usize) -> Result<Vec<([u8; 4], usize, usize)>> {
    let mut found = Vec::new();
    let mut pos = start;
    while pos < end {
        let mut r = Bytes::new(&bytes[..end], pos);
        let size = r.u32()? as usize;
        let kind: [u8; 4] = r.take(4)?.try_into().expect("4");
        let (size, header) = match size {
            1 => (
                usize::try_from(r.u64()?).map_err(|_| Malformed("huge box"))?,
                16,
            ),
            0 => (end - pos, 8),
            n => (n, 8),
        };
        if size < header || pos + size > end {
            return Err(Malformed("a box overruns its parent"));
        }
        found.push((kind, pos + header, pos + size));
        pos += size;
    }
    Ok(found)
}

fn child(found: &[([u8; 4], usize, usize)], kind: &[u8; 4]) -> Result<(usize, usize)> {
    found
        .iter()
        .find(|(k, _, _)| k == kind)
        .map(|(_, s, e)| (*s, *e))
        .ok_or(Malformed("a required box is missing"))
}

/// Reads a whole `moov` box (header included).
pub fn parse_moov(moov: &[u8]) -> Result<Init> {
    let top = children(moov, 0, moov.len())?;
    let (body_start, body_end) = child(&top, b"moov")?;
    let boxes = children(moov, body_start, body_end)?;
    let (mvhd, _) = child(&boxes, b"mvhd")?;
    let mut r = Bytes::new(moov, mvhd);
    let (version, _) = r.version_flags()?;
    let wide = version == 1;
    r.take(if wide { 16 } else { 8 })?;
    let movie_timescale = r.u32()?;
    let (mvhd_duration, _) = r.field(wide)?;

    let (mvex_start, mvex_end) =
        child(&boxes, b"mvex").map_err(|_| Malformed("not fragmented (no mvex)"))?;
    let mvex = children(moov, mvex_start, mvex_end)?;
    let mehd_duration = match child(&mvex, b"mehd") {
        Ok((start, _)) => {
            let mut r = Bytes::new(moov, start);
            let (version, _) = r.version_flags()?;
            Some(r.field(version == 1)?.0)
        }
        Err(_) => None,
    };
    let mut defaults = Vec::new();
    for (kind, start, _) in &mvex {
        if kind == b"trex" {
            let mut r = Bytes::new(moov, *start);
            r.version_flags()?;
            let id = r.u32()?;
            r.u32()?; // sample description index
            defaults.push((id, r.u32()?, r.u32()?, r.u32()?));
        }
    }

    let mut tracks = Vec::new();
    for (kind, start, end) in &boxes {
        if kind != b"trak" {
            continue;
        }
        let trak = children(moov, *start, *end)?;
        let (tkhd, _) = child(&trak, b"tkhd")?;
        let mut r = Bytes::new(moov, tkhd);
        let (version, _) = r.version_flags()?;
        let wide = version == 1;
        r.take(if wide { 16 } else { 8 })?;
        let id = r.u32()?;
        r.u32()?; // reserved
        let (tkhd_duration, _) = r.field(wide)?;

        let (mdia_start, mdia_end) = child(&trak, b"mdia")?;
        let mdia = children(moov, mdia_start, mdia_end)?;
        let (mdhd, _) = child(&mdia, b"mdhd")?;
        let mut r = Bytes::new(moov, mdhd);
        let (version, _) = r.version_flags()?;
        let wide = version == 1;
        r.take(if wide { 16 } else { 8 })?;
        let timescale = r.u32()?;
        let (mdhd_duration, _) = r.field(wide)?;
        if timescale == 0 {
            return Err(Malformed("a track with timescale 0"));
        }
        let (hdlr, _) = child(&mdia, b"hdlr")?;
        let mut r = Bytes::new(moov, hdlr);
        r.take(8)?;
        let handler: [u8; 4] = r.take(4)?.try_into().expect("4");
        let (minf_start, minf_end) = child(&mdia, b"minf")?;
        let minf = children(moov, minf_start, minf_end)?;
        let (stbl_start, stbl_end) = child(&minf, b"stbl")?;
        let stbl = children(moov, stbl_start, stbl_end)?;
        let (stsd_start, stsd_end) = child(&stbl, b"stsd")?;

        let (_, default_duration, default_size, default_flags) = defaults
            .iter()
            .find(|(track, ..)| *track == id)
            .copied()
            .ok_or(Malformed("a track without fragment defaults (trex)"))?;
        tracks.push(Track {
            id,
            timescale,
            handler,
            stsd: moov[stsd_start..stsd_end].to_vec(),
            default_duration,
            default_size,
            default_flags,
            tkhd_duration,
            mdhd_duration,
        });
    }
    if tracks.is_empty() {
        return Err(Malformed("no tracks"));
    }
    Ok(Init {
        ftyp: Vec::new(),
        moov: moov.to_vec(),
        movie_timescale: movie_timescale.max(1),
        tracks,
        mvhd_duration,
        mvex_body: mvex_start,
        mehd_duration,
    })
}

// `tfhd` flags.
const BASE_DATA_OFFSET: u32 = 0x1;
const SAMPLE_DESCRIPTION_INDEX: u32 = 0x2;
const DEFAULT_DURATION: u32 = 0x8;
const DEFAULT_SIZE: u32 = 0x10;
const DEFAULT_FLAGS: u32 = 0x20;
// `trun` flags.
const DATA_OFFSET: u32 = 0x1;
const FIRST_SAMPLE_FLAGS: u32 = 0x4;
const SAMPLE_DURATION: u32 = 0x100;
const SAMPLE_SIZE: u32 = 0x200;
const SAMPLE_FLAGS: u32 = 0x400;
const SAMPLE_CTO: u32 = 0x800;

/// Reads a `moof` (`bytes`, found at `offset` in its file) followed by an
/// `mdat` of `mdat_len` bytes. Every sample must lie in that `mdat`, and be
/// addressed relative to the `moof`, so that the pair can move as one.
pub fn parse_moof(bytes: &[u8], offset: u64, mdat_len: u64, init: &Init) -> Result<Fragment> {
    let top = children(bytes, 0, bytes.len())?;
    let (start, end) = child(&top, b"moof")?;
    let boxes = children(bytes, start, end)?;
    let (mfhd, _) = child(&boxes, b"mfhd")?;
    let mut r = Bytes::new(bytes, mfhd);
    r.version_flags()?;
    let (sequence_field, _) = r.field(false)?;
    let data_start = bytes.len() as u64;
    let data_end = data_start + mdat_len;
    let mut runs = Vec::new();
    for (kind, start, end) in &boxes {
        if kind != b"traf" {
            continue;
        }
        let traf = children(bytes, *start, *end)?;
        let (tfhd, _) = child(&traf, b"tfhd")?;
        let mut r = Bytes::new(bytes, tfhd);
        let (_, flags) = r.version_flags()?;
        let track_id = r.u32()?;
        let track = init
            .track(track_id)
            .ok_or(Malformed("a fragment of an unknown track"))?;
        if flags & BASE_DATA_OFFSET != 0 {
            return Err(Malformed("absolute data offsets"));
        }
        if flags & SAMPLE_DESCRIPTION_INDEX != 0 {
            r.u32()?;
        }
        let default_duration = if flags & DEFAULT_DURATION != 0 {
            r.u32()?
        } else {
            track.default_duration
        };
        let default_size = if flags & DEFAULT_SIZE != 0 {
            r.u32()?
        } else {
            track.default_size
        };
        let default_flags = if flags & DEFAULT_FLAGS != 0 {
            r.u32()?
        } else {
            track.default_flags
        };
        let (tfdt, _) = child(&traf, b"tfdt").map_err(|_| Malformed("no decode time (tfdt)"))?;
        let mut r = Bytes::new(bytes, tfdt);
        let (version, _) = r.version_flags()?;
        let (decode_time_field, decode_time) = r.field(version == 1)?;

        let mut duration = 0u64;
        let mut samples = 0u32;
        let mut first_flags = None;
        // Where the next run's data starts, relative to the moof.
        let mut next_data: Option<u64> = None;
        for (kind, start, _) in &traf {
            if kind != b"trun" {
                continue;
            }
            let mut r = Bytes::new(bytes, *start);
            let (_, flags) = r.version_flags()?;
            let count = r.u32()?;
            let mut data = if flags & DATA_OFFSET != 0 {
                let offset = r.u32()? as i32;
                u64::try_from(offset).map_err(|_| Malformed("data before its moof"))?
            } else {
                next_data.ok_or(Malformed("a run without a data offset"))?
            };
            if data < data_start {
                return Err(Malformed("sample data inside the moof"));
            }
            let first_sample_flags = if flags & FIRST_SAMPLE_FLAGS != 0 {
                Some(r.u32()?)
            } else {
                None
            };
            for i in 0..count {
                let sample_duration = if flags & SAMPLE_DURATION != 0 {
                    r.u32()?
                } else {
                    default_duration
                };
                let size = if flags & SAMPLE_SIZE != 0 {
                    r.u32()?
                } else {
                    default_size
                };
                let sample_flags = if flags & SAMPLE_FLAGS != 0 {
                    r.u32()?
                } else {
                    default_flags
                };
                if flags & SAMPLE_CTO != 0 {
                    r.u32()?;
                }
                if samples == 0 && i == 0 {
                    first_flags = Some(first_sample_flags.unwrap_or(sample_flags));
                }
                duration += u64::from(sample_duration);
                data += u64::from(size);
            }
            if data > data_end {
                return Err(Malformed("samples beyond the mdat"));
            }
            samples += count;
            next_data = Some(data);
        }
        runs.push(Run {
            track_id,
            decode_time,
            decode_time_field,
            duration,
            samples,
            starts_with_key_frame: first_flags.is_some_and(|f| f & NON_SYNC_SAMPLE == 0),
        });
    }
    Ok(Fragment {
        offset,
        moof_len: bytes.len() as u32,
        len: bytes.len() as u64 + mdat_len,
        sequence_field,
        runs,
    })
}

/// One entry of a segment index: a fragment's bytes and duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    pub size: u32,
    pub duration: u32,
    pub starts_with_key_frame: bool,
}

/// A `sidx` box indexing `references`, which follow it directly: players
/// seek through it without reading every `moof`. None past the box's limit
/// of 65,535 references.
pub fn sidx(
    track_id: u32,
    timescale: u32,
    earliest: u64,
    references: &[Reference],
) -> Option<Vec<u8>> {
    let count = u16::try_from(references.len()).ok()?;
    let mut b = full_box(b"sidx", 1, 0, 4 + 4 + 8 + 8 + 2 + 2 + 12 * references.len());
    b.extend_from_slice(&track_id.to_be_bytes());
    b.extend_from_slice(&timescale.to_be_bytes());
    b.extend_from_slice(&earliest.to_be_bytes());
    b.extend_from_slice(&0u64.to_be_bytes()); // first offset: right after this box
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    for r in references {
        b.extend_from_slice(&(r.size & 0x7fff_ffff).to_be_bytes()); // a media reference
        b.extend_from_slice(&r.duration.to_be_bytes());
        // starts_with_SAP, SAP type 1 (a key frame), no delta.
        let sap: u32 = if r.starts_with_key_frame {
            0x9000_0000
        } else {
            0
        };
        b.extend_from_slice(&sap.to_be_bytes());
    }
    Some(b)
}

/// Gives a `moof` read from a recording its place in a joined file: a new
/// sequence number (its field and value, from [`Fragment::sequence_field`])
/// and new decode times (each run's [`Run::decode_time_field`] and value).
pub fn rewrite_moof(moof: &mut [u8], sequence: (Field, u32), decode_times: &[(Field, u64)]) {
    sequence.0.write(moof, sequence.1.into());
    for (field, time) in decode_times {
        field.write(moof, *time);
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::io::Cursor;

    /// A box of `kind` around `body`.
    pub fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = ((8 + body.len()) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.extend_from_slice(body);
        b
    }

    fn full(kind: &[u8; 4], version: u8, flags: u32, body: &[u8]) -> Vec<u8> {
        let mut b = full_box(kind, version, flags, body.len());
        b.extend_from_slice(body);
        b
    }

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    fn trak(id: u32, timescale: u32, handler: &[u8; 4], stsd: &[u8]) -> Vec<u8> {
        let tkhd = full(b"tkhd", 0, 3, &words(&[0, 0, id, 0, 0, 0, 0]));
        let mdhd = full(b"mdhd", 0, 0, &words(&[0, 0, timescale, 0, 0]));
        let mut hdlr_body = words(&[0]);
        hdlr_body.extend_from_slice(handler);
        hdlr_body.extend_from_slice(&[0; 13]);
        let hdlr = full(b"hdlr", 0, 0, &hdlr_body);
        let stbl = boxed(b"stbl", &full(b"stsd", 0, 0, stsd));
        let minf = boxed(b"minf", &stbl);
        let mdia = boxed(b"mdia", &[mdhd, hdlr, minf].concat());
        boxed(b"trak", &[tkhd, mdia].concat())
    }

    /// An init part like ffmpeg's: video track 1 (timescale 12800, 512 per
    /// frame by default) and audio track 2 (16000).
    pub fn init_bytes(stsd: &[u8]) -> Vec<u8> {
        let ftyp = boxed(b"ftyp", b"iso5\0\0\x02\0iso5iso6mp41");
        let mvhd = full(
            b"mvhd",
            0,
            0,
            &[words(&[0, 0, 1000, 0]), vec![0; 80]].concat(),
        );
        let trex = |id, duration, flags| full(b"trex", 0, 0, &words(&[id, 1, duration, 0, flags]));
        let mvex = boxed(
            b"mvex",
            &[trex(1, 512, NON_SYNC_SAMPLE), trex(2, 1024, 0)].concat(),
        );
        let moov = boxed(
            b"moov",
            &[
                mvhd,
                trak(1, 12800, b"vide", stsd),
                trak(2, 16000, b"soun", b"aac"),
                mvex,
            ]
            .concat(),
        );
        [ftyp, moov].concat()
    }

    /// A fragment: `frames` video frames (a key frame first) of 100 bytes at
    /// `video_time`, then 3 audio frames of 10 bytes at `audio_time`.
    pub fn fragment_bytes(sequence: u32, frames: u32, video_time: u64, audio_time: u64) -> Vec<u8> {
        let mfhd = full(b"mfhd", 0, 0, &words(&[sequence]));
        // tfhd: default-base-is-moof, default size; trun: data offset, first sample flags.
        let video_trun = |offset: u32| {
            full(
                b"trun",
                0,
                DATA_OFFSET | FIRST_SAMPLE_FLAGS,
                &words(&[frames, offset, 0]),
            )
        };
        let audio_trun = |offset: u32| {
            full(
                b"trun",
                0,
                DATA_OFFSET | SAMPLE_DURATION,
                &[words(&[3, offset]), words(&[1024, 1024, 1024])].concat(),
            )
        };
        let traf = |id: u32, size: u32, time: u64, trun: Vec<u8>| {
            let tfhd = full(b"tfhd", 0, 0x20000 | DEFAULT_SIZE, &words(&[id, size]));
            let tfdt = full(b"tfdt", 1, 0, &time.to_be_bytes());
            boxed(b"traf", &[tfhd, tfdt, trun].concat())
        };
        // Sizes do not depend on the offsets' values: build once to measure.
        let build = |video_offset, audio_offset| {
            boxed(
                b"moof",
                &[
                    mfhd.clone(),
                    traf(1, 100, video_time, video_trun(video_offset)),
                    traf(2, 10, audio_time, audio_trun(audio_offset)),
                ]
                .concat(),
            )
        };
        let moof_len = build(0, 0).len() as u32;
        let moof = build(moof_len + 8, moof_len + 8 + 100 * frames);
        let mdat = boxed(b"mdat", &vec![7u8; (100 * frames + 30) as usize]);
        [moof, mdat].concat()
    }

    /// A whole recording: init and `n` fragments of 25 frames (1 s).
    pub fn recording(n: u32) -> Vec<u8> {
        let mut file = init_bytes(b"avc1");
        for i in 0..n {
            file.extend(fragment_bytes(
                i + 1,
                25,
                u64::from(i) * 12800,
                u64::from(i) * 16000,
            ));
        }
        file
    }

    fn scan_bytes(bytes: &[u8]) -> io::Result<FileIndex> {
        scan(&mut Cursor::new(bytes), bytes.len() as u64)
    }

    #[test]
    fn reads_tracks_and_fragments() {
        let file = recording(3);
        let index = scan_bytes(&file).unwrap();
        assert_eq!(index.init.movie_timescale, 1000);
        let tracks: Vec<_> = index
            .init
            .tracks
            .iter()
            .map(|t| (t.id, t.timescale, t.is_video()))
            .collect();
        assert_eq!(tracks, vec![(1, 12800, true), (2, 16000, false)]);
        assert_eq!(index.fragments.len(), 3);
        assert_eq!(index.complete_len, file.len() as u64);
        let second = &index.fragments[1];
        let video = second.run(1).unwrap();
        assert_eq!(
            (
                video.decode_time,
                video.duration,
                video.samples,
                video.starts_with_key_frame
            ),
            (12800, 25 * 512, 25, true)
        );
        let audio = second.run(2).unwrap();
        assert_eq!(
            (audio.decode_time, audio.duration, audio.samples),
            (16000, 3072, 3)
        );
        assert_eq!(index.video_duration(), 3 * 12800);
        assert_eq!(second.offset + second.len, index.fragments[2].offset);
    }

    #[test]
    fn a_cut_fragment_is_left_out() {
        let file = recording(3);
        let whole = scan_bytes(&file).unwrap();
        let last = &whole.fragments[2];
        for cut in [
            last.offset + 5,
            last.offset + u64::from(last.moof_len) + 20,
            file.len() as u64 - 1,
        ] {
            let index = scan_bytes(&file[..cut as usize]).unwrap();
            assert_eq!(index.fragments.len(), 2, "cut at {cut}");
            assert_eq!(index.complete_len, last.offset, "cut at {cut}");
        }
        let init_only = scan_bytes(&file[..whole.fragments[0].offset as usize]).unwrap();
        assert!(init_only.fragments.is_empty());
    }

    #[test]
    fn whole_boxes_after_the_fragments_are_not_a_cut() {
        let mut file = recording(2);
        let end = file.len() as u64;
        file.extend(boxed(b"mfra", &[0; 20]));
        file.extend(boxed(b"free", &[]));
        let len = file.len() as u64;
        let mut cursor = Cursor::new(&file);
        assert!(whole_boxes(&mut cursor, end, len).unwrap());
        assert!(whole_boxes(&mut cursor, len, len).unwrap());
        for cut in [end + 5, end + 9, len - 1] {
            assert!(
                !whole_boxes(&mut Cursor::new(&file[..cut as usize]), end, cut).unwrap(),
                "{cut}"
            );
        }
    }

    #[test]
    fn garbage_is_refused() {
        for bytes in [&b""[..], b"not an mp4 file at all", &boxed(b"moov", b"")] {
            assert!(scan_bytes(bytes).is_err(), "{bytes:?}");
        }
        // A trun claiming more samples than its mdat holds.
        let mut file = recording(1);
        let index = scan_bytes(&file).unwrap();
        let first = &index.fragments[0];
        let count_at = first.offset as usize
            + file[first.offset as usize..]
                .windows(4)
                .position(|w| w == b"trun")
                .unwrap()
            + 8;
        file[count_at..count_at + 4].copy_from_slice(&1000u32.to_be_bytes());
        assert!(scan_bytes(&file).is_err());
    }

    #[test]
    fn compatibility_follows_the_sample_descriptions() {
        let a = scan_bytes(&init_bytes(b"avc1-720p")).unwrap().init;
        let b = scan_bytes(&init_bytes(b"avc1-720p")).unwrap().init;
        let c = scan_bytes(&init_bytes(b"avc1-1080p")).unwrap().init;
        assert!(a.compatible(&b));
        assert!(!a.compatible(&c));
    }

    #[test]
    fn the_joined_init_carries_durations() {
        let init = scan_bytes(&recording(1)).unwrap().init;
        let joined = init.for_joined_file(30_000, &[(1, 384_000), (2, 480_000)]);
        assert!(joined.starts_with(&init.ftyp));
        let moov = &joined[init.ftyp.len()..];
        let parsed = parse_moov(moov).unwrap();
        assert_eq!(parsed.tracks.len(), 2);
        let at = |f: Field| -> u64 {
            let b = &moov[f.at..];
            if f.wide {
                u64::from_be_bytes(b[..8].try_into().unwrap())
            } else {
                u32::from_be_bytes(b[..4].try_into().unwrap()).into()
            }
        };
        assert_eq!(at(parsed.mvhd_duration), 30_000);
        assert_eq!(at(parsed.mehd_duration.expect("a mehd")), 30_000);
        assert_eq!(at(parsed.tracks[0].mdhd_duration), 384_000);
        assert_eq!(at(parsed.tracks[1].mdhd_duration), 480_000);
        assert_eq!(at(parsed.tracks[1].tkhd_duration), 30_000);
        // Joining again patches the mehd in place.
        assert_eq!(parsed.for_joined_file(1, &[]).len(), moov.len());
    }

    #[test]
    fn moofs_are_rewritten_in_place() {
        let file = recording(2);
        let index = scan_bytes(&file).unwrap();
        let fragment = &index.fragments[1];
        let start = fragment.offset as usize;
        let mut moof = file[start..start + fragment.moof_len as usize].to_vec();
        let times: Vec<(Field, u64)> = fragment
            .runs
            .iter()
            .zip([500_000, 600_000])
            .map(|(run, time)| (run.decode_time_field, time))
            .collect();
        rewrite_moof(&mut moof, (fragment.sequence_field, 9), &times);
        let mdat_len = fragment.len - u64::from(fragment.moof_len);
        let reread = parse_moof(&moof, 0, mdat_len, &index.init).unwrap();
        assert_eq!(
            u32::from_be_bytes(moof[reread.sequence_field.at..][..4].try_into().unwrap()),
            9
        );
        assert_eq!(reread.run(1).unwrap().decode_time, 500_000);
        assert_eq!(reread.run(2).unwrap().decode_time, 600_000);
        assert_eq!(
            reread.run(1).unwrap().duration,
            fragment.run(1).unwrap().duration
        );
    }

    #[test]
    fn sidx_layout() {
        let refs = [
            Reference {
                size: 1000,
                duration: 12800,
                starts_with_key_frame: true,
            },
            Reference {
                size: 2000,
                duration: 6400,
                starts_with_key_frame: false,
            },
        ];
        let b = sidx(1, 12800, 77, &refs).unwrap();
        assert_eq!(b.len(), 12 + 28 + 24);
        assert_eq!(
            u32::from_be_bytes(b[..4].try_into().unwrap()) as usize,
            b.len()
        );
        assert_eq!(&b[4..8], b"sidx");
        assert_eq!(u64::from_be_bytes(b[20..28].try_into().unwrap()), 77);
        assert_eq!(u16::from_be_bytes(b[38..40].try_into().unwrap()), 2);
        assert_eq!(&b[40..52], &words(&[1000, 12800, 0x9000_0000])[..]);
        assert_eq!(&b[52..64], &words(&[2000, 6400, 0])[..]);
        assert!(sidx(1, 1, 0, &vec![refs[0]; 70_000]).is_none());
    }
}

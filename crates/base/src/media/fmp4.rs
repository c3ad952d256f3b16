//! Fragmented MP4 (ISO/IEC 14496-12) as ffmpeg writes recordings with
//! `movflags=+frag_keyframe+empty_moov+default_base_moof`: an init part
//! (`ftyp`, `moov` without samples) and fragments (`moof` + `mdat`), each
//! starting at a key frame, with sample data addressed from its own `moof`.
//! This reads what indexing and playback need (the tracks, and each
//! fragment's place, timing and key frame) and writes the few boxes that
//! join fragments of several files into one file. Pure: bytes in, facts or
//! bytes out; [`scan`] reads through any `Read + Seek`.
//!
//! Files are untrusted (cut by crashes, or anything at all): every size,
//! count and time read from one is checked before it is used, a count must
//! fit in the bytes that hold what it counts, and a cursor that fails
//! instead of panicking reads each box only up to its own end.

use std::io::{self, Read, Seek, SeekFrom};

/// Why a file is not a recording this module can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a readable fragmented MP4: {}", self.0)
    }
}

impl From<Malformed> for io::Error {
    fn from(m: Malformed) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, m.to_string())
    }
}

type Result<T> = std::result::Result<T, Malformed>;

/// A sum or an end past what its numbers can hold.
const OVERFLOW: Malformed = Malformed("a size or a time past 2^64");

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
    defaults: Defaults,
    /// Where the durations of `tkhd` and `mdhd` sit in the `moov`.
    tkhd_duration: Field,
    mdhd_duration: Field,
}

impl Track {
    pub fn is_video(&self) -> bool {
        &self.handler == b"vide"
    }
}

/// What a fragment's samples are unless it says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Defaults {
    duration: u32,
    size: u32,
    flags: u32,
}

/// A number inside a box: its position and whether it is 64-bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub at: usize,
    pub wide: bool,
}

impl Field {
    /// Writes `value`; a 32-bit field holds at most `u32::MAX`.
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
    /// The `moov` and its `mvex` (where a `mehd` goes), whose sizes grow
    /// when one is added; and the `mehd` duration if there is one.
    moov_box: Child,
    mvex_box: Child,
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
    /// under this init in one file: the same tracks, timescales, sample
    /// descriptions and fragment defaults (a joined file has this init's).
    pub fn compatible(&self, other: &Init) -> bool {
        let key = |t: &Track| (t.id, t.timescale, t.handler, t.stsd.clone(), t.defaults);
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
            let at = self.mvex_box.body;
            moov.splice(at..at, mehd.iter().copied());
            // Both headers come before the `mehd`: they stay where they were.
            for grown in [self.mvex_box, self.moov_box] {
                grown.set_len(&mut moov, grown.end - grown.at + mehd.len());
            }
        }
        let mut out = self.ftyp.clone();
        out.extend_from_slice(&moov);
        out
    }
}

/// The header of a full box of `body_len` bytes after version and flags.
fn full_box(kind: &[u8; 4], version: u8, flags: u32, body_len: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + body_len);
    // The largest made here, a `sidx` of 65,535 references, is 786,460 bytes.
    let size = u32::try_from(12 + body_len).expect("a box made here fits a 32-bit size");
    b.extend_from_slice(&size.to_be_bytes());
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
    /// The sum of its sample durations; `decode_time + duration` fits in a
    /// u64.
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
    /// The whole, well-formed fragments before the first box that is cut
    /// short or malformed, in the file's order.
    pub fragments: Vec<Fragment>,
    /// Where the last of them ends (the end of the `moov` when there is
    /// none): past it is what a crash cut short, or the `mfra` index ffmpeg
    /// adds at the end, or what could not be read.
    pub complete_len: u64,
}

impl FileIndex {
    /// The length of the video in the file, in the video track's timescale;
    /// it saturates at `u64::MAX`, which no real file comes near (2^64
    /// ticks of 1/90000 s are 6 million years).
    pub fn video_duration(&self) -> u64 {
        let Some(video) = self.init.video() else {
            return 0;
        };
        self.fragments
            .iter()
            .filter_map(|f| f.run(video.id))
            .fold(0, |sum, r| sum.saturating_add(r.duration))
    }
}

/// Reads the boxes of a recording of `len` bytes, skipping the media data.
///
/// The init part (`ftyp` and `moov`; boxes of other kinds before it are
/// skipped) must be whole and readable, or the file holds nothing this
/// module can use: an error of kind `InvalidData`. After it come the
/// fragments, boxes of other kinds between them skipped; the first fragment
/// that is cut short or malformed, and anything after it, are left out. A
/// file that ends before `len` (cut meanwhile) is read as cut there. Any
/// other error is the reader's own (EIO and the like), never the content's.
pub fn scan(file: &mut (impl Read + Seek), len: u64) -> io::Result<FileIndex> {
    let mut at = 0;
    let mut ftyp = Vec::new();
    let init = loop {
        let Some(b) = header(file, at, len)? else {
            return Err(Malformed("no whole moov").into());
        };
        at = b.end();
        match &b.kind {
            b"ftyp" => ftyp = init_box(file, &b)?,
            b"moov" => {
                let mut init = parse_moov(&init_box(file, &b)?)?;
                init.ftyp = ftyp;
                break init;
            }
            b"moof" | b"mdat" => return Err(Malformed("a fragment before the moov").into()),
            _ => {}
        }
    };
    let mut complete_len = at;
    let mut fragments = Vec::new();
    while let Some(b) = header(file, at, len)? {
        match &b.kind {
            b"moof" => match fragment(file, &b, len, &init)? {
                Some(fragment) => {
                    complete_len = b.at + fragment.len;
                    at = complete_len;
                    fragments.push(fragment);
                }
                None => break,
            },
            // Out of place: what follows is not fragments of this init.
            b"mdat" | b"moov" | b"ftyp" => break,
            _ => at = b.end(),
        }
    }
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
    let mut at = from;
    while at < len {
        match header(file, at, len)? {
            Some(b) => at = b.end(),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// The box `b` of the init part, whole.
fn init_box(file: &mut (impl Read + Seek), b: &Header) -> io::Result<Vec<u8>> {
    let read = read_box(file, b, MAX_INIT_BYTES)?;
    read.ok_or_else(|| Malformed("no readable init part").into())
}

/// The fragment of the `moof` found at `moof`: None when its `mdat` does
/// not follow it whole, or it is malformed.
fn fragment(
    file: &mut (impl Read + Seek),
    moof: &Header,
    len: u64,
    init: &Init,
) -> io::Result<Option<Fragment>> {
    let Some(mdat) = header(file, moof.end(), len)? else {
        return Ok(None);
    };
    if &mdat.kind != b"mdat" {
        return Ok(None);
    }
    let Some(bytes) = read_box(file, moof, MAX_MOOF_BYTES)? else {
        return Ok(None);
    };
    Ok(parse_moof(&bytes, moof.at, (mdat.header_len, mdat.len), init).ok())
}

/// A box's header as found in a file: its kind, where it starts, and the
/// lengths of its header and of the whole box, which lies within the file.
struct Header {
    kind: [u8; 4],
    at: u64,
    header_len: u64,
    len: u64,
}

impl Header {
    fn end(&self) -> u64 {
        self.at + self.len
    }
}

/// The header of the box at `at` in a file of `len` bytes; None when the
/// box is cut short, or has size 0 ("to the end of the file", which none
/// that this module keeps may have: they are moved into other files).
fn header(file: &mut (impl Read + Seek), at: u64, len: u64) -> io::Result<Option<Header>> {
    let left = len.saturating_sub(at);
    let mut head = [0u8; 16];
    if left < 8 || !read_at(file, at, &mut head[..8])? {
        return Ok(None);
    }
    let kind: [u8; 4] = head[4..8].try_into().expect("4 bytes");
    let (header_len, size) = match u32::from_be_bytes(head[..4].try_into().expect("4 bytes")) {
        1 => {
            if left < 16 || !read_at(file, at + 8, &mut head[8..16])? {
                return Ok(None);
            }
            (
                16,
                u64::from_be_bytes(head[8..16].try_into().expect("8 bytes")),
            )
        }
        n => (8, u64::from(n)),
    };
    if size < header_len || size > left {
        return Ok(None);
    }
    Ok(Some(Header {
        kind,
        at,
        header_len,
        len: size,
    }))
}

/// The whole box `b`, if it is at most `limit` bytes and the file holds it.
fn read_box(file: &mut (impl Read + Seek), b: &Header, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(len) = usize::try_from(b.len).ok().filter(|_| b.len <= limit) else {
        return Ok(None);
    };
    let mut bytes = vec![0; len];
    Ok(read_at(file, b.at, &mut bytes)?.then_some(bytes))
}

/// Fills `buf` from `at`; false when the file ends first (it was cut since
/// its length was taken).
fn read_at(file: &mut (impl Read + Seek), at: u64, buf: &mut [u8]) -> io::Result<bool> {
    file.seek(SeekFrom::Start(at))?;
    match file.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
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

    fn left(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
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

/// A box inside bytes read whole: its kind, and where its header, its body
/// and its end are in those bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Child {
    kind: [u8; 4],
    at: usize,
    body: usize,
    end: usize,
}

impl Child {
    /// A cursor over its body that cannot read past its end.
    fn reader<'a>(&self, bytes: &'a [u8]) -> Bytes<'a> {
        Bytes::new(&bytes[..self.end], self.body)
    }

    /// Sets its size field to `len`: the 64-bit one if it has one.
    fn set_len(&self, bytes: &mut [u8], len: usize) {
        let wide = self.body - self.at == 16;
        let at = if wide { self.at + 8 } else { self.at };
        Field { at, wide }.write(bytes, len as u64);
    }
}

/// The children of the box whose body is `bytes[start..end]`.
fn children(bytes: &[u8], start: usize, end: usize) -> Result<Vec<Child>> {
    let mut found = Vec::new();
    let mut at = start;
    while at < end {
        let mut r = Bytes::new(&bytes[..end], at);
        let size = r.u32()?;
        let kind: [u8; 4] = r.take(4)?.try_into().expect("4");
        let (header, size) = match size {
            1 => (16, usize::try_from(r.u64()?).unwrap_or(usize::MAX)),
            // To the end of its parent.
            0 => (8, end - at),
            n => (8, usize::try_from(n).unwrap_or(usize::MAX)),
        };
        if size < header || size > end - at {
            return Err(Malformed("a box overruns its parent"));
        }
        found.push(Child {
            kind,
            at,
            body: at + header,
            end: at + size,
        });
        at += size;
    }
    Ok(found)
}

fn child(found: &[Child], kind: &[u8; 4]) -> Result<Child> {
    found
        .iter()
        .find(|c| &c.kind == kind)
        .copied()
        .ok_or(Malformed("a required box is missing"))
}

/// Reads a whole `moov` box (header included).
pub fn parse_moov(moov: &[u8]) -> Result<Init> {
    let top = children(moov, 0, moov.len())?;
    let moov_box = child(&top, b"moov")?;
    let boxes = children(moov, moov_box.body, moov_box.end)?;
    let mut r = child(&boxes, b"mvhd")?.reader(moov);
    let (version, _) = r.version_flags()?;
    let wide = version == 1;
    r.take(if wide { 16 } else { 8 })?;
    let movie_timescale = r.u32()?;
    let (mvhd_duration, _) = r.field(wide)?;

    let mvex_box = child(&boxes, b"mvex").map_err(|_| Malformed("not fragmented (no mvex)"))?;
    let mvex = children(moov, mvex_box.body, mvex_box.end)?;
    let mehd_duration = match child(&mvex, b"mehd") {
        Ok(mehd) => {
            let mut r = mehd.reader(moov);
            let (version, _) = r.version_flags()?;
            Some(r.field(version == 1)?.0)
        }
        Err(_) => None,
    };
    let mut defaults = Vec::new();
    for trex in mvex.iter().filter(|c| &c.kind == b"trex") {
        let mut r = trex.reader(moov);
        r.version_flags()?;
        let id = r.u32()?;
        r.u32()?; // sample description index
        let (duration, size, flags) = (r.u32()?, r.u32()?, r.u32()?);
        defaults.push((
            id,
            Defaults {
                duration,
                size,
                flags,
            },
        ));
    }

    let mut tracks = Vec::new();
    for trak in boxes.iter().filter(|c| &c.kind == b"trak") {
        let trak = children(moov, trak.body, trak.end)?;
        let mut r = child(&trak, b"tkhd")?.reader(moov);
        let (version, _) = r.version_flags()?;
        let wide = version == 1;
        r.take(if wide { 16 } else { 8 })?;
        let id = r.u32()?;
        r.u32()?; // reserved
        let (tkhd_duration, _) = r.field(wide)?;

        let mdia = child(&trak, b"mdia")?;
        let mdia = children(moov, mdia.body, mdia.end)?;
        let mut r = child(&mdia, b"mdhd")?.reader(moov);
        let (version, _) = r.version_flags()?;
        let wide = version == 1;
        r.take(if wide { 16 } else { 8 })?;
        let timescale = r.u32()?;
        let (mdhd_duration, _) = r.field(wide)?;
        if timescale == 0 {
            return Err(Malformed("a track with timescale 0"));
        }
        let mut r = child(&mdia, b"hdlr")?.reader(moov);
        r.take(8)?;
        let handler: [u8; 4] = r.take(4)?.try_into().expect("4");
        let minf = child(&mdia, b"minf")?;
        let minf = children(moov, minf.body, minf.end)?;
        let stbl = child(&minf, b"stbl")?;
        let stbl = children(moov, stbl.body, stbl.end)?;
        let stsd = child(&stbl, b"stsd")?;

        let (_, defaults) = defaults
            .iter()
            .find(|(track, _)| *track == id)
            .copied()
            .ok_or(Malformed("a track without fragment defaults (trex)"))?;
        tracks.push(Track {
            id,
            timescale,
            handler,
            stsd: moov[stsd.body..stsd.end].to_vec(),
            defaults,
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
        moov_box,
        mvex_box,
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
/// `mdat` (the lengths of its header and of the whole box). Every sample
/// must lie in that `mdat`'s body, and be addressed relative to the `moof`,
/// so that the pair can move as one.
pub fn parse_moof(bytes: &[u8], offset: u64, mdat: (u64, u64), init: &Init) -> Result<Fragment> {
    let top = children(bytes, 0, bytes.len())?;
    let moof = child(&top, b"moof")?;
    let boxes = children(bytes, moof.body, moof.end)?;
    let mut r = child(&boxes, b"mfhd")?.reader(bytes);
    r.version_flags()?;
    let (sequence_field, _) = r.field(false)?;
    let moof_len = u32::try_from(bytes.len()).map_err(|_| Malformed("a moof too large"))?;
    let (mdat_header, mdat_len) = mdat;
    let from_moof = |len: u64| u64::from(moof_len).checked_add(len).ok_or(OVERFLOW);
    let data = from_moof(mdat_header)?..from_moof(mdat_len)?;
    let runs = boxes
        .iter()
        .filter(|c| &c.kind == b"traf")
        .map(|traf| parse_traf(bytes, traf, &data, init))
        .collect::<Result<_>>()?;
    Ok(Fragment {
        offset,
        moof_len,
        len: data.end,
        sequence_field,
        runs,
    })
}

/// Reads a `traf` whose samples must lie in `data` (relative to the moof).
fn parse_traf(bytes: &[u8], traf: &Child, data: &std::ops::Range<u64>, init: &Init) -> Result<Run> {
    let traf = children(bytes, traf.body, traf.end)?;
    let mut r = child(&traf, b"tfhd")?.reader(bytes);
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
    let mut defaults = track.defaults;
    if flags & DEFAULT_DURATION != 0 {
        defaults.duration = r.u32()?;
    }
    if flags & DEFAULT_SIZE != 0 {
        defaults.size = r.u32()?;
    }
    if flags & DEFAULT_FLAGS != 0 {
        defaults.flags = r.u32()?;
    }
    let tfdt = child(&traf, b"tfdt").map_err(|_| Malformed("no decode time (tfdt)"))?;
    let mut r = tfdt.reader(bytes);
    let (version, _) = r.version_flags()?;
    let (decode_time_field, decode_time) = r.field(version == 1)?;

    let mut duration = 0u64;
    let mut samples = 0u32;
    let mut first_flags = None;
    // Where the next run's data starts, relative to the moof.
    let mut next_data: Option<u64> = None;
    for trun in traf.iter().filter(|c| &c.kind == b"trun") {
        let run = parse_trun(trun.reader(bytes), &defaults, next_data)?;
        if run.data.start < data.start || run.data.end > data.end {
            return Err(Malformed("samples outside the mdat"));
        }
        duration = duration.checked_add(run.duration).ok_or(OVERFLOW)?;
        samples = samples.checked_add(run.count).ok_or(OVERFLOW)?;
        first_flags = first_flags.or(run.first_flags);
        next_data = Some(run.data.end);
    }
    decode_time.checked_add(duration).ok_or(OVERFLOW)?;
    Ok(Run {
        track_id,
        decode_time,
        decode_time_field,
        duration,
        samples,
        starts_with_key_frame: first_flags.is_some_and(|f| f & NON_SYNC_SAMPLE == 0),
    })
}

/// What a `trun` holds.
struct Samples {
    count: u32,
    duration: u64,
    /// The first sample's flags, if it has samples.
    first_flags: Option<u32>,
    /// Where its data lies, relative to the moof.
    data: std::ops::Range<u64>,
}

/// Reads a `trun` (`r` at its body) whose data starts at `next_data`
/// unless it says where.
fn parse_trun(mut r: Bytes, defaults: &Defaults, next_data: Option<u64>) -> Result<Samples> {
    let (_, flags) = r.version_flags()?;
    let count = r.u32()?;
    let start = if flags & DATA_OFFSET != 0 {
        let offset = r.u32()? as i32;
        u64::try_from(offset).map_err(|_| Malformed("data before its moof"))?
    } else {
        next_data.ok_or(Malformed("a run without a data offset"))?
    };
    let first_sample_flags = if flags & FIRST_SAMPLE_FLAGS != 0 {
        Some(r.u32()?)
    } else {
        None
    };
    let per_sample = [SAMPLE_DURATION, SAMPLE_SIZE, SAMPLE_FLAGS, SAMPLE_CTO]
        .iter()
        .filter(|&&f| flags & f != 0)
        .count()
        * 4;
    // Before any loop: a count is worth only the bytes that hold its samples.
    if u64::from(count) * per_sample as u64 > r.left() as u64 {
        return Err(Malformed("a trun holds fewer samples than it counts"));
    }
    // Sums of at most 2^32 numbers under 2^32: each fits in a u64.
    let (mut duration, mut size) = (0u64, 0u64);
    let mut first_sample = defaults.flags;
    if per_sample == 0 {
        duration = u64::from(count) * u64::from(defaults.duration);
        size = u64::from(count) * u64::from(defaults.size);
    } else {
        for i in 0..count {
            let mut next = |flag, default| {
                if flags & flag != 0 {
                    r.u32()
                } else {
                    Ok(default)
                }
            };
            duration += u64::from(next(SAMPLE_DURATION, defaults.duration)?);
            size += u64::from(next(SAMPLE_SIZE, defaults.size)?);
            let sample_flags = next(SAMPLE_FLAGS, defaults.flags)?;
            next(SAMPLE_CTO, 0)?;
            if i == 0 {
                first_sample = sample_flags;
            }
        }
    }
    let end = start.checked_add(size).ok_or(OVERFLOW)?;
    Ok(Samples {
        count,
        duration,
        first_flags: (count > 0).then(|| first_sample_flags.unwrap_or(first_sample)),
        data: start..end,
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

#[cfg(any(test, feature = "testing"))]
pub mod mutations;

/// The test recordings built here, which the node's tests of playback and
/// of the segment cache build on too (feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod tests {
    // Built for the node's tests, only the recordings are used.
    #![cfg_attr(not(test), allow(dead_code))]
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

    /// Each track's id, timescale and whether it is video.
    fn kinds(index: &FileIndex) -> Vec<(u32, u32, bool)> {
        let tracks = index.init.tracks.iter();
        tracks.map(|t| (t.id, t.timescale, t.is_video())).collect()
    }

    fn scan_bytes(bytes: &[u8]) -> io::Result<FileIndex> {
        scan(&mut Cursor::new(bytes), bytes.len() as u64)
    }

    #[test]
    fn reads_tracks_and_fragments() {
        let file = recording(3);
        let index = scan_bytes(&file).unwrap();
        assert_eq!(index.init.movie_timescale, 1000);
        assert_eq!(kinds(&index), [(1, 12800, true), (2, 16000, false)]);
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

    /// Where the first box of `kind` at or after `from` starts.
    fn find(file: &[u8], from: usize, kind: &[u8; 4]) -> usize {
        from + file[from..].windows(4).position(|w| w == kind).unwrap() - 4
    }

    fn put(file: &mut [u8], at: usize, value: &[u8]) {
        file[at..at + value.len()].copy_from_slice(value);
    }

    /// Puts `value` `within` bytes into the first box of `kind` from `from`.
    fn put_in(file: &mut [u8], from: usize, kind: &[u8; 4], within: usize, value: &[u8]) {
        let at = find(file, from, kind) + within;
        put(file, at, value);
    }

    #[test]
    fn a_file_without_a_readable_init_part_is_invalid_data() {
        let init = init_bytes(b"avc1");
        let fragment = fragment_bytes(1, 25, 0, 0);
        let mut moov_to_the_end = init.clone();
        put(
            &mut moov_to_the_end,
            find(&init, 0, b"moov"),
            &0u32.to_be_bytes(),
        );
        let mut no_mvex = init.clone();
        put(&mut no_mvex, find(&init, 0, b"mvex") + 4, b"free");
        for (what, bytes) in [
            ("empty", Vec::new()),
            ("text", b"not an mp4 file at all".to_vec()),
            ("an empty moov", boxed(b"moov", b"")),
            ("an ftyp alone", init[..find(&init, 0, b"moov")].to_vec()),
            ("a moov cut short", init[..init.len() - 1].to_vec()),
            ("a moov of size 0", moov_to_the_end),
            ("a moov without mvex", no_mvex),
            ("a fragment first", [fragment, init].concat()),
        ] {
            let error = scan_bytes(&bytes).expect_err(what);
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{what}: {error}");
        }
    }

    #[test]
    fn a_malformed_fragment_ends_the_scan_after_the_good_ones() {
        let file = recording(3);
        let whole = scan_bytes(&file).unwrap();
        type Mutation = fn(&mut Vec<u8>, usize);
        let mutations: [(&str, Mutation); 11] = [
            (
                "a trun counting more samples than the mdat holds",
                |f, at| put_in(f, at, b"trun", 12, &1000u32.to_be_bytes()),
            ),
            ("a moof of size 0", |f, at| put(f, at, &0u32.to_be_bytes())),
            ("a moof of size 2^32-1", |f, at| {
                put(f, at, &u32::MAX.to_be_bytes())
            }),
            ("a moof of 64-bit size 2^64-1", |f, at| {
                put(f, at, &1u32.to_be_bytes());
                put(f, at + 8, &u64::MAX.to_be_bytes());
            }),
            ("an mdat of size 0", |f, at| {
                put_in(f, at, b"mdat", 0, &0u32.to_be_bytes())
            }),
            ("an mdat of 64-bit size 2^64-1", |f, at| {
                put_in(f, at, b"mdat", 0, &1u32.to_be_bytes());
                put_in(f, at, b"mdat", 8, &u64::MAX.to_be_bytes());
            }),
            ("a moof without its mdat", |f, at| {
                put_in(f, at, b"mdat", 4, b"free")
            }),
            ("a fragment of an unknown track", |f, at| {
                put_in(f, at, b"tfhd", 12, &9u32.to_be_bytes())
            }),
            ("a decode time whose end overflows", |f, at| {
                put_in(f, at, b"tfdt", 12, &u64::MAX.to_be_bytes())
            }),
            ("a tfdt too short for its time", |f, at| {
                put_in(f, at, b"tfdt", 0, &16u32.to_be_bytes());
                put_in(f, at, b"tfdt", 16, &[0, 0, 0, 8, b'f', b'r', b'e', b'e']);
            }),
            ("a moov among the fragments", |f, at| {
                put(f, at + 4, b"moov")
            }),
        ];
        for (what, mutate) in mutations {
            for (n, good) in whole.fragments.iter().enumerate() {
                let mut bytes = file.clone();
                mutate(&mut bytes, good.offset as usize);
                let index = scan_bytes(&bytes).unwrap_or_else(|e| panic!("{what} in {n}: {e}"));
                assert_eq!(index.fragments, whole.fragments[..n], "{what} in {n}");
                assert_eq!(index.complete_len, good.offset, "{what} in {n}");
            }
        }
        // Boxes of other kinds between fragments are stepped over.
        let free = boxed(b"free", &[0; 8]);
        let second = whole.fragments[1].offset as usize;
        let bytes = [&file[..second], &free, &file[second..]].concat();
        let index = scan_bytes(&bytes).unwrap();
        assert_eq!(index.fragments.len(), 3);
        assert_eq!(index.complete_len, bytes.len() as u64);
    }

    #[test]
    fn a_count_is_worth_only_the_bytes_that_hold_its_samples() {
        let defaults = Defaults {
            duration: 512,
            size: 10,
            flags: NON_SYNC_SAMPLE,
        };
        let offset = DATA_OFFSET;
        let durations = DATA_OFFSET | SAMPLE_DURATION;
        let both = DATA_OFFSET | SAMPLE_DURATION | SAMPLE_SIZE;
        let max = u64::from(u32::MAX);
        // Flags, count, what follows the count: the duration and the end of
        // the data read, or None for an error.
        type Row = (u32, u32, &'static [u32], Option<(u64, u64)>);
        let table: [Row; 9] = [
            (durations, 3, &[100, 1, 2, 3], Some((6, 130))),
            (durations, 4, &[100, 1, 2, 3], None),
            (both, 2, &[100, 1, 2, 3], None),
            (both, u32::MAX, &[100], None),
            (DATA_OFFSET | SAMPLE_CTO, 1 << 30, &[100, 0, 0], None),
            // No field per sample: its samples are the defaults, however many.
            (offset, u32::MAX, &[100], Some((max * 512, 100 + max * 10))),
            (durations, 1, &[100, u32::MAX], Some((max, 110))),
            (offset, 0, &[100], Some((0, 100))),
            (offset, 1, &[0x8000_0000], None),
        ];
        for (flags, count, rest, expected) in table {
            let trun = full(b"trun", 0, flags, &words(&[&[count], rest].concat()));
            let read = parse_trun(Bytes::new(&trun, 8), &defaults, None);
            let read = read.ok().map(|s| (s.duration, s.data.end));
            assert_eq!(read, expected, "flags {flags:#x}, count {count}, {rest:?}");
        }
        // The first sample's flags, when there is one.
        let first = |flags, count, rest: &[u32]| {
            let trun = full(b"trun", 0, flags, &words(&[&[count], rest].concat()));
            parse_trun(Bytes::new(&trun, 8), &defaults, Some(0))
                .unwrap()
                .first_flags
        };
        assert_eq!(first(FIRST_SAMPLE_FLAGS, 2, &[7]), Some(7));
        assert_eq!(first(SAMPLE_FLAGS, 2, &[5, 6]), Some(5));
        assert_eq!(first(0, 2, &[]), Some(NON_SYNC_SAMPLE));
        assert_eq!(first(FIRST_SAMPLE_FLAGS, 0, &[7]), None);
    }

    #[test]
    fn a_real_segment_reads_with_64_bit_sizes_as_with_32_bit_ones() {
        let whole = scan_bytes(mutations::SEGMENT).unwrap();
        let mut wide = mutations::SEGMENT.to_vec();
        // The init part's boxes: the fragments' data is addressed from their moof.
        for kind in [b"mvex", b"mdhd", b"trak", b"moov", b"ftyp"] {
            let at = find(&wide, 0, kind);
            mutations::widen(&mut wide, at);
        }
        let index = scan_bytes(&wide).unwrap();
        let shift = (wide.len() - mutations::SEGMENT.len()) as u64;
        assert_eq!(index.fragments.len(), whole.fragments.len());
        for (read, expected) in index.fragments.iter().zip(&whole.fragments) {
            assert_eq!(
                (read.offset, &read.runs),
                (expected.offset + shift, &expected.runs)
            );
        }
        assert_eq!(index.complete_len, whole.complete_len + shift);
        assert!(index.init.compatible(&whole.init));
        assert_eq!(index.video_duration(), whole.video_duration());
        // Joined, the init grows a mehd into its 64-bit mvex and moov.
        let joined = index
            .init
            .for_joined_file(3000, &[(1, 38_400), (2, 48_000)]);
        let joined_moov = &joined[index.init.ftyp.len()..];
        let reread = parse_moov(joined_moov).unwrap();
        assert!(reread.compatible(&whole.init));
        assert_eq!(joined_moov.len(), index.init.moov.len() + 20);
        assert_eq!(reread.moov_box.end, joined_moov.len());
        assert_eq!(reread.mvex_box.end, index.init.mvex_box.end + 20);
        assert!(reread.mehd_duration.is_some());
    }

    #[test]
    fn a_real_segment_reads_whole() {
        let index = scan_bytes(mutations::SEGMENT).unwrap();
        assert_eq!(kinds(&index), [(1, 12800, true), (2, 16000, false)]);
        let runs: Vec<_> = index
            .fragments
            .iter()
            .map(|f| {
                let video = f.run(1).unwrap();
                (
                    video.decode_time,
                    video.samples,
                    video.starts_with_key_frame,
                )
            })
            .collect();
        // ffmpeg ends a segment with what is left after its last key frame.
        assert_eq!(
            runs,
            [
                (0, 25, true),
                (12800, 25, true),
                (25600, 24, true),
                (37888, 1, false)
            ]
        );
        // 75 frames of 512: 3 s. The mfra after the last fragment is left out.
        assert_eq!(index.video_duration(), 75 * 512);
        let mfra = find(mutations::SEGMENT, 0, b"mfra");
        assert_eq!(index.complete_len, mfra as u64);
    }

    /// Reads a file through `Cursor`, failing with EIO from byte `fail_at`.
    struct Failing {
        bytes: Cursor<Vec<u8>>,
        fail_at: u64,
    }

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.bytes.position() + buf.len() as u64 > self.fail_at {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            self.bytes.read(buf)
        }
    }

    impl Seek for Failing {
        fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
            self.bytes.seek(to)
        }
    }

    #[test]
    fn errors_of_the_reader_are_its_own_and_a_file_cut_meanwhile_reads_as_cut() {
        let file = recording(3);
        let whole = scan_bytes(&file).unwrap();
        let len = file.len() as u64;
        for fail_at in [
            0,
            20,
            whole.fragments[1].offset + 3,
            whole.fragments[2].offset + 3,
        ] {
            let mut failing = Failing {
                bytes: Cursor::new(file.clone()),
                fail_at,
            };
            let error = scan(&mut failing, len).expect_err("EIO");
            assert_eq!(
                error.raw_os_error(),
                Some(libc::EIO),
                "failing at {fail_at}"
            );
        }
        // Cut after its length was taken: the whole fragments before the cut.
        let third = whole.fragments[2].offset;
        let cut = &file[..third as usize + 30];
        let index = scan(&mut Cursor::new(cut), len).unwrap();
        assert_eq!(index.fragments, whole.fragments[..2]);
        assert_eq!(index.complete_len, third);
    }

    #[test]
    fn compatibility_follows_the_sample_descriptions_and_defaults() {
        let a = scan_bytes(&init_bytes(b"avc1-720p")).unwrap().init;
        let b = scan_bytes(&init_bytes(b"avc1-720p")).unwrap().init;
        let c = scan_bytes(&init_bytes(b"avc1-1080p")).unwrap().init;
        assert!(a.compatible(&b));
        assert!(!a.compatible(&c));
        // Fragments read with other defaults would be misread under these.
        let mut other_defaults = init_bytes(b"avc1-720p");
        put_in(&mut other_defaults, 0, b"trex", 20, &256u32.to_be_bytes());
        let d = scan_bytes(&other_defaults).unwrap().init;
        assert!(!a.compatible(&d));
    }

    #[test]
    fn the_joined_init_carries_durations() {
        let init = scan_bytes(&recording(1)).unwrap().init;
        check_joined_durations(&init);
        // An mvex of size 0 (to the end of the moov) is given its size.
        let mut file = recording(1);
        put_in(&mut file, 0, b"mvex", 0, &0u32.to_be_bytes());
        check_joined_durations(&scan_bytes(&file).unwrap().init);
    }

    fn check_joined_durations(init: &Init) {
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
        assert_eq!(parsed.moov_box.end, moov.len());
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
        let reread = parse_moof(&moof, 0, (8, mdat_len), &index.init).unwrap();
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

    /// What scan returns for a file is InvalidData, or fragments in order
    /// that end at its `complete_len`; and what it read is safe to use.
    fn check_scan(bytes: &[u8]) {
        let index = match scan_bytes(bytes) {
            Ok(index) => index,
            Err(e) => return assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}"),
        };
        if let Some(last) = index.fragments.last() {
            assert_eq!(last.offset + last.len, index.complete_len);
        }
        let mut end = index.complete_len;
        for (n, fragment) in index.fragments.iter().enumerate().rev() {
            assert!(fragment.offset + fragment.len <= end, "fragment {n}");
            assert!(u64::from(fragment.moof_len) < fragment.len, "fragment {n}");
            end = fragment.offset;
        }
        assert!(index.complete_len <= bytes.len() as u64);
        index.video_duration();
        let durations: Vec<(u32, u64)> =
            index.init.tracks.iter().map(|t| (t.id, u64::MAX)).collect();
        let joined = index.init.for_joined_file(u64::MAX, &durations);
        let moov = &joined[index.init.ftyp.len()..];
        let reread = parse_moov(moov).expect("the joined init reads back");
        assert!(reread.compatible(&index.init));
    }

    #[test]
    fn mutated_segments_never_panic_loop_or_balloon() {
        assert_eq!(scan_bytes(mutations::SEGMENT).unwrap().fragments.len(), 4);
        let started = std::time::Instant::now();
        let cases = mutations::cases(mutations::SEGMENT);
        // What the reader keeps is bytes it read (the moov twice, a moof)
        // and a record of 32 bytes per box of at least 8, in vectors that
        // may be half empty: within 16 times the file. Measured: 1 time.
        let summary = mutations::run(cases, |len| 16 * len + (64 << 10), check_scan);
        eprintln!("fmp4 scan: {summary}, {:?} in all", started.elapsed());
    }
}

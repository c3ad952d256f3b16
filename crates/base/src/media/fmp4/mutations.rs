//! Seeded mutations of a real recording (flipped bytes, cuts at every box
//! boundary, box sizes and the numbers the reader trusts set to edge
//! values) and a harness that feeds each to a check on a thread of its own:
//! no case may panic, take more than [`CPU_LIMIT`] or allocate more than
//! its bound. The fMP4 reader's tests and playback's share them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use super::{
    BASE_DATA_OFFSET, DATA_OFFSET, DEFAULT_DURATION, DEFAULT_FLAGS, DEFAULT_SIZE,
    FIRST_SAMPLE_FLAGS, SAMPLE_CTO, SAMPLE_DESCRIPTION_INDEX, SAMPLE_DURATION, SAMPLE_FLAGS,
    SAMPLE_SIZE,
};
use crate::harness::{thread_cpu_time, write_stderr};
use crate::rng::Rng;

/// A segment written by the recorder's ffmpeg command (testdata/README.md).
pub const SEGMENT: &[u8] = include_bytes!("../testdata/segment.mp4");

/// The same cases on every machine and every run.
const SEED: u64 = 0x6d70_3466_2d6d_7574;

/// Random byte flips and random words, besides the systematic cases.
const FLIPS: usize = 1500;
const WORDS: usize = 500;
const RANDOM_CUTS: usize = 100;

/// A case takes a few milliseconds of CPU here, ten times that under
/// qemu: this much is a loop, or work out of proportion to the file.
/// Measured in the thread's CPU time, so that a loaded machine (other
/// tests, other builds) does not fail it.
const CPU_LIMIT: Duration = Duration::from_secs(2);
/// A case that has not returned after this long never will.
const WATCHDOG: Duration = Duration::from_secs(120);

/// One allocation this large is a balloon whatever the bound: refused
/// (which aborts) after naming the case, rather than left to the machine.
const HUGE: usize = 1 << 30;

/// A box of a well-formed file: its kind, where its header starts, and the
/// lengths of its header and of the whole box.
#[derive(Clone, Copy)]
struct Found {
    kind: [u8; 4],
    at: usize,
    header: usize,
    len: usize,
}

impl Found {
    fn body(&self) -> usize {
        self.at + self.header
    }

    fn end(&self) -> usize {
        self.at + self.len
    }

    fn name(&self) -> String {
        format!("{}@{}", String::from_utf8_lossy(&self.kind), self.at)
    }
}

const CONTAINERS: [&[u8; 4]; 11] = [
    b"moov", b"trak", b"mdia", b"minf", b"stbl", b"mvex", b"moof", b"traf", b"dinf", b"edts",
    b"udta",
];

/// Every box of a well-formed file, parents before their children.
fn walk(bytes: &[u8], start: usize, end: usize, found: &mut Vec<Found>) {
    let mut at = start;
    while at + 8 <= end {
        let word = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
        let kind: [u8; 4] = bytes[at + 4..at + 8].try_into().unwrap();
        let (header, len) = match word(at) {
            0 => (8, end - at),
            1 => {
                let len = u64::from(word(at + 8)) << 32 | u64::from(word(at + 12));
                (16, usize::try_from(len).expect("a box of a file in memory"))
            }
            n => (8, usize::try_from(n).expect("a box of a file in memory")),
        };
        let b = Found {
            kind,
            at,
            header,
            len,
        };
        found.push(b);
        if CONTAINERS.contains(&&kind) {
            walk(bytes, b.body(), b.end(), found);
        }
        at = b.end();
    }
}

#[derive(Clone)]
enum Edit {
    /// Bytes at a place replaced.
    Put(usize, Vec<u8>),
    /// A byte at a place xor-ed with a mask.
    Xor(usize, u8),
    /// The file cut to a length.
    Cut(usize),
    /// The box at a place given a 64-bit size field (see [`widen`]).
    Widen(usize),
}

/// Gives the box at `at` of a well-formed file a 64-bit size field holding
/// its length, 8 bytes more: they go after its header's first 8, and the
/// boxes around it grow by 8.
pub fn widen(bytes: &mut Vec<u8>, at: usize) {
    let mut boxes = Vec::new();
    walk(bytes, 0, bytes.len(), &mut boxes);
    let b = boxes
        .iter()
        .find(|b| b.at == at)
        .expect("a box starts there");
    let len = (b.len as u64 + 8).to_be_bytes();
    for parent in boxes.iter().filter(|p| p.at < at && at < p.end()) {
        let size = u32::from_be_bytes(bytes[parent.at..parent.at + 4].try_into().unwrap());
        bytes[parent.at..parent.at + 4].copy_from_slice(&(size + 8).to_be_bytes());
    }
    bytes[at..at + 4].copy_from_slice(&1u32.to_be_bytes());
    bytes.splice(at + 8..at + 8, len);
}

/// A mutation of the segment: what it is, and how it is made.
pub struct Case {
    pub what: String,
    edits: Vec<Edit>,
}

impl Case {
    pub fn apply(&self, original: &[u8]) -> Vec<u8> {
        let mut bytes = original.to_vec();
        for edit in &self.edits {
            match edit {
                Edit::Put(at, value) => bytes[*at..at + value.len()].copy_from_slice(value),
                Edit::Xor(at, mask) => bytes[*at] ^= mask,
                Edit::Cut(len) => bytes.truncate(*len),
                Edit::Widen(at) => widen(&mut bytes, *at),
            }
        }
        bytes
    }
}

/// Collects cases; the numbers put are big-endian, 4 or 8 bytes wide.
struct Cases {
    rng: Rng,
    list: Vec<Case>,
}

impl Cases {
    fn add(&mut self, what: String, edits: Vec<Edit>) {
        self.list.push(Case { what, edits });
    }

    fn put32(&mut self, what: &str, at: usize, values: &[u32]) {
        let random = self.rng.next_u64() as u32;
        let values: BTreeSet<u32> = values.iter().copied().chain([random]).collect();
        for value in values {
            let edit = Edit::Put(at, value.to_be_bytes().to_vec());
            self.add(format!("{what} = {value:#x}"), vec![edit]);
        }
    }

    fn put64(&mut self, what: &str, at: usize, values: &[u64], before: &[Edit]) {
        let random = self.rng.next_u64();
        let values: BTreeSet<u64> = values.iter().copied().chain([random]).collect();
        for value in values {
            let mut edits = before.to_vec();
            edits.push(Edit::Put(at, value.to_be_bytes().to_vec()));
            self.add(format!("{what} = {value:#x}"), edits);
        }
    }

    /// One case per flag, each turned over in the full box whose body
    /// starts at `body`: its first word is the version (its top byte) and
    /// the flags.
    fn toggle(&mut self, what: &str, body: usize, flags: &[u32]) {
        for flag in flags {
            let edits = (flag.to_be_bytes().iter().enumerate())
                .filter(|(_, mask)| **mask != 0)
                .map(|(i, mask)| Edit::Xor(body + i, *mask))
                .collect();
            self.add(format!("{what} ^ {flag:#x}"), edits);
        }
    }
}

const EDGES32: [u32; 5] = [0, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX];
const EDGES64: [u64; 6] = [0, 1, u32::MAX as u64, 1 << 32, 1 << 63, u64::MAX];

/// Some thousands of cases, the same for the same segment.
pub fn cases(original: &[u8]) -> Vec<Case> {
    let mut boxes = Vec::new();
    walk(original, 0, original.len(), &mut boxes);
    let mut cases = Cases {
        rng: Rng(SEED),
        list: Vec::new(),
    };
    sizes(&mut cases, &boxes);
    cuts(&mut cases, &boxes, original.len());
    for b in &boxes {
        fields(&mut cases, original, b);
    }
    random(&mut cases, &boxes, original.len());
    cases.list
}

/// Every box's size, 32-bit, and 64-bit after widening its header.
fn sizes(cases: &mut Cases, boxes: &[Found]) {
    for b in boxes {
        let name = format!("{} size", b.name());
        let len = b.len as u32;
        cases.put32(
            &name,
            b.at,
            &[[0, 1, 7, 8, len - 1, len + 1].as_slice(), &EDGES32].concat(),
        );
        let widen = [Edit::Widen(b.at)];
        let wide = b.len as u64 + 8;
        let name = format!("{} 64-bit size", b.name());
        let values = [[15, 16, wide - 1, wide, wide + 1].as_slice(), &EDGES64].concat();
        cases.put64(&name, b.at + 8, &values, &widen);
    }
}

/// Cuts at, just after and just before every box boundary, and anywhere.
fn cuts(cases: &mut Cases, boxes: &[Found], len: usize) {
    let mut at: BTreeSet<usize> = boxes
        .iter()
        .flat_map(|b| [b.at, b.at + 1, b.at + 8, b.end() - 1, b.end()])
        .collect();
    at.extend((0..RANDOM_CUTS).map(|_| cases.rng.below(len)));
    for cut in at.into_iter().filter(|&c| c < len) {
        cases.add(format!("cut to {cut}"), vec![Edit::Cut(cut)]);
    }
}

/// The numbers inside the boxes the reader reads.
fn fields(cases: &mut Cases, bytes: &[u8], b: &Found) {
    let body = b.body();
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    let name = b.name();
    let version = bytes[body];
    let flags = word(body) & 0x00ff_ffff;
    // Where mvhd's, mdhd's and tkhd's numbers start after their times.
    let after_times = body + if version == 1 { 20 } else { 12 };
    match &b.kind {
        b"trun" => {
            let count = word(body + 4);
            let counts = [[count - 1, count + 1, 1 << 16].as_slice(), &EDGES32].concat();
            cases.put32(&format!("{name} sample count"), body + 4, &counts);
            // The last four give each sample a field of its own.
            let known = [
                DATA_OFFSET,
                FIRST_SAMPLE_FLAGS,
                SAMPLE_DURATION,
                SAMPLE_SIZE,
                SAMPLE_FLAGS,
                SAMPLE_CTO,
            ];
            cases.toggle(&format!("{name} flags"), body, &known);
            let all = known.iter().fold(0, |all, flag| all | flag);
            cases.put32(&format!("{name} version and flags"), body, &[all]);
            cases.put32(&format!("{name} data offset"), body + 8, &EDGES32);
            let stride = known[2..].iter().filter(|&&f| flags & f != 0).count() * 4;
            let first = body + 12 + 4 * usize::from(flags & FIRST_SAMPLE_FLAGS != 0);
            // A sample's duration comes first, then its size.
            let size_within = 4 * usize::from(flags & SAMPLE_DURATION != 0);
            let fields = [
                (SAMPLE_DURATION, 0, "duration"),
                (SAMPLE_SIZE, size_within, "size"),
            ];
            for (flag, within, what) in fields {
                if flags & flag == 0 {
                    continue;
                }
                for value in [0u32, u32::MAX] {
                    let edits = (0..count as usize)
                        .map(|i| first + i * stride + within)
                        .map(|at| Edit::Put(at, value.to_be_bytes().to_vec()))
                        .collect();
                    cases.add(format!("{name} every sample's {what} = {value:#x}"), edits);
                }
            }
        }
        b"tfdt" => {
            cases.toggle(&format!("{name} version"), body, &[1 << 24]);
            let what = format!("{name} decode time");
            if version == 1 {
                cases.put64(&what, body + 4, &EDGES64, &[]);
            } else {
                cases.put32(&what, body + 4, &EDGES32);
            }
        }
        b"tfhd" => {
            // And its duration-is-empty and default-base-is-moof.
            let flags = [
                BASE_DATA_OFFSET,
                SAMPLE_DESCRIPTION_INDEX,
                DEFAULT_DURATION,
                DEFAULT_SIZE,
                DEFAULT_FLAGS,
                0x1_0000,
                0x2_0000,
            ];
            cases.toggle(&format!("{name} flags"), body, &flags);
            cases.put32(&format!("{name} track"), body + 4, &[0, 2, 3]);
            for at in (body + 8..b.end()).step_by(4) {
                cases.put32(&format!("{name} default@{at}"), at, &[0, u32::MAX]);
            }
        }
        b"mvhd" | b"mdhd" => {
            cases.toggle(&format!("{name} version"), body, &[1 << 24]);
            cases.put32(&format!("{name} timescale"), after_times, &[0, 1, u32::MAX]);
            cases.put32(&format!("{name} duration"), after_times + 4, &[u32::MAX]);
        }
        b"tkhd" => {
            cases.toggle(&format!("{name} version"), body, &[1 << 24]);
            cases.put32(&format!("{name} track"), after_times, &[0, 1, 2, 3]);
        }
        b"trex" => {
            for at in (body + 4..b.end()).step_by(4) {
                cases.put32(&format!("{name} default@{at}"), at, &[0, 1, 2, u32::MAX]);
            }
        }
        b"hdlr" => {
            let handler = u32::from_be_bytes(*b"vide");
            cases.put32(
                &format!("{name} handler"),
                body + 8,
                &[handler, handler ^ 0x0303_0b00],
            );
        }
        b"mfhd" => cases.put32(&format!("{name} sequence"), body + 4, &[0, u32::MAX]),
        b"stsd" => cases.put32(&format!("{name} entries"), body + 4, &[0, u32::MAX]),
        _ => {}
    }
}

/// Random flips and words, three in four among the boxes' own bytes (not
/// the media data, which the reader only steps over).
fn random(cases: &mut Cases, boxes: &[Found], len: usize) {
    let media: Vec<(usize, usize)> = boxes
        .iter()
        .filter(|b| &b.kind == b"mdat")
        .map(|b| (b.body(), b.end()))
        .collect();
    let structural: Vec<usize> = (0..len)
        .filter(|at| !media.iter().any(|(s, e)| (s..e).contains(&at)))
        .collect();
    let place = |rng: &mut Rng, width: usize| loop {
        let at = if rng.below(4) == 0 {
            rng.below(len)
        } else {
            structural[rng.below(structural.len())]
        };
        if at + width <= len {
            break at;
        }
    };
    for n in 0..FLIPS {
        let flips: Vec<(usize, u8)> = (0..=cases.rng.below(4))
            .map(|_| (place(&mut cases.rng, 1), cases.rng.next_u64() as u8 | 1))
            .collect();
        let what: Vec<String> = flips.iter().map(|(at, m)| format!("{at}^{m:#x}")).collect();
        let edits = flips.into_iter().map(|(at, m)| Edit::Xor(at, m)).collect();
        cases.add(format!("flips #{n}: {}", what.join(" ")), edits);
    }
    for n in 0..WORDS {
        let at = place(&mut cases.rng, 4);
        let value = match cases.rng.below(6) {
            5 => cases.rng.next_u64() as u32,
            edge => EDGES32[edge],
        };
        let edit = Edit::Put(at, value.to_be_bytes().to_vec());
        cases.add(format!("word #{n}: {at} = {value:#x}"), vec![edit]);
    }
}

/// What [`run`] saw: the cases, the highest peak of allocations (bytes)
/// and the most CPU time a case took.
pub struct Summary {
    cases: usize,
    peak: usize,
    slowest: Duration,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (cases, peak, slowest) = (self.cases, self.peak, self.slowest);
        write!(
            f,
            "{cases} cases, peak {peak} bytes, slowest {slowest:?} of CPU"
        )
    }
}

/// Runs `check` on every case's bytes on a thread of its own, then fails
/// naming each case that panicked, took more than [`CPU_LIMIT`], or whose
/// allocations peaked above `bound(its length)`; a case still running
/// after [`WATCHDOG`] fails it at once.
pub fn run(
    cases: Vec<Case>,
    bound: fn(usize) -> usize,
    check: impl Fn(&[u8]) + Send + 'static,
) -> Summary {
    enum Report {
        Started(String),
        Failed(String),
        Done(Summary),
    }
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut summary = Summary {
            cases: cases.len(),
            peak: 0,
            slowest: Duration::ZERO,
        };
        for case in cases {
            let bytes = case.apply(SEGMENT);
            let _ = tx.send(Report::Started(case.what.clone()));
            let limit = bound(bytes.len());
            let started = thread_cpu_time();
            let (outcome, peak) = measured(&case.what, || {
                catch_unwind(AssertUnwindSafe(|| check(&bytes)))
            });
            let spent = thread_cpu_time().saturating_sub(started);
            summary.slowest = summary.slowest.max(spent);
            summary.peak = summary.peak.max(peak);
            let failure = match outcome {
                Err(panic) => Some(format!("panicked: {}", message(&*panic))),
                Ok(()) if spent > CPU_LIMIT => Some(format!("took {spent:?} of CPU")),
                Ok(()) if peak > limit => Some(format!("allocated {peak} bytes (bound {limit})")),
                Ok(()) => None,
            };
            if let Some(failure) = failure {
                let _ = tx.send(Report::Failed(failure));
            }
        }
        let _ = tx.send(Report::Done(summary));
    });
    let mut current = String::new();
    let mut failures = Vec::new();
    let summary = loop {
        match rx.recv_timeout(WATCHDOG) {
            Ok(Report::Started(what)) => current = what,
            Ok(Report::Failed(failure)) => failures.push(format!("{current}: {failure}")),
            Ok(Report::Done(summary)) => break summary,
            Err(RecvTimeoutError::Timeout) => panic!("{current}: still running after {WATCHDOG:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the cases' thread died"),
        }
    };
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        summary.cases,
        failures.join("\n")
    );
    summary
}

fn message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(not a string)")
}

/// Counts each thread's live heap bytes and their peak, and refuses a
/// [`HUGE`] allocation made for a case.
struct Counting;

#[global_allocator]
static COUNTING: Counting = Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// The label of the case this thread runs, to name it before aborting.
    static CASE: Cell<Option<(*const u8, usize)>> = const { Cell::new(None) };
}

/// Runs `f` for the case `what`: its result, and how far its allocations
/// rose above what was live before it.
fn measured<R>(what: &str, f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.get();
    PEAK.set(start);
    CASE.set(Some((what.as_ptr(), what.len())));
    let result = f();
    CASE.set(None);
    (result, (PEAK.get() - start) as usize)
}

fn counted(by: isize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + by);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

/// Whether to refuse an allocation of `size` bytes; names the case if so,
/// writing straight to stderr (nothing may allocate here, and the test's
/// captured output is lost when the refusal aborts).
fn refused(size: usize) -> bool {
    if size <= HUGE {
        return false;
    }
    let Ok(Some((label, len))) = CASE.try_with(Cell::get) else {
        return false;
    };
    // SAFETY: the label outlives `measured`, which clears CASE before it returns.
    let label = unsafe { std::slice::from_raw_parts(label, len) };
    write_stderr(&[
        b"\nfmp4 mutations: allocation refused for the case ",
        label,
        b"\n",
    ]);
    true
}

// SAFETY: every call is passed on to the system allocator unchanged; only
// the counts are added, and a refusal returns null as a failed one does.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            counted(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            counted(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        counted(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        if refused(size) {
            return std::ptr::null_mut();
        }
        let q = unsafe { System.realloc(p, layout, size) };
        if !q.is_null() {
            counted(size as isize - layout.size() as isize);
        }
        q
    }
}

//! How the classifier uses memory.
//!
//! Loading and optimising the model makes large short-lived copies of its
//! weights. glibc, by default, serves them from its main heap once a large
//! block has been freed (its mmap threshold adapts upwards), where they
//! stay as holes the heap cannot give back: so while the model loads, each
//! large block is mapped by itself (musl, the aarch64 board's static
//! binary, maps each large block by itself already).
//!
//! A crop's tensors, the network's activations, are the same blocks in the
//! same order every crop: `Arena` records them in one run at load, places
//! them once in one block of memory, each where no block alive at the same
//! time lies (TFLite's arena planner's way, largest first), and hands each
//! its place in every run after. From the heap, as glibc places them, the
//! same tensors took half as much memory again in holes between them; each
//! mapped by itself, they cost each crop much processor time in fresh pages
//! (docs/design/classification.md).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A block this large or larger, allocated in a run, is one of its tensors.
const LARGE: usize = 64 << 10;
/// The most tensors a recorded run may allocate; past it nothing is planned.
const MOST_BLOCKS: usize = 4096;
/// Each place starts on a page.
const PAGE: usize = 4096;

/// The allocator: the system's, with a run's tensors in a planned arena.
pub struct Arena {
    state: Mutex<State>,
    /// The arena's first and past-the-end addresses; 0 and 0 without one.
    start: AtomicUsize,
    end: AtomicUsize,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Recording,
    Replaying,
}

/// One tensor of the recorded run and, once planned, its place.
#[derive(Clone, Copy)]
struct Block {
    size: usize,
    align: usize,
    /// When it was allocated and freed, in allocations and frees of the
    /// run; `usize::MAX` for one still alive when the run ended.
    born: usize,
    died: usize,
    /// Recording: its address; planned: its offset in the arena.
    at: usize,
    /// Replaying: handed out and not freed yet.
    live: bool,
}

impl Block {
    fn planned(&self) -> bool {
        self.died != usize::MAX
    }
}

struct State {
    mode: Mode,
    blocks: Vec<Block>,
    /// Each planned block's blocks sharing some of its place, at other
    /// times: `overlaps[bounds[i]..bounds[i + 1]]`.
    overlaps: Vec<u32>,
    bounds: Vec<usize>,
    /// Recording: allocations and frees so far; replaying: tensors so far.
    clock: usize,
}

impl Arena {
    pub const fn new() -> Arena {
        Arena {
            state: Mutex::new(State {
                mode: Mode::Off,
                blocks: Vec::new(),
                overlaps: Vec::new(),
                bounds: Vec::new(),
                clock: 0,
            }),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `run` once, recording its tensors, and plans the arena for the
    /// runs after; without a plan (too many tensors) they use the heap.
    pub fn plan<T>(&self, run: impl FnOnce() -> T) -> T {
        let mut blocks = Vec::with_capacity(MOST_BLOCKS);
        {
            let mut state = self.state();
            std::mem::swap(&mut state.blocks, &mut blocks);
            state.clock = 0;
            state.mode = Mode::Recording;
        }
        let out = run();
        let mut blocks = {
            let mut state = self.state();
            state.mode = Mode::Off;
            std::mem::take(&mut state.blocks)
        };
        if blocks.len() == MOST_BLOCKS {
            return out;
        }
        let (size, overlaps, bounds) = place(&mut blocks);
        if size == 0 {
            return out;
        }
        let Ok(layout) = Layout::from_size_align(size, PAGE) else {
            return out;
        };
        // SAFETY: a layout of non-zero size.
        let arena = unsafe { System.alloc(layout) };
        if arena.is_null() {
            return out;
        }
        let mut state = self.state();
        state.blocks = blocks;
        state.overlaps = overlaps;
        state.bounds = bounds;
        self.start.store(arena as usize, Ordering::Release);
        self.end.store(arena as usize + size, Ordering::Release);
        out
    }

    /// Runs `run` with its tensors in their planned places.
    pub fn replay<T>(&self, run: impl FnOnce() -> T) -> T {
        {
            let mut state = self.state();
            state.clock = 0;
            state.mode = Mode::Replaying;
        }
        let out = run();
        self.state().mode = Mode::Off;
        out
    }

    fn in_arena(&self, ptr: *mut u8) -> bool {
        let at = ptr as usize;
        at >= self.start.load(Ordering::Acquire) && at < self.end.load(Ordering::Acquire)
    }
}

impl Default for Arena {
    fn default() -> Arena {
        Arena::new()
    }
}

/// Places each planned block, largest first, at the lowest offset where no
/// block alive at the same time lies; gives the arena's size and each
/// block's blocks sharing some of its place.
fn place(blocks: &mut [Block]) -> (usize, Vec<u32>, Vec<usize>) {
    let mut order: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].planned()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(blocks[i].size));
    let mut placed: Vec<usize> = Vec::with_capacity(order.len());
    let mut size = 0;
    for &i in &order {
        let b = blocks[i];
        let span = b.size.next_multiple_of(PAGE);
        let mut taken: Vec<(usize, usize)> = placed
            .iter()
            .map(|&j| blocks[j])
            .filter(|o| o.born < b.died && b.born < o.died)
            .map(|o| (o.at, o.at + o.size.next_multiple_of(PAGE)))
            .collect();
        taken.sort_unstable();
        let mut at = 0;
        for (from, to) in taken {
            if from >= at + span {
                break;
            }
            at = at.max(to);
        }
        blocks[i].at = at;
        size = size.max(at + span);
        placed.push(i);
    }
    let mut overlaps = Vec::new();
    let mut bounds = vec![0];
    for i in 0..blocks.len() {
        let b = blocks[i];
        if b.planned() {
            let end = b.at + b.size;
            overlaps.extend(
                (0..blocks.len())
                    .filter(|&j| {
                        let o = blocks[j];
                        j != i && o.planned() && o.at < end && b.at < o.at + o.size
                    })
                    .map(|j| j as u32),
            );
        }
        bounds.push(overlaps.len());
    }
    (size, overlaps, bounds)
}

// SAFETY: every block comes from System or from the arena, a block of
// System's that lives as long as the process; an arena place is handed
// out only while no block sharing it is live, and goes back on dealloc.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE {
            let mut state = self.state();
            match state.mode {
                Mode::Off => {}
                Mode::Recording => {
                    // SAFETY: the caller's layout.
                    let ptr = unsafe { System.alloc(layout) };
                    let born = state.clock;
                    state.clock += 1;
                    if !ptr.is_null() && state.blocks.len() < state.blocks.capacity() {
                        state.blocks.push(Block {
                            size: layout.size(),
                            align: layout.align(),
                            born,
                            died: usize::MAX,
                            at: ptr as usize,
                            live: false,
                        });
                    }
                    return ptr;
                }
                Mode::Replaying => {
                    let i = state.clock;
                    state.clock += 1;
                    if let Some(b) = state.blocks.get(i).copied()
                        && b.planned()
                        && b.size == layout.size()
                        && b.align >= layout.align()
                        && layout.align() <= PAGE
                        && !b.live
                        && state.overlaps[state.bounds[i]..state.bounds[i + 1]]
                            .iter()
                            .all(|&j| !state.blocks[j as usize].live)
                    {
                        state.blocks[i].live = true;
                        return (self.start.load(Ordering::Acquire) + b.at) as *mut u8;
                    }
                }
            }
        }
        // SAFETY: the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE {
            if self.in_arena(ptr) {
                let at = ptr as usize - self.start.load(Ordering::Acquire);
                let mut state = self.state();
                if let Some(b) = state.blocks.iter_mut().find(|b| b.live && b.at == at) {
                    b.live = false;
                }
                return;
            }
            let mut state = self.state();
            if state.mode == Mode::Recording {
                let died = state.clock;
                state.clock += 1;
                let at = ptr as usize;
                if let Some(b) = state
                    .blocks
                    .iter_mut()
                    .rev()
                    .find(|b| b.at == at && !b.planned())
                {
                    b.died = died;
                }
            }
        }
        // SAFETY: the caller's block, System's (not in the arena).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.size() < LARGE && new_size < LARGE {
            // SAFETY: the caller's block, System's: small blocks never are
            // the arena's.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // A large block moves through alloc and dealloc, as a run recorded
        // and replayed sees it.
        // SAFETY: the caller's layout, with new_size.
        let new =
            unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !new.is_null() {
            // SAFETY: both blocks hold at least the smaller size.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

/// While the model loads: a block of 128 KiB or more is mapped by itself
/// and unmapped when freed, so the load's copies go back to the system.
pub fn loading() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::set(glibc::M_MMAP_THRESHOLD, 128 << 10);
}

/// Once the model is loaded: the pages of the heap's free holes, what the
/// load left between the weights, go back to the system.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::trim();
}

/// Once loaded: what a crop allocates outside the arena comes from the
/// heap, and what a crop frees stays there for the next (no trim), so a
/// crop does not fault in fresh pages.
pub fn loaded() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's largest mmap threshold on 32-bit boards (armv7).
        glibc::set(glibc::M_MMAP_THRESHOLD, 16 << 20);
        glibc::set(glibc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::ffi::c_int;

    pub const M_TRIM_THRESHOLD: c_int = -1;
    pub const M_MMAP_THRESHOLD: c_int = -3;

    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
        fn malloc_trim(pad: usize) -> c_int;
    }

    /// The heap's free pages back to the system, its top and its holes.
    pub fn trim() {
        // SAFETY: malloc_trim only returns free memory; nothing is handed over.
        unsafe { malloc_trim(0) };
    }

    /// One of glibc's malloc parameters; a value it refuses leaves its own.
    pub fn set(param: c_int, value: c_int) {
        // SAFETY: mallopt takes any parameter and value and says 0 for one
        // it refuses; no memory is handed over.
        unsafe { mallopt(param, value) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(pages: usize, born: usize, died: usize) -> Block {
        let size = pages * PAGE;
        Block {
            size,
            align: 8,
            born,
            died,
            at: 0,
            live: false,
        }
    }

    #[test]
    fn blocks_alive_together_never_share_a_place_and_the_arena_is_their_peak() {
        // Each layer's output alive with its input, as a network's are;
        // the last still alive when the run ends.
        let mut blocks = vec![
            block(3, 0, 3),
            block(2, 1, 5),
            block(4, 4, 7),
            block(1, 6, 8),
            block(5, 9, usize::MAX),
        ];
        let (size, overlaps, bounds) = place(&mut blocks);
        // At most 4 + 2 pages are alive at once; the last is not placed.
        assert_eq!(size, 6 * PAGE);
        for (i, a) in blocks.iter().enumerate().filter(|(_, b)| b.planned()) {
            for (j, b) in blocks.iter().enumerate().filter(|(_, b)| b.planned()) {
                let together = a.born < b.died && b.born < a.died;
                let shared = a.at < b.at + b.size && b.at < a.at + a.size;
                assert!(i == j || !(together && shared), "blocks {i} and {j} share");
                let listed = overlaps[bounds[i]..bounds[i + 1]].contains(&(j as u32));
                assert_eq!(listed, i != j && shared, "blocks {i} and {j}");
            }
        }
    }

    /// Allocates `sizes` in turn, each freed once the next two are made.
    fn run(arena: &Arena, sizes: &[usize]) -> Vec<usize> {
        let layouts: Vec<_> = sizes
            .iter()
            .map(|&s| Layout::from_size_align(s, 64).unwrap())
            .collect();
        let mut live: Vec<(*mut u8, Layout)> = Vec::new();
        let mut placed = Vec::new();
        for &layout in &layouts {
            // SAFETY: a non-zero layout; each block freed once, with it.
            let ptr = unsafe { arena.alloc(layout) };
            assert!(!ptr.is_null());
            for &(other, other_layout) in &live {
                let (a, b) = (ptr as usize, other as usize);
                assert!(
                    a + layout.size() <= b || b + other_layout.size() <= a,
                    "live blocks share"
                );
            }
            placed.push(ptr as usize);
            live.push((ptr, layout));
            if live.len() > 2 {
                let (old, old_layout) = live.remove(0);
                unsafe { arena.dealloc(old, old_layout) };
            }
        }
        for (ptr, layout) in live {
            unsafe { arena.dealloc(ptr, layout) };
        }
        placed
    }

    #[test]
    fn a_run_as_recorded_is_served_from_the_arena_and_another_from_the_system() {
        let arena = Arena::new();
        let sizes = [LARGE, 3 * LARGE, 2 * LARGE, 5 * LARGE, LARGE];
        arena.plan(|| run(&arena, &sizes));
        let (start, end) = (
            arena.start.load(Ordering::Acquire),
            arena.end.load(Ordering::Acquire),
        );
        // Three blocks alive at once at most, the largest three.
        assert!(
            end - start <= 10 * LARGE + 3 * PAGE,
            "arena of {} bytes",
            end - start
        );
        for _ in 0..2 {
            let placed = arena.replay(|| run(&arena, &sizes));
            assert!(
                placed.iter().all(|&p| p >= start && p < end),
                "{placed:x?} outside {start:x}..{end:x}"
            );
        }
        let other = [LARGE, 4 * LARGE, 2 * LARGE, 5 * LARGE, LARGE];
        let placed = arena.replay(|| run(&arena, &other));
        assert!(
            !(start..end).contains(&placed[1]),
            "a block of another size took a place"
        );
    }
}

//! A bound on how many children run or start at once. Long-lived children
//! (recorders' and watchers' ffmpeg) share one gate for their start, which
//! costs a board most of what one costs at all (loading ffmpeg, connecting,
//! reading the stream's parameters): after a power cut, 64 cameras that are
//! not there yet would otherwise start 128 ffmpeg together, and again at
//! each retry; such a child holds its place until it does its work, ends, or
//! has run for [`HOLD`]. The streams read on request (probes, snapshots)
//! share another for their whole run: requests alone could otherwise start
//! hundreds of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Children starting at once.
pub const STARTING_AT_ONCE: usize = 4;
/// The longest a child holds its place.
pub const HOLD: Duration = Duration::from_secs(2);
/// How often a wait for a place looks at the stop flag.
const TICK: Duration = Duration::from_millis(200);

pub struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new(STARTING_AT_ONCE)
    }
}

impl Gate {
    pub fn new(places: usize) -> Gate {
        Gate {
            free: Mutex::new(places),
            freed: Condvar::new(),
        }
    }

    /// Waits for a place; None if `stop` is set first.
    pub fn enter(&self, stop: &AtomicBool) -> Option<Place<'_>> {
        self.enter_unless(|| stop.load(Ordering::Acquire))
    }

    /// Waits at most `wait` for a place.
    pub fn enter_within(&self, wait: Duration) -> Option<Place<'_>> {
        let deadline = Instant::now() + wait;
        self.enter_unless(|| Instant::now() >= deadline)
    }

    fn enter_unless(&self, give_up: impl Fn() -> bool) -> Option<Place<'_>> {
        let mut free = lock(&self.free);
        loop {
            if give_up() {
                return None;
            }
            if *free > 0 {
                *free -= 1;
                return Some(Place {
                    gate: self,
                    since: Instant::now(),
                });
            }
            free = self
                .freed
                .wait_timeout(free, TICK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// A place among the children starting; given back when dropped.
pub struct Place<'a> {
    gate: &'a Gate,
    since: Instant,
}

impl Place<'_> {
    /// Whether it has been held for [`HOLD`].
    pub fn expired(&self) -> bool {
        self.since.elapsed() >= HOLD
    }
}

/// A panic elsewhere must not take the gate down.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        *lock(&self.gate.free) += 1;
        self.gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn at_most_so_many_at_once() {
        let gate = Arc::new(Gate::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, stop, inside, most) =
                    (gate.clone(), stop.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    let place = gate.enter(&stop).expect("not stopped");
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(place);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // A stop ends a wait.
        let a = gate.enter(&stop).unwrap();
        let _b = gate.enter(&stop).unwrap();
        stop.store(true, Ordering::Release);
        assert!(gate.enter(&stop).is_none());
        // A bounded wait ends without a place, then finds the one given back.
        assert!(gate.enter_within(Duration::from_millis(50)).is_none());
        drop(a);
        assert!(gate.enter_within(Duration::from_millis(50)).is_some());
    }
}

//! Keeping a long-lived child running (a recorder's or a watcher's ffmpeg):
//! run it, and when it ends, start it again after a wait that doubles from
//! 1 s to 60 s and starts over after a run that did its work. Each wait is
//! spread by up to a quarter either way, so that cameras that failed
//! together (a switch rebooted, a power cut) do not all retry at once. A
//! task asked each second of a wait whether what it needs is back (a
//! camera that answers again after a reboot) starts again at once, its
//! waits from 1 s again.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const FIRST: Duration = Duration::from_secs(1);
const LAST: Duration = Duration::from_secs(60);
/// How often a wait looks at the stop flag.
const TICK: Duration = Duration::from_millis(200);
/// How often a wait asks the task whether what it needs is back.
const ASK_EVERY: Duration = Duration::from_secs(1);

/// What is kept running.
pub trait Restartable {
    /// One run, until the child ends or the stop flag is set; whether it
    /// did its work (a segment closed, a frame came).
    fn run_once(&mut self) -> bool;
    /// It ended and starts again after `wait` (say why, and when).
    fn retrying(&mut self, wait: Duration);
    /// Asked each second of a wait: whether what the task needs came back
    /// since it failed (it may block a second or so). Never, unless told.
    fn back(&mut self) -> bool {
        false
    }
}

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    Stopped,
    Elapsed,
    /// The task said what it needs is back.
    Back,
}

/// Runs `task` until `stop` is set.
pub fn keep_running<T: Restartable>(task: &mut T, stop: &AtomicBool) {
    run_until(task, stop, |task: &mut T, wait| {
        wait_unless_back(task, stop, wait, ASK_EVERY)
    });
}

/// The loop of [`keep_running`], with its wait passed in.
fn run_until<T: Restartable>(
    task: &mut T,
    stop: &AtomicBool,
    mut wait_for: impl FnMut(&mut T, Duration) -> Waited,
) {
    let mut backoff = Backoff::new();
    while !stop.load(Ordering::Acquire) {
        let worked = task.run_once();
        if stop.load(Ordering::Acquire) {
            break;
        }
        let wait = backoff.next(worked);
        task.retrying(wait);
        match wait_for(task, wait) {
            Waited::Stopped => break,
            Waited::Elapsed => {}
            // What failed it is back: its next failure is a new one.
            Waited::Back => backoff = Backoff::new(),
        }
    }
}

/// Sleeps `wait`, looking at `stop` meanwhile and asking `task` every
/// `ask_every` whether it is back.
fn wait_unless_back(
    task: &mut impl Restartable,
    stop: &AtomicBool,
    wait: Duration,
    ask_every: Duration,
) -> Waited {
    let until = Instant::now() + wait;
    let mut ask_at = Instant::now() + ask_every;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now >= until {
            return Waited::Elapsed;
        }
        if now >= ask_at {
            if task.back() {
                return Waited::Back;
            }
            ask_at = Instant::now() + ask_every;
        }
        std::thread::sleep(
            TICK.min(until - now)
                .min(ask_at.saturating_duration_since(now)),
        );
    }
    Waited::Stopped
}

/// Sleeps `wait`, looking at `stop` meanwhile; whether it was set.
pub fn sleep_unless_stopped(stop: &AtomicBool, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while !stop.load(Ordering::Acquire) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(TICK.min(left));
    }
    true
}

/// The waits between runs.
struct Backoff {
    next: Duration,
    random: u64,
}

impl Backoff {
    fn new() -> Backoff {
        // A random seed per task, from the hasher keys std draws per thread.
        let random = RandomState::new().build_hasher().finish() | 1;
        Backoff {
            next: FIRST,
            random,
        }
    }

    /// The wait after a run that `worked` or not.
    fn next(&mut self, worked: bool) -> Duration {
        if worked {
            self.next = FIRST;
        }
        let base = self.next;
        self.next = (self.next * 2).min(LAST);
        // xorshift64: enough to spread waits.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        jittered(base, self.random)
    }
}

/// `wait` moved by up to a quarter of it either way, by `random`.
fn jittered(wait: Duration, random: u64) -> Duration {
    let ms = wait.as_millis() as u64;
    let spread = ms / 2;
    if spread == 0 {
        return wait;
    }
    Duration::from_millis(ms - spread / 2 + random % (spread + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_a_minute_and_start_over_after_work() {
        let mut backoff = Backoff::new();
        let secs: Vec<f64> = [false, false, false, false, false, false, false, false, true]
            .iter()
            .map(|worked| backoff.next(*worked).as_secs_f64())
            .collect();
        let bases = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 1.0];
        for (got, base) in secs.iter().zip(bases) {
            assert!(
                (base * 0.75..=base * 1.25).contains(got),
                "{got} s for {base} s"
            );
        }
    }

    #[test]
    fn jitter_spreads_within_a_quarter() {
        let table = [
            (1000, 0, 750),
            (1000, 500, 1250),
            (1000, 501, 750),
            (1000, 250, 1000),
            (60_000, u64::MAX, 45_000 + u64::MAX % 30_001),
            (1, 7, 1),
        ];
        for (wait, random, want) in table {
            assert_eq!(
                jittered(Duration::from_millis(wait), random),
                Duration::from_millis(want),
                "{wait} {random}"
            );
        }
        // Tasks that failed together wait apart. Two may draw the same of
        // the 501 milliseconds a first wait spreads over (once in 501 runs,
        // it did under qemu); ten that draw no more than four waits between
        // them are not spread (a chance below 1e-9).
        let waits: std::collections::BTreeSet<Duration> =
            (0..10).map(|_| Backoff::new().next(false)).collect();
        assert!(waits.len() >= 5, "{waits:?}");
    }

    struct Flaky {
        runs: usize,
        waits: Vec<Duration>,
        stop: std::sync::Arc<AtomicBool>,
        /// What `back` answers, in turn (then false).
        back: Vec<bool>,
        /// The run that sets the stop flag.
        last_run: usize,
    }

    impl Restartable for Flaky {
        fn run_once(&mut self) -> bool {
            self.runs += 1;
            if self.runs == self.last_run {
                self.stop.store(true, Ordering::Release);
            }
            self.runs == 1
        }

        fn retrying(&mut self, wait: Duration) {
            self.waits.push(wait);
        }

        fn back(&mut self) -> bool {
            !self.back.is_empty() && self.back.remove(0)
        }
    }

    fn flaky(stop: &std::sync::Arc<AtomicBool>, back: Vec<bool>, last_run: usize) -> Flaky {
        Flaky {
            runs: 0,
            waits: Vec::new(),
            stop: stop.clone(),
            back,
            last_run,
        }
    }

    #[test]
    fn runs_until_stopped() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let mut task = flaky(&stop, Vec::new(), 3);
        let mut slept = Vec::new();
        run_until(&mut task, &stop, |_: &mut Flaky, wait| {
            slept.push(wait);
            Waited::Elapsed
        });
        assert_eq!(task.runs, 3);
        assert_eq!(task.waits, slept, "told of each wait before it");
        assert_eq!(slept.len(), 2, "no wait after the stop");
        assert!(
            slept[0] < Duration::from_millis(1250),
            "the first run worked"
        );
    }

    #[test]
    fn a_task_back_ends_its_wait_and_starts_its_waits_over() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        // Silent, silent, back: the third ask of a minute's wait ends it.
        let mut task = flaky(&stop, vec![false, false, true], 0);
        let tick = Duration::from_millis(10);
        let started = Instant::now();
        let waited = wait_unless_back(&mut task, &stop, Duration::from_secs(60), tick);
        assert_eq!(waited, Waited::Back);
        assert!(task.back.is_empty(), "asked {:?} more", task.back);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // Never back: the wait runs its course.
        let waited = wait_unless_back(&mut task, &stop, Duration::from_millis(50), tick);
        assert_eq!(waited, Waited::Elapsed);

        // After a wait cut short the next is a first one again, though no
        // run worked since.
        let mut task = flaky(&stop, Vec::new(), 4);
        let mut waits = Vec::new();
        run_until(&mut task, &stop, |_: &mut Flaky, wait| {
            waits.push(wait);
            // The second run's wait (2 s) is cut short.
            if waits.len() == 2 {
                Waited::Back
            } else {
                Waited::Elapsed
            }
        });
        assert_eq!(task.runs, 4);
        assert_eq!(waits.len(), 3);
        let bases = [1.0, 2.0, 1.0];
        for (got, base) in waits.iter().zip(bases) {
            let got = got.as_secs_f64();
            assert!(
                (base * 0.75..=base * 1.25).contains(&got),
                "{got} s for {base} s"
            );
        }
    }
}

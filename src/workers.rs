//! Per-camera worker threads (recorders, motion watchers) kept in step with
//! the cameras: whenever they change (and every 10 s, which also restarts a
//! worker whose thread died), the workers no longer wanted or whose spec
//! changed are stopped and the missing ones started. A worker gets a stop
//! flag, which it must heed within its own grace.

use crate::channel::{self, RecvTimeoutError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::lock::lock;

/// How often the wanted workers are looked at again without being told.
const RECHECK: Duration = Duration::from_secs(10);

/// What a supervisor is told.
pub enum Order {
    CamerasChanged,
    Stop,
}

/// Runs `pass` now, then on each change and every 10 s, until told to stop.
pub fn supervise(orders: &channel::Receiver<Order>, mut pass: impl FnMut()) {
    loop {
        pass();
        match orders.recv_timeout(RECHECK) {
            Ok(Order::CamerasChanged) | Err(RecvTimeoutError::Timeout) => {
                // Several changes in a row need one pass.
                let mut stop = false;
                while let Ok(order) = orders.try_recv() {
                    stop |= matches!(order, Order::Stop);
                }
                if stop {
                    return;
                }
            }
            Ok(Order::Stop) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Tells the supervisor whose thread is in `running` to stop, and waits for
/// it (so for its workers) until `deadline`. Whether it stopped in time (or
/// was never started).
pub fn stop_supervisor(
    orders: &channel::Sender<Order>,
    running: &Mutex<Option<thread::JoinHandle<()>>>,
    deadline: Instant,
) -> bool {
    let _ = orders.send(Order::Stop);
    let Some(supervisor) = lock(running).take() else {
        return true;
    };
    while !supervisor.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let stopped = supervisor.is_finished();
    if stopped {
        let _ = supervisor.join();
    }
    stopped
}

struct Running<S> {
    spec: S,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

/// The running workers of one kind, by camera.
pub struct Workers<S> {
    kind: &'static str,
    running: HashMap<Uuid, Running<S>>,
}

impl<S: Clone + PartialEq> Workers<S> {
    /// `kind` names the threads and the log lines ("recorder").
    pub fn new(kind: &'static str) -> Workers<S> {
        Workers {
            kind,
            running: HashMap::new(),
        }
    }

    /// Stops the workers not in `wanted`, whose spec differs or whose thread
    /// ended, then starts a thread running `start(camera, spec, stop)` for
    /// each wanted camera without one. Returns the cameras whose worker stopped.
    pub fn reconcile<W>(
        &mut self,
        wanted: &HashMap<Uuid, S>,
        start: impl Fn(Uuid, S, Arc<AtomicBool>) -> W,
    ) -> Vec<Uuid>
    where
        W: FnOnce() + Send + 'static,
    {
        let stale: Vec<Uuid> = self
            .running
            .iter()
            .filter(|(id, r)| wanted.get(id) != Some(&r.spec) || r.thread.is_finished())
            .map(|(id, _)| *id)
            .collect();
        let stopped = stop(
            stale
                .iter()
                .filter_map(|id| self.running.remove_entry(id))
                .collect(),
        );
        for (id, spec) in wanted {
            if self.running.contains_key(id) {
                continue;
            }
            let flag = Arc::new(AtomicBool::new(false));
            let work = start(*id, spec.clone(), flag.clone());
            let spawned = crate::spawn::spawn(
                thread::Builder::new()
                    .name(format!("{} {id}", self.kind))
                    .stack_size(256 * 1024),
                work,
            );
            match spawned {
                Ok(thread) => {
                    let spec = spec.clone();
                    self.running.insert(
                        *id,
                        Running {
                            spec,
                            stop: flag,
                            thread,
                        },
                    );
                }
                Err(e) => log::error!("cannot start the {} of camera {id}: {e}", self.kind),
            }
        }
        stopped
    }

    /// Stops every worker; returns their cameras.
    pub fn stop_all(&mut self) -> Vec<Uuid> {
        stop(self.running.drain().collect())
    }
}

/// Asks each worker to stop, all at once, then waits for them.
fn stop<S>(workers: Vec<(Uuid, Running<S>)>) -> Vec<Uuid> {
    for (_, w) in &workers {
        w.stop.store(true, Ordering::Release);
    }
    workers
        .into_iter()
        .map(|(id, w)| {
            let _ = w.thread.join();
            id
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that notes its start and stop in `log` and runs until told.
    fn worker(
        log: Arc<Mutex<Vec<String>>>,
    ) -> impl Fn(Uuid, u32, Arc<AtomicBool>) -> Box<dyn FnOnce() + Send> {
        move |_, spec, stop| {
            let log = log.clone();
            Box::new(move || {
                log.lock().unwrap().push(format!("start {spec}"));
                while !stop.load(Ordering::Acquire) {
                    thread::sleep(Duration::from_millis(5));
                }
                log.lock().unwrap().push(format!("stop {spec}"));
            })
        }
    }

    #[test]
    fn workers_follow_what_is_wanted() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut workers = Workers::new("test");
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let wanted = |pairs: &[(Uuid, u32)]| pairs.iter().copied().collect::<HashMap<_, _>>();
        assert!(
            workers
                .reconcile(&wanted(&[(a, 1), (b, 2)]), worker(log.clone()))
                .is_empty()
        );
        assert_eq!(workers.running.len(), 2);
        // Unchanged: nothing happens.
        assert!(
            workers
                .reconcile(&wanted(&[(a, 1), (b, 2)]), worker(log.clone()))
                .is_empty()
        );
        // a's spec changed, b is no longer wanted.
        let mut stopped = workers.reconcile(&wanted(&[(a, 3)]), worker(log.clone()));
        stopped.sort();
        let mut both = vec![a, b];
        both.sort();
        assert_eq!(stopped, both);
        assert_eq!(workers.running.len(), 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        while log.lock().unwrap().len() < 5 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        let mut seen = log.lock().unwrap().clone();
        seen.sort();
        assert_eq!(seen, ["start 1", "start 2", "start 3", "stop 1", "stop 2"]);
        assert_eq!(workers.stop_all(), vec![a]);
    }

    #[test]
    fn a_worker_that_ended_is_started_again() {
        let mut workers = Workers::new("test");
        let id = Uuid::new_v4();
        let runs = Arc::new(Mutex::new(0));
        let start = |_, _, _| {
            let runs = runs.clone();
            move || *runs.lock().unwrap() += 1
        };
        let wanted: HashMap<Uuid, u32> = [(id, 1)].into();
        workers.reconcile(&wanted, start);
        while *runs.lock().unwrap() == 0 {
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(20));
        assert_eq!(
            workers.reconcile(&wanted, start),
            vec![id],
            "the ended one counts as stopped"
        );
        while *runs.lock().unwrap() < 2 {
            thread::sleep(Duration::from_millis(5));
        }
    }
}

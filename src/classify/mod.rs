//! Classification of what moved: while a motion event is on, crops of the
//! moving region go to one `nvr-classify` child for all cameras, which
//! says what it sees in each; the event becomes of the kind it saw
//! (`tally`). The child runs only while some camera classifies, is started
//! again with the same backoff as the ffmpeg children when it fails or
//! stops answering, and is killed with the node. It costs nothing while
//! nothing moves: it sleeps on its stdin.

pub use nvr_base::classify::{crop, regions};
pub mod objects;
pub mod tally;

/// What the node and `nvr-classify` say to each other (their shared crate).
pub use nvr_classify_core::protocol;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::changes::StateChanges;
use crate::channel;
use crate::lock::lock;
use crate::media::child::{Child, Output};
use crate::media::restart::{self, Restartable};
use protocol::{Object, READY};

/// The model's input: crops are this many pixels square.
pub const INPUT_SIDE: usize = nvr_classify_core::ssd::INPUT_SIZE;
/// Loading the model: under a second here, several on a slow board under load.
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// One crop's answer: about 40 ms here and 300 ms on a Cortex-A53.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// A crop that waited this long is of a moment gone: it is dropped.
const STALE: Duration = Duration::from_secs(3);
/// Crops waiting; more are dropped (each camera sends at most 3 a second).
const MAX_WAITING: usize = 8;
const TICK: Duration = Duration::from_millis(200);
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where the classifier and its model are.
#[derive(Clone, Debug)]
pub struct Settings {
    pub program: PathBuf,
    pub model_dir: PathBuf,
}

impl Settings {
    /// Both the program and a model are there.
    pub fn installed(&self) -> bool {
        self.program.is_file() && self.model_dir.join("labels.txt").is_file()
    }
}

/// What the classifier has done, for the status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Its process, while it is up and its model loaded.
    pub pid: Option<u32>,
    pub crops: u64,
    /// Crops not classified: too many waiting, or waiting too long.
    pub dropped: u64,
    /// Times it failed (exited, stopped answering, answered nonsense).
    pub failures: u64,
    /// The last crop's time in the model, ms.
    pub last_ms: Option<f32>,
}

/// A crop's answer: its objects; disconnected when it gets none.
pub type Reply = channel::Receiver<Vec<Object>>;

struct Request {
    rgb: Vec<u8>,
    reply: channel::Sender<Vec<Object>>,
    queued: Instant,
}

pub struct Classifier {
    settings: Settings,
    waiting: Mutex<VecDeque<Request>>,
    wake: Condvar,
    wanted: AtomicBool,
    stopping: AtomicBool,
    /// Set while it is not wanted or the node stops: the child stops.
    halt: AtomicBool,
    figures: Mutex<Figures>,
    /// Told when the status would show something else.
    live: Arc<StateChanges>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
}

impl Classifier {
    pub fn new(settings: Settings, live: Arc<StateChanges>) -> Classifier {
        Classifier {
            settings,
            waiting: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            wanted: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            halt: AtomicBool::new(true),
            figures: Mutex::new(Figures::default()),
            live,
            thread: Mutex::new(None),
        }
    }

    pub fn installed(&self) -> bool {
        self.settings.installed()
    }

    pub fn start(self: &Arc<Self>) {
        let me = self.clone();
        let spawned = crate::spawn::spawn(
            thread::Builder::new()
                .name("classifier".into())
                .stack_size(128 * 1024),
            move || me.run(),
        );
        match spawned {
            Ok(handle) => *lock(&self.thread) = Some(handle),
            Err(e) => log::error!("cannot start the classifier's thread: {e}"),
        }
    }

    /// Whether some camera classifies: the child runs only then.
    pub fn set_wanted(&self, wanted: bool) {
        let wanted = wanted && self.installed();
        self.wanted.store(wanted, Ordering::Release);
        if !wanted {
            self.halt.store(true, Ordering::Release);
        }
        self.wake.notify_all();
    }

    /// Queues a crop (`INPUT_SIDE` square, RGB); None when it cannot be
    /// taken now (not wanted, or too many waiting).
    pub fn submit(&self, rgb: Vec<u8>) -> Option<Reply> {
        debug_assert_eq!(rgb.len(), INPUT_SIDE * INPUT_SIDE * 3);
        if !self.wanted.load(Ordering::Acquire) {
            return None;
        }
        let mut waiting = lock(&self.waiting);
        if waiting.len() >= MAX_WAITING {
            drop(waiting);
            lock(&self.figures).dropped += 1;
            return None;
        }
        let (reply, answer) = channel::channel();
        waiting.push_back(Request {
            rgb,
            reply,
            queued: Instant::now(),
        });
        self.wake.notify_all();
        Some(answer)
    }

    pub fn figures(&self) -> Figures {
        lock(&self.figures).clone()
    }

    /// Stops the child and the thread, waiting for them until `deadline`.
    pub fn stop(&self, deadline: Instant) {
        self.stopping.store(true, Ordering::Release);
        self.halt.store(true, Ordering::Release);
        self.wake.notify_all();
        let Some(handle) = lock(&self.thread).take() else {
            return;
        };
        while !handle.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        if handle.is_finished() {
            let _ = handle.join();
        }
    }

    fn run(&self) {
        let mut runner = Runner {
            classifier: self,
            next_id: 0,
        };
        while !self.stopping.load(Ordering::Acquire) {
            if !self.wanted.load(Ordering::Acquire) {
                // Crops queued before it was unwanted get no answer.
                let waiting = lock(&self.waiting);
                let (mut waiting, _) = self
                    .wake
                    .wait_timeout(waiting, TICK)
                    .unwrap_or_else(|e| e.into_inner());
                waiting.clear();
                continue;
            }
            self.halt.store(false, Ordering::Release);
            // Unwanted meanwhile: set_wanted's halt may have come first.
            if !self.wanted.load(Ordering::Acquire) || self.stopping.load(Ordering::Acquire) {
                continue;
            }
            restart::keep_running(&mut runner, &self.halt);
        }
    }

    fn halted(&self) -> bool {
        self.halt.load(Ordering::Acquire)
    }

    /// The next crop, waiting up to `TICK`; stale ones are dropped.
    fn next_request(&self) -> Option<Request> {
        let mut waiting = lock(&self.waiting);
        if waiting.is_empty() {
            waiting = self
                .wake
                .wait_timeout(waiting, TICK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        while let Some(request) = waiting.pop_front() {
            if request.queued.elapsed() < STALE {
                return Some(request);
            }
            lock(&self.figures).dropped += 1;
        }
        None
    }

    fn failed(&self, why: &str) {
        log::warn!("classifier: {why}");
        let mut figures = lock(&self.figures);
        figures.failures += 1;
        figures.pid = None;
        drop(figures);
        self.live.bump();
    }

    fn set_pid(&self, pid: Option<u32>) {
        lock(&self.figures).pid = pid;
        self.live.bump();
    }
}

/// One run of the child, for the restart loop.
struct Runner<'a> {
    classifier: &'a Classifier,
    next_id: u64,
}

impl Runner<'_> {
    /// Starts the child and waits for its model to load.
    fn spawn(&self) -> Result<Child, String> {
        let settings = &self.classifier.settings;
        let mut command = Command::new(&settings.program);
        command.arg(&settings.model_dir);
        let mut child = Child::spawn_with_input(&mut command)
            .map_err(|e| format!("cannot run {}: {e}", settings.program.display()))?;
        let deadline = Instant::now() + LOAD_TIMEOUT;
        loop {
            match child.next_line(TICK) {
                Output::Line(line) if line == READY => return Ok(child),
                Output::Line(_) => {}
                Output::Quiet if !self.classifier.halted() && Instant::now() < deadline => {}
                Output::Quiet if self.classifier.halted() => {
                    child.stop(STOP_GRACE);
                    return Err("stopped while loading its model".into());
                }
                _ => {
                    child.stop(STOP_GRACE);
                    return Err(format!("it did not load its model: {}", last_line(&child)));
                }
            }
        }
    }

    /// Sends one crop and waits for its answer.
    fn classify(&mut self, child: &mut Child, request: &Request) -> Result<Vec<Object>, String> {
        self.next_id += 1;
        let id = self.next_id;
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let head = protocol::header(id, INPUT_SIDE, INPUT_SIDE);
        if !(child.write_all(head.as_bytes(), deadline) && child.write_all(&request.rgb, deadline))
        {
            return Err(format!("it took no crop: {}", last_line(child)));
        }
        loop {
            match child.next_line(TICK) {
                Output::Line(line) => {
                    let Some(answer) = protocol::parse_answer(&line) else {
                        return Err("it answered something that is not an answer".into());
                    };
                    if answer.id != id {
                        return Err(format!("it answered crop {} for crop {id}", answer.id));
                    }
                    if let Some(error) = answer.error {
                        log::warn!("classifier: a crop was not classified: {error}");
                    }
                    return Ok(answer.objects);
                }
                Output::Quiet if Instant::now() < deadline => {}
                Output::Quiet => return Err("it did not answer within 10 s".into()),
                Output::Closed => return Err(format!("it exited: {}", last_line(child))),
            }
        }
    }
}

impl Restartable for Runner<'_> {
    fn run_once(&mut self) -> bool {
        let classifier = self.classifier;
        let mut child = match self.spawn() {
            Ok(child) => child,
            Err(why) => {
                classifier.failed(&why);
                return false;
            }
        };
        classifier.set_pid(Some(child.pid()));
        log::info!("classifier: ready (process {})", child.pid());
        let mut worked = false;
        while !classifier.halted() {
            let Some(request) = classifier.next_request() else {
                // Idle: a child that died meanwhile is started again now,
                // not when the next crop finds it gone.
                if child.next_line(Duration::from_millis(1)) == Output::Closed {
                    classifier.failed(&format!("it exited: {}", last_line(&child)));
                    break;
                }
                continue;
            };
            let started = Instant::now();
            match self.classify(&mut child, &request) {
                Ok(objects) => {
                    worked = true;
                    let mut figures = lock(&classifier.figures);
                    figures.crops += 1;
                    figures.last_ms = Some(started.elapsed().as_secs_f32() * 1000.0);
                    drop(figures);
                    // The watcher may have stopped meanwhile: nobody to tell.
                    let _ = request.reply.send(objects);
                }
                Err(why) => {
                    classifier.failed(&why);
                    break;
                }
            }
        }
        classifier.set_pid(None);
        child.stop(STOP_GRACE);
        worked
    }

    fn retrying(&mut self, wait: Duration) {
        log::info!(
            "classifier: starting it again in {} s",
            wait.as_secs_f64().round().max(1.0)
        );
    }
}

/// The last line the child wrote on stderr: the classifier's own words
/// (it never sees a camera's URL), safe to log.
fn last_line(child: &Child) -> String {
    let tail = child.stderr_tail();
    let line = tail.lines().rev().find(|l| !l.trim().is_empty());
    line.map_or_else(
        || "it said nothing".into(),
        |l| l.chars().take(200).collect(),
    )
}

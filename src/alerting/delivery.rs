//! Delivering the outbox: a thread per destination takes its oldest alert,
//! sends it, and deletes it once delivered. A failure is written with the
//! alert's next try, 2 s later and twice as long each time up to 10
//! minutes; an alert tried for an hour is dropped and counted. A push
//! subscription the push service says is gone (404, 410) is deleted.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use uuid::Uuid;

use crate::alerts::destination::{Destination, Target};
use crate::alerts::message::{Message, Phase};
use crate::alerts::send::{Context, Outcome};
use crate::app::App;
use crate::clock;
use crate::lock::lock;
use crate::store::Outgoing;

/// An alert not delivered within this long after it was made is dropped.
const EXPIRE_MS: i64 = 3_600_000;
const FIRST_RETRY_MS: i64 = 2_000;
const LONGEST_RETRY_MS: i64 = 600_000;
/// How long ntfy's send waits for the alert's picture to be taken.
const PICTURE_WAIT: Duration = Duration::from_secs(5);
/// How long an idle thread sleeps before it looks at its outbox again.
const IDLE: Duration = Duration::from_secs(60);

/// The delivery threads, one a destination.
pub struct Deliveries {
    app: Arc<App>,
    threads: HashMap<Uuid, Arc<Signal>>,
}

/// Wakes a delivery thread, or stops it.
#[derive(Default)]
struct Signal {
    /// (woken, stopped)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Signal {
    fn set(&self, stop: bool) {
        let mut state = lock(&self.state);
        state.0 = true;
        state.1 |= stop;
        self.changed.notify_one();
    }

    /// Waits up to `timeout` for a wake; whether to stop.
    fn wait(&self, timeout: Duration) -> bool {
        let state = lock(&self.state);
        let (mut state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| !s.0)
            .unwrap_or_else(|e| e.into_inner());
        state.0 = false;
        state.1
    }
}

impl Deliveries {
    pub fn new(app: Arc<App>) -> Deliveries {
        Deliveries {
            app,
            threads: HashMap::new(),
        }
    }

    /// A thread for each of `destinations`, and none for others.
    pub fn keep(&mut self, destinations: &[Destination]) {
        self.threads.retain(|id, signal| {
            let kept = destinations.iter().any(|d| d.id == *id);
            if !kept {
                signal.set(true);
            }
            kept
        });
        for destination in destinations {
            if self.threads.contains_key(&destination.id) {
                continue;
            }
            let signal = Arc::new(Signal::default());
            let (app, id, theirs) = (self.app.clone(), destination.id, signal.clone());
            let started = crate::spawn::spawn(
                thread::Builder::new().name("alert delivery".into()),
                move || run(&app, id, &theirs),
            );
            match started {
                Ok(_) => {
                    self.threads.insert(destination.id, signal);
                }
                Err(e) => log::error!("alerts: cannot start a delivery thread: {e}"),
            }
        }
    }

    /// Tells `destination`'s thread that an alert is waiting.
    pub fn wake(&self, destination: Uuid) {
        if let Some(signal) = self.threads.get(&destination) {
            signal.set(false);
        }
    }
}

fn run(app: &App, id: Uuid, signal: &Signal) {
    let mut wait = Duration::ZERO;
    loop {
        if signal.wait(wait) {
            return;
        }
        wait = match app.db(|s| s.next_alert(id)) {
            Ok(Some(alert)) => {
                let now = clock::now_ms();
                if alert.due_ms > now {
                    Duration::from_millis((alert.due_ms - now) as u64)
                } else {
                    match deliver(app, &alert, now) {
                        Next::Now => Duration::ZERO,
                        Next::Stop => return,
                    }
                }
            }
            Ok(None) => IDLE,
            Err(e) => {
                log::error!("alerts: cannot read the outbox: {}", e.message);
                IDLE
            }
        };
    }
}

enum Next {
    Now,
    Stop,
}

/// Sends `alert`, or drops it if it is too old, and writes how it went.
fn deliver(app: &App, alert: &Outgoing, now: i64) -> Next {
    let Ok(Some(destination)) = app.db(|s| s.destination(alert.destination)) else {
        return Next::Stop;
    };
    let name = &destination.name;
    if now - alert.created_ms >= EXPIRE_MS {
        log::warn!(
            "alerts: {name}: dropped an alert not delivered in {} tries over an hour",
            alert.attempts
        );
        record(app, |s| s.alert_expired(alert));
        app.deliveries_changed();
        return Next::Now;
    }
    let Ok(message) = serde_json::from_str::<Message>(&alert.message) else {
        log::error!("alerts: {name}: dropped an alert that cannot be read");
        record(app, |s| s.alert_expired(alert));
        return Next::Now;
    };
    let vapid = match app.vapid() {
        Ok(vapid) => vapid,
        Err(e) => {
            log::error!("alerts: {}", e.message);
            return Next::Stop;
        }
    };
    let picture = match destination.target {
        Target::Ntfy { .. } => picture(app, &message),
        _ => None,
    };
    let cx = Context {
        base: &app.node_url,
        node_name: &app.node_name(),
        vapid: &vapid,
        alert_id: alert.id,
        picture: picture.as_deref(),
        now_s: (clock::now_ms() / 1000) as u64,
    };
    let outcome = app.alert_sender.send(&destination.target, &message, &cx);
    let after = clock::now_ms();
    let next = match outcome {
        Outcome::Delivered => {
            log::info!(
                "alerts: {name}: delivered the {:?} of event {}",
                message.phase,
                message.event_id()
            );
            record(app, |s| s.alert_delivered(alert, after));
            Next::Now
        }
        Outcome::Failed(why) => {
            let delay = (FIRST_RETRY_MS << alert.attempts.min(20)).min(LONGEST_RETRY_MS);
            log::warn!("alerts: {name}: {why}; trying again in {} s", delay / 1000);
            record(app, |s| s.alert_failed(alert, &why, after, after + delay));
            Next::Now
        }
        Outcome::Gone(why) => {
            log::info!("alerts: {name}: {why}: its subscription is deleted");
            record(app, |s| s.delete_destination(alert.destination).map(drop));
            app.alerts_changed();
            Next::Stop
        }
    };
    app.deliveries_changed();
    next
}

fn record(app: &App, write: impl FnOnce(&mut crate::store::Store) -> crate::store::Result<()>) {
    if let Err(e) = app.db(write) {
        log::error!("alerts: cannot write the outbox: {}", e.message);
    }
}

/// The picture for ntfy: the event's thumbnail at its end, else the one
/// taken for its alert (waited for while it is taken).
fn picture(app: &App, message: &Message) -> Option<Vec<u8>> {
    let event = Uuid::try_parse(message.event_id()).ok()?;
    if message.phase == Phase::Alert
        && let Some(jpeg) = app.pictures.get(event, PICTURE_WAIT)
    {
        return Some(jpeg.to_vec());
    }
    let path = app.db(|s| s.event(event)).ok()??.thumbnail_path?;
    let (file, len) = app.clips.open(&path).ok()?;
    let mut jpeg = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut jpeg).ok()?;
    Some(jpeg)
}

//! What happened that listeners outside the footage are told of as it
//! happens: motion starting and ending, kinds seen, who lingers, events added and their
//! files done. A bus: each listener (Home Assistant, alerts) has a queue of
//! its own, bounded, so senders never block and a listener that falls
//! behind loses its own oldest notices (counted), never another's. With no
//! listener a notice is dropped at once. What must not be lost is kept by
//! the listener itself (alerts write it to their outbox).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use uuid::Uuid;

use crate::clock;
use crate::event::Kind;
use crate::lock::lock;

/// Notices kept for a listener that has not taken them yet.
const MAX_WAITING: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// Motion began on `camera`; its event, stored when it ends, gets `event`
    /// as id. `classifying`: the camera's classifier will look at it, so
    /// `motion` is its kind only for now.
    MotionStarted {
        camera: Uuid,
        event: Uuid,
        at_ms: i64,
        classifying: bool,
    },
    /// The event under way on `camera` was found to be of `kind` (by the
    /// classifier, while it goes on), having entered `zones` so far.
    KindSeen {
        camera: Uuid,
        event: Uuid,
        kind: Kind,
        zones: Vec<String>,
    },
    /// The event under way on `camera` (stored as it stands) became
    /// `loitering`: someone or something stayed longer than their
    /// `loiterSeconds` in `zones` (all of its zones that loiter so far).
    Loitering {
        camera: Uuid,
        event: Uuid,
        zones: Vec<String>,
    },
    /// The motion on `camera` ended, its event of `kind` in the end (it is
    /// stored, if the camera still exists).
    MotionEnded {
        camera: Uuid,
        event: Uuid,
        kind: Kind,
    },
    /// An event was posted to the API.
    EventPosted { event: Uuid },
    /// An event's clip and thumbnail were made, or will not be.
    EventFinished { event: Uuid },
}

#[derive(Default)]
pub struct Notices {
    listeners: Mutex<Vec<Arc<Inbox>>>,
}

/// A notice, and when it was sent (ms since the epoch).
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    pub at_ms: i64,
    pub notice: Notice,
}

/// One listener's queue.
pub struct Inbox {
    pub name: &'static str,
    waiting: Mutex<VecDeque<Sent>>,
    wake: Condvar,
    /// Notices dropped because this listener fell behind.
    lost: AtomicU64,
}

impl Notices {
    /// A listener named `name`: from now on every notice is kept for it too.
    pub fn subscribe(&self, name: &'static str) -> Arc<Inbox> {
        let inbox = Arc::new(Inbox {
            name,
            waiting: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            lost: AtomicU64::new(0),
        });
        lock(&self.listeners).push(inbox.clone());
        inbox
    }

    pub fn send(&self, notice: Notice) {
        let listeners = lock(&self.listeners);
        if listeners.is_empty() {
            return;
        }
        let sent = Sent {
            at_ms: clock::now_ms(),
            notice,
        };
        for inbox in listeners.iter() {
            inbox.put(sent.clone());
        }
    }

    /// Each listener's name and the notices it lost by falling behind.
    pub fn lost(&self) -> Vec<(&'static str, u64)> {
        lock(&self.listeners)
            .iter()
            .map(|inbox| (inbox.name, inbox.lost.load(Ordering::Relaxed)))
            .collect()
    }
}

impl Inbox {
    fn put(&self, sent: Sent) {
        let mut waiting = lock(&self.waiting);
        if waiting.len() == MAX_WAITING {
            waiting.pop_front();
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        waiting.push_back(sent);
        self.wake.notify_one();
    }

    /// The notices sent since the last call, waiting up to `timeout` for one.
    pub fn wait(&self, timeout: Duration) -> Vec<Sent> {
        let waiting = lock(&self.waiting);
        let (mut waiting, _) = self
            .wake
            .wait_timeout_while(waiting, timeout, |w| w.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        waiting.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(camera: Uuid) -> Notice {
        Notice::MotionEnded {
            camera,
            event: Uuid::nil(),
            kind: Kind::Motion,
        }
    }

    #[test]
    fn each_listener_has_its_own_bounded_queue() {
        let notices = Notices::default();
        let camera = Uuid::new_v4();
        notices.send(ended(camera));
        let slow = notices.subscribe("slow");
        assert!(
            slow.wait(Duration::ZERO).is_empty(),
            "sent before it listened"
        );
        let quick = notices.subscribe("quick");
        for _ in 0..MAX_WAITING + 10 {
            notices.send(ended(camera));
            assert_eq!(quick.wait(Duration::ZERO).len(), 1, "it keeps up");
        }
        let event = Uuid::new_v4();
        notices.send(Notice::EventFinished { event });
        let got = slow.wait(Duration::ZERO);
        assert_eq!(got.len(), MAX_WAITING);
        let last = got.last().unwrap();
        assert_eq!(last.notice, Notice::EventFinished { event });
        assert!((last.at_ms - clock::now_ms()).abs() < 60_000, "sent now");
        assert!(slow.wait(Duration::from_millis(10)).is_empty());
        let quick_got: Vec<Notice> = quick
            .wait(Duration::ZERO)
            .into_iter()
            .map(|s| s.notice)
            .collect();
        assert_eq!(
            quick_got,
            [Notice::EventFinished { event }],
            "the slow one's losses are not the quick one's"
        );
        assert_eq!(notices.lost(), [("slow", 11), ("quick", 0)]);
    }
}

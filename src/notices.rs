//! What happened that a listener outside the node (Home Assistant through
//! MQTT) is told of as it happens: motion starting and ending, events added
//! and their files done. Senders never block: with no listener a notice is
//! dropped at once, and a listener that falls behind loses the oldest.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use uuid::Uuid;

use crate::event::Kind;
use crate::lock::lock;

/// Notices kept for a listener that has not taken them yet.
const MAX_WAITING: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// Motion began on `camera`; its event, stored when it ends, gets `event` as id.
    MotionStarted {
        camera: Uuid,
        event: Uuid,
        at_ms: i64,
    },
    /// The event under way on `camera` was found to be of `kind` (by the
    /// classifier, while it goes on).
    KindSeen {
        camera: Uuid,
        event: Uuid,
        kind: Kind,
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
    listening: AtomicBool,
    waiting: Mutex<VecDeque<Notice>>,
    wake: Condvar,
}

impl Notices {
    /// From now on notices are kept for [`Notices::wait`].
    pub fn listen(&self) {
        self.listening.store(true, Ordering::Release);
    }

    pub fn send(&self, notice: Notice) {
        if !self.listening.load(Ordering::Acquire) {
            return;
        }
        let mut waiting = lock(&self.waiting);
        if waiting.len() == MAX_WAITING {
            waiting.pop_front();
        }
        waiting.push_back(notice);
        self.wake.notify_one();
    }

    /// The notices sent since the last call, waiting up to `timeout` for one.
    pub fn wait(&self, timeout: Duration) -> Vec<Notice> {
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

    #[test]
    fn kept_only_for_a_listener_and_bounded() {
        let notices = Notices::default();
        let camera = Uuid::new_v4();
        notices.send(Notice::MotionEnded {
            camera,
            event: Uuid::nil(),
            kind: Kind::Motion,
        });
        assert!(notices.wait(Duration::ZERO).is_empty(), "nobody listened");
        notices.listen();
        for _ in 0..MAX_WAITING + 10 {
            notices.send(Notice::MotionEnded {
                camera,
                event: Uuid::nil(),
                kind: Kind::Motion,
            });
        }
        let event = Uuid::new_v4();
        notices.send(Notice::EventFinished { event });
        let got = notices.wait(Duration::ZERO);
        assert_eq!(got.len(), MAX_WAITING);
        assert_eq!(got.last(), Some(&Notice::EventFinished { event }));
        assert!(notices.wait(Duration::from_millis(10)).is_empty());
    }
}

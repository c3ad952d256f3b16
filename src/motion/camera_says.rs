//! What each camera's own motion detection says (its ONVIF events), shared
//! by the subscriptions that hear it and the watchers that act on it: a
//! camera saying motion brings its watcher to full rate at once. A pulse
//! (true, then false within a second) still counts for [`PULSE_HOLD`]; a
//! state stuck at true while the node's own detector has seen nothing for
//! [`STUCK_AFTER`] is no longer believed, until the camera says false.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::lock::lock;

/// How long a "motion" the camera said counts after it said it, however
/// soon it said "no motion" again.
pub const PULSE_HOLD: Duration = Duration::from_secs(2);
/// A camera saying motion this long while the node saw none is stuck.
pub const STUCK_AFTER: Duration = Duration::from_secs(60);

/// One camera's word.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Word {
    /// Its motion state, and since when it holds.
    moving: bool,
    since: Option<Instant>,
    /// When it last said motion.
    last_true: Option<Instant>,
    /// When the node's own detector last saw motion.
    node_saw: Option<Instant>,
}

impl Word {
    fn stuck(&self, now: Instant) -> bool {
        let long = |at: Option<Instant>| at.is_none_or(|at| now.duration_since(at) >= STUCK_AFTER);
        self.moving && long(self.since) && long(self.node_saw)
    }

    fn says_motion(&self, now: Instant) -> bool {
        let recent = self
            .last_true
            .is_some_and(|at| now.duration_since(at) < PULSE_HOLD);
        (self.moving || recent) && !self.stuck(now)
    }
}

#[derive(Default)]
pub struct CameraSays {
    words: Mutex<HashMap<Uuid, Word>>,
}

impl CameraSays {
    /// The camera said its motion state is `moving`.
    pub fn said(&self, camera: Uuid, moving: bool, now: Instant) {
        let mut words = lock(&self.words);
        let word = words.entry(camera).or_default();
        if moving {
            word.last_true = Some(now);
        }
        if word.moving != moving || word.since.is_none() {
            word.moving = moving;
            word.since = Some(now);
        }
    }

    /// The node's own detector saw motion on `camera`.
    pub fn node_saw(&self, camera: Uuid, now: Instant) {
        if let Some(word) = lock(&self.words).get_mut(&camera) {
            word.node_saw = Some(now);
        }
    }

    /// Whether `camera` says there is motion now (a recent pulse counts; a
    /// stuck state does not).
    pub fn says_motion(&self, camera: Uuid, now: Instant) -> bool {
        lock(&self.words)
            .get(&camera)
            .is_some_and(|w| w.says_motion(now))
    }

    /// Whether `camera`'s motion state is stuck at true.
    pub fn stuck(&self, camera: Uuid, now: Instant) -> bool {
        lock(&self.words).get(&camera).is_some_and(|w| w.stuck(now))
    }

    /// `camera` is no longer heard (its subscription ended).
    pub fn forget(&self, camera: Uuid) {
        lock(&self.words).remove(&camera);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pulse_counts_for_its_hold_and_a_stuck_state_stops_counting() {
        let says = CameraSays::default();
        let (camera, t0) = (Uuid::from_u128(1), Instant::now());
        assert!(!says.says_motion(camera, t0));
        says.said(camera, true, t0);
        says.said(camera, false, t0 + Duration::from_millis(300));
        assert!(says.says_motion(camera, t0 + Duration::from_millis(1500)));
        assert!(!says.says_motion(camera, t0 + PULSE_HOLD));
        says.said(camera, true, t0 + PULSE_HOLD);
        let later = t0 + PULSE_HOLD + STUCK_AFTER;
        says.node_saw(camera, t0 + PULSE_HOLD + Duration::from_secs(30));
        assert!(says.says_motion(camera, later));
        assert!(!says.stuck(camera, later));
        let much_later = later + Duration::from_secs(30);
        assert!(says.stuck(camera, much_later));
        assert!(!says.says_motion(camera, much_later));
        says.said(camera, false, much_later);
        says.said(camera, true, much_later + Duration::from_secs(1));
        assert!(says.says_motion(camera, much_later + Duration::from_secs(2)));
    }
}

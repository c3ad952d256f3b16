//! The pictures of what alerts were about, kept in memory for a while: the
//! camera's picture when the alert was made, which ntfy attaches and which
//! stands for the event's thumbnail until its own is made at its end.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::lock::lock;

/// Pictures kept: a few tens of KiB each.
const KEPT: usize = 16;

#[derive(Clone)]
enum Slot {
    Taking,
    Taken(Option<Arc<[u8]>>),
}

#[derive(Default)]
pub struct Pictures {
    slots: Mutex<VecDeque<(Uuid, Slot)>>,
    taken: Condvar,
}

impl Pictures {
    /// Whether the picture of `event` is to be taken now (it is not taken
    /// or being taken already).
    pub fn begin(&self, event: Uuid) -> bool {
        let mut slots = lock(&self.slots);
        if slots.iter().any(|(id, _)| *id == event) {
            return false;
        }
        if slots.len() == KEPT {
            slots.pop_front();
        }
        slots.push_back((event, Slot::Taking));
        true
    }

    /// The picture of `event`, or that there is none.
    pub fn put(&self, event: Uuid, jpeg: Option<Vec<u8>>) {
        let mut slots = lock(&self.slots);
        if let Some((_, slot)) = slots.iter_mut().find(|(id, _)| *id == event) {
            *slot = Slot::Taken(jpeg.map(Arc::from));
        }
        self.taken.notify_all();
    }

    /// The picture of `event`, waiting up to `wait` while it is being taken.
    pub fn get(&self, event: Uuid, wait: Duration) -> Option<Arc<[u8]>> {
        let deadline = Instant::now() + wait;
        let mut slots = lock(&self.slots);
        loop {
            let slot = slots
                .iter()
                .find(|(id, _)| *id == event)
                .map(|(_, s)| s.clone());
            match slot {
                Some(Slot::Taking) => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    slots = self
                        .taken
                        .wait_timeout(slots, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                Some(Slot::Taken(jpeg)) => return jpeg,
                None => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_is_waited_for_while_it_is_taken_and_few_are_kept() {
        let pictures = Arc::new(Pictures::default());
        let event = Uuid::new_v4();
        assert!(pictures.begin(event));
        assert!(!pictures.begin(event), "taken once");
        assert!(pictures.get(event, Duration::ZERO).is_none(), "not yet");
        let taker = {
            let pictures = pictures.clone();
            std::thread::spawn(move || pictures.put(event, Some(vec![0xFF, 0xD8])))
        };
        let got = pictures.get(event, Duration::from_secs(10));
        taker.join().unwrap();
        assert_eq!(got.as_deref(), Some(&[0xFF, 0xD8][..]));
        let none = Uuid::new_v4();
        pictures.begin(none);
        pictures.put(none, None);
        assert!(pictures.get(none, Duration::from_secs(10)).is_none());
        for _ in 0..KEPT {
            pictures.begin(Uuid::new_v4());
        }
        assert!(
            pictures.get(event, Duration::ZERO).is_none(),
            "the oldest went"
        );
    }
}

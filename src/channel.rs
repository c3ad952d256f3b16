//! The node's channels: std's `mpsc` API as the node uses it (send, a
//! bounded `try_send`, `recv_timeout`, `try_recv`, and a side's end seen
//! by the other), on a mutex, a queue and a condition variable. The node
//! passes a few orders a second through them, where std's channels (three
//! lock-free flavours) cost a copy of their code for each type carried
//! (the board's binary: docs/install.md).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use std::sync::mpsc::{RecvTimeoutError, SendError, TryRecvError, TrySendError};

use crate::lock::lock;

/// A wait without end, in steps a condition variable takes on any system.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

struct State<T> {
    queue: VecDeque<T>,
    senders: usize,
    receiving: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    /// The most queued (`sync_channel`); None: no bound.
    bound: Option<usize>,
}

pub struct Sender<T>(Arc<Shared<T>>);
pub struct Receiver<T>(Arc<Shared<T>>);
/// A sender of a bounded channel: as std names it.
pub type SyncSender<T> = Sender<T>;

/// A channel without bound.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    with_bound(None)
}

/// A channel that holds at most `bound` (`try_send` refuses more).
pub fn sync_channel<T>(bound: usize) -> (Sender<T>, Receiver<T>) {
    with_bound(Some(bound))
}

fn with_bound<T>(bound: Option<usize>) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiving: true,
        }),
        ready: Condvar::new(),
        bound,
    });
    (Sender(shared.clone()), Receiver(shared))
}

impl<T> Sender<T> {
    /// Queues `value`; an error (with it) once the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        match self.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(value) | TrySendError::Disconnected(value)) => {
                Err(SendError(value))
            }
        }
    }

    /// Queues `value` unless the channel is full or the receiver gone.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut state = lock(&self.0.state);
        if !state.receiving {
            return Err(TrySendError::Disconnected(value));
        }
        if self.0.bound.is_some_and(|bound| state.queue.len() >= bound) {
            return Err(TrySendError::Full(value));
        }
        state.queue.push_back(value);
        drop(state);
        self.0.ready.notify_one();
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        lock(&self.0.state).senders += 1;
        Sender(self.0.clone())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.senders -= 1;
        if state.senders == 0 {
            drop(state);
            self.0.ready.notify_all();
        }
    }
}

impl<T> Receiver<T> {
    /// The next value, waiting at most `wait` (a wait past what the clock
    /// can count: until one comes); disconnected once it is empty and
    /// every sender gone.
    pub fn recv_timeout(&self, wait: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now().checked_add(wait);
        let mut state = lock(&self.0.state);
        loop {
            if let Some(value) = state.queue.pop_front() {
                return Ok(value);
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.map_or(FOREVER, |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            state = self
                .0
                .ready
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The next value if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut state = lock(&self.0.state);
        match state.queue.pop_front() {
            Some(value) => Ok(value),
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.receiving = false;
        // What was queued goes now, not with the last sender.
        let queued = std::mem::take(&mut state.queue);
        drop(state);
        drop(queued);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn values_come_in_order_and_each_side_sees_the_other_go() {
        let (sender, receiver) = channel();
        let other = sender.clone();
        sender.send(1).unwrap();
        other.send(2).unwrap();
        assert_eq!(receiver.try_recv(), Ok(1));
        assert_eq!(receiver.recv_timeout(Duration::ZERO), Ok(2));
        assert_eq!(receiver.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(
            receiver.recv_timeout(Duration::from_millis(10)),
            Err(RecvTimeoutError::Timeout)
        );
        drop(sender);
        other.send(3).unwrap();
        drop(other);
        assert_eq!(receiver.try_recv(), Ok(3), "what was sent before going");
        assert_eq!(receiver.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(
            receiver.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );

        let (sender, receiver) = channel();
        sender.send(5).unwrap();
        assert_eq!(receiver.recv_timeout(Duration::MAX), Ok(5), "no overflow");
        drop(receiver);
        assert_eq!(sender.send(4), Err(SendError(4)));
    }

    #[test]
    fn a_waiting_receiver_wakes_for_a_value_or_the_last_sender_going() {
        let (sender, receiver) = channel();
        let later = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            sender.send("x").unwrap();
            thread::sleep(Duration::from_millis(50));
        });
        let started = Instant::now();
        assert_eq!(receiver.recv_timeout(Duration::from_secs(10)), Ok("x"));
        assert_eq!(
            receiver.recv_timeout(Duration::from_secs(10)),
            Err(RecvTimeoutError::Disconnected)
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        later.join().unwrap();
    }

    #[test]
    fn a_bounded_channel_refuses_more_than_it_holds() {
        let (sender, receiver) = sync_channel(1);
        assert_eq!(sender.try_send(1), Ok(()));
        assert_eq!(sender.try_send(2), Err(TrySendError::Full(2)));
        assert_eq!(receiver.try_recv(), Ok(1));
        drop(receiver);
        assert_eq!(sender.try_send(3), Err(TrySendError::Disconnected(3)));
    }
}

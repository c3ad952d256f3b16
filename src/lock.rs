//! Taking a lock that a panicked holder left poisoned: the data is still
//! the node's, and one failed request must not stop the rest.

use std::sync::{Mutex, MutexGuard};

/// A panic in one request must not take the lock down for all others.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

//! The database behind its lock, shared by the API and the background work,
//! and the one place where SQLite failures become the node's errors.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Kind};
use crate::lock::lock;
use crate::store::{self, Store};

/// A hold of the lock longer than this is logged: something slow ran under it.
const SLOW_HOLD: Duration = Duration::from_secs(1);

pub struct Db {
    store: Mutex<Store>,
    /// The store's generation and its events', as of the last hold of the
    /// lock: the status asks whether it is current on every request, and
    /// must not wait for a writer's sync to the disk to learn that it is.
    generations: [AtomicU64; 2],
}

impl Db {
    pub fn new(store: Store) -> Db {
        let generations = [store.generation(), store.events_generation()].map(AtomicU64::new);
        Db {
            store: Mutex::new(store),
            generations,
        }
    }

    /// Runs `f` under the lock. Keep `f` short: no I/O beyond SQLite, no
    /// waiting on anything (rule 1 of docs/design/recording-and-motion.md).
    pub fn run<T>(&self, f: impl FnOnce(&mut Store) -> store::Result<T>) -> Result<T, Error> {
        let mut store = lock(&self.store);
        let started = Instant::now();
        let result = f(&mut store);
        self.published(&store);
        drop(store);
        held_since(started);
        result.map_err(database_error)
    }

    /// The store's generation and its events' (see `Store::generation`),
    /// without the lock.
    pub fn generations(&self) -> (u64, u64) {
        let [store, events] = &self.generations;
        (
            store.load(Ordering::Acquire),
            events.load(Ordering::Acquire),
        )
    }

    #[inline(never)]
    fn published(&self, store: &Store) {
        let [generation, events] = &self.generations;
        generation.store(store.generation(), Ordering::Release);
        events.store(store.events_generation(), Ordering::Release);
    }
}

// The two below are not generic, and not inlined: each of the many callers
// of `Db::run` would carry a copy of them (21 KB of the aarch64 binary).

/// Logs a hold of the lock that began at `started` and was slow.
#[inline(never)]
fn held_since(started: Instant) {
    let held = started.elapsed();
    if held > SLOW_HOLD {
        log::warn!("database: the lock was held for {held:?}");
    }
}

/// The node's error for an SQLite failure.
#[inline(never)]
fn database_error(e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => {
            log::warn!("database: the disk is full");
            Error::new(
                Kind::InsufficientStorage,
                "the node's storage is full: free some space and try again",
            )
        }
        Some(rusqlite::ErrorCode::ReadOnly) => storage_fault(
            &e,
            "the node's database cannot be written: its file system is read-only (remounted \
             read-only after a storage error?); check the SD card and restart the node",
        ),
        Some(rusqlite::ErrorCode::SystemIoFailure) => storage_fault(
            &e,
            "the node's database could not be read or written: a storage I/O error (a failing \
             SD card, or its file system remounted read-only); check the card and restart the node",
        ),
        _ => Error::internal("database", &e),
    }
}

/// A fault of the database's storage: the client and the status are told in
/// plain words what a user can do; the log keeps SQLite's own words.
fn storage_fault(e: &rusqlite::Error, message: &str) -> Error {
    log::warn!("database: {e}");
    Error::new(Kind::Internal, message)
}

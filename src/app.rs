//! The node's shared state: the database behind its lock, the prober, the
//! relay client and the live state kept in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, mpsc};

use uuid::Uuid;

use crate::config::Config;
use crate::error::Error;
use crate::prober::Prober;
use crate::relay::Relay;
use crate::sessions::Sessions;
use crate::static_files::Ui;
use crate::store::{self, Store};

pub struct App {
    pub node_name: String,
    pub prober: Prober,
    pub relay: Relay,
    pub whep_sessions: Sessions,
    pub ui: Ui,
    store: Mutex<Store>,
    relay_healthy: AtomicBool,
    /// Whether each camera answered its last check or probe; in memory, so an idle node writes nothing.
    online: Mutex<HashMap<Uuid, bool>>,
    /// Asks the relay sync loop for a reconcile.
    relay_nudges: mpsc::Sender<()>,
}

impl App {
    pub fn new(config: &Config, store: Store, relay_nudges: mpsc::Sender<()>) -> App {
        App {
            node_name: config.node_name.clone(),
            prober: Prober::new(config.ffprobe.clone()),
            relay: Relay::new(&config.relay_url),
            whep_sessions: Sessions::default(),
            ui: Ui::new(config.www_dir.clone()),
            store: Mutex::new(store),
            relay_healthy: AtomicBool::new(false),
            online: Mutex::new(HashMap::new()),
            relay_nudges,
        }
    }

    /// Runs `f` under the database lock. Keep `f` short: no I/O beyond SQLite.
    pub fn db<T>(&self, f: impl FnOnce(&Store) -> store::Result<T>) -> Result<T, Error> {
        f(&lock(&self.store)).map_err(|e| Error::internal("database", &e))
    }

    pub fn relay_healthy(&self) -> bool {
        self.relay_healthy.load(Ordering::Relaxed)
    }

    /// Returns the previous value.
    pub fn set_relay_healthy(&self, healthy: bool) -> bool {
        self.relay_healthy.swap(healthy, Ordering::Relaxed)
    }

    pub fn is_online(&self, id: Uuid) -> bool {
        lock(&self.online).get(&id).copied().unwrap_or(false)
    }

    pub fn set_online(&self, id: Uuid, online: bool) {
        lock(&self.online).insert(id, online);
    }

    pub fn forget_online(&self, id: Uuid) {
        lock(&self.online).remove(&id);
    }

    /// Drops the state of cameras for which `keep` is false.
    pub fn retain_online(&self, keep: impl Fn(&Uuid) -> bool) {
        lock(&self.online).retain(|id, _| keep(id));
    }

    /// Tells the relay sync loop that cameras changed; never blocks on the relay.
    pub fn cameras_changed(&self) {
        // The loop only stops with the process.
        let _ = self.relay_nudges.send(());
    }
}

/// A panic in one request must not take the lock down for all others.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

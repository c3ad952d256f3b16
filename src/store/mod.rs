//! The node's SQLite database: schema versions and upgrades, and one file
//! per table group (cameras, events, recorded segments, the tombstones of
//! deleted footage, the node's identity).
//! Knows nothing of HTTP.

mod alerts;
mod busy;
mod cameras;
mod events;
mod node;
mod segments;
mod tombstones;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, Row};
use uuid::Uuid;

use crate::cameras::camera::Camera;

pub use alerts::{Delivery, Outgoing};
pub use events::{EventFiles, EventFilter, EventTallies, Flagged};
pub use node::Identity;
pub use segments::Segment;
pub use tombstones::Tombstones;

pub type Result<T> = rusqlite::Result<T>;

/// Each step upgrades the schema from version `index` to `index + 1`.
const UPGRADES: &[&str] = &[
    // 0 -> 1
    "CREATE TABLE node (
         key TEXT PRIMARY KEY,
         value TEXT NOT NULL
     ) STRICT;
     CREATE TABLE camera (
         id TEXT PRIMARY KEY,
         name TEXT NOT NULL,
         make TEXT NOT NULL,
         model TEXT NOT NULL,
         rtsp_url TEXT NOT NULL,
         rtsp_sub_url TEXT,
         enabled INTEGER NOT NULL,
         record INTEGER NOT NULL,
         detect INTEGER NOT NULL,
         capabilities TEXT,
         created_at_ms INTEGER NOT NULL
     ) STRICT;
     CREATE TABLE event (
         id TEXT PRIMARY KEY,
         camera_id TEXT NOT NULL,
         kind TEXT NOT NULL,
         score REAL NOT NULL,
         started_at_ms INTEGER NOT NULL,
         ended_at_ms INTEGER NOT NULL,
         clip_status TEXT NOT NULL
     ) STRICT;
     CREATE INDEX event_started ON event (started_at_ms DESC);",
    // 1 -> 2: clips, deleting a camera's events, and the uploader's queue.
    "ALTER TABLE event ADD COLUMN clip_path TEXT;
     CREATE INDEX event_camera ON event (camera_id);
     CREATE INDEX event_clip_pending ON event (started_at_ms)
         WHERE clip_status != 'uploaded' AND clip_path IS NOT NULL;",
    // 2 -> 3: recorded segments, the tombstones of their deletion, and events
    // by camera and time (which segments an event's clip still needs).
    "CREATE TABLE segment (
         camera_id TEXT NOT NULL,
         start_ms INTEGER NOT NULL,
         end_ms INTEGER NOT NULL,
         bytes INTEGER NOT NULL,
         path TEXT NOT NULL,
         PRIMARY KEY (camera_id, start_ms)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX segment_start ON segment (start_ms);
     CREATE TABLE segment_garbage (
         path TEXT PRIMARY KEY
     ) STRICT, WITHOUT ROWID;
     DROP INDEX event_camera;
     CREATE INDEX event_camera_started ON event (camera_id, started_at_ms);",
    // 3 -> 4: motion detection's sensitivity, and events' thumbnails.
    "ALTER TABLE camera ADD COLUMN detect_sensitivity TEXT NOT NULL DEFAULT 'medium';
     ALTER TABLE event ADD COLUMN thumbnail_path TEXT;",
    // 4 -> 5: the bytes of each event's clip and thumbnail (NULL: not measured
    // yet, for events that had files before this step), and the tombstones
    // of deleted events' files.
    "ALTER TABLE event ADD COLUMN clip_bytes INTEGER;
     ALTER TABLE event ADD COLUMN thumbnail_bytes INTEGER;
     UPDATE event SET clip_bytes = 0, thumbnail_bytes = 0
         WHERE clip_path IS NULL AND thumbnail_path IS NULL;
     CREATE TABLE clip_garbage (
         path TEXT PRIMARY KEY
     ) STRICT, WITHOUT ROWID;",
    // 5 -> 6: the cameras deleted whose recordings folder is still to empty
    // (a folder of no known camera is otherwise kept: its database was lost).
    "CREATE TABLE camera_garbage (
         id TEXT PRIMARY KEY
     ) STRICT, WITHOUT ROWID;",
    // 6 -> 7: classifying motion events, and into which kinds (names, comma
    // separated). Cameras from before classify: the node that gains the
    // classifier gains it with this version, and it is on by default where
    // it is installed.
    "ALTER TABLE camera ADD COLUMN classify INTEGER NOT NULL DEFAULT 1;
     ALTER TABLE camera ADD COLUMN kinds TEXT NOT NULL
         DEFAULT 'person,vehicle,animal,package';",
    // 7 -> 8: the ONVIF device a camera is (endpoint reference, service
    // address), both null for a camera not linked to one.
    "ALTER TABLE camera ADD COLUMN onvif_endpoint TEXT;
     ALTER TABLE camera ADD COLUMN onvif_address TEXT;",
    // 8 -> 9: motion masks and zones: each camera's masks and zones (JSON,
    // as the API shows them) and whether it leaves out the areas learnt to
    // be always moving; and the zones each event entered (a JSON array of
    // names), none for the events before.
    "ALTER TABLE camera ADD COLUMN motion_masks TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE camera ADD COLUMN zones TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE camera ADD COLUMN auto_mask INTEGER NOT NULL DEFAULT 1;
     ALTER TABLE event ADD COLUMN zones TEXT NOT NULL DEFAULT '[]';",
    // 9 -> 10: events listed while they go on, and the areas each camera's
    // detector learnt are always moving (its busy cells, as motion encodes them).
    "ALTER TABLE event ADD COLUMN in_progress INTEGER NOT NULL DEFAULT 0;
     CREATE TABLE busy_cells (
         camera_id TEXT PRIMARY KEY,
         cells BLOB NOT NULL
     ) STRICT, WITHOUT ROWID;",
    // 10 -> 11: what the node saw of a linked ONVIF device while the camera
    // worked (hardware address, serial number), to tell it from another
    // device that answers with its endpoint reference; null until seen.
    "ALTER TABLE camera ADD COLUMN onvif_mac TEXT;
     ALTER TABLE camera ADD COLUMN onvif_serial TEXT;",
    // 11 -> 12: events marked reviewed and kept (all not, the ones before
    // too: none was seen through the node), and the indexes that page the
    // events list by kind, by not reviewed and by kept, as it pages all
    // events by event_started and a camera's by event_camera_started.
    "ALTER TABLE event ADD COLUMN reviewed INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE event ADD COLUMN keep INTEGER NOT NULL DEFAULT 0;
     CREATE INDEX event_kind_started ON event (kind, started_at_ms);
     CREATE INDEX event_unreviewed ON event (started_at_ms) WHERE reviewed = 0;
     CREATE INDEX event_kept ON event (started_at_ms) WHERE keep = 1;",
    // 12 -> 13: a camera's retainDays, the age in days past which its
    // recorded segments are deleted; null (every camera before): no limit.
    "ALTER TABLE camera ADD COLUMN retain_days INTEGER;",
    // 13 -> 14: alerts: where they go (target and rules as JSON, the
    // target's secrets included) with how delivering to each goes, the
    // outbox of alerts not yet delivered, and cameras snoozed.
    "CREATE TABLE alert_destination (
         id TEXT PRIMARY KEY,
         name TEXT NOT NULL,
         target TEXT NOT NULL,
         rules TEXT NOT NULL,
         created_at_ms INTEGER NOT NULL,
         delivered INTEGER NOT NULL DEFAULT 0,
         last_delivered_ms INTEGER,
         last_failure TEXT,
         last_failure_ms INTEGER,
         expired INTEGER NOT NULL DEFAULT 0,
         overflowed INTEGER NOT NULL DEFAULT 0
     ) STRICT;
     CREATE TABLE alert_outbox (
         id TEXT PRIMARY KEY,
         destination_id TEXT NOT NULL,
         created_at_ms INTEGER NOT NULL,
         due_at_ms INTEGER NOT NULL,
         attempts INTEGER NOT NULL,
         message TEXT NOT NULL
     ) STRICT;
     CREATE INDEX alert_outbox_destination ON alert_outbox (destination_id, created_at_ms);
     CREATE TABLE alert_snooze (
         camera_id TEXT PRIMARY KEY,
         until_ms INTEGER NOT NULL
     ) STRICT, WITHOUT ROWID;",
    // 14 -> 15: a camera whose motion decoder decodes every frame all the
    // time (`fullRate`); off, as every camera was not.
    "ALTER TABLE camera ADD COLUMN full_rate INTEGER NOT NULL DEFAULT 0;",
    // 15 -> 16: whose motion detection a camera's events start on
    // (`motionSource`: node, camera or both); null (every camera before):
    // both where its ONVIF device offers events, else the node's.
    "ALTER TABLE camera ADD COLUMN motion_source TEXT;",
    // 16 -> 17: each camera's events not reviewed, counted once here and
    // then kept by SQLite on every write: the status shows them, and
    // counting a million events took a second with the lock held. And the
    // events in progress, which each start looks for, and each camera's
    // newest with a thumbnail, which Home Assistant's start shows, by index;
    // and the bytes of all events' files, kept the same way as the tally.
    "CREATE INDEX event_in_progress ON event (started_at_ms) WHERE in_progress = 1;
     CREATE INDEX event_thumbnail ON event (camera_id, started_at_ms)
         WHERE thumbnail_path IS NOT NULL;
     CREATE TABLE unreviewed_tally (
         camera_id TEXT PRIMARY KEY,
         events INTEGER NOT NULL
     ) STRICT, WITHOUT ROWID;
     INSERT INTO unreviewed_tally (camera_id, events)
         SELECT camera_id, COUNT(*) FROM event WHERE reviewed = 0 GROUP BY camera_id;
     CREATE TRIGGER unreviewed_tally_insert AFTER INSERT ON event WHEN NEW.reviewed = 0
     BEGIN
         INSERT INTO unreviewed_tally (camera_id, events) VALUES (NEW.camera_id, 1)
             ON CONFLICT (camera_id) DO UPDATE SET events = events + 1;
     END;
     CREATE TRIGGER unreviewed_tally_delete AFTER DELETE ON event WHEN OLD.reviewed = 0
     BEGIN
         UPDATE unreviewed_tally SET events = events - 1 WHERE camera_id = OLD.camera_id;
     END;
     CREATE TRIGGER unreviewed_tally_update AFTER UPDATE OF reviewed, camera_id ON event
         WHEN OLD.reviewed != NEW.reviewed OR OLD.camera_id != NEW.camera_id
     BEGIN
         UPDATE unreviewed_tally SET events = events - 1
             WHERE camera_id = OLD.camera_id AND OLD.reviewed = 0;
         INSERT INTO unreviewed_tally (camera_id, events)
             SELECT NEW.camera_id, 1 WHERE NEW.reviewed = 0
             ON CONFLICT (camera_id) DO UPDATE SET events = events + 1;
     END;
     CREATE TABLE event_bytes_tally (bytes INTEGER NOT NULL) STRICT;
     INSERT INTO event_bytes_tally (bytes)
         SELECT COALESCE(SUM(COALESCE(clip_bytes, 0) + COALESCE(thumbnail_bytes, 0)), 0)
         FROM event;
     CREATE TRIGGER event_bytes_insert AFTER INSERT ON event
     BEGIN
         UPDATE event_bytes_tally
             SET bytes = bytes + COALESCE(NEW.clip_bytes, 0) + COALESCE(NEW.thumbnail_bytes, 0);
     END;
     CREATE TRIGGER event_bytes_delete AFTER DELETE ON event
     BEGIN
         UPDATE event_bytes_tally
             SET bytes = bytes - COALESCE(OLD.clip_bytes, 0) - COALESCE(OLD.thumbnail_bytes, 0);
     END;
     CREATE TRIGGER event_bytes_update AFTER UPDATE OF clip_bytes, thumbnail_bytes ON event
     BEGIN
         UPDATE event_bytes_tally
             SET bytes = bytes + COALESCE(NEW.clip_bytes, 0) + COALESCE(NEW.thumbnail_bytes, 0)
                 - COALESCE(OLD.clip_bytes, 0) - COALESCE(OLD.thumbnail_bytes, 0);
     END;",
    // 17 -> 18: the objects an event saw (a compact JSON list), and whether
    // someone lingered in a zone; none and no for every event before.
    "ALTER TABLE event ADD COLUMN objects TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE event ADD COLUMN loitering INTEGER NOT NULL DEFAULT 0;",
];

pub struct Store {
    conn: Connection,
    /// The cameras as last read, until a camera is written: status and the
    /// camera list read them on every call, and a query per call was most of
    /// their cost.
    cameras: RefCell<Option<Arc<Vec<Camera>>>>,
    /// The node id as last read, until the identity is written.
    node_id: RefCell<Option<Option<String>>>,
    /// Counts writes to cameras and the identity, so views built from them
    /// can tell whether they are still current.
    generation: Cell<u64>,
    /// The bytes of each camera's recorded segments, once counted: kept up
    /// to date on each write, since the retention check asks after every
    /// new segment.
    segment_bytes: RefCell<Option<HashMap<Uuid, u64>>>,
    /// The events not reviewed and the bytes kept, once counted, until an
    /// event is written: the status shows them on every build.
    event_tallies: RefCell<Option<Arc<EventTallies>>>,
    /// Counts writes to events, so the status knows when to rebuild.
    events_generation: Cell<u64>,
}

impl Store {
    /// Opens (creating if needed) the database in `dir` and upgrades its schema.
    pub fn open(dir: &Path) -> Result<Store> {
        let conn = Connection::open(dir.join("nvr-node.db"))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a camera or event acknowledged with a 2xx survives a power cut too.
        conn.pragma_update(None, "synchronous", "FULL")?;
        let mut store = Store {
            conn,
            cameras: RefCell::new(None),
            node_id: RefCell::new(None),
            generation: Cell::new(0),
            segment_bytes: RefCell::new(None),
            event_tallies: RefCell::new(None),
            events_generation: Cell::new(0),
        };
        store.upgrade()?;
        Ok(store)
    }

    fn upgrade(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > UPGRADES.len() {
            let message = format!(
                "database schema version {version} is newer than this node knows ({})",
                UPGRADES.len()
            );
            let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR);
            return Err(rusqlite::Error::SqliteFailure(code, Some(message)));
        }
        for (from, sql) in UPGRADES.iter().enumerate().skip(version) {
            log::info!(
                "upgrading database schema from version {from} to {}",
                from + 1
            );
            tx.execute_batch(sql)?;
        }
        tx.pragma_update(None, "user_version", UPGRADES.len())?;
        tx.commit()
    }

    /// Changes with every write to the cameras or the identity.
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// Forgets what was read of the cameras and the identity, before either
    /// is written. (A camera write also drops the node id: one query, rarely.)
    fn written(&self) {
        self.cameras.take();
        self.node_id.take();
        self.generation.set(self.generation.get() + 1);
    }
}

fn uuid_column(r: &Row, index: usize) -> Result<Uuid> {
    let text: String = r.get(index)?;
    Uuid::try_parse(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::cameras::camera::Settings;

    pub fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("nvr-node-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A person event of `camera` from `started_at_ms` for half a second,
    /// with its clip at `clip` (none yet).
    pub fn event(camera: Uuid, started_at_ms: i64, clip: Option<&str>) -> crate::event::Event {
        crate::event::Event {
            id: Uuid::new_v4(),
            camera_id: camera,
            kind: "person".into(),
            score: 0.5,
            started_at_ms,
            ended_at_ms: started_at_ms + 500,
            clip_status: "local".into(),
            clip_path: clip.map(str::to_owned),
            thumbnail_path: None,
            zones: Vec::new(),
            in_progress: false,
            reviewed: false,
            keep: false,
            objects: Vec::new(),
            loitering: false,
        }
    }

    pub fn camera(name: &str) -> Camera {
        Camera {
            id: Uuid::new_v4(),
            settings: Settings {
                name: name.into(),
                make: "Acme".into(),
                model: "".into(),
                rtsp_url: "rtsp://u:p@h/main".into(),
                rtsp_sub_url: None,
                enabled: true,
                record: false,
                detect: true,
                detect_sensitivity: Default::default(),
                classify: true,
                kinds: crate::event::Kind::CLASSIFIED.to_vec(),
                onvif: None,
                motion_masks: Vec::new(),
                zones: Vec::new(),
                auto_mask: true,
                retain_days: None,
                full_rate: false,
                motion_source: None,
            },
            capabilities: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::temp_dir;
    use super::*;

    #[test]
    fn newer_schema_is_refused() {
        let dir = temp_dir("newer");
        drop(Store::open(&dir).unwrap());
        let conn = Connection::open(dir.join("nvr-node.db")).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = Store::open(&dir).err().expect("refused");
        assert!(err.to_string().contains("newer"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

//! The node's SQLite database: schema versions and upgrades, cameras, events
//! and the node's identity. Knows nothing of HTTP.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params};
use uuid::Uuid;

use crate::camera::{Camera, Capabilities, Settings};
use crate::event::Event;

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
];

pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the database in `dir` and upgrades its schema.
    pub fn open(dir: &Path) -> Result<Store> {
        let conn = Connection::open(dir.join("nvr-node.db"))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a camera or event acknowledged with a 2xx survives a power cut too.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        let mut store = Store { conn };
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

    /// The id the cloud gave this node, once it has registered.
    pub fn node_id(&self) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM node WHERE key = 'node_id'", [], |r| {
                r.get(0)
            })
            .optional()
    }

    pub fn cameras(&self) -> Result<Vec<Camera>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} ORDER BY created_at_ms, id"))?;
        stmt.query_map([], camera_from_row)?.collect()
    }

    pub fn camera(&self, id: Uuid) -> Result<Option<Camera>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} WHERE id = ?1"))?;
        stmt.query_row([id.to_string()], camera_from_row).optional()
    }

    pub fn insert_camera(&self, camera: &Camera, created_at_ms: i64) -> Result<()> {
        let settings = &camera.settings;
        self.conn.execute(
            "INSERT INTO camera (id, name, make, model, rtsp_url, rtsp_sub_url, enabled,
                                 record, detect, capabilities, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                camera.id.to_string(),
                settings.name,
                settings.make,
                settings.model,
                settings.rtsp_url,
                settings.rtsp_sub_url,
                settings.enabled,
                settings.record,
                settings.detect,
                camera.capabilities.as_ref().map(capabilities_json),
                created_at_ms,
            ],
        )?;
        Ok(())
    }

    /// Writes a camera's settings and capabilities; returns whether it exists.
    pub fn update_camera(&self, camera: &Camera) -> Result<bool> {
        let settings = &camera.settings;
        let n = self.conn.execute(
            "UPDATE camera SET name = ?2, make = ?3, model = ?4, rtsp_url = ?5, rtsp_sub_url = ?6,
                               enabled = ?7, record = ?8, detect = ?9, capabilities = ?10
             WHERE id = ?1",
            params![
                camera.id.to_string(),
                settings.name,
                settings.make,
                settings.model,
                settings.rtsp_url,
                settings.rtsp_sub_url,
                settings.enabled,
                settings.record,
                settings.detect,
                camera.capabilities.as_ref().map(capabilities_json),
            ],
        )?;
        Ok(n > 0)
    }

    /// Returns the camera that was deleted, if there was one.
    pub fn delete_camera(&self, id: Uuid) -> Result<Option<Camera>> {
        let camera = self.camera(id)?;
        if camera.is_some() {
            self.conn
                .execute("DELETE FROM camera WHERE id = ?1", [id.to_string()])?;
        }
        Ok(camera)
    }

    /// Returns whether the camera exists.
    pub fn set_capabilities(&self, id: Uuid, capabilities: &Capabilities) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE camera SET capabilities = ?2 WHERE id = ?1",
            params![id.to_string(), capabilities_json(capabilities)],
        )?;
        Ok(n > 0)
    }

    /// The `limit` most recent events, newest first.
    pub fn recent_events(&self, limit: u32) -> Result<Vec<Event>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status
             FROM event ORDER BY started_at_ms DESC, rowid DESC LIMIT ?1",
        )?;
        stmt.query_map([limit], |r| {
            Ok(Event {
                id: uuid_column(r, 0)?,
                camera_id: uuid_column(r, 1)?,
                kind: r.get(2)?,
                score: r.get(3)?,
                started_at_ms: r.get(4)?,
                ended_at_ms: r.get(5)?,
                clip_status: r.get(6)?,
            })
        })?
        .collect()
    }
}

const SELECT_CAMERA: &str = "SELECT id, name, make, model, rtsp_url, rtsp_sub_url, enabled, \
                             record, detect, capabilities FROM camera";

fn camera_from_row(r: &Row) -> Result<Camera> {
    let capabilities: Option<String> = r.get(9)?;
    Ok(Camera {
        id: uuid_column(r, 0)?,
        settings: Settings {
            name: r.get(1)?,
            make: r.get(2)?,
            model: r.get(3)?,
            rtsp_url: r.get(4)?,
            rtsp_sub_url: r.get(5)?,
            enabled: r.get(6)?,
            record: r.get(7)?,
            detect: r.get(8)?,
        },
        // A row this version cannot read counts as not probed.
        capabilities: capabilities.and_then(|json| serde_json::from_str(&json).ok()),
    })
}

fn uuid_column(r: &Row, index: usize) -> Result<Uuid> {
    let text: String = r.get(index)?;
    Uuid::try_parse(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn capabilities_json(capabilities: &Capabilities) -> String {
    serde_json::to_string(capabilities).expect("capabilities serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("nvr-node-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn camera(name: &str) -> Camera {
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
            },
            capabilities: None,
        }
    }

    #[test]
    fn cameras_round_trip_across_reopen() {
        let dir = temp_dir("cameras");
        let a = camera("a");
        let mut b = camera("b");
        b.settings.rtsp_sub_url = Some("rtsp://h/sub".into());
        {
            let store = Store::open(&dir).unwrap();
            store.insert_camera(&a, 1).unwrap();
            store.insert_camera(&b, 2).unwrap();
            let caps = Capabilities {
                video_codec: "h264".into(),
                width: 640,
                height: 360,
                fps: 25,
                audio_codec: Some("pcm_alaw".into()),
            };
            assert!(store.set_capabilities(b.id, &caps).unwrap());
            b.capabilities = Some(caps);
            assert!(
                !store
                    .set_capabilities(Uuid::new_v4(), b.capabilities.as_ref().unwrap())
                    .unwrap()
            );
        }
        let store = Store::open(&dir).unwrap();
        assert_eq!(store.cameras().unwrap(), vec![a.clone(), b.clone()]);
        let mut changed = b.clone();
        changed.settings.name = "b2".into();
        changed.settings.rtsp_sub_url = None;
        changed.capabilities = None;
        assert!(store.update_camera(&changed).unwrap());
        assert_eq!(store.camera(b.id).unwrap(), Some(changed));
        assert!(store.update_camera(&b).unwrap());
        assert!(!store.update_camera(&camera("ghost")).unwrap());
        assert_eq!(store.camera(b.id).unwrap(), Some(b.clone()));
        assert_eq!(store.delete_camera(a.id).unwrap(), Some(a.clone()));
        assert_eq!(store.delete_camera(a.id).unwrap(), None);
        assert_eq!(store.camera(a.id).unwrap(), None);
        assert_eq!(store.cameras().unwrap(), vec![b]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn insert_event(store: &Store, event: &Event) -> Result<()> {
        store.conn.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                event.id.to_string(),
                event.camera_id.to_string(),
                event.kind,
                event.score,
                event.started_at_ms,
                event.ended_at_ms,
                event.clip_status,
            ],
        )?;
        Ok(())
    }

    #[test]
    fn recent_events_newest_first_and_limited() {
        let dir = temp_dir("events");
        let store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        for i in [5_i64, 1, 9, 3, 7] {
            insert_event(
                &store,
                &Event {
                    id: Uuid::new_v4(),
                    camera_id: cam,
                    kind: "person".into(),
                    score: 0.5,
                    started_at_ms: i * 1000,
                    ended_at_ms: i * 1000 + 500,
                    clip_status: "local".into(),
                },
            )
            .unwrap();
        }
        let got: Vec<i64> = store
            .recent_events(3)
            .unwrap()
            .iter()
            .map(|e| e.started_at_ms)
            .collect();
        assert_eq!(got, vec![9000, 7000, 5000]);
        let plan: String = store
            .conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT id FROM event ORDER BY started_at_ms DESC, rowid DESC LIMIT 50",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("USING INDEX event_started"), "{plan}");
        std::fs::remove_dir_all(dir).unwrap();
    }

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

//! The node's SQLite database: schema versions and upgrades, cameras, events
//! and the node's identity. Knows nothing of HTTP.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
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
    // 1 -> 2: clips, deleting a camera's events, and the uploader's queue.
    "ALTER TABLE event ADD COLUMN clip_path TEXT;
     CREATE INDEX event_camera ON event (camera_id);
     CREATE INDEX event_clip_pending ON event (started_at_ms)
         WHERE clip_status != 'uploaded' AND clip_path IS NOT NULL;",
];

/// Who the node is to the cloud.
#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    pub node_id: String,
    /// Never logged, never shown.
    pub secret: String,
    /// Whether a person has claimed the node into an account.
    pub claimed: bool,
}

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
        let mut store = Store {
            conn,
            cameras: RefCell::new(None),
            node_id: RefCell::new(None),
            generation: Cell::new(0),
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

    /// The id the cloud gave this node, once it has registered. One lookup:
    /// status asks for it on every call, and needs no secret.
    pub fn node_id(&self) -> Result<Option<String>> {
        if let Some(node_id) = self.node_id.borrow().as_ref() {
            return Ok(node_id.clone());
        }
        let node_id = self.node_value("node_id")?;
        *self.node_id.borrow_mut() = Some(node_id.clone());
        Ok(node_id)
    }

    fn node_value(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT value FROM node WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()
    }

    /// The node's cloud identity, once it has registered.
    pub fn identity(&self) -> Result<Option<Identity>> {
        let value = |key: &str| self.node_value(key);
        let (Some(node_id), Some(secret)) = (value("node_id")?, value("node_secret")?) else {
            return Ok(None);
        };
        let claimed = value("claimed")?.as_deref() == Some("true");
        Ok(Some(Identity {
            node_id,
            secret,
            claimed,
        }))
    }

    /// Stores the identity (or forgets it, with None) in one transaction.
    pub fn set_identity(&mut self, identity: Option<&Identity>) -> Result<()> {
        self.written();
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM node WHERE key IN ('node_id', 'node_secret', 'claimed')",
            [],
        )?;
        if let Some(identity) = identity {
            let claimed = if identity.claimed { "true" } else { "false" };
            let rows = [
                ("node_id", identity.node_id.as_str()),
                ("node_secret", &identity.secret),
                ("claimed", claimed),
            ];
            for (key, value) in rows {
                tx.execute(
                    "INSERT INTO node (key, value) VALUES (?1, ?2)",
                    [key, value],
                )?;
            }
        }
        tx.commit()
    }

    /// All cameras, oldest first.
    pub fn cameras(&self) -> Result<Arc<Vec<Camera>>> {
        if let Some(cameras) = self.cameras.borrow().as_ref() {
            return Ok(cameras.clone());
        }
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} ORDER BY created_at_ms, id"))?;
        let cameras = Arc::new(
            stmt.query_map([], camera_from_row)?
                .collect::<Result<_>>()?,
        );
        *self.cameras.borrow_mut() = Some(Arc::clone(&cameras));
        Ok(cameras)
    }

    pub fn camera(&self, id: Uuid) -> Result<Option<Camera>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} WHERE id = ?1"))?;
        stmt.query_row([id.to_string()], camera_from_row).optional()
    }

    pub fn insert_camera(&self, camera: &Camera, created_at_ms: i64) -> Result<()> {
        self.written();
        let mut values = camera_values(camera);
        values.push(created_at_ms.into());
        self.conn.execute(
            "INSERT INTO camera (id, name, make, model, rtsp_url, rtsp_sub_url, enabled,
                                 record, detect, capabilities, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params_from_iter(values),
        )?;
        Ok(())
    }

    /// Writes a camera's settings and capabilities; returns whether it exists.
    pub fn update_camera(&self, camera: &Camera) -> Result<bool> {
        self.written();
        let n = self.conn.execute(
            "UPDATE camera SET name = ?2, make = ?3, model = ?4, rtsp_url = ?5, rtsp_sub_url = ?6,
                               enabled = ?7, record = ?8, detect = ?9, capabilities = ?10
             WHERE id = ?1",
            params_from_iter(camera_values(camera)),
        )?;
        Ok(n > 0)
    }

    /// Deletes a camera with its events; returns it and its events' clip files.
    pub fn delete_camera(&mut self, id: Uuid) -> Result<Option<(Camera, Vec<String>)>> {
        let Some(camera) = self.camera(id)? else {
            return Ok(None);
        };
        self.written();
        let tx = self.conn.transaction()?;
        let clips = clip_paths(&tx, "camera_id = ?1", [id.to_string()])?;
        tx.execute("DELETE FROM event WHERE camera_id = ?1", [id.to_string()])?;
        tx.execute("DELETE FROM camera WHERE id = ?1", [id.to_string()])?;
        tx.commit()?;
        Ok(Some((camera, clips)))
    }

    /// Returns whether the camera exists.
    pub fn set_capabilities(&self, id: Uuid, capabilities: &Capabilities) -> Result<bool> {
        self.written();
        let n = self.conn.execute(
            "UPDATE camera SET capabilities = ?2 WHERE id = ?1",
            params![id.to_string(), capabilities_json(capabilities)],
        )?;
        Ok(n > 0)
    }

    /// Adds an event and drops the oldest past `keep`; returns the dropped events' clip files.
    pub fn insert_event(&mut self, event: &Event, keep: u64) -> Result<Vec<String>> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status, clip_path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                event.id.to_string(),
                event.camera_id.to_string(),
                event.kind,
                event.score,
                event.started_at_ms,
                event.ended_at_ms,
                event.clip_status,
                event.clip_path,
            ],
        )?;
        // The newest `keep` are found through the index; all older ones go.
        let cutoff: Option<(i64, i64)> = tx
            .query_row(
                "SELECT started_at_ms, rowid FROM event ORDER BY started_at_ms DESC, rowid DESC
                 LIMIT 1 OFFSET ?1",
                [keep],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let mut dropped = Vec::new();
        if let Some((at, rowid)) = cutoff {
            let older = "started_at_ms < ?1 OR (started_at_ms = ?1 AND rowid <= ?2)";
            dropped = clip_paths(&tx, older, params![at, rowid])?;
            tx.execute(
                &format!("DELETE FROM event WHERE {older}"),
                params![at, rowid],
            )?;
        }
        tx.commit()?;
        Ok(dropped)
    }

    /// The oldest event whose clip waits for upload: (id, clip path).
    pub fn next_clip_to_upload(&self) -> Result<Option<(Uuid, String)>> {
        self.conn
            .query_row(
                "SELECT id, clip_path FROM event
                 WHERE clip_status = 'local' AND clip_path IS NOT NULL
                 ORDER BY started_at_ms LIMIT 1",
                [],
                |r| Ok((uuid_column(r, 0)?, r.get(1)?)),
            )
            .optional()
    }

    /// Moves an event's clip from status `from` to `to`; returns whether it was at `from`.
    pub fn move_clip(&self, id: Uuid, from: &str, to: &str) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET clip_status = ?3 WHERE id = ?1 AND clip_status = ?2",
            params![id.to_string(), from, to],
        )?;
        Ok(n > 0)
    }

    /// Drops the clip of an event whose file is gone; it stays `local`.
    pub fn forget_clip(&self, id: Uuid) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET clip_path = NULL, clip_status = 'local' WHERE id = ?1",
            [id.to_string()],
        )?;
        Ok(n > 0)
    }

    /// Uploads cut short by a crash start again.
    pub fn reset_uploading(&self) -> Result<usize> {
        // The first two terms restate event_clip_pending's condition, so
        // SQLite walks that small index rather than every event (at start).
        self.conn.execute(
            "UPDATE event SET clip_status = 'local'
             WHERE clip_status != 'uploaded' AND clip_path IS NOT NULL
               AND clip_status = 'uploading'",
            [],
        )
    }

    /// The `limit` most recent events, newest first.
    pub fn recent_events(&self, limit: u32) -> Result<Vec<Event>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status, clip_path
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
                clip_path: r.get(7)?,
            })
        })?
        .collect()
    }
}

/// A camera's columns from `id` to `capabilities`, as parameters ?1 to ?10.
fn camera_values(camera: &Camera) -> Vec<Value> {
    let s = &camera.settings;
    let text = |t: &str| Value::Text(t.to_owned());
    vec![
        text(&camera.id.to_string()),
        text(&s.name),
        text(&s.make),
        text(&s.model),
        text(&s.rtsp_url),
        s.rtsp_sub_url.clone().map_or(Value::Null, Value::Text),
        Value::Integer(s.enabled.into()),
        Value::Integer(s.record.into()),
        Value::Integer(s.detect.into()),
        camera
            .capabilities
            .as_ref()
            .map_or(Value::Null, |c| Value::Text(capabilities_json(c))),
    ]
}

/// The clip files of the events matching `filter`.
fn clip_paths(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<String>> {
    let sql = format!("SELECT clip_path FROM event WHERE clip_path IS NOT NULL AND ({filter})");
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map(params, |r| r.get(0))?.collect()
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
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(*store.cameras().unwrap(), vec![a.clone(), b.clone()]);
        let mut changed = b.clone();
        changed.settings.name = "b2".into();
        changed.settings.rtsp_sub_url = None;
        changed.capabilities = None;
        assert_eq!(*store.cameras().unwrap(), vec![a.clone(), b.clone()]);
        assert!(store.update_camera(&changed).unwrap());
        assert_eq!(
            store.cameras().unwrap()[1],
            changed,
            "the cached list is renewed"
        );
        assert_eq!(store.camera(b.id).unwrap(), Some(changed));
        assert!(store.update_camera(&b).unwrap());
        assert!(!store.update_camera(&camera("ghost")).unwrap());
        assert_eq!(store.camera(b.id).unwrap(), Some(b.clone()));
        assert_eq!(
            store.delete_camera(a.id).unwrap(),
            Some((a.clone(), vec![]))
        );
        assert_eq!(store.delete_camera(a.id).unwrap(), None);
        assert_eq!(store.camera(a.id).unwrap(), None);
        assert_eq!(*store.cameras().unwrap(), vec![b]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn event(camera: Uuid, started_at_ms: i64, clip: Option<&str>) -> Event {
        Event {
            id: Uuid::new_v4(),
            camera_id: camera,
            kind: "person".into(),
            score: 0.5,
            started_at_ms,
            ended_at_ms: started_at_ms + 500,
            clip_status: "local".into(),
            clip_path: clip.map(str::to_owned),
        }
    }

    #[test]
    fn events_newest_first_kept_to_a_limit() {
        let dir = temp_dir("events");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        for i in [5_i64, 1, 9, 3, 7] {
            let clip = format!("clips/{i}.mp4");
            store
                .insert_event(&event(cam, i * 1000, Some(&clip)), 4)
                .unwrap();
        }
        let got: Vec<i64> = store
            .recent_events(3)
            .unwrap()
            .iter()
            .map(|e| e.started_at_ms)
            .collect();
        assert_eq!(got, vec![9000, 7000, 5000]);
        // The fifth insert dropped the oldest (1000) with its clip; this one drops 3000.
        let dropped = store.insert_event(&event(cam, 8000, None), 4).unwrap();
        assert_eq!(dropped, vec!["clips/3.mp4".to_owned()]);
        let all: Vec<i64> = store
            .recent_events(50)
            .unwrap()
            .iter()
            .map(|e| e.started_at_ms)
            .collect();
        assert_eq!(all, vec![9000, 8000, 7000, 5000]);
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
    fn clips_move_through_their_states() {
        let dir = temp_dir("clips");
        let mut store = Store::open(&dir).unwrap();
        let cam = camera("c");
        store.insert_camera(&cam, 1).unwrap();
        let (old, new, bare) = (
            event(cam.id, 1, Some("a.mp4")),
            event(cam.id, 2, Some("b.mp4")),
            event(cam.id, 0, None),
        );
        for e in [&new, &old, &bare] {
            store.insert_event(e, 100).unwrap();
        }
        assert_eq!(
            store.next_clip_to_upload().unwrap(),
            Some((old.id, "a.mp4".into()))
        );
        assert!(store.move_clip(old.id, "local", "uploading").unwrap());
        assert!(
            !store.move_clip(old.id, "local", "uploading").unwrap(),
            "only from local"
        );
        assert_eq!(
            store.next_clip_to_upload().unwrap(),
            Some((new.id, "b.mp4".into()))
        );
        assert_eq!(store.reset_uploading().unwrap(), 1);
        assert!(store.move_clip(old.id, "local", "uploading").unwrap());
        assert!(store.move_clip(old.id, "uploading", "uploaded").unwrap());
        assert!(store.forget_clip(new.id).unwrap());
        assert_eq!(store.next_clip_to_upload().unwrap(), None);
        let (_, clips) = store.delete_camera(cam.id).unwrap().unwrap();
        assert_eq!(clips, vec!["a.mp4".to_owned()]);
        assert!(
            store.recent_events(50).unwrap().is_empty(),
            "a camera's events go with it"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn identity_round_trip() {
        let dir = temp_dir("identity");
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(store.identity().unwrap(), None);
        let identity = Identity {
            node_id: Uuid::new_v4().to_string(),
            secret: "s".into(),
            claimed: false,
        };
        store.set_identity(Some(&identity)).unwrap();
        let claimed = Identity {
            claimed: true,
            ..identity.clone()
        };
        store.set_identity(Some(&claimed)).unwrap();
        drop(store);
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(store.identity().unwrap(), Some(claimed.clone()));
        assert_eq!(store.node_id().unwrap(), Some(claimed.node_id));
        store.set_identity(None).unwrap();
        assert_eq!(store.identity().unwrap(), None);
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

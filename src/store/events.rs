//! Detection events and the upload state of their clips.

use rusqlite::{Connection, OptionalExtension, params};
use uuid::Uuid;

use super::{Result, Store, uuid_column};
use crate::event::Event;

impl Store {
    /// Adds an event and drops the oldest past `keep`; returns the dropped
    /// events' files (clips and thumbnails).
    pub fn insert_event(&mut self, event: &Event, keep: u64) -> Result<Vec<String>> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status,
                                clip_path, thumbnail_path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                event.id.to_string(),
                event.camera_id.to_string(),
                event.kind,
                event.score,
                event.started_at_ms,
                event.ended_at_ms,
                event.clip_status,
                event.clip_path,
                event.thumbnail_path,
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
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_EVENT} ORDER BY started_at_ms DESC, rowid DESC LIMIT ?1"
        ))?;
        stmt.query_map([limit], event_from_row)?.collect()
    }

    /// Each camera's newest event with a thumbnail: (camera, event).
    pub fn newest_thumbnails(&self) -> Result<Vec<(Uuid, Uuid)>> {
        // SQLite takes the bare columns from the row that has the MAX.
        let mut stmt = self.conn.prepare(
            "SELECT camera_id, id, MAX(started_at_ms) FROM event
             WHERE thumbnail_path IS NOT NULL GROUP BY camera_id",
        )?;
        stmt.query_map([], |r| Ok((uuid_column(r, 0)?, uuid_column(r, 1)?)))?
            .collect()
    }

    pub fn event(&self, id: Uuid) -> Result<Option<Event>> {
        self.conn
            .prepare_cached(&format!("{SELECT_EVENT} WHERE id = ?1"))?
            .query_row([id.to_string()], event_from_row)
            .optional()
    }

    /// Gives an event its clip and thumbnail (files relative to `DATA_DIR`);
    /// returns whether the event still exists.
    pub fn set_event_files(
        &self,
        id: Uuid,
        clip: Option<&str>,
        thumbnail: Option<&str>,
    ) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET clip_path = ?2, thumbnail_path = ?3 WHERE id = ?1",
            params![id.to_string(), clip, thumbnail],
        )?;
        Ok(n > 0)
    }
}

const SELECT_EVENT: &str = "SELECT id, camera_id, kind, score, started_at_ms, ended_at_ms, \
                            clip_status, clip_path, thumbnail_path FROM event";

fn event_from_row(r: &rusqlite::Row) -> Result<Event> {
    Ok(Event {
        id: uuid_column(r, 0)?,
        camera_id: uuid_column(r, 1)?,
        kind: r.get(2)?,
        score: r.get(3)?,
        started_at_ms: r.get(4)?,
        ended_at_ms: r.get(5)?,
        clip_status: r.get(6)?,
        clip_path: r.get(7)?,
        thumbnail_path: r.get(8)?,
    })
}

/// The files (clips and thumbnails) of the events matching `filter`.
pub(super) fn clip_paths(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT clip_path FROM event WHERE clip_path IS NOT NULL AND ({filter})
         UNION ALL SELECT thumbnail_path FROM event WHERE thumbnail_path IS NOT NULL AND ({filter})"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map(params, |r| r.get(0))?.collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{camera, temp_dir};
    use super::*;

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
            thumbnail_path: None,
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
}

//! Detection events, the upload state of their clips, and the bytes of
//! their files (clips and thumbnails), with the tombstones that make
//! deleting those files crash-safe: rows become tombstones in one
//! transaction, then the files are unlinked, then the tombstones dropped.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};
use uuid::Uuid;

use super::{Result, Store, uuid_column};
use crate::event::{Event, Kind, SeenObject};
use crate::media::area::Area;

/// An event with files, as the clips' retention weighs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFiles {
    pub id: Uuid,
    pub started_at_ms: i64,
    /// Its clip's and thumbnail's bytes.
    pub bytes: u64,
}

/// Which events a page of the list holds, besides the newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Started before this moment.
    pub before_ms: Option<i64>,
    /// Started at or after this moment.
    pub after_ms: Option<i64>,
    pub camera_id: Option<Uuid>,
    pub kind: Option<String>,
    pub reviewed: Option<bool>,
    pub keep: Option<bool>,
    /// Entered the zone of this name.
    pub zone: Option<String>,
}

/// What the status shows of the events as a whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventTallies {
    /// The events not reviewed, by camera (cameras with none left out).
    pub unreviewed: HashMap<Uuid, u64>,
    /// The bytes of kept events' clips and thumbnails.
    pub kept_bytes: u64,
}

/// What became of marking an event.
#[derive(Clone, Debug, PartialEq)]
pub enum Flagged {
    /// Marked (or already so): the event as it is now.
    Done(Event),
    NoSuchEvent,
    /// Keeping it would take the kept bytes past their budget: nothing changed.
    OverKeepBudget {
        kept_bytes: u64,
        event_bytes: u64,
    },
}

/// An event's file as written: the path (relative to `DATA_DIR`) and bytes.
pub type File<'a> = (&'a str, u64);

/// An event whose files' bytes are not known: (id, clip, thumbnail).
pub type Unmeasured = (Uuid, Option<String>, Option<String>);

impl Store {
    /// Adds an event, whose clip (a posted one) takes `clip_bytes`, and turns
    /// the oldest events not kept past the `cap` newest into tombstones;
    /// returns their files (clips and thumbnails) to unlink. Kept events do
    /// not count: their bytes have a budget of their own.
    pub fn insert_event(&mut self, event: &Event, clip_bytes: u64, cap: u64) -> Result<Dropped> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status,
                                clip_path, thumbnail_path, clip_bytes, thumbnail_bytes, zones,
                                in_progress, objects, loitering)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13, ?14)",
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
                clip_bytes as i64,
                serde_json::to_string(&event.zones).expect("names serialize"),
                event.in_progress,
                objects_column(&event.objects),
                event.loitering,
            ],
        )?;
        // The newest `cap` are found through the index; all older ones go.
        let cutoff: Option<(i64, i64)> = tx
            .query_row(
                "SELECT started_at_ms, rowid FROM event WHERE keep = 0
                 ORDER BY started_at_ms DESC, rowid DESC LIMIT 1 OFFSET ?1",
                [cap],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let mut dropped = Dropped::default();
        if let Some((at, rowid)) = cutoff {
            let older = "keep = 0 AND (started_at_ms < ?1 OR (started_at_ms = ?1 AND rowid <= ?2))";
            dropped = tombstone_events_where(&tx, older, params![at, rowid])?;
        }
        tx.commit()?;
        self.events_changed();
        Ok(dropped)
    }

    /// An event in progress as it stands now (its kind, score, latest
    /// moment and whether it still goes on); returns whether it is still
    /// there and was in progress.
    pub fn update_event(&self, event: &Event) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET kind = ?2, score = ?3, ended_at_ms = ?4, zones = ?5,
                              in_progress = ?6, objects = ?7, loitering = ?8
             WHERE id = ?1 AND in_progress = 1",
            params![
                event.id.to_string(),
                event.kind,
                event.score,
                event.ended_at_ms,
                serde_json::to_string(&event.zones).expect("names serialize"),
                event.in_progress,
                objects_column(&event.objects),
                event.loitering,
            ],
        )?;
        Ok(n > 0)
    }

    /// Ends the events left in progress (by a node that stopped or died
    /// while they went on), at their latest moment stored; returns them.
    pub fn end_events_in_progress(&self) -> Result<Vec<Event>> {
        let mut stmt = self
            .conn
            .prepare(&format!("{SELECT_EVENT} WHERE in_progress = 1"))?;
        let events: Vec<Event> = stmt.query_map([], event_from_row)?.collect::<Result<_>>()?;
        self.conn
            .execute("UPDATE event SET in_progress = 0 WHERE in_progress = 1", [])?;
        Ok(events
            .into_iter()
            .map(|e| Event {
                in_progress: false,
                ..e
            })
            .collect())
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
    pub fn forget_clip(&mut self, id: Uuid) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET clip_path = NULL, clip_bytes = 0, clip_status = 'local' WHERE id = ?1",
            [id.to_string()],
        )?;
        if n > 0 {
            self.events_changed();
        }
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
    #[cfg(test)]
    pub fn recent_events(&self, limit: u32) -> Result<Vec<Event>> {
        self.events(&EventFilter::default(), limit)
    }

    /// The `limit` most recent events that `filter` lets through, newest first.
    pub fn events(&self, filter: &EventFilter, limit: u32) -> Result<Vec<Event>> {
        let (filter, mut values) = where_clause(filter);
        values.push(Value::Integer(limit.into()));
        let sql = format!(
            "{SELECT_EVENT} {filter} ORDER BY started_at_ms DESC, rowid DESC LIMIT ?{}",
            values.len()
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        stmt.query_map(params_from_iter(values), event_from_row)?
            .collect()
    }

    /// Marks an event reviewed or not, and kept or not (`None`: as it is).
    /// Keeping it is refused when the kept events' bytes would pass `keep_budget`.
    pub fn mark_event(
        &mut self,
        id: Uuid,
        reviewed: Option<bool>,
        keep: Option<bool>,
        keep_budget: u64,
    ) -> Result<Flagged> {
        let tx = self.conn.transaction()?;
        let Some(event) = tx
            .prepare_cached(&format!("{SELECT_EVENT} WHERE id = ?1"))?
            .query_row([id.to_string()], event_from_row)
            .optional()?
        else {
            return Ok(Flagged::NoSuchEvent);
        };
        if keep == Some(true) && !event.keep {
            let event_bytes: i64 = tx.query_row(
                &format!("SELECT {BYTES} FROM event WHERE id = ?1"),
                [id.to_string()],
                |r| r.get(0),
            )?;
            let kept_bytes = kept_bytes(&tx)?;
            let event_bytes = event_bytes.max(0) as u64;
            if kept_bytes + event_bytes > keep_budget {
                return Ok(Flagged::OverKeepBudget {
                    kept_bytes,
                    event_bytes,
                });
            }
        }
        let event = Event {
            reviewed: reviewed.unwrap_or(event.reviewed),
            keep: keep.unwrap_or(event.keep),
            ..event
        };
        tx.execute(
            "UPDATE event SET reviewed = ?2, keep = ?3 WHERE id = ?1",
            params![id.to_string(), event.reviewed, event.keep],
        )?;
        tx.commit()?;
        self.events_changed();
        Ok(Flagged::Done(event))
    }

    /// Marks reviewed the events `filter` lets through (`dry_run`: none);
    /// returns those that were not reviewed before, newest first.
    pub fn mark_reviewed(&mut self, filter: &EventFilter, dry_run: bool) -> Result<Vec<Uuid>> {
        if filter.reviewed == Some(true) {
            return Ok(Vec::new());
        }
        // `reviewed = 0` in the query itself: SQLite then walks event_unreviewed.
        let filter = EventFilter {
            reviewed: Some(false),
            ..filter.clone()
        };
        let (terms, values) = where_clause(&filter);
        let sql = match dry_run {
            true => format!("SELECT id FROM event {terms} ORDER BY started_at_ms DESC"),
            false => format!("UPDATE event SET reviewed = 1 {terms} RETURNING id"),
        };
        let ids = self
            .conn
            .prepare(&sql)?
            .query_map(params_from_iter(values), |r| uuid_column(r, 0))?
            .collect::<Result<Vec<_>>>()?;
        if !dry_run && !ids.is_empty() {
            self.events_changed();
        }
        Ok(ids)
    }

    /// Marks the events `ids` not reviewed (an undo); returns how many were
    /// reviewed (ids of no event are passed over).
    pub fn unmark_reviewed(&mut self, ids: &[Uuid]) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        {
            let mut stmt =
                tx.prepare_cached("UPDATE event SET reviewed = 0 WHERE id = ?1 AND reviewed = 1")?;
            for id in ids {
                n += stmt.execute([id.to_string()])?;
            }
        }
        tx.commit()?;
        if n > 0 {
            self.events_changed();
        }
        Ok(n)
    }

    /// The events not reviewed by camera, and the bytes kept.
    pub fn event_tallies(&self) -> Result<Arc<EventTallies>> {
        if let Some(tallies) = self.event_tallies.borrow().as_ref() {
            return Ok(tallies.clone());
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT camera_id, events FROM unreviewed_tally WHERE events > 0")?;
        let unreviewed = stmt
            .query_map([], |r| {
                Ok((uuid_column(r, 0)?, r.get::<_, i64>(1)?.max(0) as u64))
            })?
            .collect::<Result<_>>()?;
        let tallies = Arc::new(EventTallies {
            unreviewed,
            kept_bytes: kept_bytes(&self.conn)?,
        });
        *self.event_tallies.borrow_mut() = Some(tallies.clone());
        Ok(tallies)
    }

    /// Changes with every write to events that may change their tallies.
    pub fn events_generation(&self) -> u64 {
        self.events_generation.get()
    }

    /// Forgets the tallies, after events were written.
    pub(super) fn events_changed(&self) {
        self.event_tallies.take();
        self.events_generation.set(self.events_generation.get() + 1);
    }

    /// Each camera's newest event with a thumbnail: (camera, event).
    pub fn newest_thumbnails(&self) -> Result<Vec<(Uuid, Uuid)>> {
        // Each camera's newest through event_thumbnail, not every event.
        let mut stmt = self.conn.prepare(
            "SELECT camera.id, (SELECT event.id FROM event
                                WHERE event.camera_id = camera.id
                                  AND event.thumbnail_path IS NOT NULL
                                ORDER BY event.started_at_ms DESC LIMIT 1) AS newest
             FROM camera WHERE newest IS NOT NULL",
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

    /// Gives an event its clip and thumbnail, each with its bytes; returns
    /// whether the event still exists.
    pub fn set_event_files(
        &mut self,
        id: Uuid,
        clip: Option<File>,
        thumbnail: Option<File>,
    ) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE event SET clip_path = ?2, clip_bytes = ?3, thumbnail_path = ?4,
                              thumbnail_bytes = ?5
             WHERE id = ?1",
            params![
                id.to_string(),
                clip.map(|c| c.0),
                clip.map_or(0, |c| c.1) as i64,
                thumbnail.map(|t| t.0),
                thumbnail.map_or(0, |t| t.1) as i64
            ],
        )?;
        if n > 0 {
            self.events_changed();
        }
        Ok(n > 0)
    }

    /// Up to `limit` events whose files' bytes are not known yet (they had
    /// files before the database counted bytes): (id, clip, thumbnail).
    pub fn unmeasured_events(&self, limit: usize) -> Result<Vec<Unmeasured>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, clip_path, thumbnail_path FROM event WHERE clip_bytes IS NULL LIMIT ?1",
        )?;
        stmt.query_map([limit as i64], |r| {
            Ok((uuid_column(r, 0)?, r.get(1)?, r.get(2)?))
        })?
        .collect()
    }

    /// Sets the bytes of an event's files, measured (see [`Store::unmeasured_events`]).
    pub fn measure_event(&self, id: Uuid, clip_bytes: u64, thumbnail_bytes: u64) -> Result<()> {
        let n = self.conn.execute(
            "UPDATE event SET clip_bytes = ?2, thumbnail_bytes = ?3
             WHERE id = ?1 AND clip_bytes IS NULL",
            params![id.to_string(), clip_bytes as i64, thumbnail_bytes as i64],
        )?;
        if n > 0 {
            self.events_changed();
        }
        Ok(())
    }

    /// The bytes of all events' clips and thumbnails.
    pub fn event_bytes(&self) -> Result<u64> {
        // Kept by SQLite on every write (schema 17): not a sum of every event.
        let total: i64 = self
            .conn
            .query_row("SELECT bytes FROM event_bytes_tally", [], |r| r.get(0))?;
        Ok(total.max(0) as u64)
    }

    /// Up to `limit` of the oldest events not kept that have files, oldest first.
    pub fn oldest_event_files(&self, limit: usize) -> Result<Vec<EventFiles>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, started_at_ms, COALESCE(clip_bytes, 0) + COALESCE(thumbnail_bytes, 0)
             FROM event WHERE keep = 0 AND (clip_path IS NOT NULL OR thumbnail_path IS NOT NULL)
             ORDER BY started_at_ms, rowid LIMIT ?1",
        )?;
        stmt.query_map([limit as i64], |r| {
            Ok(EventFiles {
                id: uuid_column(r, 0)?,
                started_at_ms: r.get(1)?,
                bytes: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })?
        .collect()
    }

    /// Deletes events not kept, turning their files into tombstones, in one
    /// transaction; returns those files and the bytes freed. (An event kept
    /// since it was chosen stays, with its files.)
    pub fn tombstone_events(&mut self, ids: &[Uuid]) -> Result<(Vec<String>, u64)> {
        let tx = self.conn.transaction()?;
        let (mut files, mut freed) = (Vec::new(), 0);
        for id in ids {
            let dropped = tombstone_events_where(&tx, UNKEPT_ID, [id.to_string()])?;
            files.extend(dropped.files);
            freed += dropped.bytes;
        }
        tx.commit()?;
        self.events_changed();
        Ok((files, freed))
    }

    /// Deletes the event unless it is kept, turning its files into
    /// tombstones; whether it was deleted.
    pub fn drop_event_unless_kept(&mut self, id: Uuid) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let dropped = tombstone_events_where(&tx, UNKEPT_ID, [id.to_string()])?;
        tx.commit()?;
        self.events_changed();
        Ok(dropped.events > 0)
    }

    /// Deletes the events not kept that started before `before_ms`, turning
    /// their files into tombstones; returns how many, and their bytes.
    pub fn tombstone_events_before(&mut self, before_ms: i64) -> Result<(u64, u64)> {
        let tx = self.conn.transaction()?;
        let dropped = tombstone_events_where(&tx, "keep = 0 AND started_at_ms < ?1", [before_ms])?;
        tx.commit()?;
        self.events_changed();
        Ok((dropped.events, dropped.bytes))
    }

    /// The files (clips and thumbnails) of events not kept.
    pub fn files_of_events(&self, ids: &[Uuid]) -> Result<Vec<String>> {
        let mut files = Vec::new();
        for id in ids {
            files.extend(clip_paths(&self.conn, UNKEPT_ID, [id.to_string()])?);
        }
        Ok(files)
    }

    /// Every file an event names (clips and thumbnails), and every file
    /// waiting under a tombstone.
    pub fn event_files(&self) -> Result<Vec<String>> {
        let mut files = clip_paths(&self.conn, "1", [])?;
        let mut stmt = self.conn.prepare("SELECT path FROM clip_garbage")?;
        for file in stmt.query_map([], |r| r.get(0))? {
            files.push(file?);
        }
        Ok(files)
    }
}

const SELECT_EVENT: &str = "SELECT id, camera_id, kind, score, started_at_ms, ended_at_ms, \
                            clip_status, clip_path, thumbnail_path, zones, in_progress, \
                            reviewed, keep, objects, loitering FROM event";

/// The event `?1` unless it is kept, as SQL: what any rule may delete.
const UNKEPT_ID: &str = "id = ?1 AND keep = 0";

/// An event's files' bytes, as SQL.
const BYTES: &str = "COALESCE(clip_bytes, 0) + COALESCE(thumbnail_bytes, 0)";

fn kept_bytes(conn: &Connection) -> Result<u64> {
    let bytes: i64 = conn.query_row(
        &format!("SELECT COALESCE(SUM({BYTES}), 0) FROM event WHERE keep = 1"),
        [],
        |r| r.get(0),
    )?;
    Ok(bytes.max(0) as u64)
}

/// The `WHERE` clause of `filter` (empty for none) and its values. The
/// flags are written in as 0 or 1: SQLite uses a partial index
/// (event_unreviewed, event_kept) only for a term it can read.
fn where_clause(filter: &EventFilter) -> (String, Vec<Value>) {
    let mut terms = Vec::new();
    let mut values = Vec::new();
    let mut bind = |term: &str, value: Value| {
        values.push(value);
        terms.push(term.replace('?', &format!("?{}", values.len())));
    };
    if let Some(before) = filter.before_ms {
        bind("started_at_ms < ?", Value::Integer(before));
    }
    if let Some(after) = filter.after_ms {
        bind("started_at_ms >= ?", Value::Integer(after));
    }
    if let Some(camera) = filter.camera_id {
        bind("camera_id = ?", Value::Text(camera.to_string()));
    }
    if let Some(kind) = &filter.kind {
        bind("kind = ?", Value::Text(kind.clone()));
    }
    // Zones are a compact JSON list on the event (this SQLite is built
    // without JSON functions): an element starts after `[` or `,`, which
    // inside a string are never followed by an unescaped `"`. Read along
    // the index that orders the page, until it is full (or `after` stops it).
    if let Some(zone) = &filter.zone {
        let name = serde_json::to_string(zone).expect("a string serializes");
        let term = "(instr(zones, '[' || ?) > 0 OR instr(zones, ',' || ?) > 0)";
        bind(term, Value::Text(name));
    }
    for (column, flag) in [("reviewed", filter.reviewed), ("keep", filter.keep)] {
        if let Some(flag) = flag {
            terms.push(format!("{column} = {}", u8::from(flag)));
        }
    }
    match terms.is_empty() {
        true => (String::new(), values),
        false => (format!("WHERE {}", terms.join(" AND ")), values),
    }
}

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
        // A value this version cannot read counts as no zones.
        zones: serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default(),
        in_progress: r.get(10)?,
        reviewed: r.get(11)?,
        keep: r.get(12)?,
        objects: objects_from_column(&r.get::<_, String>(13)?),
        loitering: r.get(14)?,
    })
}

/// An event's objects as its `objects` column holds them: a compact JSON
/// list of `{"kind", "score", "box": [l, t, r, b], "first", "last"}`.
fn objects_column(objects: &[SeenObject]) -> String {
    let objects: Vec<serde_json::Value> = objects
        .iter()
        .map(|o| {
            let a = o.area;
            serde_json::json!({
                "kind": o.kind.name(), "score": o.score,
                "box": [a.left, a.top, a.right, a.bottom],
                "first": o.first_seen_ms, "last": o.last_seen_ms,
            })
        })
        .collect();
    serde_json::Value::Array(objects).to_string()
}

/// The objects in an event's column; one this version cannot read (a
/// kind it does not know) is left out.
fn objects_from_column(text: &str) -> Vec<SeenObject> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str(text) else {
        return Vec::new();
    };
    let object = |o: &serde_json::Value| {
        let share = |i: usize| Some(o["box"].get(i)?.as_f64()? as f32);
        Some(SeenObject {
            kind: Kind::from_name(o["kind"].as_str()?)?,
            score: o["score"].as_f64()? as f32,
            area: Area::new(share(0)?, share(1)?, share(2)?, share(3)?),
            first_seen_ms: o["first"].as_i64()?,
            last_seen_ms: o["last"].as_i64()?,
        })
    };
    items.iter().filter_map(object).collect()
}

/// The files (clips and thumbnails) of the events matching `filter`.
fn clip_paths(
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

/// Deletes the events matching `filter`, their files moved to the
/// tombstones; returns those files and their bytes. The caller adjusts the
/// count of bytes once the transaction commits.
/// Events tombstoned together: their files, to unlink, and their bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    pub files: Vec<String>,
    pub events: u64,
    pub bytes: u64,
}

pub(super) fn tombstone_events_where(
    tx: &Transaction,
    filter: &str,
    params: impl rusqlite::Params + Clone,
) -> Result<Dropped> {
    let bytes: i64 = tx.query_row(
        &format!(
            "SELECT COALESCE(SUM(COALESCE(clip_bytes, 0) + COALESCE(thumbnail_bytes, 0)), 0)
             FROM event WHERE {filter}"
        ),
        params.clone(),
        |r| r.get(0),
    )?;
    let files = clip_paths(tx, filter, params.clone())?;
    for file in &files {
        tx.execute(
            "INSERT OR IGNORE INTO clip_garbage (path) VALUES (?1)",
            [file],
        )?;
    }
    let events = tx.execute(&format!("DELETE FROM event WHERE {filter}"), params)?;
    Ok(Dropped {
        files,
        events: events as u64,
        bytes: bytes.max(0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Tombstones::Clips;
    use super::super::test_support::{camera, event, temp_dir};
    use super::*;

    #[test]
    fn events_newest_first_kept_to_a_limit() {
        let dir = temp_dir("events");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        for i in [5_i64, 1, 9, 3, 7] {
            let clip = format!("clips/{i}.mp4");
            store
                .insert_event(&event(cam, i * 1000, Some(&clip)), 10, 4)
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
        let dropped = store.insert_event(&event(cam, 8000, None), 0, 4).unwrap();
        assert_eq!(
            dropped,
            Dropped {
                files: vec!["clips/3.mp4".to_owned()],
                events: 1,
                bytes: 10
            }
        );
        assert_eq!(
            store.event_bytes().unwrap(),
            30,
            "the dropped clips' bytes went"
        );
        let mut garbage = store.tombstones(Clips, 10).unwrap();
        garbage.sort();
        assert_eq!(garbage, ["clips/1.mp4", "clips/3.mp4"], "as tombstones");
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

    /// The events `filter` lets through, as their starts.
    fn starts(store: &Store, filter: EventFilter, limit: u32) -> Vec<i64> {
        let events = store.events(&filter, limit).unwrap();
        events.iter().map(|e| e.started_at_ms).collect()
    }

    #[test]
    fn events_page_and_filter() {
        let dir = temp_dir("event-filters");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        for i in 1..=6_i64 {
            let mut e = event(if i % 2 == 0 { a } else { b }, i * 1000, None);
            if i > 4 {
                e.kind = "vehicle".into();
            }
            if i % 3 == 0 {
                e.zones = vec!["Gate".into(), "Path".into()];
            }
            store.insert_event(&e, 0, 100).unwrap();
        }
        let newest = store.recent_events(1).unwrap()[0].id;
        assert!(matches!(
            store.mark_event(newest, Some(true), Some(true), 0).unwrap(),
            Flagged::Done(_)
        ));
        let table: [(EventFilter, u32, &[i64]); 13] = [
            (EventFilter::default(), 3, &[6000, 5000, 4000]),
            (
                EventFilter {
                    before_ms: Some(4000),
                    ..Default::default()
                },
                50,
                &[3000, 2000, 1000],
            ),
            (
                EventFilter {
                    camera_id: Some(a),
                    ..Default::default()
                },
                50,
                &[6000, 4000, 2000],
            ),
            (
                EventFilter {
                    camera_id: Some(a),
                    before_ms: Some(6000),
                    ..Default::default()
                },
                1,
                &[4000],
            ),
            (
                EventFilter {
                    kind: Some("vehicle".into()),
                    ..Default::default()
                },
                50,
                &[6000, 5000],
            ),
            (
                EventFilter {
                    reviewed: Some(true),
                    ..Default::default()
                },
                50,
                &[6000],
            ),
            (
                EventFilter {
                    reviewed: Some(false),
                    before_ms: Some(3000),
                    ..Default::default()
                },
                50,
                &[2000, 1000],
            ),
            (
                EventFilter {
                    keep: Some(true),
                    ..Default::default()
                },
                50,
                &[6000],
            ),
            (
                EventFilter {
                    keep: Some(false),
                    kind: Some("vehicle".into()),
                    camera_id: Some(b),
                    ..Default::default()
                },
                50,
                &[5000],
            ),
            (
                EventFilter {
                    after_ms: Some(3000),
                    before_ms: Some(5000),
                    ..Default::default()
                },
                50,
                &[4000, 3000],
            ),
            (
                EventFilter {
                    zone: Some("Path".into()),
                    ..Default::default()
                },
                50,
                &[6000, 3000],
            ),
            (
                EventFilter {
                    zone: Some("Pat".into()),
                    ..Default::default()
                },
                50,
                &[],
            ),
            (
                EventFilter {
                    zone: Some("Gate".into()),
                    before_ms: Some(6000),
                    ..Default::default()
                },
                50,
                &[3000],
            ),
        ];
        for (filter, limit, want) in table {
            assert_eq!(starts(&store, filter.clone(), limit), want, "{filter:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn each_filter_pages_through_an_index() {
        let dir = temp_dir("event-plans");
        let store = Store::open(&dir).unwrap();
        let filter = |before_ms, camera_id, kind: Option<&str>, reviewed, keep| EventFilter {
            before_ms,
            camera_id,
            kind: kind.map(str::to_owned),
            reviewed,
            keep,
            ..Default::default()
        };
        let cam = Some(Uuid::new_v4());
        let table = [
            (filter(Some(1), None, None, None, None), "event_started"),
            (
                filter(Some(1), cam, None, None, None),
                "event_camera_started",
            ),
            (
                filter(Some(1), None, Some("person"), None, None),
                "event_kind_started",
            ),
            (
                filter(Some(1), None, None, Some(false), None),
                "event_unreviewed",
            ),
            (filter(None, None, None, None, Some(true)), "event_kept"),
            (
                filter(Some(1), None, None, Some(true), Some(false)),
                "event_started",
            ),
            (
                EventFilter {
                    after_ms: Some(0),
                    zone: Some("Gate".into()),
                    ..filter(Some(1), None, None, None, None)
                },
                "event_started",
            ),
            (
                EventFilter {
                    after_ms: Some(0),
                    ..filter(Some(1), cam, None, None, None)
                },
                "event_camera_started",
            ),
        ];
        for (filter, index) in table {
            let (clause, values) = where_clause(&filter);
            let sql = format!(
                "EXPLAIN QUERY PLAN {SELECT_EVENT} {clause}
                 ORDER BY started_at_ms DESC, rowid DESC LIMIT 50"
            );
            let mut stmt = store.conn.prepare(&sql).unwrap();
            let plan: Vec<String> = stmt
                .query_map(params_from_iter(values), |r| r.get(3))
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            let plan = plan.join("; ");
            assert!(
                plan.contains(&format!("INDEX {index}")),
                "{filter:?}: {plan}"
            );
            // Only events that start at the same moment are sorted (by rowid).
            assert!(
                !plan.contains("TEMP B-TREE FOR ORDER BY"),
                "{filter:?} sorts: {plan}"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_are_marked_reviewed_and_counted() {
        let dir = temp_dir("event-reviewed");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut events: Vec<Event> = [(a, 1000), (a, 2000), (b, 1500), (b, 3000)]
            .into_iter()
            .map(|(cam, at)| event(cam, at, None))
            .collect();
        events[1].kind = "vehicle".into();
        for e in &events {
            store.insert_event(e, 0, 100).unwrap();
        }
        let unreviewed = |store: &Store| {
            let mut counts: Vec<(Uuid, u64)> = store
                .event_tallies()
                .unwrap()
                .unreviewed
                .iter()
                .map(|(c, n)| (*c, *n))
                .collect();
            counts.sort();
            counts
        };
        let mut both = vec![(a, 2), (b, 2)];
        both.sort();
        assert_eq!(unreviewed(&store), both, "false when made");
        let generation = store.events_generation();
        let Flagged::Done(marked) = store.mark_event(events[0].id, Some(true), None, 0).unwrap()
        else {
            panic!("marked");
        };
        assert!(marked.reviewed && !marked.keep);
        assert_eq!(store.event(events[0].id).unwrap(), Some(marked));
        assert_ne!(store.events_generation(), generation, "the status rebuilds");
        let mut after = vec![(a, 1), (b, 2)];
        after.sort();
        assert_eq!(unreviewed(&store), after);
        assert_eq!(
            store
                .mark_event(Uuid::new_v4(), Some(true), None, 0)
                .unwrap(),
            Flagged::NoSuchEvent
        );
        let before = |before_ms, camera_id, kind: Option<&str>| EventFilter {
            before_ms: Some(before_ms),
            camera_id,
            kind: kind.map(str::to_owned),
            ..EventFilter::default()
        };
        // Counted, not marked; then of camera b, before 3000: one; then the
        // vehicles; then all before 3001: b's other.
        let of_b = before(3000, Some(b), None);
        assert_eq!(store.mark_reviewed(&of_b, true).unwrap(), [events[2].id]);
        assert_eq!(unreviewed(&store), after, "a dry run marks nothing");
        assert_eq!(store.mark_reviewed(&of_b, false).unwrap(), [events[2].id]);
        let vehicles = before(3001, None, Some("vehicle"));
        assert_eq!(
            store.mark_reviewed(&vehicles, false).unwrap(),
            [events[1].id]
        );
        assert_eq!(unreviewed(&store), [(b, 1)], "the person's left");
        let reviewed = EventFilter {
            reviewed: Some(true),
            ..before(3001, None, None)
        };
        assert!(store.mark_reviewed(&reviewed, false).unwrap().is_empty());
        let all = before(3001, None, None);
        assert_eq!(store.mark_reviewed(&all, false).unwrap(), [events[3].id]);
        assert!(unreviewed(&store).is_empty());
        assert!(
            store.mark_reviewed(&all, false).unwrap().is_empty(),
            "none left"
        );
        // Undone by ids: only those marked, unknown ids passed over.
        let undo = [events[1].id, events[3].id, Uuid::new_v4()];
        assert_eq!(store.unmark_reviewed(&undo).unwrap(), 2);
        assert_eq!(store.unmark_reviewed(&undo).unwrap(), 0, "already");
        let mut undone = vec![(a, 1), (b, 1)];
        undone.sort();
        assert_eq!(unreviewed(&store), undone, "unmarked");
        let (terms, _) = where_clause(&EventFilter {
            reviewed: Some(false),
            ..all
        });
        let plan: String = store
            .conn
            .query_row(
                &format!("EXPLAIN QUERY PLAN UPDATE event SET reviewed = 1 {terms}"),
                [5],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("INDEX event_unreviewed"), "{plan}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn kept_events_outlive_every_rule_within_their_budget() {
        let dir = temp_dir("event-keep");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let (old, older, oldest) = (
            event(cam, 3_000, Some("clips/3.mp4")),
            event(cam, 2_000, Some("clips/2.mp4")),
            event(cam, 1_000, Some("clips/1.mp4")),
        );
        for e in [&old, &older, &oldest] {
            store.insert_event(e, 100, 10).unwrap();
        }
        // The budget: 150 bytes; one clip is 100.
        let keep = |store: &mut Store, e: &Event| store.mark_event(e.id, None, Some(true), 150);
        assert!(matches!(keep(&mut store, &oldest).unwrap(), Flagged::Done(e) if e.keep));
        assert_eq!(
            keep(&mut store, &older).unwrap(),
            Flagged::OverKeepBudget {
                kept_bytes: 100,
                event_bytes: 100
            },
            "past the budget"
        );
        assert!(
            !store.event(older.id).unwrap().unwrap().keep,
            "nothing changed"
        );
        assert!(
            matches!(keep(&mut store, &oldest).unwrap(), Flagged::Done(_)),
            "again"
        );
        assert_eq!(store.event_tallies().unwrap().kept_bytes, 100);

        // The clips' budget and reserve choose among the others only, and
        // cannot delete it when asked to.
        let chosen: Vec<Uuid> = store
            .oldest_event_files(10)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(chosen, [older.id, old.id]);
        let (files, bytes) = store.tombstone_events(&[oldest.id, older.id]).unwrap();
        assert_eq!((files, bytes), (vec!["clips/2.mp4".to_owned()], 100));
        assert!(store.files_of_events(&[oldest.id]).unwrap().is_empty());
        assert!(store.event(oldest.id).unwrap().is_some());
        // The event cap: two newer events with a cap of one leave the newest
        // and the kept one.
        let newer = event(cam, 4_000, None);
        let newest = event(cam, 5_000, None);
        store.insert_event(&newer, 0, 1).unwrap();
        store.insert_event(&newest, 0, 1).unwrap();
        let left: Vec<i64> = store
            .recent_events(10)
            .unwrap()
            .iter()
            .map(|e| e.started_at_ms)
            .collect();
        assert_eq!(left, [5_000, 1_000]);
        let mut garbage = store.tombstones(Clips, 10).unwrap();
        garbage.sort();
        assert_eq!(garbage, ["clips/2.mp4", "clips/3.mp4"]);
        // Unkept, it goes like any other.
        store.mark_event(oldest.id, None, Some(false), 150).unwrap();
        assert_eq!(store.event_tallies().unwrap().kept_bytes, 0);
        assert_eq!(store.tombstone_events(&[oldest.id]).unwrap().1, 100);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_event_that_stops_qualifying_goes_unless_kept() {
        let dir = temp_dir("event-unqualified");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let (plain, kept) = (event(cam, 1_000, None), event(cam, 2_000, None));
        for e in [&plain, &kept] {
            store.insert_event(e, 0, 10).unwrap();
        }
        store.mark_event(kept.id, None, Some(true), 1_000).unwrap();
        assert!(store.drop_event_unless_kept(plain.id).unwrap());
        assert!(!store.drop_event_unless_kept(kept.id).unwrap());
        assert!(store.event(plain.id).unwrap().is_none());
        assert!(store.event(kept.id).unwrap().is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_before_a_moment_go_but_kept_ones() {
        let dir = temp_dir("event-age");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let (old, kept, edge) = (
            event(cam, 1_000, Some("clips/1.mp4")),
            event(cam, 1_500, Some("clips/kept.mp4")),
            event(cam, 2_000, Some("clips/2.mp4")),
        );
        for e in [&old, &kept, &edge] {
            store.insert_event(e, 10, 100).unwrap();
        }
        store.mark_event(kept.id, None, Some(true), 100).unwrap();
        let unreviewed = |store: &Store| store.event_tallies().unwrap().unreviewed[&cam];
        assert_eq!(unreviewed(&store), 3);
        assert_eq!(store.tombstone_events_before(2_000).unwrap(), (1, 10));
        // Counted again, not the count kept from before (Home Assistant's sensor shows it).
        assert_eq!(unreviewed(&store), 2);
        let left: Vec<i64> = store
            .recent_events(10)
            .unwrap()
            .iter()
            .map(|e| e.started_at_ms)
            .collect();
        assert_eq!(left, [2_000, 1_500], "not before, and kept");
        assert_eq!(store.tombstones(Clips, 10).unwrap(), ["clips/1.mp4"]);
        assert_eq!(store.event_bytes().unwrap(), 20);
        assert_eq!(store.tombstone_events_before(2_000).unwrap(), (0, 0));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_keep_their_objects_and_loitering_as_they_are_updated() {
        let dir = temp_dir("event-objects");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let mut e = event(cam, 2_000, None);
        e.in_progress = true;
        store.insert_event(&e, 0, 100).unwrap();
        assert_eq!(store.event(e.id).unwrap().unwrap(), e, "none yet");
        let seen = |kind, left| SeenObject {
            kind,
            score: 0.75,
            area: Area::new(left, 0.25, left + 0.125, 0.875),
            first_seen_ms: 2_100,
            last_seen_ms: 2_900,
        };
        e.objects = vec![seen(Kind::Person, 0.5), seen(Kind::Vehicle, 0.0)];
        e.loitering = true;
        assert!(store.update_event(&e).unwrap());
        assert_eq!(store.event(e.id).unwrap().unwrap(), e);
        // A kind a later version knows is left out, not the event.
        store
            .conn
            .execute(
                "UPDATE event SET objects = replace(objects, 'vehicle', 'drone')",
                [],
            )
            .unwrap();
        let read = store.event(e.id).unwrap().unwrap();
        assert_eq!(read.objects, [seen(Kind::Person, 0.5)]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_keep_their_zones_and_older_ones_have_none() {
        let dir = temp_dir("event-zones");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let mut zoned = event(cam, 2_000, None);
        zoned.zones = vec!["Driveway".into(), "Door, back".into()];
        let bare = event(cam, 1_000, None);
        store.insert_event(&zoned, 0, 100).unwrap();
        store.insert_event(&bare, 0, 100).unwrap();
        // As version 8 left an event: the column's default.
        let old = event(cam, 500, None);
        store
            .conn
            .execute(
                "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms,
                                    clip_status)
                 VALUES (?1, ?2, 'motion', 0.5, 500, 1000, 'local')",
                params![old.id.to_string(), cam.to_string()],
            )
            .unwrap();
        let listed: Vec<Vec<String>> = store
            .recent_events(10)
            .unwrap()
            .into_iter()
            .map(|e| e.zones)
            .collect();
        assert_eq!(listed, [zoned.zones.clone(), vec![], vec![]]);
        assert_eq!(store.event(zoned.id).unwrap().unwrap(), zoned);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_event_in_progress_is_listed_then_ended() {
        let dir = temp_dir("in-progress");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let mut going = Event {
            kind: "motion".into(),
            in_progress: true,
            ..event(cam, 1000, None)
        };
        store.insert_event(&going, 0, 10).unwrap();
        assert_eq!(store.recent_events(5).unwrap(), vec![going.clone()]);
        going.kind = "person".into();
        going.ended_at_ms = 4000;
        assert!(store.update_event(&going).unwrap());
        assert_eq!(store.event(going.id).unwrap(), Some(going.clone()));
        // Ended by a node that stopped: at its latest moment, and no longer
        // to be updated.
        let ended = store.end_events_in_progress().unwrap();
        going.in_progress = false;
        assert_eq!(ended, vec![going.clone()]);
        assert_eq!(store.event(going.id).unwrap(), Some(going.clone()));
        assert!(!store.update_event(&going).unwrap());
        assert!(store.end_events_in_progress().unwrap().is_empty());
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
            store.insert_event(e, 7, 100).unwrap();
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
        assert_eq!(store.event_bytes().unwrap(), 21);
        assert!(store.forget_clip(new.id).unwrap());
        assert_eq!(
            store.event_bytes().unwrap(),
            14,
            "a forgotten clip's bytes go"
        );
        assert_eq!(store.next_clip_to_upload().unwrap(), None);
        let (_, clips) = store.delete_camera(cam.id).unwrap().unwrap();
        assert_eq!(clips, vec!["a.mp4".to_owned()]);
        assert_eq!(store.tombstones(Clips, 10).unwrap(), ["a.mp4"]);
        assert_eq!(store.event_bytes().unwrap(), 0);
        assert!(
            store.recent_events(50).unwrap().is_empty(),
            "a camera's events go with it"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_files_are_counted_and_deleted_through_tombstones() {
        let dir = temp_dir("event-files");
        let mut store = Store::open(&dir).unwrap();
        let cam = Uuid::new_v4();
        let (a, b, c, bare) = (
            event(cam, 3_000, None),
            event(cam, 1_000, None),
            event(cam, 2_000, Some("clips/posted.mp4")),
            event(cam, 500, None),
        );
        for (e, bytes) in [(&a, 0), (&b, 0), (&c, 40), (&bare, 0)] {
            store.insert_event(e, bytes, 100).unwrap();
        }
        assert_eq!(store.event_bytes().unwrap(), 40);
        assert!(
            store
                .set_event_files(
                    a.id,
                    Some(("clips/x/a.mp4", 100)),
                    Some(("clips/x/a.jpg", 5))
                )
                .unwrap()
        );
        assert!(
            store
                .set_event_files(b.id, Some(("clips/x/b.mp4", 200)), None)
                .unwrap()
        );
        assert!(
            !store
                .set_event_files(Uuid::new_v4(), Some(("clips/x/z.mp4", 1)), None)
                .unwrap(),
            "an event that is gone"
        );
        assert_eq!(store.event_bytes().unwrap(), 345);
        // Cutting a clip again replaces its bytes.
        store
            .set_event_files(b.id, Some(("clips/x/b.mp4", 150)), None)
            .unwrap();
        assert_eq!(store.event_bytes().unwrap(), 295);
        let oldest: Vec<(i64, u64)> = store
            .oldest_event_files(10)
            .unwrap()
            .iter()
            .map(|e| (e.started_at_ms, e.bytes))
            .collect();
        assert_eq!(
            oldest,
            [(1_000, 150), (2_000, 40), (3_000, 105)],
            "oldest first, only events with files"
        );
        assert_eq!(store.oldest_event_files(1).unwrap()[0].id, b.id);

        assert_eq!(store.tombstone_events(&[b.id, a.id]).unwrap().1, 255);
        assert_eq!(store.event_bytes().unwrap(), 40);
        assert!(store.event(a.id).unwrap().is_none(), "the event goes too");
        let mut garbage = store.tombstones(Clips, 10).unwrap();
        garbage.sort();
        assert_eq!(garbage, ["clips/x/a.jpg", "clips/x/a.mp4", "clips/x/b.mp4"]);
        let mut named = store.event_files().unwrap();
        named.sort();
        assert_eq!(
            named,
            [
                "clips/posted.mp4",
                "clips/x/a.jpg",
                "clips/x/a.mp4",
                "clips/x/b.mp4"
            ],
            "files named by events and by tombstones"
        );
        store.forget_tombstones(Clips, &garbage[..2]).unwrap();
        assert_eq!(store.tombstones(Clips, 10).unwrap(), ["clips/x/b.mp4"]);
        drop(store);
        // The count survives a reopen, read afresh.
        let store = Store::open(&dir).unwrap();
        assert_eq!(store.event_bytes().unwrap(), 40);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn events_from_before_version_5_are_measured_once() {
        let dir = temp_dir("event-upgrade");
        let store = Store::open(&dir).unwrap();
        drop(store);
        // As version 4 left them: no bytes, one event with files, one without.
        let conn = Connection::open(dir.join("nvr-node.db")).unwrap();
        let (with, without) = (Uuid::new_v4(), Uuid::new_v4());
        for (id, clip) in [(with, Some("clips/c/e.mp4")), (without, None)] {
            conn.execute(
                "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms,
                                    clip_status, clip_path, thumbnail_path)
                 VALUES (?1, 'c', 'motion', 0.5, 1, 2, 'local', ?2, NULL)",
                params![id.to_string(), clip],
            )
            .unwrap();
        }
        conn.execute_batch(
            "DROP TRIGGER event_bytes_insert; DROP TRIGGER event_bytes_delete;
             DROP TRIGGER event_bytes_update; DROP TABLE event_bytes_tally;
             DROP INDEX event_in_progress; DROP INDEX event_thumbnail;
             DROP TRIGGER unreviewed_tally_insert; DROP TRIGGER unreviewed_tally_delete;
             DROP TRIGGER unreviewed_tally_update; DROP TABLE unreviewed_tally;
             UPDATE event SET clip_bytes = NULL, thumbnail_bytes = NULL;
             DROP TABLE clip_garbage; DROP TABLE camera_garbage; PRAGMA user_version = 4;
             ALTER TABLE event DROP COLUMN clip_bytes; ALTER TABLE event DROP COLUMN thumbnail_bytes;
             ALTER TABLE camera DROP COLUMN classify; ALTER TABLE camera DROP COLUMN kinds;
             ALTER TABLE camera DROP COLUMN onvif_endpoint;
             ALTER TABLE camera DROP COLUMN onvif_address;
             ALTER TABLE camera DROP COLUMN motion_masks; ALTER TABLE camera DROP COLUMN zones;
             ALTER TABLE camera DROP COLUMN auto_mask; ALTER TABLE event DROP COLUMN zones;
             ALTER TABLE event DROP COLUMN in_progress; DROP TABLE busy_cells;
             ALTER TABLE camera DROP COLUMN onvif_mac; ALTER TABLE camera DROP COLUMN onvif_serial;
             DROP INDEX event_kind_started; DROP INDEX event_unreviewed; DROP INDEX event_kept;
             ALTER TABLE event DROP COLUMN reviewed; ALTER TABLE event DROP COLUMN keep;
             ALTER TABLE camera DROP COLUMN retain_days; ALTER TABLE camera DROP COLUMN full_rate;
             ALTER TABLE camera DROP COLUMN motion_source;
             ALTER TABLE event DROP COLUMN objects; ALTER TABLE event DROP COLUMN loitering;
             DROP TABLE alert_destination; DROP TABLE alert_outbox; DROP TABLE alert_snooze;",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&dir).unwrap();
        let unmeasured = store.unmeasured_events(10).unwrap();
        assert_eq!(unmeasured, [(with, Some("clips/c/e.mp4".into()), None)]);
        assert_eq!(store.event_bytes().unwrap(), 0);
        store.measure_event(with, 1_000, 0).unwrap();
        store.measure_event(with, 5, 0).unwrap();
        assert_eq!(store.event_bytes().unwrap(), 1_000, "measured once");
        assert!(store.unmeasured_events(10).unwrap().is_empty());
        let tallied: i64 = store
            .conn
            .query_row(
                "SELECT events FROM unreviewed_tally WHERE camera_id = 'c'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tallied, 2, "counted at the upgrade: both not reviewed");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn each_cameras_newest_thumbnail_is_found() {
        let dir = temp_dir("event-thumbnails");
        let mut store = Store::open(&dir).unwrap();
        let (a, b, none) = (camera("a"), camera("b"), camera("none"));
        for c in [&a, &b, &none] {
            store.insert_camera(c, 0).unwrap();
        }
        let with = |c: Uuid, at: i64, thumbnail: bool| Event {
            thumbnail_path: thumbnail.then(|| format!("clips/{c}/{at}.jpg")),
            ..event(c, at, None)
        };
        // a's newest has none: the one before it is a's.
        let events = [
            with(a.id, 1_000, true),
            with(a.id, 2_000, true),
            with(a.id, 3_000, false),
            with(b.id, 1_500, true),
            with(none.id, 4_000, false),
        ];
        for e in &events {
            store.insert_event(e, 0, 100).unwrap();
        }
        let mut newest = store.newest_thumbnails().unwrap();
        newest.sort();
        let mut expected = vec![(a.id, events[1].id), (b.id, events[3].id)];
        expected.sort();
        assert_eq!(newest, expected);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The tally SQLite keeps, against a count of the events themselves.
    fn assert_tallied(store: &Store, after: &str) {
        let mut counted: Vec<(Uuid, u64)> = store
            .conn
            .prepare("SELECT camera_id, COUNT(*) FROM event WHERE reviewed = 0 GROUP BY camera_id")
            .unwrap()
            .query_map([], |r| Ok((uuid_column(r, 0)?, r.get::<_, i64>(1)? as u64)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        counted.sort();
        let mut tallied: Vec<(Uuid, u64)> = store
            .event_tallies()
            .unwrap()
            .unreviewed
            .iter()
            .map(|(c, n)| (*c, *n))
            .collect();
        tallied.sort();
        assert_eq!(tallied, counted, "after {after}");
        let (summed, kept): (i64, i64) = store
            .conn
            .query_row(
                "SELECT (SELECT COALESCE(SUM(COALESCE(clip_bytes, 0)
                                             + COALESCE(thumbnail_bytes, 0)), 0) FROM event),
                        (SELECT bytes FROM event_bytes_tally)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(kept, summed, "bytes after {after}");
    }

    #[test]
    fn the_tallies_of_events_not_reviewed_and_of_their_bytes_follow_every_write() {
        let dir = temp_dir("event-tally");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let events: Vec<Event> = (0..12)
            .map(|n| event(if n % 3 == 0 { b } else { a }, 1_000 * n, None))
            .collect();
        for (n, e) in (0..).zip(&events) {
            store.insert_event(e, 100 * n, 100).unwrap();
        }
        assert_tallied(&store, "inserts");
        store.forget_clip(events[4].id).unwrap();
        assert_tallied(&store, "a clip forgotten");
        store.mark_event(events[1].id, Some(true), None, 0).unwrap();
        store
            .mark_event(events[1].id, Some(true), Some(true), 0)
            .unwrap();
        assert_tallied(&store, "one marked, twice");
        let all_of_b = EventFilter {
            camera_id: Some(b),
            ..EventFilter::default()
        };
        store.mark_reviewed(&all_of_b, false).unwrap();
        assert_tallied(&store, "b's all marked");
        store
            .unmark_reviewed(&[events[0].id, events[1].id])
            .unwrap();
        assert_tallied(&store, "two unmarked");
        store
            .tombstone_events(&[events[2].id, events[3].id])
            .unwrap();
        assert_tallied(&store, "one of each deleted");
        store.tombstone_events_before(5_000).unwrap();
        assert_tallied(&store, "the oldest deleted");
        let mut changed = events[11].clone();
        changed.kind = "person".into();
        store.update_event(&changed).unwrap();
        assert_tallied(&store, "an event updated");
        store.delete_camera(a).unwrap();
        assert_tallied(&store, "a camera deleted");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

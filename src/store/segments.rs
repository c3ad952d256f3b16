//! Recorded segments: one row per closed file, and the tombstones that make
//! deleting them crash-safe (rows become tombstones in one transaction, then
//! the files are unlinked, then the tombstones dropped).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};
use uuid::Uuid;

use super::{Result, Store, uuid_column};
use crate::event::CLIP_MARGIN_MS;

/// A closed, indexed segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub camera_id: Uuid,
    /// Wall-clock start and end, milliseconds since the Unix epoch, UTC.
    pub start_ms: i64,
    pub end_ms: i64,
    pub bytes: u64,
    /// The file, relative to the recordings folder.
    pub path: String,
}

/// How far before the window's start a segment overlapping it may begin:
/// segments are about 10 s, and never near this long.
const LONGEST_SEGMENT_MS: i64 = 10 * 60 * 1000;

const SELECT_SEGMENT: &str = "SELECT camera_id, start_ms, end_ms, bytes, path FROM segment";

fn segment_from_row(r: &rusqlite::Row) -> Result<Segment> {
    Ok(Segment {
        camera_id: uuid_column(r, 0)?,
        start_ms: r.get(1)?,
        end_ms: r.get(2)?,
        bytes: r.get::<_, i64>(3)?.max(0) as u64,
        path: r.get(4)?,
    })
}

impl Store {
    /// Indexes a segment the camera's recorder just filed. Returns the start
    /// it was stored under (moved on by a millisecond or more if another
    /// segment of the camera starts at the same moment, as after the clock
    /// was set back), or None when the camera no longer exists. A segment
    /// already indexed under its path (reconciliation got there first) is
    /// not indexed twice.
    pub fn insert_segment(&self, segment: &Segment) -> Result<Option<i64>> {
        let camera = segment.camera_id.to_string();
        let exists: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM camera WHERE id = ?1)")?
            .query_row([&camera], |r| r.get(0))?;
        if !exists {
            return Ok(None);
        }
        self.insert_any_segment(segment).map(Some)
    }

    /// Indexes a segment found on disk without a row, whether or not its
    /// camera is known (its database may have been lost: the footage is
    /// kept, counted, and deleted by retention like any other). A file whose
    /// deletion is under way (a tombstone) is not indexed: None.
    pub fn insert_found_segment(&self, segment: &Segment) -> Result<Option<i64>> {
        let doomed: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM segment_garbage WHERE path = ?1)")?
            .query_row([&segment.path], |r| r.get(0))?;
        if doomed {
            return Ok(None);
        }
        self.insert_any_segment(segment).map(Some)
    }

    fn insert_any_segment(&self, segment: &Segment) -> Result<i64> {
        let camera = segment.camera_id.to_string();
        let mut start_ms = segment.start_ms;
        loop {
            let inserted = self
                .conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO segment (camera_id, start_ms, end_ms, bytes, path)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![
                    camera,
                    start_ms,
                    segment.end_ms.max(start_ms),
                    segment.bytes as i64,
                    segment.path
                ])?;
            if inserted == 1 {
                self.segments_added(segment.camera_id, segment.bytes);
                return Ok(start_ms);
            }
            let taken_by: String = self
                .conn
                .prepare_cached("SELECT path FROM segment WHERE camera_id = ?1 AND start_ms = ?2")?
                .query_row(params![camera, start_ms], |r| r.get(0))?;
            if taken_by == segment.path {
                return Ok(start_ms);
            }
            start_ms += 1;
        }
    }

    /// The camera's segments that overlap `[start_ms, end_ms)`, oldest first.
    pub fn segments_between(
        &self,
        camera: Uuid,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Segment>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SEGMENT} WHERE camera_id = ?1 AND start_ms >= ?2 AND start_ms < ?3
               AND end_ms > ?4 ORDER BY start_ms"
        ))?;
        stmt.query_map(
            params![
                camera.to_string(),
                start_ms.saturating_sub(LONGEST_SEGMENT_MS),
                end_ms,
                start_ms
            ],
            segment_from_row,
        )?
        .collect()
    }

    /// Up to `limit` of all cameras' segments that start after `after_ms`,
    /// oldest first: those timed ahead of a clock put right.
    pub fn segments_starting_after(&self, after_ms: i64, limit: usize) -> Result<Vec<Segment>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SEGMENT} WHERE start_ms > ?1 ORDER BY start_ms LIMIT ?2"
        ))?;
        stmt.query_map(params![after_ms, limit as i64], segment_from_row)?
            .collect()
    }

    /// Up to `limit` of the camera's segments that ended before `before_ms`,
    /// oldest first: those its retainDays deletes.
    pub fn segments_ended_before(
        &self,
        camera: Uuid,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<Segment>> {
        // start_ms bounds the search by the primary key (a segment ends
        // after it starts); end_ms decides.
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SEGMENT} WHERE camera_id = ?1 AND start_ms < ?2 AND end_ms < ?2
               ORDER BY start_ms LIMIT ?3"
        ))?;
        stmt.query_map(
            params![camera.to_string(), before_ms, limit as i64],
            segment_from_row,
        )?
        .collect()
    }

    /// The camera's newest segment.
    pub fn last_segment(&self, camera: Uuid) -> Result<Option<Segment>> {
        self.conn
            .prepare_cached(&format!(
                "{SELECT_SEGMENT} WHERE camera_id = ?1 ORDER BY start_ms DESC LIMIT 1"
            ))?
            .query_row([camera.to_string()], segment_from_row)
            .optional()
    }

    /// Where the newest segment of any camera ends (the newest by start,
    /// which the index finds at once: within a segment of the newest end).
    pub fn newest_segment_end(&self) -> Result<Option<i64>> {
        self.conn
            .prepare_cached("SELECT end_ms FROM segment ORDER BY start_ms DESC LIMIT 1")?
            .query_row([], |r| r.get(0))
            .optional()
    }

    /// Moves a segment's row to `to` (its file was moved there): false when
    /// it has no row any more.
    pub fn move_segment(&mut self, from: &Segment, to: &Segment) -> Result<bool> {
        let moved = self
            .conn
            .prepare_cached(
                "UPDATE segment SET start_ms = ?4, end_ms = ?5, path = ?6
                 WHERE camera_id = ?1 AND start_ms = ?2 AND path = ?3",
            )?
            .execute(params![
                from.camera_id.to_string(),
                from.start_ms,
                from.path,
                to.start_ms,
                to.end_ms,
                to.path
            ])?;
        Ok(moved == 1)
    }

    /// The files of the `limit` newest segments of any camera.
    pub fn newest_segment_paths(&self, limit: usize) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path FROM segment ORDER BY start_ms DESC LIMIT ?1")?;
        stmt.query_map([limit as i64], |r| r.get(0))?.collect()
    }

    /// The bytes of each camera's segments, counted once.
    fn bytes_by_camera(&self) -> Result<std::cell::RefMut<'_, HashMap<Uuid, u64>>> {
        let mut cached = self.segment_bytes.borrow_mut();
        if cached.is_none() {
            let mut stmt = self.conn.prepare(
                "SELECT camera_id, COALESCE(SUM(bytes), 0) FROM segment GROUP BY camera_id",
            )?;
            let counted = stmt
                .query_map([], |r| {
                    Ok((uuid_column(r, 0)?, r.get::<_, i64>(1)?.max(0) as u64))
                })?
                .collect::<Result<HashMap<_, _>>>()?;
            *cached = Some(counted);
        }
        Ok(std::cell::RefMut::map(cached, |c| {
            c.as_mut().expect("counted above")
        }))
    }

    /// The bytes of all segments.
    pub fn segment_bytes(&self) -> Result<u64> {
        Ok(self.bytes_by_camera()?.values().sum())
    }

    /// The bytes of the segments of cameras the node does not know: footage
    /// found on the disk after its database was lost.
    pub fn unclaimed_segment_bytes(&self) -> Result<u64> {
        let cameras = self.cameras()?;
        let known = |id: &Uuid| cameras.iter().any(|c| c.id == *id);
        Ok(self
            .bytes_by_camera()?
            .iter()
            .filter(|(id, _)| !known(id))
            .map(|(_, bytes)| bytes)
            .sum())
    }

    fn segments_added(&self, camera: Uuid, bytes: u64) {
        if let Some(counted) = self.segment_bytes.borrow_mut().as_mut() {
            *counted.entry(camera).or_default() += bytes;
        }
    }

    pub(super) fn segments_freed(&self, camera: Uuid, bytes: u64) {
        if let Some(counted) = self.segment_bytes.borrow_mut().as_mut()
            && let Some(total) = counted.get_mut(&camera)
        {
            *total = total.saturating_sub(bytes);
        }
    }

    /// A camera's segments are all gone.
    pub(super) fn segments_gone(&self, camera: Uuid) {
        if let Some(counted) = self.segment_bytes.borrow_mut().as_mut() {
            counted.remove(&camera);
        }
    }

    pub fn segment_count(&self) -> Result<u64> {
        let count: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM segment", [], |r| r.get(0))?;
        Ok(count.max(0) as u64)
    }

    /// The start of the oldest segment of any camera.
    pub fn oldest_segment_start(&self) -> Result<Option<i64>> {
        self.conn
            .prepare_cached("SELECT MIN(start_ms) FROM segment")?
            .query_row([], |r| r.get(0))
    }

    /// Up to `limit` of the oldest segments across cameras, in the order they
    /// should go: first those no event's clip still needs (an event without a
    /// clip yet, within [`CLIP_MARGIN_MS`]), oldest first; then the others.
    pub fn segments_to_delete(&self, limit: usize) -> Result<Vec<Segment>> {
        let needed = "EXISTS (SELECT 1 FROM event e
             WHERE e.camera_id = s.camera_id AND e.clip_path IS NULL
               AND e.started_at_ms <= s.end_ms + ?2 AND e.ended_at_ms >= s.start_ms - ?2)";
        let mut found = Vec::new();
        for wanted in ["NOT", ""] {
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT s.camera_id, s.start_ms, s.end_ms, s.bytes, s.path FROM segment s
                 WHERE {wanted} {needed} ORDER BY s.start_ms LIMIT ?1"
            ))?;
            let left = limit - found.len();
            found.extend(
                stmt.query_map(params![left as i64, CLIP_MARGIN_MS], segment_from_row)?
                    .collect::<Result<Vec<_>>>()?,
            );
            if found.len() >= limit {
                break;
            }
        }
        Ok(found)
    }

    /// Turns segments into tombstones, in one transaction: their rows go,
    /// their files are listed for [`Store::tombstones`]. Returns the bytes freed.
    pub fn tombstone_segments(&mut self, segments: &[Segment]) -> Result<u64> {
        let tx = self.conn.transaction()?;
        let mut freed = Vec::with_capacity(segments.len());
        for segment in segments {
            let camera = segment.camera_id.to_string();
            let bytes = tombstone_where(
                &tx,
                "camera_id = ?1 AND start_ms = ?2",
                params![camera, segment.start_ms],
            )?;
            freed.push((segment.camera_id, bytes));
        }
        tx.commit()?;
        for (camera, bytes) in &freed {
            self.segments_freed(*camera, *bytes);
        }
        Ok(freed.iter().map(|(_, bytes)| bytes).sum())
    }

    /// Drops the rows of segments whose files are gone (no tombstone: there
    /// is nothing left to unlink).
    pub fn forget_segments(&mut self, segments: &[Segment]) -> Result<()> {
        let tx = self.conn.transaction()?;
        let mut freed = Vec::with_capacity(segments.len());
        for segment in segments {
            let gone = tx.execute(
                "DELETE FROM segment WHERE camera_id = ?1 AND start_ms = ?2 AND path = ?3",
                params![
                    segment.camera_id.to_string(),
                    segment.start_ms,
                    segment.path
                ],
            )?;
            if gone > 0 {
                freed.push((segment.camera_id, segment.bytes));
            }
        }
        tx.commit()?;
        for (camera, bytes) in freed {
            self.segments_freed(camera, bytes);
        }
        Ok(())
    }

    /// Undoes [`Store::tombstone_segments`] for segments whose files could
    /// not be unlinked, in one transaction: their rows come back, their
    /// tombstones go. Footage still on the disk stays in the index.
    pub fn restore_segments(&mut self, segments: &[Segment]) -> Result<()> {
        let tx = self.conn.transaction()?;
        let mut added = Vec::with_capacity(segments.len());
        for segment in segments {
            tx.execute(
                "DELETE FROM segment_garbage WHERE path = ?1",
                [&segment.path],
            )?;
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO segment (camera_id, start_ms, end_ms, bytes, path)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    segment.camera_id.to_string(),
                    segment.start_ms,
                    segment.end_ms,
                    segment.bytes as i64,
                    segment.path
                ],
            )?;
            if inserted > 0 {
                added.push((segment.camera_id, segment.bytes));
            }
        }
        tx.commit()?;
        for (camera, bytes) in added {
            self.segments_added(camera, bytes);
        }
        Ok(())
    }

    /// The cameras deleted whose recordings folder may still hold files.
    pub fn deleted_cameras(&self) -> Result<Vec<Uuid>> {
        let mut stmt = self.conn.prepare_cached("SELECT id FROM camera_garbage")?;
        stmt.query_map([], |r| uuid_column(r, 0))?.collect()
    }

    /// A deleted camera's folder is gone.
    pub fn forget_deleted_camera(&self, id: Uuid) -> Result<()> {
        self.conn
            .execute("DELETE FROM camera_garbage WHERE id = ?1", [id.to_string()])?;
        Ok(())
    }

    /// The hours (start, in ms) in which the camera has segments.
    pub fn segment_hours(&self, camera: Uuid) -> Result<Vec<i64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT start_ms / 3600000 * 3600000 FROM segment WHERE camera_id = ?1",
        )?;
        stmt.query_map([camera.to_string()], |r| r.get(0))?
            .collect()
    }

    /// The cameras that have segments.
    pub fn cameras_with_segments(&self) -> Result<Vec<Uuid>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT camera_id FROM segment")?;
        stmt.query_map([], |r| uuid_column(r, 0))?.collect()
    }
}

/// Moves the segments matching `filter` to the tombstones; returns their bytes.
pub(super) fn tombstone_where(
    tx: &Transaction,
    filter: &str,
    params: impl rusqlite::Params + Clone,
) -> Result<u64> {
    let bytes: i64 = tx.query_row(
        &format!("SELECT COALESCE(SUM(bytes), 0) FROM segment WHERE {filter}"),
        params.clone(),
        |r| r.get(0),
    )?;
    tx.execute(
        &format!(
            "INSERT OR IGNORE INTO segment_garbage (path) SELECT path FROM segment WHERE {filter}"
        ),
        params.clone(),
    )?;
    tx.execute(&format!("DELETE FROM segment WHERE {filter}"), params)?;
    Ok(bytes.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::super::Tombstones::Segments;
    use super::super::test_support::{camera, event, temp_dir};
    use super::*;
    use crate::event::Event;

    fn segment(camera: Uuid, start_ms: i64, bytes: u64) -> Segment {
        Segment {
            camera_id: camera,
            start_ms,
            end_ms: start_ms + 10_000,
            bytes,
            path: format!("{camera}/{start_ms}.mp4"),
        }
    }

    #[test]
    fn segments_past_an_age_are_the_cameras_that_ended_before_it() {
        let dir = temp_dir("segments-age");
        let store = Store::open(&dir).unwrap();
        let (a, b) = (camera("a"), camera("b"));
        store.insert_camera(&a, 1).unwrap();
        store.insert_camera(&b, 2).unwrap();
        // a: [0, 10 s), [10 s, 20 s), [20 s, 30 s); b: [0, 10 s).
        for start in [20_000, 0, 10_000] {
            store.insert_segment(&segment(a.id, start, 100)).unwrap();
        }
        store.insert_segment(&segment(b.id, 0, 100)).unwrap();
        let table = [
            // camera, before, limit -> starts chosen
            (a.id, 0, 10, vec![], "none ended yet"),
            (
                a.id,
                10_000,
                10,
                vec![],
                "one ends at the moment: not before it",
            ),
            (a.id, 10_001, 10, vec![0], "one ended"),
            (a.id, 25_000, 10, vec![0, 10_000], "one still going on"),
            (
                a.id,
                100_000,
                10,
                vec![0, 10_000, 20_000],
                "all, oldest first",
            ),
            (
                a.id,
                100_000,
                2,
                vec![0, 10_000],
                "the oldest up to the limit",
            ),
            (b.id, 100_000, 10, vec![0], "only the camera's"),
            (Uuid::new_v4(), 100_000, 10, vec![], "no such camera"),
        ];
        for (camera, before, limit, want, why) in table {
            let starts: Vec<i64> = store
                .segments_ended_before(camera, before, limit)
                .unwrap()
                .iter()
                .map(|s| s.start_ms)
                .collect();
            assert_eq!(starts, want, "{why}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn segments_are_indexed_found_and_counted() {
        let dir = temp_dir("segments");
        let store = Store::open(&dir).unwrap();
        let (a, b) = (camera("a"), camera("b"));
        store.insert_camera(&a, 1).unwrap();
        store.insert_camera(&b, 2).unwrap();
        assert_eq!(store.segment_bytes().unwrap(), 0);
        for start in [0, 10_000, 20_000] {
            assert_eq!(
                store.insert_segment(&segment(a.id, start, 100)).unwrap(),
                Some(start)
            );
        }
        assert_eq!(
            store.insert_segment(&segment(b.id, 5_000, 50)).unwrap(),
            Some(5_000)
        );
        // A start already taken moves on by a millisecond.
        let mut again = segment(a.id, 10_000, 7);
        again.path = format!("{}/10000-again.mp4", a.id);
        assert_eq!(store.insert_segment(&again).unwrap(), Some(10_001));
        // The same file again (reconciliation got there first) is no new row.
        assert_eq!(store.insert_segment(&again).unwrap(), Some(10_001));
        assert_eq!(
            store.insert_found_segment(&segment(a.id, 0, 100)).unwrap(),
            Some(0)
        );
        // A camera that is gone gets nothing.
        assert_eq!(
            store
                .insert_segment(&segment(Uuid::new_v4(), 0, 1))
                .unwrap(),
            None
        );
        assert_eq!(store.segment_bytes().unwrap(), 357);
        assert_eq!(store.segment_count().unwrap(), 5);
        assert_eq!(store.oldest_segment_start().unwrap(), Some(0));
        let starts = |from, to| -> Vec<i64> {
            store
                .segments_between(a.id, from, to)
                .unwrap()
                .iter()
                .map(|s| s.start_ms)
                .collect()
        };
        assert_eq!(starts(0, 100_000), vec![0, 10_000, 10_001, 20_000]);
        // Overlapping the window counts, touching its end does not.
        assert_eq!(starts(15_000, 20_000), vec![10_000, 10_001]);
        assert_eq!(starts(30_000, 40_000), Vec::<i64>::new());
        assert_eq!(store.last_segment(a.id).unwrap().unwrap().start_ms, 20_000);
        assert_eq!(store.segment_hours(a.id).unwrap(), vec![0]);
        let mut cameras = store.cameras_with_segments().unwrap();
        cameras.sort();
        let mut want = vec![a.id, b.id];
        want.sort();
        assert_eq!(cameras, want);
        assert_eq!(store.unclaimed_segment_bytes().unwrap(), 0);
        // A file found without a row, of a camera the database does not
        // know (it was lost): indexed, counted, and shown as unclaimed.
        let lost = Uuid::new_v4();
        assert_eq!(
            store
                .insert_found_segment(&segment(lost, 30_000, 1000))
                .unwrap(),
            Some(30_000)
        );
        assert_eq!(store.segment_bytes().unwrap(), 1357);
        assert_eq!(store.unclaimed_segment_bytes().unwrap(), 1000);
        assert_eq!(
            store.newest_segment_paths(2).unwrap(),
            vec![format!("{lost}/30000.mp4"), format!("{}/20000.mp4", a.id)]
        );
        drop(store);
        // Counted afresh after a restart.
        let store = Store::open(&dir).unwrap();
        assert_eq!(store.segment_bytes().unwrap(), 1357);
        assert_eq!(store.unclaimed_segment_bytes().unwrap(), 1000);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn deletion_goes_oldest_first_and_through_tombstones() {
        let dir = temp_dir("retention");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (camera("a"), camera("b"));
        store.insert_camera(&a, 1).unwrap();
        store.insert_camera(&b, 2).unwrap();
        for (cam, start) in [
            (a.id, 0),
            (b.id, 5_000),
            (a.id, 10_000),
            (b.id, 15_000),
            (a.id, 60_000),
        ] {
            store.insert_segment(&segment(cam, start, 10)).unwrap();
        }
        // An event of camera a at 12 s, with no clip yet: its clip needs the
        // segments within 5 s of it (0 to 10 s ends at 10 s; 10 s to 20 s).
        let event = Event {
            kind: "motion".into(),
            ended_at_ms: 13_000,
            ..event(a.id, 12_000, None)
        };
        store.insert_event(&event, 0, 100).unwrap();
        let order: Vec<(bool, i64)> = store
            .segments_to_delete(10)
            .unwrap()
            .iter()
            .map(|s| (s.camera_id == a.id, s.start_ms))
            .collect();
        assert_eq!(
            order,
            vec![
                (false, 5_000),
                (false, 15_000),
                (true, 60_000),
                (true, 0),
                (true, 10_000)
            ],
            "unneeded first, oldest first; the event's segments last"
        );
        assert_eq!(store.segments_to_delete(2).unwrap().len(), 2);

        let doomed = store.segments_to_delete(2).unwrap();
        assert_eq!(store.tombstone_segments(&doomed).unwrap(), 20);
        assert_eq!(store.segment_bytes().unwrap(), 30);
        let mut garbage = store.tombstones(Segments, 10).unwrap();
        garbage.sort();
        let mut want: Vec<String> = doomed.iter().map(|s| s.path.clone()).collect();
        want.sort();
        assert_eq!(garbage, want);
        // A file being deleted is not indexed again when found.
        let doomed_file = Segment {
            path: garbage[0].clone(),
            ..segment(a.id, 90_000, 10)
        };
        assert_eq!(store.insert_found_segment(&doomed_file).unwrap(), None);
        // One file could not be unlinked: its row comes back, counted.
        let stayed = doomed[..1].to_vec();
        store.restore_segments(&stayed).unwrap();
        assert_eq!(store.segment_bytes().unwrap(), 40);
        assert_eq!(store.tombstones(Segments, 10).unwrap().len(), 1);
        assert_eq!(store.segments_to_delete(1).unwrap(), stayed);
        store.tombstone_segments(&stayed).unwrap();
        store.forget_tombstones(Segments, &garbage).unwrap();
        assert!(store.tombstones(Segments, 10).unwrap().is_empty());

        // Rows whose files are gone go without tombstones.
        let first = store.segments_between(a.id, 0, 1).unwrap();
        store.forget_segments(&first).unwrap();
        assert_eq!(store.segment_bytes().unwrap(), 20);
        assert!(store.tombstones(Segments, 10).unwrap().is_empty());

        // Deleting a camera turns all its segments into tombstones, and its
        // folder is to be emptied.
        assert!(store.deleted_cameras().unwrap().is_empty());
        store.delete_camera(a.id).unwrap().unwrap();
        assert_eq!(store.segment_count().unwrap(), 0);
        assert_eq!(store.segment_bytes().unwrap(), 0);
        assert_eq!(store.tombstones(Segments, 10).unwrap().len(), 2);
        assert_eq!(store.deleted_cameras().unwrap(), vec![a.id]);
        store.forget_deleted_camera(a.id).unwrap();
        assert!(store.deleted_cameras().unwrap().is_empty());
        drop(store);
        // The count survives a reopen, read afresh.
        let store = Store::open(&dir).unwrap();
        assert_eq!(store.segment_bytes().unwrap(), 0);
        assert_eq!(store.tombstones(Segments, 10).unwrap().len(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

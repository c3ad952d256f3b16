//! The areas each camera's motion detector learnt are always moving (leaves,
//! a date stamp), kept so that a restarted node or decoder leaves them out
//! at once rather than learning them again; the bytes are motion's.

use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{Result, Store};

impl Store {
    /// Keeps a camera's busy cells (None: it has none).
    pub fn set_busy_cells(&self, camera: Uuid, cells: Option<&[u8]>) -> Result<()> {
        match cells {
            Some(cells) => self.conn.execute(
                "INSERT INTO busy_cells (camera_id, cells) SELECT id, ?2 FROM camera WHERE id = ?1
                 ON CONFLICT (camera_id) DO UPDATE SET cells = excluded.cells",
                params![camera.to_string(), cells],
            )?,
            None => self.conn.execute(
                "DELETE FROM busy_cells WHERE camera_id = ?1",
                [camera.to_string()],
            )?,
        };
        Ok(())
    }

    pub fn busy_cells(&self, camera: Uuid) -> Result<Option<Vec<u8>>> {
        self.conn
            .query_row(
                "SELECT cells FROM busy_cells WHERE camera_id = ?1",
                [camera.to_string()],
                |r| r.get(0),
            )
            .optional()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{camera, temp_dir};
    use super::*;

    #[test]
    fn busy_cells_are_kept_per_camera_and_go_with_it() {
        let dir = temp_dir("busy");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (camera("a"), camera("b"));
        store.insert_camera(&a, 0).unwrap();
        store.insert_camera(&b, 0).unwrap();
        store.set_busy_cells(a.id, Some(&[1, 2, 3])).unwrap();
        store.set_busy_cells(a.id, Some(&[4, 5])).unwrap();
        store.set_busy_cells(b.id, Some(&[6])).unwrap();
        // Of no camera: nothing kept.
        store.set_busy_cells(Uuid::new_v4(), Some(&[7])).unwrap();
        assert_eq!(store.busy_cells(a.id).unwrap(), Some(vec![4, 5]));
        assert_eq!(store.busy_cells(b.id).unwrap(), Some(vec![6]));
        store.set_busy_cells(b.id, None).unwrap();
        assert_eq!(store.busy_cells(b.id).unwrap(), None);
        store.delete_camera(a.id).unwrap();
        assert_eq!(store.busy_cells(a.id).unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

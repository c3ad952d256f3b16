//! The tombstones of deleted footage: the files of rows deleted (segments,
//! events' clips and thumbnails) that are still to unlink. The rows become
//! tombstones in one transaction (in `segments.rs` and `events.rs`), then
//! the files are unlinked, then the tombstones dropped here.

use super::{Result, Store};

/// Whose tombstones: each has its own table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tombstones {
    /// Recorded segments', paths relative to the recordings folder.
    Segments,
    /// Events' clips' and thumbnails', paths relative to `DATA_DIR`.
    Clips,
}

impl Tombstones {
    fn table(self) -> &'static str {
        match self {
            Tombstones::Segments => "segment_garbage",
            Tombstones::Clips => "clip_garbage",
        }
    }
}

impl Store {
    /// Up to `limit` files of `whose` deleted rows still to unlink.
    pub fn tombstones(&self, whose: Tombstones, limit: usize) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT path FROM {} LIMIT ?1", whose.table()))?;
        stmt.query_map([limit as i64], |r| r.get(0))?.collect()
    }

    /// Drops the tombstones of files that are unlinked.
    pub fn forget_tombstones(&mut self, whose: Tombstones, paths: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        let sql = format!("DELETE FROM {} WHERE path = ?1", whose.table());
        for path in paths {
            tx.execute(&sql, [path])?;
        }
        tx.commit()
    }
}

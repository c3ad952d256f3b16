//! Recordings' use of storage, as status shows it, and what keeps the node
//! from recording or cleaning up as it should, in plain words.

/// The figures and the problem, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Storage {
    /// All indexed segments, those of unknown cameras included.
    pub used_bytes: u64,
    /// Of which footage of cameras the node does not know (found on the
    /// disk after its database was lost): kept, and deleted oldest first
    /// with the rest when room is needed.
    pub unclaimed_bytes: u64,
    pub budget_bytes: Option<u64>,
    /// The free space kept on the file system.
    pub reserve_bytes: u64,
    /// None until the file system could be read.
    pub free_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    pub oldest_ms: Option<i64>,
    /// What a user must know or do, when something keeps recordings from
    /// being made or cleaned up (the disk is missing, the database cannot
    /// be written); None when all is well.
    pub message: Option<String>,
    /// The last deletion of recordings, and the rule that made it.
    pub last_deletion: Option<Deletion>,
}

/// Segments one rule deleted in one pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub at_ms: i64,
    /// `RECORDINGS_MAX_BYTES`, `RECORDINGS_RESERVE` or `retainDays`.
    pub rule: &'static str,
    /// The camera whose retainDays it was; None for the other rules, which
    /// delete across cameras.
    pub camera_id: Option<uuid::Uuid>,
    pub segments: u64,
    pub bytes: u64,
}

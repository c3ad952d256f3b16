//! Detection events as stored: what a camera saw, when, and where its clip is.

use uuid::Uuid;

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: Uuid,
    pub camera_id: Uuid,
    pub kind: String,
    pub score: f64,
    /// Milliseconds since the Unix epoch, UTC.
    pub started_at_ms: i64,
    pub ended_at_ms: i64,
    pub clip_status: String,
}

/// `2026-11-22T10:04:05.123Z`: ISO 8601, UTC, milliseconds.
pub fn format_timestamp(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_timestamp(1_795_341_845_123),
            "2026-11-22T10:04:05.123Z"
        );
    }
}

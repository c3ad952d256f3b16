//! The node's one wall clock: what every timestamp it stores or shows is
//! read from (recordings, events, states).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in ms since the Unix epoch (UTC); 0 for a clock set before 1970.
pub fn now_ms() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    since_epoch.as_millis() as i64
}

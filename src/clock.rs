//! The node's one wall clock: what every timestamp it stores or shows is
//! read from (recordings, events, states). While the system's clock is not
//! set (`trust.rs`), its times run on from the newest the node knows of by
//! the monotonic clock.

use nvr_base::clock::trust;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::lock::lock;
pub use trust::Reading;
use trust::Trust;

/// The build's date (build.rs: `SOURCE_DATE_EPOCH`, or the source's last
/// commit), in seconds since the epoch: no clock reading before it is true.
const BUILT_S: &str = env!("NVR_BUILD_TIME");

struct Clock {
    origin: Instant,
    trust: Mutex<Trust>,
}

fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| Clock {
        origin: Instant::now(),
        trust: Mutex::new(Trust::new(
            BUILT_S.parse::<i64>().unwrap_or(0).saturating_mul(1000),
        )),
    })
}

/// Now, in ms since the Unix epoch (UTC), and whether the system's clock
/// is set.
pub fn read() -> Reading {
    let clock = clock();
    let mut trust = lock(&clock.trust);
    // Both read under the lock, so that readings are in order.
    let mono_ms = clock.origin.elapsed().as_millis() as i64;
    let wall_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let was_set = trust.is_set();
    let reading = trust.read(mono_ms, wall_ms);
    if was_set != trust.is_set() {
        match reading.unset {
            Some(_) => log::warn!(
                "the clock is not set (it says {}): times run on from {} until it is",
                rfc3339(wall_ms),
                rfc3339(reading.ms)
            ),
            None => log::info!("the clock is set: what was timed while it was not moves later"),
        }
    }
    reading
}

fn rfc3339(ms: i64) -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
}

/// Now, in ms since the Unix epoch (UTC).
pub fn now_ms() -> i64 {
    read().ms
}

/// Whether the system's clock is set, read now.
pub fn is_set() -> bool {
    read().unset.is_none()
}

/// No time earlier than `ms` is true: the newest footage ends there.
pub fn raise_floor(ms: i64) {
    lock(&clock().trust).raise_floor(ms);
}

/// How much later what was timed in the stretch `number` (of
/// [`Reading::unset`]) truly was, once the clock is set.
pub fn shift(number: usize) -> Option<i64> {
    lock(&clock().trust).shift(number)
}

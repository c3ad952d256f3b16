//! The node's one wall clock: what every timestamp it stores or shows is
//! read from (recordings, events, states). While the system's clock is not
//! believed (`trust.rs`: behind the newest the node knows of, or jumped
//! ahead without the kernel saying it is synchronised), its times run on by
//! the monotonic clock.

use nvr_base::clock::trust;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::lock::lock;
use crate::sys;
use trust::Trust;
pub use trust::{Doubt, Reading};

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
    let mono_ms = mono_ms(clock);
    let wall_ms = wall_ms();
    let was = trust.doubt();
    let ages_were_believed = trust.ages_believed(mono_ms);
    let lowered = trust.lowered().len();
    let reading = trust.read(mono_ms, wall_ms, sys::clock::synchronised);
    let (it_says, given) = (rfc3339(wall_ms), rfc3339(reading.ms));
    if trust.lowered().len() > lowered {
        log::warn!(
            "the clock is synchronised at {it_says}, behind the newest time the node knew of: \
             what was timed ahead of it moves back"
        );
    }
    if was.is_none() && trust.is_set() && ages_were_believed && !trust.ages_believed(mono_ms) {
        log::warn!(
            "the clock jumped ahead to {it_says}, synchronised: believed, but nothing is deleted by age \
             for {} minutes",
            trust::GRACE_MS / 60_000
        );
    }
    match (was, trust.doubt()) {
        (was, now) if was == now => {}
        (_, Some(Doubt::Behind)) => log::warn!(
            "the clock is not set (it says {it_says}): times run on from {given} until it is"
        ),
        (_, Some(Doubt::Ahead)) => log::warn!(
            "the clock jumped ahead (it says {it_says}) and is not synchronised: times run on from {given} \
             until it is, or has held for {} minutes; nothing is deleted by age meanwhile",
            trust::HOLD_MS / 60_000
        ),
        (Some(Doubt::AheadAtStart), None) if !trust.ages_believed(mono_ms) => log::info!(
            "the clock the node started with is believed ({it_says}): nothing is deleted by age for {} \
             minutes more",
            trust::GRACE_MS / 60_000
        ),
        (Some(Doubt::AheadAtStart), None) => {
            log::info!("the clock is believed ({it_says}): the age rules delete by it again")
        }
        (_, Some(Doubt::AheadAtStart)) => {}
        (_, None) if !trust.ages_believed(mono_ms) => log::info!(
            "the clock is believed ({it_says}) after a jump ahead: what was timed while it was not moves \
             by as much as it was off; nothing is deleted by age for {} minutes",
            trust::GRACE_MS / 60_000
        ),
        (_, None) => log::info!(
            "the clock is believed ({it_says}): what was timed while it was not moves by as much as it was off"
        ),
    }
    reading
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn mono_ms(clock: &Clock) -> i64 {
    clock.origin.elapsed().as_millis() as i64
}

fn rfc3339(ms: i64) -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
}

/// Now, in ms since the Unix epoch (UTC).
pub fn now_ms() -> i64 {
    read().ms
}

/// Why the system's clock is not believed, read now; None when it is.
pub fn doubt() -> Option<Doubt> {
    read();
    lock(&clock().trust).doubt()
}

/// Whether ages measured by the clock are believed now: it is, and it did
/// not just jump ahead (`trust::GRACE_MS`). The age rules delete nothing
/// otherwise.
pub fn ages_believed() -> bool {
    read();
    let clock = clock();
    lock(&clock.trust).ages_believed(mono_ms(clock))
}

/// At start-up: the newest footage ends at `newest_ms` (None: there is
/// none). No time earlier is true, and a clock more than a minute ahead of
/// it, not synchronised, is not believed for ages until it is, or has held
/// for `trust::HOLD_MS` (`Trust::start`).
pub fn start(newest_ms: Option<i64>) {
    let clock = clock();
    let mut trust = lock(&clock.trust);
    let wall_ms = wall_ms();
    trust.start(newest_ms, mono_ms(clock), wall_ms, sys::clock::synchronised);
    if trust.doubt() == Some(Doubt::AheadAtStart) {
        log::warn!(
            "the clock ({}) is more than a minute ahead of the newest recording and not synchronised: \
             recordings are timed by it, but nothing is deleted by age until it is synchronised or has \
             held for {} minutes",
            rfc3339(wall_ms),
            trust::HOLD_MS / 60_000
        );
    }
}

/// How much later what was timed in the stretch `number` (of
/// [`Reading::unset`]) truly was, once the clock is believed (earlier when
/// negative).
pub fn shift(number: usize) -> Option<i64> {
    lock(&clock().trust).shift(number)
}

/// For each time a synchronised clock was believed behind the newest time
/// the node knew of, in order: how much ahead what was timed before it was.
pub fn lowered() -> Vec<i64> {
    lock(&clock().trust).lowered().to_vec()
}

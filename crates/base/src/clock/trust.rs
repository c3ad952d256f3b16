//! Whether the wall clock can be trusted, with no clock of its own: both
//! clocks' readings are passed in, so it is unit-tested without waiting.
//!
//! A board without a real-time clock boots with the time of its last
//! shutdown, or 1970, and NTP sets it minutes later. A wall clock more than
//! [`TOLERANCE_MS`] before the floor (the build's date, the newest footage,
//! any time already given out) is not set: times then run on from the floor
//! by the monotonic clock. Once the wall clock reaches them (a forward jump:
//! the two clocks ran at the same rate since), it is set again, and what
//! was timed meanwhile is that much later.

/// How far behind the floor the wall clock may be and still be believed: a
/// segment's end can be a few seconds ahead of the moment it was reported
/// (a camera's clock drifting), and NTP slews or steps by less.
pub const TOLERANCE_MS: i64 = 10_000;

/// One reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// In ms since the epoch: the wall clock's, or run on from the floor.
    pub ms: i64,
    /// While the clock is not set, the number of the stretch it was not
    /// (see [`Trust::shift`]).
    pub unset: Option<usize>,
}

/// A stretch during which the clock was not set.
#[derive(Clone, Copy, Debug)]
struct Unset {
    number: usize,
    /// The monotonic reading when it began, and the time given out then.
    since_mono_ms: i64,
    at_ms: i64,
}

#[derive(Debug)]
pub struct Trust {
    /// No reading is believed that is earlier, less the tolerance.
    floor_ms: i64,
    unset: Option<Unset>,
    /// For each stretch that ended, by its number: how much later its
    /// times truly were.
    shifts: Vec<i64>,
}

impl Trust {
    pub fn new(floor_ms: i64) -> Trust {
        Trust {
            floor_ms,
            unset: None,
            shifts: Vec::new(),
        }
    }

    /// No time earlier than `ms` is believed (the newest footage ends there).
    /// Read at start-up, maybe after a first reading found the clock not
    /// set: its times then run on from here.
    pub fn raise_floor(&mut self, ms: i64) {
        self.floor_ms = self.floor_ms.max(ms);
        if let Some(unset) = &mut self.unset {
            unset.at_ms = unset.at_ms.max(ms);
        }
    }

    /// The time now, from the monotonic clock's reading (ms from any fixed
    /// origin) and the wall clock's (ms since the epoch).
    pub fn read(&mut self, mono_ms: i64, wall_ms: i64) -> Reading {
        let Some(unset) = self.unset else {
            if wall_ms < self.floor_ms.saturating_sub(TOLERANCE_MS) {
                let number = self.shifts.len();
                self.unset = Some(Unset {
                    number,
                    since_mono_ms: mono_ms,
                    at_ms: self.floor_ms,
                });
                return Reading {
                    ms: self.floor_ms,
                    unset: Some(number),
                };
            }
            self.floor_ms = self.floor_ms.max(wall_ms);
            return Reading {
                ms: wall_ms,
                unset: None,
            };
        };
        let ran_on = unset
            .at_ms
            .saturating_add(mono_ms.saturating_sub(unset.since_mono_ms).max(0));
        if wall_ms < ran_on {
            return Reading {
                ms: ran_on,
                unset: Some(unset.number),
            };
        }
        // Set: the stretch's times were this much early.
        self.shifts.push(wall_ms - ran_on);
        self.unset = None;
        self.floor_ms = wall_ms;
        Reading {
            ms: wall_ms,
            unset: None,
        }
    }

    /// Whether the clock is set, as of the last reading.
    pub fn is_set(&self) -> bool {
        self.unset.is_none()
    }

    /// How much later the times of stretch `number` truly were, once the
    /// clock was set after it; None while it goes on.
    pub fn shift(&self, number: usize) -> Option<i64> {
        self.shifts.get(number).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    /// 2026-11-27T00:00:00Z.
    const T: i64 = 1_795_737_600_000;

    fn set(ms: i64) -> Reading {
        Reading { ms, unset: None }
    }

    fn unset(ms: i64, number: usize) -> Reading {
        Reading {
            ms,
            unset: Some(number),
        }
    }

    #[test]
    fn a_clock_after_the_floor_is_believed() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T + 5), set(T + 5));
        // Behind what was given out by less than the tolerance: NTP's step.
        assert_eq!(trust.read(10, T), set(T));
        assert_eq!(
            trust.read(20, T + 5 - TOLERANCE_MS),
            set(T + 5 - TOLERANCE_MS)
        );
        assert!(trust.is_set());
    }

    #[test]
    fn a_clock_a_day_behind_runs_on_from_the_floor_until_it_is_set() {
        let mut trust = Trust::new(T - DAY);
        trust.raise_floor(T);
        // (monotonic, wall) -> reading
        let table = [
            (1_000, T - DAY, unset(T, 0)),
            (61_000, T - DAY + 60_000, unset(T + 60_000, 0)),
            // A jump that still leaves it behind: still not set.
            (71_000, T - 1_000, unset(T + 70_000, 0)),
            // Set: 5 minutes after the floor (the node was off 4 of them).
            (81_000, T + 300_000, set(T + 300_000)),
            (91_000, T + 310_000, set(T + 310_000)),
        ];
        for (mono, wall, want) in table {
            assert_eq!(trust.read(mono, wall), want, "{mono} {wall}");
        }
        assert_eq!(trust.shift(0), Some(300_000 - 80_000));
        assert!(trust.is_set());
    }

    #[test]
    fn a_clock_set_back_while_running_is_not_set_again_until_it_catches_up() {
        let mut trust = Trust::new(0);
        assert_eq!(trust.read(0, T), set(T));
        assert_eq!(trust.read(10_000, T - DAY), unset(T, 0));
        assert_eq!(trust.shift(0), None);
        // Set to about where it was: the stretch was not early at all.
        assert_eq!(trust.read(30_000, T + 20_000), set(T + 20_000));
        assert_eq!(trust.shift(0), Some(0));
        // And a second stretch has its own number.
        assert_eq!(trust.read(40_000, 0), unset(T + 20_000, 1));
        assert_eq!(trust.read(50_000, T + 5 * DAY), set(T + 5 * DAY));
        assert_eq!(trust.shift(1), Some(5 * DAY - 30_000));
        assert_eq!(trust.shift(0), Some(0));
    }

    #[test]
    fn the_newest_footage_read_after_a_first_reading_is_still_the_floor() {
        let mut trust = Trust::new(T - DAY);
        assert_eq!(trust.read(0, 0), unset(T - DAY, 0));
        trust.raise_floor(T);
        assert_eq!(trust.read(1_000, 1_000), unset(T + 1_000, 0));
    }

    #[test]
    fn a_monotonic_clock_read_out_of_order_never_runs_back() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(5_000, 0), unset(T, 0));
        assert_eq!(trust.read(4_000, 0), unset(T, 0));
    }
}

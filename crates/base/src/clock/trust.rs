//! Whether the wall clock can be trusted, with no clock of its own: both
//! clocks' readings, and whether the kernel says the wall clock is
//! synchronised, are passed in, so it is unit-tested without waiting.
//!
//! A board without a real-time clock boots with the time of its last
//! shutdown, or 1970, and NTP sets it minutes later. A wall clock more than
//! [`TOLERANCE_MS`] before the floor (the build's date, the newest footage,
//! any time already given out) is not set: times then run on from the floor
//! by the monotonic clock. Once the wall clock reaches them (a forward jump:
//! the two clocks ran at the same rate since), it is set again, and what
//! was timed meanwhile is that much later.
//!
//! A wall clock that jumps more than [`STEP_MS`] ahead of where the
//! monotonic clock says it should be (a bad RTC, a typo, a rogue time
//! server) is not believed either: times run on from before the jump until
//! the kernel says the clock is synchronised or the jump has held for
//! [`HOLD_MS`]; set back meanwhile, nothing was wrong. After a jump ahead
//! is believed, ages are not for [`GRACE_MS`]. A synchronised clock is
//! believed below the floor too: it lowers it, and what was timed after
//! it is ahead by as much ([`Trust::lowered`]).
//!
//! At start-up a jump cannot be told from the time the node was off: a
//! wall clock more than [`STEP_MS`] ahead of the newest footage, not
//! synchronised, times what is recorded (there is nothing better), but ages
//! are not believed until the kernel says it is synchronised or it has held
//! for [`HOLD_MS`], and [`GRACE_MS`] after ([`Trust::start`]).

/// How far behind the floor the wall clock may be and still be believed: a
/// segment's end can be a few seconds ahead of the moment it was reported
/// (a camera's clock drifting), and NTP slews or steps by less.
pub const TOLERANCE_MS: i64 = 10_000;

/// The largest jump ahead believed at once without the kernel saying the
/// clock is synchronised. The two clocks drift apart by milliseconds an
/// hour, and a synchronised clock's corrections are believed whatever their
/// size, so a larger jump is someone setting the clock; believed wrongly,
/// one this small takes a minute's footage off the age rules' oldest day.
pub const STEP_MS: i64 = 60_000;

/// How long a jump ahead the kernel does not call synchronised must hold
/// before it is believed: longer than the longest interval at which the
/// usual NTP clients ask again (systemd-timesyncd up to 34 minutes, chrony
/// and ntpd 17), so that one that is running puts a wrong jump right, or
/// says the clock is synchronised, first. Without one, nobody but the user
/// can, and an hour of recordings timed from before the jump (moved to the
/// new times once it is believed) costs little.
pub const HOLD_MS: i64 = 3_600_000;

/// How long after a jump ahead is believed ages are not (the age rules
/// delete nothing): a time server that just stepped the clock asks again
/// within a minute or two, and a wrong answer among good ones is put right
/// by the next few.
pub const GRACE_MS: i64 = 600_000;

/// One reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// In ms since the epoch: the wall clock's, or run on from the floor.
    pub ms: i64,
    /// While the clock is not believed, the number of the stretch it was
    /// not (see [`Trust::shift`]).
    pub unset: Option<usize>,
}

/// Why the wall clock is not believed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doubt {
    /// It is behind the floor: not set.
    Behind,
    /// It jumped ahead, and is neither synchronised nor held long enough.
    Ahead,
    /// It is believed, but not for ages: at start-up it was ahead of the
    /// newest footage, and is neither synchronised since nor held long
    /// enough.
    AheadAtStart,
}

/// A stretch during which the clock was not believed.
#[derive(Clone, Copy, Debug)]
struct Unset {
    number: usize,
    /// The monotonic reading when it began, and the time given out then.
    since_mono_ms: i64,
    at_ms: i64,
    /// Since when (monotonic) the wall clock is more than [`STEP_MS`]
    /// ahead of the times run on.
    ahead_since_mono_ms: Option<i64>,
}

#[derive(Debug)]
pub struct Trust {
    /// No reading is believed that is earlier, less the tolerance, unless
    /// the clock is synchronised.
    floor_ms: i64,
    unset: Option<Unset>,
    /// For each stretch that ended, by its number: how much later its
    /// times truly were (earlier when negative).
    shifts: Vec<i64>,
    /// The last reading believed: monotonic, and the time given out.
    last: Option<(i64, i64)>,
    /// When (monotonic) a jump ahead was last believed.
    stepped_mono_ms: Option<i64>,
    /// For each time a synchronised clock lowered the floor: how much
    /// ahead what was timed before was.
    lowered: Vec<i64>,
    /// When (monotonic) the node started with the clock ahead of the newest
    /// footage, not synchronised, while ages wait for it.
    started_ahead_mono_ms: Option<i64>,
}

impl Trust {
    pub fn new(floor_ms: i64) -> Trust {
        Trust {
            floor_ms,
            unset: None,
            shifts: Vec::new(),
            last: None,
            stepped_mono_ms: None,
            lowered: Vec::new(),
            started_ahead_mono_ms: None,
        }
    }

    /// At start-up: the newest footage ends at `newest_ms` (None: there is
    /// none), read at the monotonic `mono_ms` with the wall clock at
    /// `wall_ms`. No time earlier than it is believed; and a wall clock more
    /// than [`STEP_MS`] ahead of it that the kernel does not call
    /// synchronised may be an RTC gone wrong: ages wait for it.
    pub fn start(
        &mut self,
        newest_ms: Option<i64>,
        mono_ms: i64,
        wall_ms: i64,
        synced: impl FnOnce() -> bool,
    ) {
        let Some(newest_ms) = newest_ms else {
            return;
        };
        self.raise_floor(newest_ms);
        if wall_ms > newest_ms.saturating_add(STEP_MS) && !synced() {
            self.started_ahead_mono_ms = Some(mono_ms);
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
    /// origin), the wall clock's (ms since the epoch), and whether the
    /// kernel says the wall clock is synchronised (asked only when it
    /// decides).
    pub fn read(&mut self, mono_ms: i64, wall_ms: i64, synced: impl FnOnce() -> bool) -> Reading {
        // Asked at most once, by whichever decides first.
        let (mut synced, mut answer) = (Some(synced), None);
        let mut synced = move || *answer.get_or_insert_with(|| synced.take().is_some_and(|f| f()));
        let lowered = self.lowered.len();
        let reading = match self.unset {
            None => self.read_believed(mono_ms, wall_ms, &mut synced),
            Some(unset) => self.read_unset(unset, mono_ms, wall_ms, &mut synced),
        };
        if let Some(since) = self.started_ahead_mono_ms {
            if self.lowered.len() > lowered {
                // A synchronised clock behind it: the start-up time was
                // wrong, and ages by the true one are smaller, not larger.
                self.started_ahead_mono_ms = None;
            } else if reading.unset.is_none()
                && (mono_ms.saturating_sub(since) >= HOLD_MS || synced())
            {
                self.started_ahead_mono_ms = None;
                self.stepped_mono_ms = Some(mono_ms);
            }
        }
        reading
    }

    fn read_believed(
        &mut self,
        mono_ms: i64,
        wall_ms: i64,
        synced: impl FnOnce() -> bool,
    ) -> Reading {
        // Where the wall clock should be, run on from the last reading.
        let expected = self
            .last
            .map(|(mono, ms)| ms.saturating_add(mono_ms.saturating_sub(mono).max(0)));
        let behind = wall_ms < self.floor_ms.saturating_sub(TOLERANCE_MS);
        let ahead = expected.filter(|e| wall_ms > e.saturating_add(STEP_MS));
        if behind || ahead.is_some() {
            if synced() {
                if behind {
                    let given = expected.map_or(self.floor_ms, |e| e.max(self.floor_ms));
                    self.lowered.push(given - wall_ms);
                    self.floor_ms = wall_ms;
                } else {
                    self.stepped_mono_ms = Some(mono_ms);
                }
            } else {
                let number = self.shifts.len();
                let at_ms = ahead.map_or(self.floor_ms, |_| {
                    expected.expect("ahead of what was expected")
                });
                self.unset = Some(Unset {
                    number,
                    since_mono_ms: mono_ms,
                    at_ms,
                    ahead_since_mono_ms: ahead.map(|_| mono_ms),
                });
                return Reading {
                    ms: at_ms,
                    unset: Some(number),
                };
            }
        }
        self.believe(mono_ms, wall_ms)
    }

    fn read_unset(
        &mut self,
        unset: Unset,
        mono_ms: i64,
        wall_ms: i64,
        synced: impl FnOnce() -> bool,
    ) -> Reading {
        let ran_on = unset
            .at_ms
            .saturating_add(mono_ms.saturating_sub(unset.since_mono_ms).max(0));
        let still = Reading {
            ms: ran_on,
            unset: Some(unset.number),
        };
        if wall_ms > ran_on.saturating_add(STEP_MS) {
            let since = unset.ahead_since_mono_ms.unwrap_or(mono_ms);
            if let Some(unset) = &mut self.unset {
                unset.ahead_since_mono_ms = Some(since);
            }
            if mono_ms.saturating_sub(since) < HOLD_MS && !synced() {
                return still;
            }
            self.stepped_mono_ms = Some(mono_ms);
        } else if wall_ms < ran_on {
            if let Some(unset) = &mut self.unset {
                unset.ahead_since_mono_ms = None;
            }
            if !synced() {
                return still;
            }
            // Synchronised: the floor was ahead, and so was what was timed
            // before it.
            if ran_on - wall_ms > TOLERANCE_MS {
                self.lowered.push(ran_on - wall_ms);
            }
            self.floor_ms = wall_ms;
        }
        // Believed: the stretch's times were this much early (late when
        // negative).
        self.shifts.push(wall_ms - ran_on);
        self.unset = None;
        self.believe(mono_ms, wall_ms)
    }

    fn believe(&mut self, mono_ms: i64, wall_ms: i64) -> Reading {
        self.floor_ms = self.floor_ms.max(wall_ms);
        self.last = Some((mono_ms, wall_ms));
        Reading {
            ms: wall_ms,
            unset: None,
        }
    }

    /// Whether the clock is believed, as of the last reading.
    pub fn is_set(&self) -> bool {
        self.unset.is_none()
    }

    /// Why the clock, or ages by it, are not believed, as of the last
    /// reading.
    pub fn doubt(&self) -> Option<Doubt> {
        let Some(unset) = self.unset.as_ref() else {
            return self.started_ahead_mono_ms.map(|_| Doubt::AheadAtStart);
        };
        Some(match unset.ahead_since_mono_ms {
            Some(_) => Doubt::Ahead,
            None => Doubt::Behind,
        })
    }

    /// Whether ages measured by the clock are believed at the monotonic
    /// reading `mono_ms`: the clock is, it was not ahead at start-up
    /// ([`Trust::start`]), and no jump ahead was believed in the last
    /// [`GRACE_MS`].
    pub fn ages_believed(&self, mono_ms: i64) -> bool {
        self.is_set()
            && self.started_ahead_mono_ms.is_none()
            && self
                .stepped_mono_ms
                .is_none_or(|stepped| mono_ms.saturating_sub(stepped) >= GRACE_MS)
    }

    /// How much later the times of stretch `number` truly were, once the
    /// clock was believed after it (earlier when negative); None while it
    /// goes on.
    pub fn shift(&self, number: usize) -> Option<i64> {
        self.shifts.get(number).copied()
    }

    /// For each time a synchronised clock lowered the floor, in order: how
    /// much ahead the times given out before were.
    pub fn lowered(&self) -> &[i64] {
        &self.lowered
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
        assert_eq!(trust.read(0, T + 5, || false), set(T + 5));
        // Behind what was given out by less than the tolerance: NTP's step.
        assert_eq!(trust.read(10, T, || false), set(T));
        assert_eq!(
            trust.read(20, T + 5 - TOLERANCE_MS, || false),
            set(T + 5 - TOLERANCE_MS)
        );
        assert!(trust.is_set());
    }

    #[test]
    fn a_clock_a_day_behind_runs_on_from_the_floor_until_it_is_set() {
        let mut trust = Trust::new(T - DAY);
        trust.raise_floor(T);
        // (monotonic, wall, synchronised) -> reading
        let table = [
            (1_000, T - DAY, false, unset(T, 0)),
            (61_000, T - DAY + 60_000, false, unset(T + 60_000, 0)),
            // A jump that still leaves it behind: still not set.
            (71_000, T - 1_000, false, unset(T + 70_000, 0)),
            // Minutes ahead, but not synchronised: not believed yet.
            (76_000, T + 300_000, false, unset(T + 75_000, 0)),
            // NTP set it: 5 minutes after the floor (the node was off 4 of them).
            (81_000, T + 300_000, true, set(T + 300_000)),
            (91_000, T + 310_000, false, set(T + 310_000)),
        ];
        for (mono, wall, synced, want) in table {
            assert_eq!(trust.read(mono, wall, || synced), want, "{mono} {wall}");
        }
        assert_eq!(trust.shift(0), Some(300_000 - 80_000));
        assert!(trust.is_set());
    }

    #[test]
    fn a_clock_set_back_while_running_is_not_set_again_until_it_catches_up() {
        let mut trust = Trust::new(0);
        assert_eq!(trust.read(0, T, || false), set(T));
        assert_eq!(trust.read(10_000, T - DAY, || false), unset(T, 0));
        assert_eq!(trust.shift(0), None);
        // Set to about where it was: the stretch was not early at all.
        assert_eq!(trust.read(30_000, T + 20_000, || false), set(T + 20_000));
        assert_eq!(trust.shift(0), Some(0));
        // And a second stretch has its own number.
        assert_eq!(trust.read(40_000, 0, || false), unset(T + 20_000, 1));
        assert_eq!(trust.read(50_000, T + 5 * DAY, || true), set(T + 5 * DAY));
        assert_eq!(trust.shift(1), Some(5 * DAY - 30_000));
        assert_eq!(trust.shift(0), Some(0));
    }

    #[test]
    fn the_newest_footage_read_after_a_first_reading_is_still_the_floor() {
        let mut trust = Trust::new(T - DAY);
        assert_eq!(trust.read(0, 0, || false), unset(T - DAY, 0));
        trust.raise_floor(T);
        assert_eq!(trust.read(1_000, 1_000, || false), unset(T + 1_000, 0));
    }

    #[test]
    fn a_monotonic_clock_read_out_of_order_never_runs_back() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(5_000, 0, || false), unset(T, 0));
        assert_eq!(trust.read(4_000, 0, || false), unset(T, 0));
    }
    #[test]
    fn a_small_step_ahead_is_believed_at_once() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T, || false), set(T));
        let wall = T + 1_000 + STEP_MS;
        assert_eq!(trust.read(1_000, wall, || panic!("not asked")), set(wall));
        assert!(trust.ages_believed(1_000));
    }

    #[test]
    fn a_jump_ahead_runs_on_from_before_it_until_it_has_held() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T, || false), set(T));
        // (monotonic, wall) -> reading, none synchronised
        let table = [
            (10_000, T + 2 * DAY, unset(T + 10_000, 0)),
            (20_000, T + 2 * DAY + 10_000, unset(T + 20_000, 0)),
            (
                10_000 + HOLD_MS - 1,
                T + 2 * DAY + HOLD_MS,
                unset(T + 9_999 + HOLD_MS, 0),
            ),
            // Held an hour: believed, and what was timed meanwhile moves.
            (
                10_000 + HOLD_MS,
                T + 2 * DAY + HOLD_MS,
                set(T + 2 * DAY + HOLD_MS),
            ),
        ];
        for (mono, wall, want) in table {
            assert_eq!(trust.read(mono, wall, || false), want, "{mono} {wall}");
            assert_eq!(trust.doubt().is_some(), want.unset.is_some());
        }
        assert_eq!(trust.shift(0), Some(2 * DAY - 10_000));
        // Ages wait a while after it.
        assert!(!trust.ages_believed(10_000 + HOLD_MS + GRACE_MS - 1));
        assert!(trust.ages_believed(10_000 + HOLD_MS + GRACE_MS));
    }

    #[test]
    fn a_jump_ahead_set_back_leaves_the_times_as_they_ran() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T, || false), set(T));
        assert_eq!(
            trust.read(10_000, T + 2 * DAY, || false),
            unset(T + 10_000, 0)
        );
        assert_eq!(trust.doubt(), Some(Doubt::Ahead));
        assert!(!trust.ages_believed(10_000));
        assert_eq!(trust.read(60_000, T + 60_000, || false), set(T + 60_000));
        assert_eq!(trust.shift(0), Some(0));
        // Nothing was believed that ages wait for.
        assert!(trust.ages_believed(60_000));
        assert!(trust.lowered().is_empty());
    }

    #[test]
    fn a_synchronised_jump_ahead_is_believed_at_once_but_ages_wait() {
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T, || false), set(T));
        assert_eq!(trust.read(10_000, T + 2 * DAY, || true), set(T + 2 * DAY));
        assert!(!trust.ages_believed(10_000 + GRACE_MS - 1));
        assert!(trust.ages_believed(10_000 + GRACE_MS));
    }

    #[test]
    fn a_synchronised_clock_lowers_the_floor_and_says_how_far_ahead_times_were() {
        // Believed two days ahead (a rogue server), then put right.
        let mut trust = Trust::new(T);
        assert_eq!(trust.read(0, T, || false), set(T));
        assert_eq!(trust.read(10_000, T + 2 * DAY, || true), set(T + 2 * DAY));
        assert_eq!(trust.read(70_000, T + 70_000, || true), set(T + 70_000));
        assert_eq!(trust.lowered(), &[2 * DAY - 10_000]);
        assert!(trust.is_set());

        // Started again with the newest footage two days ahead: not
        // believed behind it until synchronised; the stretch meanwhile,
        // run on from that footage, was as far ahead as it.
        let mut trust = Trust::new(T - DAY);
        trust.raise_floor(T + 2 * DAY);
        assert_eq!(trust.read(0, T, || false), unset(T + 2 * DAY, 0));
        assert_eq!(trust.doubt(), Some(Doubt::Behind));
        assert_eq!(trust.read(30_000, T + 30_000, || true), set(T + 30_000));
        assert_eq!(trust.shift(0), Some(-2 * DAY));
        assert_eq!(trust.lowered(), &[2 * DAY]);
        // The floor is the true time now.
        assert_eq!(trust.read(40_000, T + 40_000, || false), set(T + 40_000));
    }

    #[test]
    fn a_clock_ahead_of_the_footage_at_start_times_it_but_ages_wait_until_it_has_held() {
        // An RTC two days ahead (or the node off two days), no NTP.
        let mut trust = Trust::new(T - DAY);
        trust.start(Some(T), 0, T + 2 * DAY, || false);
        assert_eq!(trust.doubt(), Some(Doubt::AheadAtStart));
        // (monotonic, wall) -> reading, none synchronised
        let table = [
            (0, T + 2 * DAY, false),
            (HOLD_MS - 1, T + 2 * DAY + HOLD_MS - 1, false),
            // Held an hour: believed, after the grace.
            (HOLD_MS, T + 2 * DAY + HOLD_MS, false),
            (
                HOLD_MS + GRACE_MS - 1,
                T + 2 * DAY + HOLD_MS + GRACE_MS - 1,
                false,
            ),
            (HOLD_MS + GRACE_MS, T + 2 * DAY + HOLD_MS + GRACE_MS, true),
        ];
        for (mono, wall, ages) in table {
            assert_eq!(trust.read(mono, wall, || false), set(wall), "{mono}");
            assert_eq!(trust.ages_believed(mono), ages, "{mono}");
            assert_eq!(trust.doubt().is_some(), mono < HOLD_MS, "{mono}");
        }
        assert!(trust.lowered().is_empty());
    }

    #[test]
    fn a_clock_ahead_at_start_is_believed_for_ages_once_synchronised_after_the_grace() {
        let mut trust = Trust::new(T - DAY);
        trust.start(Some(T), 0, T + 2 * DAY, || false);
        assert_eq!(
            trust.read(1_000, T + 2 * DAY + 1_000, || false),
            set(T + 2 * DAY + 1_000)
        );
        assert!(!trust.ages_believed(1_000));
        // NTP agrees with it.
        let wall = T + 2 * DAY + 2_000;
        assert_eq!(trust.read(2_000, wall, || true), set(wall));
        assert_eq!(trust.doubt(), None);
        assert!(!trust.ages_believed(2_000 + GRACE_MS - 1));
        assert!(trust.ages_believed(2_000 + GRACE_MS));
    }

    #[test]
    fn a_clock_ahead_at_start_then_synchronised_behind_moves_footage_back_and_ages_go_on() {
        let mut trust = Trust::new(T - DAY);
        trust.start(Some(T), 0, T + 2 * DAY, || false);
        assert_eq!(
            trust.read(1_000, T + 2 * DAY + 1_000, || false),
            set(T + 2 * DAY + 1_000)
        );
        // NTP says the true time: the footage timed by the RTC was ahead.
        assert_eq!(trust.read(2_000, T + 2_000, || true), set(T + 2_000));
        assert_eq!(trust.lowered(), &[2 * DAY]);
        assert_eq!(trust.doubt(), None);
        assert!(trust.ages_believed(2_000));
    }

    #[test]
    fn a_clock_at_start_near_the_footage_or_synchronised_or_with_none_is_believed_for_ages() {
        for (newest, wall, synced) in [
            (Some(T), T + STEP_MS, false),
            (Some(T), T + 2 * DAY, true),
            (None, T + 2 * DAY, false),
        ] {
            let mut trust = Trust::new(T - DAY);
            trust.start(newest, 0, wall, || synced);
            assert_eq!(trust.read(0, wall, || synced), set(wall));
            assert!(trust.ages_believed(0), "{newest:?} {wall} {synced}");
        }
    }
}

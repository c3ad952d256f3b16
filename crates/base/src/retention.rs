//! The rules recordings and events' clips are both deleted by, without I/O:
//! the free space kept on their file system (the reserve), how many bytes
//! must go and which rule asks it, and which of the oldest go. Each keeps
//! its own retention (`recording::retention`, `clips::retention`) that
//! reads the sizes, passes them here, and deletes what is chosen.

use std::time::Duration;

/// How long what the disk refused to delete is left out of the choices:
/// one file that cannot go does not stop all deletion, and is tried again
/// after.
pub const KEPT_FOR: Duration = Duration::from_secs(60);

/// The reserve when none is set: `least` bytes or the file system's total
/// divided by `divisor`, the larger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultReserve {
    pub least: u64,
    pub divisor: u64,
}

/// The recordings': 1 GiB or 10 % of the file system.
pub const RECORDINGS: DefaultReserve = DefaultReserve {
    least: 1 << 30,
    divisor: 10,
};

/// The clips': 512 MiB or 5 %, half the recordings', so that on a disk
/// they share the continuous recordings give way before the events' clips.
pub const CLIPS: DefaultReserve = DefaultReserve {
    least: 512 << 20,
    divisor: 20,
};

/// The free space to keep on a file system of `total` bytes.
pub fn reserve(configured: Option<u64>, total: u64, default: DefaultReserve) -> u64 {
    configured.unwrap_or((total / default.divisor).max(default.least))
}

/// Why footage is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// It takes more than its budget.
    Budget,
    /// Its file system has less free space than the reserve.
    Reserve,
}

/// How many bytes must go, and the rule that asks it: what `used` is over
/// the `budget`, or what the `free` space is short of the `reserve`,
/// whichever is more (the budget when they ask the same). None: nothing
/// must go. No budget, or free space not known, asks nothing of its rule.
pub fn to_free(
    used: u64,
    budget: Option<u64>,
    free: Option<u64>,
    reserve: u64,
) -> Option<(u64, Rule)> {
    let over = budget.map_or(0, |budget| used.saturating_sub(budget));
    let short = free.map_or(0, |free| reserve.saturating_sub(free));
    match (over, short) {
        (0, 0) => None,
        (over, short) if over >= short => Some((over, Rule::Budget)),
        (_, short) => Some((short, Rule::Reserve)),
    }
}

/// Of the candidates in deletion order (segments, or events and clip
/// files), the fewest that free `bytes`, each `size` bytes: those before
/// the one that reaches it, and that one.
pub fn fewest_to_free<T>(candidates: &[T], bytes: u64, size: impl Fn(&T) -> u64) -> &[T] {
    let mut freed = 0;
    let count = candidates
        .iter()
        .take_while(|c| {
            let more = freed < bytes;
            freed += size(c);
            more
        })
        .count();
    &candidates[..count]
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// The moment (milliseconds since the epoch) before which footage kept
/// `days` days has outlived them at `now_ms`: what ends before it goes.
/// None when there is no age limit, or when ages by the clock are not
/// believed (`ages_believed` false: the clock is not, or just jumped ahead):
/// every age might be wrong, so nothing goes by age.
pub fn age_limit(now_ms: i64, days: Option<u32>, ages_believed: bool) -> Option<i64> {
    let days = days.filter(|_| ages_believed)?;
    Some(now_ms.saturating_sub(i64::from(days) * DAY_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn reserves() {
        let table = [
            // configured, total, default -> reserve
            (None, 4 * GIB, RECORDINGS, GIB, "1 GiB on a small disk"),
            (None, 100 * GIB, RECORDINGS, 10 * GIB, "10 % of a large one"),
            (Some(5), 100 * GIB, RECORDINGS, 5, "as set"),
            (None, 0, RECORDINGS, GIB, "a disk not read yet"),
            (None, 15 * GIB, CLIPS, 768 * MIB, "5 % of a 16 GB card"),
            (None, 4 * GIB, CLIPS, 512 * MIB, "512 MiB on a small disk"),
            (Some(5), 15 * GIB, CLIPS, 5, "as set"),
            (Some(0), 15 * GIB, CLIPS, 0, "none"),
        ];
        for (configured, total, default, want, why) in table {
            assert_eq!(reserve(configured, total, default), want, "{why}");
        }
    }

    #[test]
    fn what_must_go_and_why() {
        let table = [
            // used, budget, free, reserve -> bytes to free, rule
            (100, None, Some(50), 10, None),
            (100, Some(200), Some(50), 10, None),
            (100, Some(200), None, 10, None),
            (100, None, Some(0), 0, None),
            (100, Some(80), Some(50), 10, Some((20, Rule::Budget))),
            (100, Some(80), Some(5), 10, Some((20, Rule::Budget))),
            (100, Some(80), Some(0), 20, Some((20, Rule::Budget))),
            (100, Some(80), Some(0), 30, Some((30, Rule::Reserve))),
            (100, None, Some(0), 30, Some((30, Rule::Reserve))),
            (100, Some(200), Some(0), 60, Some((60, Rule::Reserve))),
            (100, Some(0), Some(0), 0, Some((100, Rule::Budget))),
            (100, Some(0), None, 1000, Some((100, Rule::Budget))),
        ];
        for (used, budget, free, reserve, want) in table {
            assert_eq!(
                to_free(used, budget, free, reserve),
                want,
                "{used} {budget:?} {free:?} {reserve}"
            );
        }
    }

    #[test]
    fn the_age_past_which_footage_goes() {
        let now = 100 * DAY_MS;
        let table = [
            // now, days, clock set -> footage ending before this goes
            (now, Some(1), true, Some(99 * DAY_MS), "a day"),
            (now, Some(30), true, Some(70 * DAY_MS), "a month"),
            (
                now,
                Some(3650),
                true,
                Some(now - 3650 * DAY_MS),
                "ten years, before 1970",
            ),
            (now, None, true, None, "no limit"),
            (
                now,
                Some(1),
                false,
                None,
                "the clock is not set: nothing by age",
            ),
            (now, None, false, None, "neither"),
            (i64::MIN + 1, Some(1), true, Some(i64::MIN), "saturates"),
        ];
        for (now, days, set, want, why) in table {
            assert_eq!(age_limit(now, days, set), want, "{why}");
        }
    }

    #[test]
    fn the_fewest_oldest_that_free_enough() {
        let sizes = [40, 30, 0, 10];
        let table = [
            // bytes to free -> how many of the oldest go
            (0, 0),
            (1, 1),
            (40, 1),
            (41, 2),
            (70, 2),
            (71, 4), // one of no bytes goes on the way
            (80, 4),
            (1000, 4),
        ];
        for (bytes, want) in table {
            let chosen = fewest_to_free(&sizes, bytes, |s| *s);
            assert_eq!(chosen, &sizes[..want], "{bytes}");
        }
        assert!(fewest_to_free(&[] as &[u64], 10, |s| *s).is_empty());
    }
}

//! When a decoded frame was taken, from the stream's own timestamps: a
//! frame taken 3 s after the first of a run was taken 3 s after it, however
//! the frames reach the node (key frames seconds apart, a burst of the
//! frames held since one, a decoder or receiver that fell behind under
//! load). Stamped when it is read off the pipe instead, a frame is late by
//! however far behind the decoder is, which under load is seconds: an
//! event's times, and the moment its thumbnail is cut from the recording,
//! were late by as much, and the thumbnail showed the picture after the
//! thing had gone. A frame is never stamped later than it was read, and a
//! decoder more than [`MAX_LAG_MS`] behind (or a stream whose timestamps
//! went back) is taken as it is read from then on. Pure: time is passed in.

use super::episodes::Moment;

/// The furthest behind a frame is believed to have been taken.
pub const MAX_LAG_MS: i64 = 10_000;

/// The frame times of one decoder run.
#[derive(Debug, Default)]
pub struct FrameClock {
    /// The monotonic time at which the stream's clock read 0.
    origin_mono_ms: Option<i64>,
}

impl FrameClock {
    /// The moment a frame of stream time `stream_ms` was taken, read at
    /// `now`: as late on the wall clock as on the monotonic one, which does
    /// not jump.
    pub fn stamp(&mut self, stream_ms: i64, now: Moment) -> Moment {
        let origin = self.origin_mono_ms.get_or_insert(now.mono_ms - stream_ms);
        let mut taken = *origin + stream_ms;
        let lag = now.mono_ms - taken;
        if !(0..=MAX_LAG_MS).contains(&lag) {
            // Read before it was taken (the camera's clock runs fast), or
            // beyond belief: as read, and the frames after counted from it.
            *origin = now.mono_ms - stream_ms;
            taken = now.mono_ms;
        } else if lag > 0 {
            // A camera's clock that runs slow would seem ever more behind:
            // the origin creeps towards now, a millisecond a frame.
            *origin += 1;
        }
        let lag = now.mono_ms - taken;
        Moment {
            mono_ms: taken,
            wall_ms: now.wall_ms - lag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WALL: i64 = 1_700_000_000_000;

    fn at(mono_ms: i64) -> Moment {
        Moment {
            mono_ms,
            wall_ms: WALL + mono_ms,
        }
    }

    #[test]
    fn frames_read_on_time_are_stamped_when_read() {
        let mut clock = FrameClock::default();
        for n in 0..10 {
            assert_eq!(clock.stamp(n * 200, at(1000 + n * 200)), at(1000 + n * 200));
        }
        // Key frames alone, seconds apart.
        assert_eq!(clock.stamp(5000, at(6000)), at(6000));
    }

    #[test]
    fn frames_read_late_are_stamped_when_taken_on_both_clocks() {
        let mut clock = FrameClock::default();
        assert_eq!(clock.stamp(0, at(0)), at(0));
        // The decoder falls 3 s behind, then catches up in a burst: each
        // frame at its time, but for the creep of a millisecond a frame.
        for n in 1..=16 {
            assert_eq!(clock.stamp(n * 200, at(3200 + n)), at(n * 200 + n - 1));
        }
        // Caught up, and the next frame read before its stream time says
        // it was taken: never stamped later than read.
        assert_eq!(clock.stamp(3400, at(3350)), at(3350));
    }

    #[test]
    fn a_wall_clock_that_jumps_moves_the_stamps_with_it() {
        let mut clock = FrameClock::default();
        clock.stamp(0, at(0));
        let now = Moment {
            mono_ms: 1200,
            wall_ms: WALL + 3_600_000,
        };
        // Taken 1 s before it was read: 1 s before the new time.
        assert_eq!(
            clock.stamp(200, now),
            Moment {
                mono_ms: 200,
                wall_ms: WALL + 3_600_000 - 1000
            }
        );
    }

    #[test]
    fn a_decoder_too_far_behind_is_taken_as_read_from_then_on() {
        let mut clock = FrameClock::default();
        clock.stamp(0, at(0));
        // Read 11 s late: beyond belief, stamped as read...
        assert_eq!(clock.stamp(200, at(11_200)), at(11_200));
        // ...and the frames after it counted from there.
        assert_eq!(clock.stamp(400, at(11_400)), at(11_400));
        assert_eq!(clock.stamp(600, at(11_900)), at(11_600));
    }

    #[test]
    fn a_camera_clock_that_runs_fast_or_slow_is_followed() {
        let mut clock = FrameClock::default();
        clock.stamp(0, at(0));
        // Fast: its frame of 1,010 ms read at 1,000 is taken then.
        assert_eq!(clock.stamp(1010, at(1000)), at(1000));
        // Slow by 1 ms a second (1,000 ppm): never more than a few ms behind.
        for s in 2..100 {
            let taken = clock.stamp(1010 + (s - 1) * 999, at(s * 1000));
            assert!(s * 1000 - taken.mono_ms <= 2, "{s} s: {taken:?}");
        }
    }
}

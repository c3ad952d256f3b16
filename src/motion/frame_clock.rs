//! When a decoded frame was taken. The decoder emits a fixed rate by the
//! stream's own timestamps (its `fps` filter repeats frames across a gap
//! and drops extra ones), so the n-th frame of a run was taken n frame
//! times after the first. Stamped when it is read off the pipe instead, a
//! frame is late by however far the decoder is behind, which under load is
//! seconds: an event's times, and the moment its thumbnail is cut from the
//! recording, were late by as much, and the thumbnail showed the picture
//! after the thing had gone. A frame is never stamped later than it was
//! read, and a decoder more than [`MAX_LAG_MS`] behind (or a stream whose
//! timestamps went back, which the filter answers by dropping frames) is
//! taken as it is read from then on. Pure: time is passed in.

use super::episodes::Moment;

/// The furthest behind a frame is believed to have been taken.
pub const MAX_LAG_MS: i64 = 10_000;

/// The frame times of one decoder run.
#[derive(Debug)]
pub struct FrameClock {
    frame_ms: i64,
    /// The monotonic time of frame 0, and frames stamped since.
    start_mono_ms: Option<i64>,
    frames: i64,
}

impl FrameClock {
    pub fn new(frame_ms: i64) -> FrameClock {
        FrameClock {
            frame_ms,
            start_mono_ms: None,
            frames: 0,
        }
    }

    /// The moment the next frame was taken, read at `now`: as late on the
    /// wall clock as on the monotonic one, which does not jump.
    pub fn stamp(&mut self, now: Moment) -> Moment {
        let offset = self.frames * self.frame_ms;
        self.frames += 1;
        let start = *self.start_mono_ms.get_or_insert(now.mono_ms);
        let mut taken = (start + offset).min(now.mono_ms);
        if now.mono_ms - taken > MAX_LAG_MS {
            self.start_mono_ms = Some(now.mono_ms - offset);
            taken = now.mono_ms;
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
        let mut clock = FrameClock::new(200);
        for n in 0..10 {
            assert_eq!(clock.stamp(at(1000 + n * 200)), at(1000 + n * 200));
        }
    }

    #[test]
    fn frames_read_late_are_stamped_when_taken_on_both_clocks() {
        let mut clock = FrameClock::new(200);
        assert_eq!(clock.stamp(at(0)), at(0));
        // The decoder falls 3 s behind, then catches up in a burst.
        assert_eq!(clock.stamp(at(3200)), at(200));
        assert_eq!(clock.stamp(at(3210)), at(400));
        for n in 3..=16 {
            assert_eq!(clock.stamp(at(3220 + n)), at(n * 200));
        }
        // Caught up, and the next frame read before its count says it was
        // taken: never stamped later than read.
        assert_eq!(clock.stamp(at(3350)), at(3350));
    }

    #[test]
    fn a_wall_clock_that_jumps_moves_the_stamps_with_it() {
        let mut clock = FrameClock::new(200);
        clock.stamp(at(0));
        let now = Moment {
            mono_ms: 1200,
            wall_ms: WALL + 3_600_000,
        };
        // Frame 1 was taken 1 s before it was read: 1 s before the new time.
        assert_eq!(
            clock.stamp(now),
            Moment {
                mono_ms: 200,
                wall_ms: WALL + 3_600_000 - 1000
            }
        );
    }

    #[test]
    fn a_decoder_too_far_behind_is_taken_as_read_from_then_on() {
        let mut clock = FrameClock::new(200);
        clock.stamp(at(0));
        // Frame 1 read 11 s late: beyond belief, stamped as read...
        assert_eq!(clock.stamp(at(11_200)), at(11_200));
        // ...and the frames after it counted from there.
        assert_eq!(clock.stamp(at(11_400)), at(11_400));
        assert_eq!(clock.stamp(at(11_900)), at(11_600));
    }
}

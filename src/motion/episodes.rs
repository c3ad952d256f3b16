//! From moving frames to events: an event starts only when motion is seen
//! in at least 3 of 5 consecutive frames (a lone flicker is not one), ends
//! 10 s after the last moving frame (someone who stands still for a moment
//! is still there) or the last frame in which what came is still present
//! (someone who stays still for longer: see the detector's reference), and
//! lasts at most 5 minutes (then a new one starts if something moves).
//! Each frame comes with two times: a monotonic one, by which all of this
//! is timed (the wall clock may jump: NTP at boot, a clock set by hand),
//! and the wall clock's, which is only what the events report. Time is
//! passed in, so all of it is tested without waiting.

use std::collections::VecDeque;

/// Frames looked at together to start an event, and how many must move.
const WINDOW: usize = 5;
const MOVING_IN_WINDOW: usize = 3;
/// Stillness that ends an event.
pub const QUIET_MS: i64 = 10_000;
/// The longest event.
pub const LONGEST_MS: i64 = crate::event::LONGEST_EVENT_MS;

/// When a frame was seen: by a monotonic clock (ms from any origin), and
/// by the wall clock (ms since the epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    pub mono_ms: i64,
    pub wall_ms: i64,
}

/// A motion event, as it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Episode {
    /// The first moving frame and the last moving (or present) one, ms since the epoch.
    pub started_ms: i64,
    pub ended_ms: i64,
    /// The largest share of the picture that moved (0 to 1), and when.
    pub score: f32,
    pub peak_ms: i64,
}

/// What a frame changed.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// At the wall-clock time of its first moving frame.
    Started {
        at_ms: i64,
    },
    Ended(Episode),
}

/// The event under way: what it reports, and its monotonic times.
struct Current {
    episode: Episode,
    started: Moment,
    last_seen: Moment,
}

#[derive(Default)]
pub struct Episodes {
    /// The last frames while no event is on: (time, share moved).
    window: VecDeque<(Moment, f32)>,
    current: Option<Current>,
}

impl Episodes {
    /// Takes a frame seen `at` in which `share` of the picture moved;
    /// `present`: what came with the event under way is still in the picture.
    pub fn frame(&mut self, at: Moment, share: f32, present: bool) -> Vec<Change> {
        let moving = share > 0.0;
        let mut changes = Vec::new();
        if let Some(current) = &mut self.current {
            if (moving || present) && at.mono_ms - current.started.mono_ms >= LONGEST_MS {
                // Long enough: this one ends, a new one starts with this frame
                // if it moves (someone only still there starts none).
                changes.push(Change::Ended(self.current.take().expect("on").episode));
                if moving {
                    self.start(at, share, at, &mut changes);
                }
                return changes;
            }
            if moving || present {
                current.last_seen = at;
                current.episode.ended_ms = at.wall_ms;
            }
            if moving && share > current.episode.score {
                (current.episode.score, current.episode.peak_ms) = (share, at.wall_ms);
            }
            if !moving && !present && at.mono_ms - current.last_seen.mono_ms >= QUIET_MS {
                changes.push(Change::Ended(self.current.take().expect("on").episode));
            }
            return changes;
        }
        self.window.push_back((at, share));
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        let moving_frames = self.window.iter().filter(|(_, s)| *s > 0.0).count();
        if moving && moving_frames >= MOVING_IN_WINDOW {
            let first = self
                .window
                .iter()
                .find(|(_, s)| *s > 0.0)
                .expect("some moved")
                .0;
            let (peak, score) =
                self.window.iter().fold(
                    (at, 0.0f32),
                    |best, &(t, s)| if s > best.1 { (t, s) } else { best },
                );
            self.start(first, score, peak, &mut changes);
            if let Some(current) = &mut self.current {
                current.last_seen = at;
                current.episode.ended_ms = at.wall_ms;
            }
        }
        changes
    }

    /// The event under way ends now (the frames stopped): at its last moving frame.
    pub fn finish(&mut self) -> Option<Episode> {
        self.window.clear();
        self.current.take().map(|c| c.episode)
    }

    fn start(&mut self, at: Moment, score: f32, peak: Moment, changes: &mut Vec<Change>) {
        self.window.clear();
        self.current = Some(Current {
            episode: Episode {
                started_ms: at.wall_ms,
                ended_ms: at.wall_ms,
                score,
                peak_ms: peak.wall_ms,
            },
            started: at,
            last_seen: at,
        });
        changes.push(Change::Started { at_ms: at.wall_ms });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A moment when both clocks agree.
    fn same(ms: i64) -> Moment {
        Moment {
            mono_ms: ms,
            wall_ms: ms,
        }
    }

    /// Feeds frames 200 ms apart (5 a second) from `start_ms`, each moving
    /// the share given; returns every change with the frame's index.
    fn feed(episodes: &mut Episodes, start_ms: i64, shares: &[f32]) -> Vec<(usize, Change)> {
        shares
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                let changes = episodes.frame(same(start_ms + 200 * i as i64), *s, false);
                changes.into_iter().map(move |c| (i, c))
            })
            .collect()
    }

    #[test]
    fn flickers_start_nothing() {
        let mut episodes = Episodes::default();
        // Two moving frames in every five, never three.
        let shares: Vec<f32> = (0..100)
            .map(|i| if i % 5 < 2 { 0.1 } else { 0.0 })
            .collect();
        assert_eq!(feed(&mut episodes, 0, &shares), vec![]);
        assert_eq!(episodes.finish(), None);
    }

    #[test]
    fn three_of_five_start_at_the_first_moving_frame() {
        let mut episodes = Episodes::default();
        let shares = [0.0, 0.0, 0.05, 0.0, 0.2, 0.1];
        let changes = feed(&mut episodes, 1_000, &shares);
        assert_eq!(changes, vec![(5, Change::Started { at_ms: 1_400 })]);
        assert_eq!(episodes.finish().map(|e| e.started_ms), Some(1_400));
    }

    #[test]
    fn ten_still_seconds_end_it_at_the_last_moving_frame() {
        let mut episodes = Episodes::default();
        // 4 s of motion, peaking at frame 12, then stillness.
        let mut shares = vec![0.05; 20];
        shares[12] = 0.3;
        shares.extend(vec![0.0; 60]);
        let changes = feed(&mut episodes, 0, &shares);
        let ended = Episode {
            started_ms: 0,
            ended_ms: 19 * 200,
            score: 0.3,
            peak_ms: 12 * 200,
        };
        // Ended at the first still frame 10 s after the last moving one.
        assert_eq!(
            changes,
            vec![
                (2, Change::Started { at_ms: 0 }),
                (19 + 50, Change::Ended(ended))
            ]
        );
    }

    #[test]
    fn a_pause_under_ten_seconds_is_the_same_event() {
        let mut episodes = Episodes::default();
        let mut shares = vec![0.1; 10];
        shares.extend(vec![0.0; 45]); // 9 s still
        shares.extend(vec![0.1; 10]);
        shares.extend(vec![0.0; 60]);
        let changes = feed(&mut episodes, 0, &shares);
        assert_eq!(changes.len(), 2, "{changes:?}");
        let Change::Ended(episode) = &changes[1].1 else {
            panic!("{changes:?}")
        };
        assert_eq!((episode.started_ms, episode.ended_ms), (0, 64 * 200));
    }

    #[test]
    fn someone_still_there_keeps_it_on_until_they_leave() {
        let mut episodes = Episodes::default();
        // 2 s of motion, then 60 s still but present, then gone.
        let mut changes = feed(&mut episodes, 0, &[0.1; 10]);
        let mut at = 10 * 200;
        for _ in 0..300 {
            changes.extend(
                episodes
                    .frame(same(at), 0.0, true)
                    .into_iter()
                    .map(|c| (0, c)),
            );
            at += 200;
        }
        let left = at - 200;
        for _ in 0..60 {
            changes.extend(
                episodes
                    .frame(same(at), 0.0, false)
                    .into_iter()
                    .map(|c| (0, c)),
            );
            at += 200;
        }
        let ended: Vec<&Episode> = changes
            .iter()
            .filter_map(|(_, c)| match c {
                Change::Ended(e) => Some(e),
                Change::Started { .. } => None,
            })
            .collect();
        assert_eq!(ended.len(), 1, "{changes:?}");
        assert_eq!((ended[0].started_ms, ended[0].ended_ms), (0, left));
        assert_eq!(ended[0].score, 0.1, "stillness does not score");
        // Present for longer than the cap: it ends there, and nothing starts.
        let mut episodes = Episodes::default();
        feed(&mut episodes, 0, &[0.1; 5]);
        let mut ends = 0;
        for i in 5..(LONGEST_MS / 200 + 100) {
            for change in episodes.frame(same(i * 200), 0.0, true) {
                assert!(matches!(change, Change::Ended(_)), "{change:?}");
                ends += 1;
            }
        }
        assert_eq!(ends, 1);
        assert_eq!(episodes.finish(), None);
    }

    #[test]
    fn five_minutes_at_most_then_a_new_one() {
        let mut episodes = Episodes::default();
        let shares = vec![0.1; 5 * 60 * 5 + 10];
        let changes = feed(&mut episodes, 0, &shares);
        let starts: Vec<i64> = changes
            .iter()
            .filter_map(|(_, c)| match c {
                Change::Started { at_ms } => Some(*at_ms),
                Change::Ended(_) => None,
            })
            .collect();
        assert_eq!(starts, vec![0, LONGEST_MS]);
        let Some((_, Change::Ended(first))) =
            changes.iter().find(|(_, c)| matches!(c, Change::Ended(_)))
        else {
            panic!("{changes:?}")
        };
        assert_eq!((first.started_ms, first.ended_ms), (0, LONGEST_MS - 200));
        let second = episodes.finish().unwrap();
        assert_eq!(second.started_ms, LONGEST_MS);
    }

    #[test]
    fn the_wall_clock_jumping_changes_no_timing() {
        // Frames 200 ms apart on the monotonic clock; the wall clock is set
        // back an hour at frame 20, then forward two hours at frame 40.
        let wall = |i: i64| match i {
            ..20 => 1_000_000 + 200 * i,
            20..40 => 1_000_000 - 3_600_000 + 200 * i,
            _ => 1_000_000 + 7_200_000 + 200 * i,
        };
        let mut episodes = Episodes::default();
        let mut changes = Vec::new();
        // 6 s of motion, then stillness.
        for i in 0..200 {
            let at = Moment {
                mono_ms: 200 * i,
                wall_ms: wall(i),
            };
            let share = if i < 30 { 0.1 } else { 0.0 };
            changes.extend(episodes.frame(at, share, false).into_iter().map(|c| (i, c)));
        }
        // Ended 10 s (monotonic) after the last moving frame, 29: not at the
        // jump forward (frame 40), nor an hour late after the jump back.
        let ended: Vec<(i64, &Episode)> = changes
            .iter()
            .filter_map(|(i, c)| match c {
                Change::Ended(e) => Some((*i, e)),
                Change::Started { .. } => None,
            })
            .collect();
        assert_eq!(ended.len(), 1, "{changes:?}");
        assert_eq!(ended[0].0, 29 + 50);
        // It reports the wall clock of its frames, jumps and all.
        assert_eq!(
            (ended[0].1.started_ms, ended[0].1.ended_ms),
            (wall(0), wall(29))
        );
    }
}

//! From moving frames to events: an event starts only when motion is seen
//! in at least 3 of 5 consecutive frames (a lone flicker is not one), ends
//! 10 s after the last frame in which what moved was still changing
//! (someone who stands still for a moment is still there; a thing that
//! stopped has stopped, though the background takes it in only in about
//! 15 s), and lasts at most 5 minutes (then a new one starts if something
//! moves). What came and then stands still keeps an event on
//! only while it is someone: when nothing has moved for 10 s but the
//! picture still differs from the scene before the event, the watcher is
//! asked whether someone is there (the classifier looks). While someone is,
//! the event goes on, to the last moment they were seen; otherwise (a car
//! that parked, a thing left, the hole where something stood) it ends at its
//! last moving frame, so that an event ends when what moved has stopped or
//! left.
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
/// How long an answer to [`Change::StillThere`] is waited for; none is no one.
pub const ANSWER_WAIT_MS: i64 = 5_000;
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
    /// The first moving frame, and the last moving one or the last in which
    /// someone was seen still there, ms since the epoch.
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
    /// Nothing has moved for [`QUIET_MS`], but what came is still there:
    /// answer [`Episodes::someone_there`] or [`Episodes::no_one_there`].
    StillThere,
    Ended(Episode),
}

/// The event under way: what it reports, and its monotonic times.
struct Current {
    episode: Episode,
    started: Moment,
    /// The last frame that moved, or in which someone was seen still there.
    last_seen: Moment,
    /// When [`Change::StillThere`] was asked, until it is answered.
    asked: Option<i64>,
    /// Someone is there, as last answered: the event lasts as long as what
    /// came is present.
    someone: bool,
    /// No one is there, since the last moving frame.
    no_one: bool,
}

#[derive(Default)]
pub struct Episodes {
    /// The last frames while no event is on: (time, share moved, changing).
    window: VecDeque<(Moment, f32, bool)>,
    current: Option<Current>,
}

impl Episodes {
    /// Takes a frame seen `at` in which `share` of the picture moved
    /// (`changing`: and changed since the last frame); `present`: what came
    /// with the event under way is still in the picture (false from a
    /// watcher that cannot tell who it is).
    pub fn frame(&mut self, at: Moment, share: f32, changing: bool, present: bool) -> Vec<Change> {
        let mut changes = Vec::new();
        if let Some(current) = &mut self.current {
            let moving = share > 0.0 && changing;
            let long = at.mono_ms - current.started.mono_ms >= LONGEST_MS;
            if moving && long {
                // Long enough: this one ends, and a new one starts with this frame.
                changes.push(Change::Ended(self.current.take().expect("on").episode));
                self.start(at, share, at, &mut changes);
                return changes;
            }
            if share > current.episode.score {
                (current.episode.score, current.episode.peak_ms) = (share, at.wall_ms);
            }
            if moving {
                (current.last_seen, current.asked, current.no_one) = (at, None, false);
                current.episode.ended_ms = at.wall_ms;
                return changes;
            }
            if current.someone && present {
                current.episode.ended_ms = at.wall_ms;
            }
            if at.mono_ms - current.last_seen.mono_ms < QUIET_MS {
                return changes;
            }
            let ask = present && !current.no_one && !long;
            match current.asked {
                None if ask => {
                    current.asked = Some(at.mono_ms);
                    changes.push(Change::StillThere);
                }
                Some(asked) if at.mono_ms - asked < ANSWER_WAIT_MS && !long => {}
                _ => changes.push(Change::Ended(self.current.take().expect("on").episode)),
            }
            return changes;
        }
        let moving = share > 0.0;
        self.window.push_back((at, share, changing));
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        let moving_frames = self.window.iter().filter(|(_, s, _)| *s > 0.0).count();
        // Something that changed, not only a thing the background has not
        // taken in yet (one that stopped as the last event ended).
        let changed = self.window.iter().any(|(_, s, c)| *s > 0.0 && *c);
        if moving && changed && moving_frames >= MOVING_IN_WINDOW {
            let first = self
                .window
                .iter()
                .find(|(_, s, _)| *s > 0.0)
                .expect("some moved")
                .0;
            let (peak, score) =
                self.window.iter().fold(
                    (at, 0.0f32),
                    |best, &(t, s, _)| if s > best.1 { (t, s) } else { best },
                );
            self.start(first, score, peak, &mut changes);
            if let Some(current) = &mut self.current {
                current.last_seen = at;
                current.episode.ended_ms = at.wall_ms;
            }
        }
        changes
    }

    /// The answer to [`Change::StillThere`]: someone is there, seen `at`;
    /// the event goes on, and the question comes again after [`QUIET_MS`].
    pub fn someone_there(&mut self, at: Moment) {
        if let Some(current) = &mut self.current
            && current.asked.is_some()
        {
            (current.last_seen, current.asked, current.someone) = (at, None, true);
            current.episode.ended_ms = at.wall_ms;
        }
    }

    /// The answer to [`Change::StillThere`]: no one is there; the event
    /// ends with the next frame, at its last moving one.
    pub fn no_one_there(&mut self) {
        if let Some(current) = &mut self.current
            && current.asked.is_some()
        {
            (current.asked, current.someone, current.no_one) = (None, false, true);
        }
    }

    /// The event under way, as it stands.
    pub fn current(&self) -> Option<&Episode> {
        self.current.as_ref().map(|c| &c.episode)
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
            asked: None,
            someone: false,
            no_one: false,
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
                let changes = episodes.frame(same(start_ms + 200 * i as i64), *s, true, false);
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

    /// Feeds still frames, `present`, 200 ms apart from `at`, answering
    /// each question with `someone` (None: no answer); returns the changes
    /// and the next frame's time.
    fn still(
        episodes: &mut Episodes,
        mut at: i64,
        frames: usize,
        present: bool,
        someone: Option<bool>,
    ) -> (Vec<Change>, i64) {
        let mut changes = Vec::new();
        for _ in 0..frames {
            for change in episodes.frame(same(at), 0.0, false, present) {
                if change == Change::StillThere {
                    match someone {
                        Some(true) => episodes.someone_there(same(at)),
                        Some(false) => episodes.no_one_there(),
                        None => {}
                    }
                }
                changes.push(change);
            }
            at += 200;
        }
        (changes, at)
    }

    fn ended(changes: &[Change]) -> Vec<&Episode> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Ended(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn someone_still_there_keeps_it_on_until_they_leave() {
        let mut episodes = Episodes::default();
        // 2 s of motion, then 60 s still and present, and someone is there;
        // then gone.
        feed(&mut episodes, 0, &[0.1; 10]);
        let (mut changes, at) = still(&mut episodes, 2_000, 300, true, Some(true));
        let asked = changes.iter().filter(|c| **c == Change::StillThere).count();
        assert_eq!(asked, 6, "asked every 10 s: {changes:?}");
        let (after, _) = still(&mut episodes, at, 60, false, Some(true));
        changes.extend(after);
        let ended = ended(&changes);
        assert_eq!(ended.len(), 1, "{changes:?}");
        // At the last frame in which they were there, 60 s after the motion.
        assert_eq!((ended[0].started_ms, ended[0].ended_ms), (0, 61_800));
        assert_eq!(ended[0].score, 0.1, "stillness does not score");
    }

    #[test]
    fn what_stands_still_and_is_no_one_ends_it_at_its_last_motion() {
        // 1 s of motion, then present for ever (a car that parked, a thing
        // left): asked once after 10 s, it ends at its last moving frame,
        // and nothing starts after, past the 5 minute cap too.
        for answer in [Some(false), None] {
            let mut episodes = Episodes::default();
            feed(&mut episodes, 0, &[0.1; 5]);
            let (changes, _) = still(&mut episodes, 1_000, 2 * 1_500, true, answer);
            assert_eq!(changes.len(), 2, "{answer:?}: {changes:?}");
            assert_eq!(changes[0], Change::StillThere);
            assert_eq!(
                changes[1],
                Change::Ended(Episode {
                    started_ms: 0,
                    ended_ms: 800,
                    score: 0.1,
                    peak_ms: 0,
                }),
                "{answer:?}"
            );
            assert_eq!(episodes.finish(), None);
        }
        // A watcher that cannot tell who is there is asked nothing.
        let mut episodes = Episodes::default();
        feed(&mut episodes, 0, &[0.1; 5]);
        let (changes, _) = still(&mut episodes, 1_000, 100, false, Some(true));
        assert_eq!(ended(&changes).len(), 1, "{changes:?}");
        assert!(!changes.contains(&Change::StillThere));
    }

    #[test]
    fn a_thing_that_stopped_ends_it_though_it_is_not_background_yet() {
        // 2 s moving, then 15 s in which it still differs from the
        // background (not taken in yet) but no longer changes.
        let mut episodes = Episodes::default();
        let mut changes = feed(&mut episodes, 0, &[0.1; 10]);
        for i in 10..160 {
            let at = same(i as i64 * 200);
            changes.extend(
                episodes
                    .frame(at, 0.1, false, false)
                    .into_iter()
                    .map(|c| (i, c)),
            );
        }
        let ended = Episode {
            started_ms: 0,
            ended_ms: 1_800,
            score: 0.1,
            peak_ms: 0,
        };
        assert_eq!(
            changes,
            vec![
                (2, Change::Started { at_ms: 0 }),
                (9 + 50, Change::Ended(ended))
            ]
        );
    }

    #[test]
    fn someone_still_there_for_longer_than_the_cap_ends_it_there() {
        let mut episodes = Episodes::default();
        feed(&mut episodes, 0, &[0.1; 5]);
        let frames = (LONGEST_MS / 200 + 200) as usize;
        let (changes, _) = still(&mut episodes, 1_000, frames, true, Some(true));
        let ended = ended(&changes);
        assert_eq!(ended.len(), 1, "{changes:?}");
        assert!(
            (LONGEST_MS..LONGEST_MS + QUIET_MS).contains(&ended[0].ended_ms),
            "{:?}",
            ended[0]
        );
        assert!(!changes.iter().any(|c| matches!(c, Change::Started { .. })));
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
                _ => None,
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
            changes.extend(
                episodes
                    .frame(at, share, true, false)
                    .into_iter()
                    .map(|c| (i, c)),
            );
        }
        // Ended 10 s (monotonic) after the last moving frame, 29: not at the
        // jump forward (frame 40), nor an hour late after the jump back.
        let ended: Vec<(i64, &Episode)> = changes
            .iter()
            .filter_map(|(i, c)| match c {
                Change::Ended(e) => Some((*i, e)),
                _ => None,
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

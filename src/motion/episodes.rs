//! From moving frames to events: an event starts only when motion is seen
//! in frames covering half of the last second (3 of 5 frames at full rate:
//! a lone flicker is not one), ends
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
//! Frames come 5 a second, or only the stream's key frames (every 1 or 2 s,
//! up to 10) while nothing moves: [`Episodes::wants_full_rate`] says which.
//! A moving key frame starts an event with the full-rate frames that follow
//! it, at its own time.
//! Each frame comes with two times: a monotonic one, by which all of this
//! is timed (the wall clock may jump: NTP at boot, a clock set by hand),
//! and the wall clock's, which is only what the events report. Time is
//! passed in, so all of it is tested without waiting.

use std::collections::VecDeque;

/// A frame at full rate (5 a second): the longest a frame's motion counts
/// for. A key frame seconds after the one before showed its motion at that
/// moment, not for all that time.
const FRAME_MS: i64 = 200;
/// The frames looked at together to start an event: the last second's
/// worth, each counting for the time since the one before (at most
/// [`FRAME_MS`]), none older than [`CANDIDATE_MS`].
const WINDOW_MS: i64 = 1_000;
/// Moving frames covering this much of the window start an event.
const MOVING_MS: i64 = 500;
/// How long a moving key frame waits for the full-rate frames that confirm
/// it (the watcher switches pace at it): then it is the event's start.
const CANDIDATE_MS: i64 = 2_000;
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

/// A frame while no event is on.
struct Seen {
    at: Moment,
    /// The share of the picture that moved, and whether it was changing.
    share: f32,
    changing: bool,
    /// The time it counts for (ms).
    covers: i64,
}

#[derive(Default)]
pub struct Episodes {
    /// The window of frames while no event is on.
    window: VecDeque<Seen>,
    current: Option<Current>,
    /// The last frame's monotonic time, and whether anything moved in it.
    last_ms: Option<i64>,
    stirring: bool,
}

impl Episodes {
    /// Takes a frame seen `at` in which `share` of the picture moved
    /// (`changing`: and changed since the last frame); `present`: what came
    /// with the event under way is still in the picture (false from a
    /// watcher that cannot tell who it is).
    pub fn frame(&mut self, at: Moment, share: f32, changing: bool, present: bool) -> Vec<Change> {
        let mut changes = Vec::new();
        let covers = self
            .last_ms
            .replace(at.mono_ms)
            .map_or(FRAME_MS, |last| (at.mono_ms - last).clamp(0, FRAME_MS));
        self.stirring = share > 0.0;
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
        self.window.push_back(Seen {
            at,
            share,
            changing,
            covers,
        });
        let mut covered: i64 = self.window.iter().map(|s| s.covers).sum();
        while let Some(oldest) = self.window.front()
            && (covered - oldest.covers >= WINDOW_MS
                || at.mono_ms - oldest.at.mono_ms >= CANDIDATE_MS)
        {
            covered -= oldest.covers;
            self.window.pop_front();
        }
        let moving = self.window.iter().filter(|s| s.share > 0.0);
        let moving_ms: i64 = moving.clone().map(|s| s.covers).sum();
        // Something that changed, not only a thing the background has not
        // taken in yet (one that stopped as the last event ended).
        let changed = moving.clone().any(|s| s.changing);
        if self.stirring && changed && moving_ms >= MOVING_MS {
            let first = moving.clone().next().expect("some moved").at;
            let (peak, score) = moving.fold((at, 0.0f32), |best, s| {
                if s.share > best.1 {
                    (s.at, s.share)
                } else {
                    best
                }
            });
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

    /// Whether frames should come at full rate (5 a second) rather than key
    /// frames alone, as of the last frame: while an event is on, and until
    /// the frames of a second have shown nothing off the background (a
    /// moving frame may start an event; at its end, what stopped may not be
    /// taken in yet). Then key frames are enough.
    pub fn wants_full_rate(&self) -> bool {
        self.current.is_some() || self.stirring || self.window.iter().any(|s| s.share > 0.0)
    }

    /// The event under way, as it stands.
    pub fn current(&self) -> Option<&Episode> {
        self.current.as_ref().map(|c| &c.episode)
    }

    /// The event under way ends now (the frames stopped): at its last moving frame.
    pub fn finish(&mut self) -> Option<Episode> {
        self.window.clear();
        self.stirring = false;
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
    fn a_moving_key_frame_starts_it_with_the_full_rate_frames_after_it_not_an_older_flicker() {
        // Key frames every 2 s: a flicker at 10 s, still at 12 s; at 14 s
        // something comes, and the frames after it come 5 a second.
        let mut episodes = Episodes::default();
        let mut changes = Vec::new();
        let mut pace = Vec::new();
        for (ms, share) in [(8_000, 0.0), (10_000, 0.1), (12_000, 0.0), (14_000, 0.1)]
            .into_iter()
            .chain((1..=5).map(|i| (14_000 + 200 * i, 0.1)))
        {
            changes.extend(episodes.frame(same(ms), share, true, false));
            pace.push(episodes.wants_full_rate());
        }
        // Started at the key frame at 14 s, with the two frames after it.
        assert_eq!(changes, vec![Change::Started { at_ms: 14_000 }]);
        // Full rate wanted at the flicker (until it is 2 s old) and at the
        // key frame at 14 s, key frames enough before.
        assert_eq!(pace[..4], [false, true, false, true]);
    }

    #[test]
    fn key_frames_are_enough_once_the_event_ended_and_the_scene_is_still() {
        let mut episodes = Episodes::default();
        feed(&mut episodes, 0, &[0.1; 10]);
        assert!(episodes.wants_full_rate());
        // Still for 10 s but for a thing not taken in yet: the event ends,
        // and full rate goes on while anything differs from the background.
        let mut ended = false;
        for i in 10..70 {
            let changes = episodes.frame(same(200 * i), 0.05, false, false);
            ended |= !changes.is_empty();
        }
        assert!(ended && episodes.wants_full_rate());
        // Taken in: key frames once the window holds a second of still frames.
        let mut pace = Vec::new();
        for i in 70..76 {
            episodes.frame(same(200 * i), 0.0, false, false);
            pace.push(episodes.wants_full_rate());
        }
        assert_eq!(pace, [true, true, true, true, false, false]);
        // A flicker at key pace: full rate for a second of frames, then key.
        episodes.frame(same(16_000), 0.1, true, false);
        assert!(episodes.wants_full_rate());
        let mut pace = Vec::new();
        for i in 1..=6 {
            assert_eq!(
                episodes.frame(same(16_000 + 200 * i), 0.0, false, false),
                []
            );
            pace.push(episodes.wants_full_rate());
        }
        assert_eq!(pace, [true, true, true, true, false, false]);
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

/// The detector and the episodes together, fed as the watcher feeds them:
/// at full rate, or at key frames' pace while they say key frames are
/// enough (switching to full rate takes the watcher a while).
#[cfg(test)]
mod paced {
    use std::time::Duration;

    use super::*;
    use crate::motion::detector::{Detector, Params};

    /// The detector's picture, and the side of the box that moves in it.
    const W: usize = 160;
    const H: usize = 90;
    const SIDE: usize = 20;

    /// A scene at a time (ms): its grey level, where the box is if
    /// anywhere, and whether someone is there (the classifier's answer).
    type Scene = fn(i64) -> (u8, Option<usize>, bool);

    /// Grey `level` with grain of ±6 (a pattern that changes with `ms`),
    /// and a white box at (`x`, 35).
    fn picture(ms: i64, level: u8, x: Option<usize>) -> Vec<u8> {
        let mut state = (ms as u32).wrapping_mul(2_654_435_761).wrapping_add(1);
        let mut pixels: Vec<u8> = (0..W * H)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (i16::from(level) + (state % 13) as i16 - 6) as u8
            })
            .collect();
        if let Some(x) = x {
            for y in 35..35 + SIDE {
                for p in &mut pixels[y * W + x..(y * W + x + SIDE).min((y + 1) * W)] {
                    *p = 250;
                }
            }
        }
        pixels
    }

    /// Where a box moving from `from` to `to` between `start` and `end` (ms) is at `ms`.
    fn moving(ms: i64, (start, end): (i64, i64), (from, to): (i64, i64)) -> usize {
        (from + (to - from) * (ms - start) / (end - start)) as usize
    }

    /// Someone crossing the picture in 3 s from 20 s.
    fn crossing(ms: i64) -> (u8, Option<usize>, bool) {
        let x = (20_000..23_000)
            .contains(&ms)
            .then(|| moving(ms, (20_000, 23_000), (0, 140)));
        (100, x, false)
    }

    /// A car that comes in 2 s from 20 s and parks.
    fn parking(ms: i64) -> (u8, Option<usize>, bool) {
        let x = (ms >= 20_000).then(|| moving(ms.min(22_000), (20_000, 22_000), (0, 60)));
        (100, x, false)
    }

    /// Someone who comes in 2 s from 20 s, stands still for half a minute
    /// and leaves in a second.
    fn standing(ms: i64) -> (u8, Option<usize>, bool) {
        let x = match ms {
            20_000..22_000 => Some(moving(ms, (20_000, 22_000), (0, 60))),
            22_000..50_000 => Some(60),
            50_000..51_000 => Some(moving(ms, (50_000, 51_000), (60, 140))),
            _ => None,
        };
        (100, x, true)
    }

    /// The lights coming on at 20 s.
    fn lights(ms: i64) -> (u8, Option<usize>, bool) {
        (if ms < 20_000 { 100 } else { 170 }, None, false)
    }

    /// Something in one frame at 20 s.
    fn flicker(ms: i64) -> (u8, Option<usize>, bool) {
        (100, (20_000..20_200).contains(&ms).then_some(70), false)
    }

    /// A scene's events over 90 s (their start and end, ms), the frames
    /// looked at, and whether the last came at key frames' pace: at full
    /// rate always (`key_every` None), or at key frames every `key_every`
    /// ms while the episodes want no more, full-rate frames coming
    /// `switch_ms` after they do.
    fn run(scene: Scene, key_every: Option<i64>, switch_ms: i64) -> (Vec<(i64, i64)>, usize, bool) {
        let mut detector = Detector::new(W, H, Params::MEDIUM);
        let mut episodes = Episodes::default();
        let (mut events, mut frames, mut at_key) = (Vec::new(), 0, false);
        let mut ms = 0;
        while ms < 90_000 {
            let (level, x, someone) = scene(ms);
            let motion = detector.frame(&picture(ms, level, x), Duration::from_millis(ms as u64));
            frames += 1;
            let at = Moment {
                mono_ms: ms,
                wall_ms: ms,
            };
            for change in episodes.frame(at, motion.share, motion.changing, motion.present) {
                match change {
                    Change::Started { .. } => detector.hold_reference(),
                    Change::StillThere if someone => episodes.someone_there(at),
                    Change::StillThere => episodes.no_one_there(),
                    Change::Ended(e) => events.push((e.started_ms, e.ended_ms)),
                }
            }
            if episodes.current().is_none() {
                detector.release_reference();
            }
            (ms, at_key) = match key_every {
                Some(every) if !episodes.wants_full_rate() => ((ms / every + 1) * every, true),
                _ if at_key => (ms + switch_ms, false),
                _ => (ms + 200, false),
            };
        }
        events.extend(episodes.finish().map(|e| (e.started_ms, e.ended_ms)));
        (events, frames, at_key)
    }

    #[test]
    fn key_frames_while_still_give_the_events_of_full_rate() {
        let scenes: [(&str, Scene, usize); 5] = [
            ("someone crossing", crossing, 1),
            ("a car that parks", parking, 1),
            ("someone standing still", standing, 1),
            ("the lights", lights, 0),
            ("a flicker", flicker, 0),
        ];
        for (name, scene, count) in scenes {
            let (full, all_frames, _) = run(scene, None, 0);
            assert_eq!(full.len(), count, "{name} at full rate: {full:?}");
            for (every, switch_ms) in [(1_000, 400), (2_000, 400), (2_000, 1_000)] {
                let (paced, frames, key) = run(scene, Some(every), switch_ms);
                let pace =
                    format!("{name}, key frames every {every} ms, full rate {switch_ms} ms later");
                assert_eq!(
                    paced.len(),
                    count,
                    "{pace}: {paced:?}, at full rate {full:?}"
                );
                for (&(start, end), &(full_start, full_end)) in paced.iter().zip(&full) {
                    // It starts at the key frame that first showed the motion
                    // (on the key frames' grid here) and ends as at full rate.
                    assert_eq!(
                        start, full_start,
                        "{pace}: {paced:?}, at full rate {full:?}"
                    );
                    assert!(
                        (end - full_end).abs() <= 400,
                        "{pace}: {paced:?}, at full rate {full:?}"
                    );
                }
                assert!(
                    key && frames < all_frames,
                    "{pace}: {frames} frames of {all_frames}"
                );
            }
        }
    }
}

//! The clips waiting for their recording. Each waits until the recording
//! reaches its clip's end, 40 s at most from when it came (not at all when
//! that end is further back than the wait: its recording is as long as it
//! will get), or until its camera is no longer recorded. The one thread
//! that cuts clips looks at the oldest waiting job of each camera, so one
//! camera's wait holds up no other camera's clip, and each camera's clips
//! are cut in the order their events came. Pure: time is passed in.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::Job;
use crate::event::{CLIP_MARGIN_MS, LONGEST_EVENT_MS};

/// The longest wait for the recording to reach a clip's end.
pub const WAIT: Duration = Duration::from_secs(40);
/// A recording that ends within a frame of the clip's end reaches it.
const WITHIN_MS: i64 = 250;

/// The stretch of recording an event's clip is cut from: the margins
/// around the event, which counts for no more than the longest event
/// (a posted event may say it lasted an hour).
pub fn window(job: &Job) -> (i64, i64) {
    let end = job.ended_ms.min(job.started_ms + LONGEST_EVENT_MS);
    (job.started_ms - CLIP_MARGIN_MS, end + CLIP_MARGIN_MS)
}

/// What a job's camera has recorded, as looked at now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// Where the recording of the job's window ends; None: nothing of it.
    pub recorded_to: Option<i64>,
    /// Whether the camera is still recorded (or keeps a ring).
    pub recording: bool,
}

struct Waiting {
    job: Job,
    deadline: Instant,
}

/// The jobs waiting, in the order they came.
#[derive(Default)]
pub struct Schedule {
    waiting: Vec<Waiting>,
}

impl Schedule {
    /// Takes a job that came at `now` (`now_ms` on the wall clock).
    pub fn add(&mut self, job: Job, now: Instant, now_ms: i64) {
        let (_, to) = window(&job);
        let recent = to > now_ms - WAIT.as_millis() as i64;
        let deadline = if recent { now + WAIT } else { now };
        self.waiting.push(Waiting { job, deadline });
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Takes the jobs due now, in the order they came: of the oldest
    /// waiting job of each camera, those whose wait is over, and those
    /// whose recording `look` finds at their clip's end or no longer
    /// going on (waiting would be waiting for nothing).
    pub fn take_due(&mut self, now: Instant, mut look: impl FnMut(&Job) -> Look) -> Vec<Job> {
        let mut cameras = HashSet::new();
        let (due, waiting): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| cameras.insert(w.job.camera) && w.is_due(now, &mut look));
        self.waiting = waiting;
        due.into_iter().map(|w| w.job).collect()
    }
}

impl Waiting {
    fn is_due(&self, now: Instant, look: impl FnOnce(&Job) -> Look) -> bool {
        if now >= self.deadline {
            return true;
        }
        let (_, to) = window(&self.job);
        let look = look(&self.job);
        !look.recording || look.recorded_to.is_some_and(|end| end >= to - WITHIN_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    const MINUTE: i64 = 60_000;

    fn job(camera: Uuid, started_ms: i64, ended_ms: i64) -> Job {
        Job {
            event: Uuid::new_v4(),
            camera,
            started_ms,
            ended_ms,
            peak_ms: started_ms,
            mark: None,
            pin: None,
        }
    }

    #[test]
    fn windows() {
        let camera = Uuid::nil();
        let table = [
            // started, ended -> from, to
            (100_000, 102_000, 95_000, 107_000),
            (100_000, 100_000, 95_000, 105_000),
            (0, 5 * MINUTE, -5_000, 5 * MINUTE + 5_000),
            // An hour: its first 5 minutes, with the margins.
            (0, 60 * MINUTE, -5_000, 5 * MINUTE + 5_000),
        ];
        for (started, ended, from, to) in table {
            assert_eq!(
                window(&job(camera, started, ended)),
                (from, to),
                "{started} {ended}"
            );
        }
    }

    /// The events (by index into `jobs`) taken at `at` seconds, the
    /// recording of camera `cam` having reached `recorded[cam]`.
    fn taken(
        schedule: &mut Schedule,
        jobs: &[Job],
        t0: Instant,
        at: u64,
        recorded: &[(Uuid, i64, bool)],
    ) -> Vec<usize> {
        let mut looked = Vec::new();
        let due = schedule.take_due(t0 + Duration::from_secs(at), |job| {
            looked.push(job.camera);
            let (_, to, recording) = *recorded.iter().find(|r| r.0 == job.camera).unwrap();
            Look {
                recorded_to: Some(to),
                recording,
            }
        });
        let unique: HashSet<_> = looked.iter().collect();
        assert_eq!(unique.len(), looked.len(), "one look per camera");
        due.iter()
            .map(|d| jobs.iter().position(|j| j.event == d.event).unwrap())
            .collect()
    }

    #[test]
    fn a_waiting_camera_holds_up_no_other() {
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let now_ms = 1_000 * MINUTE;
        let t0 = Instant::now();
        // Camera a's event ends in 20 s; b's ended 2 s ago; b's next one just
        // now; c's an hour ago (long past: no wait).
        let jobs = [
            job(a, now_ms - 10_000, now_ms + 20_000),
            job(b, now_ms - 4_000, now_ms - 2_000),
            job(b, now_ms - 1_000, now_ms),
            job(c, now_ms - 60 * MINUTE, now_ms - 59 * MINUTE),
        ];
        let mut schedule = Schedule::default();
        for job in &jobs {
            schedule.add(job.clone(), t0, now_ms);
        }
        let recorded = |to_a, to_b| [(a, to_a, true), (b, to_b, true), (c, 0, true)];
        let table: [(u64, [_; 3], &[usize], &str); 5] = [
            (
                0,
                recorded(now_ms, now_ms + 3_000),
                &[1, 3],
                "b's first clip has its end and its 5 s after; c's waits for nothing",
            ),
            (
                1,
                recorded(now_ms, now_ms + 4_000),
                &[],
                "b's second waits behind its first",
            ),
            (
                3,
                recorded(now_ms + 1_000, now_ms + 4_800),
                &[2],
                "b's second is due once recorded within a frame of its end",
            ),
            (
                39,
                recorded(now_ms + 10_000, now_ms),
                &[],
                "a's waits its 40 s at most",
            ),
            (
                40,
                recorded(now_ms + 10_000, now_ms),
                &[0],
                "then a's is cut with what there is",
            ),
        ];
        for (seconds, recorded, want, why) in table {
            assert_eq!(
                taken(&mut schedule, &jobs, t0, seconds, &recorded),
                want,
                "{why}"
            );
        }
        assert!(schedule.is_empty());
    }

    #[test]
    fn a_camera_no_longer_recorded_is_waited_for_no_more() {
        let a = Uuid::new_v4();
        let now_ms = 1_000 * MINUTE;
        let t0 = Instant::now();
        let jobs = [
            job(a, now_ms, now_ms + 1_000),
            job(a, now_ms + 1, now_ms + 2),
        ];
        let mut schedule = Schedule::default();
        for job in &jobs {
            schedule.add(job.clone(), t0, now_ms);
        }
        assert!(taken(&mut schedule, &jobs, t0, 1, &[(a, now_ms, true)]).is_empty());
        // Each job of the camera in turn, one a look.
        assert_eq!(
            taken(&mut schedule, &jobs, t0, 2, &[(a, now_ms, false)]),
            [0]
        );
        assert_eq!(
            taken(&mut schedule, &jobs, t0, 2, &[(a, now_ms, false)]),
            [1]
        );
    }
}

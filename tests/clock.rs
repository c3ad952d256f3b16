//! A clock that is not set, or jumps ahead, through the real node: Debian's
//! libfaketime sets the node's wall clock (and its ffmpeg's, which inherit
//! it) a day behind, as a board without a real-time clock boots, then right
//! again while it runs, as NTP does minutes later; or two days ahead while
//! it runs, then right again. The monotonic clock is left alone, as it is
//! on the board. Whether the kernel calls the clock synchronised, which
//! libfaketime does not fake, is the test's to say (`adjtimex_standin`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{
    Camera, Node, SegmentRow as Row, TempDir, iso, ms, now_ms, segment_rows, wait_for,
};
use serde_json::json;

const DAY_MS: i64 = 86_400_000;

/// Debian's libfaketime (package faketime), the variant for threaded programs.
fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .unwrap()
        .flatten()
        .map(|arch| arch.path().join("faketime/libfaketimeMT.so.1"))
        .find(|path| path.exists());
    found.expect("libfaketime (install Debian's faketime: tests/run.sh does)")
}

/// The stand-in for the kernel's answer to adjtimex (tests/clock/adjtimex.c,
/// which says where it differs), built into `dir` with the system's C
/// compiler: libfaketime leaves adjtimex to the real kernel, whose answer is
/// the host's NTP's, not the faked clock's.
fn adjtimex_standin(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clock/adjtimex.c");
    let built = dir.join("adjtimex.so");
    let command = format!(
        "cc -shared -fPIC -o {} {}",
        built.display(),
        source.display()
    );
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&built)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("{command}: {e} (a C compiler, cc, is needed)"));
    assert!(status.success(), "{command}: {status}");
    built
}

/// The environment that runs the node under libfaketime, its wall clock
/// offset as `clock_file` says, and with the kernel's "synchronised" as
/// `sync_file` says ("1" or "0").
struct Faked {
    preload: String,
    clock_file: PathBuf,
    sync_file: PathBuf,
}

impl Faked {
    fn new(dir: &Path, offset: &str, synchronised: bool) -> Faked {
        let faked = Faked {
            preload: format!(
                "{} {}",
                adjtimex_standin(dir).display(),
                libfaketime().display()
            ),
            clock_file: dir.join("faketime"),
            sync_file: dir.join("synchronised"),
        };
        faked.set(offset, synchronised);
        faked
    }

    /// The wall clock `offset` from the true time (libfaketime's "+2d"),
    /// and whether NTP synchronised it.
    fn set(&self, offset: &str, synchronised: bool) {
        std::fs::write(&self.sync_file, if synchronised { "1\n" } else { "0\n" }).unwrap();
        std::fs::write(&self.clock_file, format!("{offset}\n")).unwrap();
    }

    fn vars(&self) -> [(&str, &str); 5] {
        [
            ("LD_PRELOAD", &self.preload),
            ("FAKETIME_TIMESTAMP_FILE", self.clock_file.to_str().unwrap()),
            ("FAKETIME_NO_CACHE", "1"),
            ("DONT_FAKE_MONOTONIC", "1"),
            ("NVR_TEST_SYNC_FILE", self.sync_file.to_str().unwrap()),
        ]
    }
}

/// The recorded spans of `camera` over the three days to now, as (start, end).
fn spans(node: &Node, camera: &str) -> Vec<(i64, i64)> {
    let now = now_ms();
    let listing = node
        .get(&format!(
            "/api/cameras/{camera}/recordings?start={}&end={}",
            iso(now - 3 * DAY_MS),
            iso(now + 60_000)
        ))
        .json();
    listing
        .as_array()
        .unwrap_or_else(|| panic!("spans: {listing}"))
        .iter()
        .map(|s| {
            (
                ms(s["start"].as_str().unwrap()),
                ms(s["end"].as_str().unwrap()),
            )
        })
        .collect()
}

/// The rows of the segments not in `before`.
fn new_rows(data: &Path, before: &[Row]) -> Vec<Row> {
    segment_rows(data)
        .into_iter()
        .filter(|r| !before.iter().any(|b| b.path == r.path))
        .collect()
}

#[test]
fn footage_recorded_while_the_clock_was_not_set_moves_to_its_true_time_and_goes_in_order() {
    let started = Instant::now();
    let camera = Camera::start();
    let data = TempDir::new("clock");
    let recordings = data.path().join("recordings");

    // Footage recorded ten minutes ago, by a node whose clock is right: the
    // clock file stands for the passing time (the node is then off for ten
    // minutes, a power cut). (A build from a commit not ten minutes old
    // takes that clock for one not set, and times this footage from the
    // commit on: the node is off for less, and all below holds the same.)
    let clock = Faked::new(data.path(), "-10m", false);
    let faked = |budget: &str| {
        let mut vars = vec![("RECORDINGS_MAX_BYTES", budget)];
        vars.extend(clock.vars());
        Node::start_recording(data.path(), &recordings, &vars)
    };
    let node = faked("1G");
    let created = node
        .add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    let one = wait_for(Duration::from_secs(30), || {
        !segment_rows(data.path()).is_empty()
    });
    assert!(one, "nothing recorded");
    node.terminate();
    node.wait();
    let older = segment_rows(data.path());
    let largest = older.iter().map(|r| r.bytes).max().unwrap();

    // It starts again with its clock a day behind, as a board without a
    // real-time clock boots, keeping about four segments: retention
    // deletes while the clock is not set.
    clock.set("-1d", false);
    let booted_ms = now_ms();
    let node = faked(&(4 * largest).to_string());
    let mut said_unset = None;
    // About a minute of footage.
    let recorded = wait_for(Duration::from_secs(80), || {
        let clock = &node.get("/api/status").json()["clock"];
        if said_unset.is_none() && clock.is_string() {
            said_unset = Some(clock.to_string());
        }
        new_rows(data.path(), &older).len() >= 6 || (now_ms() - booted_ms) > 75_000
    });
    assert!(recorded);
    let unset_rows = new_rows(data.path(), &older);
    let while_unset = spans(&node, &id);

    // NTP sets the clock.
    clock.set("+0", true);
    let set_ms = now_ms();
    let placed = wait_for(Duration::from_secs(40), || {
        let rows = new_rows(data.path(), &older);
        rows.iter().any(|r| r.start_ms > set_ms)
            && rows.iter().all(|r| r.start_ms >= booted_ms - 15_000)
    });
    let rows = segment_rows(data.path());
    let after = spans(&node, &id);
    let status_clock = node.get("/api/status").json()["clock"].clone();
    eprintln!(
        "older footage: {:?}\nwhile unset: rows {:?}\n  spans {:?}\nafter the clock was set ({}): rows {:?}\n  spans {:?}",
        older.iter().map(|r| iso(r.start_ms)).collect::<Vec<_>>(),
        unset_rows
            .iter()
            .map(|r| iso(r.start_ms))
            .collect::<Vec<_>>(),
        while_unset
            .iter()
            .map(|(a, b)| (iso(*a), iso(*b)))
            .collect::<Vec<_>>(),
        iso(set_ms),
        rows.iter().map(|r| iso(r.start_ms)).collect::<Vec<_>>(),
        after
            .iter()
            .map(|(a, b)| (iso(*a), iso(*b)))
            .collect::<Vec<_>>(),
    );

    // The spans sit at the true times: the newer footage from about when
    // the node started again to now, nothing a day back.
    assert!(placed, "not all moved to their true times: {rows:?}");
    assert_eq!(after.len(), 1, "one span of the newest footage: {after:?}");
    let (start, end) = after[0];
    assert!(
        start >= booted_ms - 5_000 && end >= set_ms && end <= now_ms() + 5_000,
        "the footage kept spans {} to {} (the node started at {})",
        iso(start),
        iso(end),
        iso(booted_ms)
    );
    // Retention took the truly oldest first: the footage from before is
    // gone, and what is left is the newest.
    assert!(
        rows.iter().all(|r| !older.contains(r)),
        "older footage kept while newer went: {rows:?}"
    );
    assert!(rows.len() >= 3, "{rows:?}");

    // Status said so meanwhile, and no longer does.
    let said = said_unset.expect("status never said the clock is not set");
    assert!(said.contains("the clock is not set"), "{said}");
    assert!(status_clock.is_null(), "{status_clock}");
    eprintln!("ran in {:?}", started.elapsed());
}

#[test]
fn retain_days_deletes_nothing_while_the_clock_is_not_set() {
    let camera = Camera::start();
    let data = TempDir::new("clock-age");
    let recordings = data.path().join("recordings");
    let clock = Faked::new(data.path(), "+0", false);
    let faked = || Node::start_recording(data.path(), &recordings, &clock.vars());
    let stop = |node: Node| {
        node.terminate();
        node.wait();
    };
    let node = faked();
    let created = node
        .add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        wait_for(Duration::from_secs(30), || !segment_rows(data.path())
            .is_empty()),
        "nothing recorded"
    );
    stop(node);
    // A segment from 3 days ago, indexed by a node whose clock is right.
    let old = crate::recording::file_as_old(&recordings, &segment_rows(data.path())[0], 3 * DAY_MS);
    let node = faked();
    let indexed = || segment_rows(data.path()).iter().any(|r| r.path == old);
    assert!(
        wait_for(Duration::from_secs(30), indexed),
        "{}",
        node.logs()
    );
    stop(node);

    // Booted a day behind: the clock is not set, and a day's retainDays
    // deletes nothing through several of the cleaner's passes.
    clock.set("-1d", false);
    let node = faked();
    assert!(
        wait_for(Duration::from_secs(10), || {
            node.get("/api/status").json()["clock"].is_string()
        }),
        "the clock is taken for set"
    );
    let patched = node.patch_camera(&id, json!({ "retainDays": 1 }));
    assert_eq!(patched["retainDays"], 1, "{patched}");
    let before = segment_rows(data.path());
    assert!(
        wait_for(Duration::from_secs(40), || new_rows(data.path(), &before)
            .len()
            >= 2),
        "no new segments: {}",
        node.logs()
    );
    assert!(node.get("/api/status").json()["clock"].is_string());
    assert!(indexed(), "deleted by age while the clock was not set");
    assert!(recordings.join(&old).exists());
    assert!(!node.logs().contains("retainDays"), "{}", node.logs());

    // NTP sets it: the 3-day-old segment goes, under the rule's name.
    clock.set("+0", true);
    assert!(
        wait_for(Duration::from_secs(75), || !indexed()
            && node
                .logs()
                .contains("that ended more than 1 days ago: retainDays")),
        "{}",
        node.logs()
    );
    assert!(!recordings.join(&old).exists());
}

#[test]
fn a_clock_that_jumps_two_days_ahead_deletes_nothing_and_footage_stays_at_its_true_time() {
    let camera = Camera::start();
    let data = TempDir::new("clock-ahead");
    let recordings = data.path().join("recordings");
    // A board with its clock right and no NTP answering (a LAN without the
    // internet): the kernel says the clock is not synchronised.
    let faked = Faked::new(data.path(), "+0", false);
    let start = || Node::start_recording(data.path(), &recordings, &faked.vars());
    let stop = |node: Node| {
        node.terminate();
        node.wait();
    };
    let node = start();
    let created = node
        .add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        wait_for(Duration::from_secs(30), || !segment_rows(data.path())
            .is_empty()),
        "nothing recorded: {}",
        node.logs()
    );
    stop(node);
    // Footage of 3 days ago (past a day's retainDays) and of 20 hours ago
    // (within it), indexed by a node whose clock is right.
    let first = &segment_rows(data.path())[0];
    let old = crate::recording::file_as_old(&recordings, first, 3 * DAY_MS);
    let young = crate::recording::file_as_old(&recordings, first, 20 * 3_600_000);
    let node = start();
    let has = |path: &str| segment_rows(data.path()).iter().any(|r| r.path == path);
    assert!(
        wait_for(Duration::from_secs(30), || has(&old) && has(&young)),
        "{}",
        node.logs()
    );
    assert!(
        wait_for(Duration::from_secs(30), || segment_rows(data.path()).len()
            >= 5),
        "{}",
        node.logs()
    );

    // The clock jumps two days ahead (a typo, a rogue time source), and
    // the camera keeps a day.
    let before_step = segment_rows(data.path());
    let stepped_ms = now_ms();
    faked.set("+2d", false);
    let mut said = String::new();
    let doubted = wait_for(Duration::from_secs(10), || {
        let clock = &node.get("/api/status").json()["clock"];
        said = clock.to_string();
        clock.is_string()
    });
    assert!(doubted, "the jump was believed: {said}\n{}", node.logs());
    assert!(said.contains("ahead"), "{said}");
    let patched = node.patch_camera(&id, json!({ "retainDays": 1 }));
    assert_eq!(patched["retainDays"], 1, "{patched}");
    // Nothing is deleted through several of the cleaner's passes (one
    // after each new segment).
    let passes = wait_for(Duration::from_secs(40), || {
        new_rows(data.path(), &before_step).len() >= 3
    });
    assert!(passes, "no new segments: {}", node.logs());
    let rows = segment_rows(data.path());
    let lost: Vec<&Row> = before_step.iter().filter(|r| !rows.contains(r)).collect();
    assert!(
        lost.is_empty(),
        "deleted while the clock was two days ahead: {lost:?}\n{}",
        node.logs()
    );
    assert!(!node.logs().contains("retainDays"), "{}", node.logs());
    assert!(node.get("/api/status").json()["clock"].is_string());
    // New footage is timed from before the jump on, not two days ahead.
    let ahead: Vec<Row> = new_rows(data.path(), &before_step)
        .into_iter()
        .filter(|r| r.start_ms > now_ms() + 60_000)
        .collect();
    assert!(ahead.is_empty(), "footage stamped ahead: {ahead:?}");

    // The clock is set back: status clears, the footage recorded meanwhile
    // is at its true time, and the age rule deletes only what is truly
    // older than a day.
    faked.set("+0", false);
    let set_ms = now_ms();
    let cleared = wait_for(Duration::from_secs(10), || {
        node.get("/api/status").json()["clock"].is_null()
    });
    assert!(cleared, "{}", node.get("/api/status").json()["clock"]);
    let expired = wait_for(Duration::from_secs(75), || {
        !has(&old)
            && node
                .logs()
                .contains("that ended more than 1 days ago: retainDays")
    });
    assert!(expired, "{}", node.logs());
    assert!(!recordings.join(&old).exists());
    let rows = segment_rows(data.path());
    let lost: Vec<&Row> = before_step
        .iter()
        .filter(|r| r.path != old && !rows.contains(r))
        .collect();
    assert!(
        lost.is_empty(),
        "deleted though younger than a day: {lost:?}\n{}",
        node.logs()
    );
    assert!(recordings.join(&young).exists());
    let meanwhile: Vec<Row> = new_rows(data.path(), &before_step)
        .into_iter()
        .filter(|r| r.start_ms < set_ms)
        .collect();
    assert!(meanwhile.len() >= 3, "{meanwhile:?}");
    for row in rows.iter().filter(|r| !before_step.contains(r)) {
        assert!(
            row.start_ms >= stepped_ms - 15_000 && row.start_ms <= now_ms(),
            "{} is not at its true time (the jump at {}, set back at {})",
            iso(row.start_ms),
            iso(stepped_ms),
            iso(set_ms)
        );
    }
    let listed = spans(&node, &id);
    assert!(
        listed
            .iter()
            .any(|(a, b)| *a <= stepped_ms - 10_000 && *b >= set_ms),
        "the footage across the jump is not one span: {listed:?}"
    );
    stop(node);
}

#[test]
fn footage_timed_by_a_wrong_clock_ahead_moves_back_once_a_synchronised_clock_is_behind_it() {
    let camera = Camera::start();
    let data = TempDir::new("clock-lowered");
    let recordings = data.path().join("recordings");
    let faked = Faked::new(data.path(), "+0", true);
    let start = || Node::start_recording(data.path(), &recordings, &faked.vars());
    let node = start();
    let body = json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false, "retainDays": 1 });
    let id = node.add_camera(body)["id"].as_str().unwrap().to_owned();
    let recorded = |node: &Node, rows: &[Row], n: usize| {
        let more = wait_for(Duration::from_secs(40), || {
            new_rows(data.path(), rows).len() >= n
        });
        assert!(more, "no new segments: {}", node.logs());
    };
    recorded(&node, &[], 2);
    let ahead = || {
        let now = now_ms();
        segment_rows(data.path())
            .into_iter()
            .filter(|r| r.start_ms > now + 60_000)
            .count()
    };
    let in_the_future = |node: &Node, rows: &[Row]| {
        recorded(node, rows, 2);
        assert!(
            ahead() >= 1,
            "nothing timed two days ahead: {:?}",
            segment_rows(data.path())
        );
    };

    // A time server says two days ahead, synchronised: believed, but
    // nothing goes by age; then NTP puts it right.
    let before = segment_rows(data.path());
    faked.set("+2d", true);
    in_the_future(&node, &before);
    faked.set("+0", true);
    let back = wait_for(Duration::from_secs(75), || ahead() == 0);
    let rows = segment_rows(data.path());
    assert!(back, "footage left ahead: {rows:?}\n{}", node.logs());
    assert!(node.get("/api/status").json()["clock"].is_null());
    assert_eq!(rows.len(), new_rows(data.path(), &[]).len());
    let lost: Vec<&Row> = before
        .iter()
        .filter(|r| !rows.iter().any(|n| n.path == r.path))
        .collect();
    assert!(lost.is_empty(), "{lost:?}\n{}", node.logs());
    assert!(!node.logs().contains("retainDays"), "{}", node.logs());
    // One span: the footage timed ahead lies where it was recorded.
    let listed = spans(&node, &id);
    assert_eq!(listed.len(), 1, "{listed:?}");

    // Again, and the node restarts after the clock is put right: the
    // floor is rebuilt from the newest footage, two days ahead; the
    // synchronised clock is believed below it, and the footage comes back.
    let before = segment_rows(data.path());
    faked.set("+2d", true);
    in_the_future(&node, &before);
    node.terminate();
    node.wait();
    faked.set("+0", true);
    let started_ms = now_ms();
    let node = start();
    let back = wait_for(Duration::from_secs(75), || ahead() == 0);
    let rows = segment_rows(data.path());
    assert!(back, "footage left ahead: {rows:?}\n{}", node.logs());
    assert!(node.get("/api/status").json()["clock"].is_null());
    let lost: Vec<&Row> = before
        .iter()
        .filter(|r| !rows.iter().any(|n| n.path == r.path))
        .collect();
    assert!(lost.is_empty(), "{lost:?}\n{}", node.logs());
    assert!(
        rows.iter().all(|r| r.end_ms <= now_ms() + 5_000),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.start_ms < started_ms + 10_000
                && r.start_ms > before.last().unwrap().start_ms),
        "the footage from two days ahead is not just before the start: {rows:?}"
    );
    node.terminate();
    node.wait();
}

#[test]
fn a_node_started_with_its_clock_two_days_ahead_deletes_nothing_by_age_until_it_is_synchronised() {
    let camera = Camera::start();
    let data = TempDir::new("clock-started-ahead");
    let recordings = data.path().join("recordings");
    // A board with no NTP answering: the kernel says the clock is not
    // synchronised.
    let faked = Faked::new(data.path(), "+0", false);
    let start = || Node::start_recording(data.path(), &recordings, &faked.vars());
    let stop = |node: Node| {
        node.terminate();
        node.wait();
    };
    let node = start();
    let created = node
        .add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        wait_for(Duration::from_secs(30), || segment_rows(data.path()).len()
            >= 2),
        "nothing recorded: {}",
        node.logs()
    );
    stop(node);
    // Footage of the last days: 3 days ago (past a day's retainDays) and
    // 20 hours ago (within it), indexed by a node whose clock is right.
    let first = &segment_rows(data.path())[0];
    let old = crate::recording::file_as_old(&recordings, first, 3 * DAY_MS);
    let young = crate::recording::file_as_old(&recordings, first, 20 * 3_600_000);
    let node = start();
    let has = |path: &str| segment_rows(data.path()).iter().any(|r| r.path == path);
    assert!(
        wait_for(Duration::from_secs(30), || has(&old) && has(&young)),
        "{}",
        node.logs()
    );
    stop(node);

    // It boots with its RTC two days ahead (or kept in local time, or off
    // for two days: the node cannot tell), still not synchronised, and the
    // camera keeps a day.
    let before = segment_rows(data.path());
    faked.set("+2d", false);
    let node = start();
    let patched = node.patch_camera(&id, json!({ "retainDays": 1 }));
    assert_eq!(patched["retainDays"], 1, "{patched}");
    // Nothing is deleted through several of the cleaner's passes (one
    // after each new segment).
    let passes = wait_for(Duration::from_secs(40), || {
        new_rows(data.path(), &before).len() >= 3
    });
    assert!(passes, "no new segments: {}", node.logs());
    let rows = segment_rows(data.path());
    let lost: Vec<&Row> = before.iter().filter(|r| !rows.contains(r)).collect();
    assert!(
        lost.is_empty(),
        "deleted at a start two days ahead: {lost:?}\n{}",
        node.logs()
    );
    assert!(!node.logs().contains("retainDays"), "{}", node.logs());
    let said = node.get("/api/status").json()["clock"].clone();
    assert!(
        said.as_str()
            .is_some_and(|s| s.contains("nothing is deleted by age")),
        "{said}"
    );

    // NTP answers: synchronised, two days behind. The status clears, the
    // footage timed ahead moves back, and the age rule deletes only what
    // is truly older than a day.
    faked.set("+0", true);
    let cleared = wait_for(Duration::from_secs(10), || {
        node.get("/api/status").json()["clock"].is_null()
    });
    assert!(cleared, "{}", node.get("/api/status").json()["clock"]);
    let expired = wait_for(Duration::from_secs(75), || {
        !has(&old)
            && node
                .logs()
                .contains("that ended more than 1 days ago: retainDays")
    });
    assert!(expired, "{}", node.logs());
    assert!(!recordings.join(&old).exists());
    let back = wait_for(Duration::from_secs(75), || {
        let now = now_ms();
        segment_rows(data.path())
            .iter()
            .all(|r| r.start_ms <= now + 60_000)
    });
    let rows = segment_rows(data.path());
    assert!(back, "footage left ahead: {rows:?}\n{}", node.logs());
    let lost: Vec<&Row> = before
        .iter()
        .filter(|r| r.path != old && !rows.iter().any(|n| n.path == r.path))
        .collect();
    assert!(
        lost.is_empty(),
        "deleted though younger than a day: {lost:?}\n{}",
        node.logs()
    );
    assert!(recordings.join(&young).exists());
    assert_eq!(
        node.logs()
            .matches("that ended more than 1 days ago: retainDays")
            .count(),
        1,
        "{}",
        node.logs()
    );
    stop(node);
}

//! A clock that is not set, through the real node: Debian's libfaketime
//! sets the node's wall clock (and its ffmpeg's, which inherit it) a day
//! behind, as a board without a real-time clock boots, then right again
//! while it runs, as NTP does minutes later. The monotonic clock is left
//! alone, as it is on the board.

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
    let clock_file = data.path().join("faketime");
    std::fs::write(&clock_file, "-10m\n").unwrap();
    let preload = libfaketime();
    let faked = |budget: &str| {
        let vars = [
            ("RECORDINGS_MAX_BYTES", budget),
            ("LD_PRELOAD", preload.to_str().unwrap()),
            ("FAKETIME_TIMESTAMP_FILE", clock_file.to_str().unwrap()),
            ("FAKETIME_NO_CACHE", "1"),
            ("DONT_FAKE_MONOTONIC", "1"),
        ];
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
    std::fs::write(&clock_file, "-1d\n").unwrap();
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
    std::fs::write(&clock_file, "+0\n").unwrap();
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
    let clock_file = data.path().join("faketime");
    std::fs::write(&clock_file, "+0\n").unwrap();
    let preload = libfaketime();
    let faked = || {
        let vars = [
            ("LD_PRELOAD", preload.to_str().unwrap()),
            ("FAKETIME_TIMESTAMP_FILE", clock_file.to_str().unwrap()),
            ("FAKETIME_NO_CACHE", "1"),
            ("DONT_FAKE_MONOTONIC", "1"),
        ];
        Node::start_recording(data.path(), &recordings, &vars)
    };
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
    std::fs::write(&clock_file, "-1d\n").unwrap();
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
    std::fs::write(&clock_file, "+0\n").unwrap();
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

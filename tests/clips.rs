//! Events' clips, through the real node, the GStreamer test camera and
//! ffmpeg: kept within their byte budget and their disk's free-space reserve
//! (a small tmpfs of the test's own), the oldest events going first with
//! their files, clip files no event names counted and deleted first when
//! room is needed (never at start), all of it in the log, in status and in
//! the UI's header; a posted event of an hour gets 5 minutes of clip; and a
//! clip waiting for its recording holds up no other camera's.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::common::{
    Camera, Ext4, Node, TempDir, Tmpfs, browser_script, closed_port, iso, now_ms, probe_file,
    segment_rows, wait_for, write_segments,
};
use serde_json::{Value, json};

/// Adds a camera of the test camera's `path` that records and does not
/// detect; returns its id.
fn add_camera(node: &Node, camera: &Camera, path: &str) -> String {
    let body = json!({ "name": path, "rtspUrl": camera.url("", path), "detect": false });
    node.add_camera(body)["id"].as_str().unwrap().to_owned()
}

/// Posts an event of `camera` from `started_ms` to `ended_ms` (since the
/// epoch), without a clip, so the node cuts one; returns its id.
fn post(node: &Node, camera: &str, started_ms: i64, ended_ms: i64) -> String {
    let body = json!({
        "cameraId": camera, "kind": "person", "score": 0.8,
        "startedAt": iso(started_ms), "endedAt": iso(ended_ms),
    });
    let response = node.post_json("/api/events", &body.to_string());
    assert_eq!(response.status, 201, "{response}");
    response.json()["id"].as_str().unwrap().to_owned()
}

fn has_clip(node: &Node, id: &str) -> bool {
    node.listed_event(id)
        .is_some_and(|e| e["clipUrl"].is_string() && e["thumbnailUrl"].is_string())
}

/// Waits for the events to have their clips and thumbnails.
fn wait_for_clips(node: &Node, ids: &[String], timeout: Duration) {
    let done = wait_for(timeout, || ids.iter().all(|id| has_clip(node, id)));
    assert!(
        done,
        "no clips within {timeout:?}: {}",
        node.get("/api/events").json()
    );
}

/// An event's clip and thumbnail, as the node names them.
fn event_files(data: &Path, camera: &str, id: &str) -> [PathBuf; 2] {
    let base = data.join("clips").join(camera);
    [
        base.join(format!("{id}.mp4")),
        base.join(format!("{id}.jpg")),
    ]
}

/// The bytes of an event's clip and thumbnail on disk; none when both are gone.
fn bytes_on_disk(data: &Path, camera: &str, id: &str) -> Option<u64> {
    let sizes: Vec<u64> = event_files(data, camera, id)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .collect();
    (!sizes.is_empty()).then(|| sizes.iter().sum())
}

fn storage(node: &Node) -> Value {
    node.get("/api/status").json()["storage"].clone()
}

/// The free bytes of the file system holding `path`, as `statvfs` tells.
fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs writes only into `stats`; `path` is NUL-terminated.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stats) }, 0);
    stats.f_bavail as u64 * stats.f_frsize as u64
}

/// A size as the UI writes it (`format.js`'s `bytes`): "2.1 GB".
fn ui_bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let (mut value, mut unit) = (n as f64, 0);
    while value >= 999.5 && unit < units.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    let text = if unit > 0 && value < 9.95 {
        format!("{value:.1}")
    } else {
        format!("{}", value.round())
    };
    format!("{text} {}", units[unit])
}

/// Three events in the last 15 s of `camera`'s recording, oldest first,
/// with their clips cut.
fn three_events(node: &Node, camera: &str) -> Vec<String> {
    node.settle(camera);
    thread::sleep(Duration::from_secs(12));
    let now = now_ms();
    let ids: Vec<String> = [(15_000, 13_000), (11_000, 9_000), (7_000, 5_000)]
        .iter()
        .map(|(from, to)| post(node, camera, now - from, now - to))
        .collect();
    wait_for_clips(node, &ids, Duration::from_secs(60));
    ids
}

#[test]
fn clips_over_their_budget_go_oldest_first_with_their_events() {
    let camera = Camera::start();
    let data = TempDir::new("clips-budget");
    let recordings = data.path().join("recordings");
    let no_reserve = ("CLIPS_RESERVE", "0");
    let node = Node::start_recording(data.path(), &recordings, &[no_reserve]);
    let id = add_camera(&node, &camera, "/main");
    let events = three_events(&node, &id);
    let sizes: Vec<u64> = events
        .iter()
        .map(|e| bytes_on_disk(data.path(), &id, e).unwrap())
        .collect();
    let total: u64 = sizes.iter().sum();
    assert!(
        wait_for(Duration::from_secs(10), || storage(&node)["clipsBytes"]
            == total),
        "clipsBytes is not the clips' {total} bytes: {}",
        storage(&node)
    );
    let shown = storage(&node);
    assert_eq!(
        shown["clipsBudgetBytes"],
        2_u64 << 30,
        "the default: {shown}"
    );
    assert!(
        shown.get("clipsFreeBytes").is_none() && shown.get("clipsTotalBytes").is_none(),
        "the clips' disk is the recordings': {shown}"
    );
    drop(node);

    // A clip file no event names (as after the database was lost), a day
    // old; and a file of someone else's.
    let orphan_dir = data
        .path()
        .join("clips")
        .join(uuid::Uuid::new_v4().to_string());
    std::fs::create_dir_all(&orphan_dir).unwrap();
    let orphan = orphan_dir.join(format!("{}.mp4", uuid::Uuid::new_v4()));
    std::fs::copy(&event_files(data.path(), &id, &events[2])[0], &orphan).unwrap();
    let a_day_ago = SystemTime::now() - Duration::from_secs(24 * 3600);
    let file = std::fs::File::options().write(true).open(&orphan).unwrap();
    file.set_modified(a_day_ago).unwrap();
    drop(file);
    let orphan_bytes = std::fs::metadata(&orphan).unwrap().len();
    let stranger = data.path().join("clips/notes.txt");
    std::fs::write(&stranger, b"mine").unwrap();

    // At start it is counted, and kept.
    let node = Node::start_recording(data.path(), &recordings, &[no_reserve]);
    assert!(
        wait_for(Duration::from_secs(10), || storage(&node)["clipsBytes"]
            == total + orphan_bytes),
        "the unnamed file is not counted: {}",
        storage(&node)
    );
    assert!(orphan.exists(), "an unnamed file was deleted at start");
    drop(node);

    // A budget that holds the two newest events: the unnamed file (the
    // oldest) and the oldest event go, with its files.
    let budget = sizes[1] + sizes[2];
    let budget_text = budget.to_string();
    let node = Node::start_recording(
        data.path(),
        &recordings,
        &[no_reserve, ("CLIPS_MAX_BYTES", &budget_text)],
    );
    // Its files go just after its row.
    assert!(
        wait_for(Duration::from_secs(10), || node
            .listed_event(&events[0])
            .is_none()
            && bytes_on_disk(data.path(), &id, &events[0]).is_none()),
        "the oldest event outlived the budget: {}",
        node.get("/api/events").json()
    );
    assert!(!orphan.exists(), "the unnamed file outlived the budget");
    assert!(stranger.exists(), "someone else's file was deleted");
    for event in &events[1..] {
        assert!(has_clip(&node, event), "{event} went too");
        assert!(bytes_on_disk(data.path(), &id, event).is_some());
    }
    // The log and status follow the round's deletions.
    for said in [
        "deleted the 1 oldest events with their clips and thumbnails",
        "deleted the 1 oldest clip files that no event names",
        "clips over their budget",
    ] {
        assert!(
            wait_for(Duration::from_secs(5), || node.logs().contains(said)),
            "the log does not say {said:?}"
        );
    }
    assert!(
        wait_for(Duration::from_secs(5), || storage(&node)["clipsBytes"]
            == budget),
        "{}",
        storage(&node)
    );
    let shown = storage(&node);
    assert_eq!(shown["clipsBudgetBytes"], budget, "{shown}");

    // The UI's header says so.
    let origin = format!("http://127.0.0.1:{}", node.port);
    let header = browser_script("header.mjs", &["--origin", &origin]);
    assert_eq!(header["ok"], true, "{}", header["output"].as_str().unwrap());
    let text = header["text"].as_str().unwrap();
    let wanted = format!("Clips: {} of {}", ui_bytes(budget), ui_bytes(budget));
    assert!(text.contains(&wanted), "{text:?} lacks {wanted:?}");
    assert!(
        header["title"]
            .as_str()
            .unwrap()
            .contains("deleted with their clips"),
        "{header}"
    );

    // A new clip past the budget: the oldest event left goes once it is cut.
    node.settle(&id);
    thread::sleep(Duration::from_secs(6));
    let now = now_ms();
    let fourth = post(&node, &id, now - 6_000, now - 4_000);
    wait_for_clips(
        &node,
        std::slice::from_ref(&fourth),
        Duration::from_secs(40),
    );
    assert!(
        wait_for(Duration::from_secs(5), || node
            .listed_event(&events[1])
            .is_none()),
        "a new clip did not push the oldest out: {}",
        node.get("/api/events").json()
    );
    // Its files go just after its row.
    assert!(
        wait_for(Duration::from_secs(5), || bytes_on_disk(
            data.path(),
            &id,
            &events[1]
        )
        .is_none()),
        "the oldest event's files are still there"
    );
    assert!(has_clip(&node, &fourth));
    let used = storage(&node)["clipsBytes"].as_u64().unwrap();
    assert!(
        used <= budget,
        "{used} bytes of clips for a budget of {budget}"
    );
    // The node logs each deletion once it is done, so after the listing shows it.
    assert!(
        wait_for(Duration::from_secs(5), || node
            .logs()
            .matches("clips over their budget")
            .count()
            >= 3),
        "the log does not say why three times"
    );
}

#[test]
fn a_clips_disk_under_its_reserve_loses_its_oldest_events_but_a_kept_one() {
    let camera = Camera::start();
    let disk = Tmpfs::new("64m");
    let recordings = TempDir::new("clips-reserve-recordings");
    let reserve: u64 = 16 << 20;
    // By its old name, as a settings file kept by an upgrade sets it.
    let node = Node::start_recording(
        disk.path(),
        recordings.path(),
        &[("CLIPS_KEEP_FREE", "16M")],
    );
    assert!(
        wait_for(Duration::from_secs(5), || node
            .logs()
            .contains("CLIPS_KEEP_FREE is the old name of CLIPS_RESERVE")),
        "{}",
        node.logs()
    );
    let id = add_camera(&node, &camera, "/main");
    let events = three_events(&node, &id);
    let shown = storage(&node);
    assert_eq!(shown["clipsReserveBytes"], reserve, "{shown}");
    assert_eq!(
        shown["clipsTotalBytes"],
        64_u64 << 20,
        "another disk: {shown}"
    );
    assert!(
        shown["clipsFreeBytes"].as_u64().unwrap() > reserve,
        "{shown}"
    );
    // No more segments (nor their rows in the database on that disk): only
    // the filler below changes its free space.
    node.patch_camera(&id, json!({ "record": false }));
    thread::sleep(Duration::from_secs(3));
    // The oldest is kept: the reserve passes it by.
    let kept = node.patch_json(&format!("/api/events/{}", events[0]), r#"{"keep": true}"#);
    assert_eq!(kept.status, 200, "{kept}");
    let oldest = bytes_on_disk(disk.path(), &id, &events[1]).unwrap();

    // Another program fills the disk to half the oldest event not kept short of the reserve.
    let filler = disk.path().join("filler");
    let wanted_free = reserve - oldest / 2;
    let fill = free_bytes(disk.path()) - wanted_free;
    let mut file = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 1 << 20];
    let mut written = 0;
    while written < fill {
        let n = block.len().min((fill - written) as usize);
        std::io::Write::write_all(&mut file, &block[..n]).unwrap();
        written += n as u64;
    }
    drop(file);
    let filled = Instant::now();
    // Within the minute, the oldest event not kept goes, and only it.
    assert!(
        wait_for(Duration::from_secs(75), || node
            .listed_event(&events[1])
            .is_none()),
        "the oldest event not kept outlived the reserve: {} {}",
        storage(&node),
        node.get("/api/events").json()
    );
    eprintln!(
        "the reserve's deletion came {:?} after the disk filled",
        filled.elapsed()
    );
    assert_eq!(bytes_on_disk(disk.path(), &id, &events[1]), None);
    for event in [&events[0], &events[2]] {
        assert!(has_clip(&node, event), "{event} went too");
    }
    // The node logs the deletion once it is done, so after the listing shows it.
    assert!(
        wait_for(Duration::from_secs(5), || {
            let logs = node.logs();
            logs.contains("deleted the 1 oldest events with their clips and thumbnails")
                && logs.contains("free space under the reserve")
        }),
        "the log does not say why"
    );
    let shown = storage(&node);
    let free = shown["clipsFreeBytes"].as_u64().unwrap();
    assert!(
        free >= reserve,
        "{free} bytes free under a reserve of {reserve}: {shown}"
    );
    assert_eq!(
        (
            shown["lastEventsDeletion"]["rule"].clone(),
            shown["lastEventsDeletion"]["events"].clone()
        ),
        (json!("CLIPS_RESERVE"), json!(1)),
        "{shown}"
    );
}

#[test]
fn a_clips_disk_that_refuses_deletes_keeps_its_events_and_once_writable_loses_only_the_oldest() {
    let started = Instant::now();
    let dir = TempDir::new("clips-refusing");
    let data = dir.path().join("data");
    // Declared after `dir`, dropped before it: unmounted (its loop device
    // freed) first, also when an assertion fails.
    let disk = Ext4::at(&data.join("clips"), 32);
    let recordings = dir.path().join("recordings");
    let keep = [("CLIPS_RESERVE", "0")];
    let node = Node::start_recording(&data, &recordings, &keep);
    let url = format!("rtsp://127.0.0.1:{}/gone", closed_port());
    let id = node.add_camera(json!({ "name": "Porch", "rtspUrl": url, "enabled": false }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(node);
    // A minute recorded two minutes ago, indexed at the next start, and
    // three events in it, with their clips.
    let start = (now_ms() - 120_000) / 1000 * 1000;
    let scratch = TempDir::new("clips-refusing-scratch");
    write_segments(&recordings, &id, start, 6, scratch.path());
    let node = Node::start_recording(&data, &recordings, &keep);
    assert!(wait_for(Duration::from_secs(20), || segment_rows(&data)
        .len()
        == 6));
    let events: Vec<String> = [10_000, 25_000, 40_000]
        .iter()
        .map(|at| post(&node, &id, start + at, start + at + 2_000))
        .collect();
    wait_for_clips(&node, &events, Duration::from_secs(60));
    drop(node);

    // The clips' disk goes read-only, and the node starts with less free
    // space there than its reserve: the rule asks for half the oldest event.
    disk.remount("ro");
    let oldest = bytes_on_disk(&data, &id, &events[0]).unwrap();
    let reserve = (disk.free() + oldest / 2).to_string();
    let node = Node::start_recording(&data, &recordings, &[("CLIPS_RESERVE", &reserve)]);
    let says_why = |s: &Value| {
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("old clips are not deleted") && m.contains("kept"))
    };
    wait_for(Duration::from_secs(20), || {
        says_why(&storage(&node)) || events.iter().any(|e| !has_clip(&node, e))
    });
    for event in &events {
        assert!(has_clip(&node, event), "{event} went from a read-only disk");
    }
    assert!(says_why(&storage(&node)), "{}", storage(&node));
    eprintln!("status: {}", storage(&node)["message"]);

    // Writable again: a new event (an hour ago, so no footage and no clip)
    // wakes the clips' retention as any clip does; the oldest goes, only it.
    disk.remount("rw");
    let now = now_ms();
    post(&node, &id, now - 3_600_000, now - 3_590_000);
    assert!(
        wait_for(Duration::from_secs(75), || node
            .listed_event(&events[0])
            .is_none()
            && bytes_on_disk(&data, &id, &events[0]).is_none()),
        "the oldest event outlived the reserve: {}",
        storage(&node)
    );
    for event in &events[1..] {
        assert!(has_clip(&node, event), "{event} went too");
    }
    assert!(
        wait_for(Duration::from_secs(5), || node.logs().contains(
            "deleted the 1 oldest events with their clips and thumbnails"
        ) && storage(&node)["message"]
            .is_null()),
        "{}",
        storage(&node)
    );
    eprintln!("took {:?}", started.elapsed());
}

#[test]
fn a_posted_event_of_an_hour_gets_five_minutes_of_clip() {
    let data = TempDir::new("clips-hour");
    let recordings = data.path().join("recordings");
    let keep = [("CLIPS_RESERVE", "0")];
    let node = Node::start_recording(data.path(), &recordings, &keep);
    let url = format!("rtsp://127.0.0.1:{}/gone", closed_port());
    let id = node.add_camera(json!({ "name": "Gate", "rtspUrl": url, "enabled": false }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(node);
    // Eight minutes recorded from 70 minutes ago (an hour of a real camera
    // is too long to wait for); the node indexes them at start.
    let start = (now_ms() - 70 * 60_000) / 1000 * 1000;
    let scratch = TempDir::new("clips-hour-scratch");
    write_segments(&recordings, &id, start, 48, scratch.path());
    let node = Node::start_recording(data.path(), &recordings, &keep);
    let spans = format!(
        "/api/cameras/{id}/recordings?start={}&end={}",
        iso(start),
        iso(start + 480_000)
    );
    let whole = json!([{ "start": iso(start), "end": iso(start + 480_000) }]);
    assert!(
        wait_for(Duration::from_secs(60), || node.get(&spans).json() == whole),
        "the segments were not indexed: {}",
        node.get(&spans).json()
    );
    // A detector says someone was there for an hour, from a minute in.
    let event = post(&node, &id, start + 60_000, start + 60_000 + 3_600_000);
    wait_for_clips(&node, std::slice::from_ref(&event), Duration::from_secs(30));
    let clip = node.get(
        node.listed_event(&event).unwrap()["clipUrl"]
            .as_str()
            .unwrap(),
    );
    assert_eq!(clip.status, 200);
    let file = data.path().join("hour.mp4");
    std::fs::write(&file, &clip.body).unwrap();
    let seconds = probe_file(&file).1;
    // 5 minutes and 5 s each side, cut at key frames a second apart.
    assert!(
        (309.0..=311.5).contains(&seconds),
        "a clip of {seconds} s for an event of an hour"
    );
    eprintln!("an event of an hour: a clip of {seconds} s");
}

#[test]
fn a_clip_waiting_for_its_recording_holds_up_no_other_cameras() {
    let camera = Camera::start();
    let data = TempDir::new("clips-waiting");
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[("CLIPS_RESERVE", "0")]);
    let (slow, quick) = (
        add_camera(&node, &camera, "/main"),
        add_camera(&node, &camera, "/aac"),
    );
    node.settle(&slow);
    node.settle(&quick);
    thread::sleep(Duration::from_secs(6));
    // The first event goes on for 30 s more: its clip waits for the
    // recording to reach 5 s past that, or 40 s. The second ended 4 s ago:
    // its clip needs only the segment being written to close (the
    // recorder's writes reach the file in 256 KiB, so up to 10 s).
    let now = now_ms();
    let waiting = post(&node, &slow, now - 2_000, now + 30_000);
    let posted = Instant::now();
    let ready = post(&node, &quick, now - 6_000, now - 4_000);
    assert!(
        wait_for(Duration::from_secs(25), || has_clip(&node, &ready)),
        "the other camera's clip waited: {}",
        node.get("/api/events").json()
    );
    let took = posted.elapsed();
    assert!(
        !has_clip(&node, &waiting),
        "the long event's clip was cut before its end"
    );
    wait_for_clips(
        &node,
        std::slice::from_ref(&waiting),
        Duration::from_secs(45),
    );
    eprintln!(
        "the ready clip came after {took:?}; the waiting one after {:?}",
        posted.elapsed()
    );
    let clip = node.get(
        node.listed_event(&waiting).unwrap()["clipUrl"]
            .as_str()
            .unwrap(),
    );
    let file = data.path().join("waiting.mp4");
    std::fs::write(&file, &clip.body).unwrap();
    let seconds = probe_file(&file).1;
    assert!(
        (30.0..=45.0).contains(&seconds),
        "a clip of {seconds} s for an event of 32 s: it did not wait for its end"
    );
}

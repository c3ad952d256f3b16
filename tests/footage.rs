//! Footage is never lost by the node itself (issue 21), through the real
//! node, real ffmpeg, the GStreamer camera and real SQLite files: a lost
//! database, a recordings disk that is not mounted, a broken ffprobe after a
//! crash, a database whose file system went read-only, and a camera whose
//! clock jumps. The lost-database tests work on copies of one recorded
//! folder, recorded once per run of this file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{
    Camera, Ext4, Node, TempDir, cpu_ticks, segment_rows, wait_for, write_segments,
};
use serde_json::{Value, json};

/// Every file under `dir` with its bytes' hash, relative paths as keys.
fn contents(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
                });
                let relative = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.insert(relative, (bytes.len() as u64, hash));
            }
        }
    }
    found
}

/// The segment files (`.mp4` in hour folders) among `contents`.
fn segments(all: &BTreeMap<String, (u64, u64)>) -> BTreeMap<String, (u64, u64)> {
    all.iter()
        .filter(|(path, _)| path.ends_with(".mp4") && !path.contains("/incoming/"))
        .map(|(p, v)| (p.clone(), *v))
        .collect()
}

fn storage(node: &Node) -> Value {
    node.get("/api/status").json()["storage"].clone()
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// One recorded folder, made once: a camera recorded for four segments,
/// then the node stopped as an init system stops it. The camera's main URL
/// (with the password the recording used) comes with it.
struct Recorded {
    dir: TempDir,
    url: String,
    camera: String,
}

fn recorded() -> &'static Recorded {
    static RECORDED: OnceLock<Recorded> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let camera = Camera::start();
        let dir = TempDir::new("recorded");
        let data = dir.path().join("data");
        let recordings = dir.path().join("recordings");
        std::fs::create_dir_all(&data).unwrap();
        let node = Node::start_recording(&data, &recordings, &[]);
        let url = camera.url(&format!("admin:{}", common::password("footage")), "/aac");
        let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": url, "detect": false }));
        let id = created["id"].as_str().unwrap().to_owned();
        assert!(
            wait_for(Duration::from_secs(80), || segment_rows(&data).len() >= 4),
            "four segments were not recorded: {}",
            node.camera(&id)
        );
        node.terminate();
        assert_eq!(node.wait(), Some(0));
        // The camera goes with this function: the copies are of footage only.
        Recorded {
            dir,
            url,
            camera: id,
        }
    })
}

#[test]
fn a_new_database_over_recorded_footage_keeps_every_byte_and_the_camera_added_again_finds_it() {
    let recorded = recorded();
    let dir = TempDir::new("lost-database");
    let recordings = dir.path().join("recordings");
    copy_dir(&recorded.dir.path().join("recordings"), &recordings);
    let before = segments(&contents(&recordings));
    assert!(before.len() >= 4, "{before:?}");
    let footage: u64 = before.values().map(|(bytes, _)| bytes).sum();

    // The database is lost (a new DATA_DIR), the disk is not.
    let data = dir.path().join("new-data");
    std::fs::create_dir_all(&data).unwrap();
    let node = Node::start_recording(&data, &recordings, &[]);
    thread::sleep(Duration::from_secs(60));
    let after = segments(&contents(&recordings));
    assert_eq!(after, before, "segments changed or went within a minute");
    assert_eq!(
        storage(&node)["unclaimedBytes"],
        footage,
        "the footage is not counted as unclaimed"
    );
    assert_eq!(storage(&node)["message"], Value::Null, "{}", storage(&node));
    assert!(
        node.logs().contains("cameras this node does not know keep"),
        "{}",
        node.logs()
    );

    // Added again with the same address (another password), the camera finds
    // its footage: the same id, its spans, its recording playable.
    let new_password = common::password("again");
    let url = recorded.url.replacen(
        &format!("admin:{}", common::password("footage")),
        &format!("admin:{new_password}"),
        1,
    );
    let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": url, "detect": false }));
    assert_eq!(created["id"], recorded.camera.as_str(), "{created}");
    assert!(
        wait_for(Duration::from_secs(5), || node
            .logs()
            .contains("takes over the recordings")),
        "{}",
        node.logs()
    );
    let indexed = segment_rows(&data);
    assert!(
        indexed.len() >= before.len() && indexed.iter().all(|r| r.camera == recorded.camera),
        "{indexed:?}"
    );
    let spans = node
        .get(&format!("/api/cameras/{}/recordings", recorded.camera))
        .json();
    assert!(
        spans.as_array().is_some_and(|s| !s.is_empty()),
        "no spans of the old footage: {spans}"
    );
    // The cleaner's pass, which the new camera wakes, counts storage again.
    assert!(
        wait_for(Duration::from_secs(5), || storage(&node)["unclaimedBytes"]
            == 0),
        "{}",
        storage(&node)
    );
}

#[test]
fn unknown_cameras_footage_goes_oldest_first_when_room_is_needed_and_the_log_says_so() {
    let recorded = recorded();
    let dir = TempDir::new("lost-budget");
    let recordings = dir.path().join("recordings");
    copy_dir(&recorded.dir.path().join("recordings"), &recordings);
    let before = segments(&contents(&recordings));
    let total: u64 = before.values().map(|(bytes, _)| bytes).sum();
    let newest_two: u64 = before.values().rev().take(2).map(|(bytes, _)| bytes).sum();
    let data = dir.path().join("new-data");
    std::fs::create_dir_all(&data).unwrap();
    // A budget that the two newest segments fit in.
    let budget = newest_two.to_string();
    let node = Node::start_recording(&data, &recordings, &[("RECORDINGS_MAX_BYTES", &budget)]);
    assert!(
        wait_for(Duration::from_secs(30), || segments(&contents(&recordings))
            .len()
            == 2),
        "retention did not bring {total} bytes down to {budget}: {:?}",
        segments(&contents(&recordings))
    );
    let kept: Vec<String> = segments(&contents(&recordings)).into_keys().collect();
    let newest: Vec<String> = before.keys().rev().take(2).rev().cloned().collect();
    assert_eq!(kept, newest, "the oldest went first");
    assert!(
        wait_for(Duration::from_secs(5), || node
            .logs()
            .contains("of cameras this node does not know")),
        "{}",
        node.logs()
    );
}

#[test]
fn a_missing_disk_gets_no_file_and_keeps_its_index_and_recording_resumes_when_it_is_back() {
    let camera = Camera::start();
    let dir = TempDir::new("unmounted");
    let data = dir.path().join("data");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&data).unwrap();
    let node = Node::start_recording(&data, &recordings, &[]);
    let created = node
        .add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(wait_for(Duration::from_secs(40), || segment_rows(&data)
        .len()
        >= 2));

    // The disk goes: an empty folder is left where it was mounted.
    let away = dir.path().join("disk-away");
    std::fs::rename(&recordings, &away).unwrap();
    std::fs::create_dir(&recordings).unwrap();
    let indexed = segment_rows(&data);
    // Twenty seconds of a missing disk: nothing written in its place, no row dropped.
    thread::sleep(Duration::from_secs(20));
    assert!(
        contents(&recordings).is_empty(),
        "files written where the disk should be: {:?}",
        contents(&recordings)
    );
    let now = segment_rows(&data);
    assert!(
        indexed.iter().all(|r| now.contains(r)),
        "rows dropped while the disk was missing: {indexed:?} became {now:?}"
    );
    assert!(
        common::processes_mentioning("ffmpeg", &recordings.display().to_string()).is_empty(),
        "a recorder still runs into the missing disk"
    );
    // And it is said, in the status and for the camera.
    let not_mounted = |v: &Value| {
        v.as_str()
            .is_some_and(|m| m.contains("the recordings disk is not mounted"))
    };
    assert!(
        not_mounted(&storage(&node)["message"])
            && not_mounted(&node.camera(&id)["recording"]["message"]),
        "status and camera do not say the disk is missing: {} {}",
        storage(&node),
        node.camera(&id)
    );
    assert_eq!(node.camera(&id)["recording"]["state"], "retrying");
    eprintln!(
        "while the disk is missing: {}",
        node.camera(&id)["recording"]
    );

    // The disk comes back: recording resumes by itself, the old spans are there.
    std::fs::remove_dir(&recordings).unwrap();
    std::fs::rename(&away, &recordings).unwrap();
    let back_at = Instant::now();
    let last_before = indexed.last().unwrap().end_ms;
    assert!(
        wait_for(Duration::from_secs(15), || !common::processes_mentioning(
            "ffmpeg",
            &recordings.display().to_string()
        )
        .is_empty()),
        "no recorder 15 s after the disk came back: {}",
        node.camera(&id)
    );
    eprintln!(
        "recording again {:?} after the disk came back",
        back_at.elapsed()
    );
    assert!(
        wait_for(Duration::from_secs(30), || segment_rows(&data)
            .iter()
            .any(|r| r.start_ms > last_before + 10_000)),
        "no new segment after the disk came back"
    );
    assert_eq!(node.camera(&id)["recording"]["state"], "recording");
    assert_eq!(storage(&node)["message"], Value::Null);
    let spans = node.get(&format!("/api/cameras/{id}/recordings")).json();
    let first_span_start = spans[0]["start"].as_str().unwrap_or_default().to_owned();
    let first_row = segment_rows(&data)[0].start_ms;
    let listed = humantime::parse_rfc3339(&first_span_start)
        .map(|t| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64);
    assert_eq!(
        listed.ok(),
        Some(first_row),
        "the old spans are listed: {spans}"
    );
}

/// The end of the last whole `moof` + `mdat` pair of an fMP4 file, read
/// here independently of the node's reader: the bytes a recovery must keep.
fn whole_fragments_end(bytes: &[u8]) -> (u64, usize) {
    let (mut pos, mut end, mut fragments) = (0usize, 0u64, 0);
    let mut moof_at = None;
    while pos + 8 <= bytes.len() {
        let size = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        if size < 8 || pos + size > bytes.len() {
            break;
        }
        match kind {
            b"moov" => end = (pos + size) as u64,
            b"moof" => moof_at = Some(pos),
            b"mdat" if moof_at.is_some() => {
                end = (pos + size) as u64;
                fragments += 1;
                moof_at = None;
            }
            _ => {}
        }
        pos += size;
    }
    (end, fragments)
}

/// The top-level boxes of a file: (kind, size), for failure messages.
fn boxes(bytes: &[u8]) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= bytes.len() && found.len() < 40 {
        let size = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as u64;
        found.push((
            String::from_utf8_lossy(&bytes[pos + 4..pos + 8]).into_owned(),
            size,
        ));
        if size < 8 {
            break;
        }
        pos += size as usize;
    }
    found
}

#[test]
fn after_a_crash_a_broken_ffprobe_neither_deletes_nor_cuts_a_segment() {
    let camera = Camera::start();
    let dir = TempDir::new("no-ffprobe");
    let data = dir.path().join("data");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&data).unwrap();
    // A probe program that fails, as a missing or timed-out ffprobe does.
    let broken = dir.path().join("ffprobe");
    std::fs::write(&broken, "#!/bin/sh\necho 'ffprobe: broken' >&2\nexit 1\n").unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&broken)
        .status()
        .unwrap();
    let env = [("FFPROBE", broken.to_str().unwrap())];
    let node = Node::start_recording(&data, &recordings, &env);
    // 2 Mbit/s: ffmpeg hands the file its fragments in 256 KiB writes, so
    // that a kill a few seconds into a segment leaves whole fragments.
    let created = node
        .add_camera(json!({ "name": "Gate", "rtspUrl": camera.url("", "/hd"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(wait_for(Duration::from_secs(40), || !segment_rows(&data).is_empty()));
    thread::sleep(Duration::from_secs(5));
    node.kill();
    let incoming = recordings.join(&id).join("incoming");
    let cut: Vec<PathBuf> = std::fs::read_dir(&incoming)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(cut.len(), 1, "{cut:?}");
    let bytes = std::fs::read(&cut[0]).unwrap();
    let (whole, fragments) = whole_fragments_end(&bytes);
    assert!(
        fragments >= 2,
        "{fragments} whole fragments in the cut segment of {} bytes: {:?}",
        bytes.len(),
        boxes(&bytes)
    );
    eprintln!(
        "the kill left {} bytes, {fragments} whole fragments ending at {whole}",
        bytes.len()
    );
    let indexed_before = segment_rows(&data).len();

    let node = Node::start_recording(&data, &recordings, &env);
    assert!(
        wait_for(Duration::from_secs(20), || segment_rows(&data).len()
            > indexed_before),
        "the cut segment was not indexed: {}",
        node.logs()
    );
    let recovered = segment_rows(&data)
        .into_iter()
        .find(|r| std::fs::metadata(recordings.join(&r.path)).is_ok_and(|m| m.len() == whole))
        .unwrap_or_else(|| {
            panic!(
                "no segment of {whole} bytes (its whole fragments) in the index: {:?}\n{}",
                segment_rows(&data),
                node.logs()
            )
        });
    let kept = std::fs::read(recordings.join(&recovered.path)).unwrap();
    assert_eq!(
        kept[..],
        bytes[..whole as usize],
        "the whole fragments are kept as they were"
    );
    let (codecs, duration) = common::probe_file(&recordings.join(&recovered.path));
    assert!(
        codecs.contains(&"h264".to_owned()) && duration > 1.0,
        "{codecs:?} {duration}"
    );
    drop(node);
}

#[test]
fn a_database_gone_read_only_makes_retention_wait_not_spin() {
    let camera = Camera::start();
    let card = Ext4::new(64);
    // The recordings on a small disk of their own, with a free-space reserve
    // the camera passes within a few segments: retention always has work,
    // and its deletions fail once the database cannot be written.
    let disk = common::Tmpfs::new("8m");
    let recordings = disk.path().join("recordings");
    let node = Node::start_recording(&card.mount, &recordings, &[("RECORDINGS_RESERVE", "7400K")]);
    let created = node
        .add_camera(json!({ "name": "Shed", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        wait_for(Duration::from_secs(60), || node
            .logs()
            .contains("oldest segments")),
        "retention never deleted: {}",
        node.camera(&id)
    );
    card.fail();
    // A minute of it: the node's CPU stays under 5 % of a core.
    thread::sleep(Duration::from_secs(5));
    let ticks_per_s = 100.0; // USER_HZ on Linux
    let (start_ticks, started) = (cpu_ticks(node.pid()), Instant::now());
    thread::sleep(Duration::from_secs(60));
    let used = (cpu_ticks(node.pid()) - start_ticks) as f64 / ticks_per_s;
    let share = used / started.elapsed().as_secs_f64();
    eprintln!(
        "the node used {:.1} % of a core for a minute with a read-only database",
        share * 100.0
    );
    assert!(share < 0.05, "{:.1} % of a core", share * 100.0);
    // And the status says why nothing is deleted.
    let says_why = |s: &Value| {
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("old recordings are not deleted") && m.contains("database"))
    };
    assert!(says_why(&storage(&node)), "{}", storage(&node));
    eprintln!("status: {}", storage(&node)["message"]);
    assert_eq!(node.get("/api/status").status, 200);
    let _ = node.camera(&id);
}

#[test]
fn a_camera_clock_that_jumps_makes_no_span_hours_long() {
    let camera = Camera::start();
    let dir = TempDir::new("clock-jump");
    let data = dir.path().join("data");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&data).unwrap();
    // The real ffmpeg, whose segment list says the camera's clock jumped 3
    // hours ahead within its second segment (as a camera that sets its clock
    // from NTP late makes it say), through an unbuffered filter (the node
    // must get each line as it comes, or its watchdog takes over).
    let wrapper = dir.path().join("ffmpeg");
    let shift = "import sys\n\
        for n, line in enumerate(sys.stdin, 1):\n\
        \x20   name, start, end = line.strip().split(',')\n\
        \x20   start, end = float(start), float(end)\n\
        \x20   if n >= 2: end += 10800\n\
        \x20   if n >= 3: start += 10800\n\
        \x20   print(f'{name},{start:.6f},{end:.6f}', flush=True)\n";
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nffmpeg \"$@\" | /usr/bin/python3 -u -c \"{shift}\"\n"),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let node = Node::start_recording(&data, &recordings, &[("FFMPEG", wrapper.to_str().unwrap())]);
    let started = common_now_ms();
    node.add_camera(json!({ "name": "Clock", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    assert!(
        wait_for(Duration::from_secs(60), || segment_rows(&data).len() >= 4),
        "four segments were not recorded: {}",
        node.logs()
    );
    let now = common_now_ms();
    assert!(
        !node.logs().contains("recovered segment"),
        "segments were filed by recovery, not from the segment list: {}",
        node.logs()
    );
    for row in segment_rows(&data) {
        let length = row.end_ms - row.start_ms;
        assert!(length <= 12_000, "a segment of {length} ms: {row:?}");
        assert!(
            row.start_ms >= started - 2_000 && row.end_ms <= now + 2_000,
            "{row:?} is not within the {} ms the test ran",
            now - started
        );
    }
}

fn common_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The paths of the node's tombstones: files deleted from the index whose
/// unlink is still to be done.
fn tombstones(data: &Path) -> Vec<String> {
    let db = common::read_database(data);
    let mut stmt = db.prepare("SELECT path FROM segment_garbage").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn chattr(flag: &str, file: &Path) {
    let status = Command::new("chattr")
        .arg(flag)
        .arg(file)
        .status()
        .expect("chattr (e2fsprogs) runs");
    assert!(status.success(), "chattr {flag} {}", file.display());
}

#[test]
fn a_file_that_cannot_be_unlinked_keeps_its_row_while_newer_ones_go_until_it_can() {
    let camera = Camera::start();
    // ext4, where an immutable file cannot be unlinked, even by root.
    let disk = Ext4::new(64);
    let dir = TempDir::new("undeletable");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let recordings = disk.mount.join("recordings");
    // About two segments' worth: the oldest goes as the third comes.
    let node = Node::start_recording(&data, &recordings, &[("RECORDINGS_MAX_BYTES", "450K")]);
    node.add_camera(json!({ "name": "Drive", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    assert!(wait_for(Duration::from_secs(40), || segment_rows(&data)
        .len()
        >= 2));
    let rows = segment_rows(&data);
    let (oldest, next) = (rows[0].clone(), rows[1].clone());
    let file = recordings.join(&oldest.path);
    chattr("+i", &file);
    // Its unlink fails: the file stays, and so does its row, while newer
    // segments go in its place; the status says why.
    assert!(
        wait_for(Duration::from_secs(60), || {
            let rows = segment_rows(&data);
            rows.contains(&oldest) && !rows.contains(&next)
        }),
        "newer segments did not go in its place: {:?}",
        segment_rows(&data)
    );
    assert!(file.exists());
    assert!(
        !tombstones(&data).contains(&oldest.path),
        "a tombstone for a file that is still there"
    );
    assert!(
        node.logs()
            .contains(&format!("cannot delete {} (kept)", file.display())),
        "{}",
        node.logs()
    );
    let message = storage(&node)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("cannot delete"), "{}", storage(&node));
    eprintln!("status: {message}");
    // Once it can be, it goes, tried again within a minute or so.
    chattr("-i", &file);
    assert!(
        wait_for(Duration::from_secs(90), || !file.exists()
            && !segment_rows(&data).contains(&oldest)
            && tombstones(&data).is_empty()),
        "not deleted once it could be: {:?}",
        segment_rows(&data)
    );
}

#[test]
fn a_disk_that_refuses_deletes_keeps_rows_and_spans_and_once_writable_loses_only_what_the_rule_asks()
 {
    let started = Instant::now();
    // Declared first, dropped last: unmounted (and its loop device freed)
    // after the node is gone, also when an assertion fails.
    let disk = Ext4::new(64);
    let dir = TempDir::new("refusing-disk");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let recordings = disk.mount.join("recordings");
    let node = Node::start_recording(&data, &recordings, &[]);
    let url = format!("rtsp://127.0.0.1:{}/gone", common::closed_port());
    let id = node.add_camera(json!({ "name": "Attic", "rtspUrl": url, "enabled": false }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(node);
    // Six segments of a minute ago, indexed by the node at its next start.
    let scratch = disk.mount.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    write_segments(&recordings, &id, common_now_ms() - 120_000, 6, &scratch);
    std::fs::remove_dir(&scratch).unwrap();
    let node = Node::start_recording(&data, &recordings, &[]);
    let spans_of = |node: &Node| node.get(&format!("/api/cameras/{id}/recordings")).json();
    assert!(
        wait_for(Duration::from_secs(20), || segment_rows(&data).len() == 6
            && spans_of(&node).as_array().is_some_and(|s| s.len() == 1)),
        "the segments were not indexed: {:?}",
        segment_rows(&data)
    );
    let rows = segment_rows(&data);
    let spans = spans_of(&node);
    drop(node);

    // The disk goes read-only, and the node starts with less free space
    // than its reserve: the rule asks for the two oldest segments and half
    // of the third.
    disk.remount("ro");
    let files = || segments(&contents(&recordings));
    let all_files = files();
    assert_eq!(all_files.len(), 6, "{all_files:?}");
    let reserve = disk.free() + rows[0].bytes + rows[1].bytes + rows[2].bytes / 2;
    let reserve = reserve.to_string();
    let node = Node::start_recording(&data, &recordings, &[("RECORDINGS_RESERVE", &reserve)]);
    let says_why = |s: &Value| {
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be written") && m.contains("kept"))
    };
    wait_for(Duration::from_secs(20), || {
        says_why(&storage(&node)) || segment_rows(&data) != rows
    });
    assert_eq!(
        segment_rows(&data),
        rows,
        "rows dropped from a read-only disk"
    );
    assert!(
        says_why(&storage(&node)),
        "the status does not say why nothing is deleted: {}",
        storage(&node)
    );
    eprintln!("status: {}", storage(&node)["message"]);
    assert_eq!(spans_of(&node), spans, "spans lost on a read-only disk");
    assert!(tombstones(&data).is_empty(), "{:?}", tombstones(&data));

    // Writable again: the three oldest go, as the reserve asks, and no more.
    disk.remount("rw");
    // The log line comes once the pass is over.
    assert!(
        wait_for(Duration::from_secs(30), || storage(&node)["message"]
            .is_null()
            && node.logs().contains("recordings: deleted the")),
        "nothing deleted once the disk was writable: {}",
        storage(&node)
    );
    assert_eq!(
        segment_rows(&data),
        rows[3..],
        "not only the oldest three went"
    );
    let left: Vec<String> = files().into_keys().collect();
    let wanted: Vec<String> = all_files.into_keys().skip(3).collect();
    assert_eq!(left, wanted, "the files kept are not the rows kept");
    assert!(
        node.logs().contains("deleted the 3 oldest segments"),
        "{}",
        node.logs()
    );
    let free = storage(&node)["freeBytes"].as_u64().unwrap();
    assert!(free >= reserve.parse().unwrap(), "{}", storage(&node));
    eprintln!("took {:?}", started.elapsed());
}

#[test]
fn cameras_that_are_not_there_yet_start_four_ffmpeg_at_a_time() {
    let dir = TempDir::new("not-there-yet");
    let data = dir.path().join("data");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&data).unwrap();
    // Sixteen cameras whose address refuses (they have not booted yet),
    // recording and detecting (the defaults), in place when the node starts,
    // as after a power cut.
    let node = Node::start_recording(&data, &recordings, &[]);
    let port = common::closed_port();
    let ids: Vec<String> = (0..16)
        .map(|n| {
            let url = format!("rtsp://127.0.0.1:{port}/cam{n}");
            let camera = json!({ "name": format!("Cam {n}"), "rtspUrl": url, "record": false, "detect": false });
            node.add_camera(camera)["id"].as_str().unwrap().to_owned()
        })
        .collect();
    drop(node);
    let db = rusqlite::Connection::open(data.join("nvr-node.db")).unwrap();
    db.execute("UPDATE camera SET record = 1, detect = 1", [])
        .unwrap();
    drop(db);
    let node = Node::start_recording(&data, &recordings, &[]);
    let mut most = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        most = most.max(common::children_of(node.pid()).len());
        thread::sleep(Duration::from_millis(5));
    }
    eprintln!("at most {most} ffmpeg at once in the first 1.5 s, of 32 wanted");
    assert!(most <= 4, "{most} ffmpeg at once");
    // They all get their turn: each camera's recorder and watcher.
    let turns = |logs: &str| {
        ids.iter()
            .map(|id| {
                let recorder = logs.contains(&format!("recorder of camera {id}: ffmpeg"));
                let watcher = logs.contains(&format!("motion watcher of camera {id}: its decoder"));
                usize::from(recorder) + usize::from(watcher)
            })
            .sum::<usize>()
    };
    assert!(
        wait_for(Duration::from_secs(40), || turns(&node.logs()) == 32),
        "only {} of 32 ffmpeg ran within 40 s",
        turns(&node.logs())
    );
}

//! Recording, end to end, with the real parts: the GStreamer camera, the
//! node's ffmpeg recorders, ffprobe to judge every file, SQLite read
//! straight from the node's database, and Chromium to play a recording back.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{
    Camera, Node, TempDir, Tmpfs, browser_script, closed_port, free_port, is_running, iso, ms,
    now_ms, password, probe_file, processes_connected_to, processes_mentioning, segment_rows,
    wait_for, write_segments,
};
use serde_json::{Value, json};

use crate::common::SegmentRow as Row;

/// The segment files in the hour folders (not those being written), as
/// paths relative to the recordings folder.
fn filed(recordings: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for camera in std::fs::read_dir(recordings)
        .into_iter()
        .flatten()
        .flatten()
    {
        for hour in std::fs::read_dir(camera.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if hour.file_name() == "incoming" {
                continue;
            }
            for file in std::fs::read_dir(hour.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path();
                let relative = path.strip_prefix(recordings).unwrap();
                found.insert(relative.to_string_lossy().into_owned());
            }
        }
    }
    found
}

/// The files a camera's recorder is writing.
fn incoming(recordings: &Path, camera: &str) -> Vec<PathBuf> {
    let dir = recordings.join(camera).join("incoming");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

/// Whether ffmpeg decodes a whole file without an error.
fn decodes(path: &Path) -> Result<(), String> {
    let output = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "null", "-"])
        .output()
        .expect("ffmpeg runs");
    let errors = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.success() && errors.trim().is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A node recording one camera, with its folders.
struct Recording {
    node: Node,
    data: TempDir,
    recordings: PathBuf,
    id: String,
}

impl Recording {
    /// Starts a node (with `env`) that records `url`.
    fn start(name: &str, url: &str, env: &[(&str, &str)]) -> Recording {
        let data = TempDir::new(name);
        let recordings = data.path().join("recordings");
        let node = Node::start_recording(data.path(), &recordings, env);
        // Recording alone: motion detection has its own tests (motion.rs).
        let created = node.add_camera(json!({ "name": name, "rtspUrl": url, "detect": false }));
        let id = created["id"].as_str().unwrap().to_owned();
        Recording {
            node,
            data,
            recordings,
            id,
        }
    }

    fn camera(&self) -> Value {
        self.node.camera(&self.id)
    }

    fn state(&self) -> Value {
        self.camera()["recording"].clone()
    }

    fn rows(&self) -> Vec<Row> {
        segment_rows(self.data.path())
    }

    /// Waits for the index to hold `count` segments, or fails.
    fn wait_for_segments(&self, count: usize, timeout: Duration) -> Vec<Row> {
        let found = wait_for(timeout, || self.rows().len() >= count);
        let rows = self.rows();
        assert!(
            found,
            "only {} segments after {timeout:?}; recording: {}",
            rows.len(),
            self.state()
        );
        rows
    }

    /// The live ffmpeg processes recording into this node's folder.
    fn recorders(&self) -> Vec<u32> {
        processes_mentioning("ffmpeg", &self.recordings.display().to_string())
    }

    fn patch(&self, body: Value) -> Value {
        self.node.patch_camera(&self.id, body)
    }

    /// Rows and files agree: every row's file exists, every filed file has a row.
    fn assert_index_matches_files(&self) {
        let indexed: BTreeSet<String> = self.rows().into_iter().map(|r| r.path).collect();
        assert_eq!(
            indexed,
            filed(&self.recordings),
            "the index and the folder disagree"
        );
    }
}

#[test]
fn a_camera_is_recorded_in_playable_10_s_segments_and_played_back() {
    let secret = password("rec");
    let camera = Camera::with_credentials("admin", &secret);
    let url = camera.url(&format!("admin:{secret}"), "/aac");
    let rec = Recording::start("minute", &url, &[]);
    // A minute: the first segment may begin late, so wait for seven.
    let rows = rec.wait_for_segments(7, Duration::from_secs(100));
    assert_eq!(rec.state()["state"], "recording", "{}", rec.state());
    rec.assert_index_matches_files();
    let covered = rows.last().unwrap().end_ms - rows[0].start_ms;
    assert!(covered >= 60_000, "{covered} ms covered: {rows:?}");
    for pair in rows.windows(2) {
        let gap = pair[1].start_ms - pair[0].end_ms;
        assert!(
            (-500..=500).contains(&gap),
            "a gap of {gap} ms between {pair:?}"
        );
    }
    let mut durations = Vec::new();
    for row in &rows {
        let (codecs, duration) = probe_file(&rec.recordings.join(&row.path));
        durations.push(duration);
        assert_eq!(codecs, ["h264", "aac"], "{row:?}: AAC audio is kept");
        assert!((9.0..=11.0).contains(&duration), "{row:?}: {duration} s");
        let indexed = (row.end_ms - row.start_ms) as f64 / 1000.0;
        assert!(
            (duration - indexed).abs() < 0.5,
            "{row:?}: the file holds {duration} s"
        );
        let bytes = std::fs::metadata(rec.recordings.join(&row.path))
            .unwrap()
            .len();
        assert_eq!(bytes, row.bytes, "{row:?}");
    }

    eprintln!("segment durations (ffprobe): {durations:?}");

    // The spans: one, from the first segment to the last.
    let listed = rec.node.get(&format!("/api/cameras/{}/recordings", rec.id));
    assert_eq!(listed.status, 200, "{listed}");
    let spans = listed.json();
    assert_eq!(spans.as_array().unwrap().len(), 1, "{spans}");
    assert_eq!(ms(spans[0]["start"].as_str().unwrap()), rows[0].start_ms);
    assert!(ms(spans[0]["end"].as_str().unwrap()) >= rows.last().unwrap().end_ms);

    // Thirty seconds of it, across segments, as one MP4.
    let start = rows[0].start_ms + 5_000;
    let path = format!(
        "/api/cameras/{}/recording.mp4?start={}&end={}",
        rec.id,
        iso(start),
        iso(start + 30_000)
    );
    let whole = rec.node.get(&path);
    assert_eq!(
        whole.status,
        200,
        "{}",
        whole.text().chars().take(300).collect::<String>()
    );
    assert_eq!(whole.header("Content-Type"), Some("video/mp4"));
    assert_eq!(whole.header("Accept-Ranges"), Some("bytes"));
    assert_eq!(
        whole.header("Content-Length"),
        Some(whole.body.len().to_string().as_str())
    );
    let file = rec.data.path().join("clip.mp4");
    std::fs::write(&file, &whole.body).unwrap();
    let (codecs, duration) = probe_file(&file);
    assert_eq!(codecs, ["h264", "aac"]);
    // From the key frame at or before the start (GOP 1 s) to the end of the
    // fragment holding the end.
    assert!(
        (29.0..=32.0).contains(&duration),
        "{duration} s for 30 s asked"
    );
    decodes(&file).unwrap_or_else(|e| panic!("the clip does not decode cleanly: {e}"));
    eprintln!(
        "30 s asked: a clip of {duration} s, {} bytes",
        whole.body.len()
    );

    // Ranges, as a player asks for them.
    let len = whole.body.len();
    let part = rec
        .node
        .request("GET", &path, &[("Range", "bytes=100-1099")], b"");
    assert_eq!(part.status, 206, "{}", part.status);
    assert_eq!(
        part.header("Content-Range"),
        Some(format!("bytes 100-1099/{len}").as_str())
    );
    assert_eq!(part.body, whole.body[100..1100]);
    let tail = rec.node.request(
        "GET",
        &path,
        &[("Range", &format!("bytes={}-", len - 5000))],
        b"",
    );
    assert_eq!(
        (tail.status, tail.body.as_slice()),
        (206, &whole.body[len - 5000..])
    );
    let beyond = rec
        .node
        .request("GET", &path, &[("Range", &format!("bytes={len}-"))], b"");
    assert_eq!(beyond.status, 416, "{beyond}");
    assert_eq!(
        beyond.header("Content-Range"),
        Some(format!("bytes */{len}").as_str())
    );

    // Wrong requests change nothing and say why.
    let mp4 = |query: &str| {
        rec.node
            .get(&format!("/api/cameras/{}/recording.mp4?{query}", rec.id))
    };
    let hour = 3_600_000;
    let table = [
        (format!("end={}", iso(start)), 400, "start is required"),
        (format!("start={}", iso(start)), 400, "end is required"),
        (
            format!("start={}&end={}", iso(start), iso(start + hour + 1)),
            400,
            "at most 1 hour",
        ),
        (
            format!("start={}&end={}", iso(start), iso(start)),
            400,
            "end must be after start",
        ),
        (
            format!("start=yesterday&end={}", iso(start)),
            400,
            "start must be an ISO 8601",
        ),
        (
            format!(
                "start={}&end={}",
                iso(start - 400 * 24 * hour),
                iso(start - 400 * 24 * hour + hour)
            ),
            404,
            "nothing was recorded",
        ),
    ];
    for (query, status, message) in table {
        let response = mp4(&query);
        assert_eq!(response.status, status, "{query}: {response}");
        assert!(response.error().contains(message), "{query}: {response}");
    }
    let unknown = rec
        .node
        .get(&format!("/api/cameras/{}/recordings", uuid::Uuid::new_v4()));
    assert_eq!(
        (unknown.status, unknown.error()),
        (404, "no such camera".to_owned())
    );
    let long = rec.node.get(&format!(
        "/api/cameras/{}/recordings?start={}&end={}",
        rec.id,
        iso(start - 32 * 24 * hour),
        iso(start)
    ));
    assert_eq!(long.status, 400, "{long}");

    // Status tells what recordings take.
    let storage = &rec.node.get("/api/status").json()["storage"];
    let used: u64 = rec.rows().iter().map(|r| r.bytes).sum();
    assert!(storage["usedBytes"].as_u64().unwrap() > 0, "{storage}");
    assert!(storage["usedBytes"].as_u64().unwrap() <= used, "{storage}");
    assert_eq!(
        ms(storage["oldestRecordingAt"].as_str().unwrap()),
        rows[0].start_ms
    );
    assert!(storage["freeBytes"].as_u64().unwrap() > 0, "{storage}");
}

#[test]
fn a_recording_plays_and_seeks_in_chromium() {
    let camera = Camera::start();
    let rec = Recording::start("chromium", &camera.url("", "/aac"), &[]);
    let rows = rec.wait_for_segments(3, Duration::from_secs(60));
    let (start, end) = (rows[0].start_ms, rows[0].start_ms + 25_000);
    let src = format!(
        "/api/cameras/{}/recording.mp4?start={}&end={}",
        rec.id,
        iso(start),
        iso(end)
    );
    let origin = format!("http://127.0.0.1:{}", rec.node.port);
    let verdict = browser_script(
        "playback.mjs",
        &["--origin", &origin, "--src", &src, "--seek", "18"],
    );
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    let duration = verdict["duration"].as_f64().unwrap();
    assert!(
        (24.0..=27.0).contains(&duration),
        "{duration} s for 25 s asked\n{report}"
    );
    assert!(verdict["advanced"].as_f64().unwrap() >= 1.5, "{report}");
    let landed = verdict["landed"].as_f64().unwrap();
    assert!(
        (18.0..19.0).contains(&landed),
        "the seek landed at {landed}\n{report}"
    );
    assert!(
        verdict["afterSeek"].as_f64().unwrap() >= landed + 1.0,
        "{report}"
    );
    assert_eq!(verdict["width"], 640, "{report}");
    // The browser fetched it by ranges, and the node answered them.
    assert!(
        verdict["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == 206),
        "{report}"
    );
    eprintln!("{verdict}");
}

#[test]
fn the_recordings_view_plays_at_2_4_and_8_times_the_speed() {
    let camera = Camera::start();
    let rec = Recording::start("rates", &camera.url("", "/aac"), &[]);
    // 37.5 s of video go by at the four speeds (2.5 s each): the first span
    // must be longer.
    rec.wait_for_segments(5, Duration::from_secs(90));
    let verdict = browser_script(
        "rates.mjs",
        &["--url", &rec.node.url(), "--camera", &rec.id],
    );
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    for rate in [1.0, 2.0, 4.0, 8.0] {
        let measured = verdict["ratios"][rate.to_string()].as_f64().unwrap();
        assert!(
            (measured - rate).abs() <= rate * 0.15,
            "{rate}×: {measured} s of video a second\n{report}"
        );
    }
    eprintln!("{}", verdict["ratios"]);
}

#[test]
fn the_timeline_zooms_from_7_days_to_1_minute_plays_from_a_click_and_steps_through_events() {
    let data = TempDir::new("timeline");
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[]);
    let url = format!("rtsp://127.0.0.1:{}/gone", closed_port());
    let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": url, "enabled": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    drop(node);
    // 30 s recorded two days ago (mid-track at 7 days), indexed at the next start.
    let scratch = TempDir::new("timeline-scratch");
    let start = (now_ms() - 2 * 86_400_000) / 1000 * 1000;
    write_segments(&recordings, &id, start, 3, scratch.path());
    let node = Node::start_recording(data.path(), &recordings, &[]);
    assert!(wait_for(Duration::from_secs(20), || segment_rows(
        data.path()
    )
    .len()
        == 3));
    // Three events in the span, 2 s long each; the node cuts their clips and thumbnails from it.
    let ids: Vec<String> = [(3, "motion"), (18, "person"), (24, "vehicle")]
        .iter()
        .map(|(second, kind)| {
            let at = start + second * 1000;
            let body = json!({ "cameraId": id, "kind": kind, "score": 0.8,
                "startedAt": iso(at), "endedAt": iso(at + 2000) });
            let response = node.post_json("/api/events", &body.to_string());
            assert_eq!(response.status, 201, "{response}");
            response.json()["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(
        wait_for(Duration::from_secs(60), || ids.iter().all(|e| node
            .listed_event(e)
            .is_some_and(|e| e["thumbnailUrl"].is_string()))),
        "no thumbnails: {}",
        node.get("/api/events").json()
    );
    let verdict = browser_script(
        "timeline.mjs",
        &["--url", &node.url(), "--camera", &id, "--seconds", "30"],
    );
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    eprintln!("{verdict}");
}

/// A node with two disabled cameras, "Porch" and "Yard", whose addresses
/// nothing listens at, each with 30 s of the test's own recordings two days
/// ago (Yard's `yard_after_ms` after Porch's), indexed at the node's start:
/// its data folder, the node, the cameras' ids and the recordings' start.
fn porch_and_yard_recorded(name: &str, yard_after_ms: i64) -> (TempDir, Node, Vec<String>, i64) {
    let data = TempDir::new(name);
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[]);
    let ids: Vec<String> = ["Porch", "Yard"]
        .iter()
        .map(|name| {
            let url = format!("rtsp://127.0.0.1:{}/gone", closed_port());
            let created =
                node.add_camera(json!({ "name": name, "rtspUrl": url, "enabled": false }));
            created["id"].as_str().unwrap().to_owned()
        })
        .collect();
    drop(node);
    let scratch = TempDir::new(&format!("{name}-scratch"));
    let start = (now_ms() - 2 * 86_400_000) / 1000 * 1000;
    write_segments(&recordings, &ids[0], start, 3, scratch.path());
    write_segments(
        &recordings,
        &ids[1],
        start + yard_after_ms,
        3,
        scratch.path(),
    );
    let node = Node::start_recording(data.path(), &recordings, &[]);
    assert!(wait_for(Duration::from_secs(20), || segment_rows(
        data.path()
    )
    .len()
        == 6));
    (data, node, ids, start)
}

/// Posts a motion event of `camera` from `at` for a second.
fn post_motion(node: &Node, camera: &str, at: i64) {
    let body = json!({ "cameraId": camera, "kind": "motion", "score": 0.8,
        "startedAt": iso(at), "endedAt": iso(at + 1000) });
    let response = node.post_json("/api/events", &body.to_string());
    assert_eq!(response.status, 201, "{response}");
}

#[test]
fn the_stacked_timeline_shows_each_cameras_spans_plays_the_row_clicked_and_marks_events_past_the_newest_50()
 {
    // 30 s of each, two days ago, the second's a minute after the first's.
    let (_data, node, ids, start) = porch_and_yard_recorded("stacked", 60_000);
    // The first camera's 10 events in its span (at 1, 3, ... 19 s) are older than its 50
    // of the last 17 hours, so not in the events list's first page; the second's one at 65 s.
    let hour = 3_600_000;
    let events = (0..10)
        .map(|i| (0, start + 1000 + i * 2000))
        .chain([(1, start + 65_000)])
        .chain((1..=50).map(|i| (0, now_ms() - i * hour / 3)));
    for (camera, at) in events {
        post_motion(&node, &ids[camera], at);
    }
    let verdict = browser_script(
        "stacked.mjs",
        &[
            "--url",
            &node.url(),
            "--cameras",
            &ids.join(","),
            "--start",
            &start.to_string(),
        ],
    );
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    eprintln!("{verdict}");
}

#[test]
fn the_recordings_view_lives_at_its_address_fits_a_laptop_groups_markers_and_plays_all_cameras_in_sync()
 {
    // The same 30 s of both, two days ago.
    let (_data, node, ids, start) = porch_and_yard_recorded("recview", 0);
    // Five events of the first camera 2 s apart (one marker at the hour), and one at the
    // left end of the 24 hours the view opens on, where the rows' names are.
    let hour = 3_600_000;
    let events = (1..=5)
        .map(|i| start + i * 2000)
        .chain([start + 12_000 - 11 * hour - 3 * hour / 4]);
    for at in events {
        post_motion(&node, &ids[0], at);
    }
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = browser_script(
        "recordings_view.mjs",
        &[
            "--url",
            &node.url(),
            "--cameras",
            &ids.join(","),
            "--start",
            &start.to_string(),
            "--screenshots",
            &screenshots.display().to_string(),
        ],
    );
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    eprintln!("{verdict}");
}

#[test]
fn a_killed_recorder_comes_back_and_record_off_stops_it() {
    let camera = Camera::start();
    // G.711 audio, which MP4 cannot carry: it becomes AAC.
    let rec = Recording::start("killed", &camera.url("", "/main"), &[]);
    let first = rec.wait_for_segments(1, Duration::from_secs(40));
    let (codecs, _) = probe_file(&rec.recordings.join(&first[0].path));
    assert_eq!(codecs, ["h264", "aac"], "A-law audio becomes AAC");
    thread::sleep(Duration::from_secs(4));
    let recorders = rec.recorders();
    assert_eq!(recorders.len(), 1, "{recorders:?}");
    let killed = recorders[0];
    let cut = incoming(&rec.recordings, &rec.id);
    assert_eq!(cut.len(), 1, "{cut:?}");
    let cut_name = cut[0].file_name().unwrap().to_string_lossy().into_owned();

    let kill = Command::new("kill")
        .args(["-KILL", &killed.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let killed_at = Instant::now();
    assert!(
        wait_for(Duration::from_secs(2), || rec
            .recorders()
            .iter()
            .any(|p| *p != killed)),
        "no new recorder within 2 s of the kill: {:?}",
        rec.recorders()
    );
    eprintln!(
        "a new recorder ran {:?} after the kill",
        killed_at.elapsed()
    );
    assert!(!is_running(killed));
    // The cut segment: either filed, indexed and playable, or gone.
    rec.assert_index_matches_files();
    assert!(
        !incoming(&rec.recordings, &rec.id).iter().any(|f| f
            .file_name()
            .unwrap()
            .to_string_lossy()
            == cut_name),
        "the cut segment {cut_name} was left in incoming"
    );
    let now = rec.rows();
    for row in &now {
        probe_file(&rec.recordings.join(&row.path));
    }
    let recovered = now.len() > first.len();
    eprintln!(
        "the cut segment was {}",
        if recovered { "recovered" } else { "deleted" }
    );

    // Record off: no ffmpeg within 2 s, and its last segment is indexed.
    assert!(
        wait_for(Duration::from_secs(30), || rec.state()["state"]
            == "recording"),
        "not recording again after the kill: {}",
        rec.state()
    );
    thread::sleep(Duration::from_secs(3));
    let before = rec.rows().len();
    let off = rec.patch(json!({ "record": false }));
    assert_eq!(off["record"], false);
    let stopped_at = Instant::now();
    assert!(
        wait_for(Duration::from_secs(2), || rec.recorders().is_empty()
            && rec.state()["state"] == "off"),
        "still recording 2 s after record went off: {:?}, {}",
        rec.recorders(),
        rec.state()
    );
    eprintln!(
        "recording stopped {:?} after record went off",
        stopped_at.elapsed()
    );
    assert!(
        rec.rows().len() > before,
        "the last segment was not indexed"
    );
    assert!(incoming(&rec.recordings, &rec.id).is_empty());
    rec.assert_index_matches_files();

    // On again: recording resumes.
    let resumed_at = now_ms();
    rec.patch(json!({ "record": true }));
    assert!(
        wait_for(Duration::from_secs(30), || rec
            .rows()
            .last()
            .is_some_and(|r| r.start_ms >= resumed_at - 1000)),
        "no new segment after record went on again: {}",
        rec.state()
    );
    assert_eq!(rec.state()["state"], "recording");

    // SIGTERM: the last segment is finished and indexed, and nothing is left.
    let count = rec.rows().len();
    thread::sleep(Duration::from_secs(3));
    let stopping = now_ms();
    rec.node.terminate();
    let Recording {
        node,
        data,
        recordings,
        id,
    } = rec;
    let started = Instant::now();
    assert_eq!(node.wait(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    eprintln!("the node stopped {:?} after SIGTERM", started.elapsed());
    assert!(processes_mentioning("ffmpeg", &recordings.display().to_string()).is_empty());
    let rows = segment_rows(data.path());
    assert!(
        rows.len() > count,
        "the last segment was not indexed on SIGTERM"
    );
    let last = rows.last().unwrap();
    assert!(
        last.end_ms >= stopping - 2_000,
        "{last:?} ends long before the stop at {stopping}"
    );
    assert!(incoming(&recordings, &id).is_empty());
    let indexed: BTreeSet<String> = rows.into_iter().map(|r| r.path).collect();
    assert_eq!(indexed, filed(&recordings));
}

#[test]
fn after_a_killed_node_no_recorder_is_left_and_recording_goes_on() {
    let camera = Camera::start();
    let rec = Recording::start("crash", &camera.url("", "/aac"), &[]);
    rec.wait_for_segments(1, Duration::from_secs(40));
    thread::sleep(Duration::from_secs(5));
    let recorders = rec.recorders();
    assert_eq!(recorders.len(), 1);
    let Recording {
        node,
        data,
        recordings,
        id,
    } = rec;
    node.kill();
    assert!(
        wait_for(Duration::from_secs(2), || !is_running(recorders[0])),
        "ffmpeg {} outlived the node",
        recorders[0]
    );
    let before = segment_rows(data.path());

    let node = Node::start_recording(data.path(), &recordings, &[]);
    let rec = Recording {
        node,
        data,
        recordings,
        id,
    };
    assert!(
        wait_for(Duration::from_secs(40), || rec
            .rows()
            .iter()
            .any(|r| r.start_ms > before.last().unwrap().end_ms + 1000)),
        "recording did not go on after the restart: {}",
        rec.state()
    );
    assert_eq!(rec.recorders().len(), 1, "one recorder after the restart");
    assert!(!rec.recorders().contains(&recorders[0]));
    rec.assert_index_matches_files();
    // What the kill cut short was recovered or deleted: only the new run's file is being written.
    assert!(incoming(&rec.recordings, &rec.id).len() <= 1);
    let after = rec.rows();
    for row in &after {
        probe_file(&rec.recordings.join(&row.path));
    }
    let recovered = after.iter().filter(|r| !before.contains(r)).count();
    eprintln!(
        "{} segments before the kill, {} after the restart ({recovered} new, the cut one among them if it was readable)",
        before.len(),
        after.len()
    );
}

/// How long the recorder's wait to start again has left, by its state
/// (`retrying`, "…; trying again in N s", since when), in ms.
fn wait_left_ms(state: &Value) -> Option<i64> {
    let message = state["message"].as_str()?;
    let seconds: i64 = message
        .rsplit_once("trying again in ")?
        .1
        .strip_suffix(" s")?
        .parse()
        .ok()?;
    let since = ms(state["since"].as_str()?);
    (state["state"] == "retrying").then(|| since + seconds * 1000 - now_ms())
}

#[test]
fn a_camera_back_from_a_reboot_records_within_10_s_and_the_gap_shows() {
    let port = free_port();
    let camera = Camera::start_on(port);
    let rec = Recording::start("reboot", &camera.url("", "/aac"), &[]);
    rec.wait_for_segments(2, Duration::from_secs(40));
    drop(camera);
    let gone = now_ms();
    assert!(
        wait_for(Duration::from_secs(15), || rec.state()["state"]
            == "retrying"),
        "not retrying after the camera went away: {}",
        rec.state()
    );
    let state = rec.state();
    let message = state["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message: {state}"));
    assert!(
        !message.contains("rtsp") && !message.contains("127.0.0.1"),
        "{message}"
    );
    eprintln!("while the camera is away: {state}");
    // A minute's reboot; the camera comes back while the recorder's wait
    // (by then 32 or 60 s) has 15 s or more to run, which the back-off alone
    // would sit out.
    thread::sleep(
        Duration::from_secs(60).saturating_sub(Duration::from_millis((now_ms() - gone) as u64)),
    );
    assert!(
        wait_for(Duration::from_secs(45), || wait_left_ms(&rec.state())
            .is_some_and(|left| left >= 15_000)),
        "no long wait: {}",
        rec.state()
    );
    eprintln!("as the camera comes back: {}", rec.state());
    let _camera = Camera::start_on(port);
    // It answers once it says it is ready.
    let back = now_ms();
    let resumed = || rec.rows().into_iter().find(|r| r.start_ms > gone);
    assert!(
        wait_for(Duration::from_secs(60), || resumed().is_some()),
        "not recording again after the camera came back: {}",
        rec.state()
    );
    let after_ms = resumed().unwrap().start_ms - back;
    eprintln!(
        "recording again {after_ms} ms after the camera came back, {} s after it went away",
        (back - gone) / 1000
    );
    assert!(
        after_ms <= 10_000,
        "the first segment after the camera came back starts {after_ms} ms after it did"
    );
    let spans = rec
        .node
        .get(&format!("/api/cameras/{}/recordings", rec.id))
        .json();
    let spans = spans.as_array().unwrap();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let gap = ms(spans[1]["start"].as_str().unwrap()) - ms(spans[0]["end"].as_str().unwrap());
    assert!(gap >= 55_000, "a gap of {gap} ms: {spans:?}");
    rec.assert_index_matches_files();
}

/// ffmpeg reports the segment it was writing when its camera vanished (cut
/// off, not closing its connection) only after its socket timeout: that
/// segment is still placed where its footage
/// was, right after the one before, not at the report (inside the outage).
#[test]
fn the_last_segment_before_a_camera_drops_is_filed_at_the_time_of_its_footage() {
    let camera = Camera::start_on(free_port());
    let rec = Recording::start("drop", &camera.url("", "/aac"), &[]);
    let rows = rec.wait_for_segments(2, Duration::from_secs(40));
    // A few seconds into the next segment, so that it holds footage.
    let newest_end = rows.iter().map(|r| r.end_ms).max().unwrap();
    assert!(wait_for(Duration::from_secs(10), || now_ms() >= newest_end + 3_000));
    camera.freeze();
    let gone = now_ms();
    let before = rec.rows().len();
    assert!(
        wait_for(Duration::from_secs(30), || rec.state()["state"]
            == "retrying"
            && rec.rows().len() > before),
        "the last segment was not filed after the camera was cut off: {}; {:?}",
        rec.state(),
        rec.rows()
    );
    let rows = rec.rows();
    let [.., previous, last] = rows.as_slice() else {
        panic!("{rows:?}")
    };
    eprintln!("camera cut off at {gone}; the last two segments: {previous:?} {last:?}");
    assert!(
        last.end_ms <= gone + 1_500,
        "the last segment ends {} ms after the camera was cut off: {last:?}",
        last.end_ms - gone
    );
    let hole = last.start_ms - previous.end_ms;
    assert!(
        hole.abs() <= 500,
        "{hole} ms between the last segment and the one before: {previous:?} {last:?}"
    );
    rec.assert_index_matches_files();
}

#[test]
fn recordings_stay_within_their_budget_oldest_first() {
    let camera = Camera::start();
    let budget: u64 = 600 * 1024;
    let data = TempDir::new("budget");
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(
        data.path(),
        &recordings,
        &[("RECORDINGS_MAX_BYTES", "600K")],
    );
    for name in ["One", "Two"] {
        node.add_camera(
            json!({ "name": name, "rtspUrl": camera.url("", "/aac"), "detect": false }),
        );
    }
    let mut seen: BTreeSet<Row> = BTreeSet::new();
    let mut deleted = 0;
    let mut largest = 0;
    let mut most = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(50) {
        let now = segment_rows(data.path());
        let on_disk: u64 = filed(&recordings)
            .iter()
            .filter_map(|p| std::fs::metadata(recordings.join(p)).ok())
            .map(|m| m.len())
            .sum();
        largest = largest.max(now.iter().map(|r| r.bytes).max().unwrap_or(0));
        most = most.max(on_disk);
        assert!(
            on_disk <= budget + 2 * largest,
            "{on_disk} bytes on disk, over the budget of {budget} plus a segment per camera ({largest})"
        );
        // What went is older than all that stays.
        let oldest_kept = now.first().map_or(i64::MAX, |r| r.start_ms);
        for gone in seen.iter().filter(|r| !now.contains(r)) {
            assert!(
                gone.start_ms < oldest_kept,
                "{gone:?} went before older segments: {now:?}"
            );
            deleted += 1;
        }
        seen = now.into_iter().collect();
        thread::sleep(Duration::from_millis(250));
    }
    assert!(
        deleted >= 2,
        "the budget never made the cleaner delete anything"
    );
    let storage = &node.get("/api/status").json()["storage"];
    assert_eq!(storage["budgetBytes"], budget, "{storage}");
    eprintln!(
        "at most {most} bytes on disk for a budget of {budget}, segments up to {largest}; {deleted} deleted"
    );
}

#[test]
fn a_full_disk_stops_no_api_and_recording_resumes_when_space_returns() {
    let camera = Camera::start();
    let disk = Tmpfs::new("8m");
    let data = TempDir::new("full");
    let recordings = disk.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[]);
    std::fs::create_dir_all(&recordings).unwrap();
    // Another program fills the disk to the last byte.
    let filler = disk.fill("filler");
    let created = node
        .add_camera(json!({ "name": "Full", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    let state = || {
        let cameras = node.get("/api/cameras").json();
        cameras
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id.as_str())
            .unwrap()["recording"]
            .clone()
    };
    assert!(
        wait_for(Duration::from_secs(30), || state()["state"] == "retrying"
            && state()["message"]
                .as_str()
                .is_some_and(|m| m.contains("disk is full"))),
        "no full-disk retry: {}",
        state()
    );
    // The API answers on, reads and writes alike.
    assert_eq!(node.get("/api/status").status, 200);
    let other = node.post_json(
        "/api/cameras",
        &json!({ "name": "Other", "rtspUrl": camera.url("", "/aac"), "record": false, "detect": false }).to_string(),
    );
    assert_eq!(other.status, 201, "{other}");
    assert!(segment_rows(data.path()).is_empty());

    std::fs::remove_file(&filler).unwrap();
    let freed = Instant::now();
    assert!(
        wait_for(Duration::from_secs(60), || !segment_rows(data.path())
            .is_empty()),
        "recording did not resume once space returned: {}",
        state()
    );
    eprintln!(
        "recording resumed {:?} after space returned",
        freed.elapsed()
    );
    assert_eq!(state()["state"], "recording");
}

#[test]
fn a_new_url_restarts_the_recorder_disabling_stops_it_and_deleting_deletes_the_recordings() {
    // Two cameras: a recorder's command line does not say which it reads,
    // its connection does.
    let (camera, other) = (Camera::start(), Camera::start());
    let rec = Recording::start("deleted", &camera.url("", "/aac"), &[]);
    rec.wait_for_segments(1, Duration::from_secs(40));
    let recorder_of = |camera: &Camera| processes_connected_to("segment", camera.port);
    assert_eq!(recorder_of(&camera).len(), 1);

    // A new main URL: probed first (the PATCH waits for that), then the
    // recorder restarts on it within 2 s.
    rec.patch(json!({ "rtspUrl": other.url("", "/video-only") }));
    let changed = Instant::now();
    assert!(
        wait_for(Duration::from_secs(2), || recorder_of(&camera).is_empty()
            && recorder_of(&other).len() == 1),
        "not recording the new URL 2 s after the change: {:?} {:?}",
        recorder_of(&camera),
        recorder_of(&other)
    );
    eprintln!(
        "the recorder moved to the new URL in {:?}",
        changed.elapsed()
    );

    // Disabled: no recorder within 2 s; enabled: one again.
    rec.patch(json!({ "enabled": false }));
    assert!(
        wait_for(Duration::from_secs(2), || rec.recorders().is_empty()
            && rec.state()["state"] == "off"),
        "still recording 2 s after the camera was disabled: {}",
        rec.state()
    );
    rec.patch(json!({ "enabled": true }));
    assert!(wait_for(Duration::from_secs(2), || rec.recorders().len() == 1));

    let camera_dir = rec.recordings.join(&rec.id);
    assert!(camera_dir.is_dir());
    let deleted = rec.node.delete(&format!("/api/cameras/{}", rec.id));
    assert_eq!(deleted.status, 204, "{deleted}");
    assert!(
        wait_for(Duration::from_secs(5), || !camera_dir.exists()
            && rec.rows().is_empty()),
        "recordings left: {:?}, {:?}, {}",
        rec.rows(),
        filed(&rec.recordings),
        String::from_utf8_lossy(
            &Command::new("find")
                .arg(&camera_dir)
                .output()
                .unwrap()
                .stdout
        )
    );
    assert!(rec.recorders().is_empty());
    assert_eq!(
        rec.node.get("/api/status").json()["storage"]["usedBytes"],
        0
    );
}

#[test]
fn a_rejected_password_is_retried_in_plain_words_and_never_shown() {
    let camera = Camera::with_credentials("admin", &password("right"));
    // ffmpeg prints this URL, password and all, in its error: the node must
    // not pass it on (the harness sweeps every answer and log line).
    let wrong = camera.url(&format!("admin:{}", password("wrong")), "/aac");
    let rec = Recording::start("rejected", &wrong, &[]);
    assert!(
        wait_for(Duration::from_secs(20), || {
            rec.state()["message"]
                .as_str()
                .is_some_and(|m| m.contains("rejected the user name or password"))
        }),
        "no plain reason: {}",
        rec.state()
    );
    assert_eq!(rec.state()["state"], "retrying");
    assert!(rec.rows().is_empty());
    let status = rec.node.get("/api/status");
    assert_eq!(status.status, 200);
    // The wait doubles from 1 s: runs at about 0, 1, 3 and 7 s in 8 s.
    thread::sleep(Duration::from_secs(8));
    let logs = rec.node.logs();
    let runs = logs
        .lines()
        .filter(|l| l.contains("ffmpeg") && l.ends_with("started"))
        .count();
    assert!((3..=5).contains(&runs), "{runs} runs in 8 s:\n{logs}");
}

/// What a process has read through read calls so far (`rchar` of /proc/PID/io).
fn read_bytes(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[test]
fn playback_reads_each_segment_once_and_never_sends_a_cut_body() {
    let camera = Camera::start();
    // About six segments' worth: retention deletes while the test plays.
    let rec = Recording::start(
        "playback-cache",
        &camera.url("", "/aac"),
        &[("RECORDINGS_MAX_BYTES", "1200K")],
    );
    let rows = rec.wait_for_segments(4, Duration::from_secs(60));
    let (from, to) = (rows[0].start_ms, rows[3].end_ms);
    let window = |shift: i64| {
        format!(
            "/api/cameras/{}/recording.mp4?start={}&end={}",
            rec.id,
            iso(from + shift),
            iso(to - shift)
        )
    };
    // A flood of slightly different windows over the same four files reads
    // less than the first window alone: each file's boxes are read once.
    let pid = rec.node.pid();
    let before = read_bytes(pid);
    let first = rec.node.request("HEAD", &window(0), &[], b"");
    assert_eq!(first.status, 200, "{first}");
    let cold = read_bytes(pid) - before;
    let before = read_bytes(pid);
    for shift in 1..=20 {
        let head = rec.node.request("HEAD", &window(shift), &[], b"");
        assert_eq!(head.status, 200, "{head}");
    }
    let flood = read_bytes(pid) - before;
    eprintln!("the first window read {cold} bytes, 20 more windows {flood} bytes");
    assert!(
        flood < cold,
        "20 windows read {flood} bytes, the first alone {cold}"
    );

    // Retention deletes the oldest file of a clip that is cached: asked
    // again, the clip comes whole (without it), never as a cut body.
    let whole = rec.node.get(&window(0));
    assert_eq!(whole.status, 200);
    let oldest = rec.recordings.join(&rows[0].path);
    assert!(
        wait_for(Duration::from_secs(90), || !oldest.exists()),
        "retention never deleted {}",
        oldest.display()
    );
    let again = rec.node.get(&window(0));
    assert_eq!(again.status, 200, "{}", again.status);
    assert_eq!(
        again.header("Content-Length"),
        Some(again.body.len().to_string().as_str()),
        "a cut body"
    );
    assert!(
        again.body.len() < whole.body.len(),
        "the deleted file is left out"
    );
    let file = rec.data.path().join("again.mp4");
    std::fs::write(&file, &again.body).unwrap();
    decodes(&file).unwrap_or_else(|e| panic!("the clip does not decode: {e}"));
}

/// A copy of a recorded segment filed as if made `ago_ms` before now, in
/// the node's layout (the node, stopped, indexes it when it starts again).
pub(crate) fn file_as_old(recordings: &Path, segment: &Row, ago_ms: i64) -> String {
    let at = iso(now_ms() - ago_ms).replace(':', "-");
    let relative = format!("{}/{}Z/{at}.mp4", segment.camera, &at[..13]);
    let path = recordings.join(&relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(recordings.join(&segment.path), &path).unwrap();
    relative
}

#[test]
fn retain_days_deletes_a_cameras_old_segments_and_says_so() {
    let camera = Camera::start();
    let data = TempDir::new("retain-days");
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[]);
    let url = camera.url("", "/aac");
    // Bad values: 400 naming the field, and nothing made or changed.
    for bad in [json!(0), json!(3651), json!(1.5), json!("7"), json!(true)] {
        let body = json!({ "name": "Bad", "rtspUrl": url, "detect": false, "retainDays": bad });
        let response = node.post_json("/api/cameras", &body.to_string());
        assert_eq!(response.status, 400, "{bad}: {response}");
        assert!(response.text().contains("retainDays"), "{bad}: {response}");
    }
    let added = |name: &str, days: Value| {
        let body = json!({ "name": name, "rtspUrl": url, "detect": false, "retainDays": days });
        node.add_camera(body)
    };
    let kept = added("Kept", Value::Null);
    let aged = added("Aged", json!(3650));
    assert_eq!(
        (&kept["retainDays"], &aged["retainDays"]),
        (&Value::Null, &json!(3650))
    );
    let (kept, aged) = (
        kept["id"].as_str().unwrap().to_owned(),
        aged["id"].as_str().unwrap().to_owned(),
    );
    let listed = node.get("/api/cameras").json();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    for bad in [json!(0), json!(-3), json!("2")] {
        let body = json!({ "retainDays": bad, "name": "Renamed" });
        let response = node.patch_json(&format!("/api/cameras/{aged}"), &body.to_string());
        assert_eq!(response.status, 400, "{bad}: {response}");
        assert!(response.text().contains("retainDays"), "{bad}: {response}");
    }
    let unchanged = node.camera(&aged);
    assert_eq!(
        (&unchanged["retainDays"], &unchanged["name"]),
        (&json!(3650), &json!("Aged"))
    );
    let of = |id: &str| -> Vec<Row> {
        segment_rows(data.path())
            .into_iter()
            .filter(|r| r.camera == id)
            .collect()
    };
    assert!(
        wait_for(Duration::from_secs(60), || !of(&kept).is_empty()
            && !of(&aged).is_empty()),
        "no segments: {:?}",
        segment_rows(data.path())
    );
    drop(node);

    // Each camera gets a segment from 3 days ago, and one from 2 days less
    // a minute ago.
    let day = 24 * 3600 * 1000;
    let mut old = Vec::new();
    for id in [&kept, &aged] {
        let segment = &of(id)[0];
        old.push(file_as_old(&recordings, segment, 3 * day));
        old.push(file_as_old(&recordings, segment, 2 * day - 60_000));
    }
    let node = Node::start_recording(data.path(), &recordings, &[]);
    let indexed = |path: &str| segment_rows(data.path()).iter().any(|r| r.path == path);
    assert!(
        wait_for(Duration::from_secs(30), || old.iter().all(|p| indexed(p))),
        "the old files were not indexed: {:?}\n{}",
        segment_rows(data.path()),
        node.logs()
    );
    // 3650 days keeps them; 2 days deletes the 3-day-old one.
    let bytes = segment_rows(data.path())
        .into_iter()
        .find(|r| r.path == old[2])
        .unwrap()
        .bytes;
    let patched = node.patch_camera(&aged, json!({ "retainDays": 2 }));
    assert_eq!(patched["retainDays"], 2, "{patched}");
    let said = format!(
        "recordings: deleted the 1 segments ({bytes} bytes) of camera {aged} (Aged) that ended more than 2 days ago: retainDays"
    );
    // The cleaner runs after each new segment (10 s) and each minute.
    assert!(
        wait_for(Duration::from_secs(75), || node.logs().contains(&said)),
        "{said} not in:\n{}",
        node.logs()
    );
    assert!(
        !indexed(&old[2]),
        "the 3-day-old segment of Aged is indexed"
    );
    assert!(!recordings.join(&old[2]).exists(), "its file is left");
    let storage = node.get("/api/status").json()["storage"].clone();
    let last = &storage["lastDeletion"];
    assert_eq!(
        (&last["rule"], &last["cameraId"], &last["segments"]),
        (&json!("retainDays"), &json!(aged), &json!(1)),
        "{storage}"
    );
    // Another pass (after the next segment) deletes nothing more: the
    // camera without retainDays keeps its old segments, the other its
    // younger one.
    let newest = segment_rows(data.path()).last().unwrap().start_ms;
    assert!(wait_for(Duration::from_secs(40), || segment_rows(
        data.path()
    )
    .last()
    .unwrap()
    .start_ms
        > newest));
    for path in [&old[0], &old[1], &old[3]] {
        assert!(indexed(path), "{path} went:\n{}", node.logs());
        assert!(recordings.join(path).exists(), "{path}'s file went");
    }
    assert_eq!(
        node.logs().matches(": retainDays").count(),
        1,
        "{}",
        node.logs()
    );
    // null removes the limit.
    let cleared = node.patch_camera(&aged, json!({ "retainDays": null }));
    assert_eq!(cleared["retainDays"], Value::Null, "{cleared}");
    assert_eq!(node.camera(&aged)["retainDays"], Value::Null);
}

/// `codec_name:codec_type:codec_tag_string` of each stream of a recorded file.
fn streams_of(path: &Path) -> Vec<String> {
    let info =
        crate::common::ffprobe_entries(path, "stream=codec_name,codec_type,codec_tag_string");
    let field = |s: &Value, name: &str| s[name].as_str().unwrap_or_default().to_owned();
    info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let [name, kind, tag] =
                ["codec_name", "codec_type", "codec_tag_string"].map(|f| field(s, f));
            format!("{name}:{kind}:{tag}")
        })
        .collect()
}

/// The streams of the first segment `rec` files, once it is filed.
fn first_segment_streams(rec: &Recording) -> Vec<String> {
    let rows = rec.wait_for_segments(1, Duration::from_secs(40));
    streams_of(&rec.recordings.join(&rows[0].path))
}

#[test]
fn g711_cameras_are_recorded_with_their_sound_as_aac() {
    let camera = Camera::start();
    // A-law and µ-law side by side.
    let recs: Vec<(Recording, &str)> = [("/main", "pcm_alaw"), ("/mulaw", "pcm_mulaw")]
        .into_iter()
        .map(|(path, codec)| (Recording::start("g711", &camera.url("", path), &[]), codec))
        .collect();
    for (rec, codec) in &recs {
        let streams = first_segment_streams(rec);
        assert_eq!(
            streams,
            ["h264:video:avc1", "aac:audio:mp4a"],
            "a {codec} camera's recording"
        );
        let shown = rec.camera();
        assert_eq!(
            (
                &shown["audioCodec"],
                &shown["recordedAudio"],
                &shown["warnings"]
            ),
            (&json!(codec), &json!("aac"), &json!([])),
            "{shown}"
        );
    }
}

#[test]
fn an_h265_camera_is_recorded_tagged_hvc1() {
    let camera = Camera::start();
    let rec = Recording::start("h265", &camera.url("", "/h265"), &[]);
    // hvc1: the tag Apple's players need, which the others play too.
    assert_eq!(
        first_segment_streams(&rec),
        ["hevc:video:hvc1", "aac:audio:mp4a"]
    );
    let path = &rec.rows()[0].path;
    decodes(&rec.recordings.join(path)).unwrap();
}

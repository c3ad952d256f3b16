//! Motion detection, end to end, with the real parts: the GStreamer test
//! camera's `/scene` mount, whose picture the test changes while it streams
//! (a box that moves, the lights), the node's ffmpeg decoder and detector,
//! the clips it cuts from the recording (ffprobe and Chromium judge them),
//! and the cloud stand-in the clips go up to.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::cloud::Cloud;
use crate::common::{
    Camera, Node, TempDir, browser_script, ms, probe_file, processes_connected_to, wait_for,
};
use serde_json::{Value, json};

/// How far an event's end may be from the scene's change: frames reach the
/// detector about 0.6 s after they are made, 5 a second.
const WITHIN_MS: i64 = 1_000;
/// How far its start may be: a still scene is watched on its key frames
/// alone, and the first that shows the motion may come a key-frame interval
/// (the test camera's 1 s) after it began.
const START_WITHIN_MS: i64 = WITHIN_MS + 1_000;

/// An event's `startedAt` and `endedAt`, in ms since the epoch.
fn span(event: &Value) -> (i64, i64) {
    let at = |field: &str| ms(event[field].as_str().unwrap());
    (at("startedAt"), at("endedAt"))
}

/// Checks that `event` started within [`START_WITHIN_MS`] of `moved` (when the box
/// started moving) and ended within `end_slack_ms` of `left` (when it
/// stopped or left); returns both offsets.
fn assert_times(event: &Value, moved: i64, left: i64, end_slack_ms: i64) -> (i64, i64) {
    let (start, end) = span(event);
    let (from_start, from_end) = (start - moved, end - left);
    assert!(
        (-WITHIN_MS..=START_WITHIN_MS).contains(&from_start),
        "started {from_start} ms from the box: {event}"
    );
    assert!(
        from_end.abs() <= end_slack_ms,
        "ended {from_end} ms from when the box stopped or left: {event}"
    );
    (from_start, from_end)
}

fn start_node(data: &Path, env: &[(&str, &str)]) -> Node {
    Node::start_recording(data, &data.join("recordings"), env)
}

/// Waits for the camera's `count`-th event to have its clip and thumbnail.
fn wait_for_clips(node: &Node, camera: &str, count: usize, timeout: Duration) -> Vec<Value> {
    let done = wait_for(timeout, || {
        let events = node.events_of(camera);
        events.len() >= count
            && events
                .iter()
                .all(|e| e["clipUrl"].is_string() && e["thumbnailUrl"].is_string())
    });
    let events = node.events_of(camera);
    assert!(
        done,
        "not {count} events with clips within {timeout:?}: {events:#?}"
    );
    events
}

/// The bright pixels of a JPEG, as ffmpeg decodes it to grey: (count,
/// width, height). The scene is mid grey; only the box is white.
fn bright_pixels(jpeg: &[u8], dir: &Path) -> (usize, usize, usize) {
    let file = dir.join("thumbnail.jpg");
    std::fs::write(&file, jpeg).unwrap();
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "v",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let size = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    let (width, height) = size
        .split_once(',')
        .unwrap_or_else(|| panic!("not a picture: {size}"));
    let output = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&file)
        .args(["-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ffmpeg cannot decode the thumbnail"
    );
    let bright = output.stdout.iter().filter(|p| **p > 220).count();
    (bright, width.parse().unwrap(), height.parse().unwrap())
}

/// Checks an event's clip (ffprobe reads it; it holds the event and 5 s
/// each side, to within a segment) and its thumbnail (a JPEG at most 640
/// wide, showing the box).
fn check_files(node: &Node, event: &Value, dir: &Path) {
    let clip = node.get(event["clipUrl"].as_str().unwrap());
    assert_eq!(clip.status, 200, "{event}");
    assert_eq!(clip.header("Content-Type"), Some("video/mp4"));
    let file = dir.join("clip.mp4");
    std::fs::write(&file, &clip.body).unwrap();
    let (start, end) = span(event);
    let length = (end - start) as f64 / 1000.0;
    let seconds = probe_file(&file).1;
    assert!(
        (length + 10.0 - 1.5..=length + 10.0 + 10.0).contains(&seconds),
        "a clip of {seconds} s for an event of {length} s: {event}"
    );
    let thumbnail = node.get(event["thumbnailUrl"].as_str().unwrap());
    assert_eq!(thumbnail.status, 200);
    assert_eq!(thumbnail.header("Content-Type"), Some("image/jpeg"));
    assert_eq!(&thumbnail.body[..3], &[0xff, 0xd8, 0xff], "not a JPEG");
    let (bright, width, height) = bright_pixels(&thumbnail.body, dir);
    assert!(width <= 640 && height > 0, "{width}x{height}");
    // The 80x80 box of a 640x360 picture: about 6,400 pixels at full size.
    assert!(
        (3_000..=12_000).contains(&bright),
        "{bright} bright pixels: no box in the thumbnail"
    );
}

#[test]
fn a_box_is_one_event_the_lights_none_and_two_motions_two() {
    let camera = Camera::start();
    let data = TempDir::new("motion");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(json!({ "name": "Yard", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["detectSensitivity"], "medium");
    node.settle(&id);
    assert!(
        node.events_of(&id).is_empty(),
        "an event before anything moved"
    );

    // A box moves for 5 s: one event, from when it started to when it left.
    let started = camera.scene("box 5");
    let stopped = started + 5_000;
    let events_now = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events_now.len(), 1, "{events_now:#?}");
    let event = &events_now[0];
    assert_eq!(event["kind"], "motion");
    let (from_start, from_end) = assert_times(event, started, stopped, WITHIN_MS);
    let score = event["score"].as_f64().unwrap();
    assert!(
        (0.01..=0.2).contains(&score),
        "a score of {score} for a box of 2.8 % of the picture"
    );
    check_files(&node, event, data.path());
    eprintln!("box: started {from_start} ms, ended {from_end} ms from the scene; score {score}");

    // The lights: the whole picture changes at once. No event.
    camera.scene("lights on");
    thread::sleep(Duration::from_secs(4));
    camera.scene("lights off");
    thread::sleep(Duration::from_secs(14));
    assert_eq!(
        node.events_of(&id).len(),
        1,
        "the lights made an event: {:#?}",
        node.events_of(&id)
    );

    // Two motions 30 s apart: two events.
    let first = camera.scene("box 2");
    thread::sleep(Duration::from_secs(30));
    let second = camera.scene("box 2");
    let all = wait_for_clips(&node, &id, 3, Duration::from_secs(60));
    assert_eq!(all.len(), 3, "{all:#?}");
    for (event, moved) in all[1..].iter().zip([first, second]) {
        let start = span(event).0;
        assert!(
            (-WITHIN_MS..=START_WITHIN_MS).contains(&(start - moved)),
            "{event}"
        );
        check_files(&node, event, data.path());
    }

    // The clip plays in Chromium, and seeks.
    let origin = format!("http://127.0.0.1:{}", node.port);
    let src = all[0]["clipUrl"].as_str().unwrap();
    let verdict = browser_script(
        "playback.mjs",
        &["--origin", &origin, "--src", src, "--seek", "8"],
    );
    assert_eq!(
        verdict["ok"],
        true,
        "{}",
        verdict["output"].as_str().unwrap()
    );
    assert_eq!(verdict["width"], 640);
}

/// A watcher that falls behind (its receiver held still with SIGSTOP while
/// the box moves, then let go: what waited in its socket comes in a burst)
/// still times the event by when the frames were taken, not read (stamped
/// as read, it started as late as the decoder was behind), and cuts the
/// thumbnail where the box is. Its start may be up to a keyframe interval
/// later (the test camera's is 1 s): the decoder loses part of the stream
/// across the stall and takes it up again at a keyframe. At 25 frames a
/// second: at the tests' 10, the test camera's server dropped more of the
/// stalled client's stream (the event began 2.8 s after the box, and lasted
/// 2.2 of its 5 s), which no clock can give back.
#[test]
fn a_decoder_that_falls_behind_times_the_event_and_its_thumbnail_by_the_picture() {
    let camera = Camera::with_scene_fps(25);
    let data = TempDir::new("behind");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(json!({ "name": "Drive", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    let decoders = processes_connected_to(common::MOTION_RECEIVER, camera.port);
    let [decoder] = decoders[..] else {
        panic!("not one decoder: {decoders:?}")
    };
    let signal = |signal| {
        let sent = unsafe { libc::kill(decoder as libc::pid_t, signal) };
        assert_eq!(sent, 0, "signal {signal} to the decoder {decoder}");
    };

    signal(libc::SIGSTOP);
    let started = camera.scene("box 5");
    // The fault: the decoder 4 s behind.
    thread::sleep(Duration::from_secs(4));
    signal(libc::SIGCONT);
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events.len(), 1, "{events:#?}");
    let (start, _) = span(&events[0]);
    let from_start = start - started;
    assert!(
        (-WITHIN_MS..=START_WITHIN_MS + 1_000).contains(&from_start),
        "started {from_start} ms from the box: {}",
        events[0]
    );
    let (_, from_end) = assert_times(&events[0], start, started + 5_000, WITHIN_MS);
    check_files(&node, &events[0], data.path());
    eprintln!("4 s behind: started {from_start} ms, ended {from_end} ms from the scene");
}

#[test]
fn something_that_stops_ends_its_event_and_its_going_is_another() {
    let camera = Camera::start();
    let data = TempDir::new("stay");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(json!({ "name": "Hall", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    // The box moves for 3 s, then stands still for 40 s (longer than the
    // running average takes to absorb it, about 15 s, and the 10 s quiet
    // end together), then is gone. Without a classifier to tell someone
    // waiting from a thing, what stopped has stopped: its event ends when
    // it stopped, though the background takes it in only later. Its going
    // is another, and no ghost starts a third.
    let started = camera.scene("stay 3 40");
    let (stopped, gone) = (started + 3_000, started + 43_000);
    let events = wait_for_clips(&node, &id, 2, Duration::from_secs(100));
    thread::sleep(Duration::from_secs(12));
    let events_now = node.events_of(&id);
    assert_eq!(events_now.len(), 2, "{events_now:#?}");
    let (from_start, from_end) = assert_times(&events[0], started, stopped, WITHIN_MS);
    eprintln!("stay: started {from_start} ms, ended {from_end} ms from the box's stop");
    // Its going is seen on the first key frame after it.
    let (from_start, from_end) = assert_times(&events[1], gone, gone, START_WITHIN_MS);
    eprintln!("going: started {from_start} ms, ended {from_end} ms from the box's going");
}

#[test]
fn a_still_scene_for_two_minutes_gives_no_event() {
    let camera = Camera::start();
    let data = TempDir::new("still");
    let node = start_node(data.path(), &[]);
    // Most eager: the sensor grain must still not count.
    let created = node.add_camera(json!({
        "name": "Still", "rtspUrl": camera.url("", "/scene"), "detectSensitivity": "high", "record": false
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    let watching = Instant::now();
    while watching.elapsed() < Duration::from_secs(125) {
        assert!(
            node.events_of(&id).is_empty(),
            "an event in a still scene: {:#?}",
            node.events_of(&id)
        );
        thread::sleep(Duration::from_secs(1));
    }
    // It was watched all along: its decoder runs.
    let decoders = processes_connected_to(common::MOTION_RECEIVER, camera.port);
    assert_eq!(decoders.len(), 1, "no decoder of the scene: {decoders:?}");
}

#[test]
fn detecting_without_recording_keeps_only_the_events_clips() {
    let camera = Camera::start();
    let data = TempDir::new("ring");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(
        json!({ "name": "Ring", "rtspUrl": camera.url("", "/scene"), "record": false }),
    );
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["recording"]["state"], "off");
    // The ring's recorder and the decoder run; give the detector its calibration.
    thread::sleep(Duration::from_secs(15));
    camera.scene("box 3");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    check_files(&node, &events[0], data.path());
    // Under DATA_DIR, no recording but the clip (and the test's own copies).
    let mut stray = Vec::new();
    let mut folders = vec![data.path().to_owned()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "mp4")
                && !path.starts_with(data.path().join("clips"))
                && path != data.path().join("clip.mp4")
            {
                stray.push(path);
            }
        }
    }
    assert!(stray.is_empty(), "segments reached DATA_DIR: {stray:?}");
    assert_eq!(node.get("/api/status").json()["storage"]["usedBytes"], 0);
}

#[test]
fn a_motion_clip_goes_up_to_the_cloud() {
    let camera = Camera::start();
    let cloud = Cloud::start();
    let data = TempDir::new("motion-cloud");
    let node = start_node(data.path(), &[("CLOUD_URL", &cloud.url())]);
    let created = node.add_camera(json!({ "name": "Gate", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(wait_for(Duration::from_secs(10), || node
        .get("/api/status")
        .json()["cloud"]["state"]
        == "unclaimed"));
    cloud.claim(node.get("/api/status").json()["nodeId"].as_str().unwrap());
    node.settle(&id);
    camera.scene("box 3");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    let event_id = events[0]["id"].as_str().unwrap().to_owned();
    let mut seen = Vec::new();
    let uploaded = wait_for(Duration::from_secs(30), || {
        let status = node.events_of(&id)[0]["clipStatus"]
            .as_str()
            .unwrap()
            .to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        status == "uploaded"
    });
    assert!(uploaded, "clip states seen: {seen:?}");
    let clip = node.get(events[0]["clipUrl"].as_str().unwrap()).body;
    assert_eq!(
        cloud.clip(&event_id).as_deref(),
        Some(clip.as_slice()),
        "the cloud got another file"
    );
    eprintln!("clip states seen: {seen:?}");
}

#[test]
fn a_posted_event_of_a_recording_camera_gets_its_clip() {
    let camera = Camera::start();
    let data = TempDir::new("posted");
    let node = start_node(data.path(), &[]);
    let created = node
        .add_camera(json!({ "name": "Drive", "rtspUrl": camera.url("", "/aac"), "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    thread::sleep(Duration::from_secs(5));
    let now = std::time::SystemTime::now();
    let at =
        |ago: u64| humantime::format_rfc3339_millis(now - Duration::from_secs(ago)).to_string();
    let body = json!({ "cameraId": id, "kind": "person", "score": 0.8, "startedAt": at(6), "endedAt": at(4) });
    let posted = node.post_json("/api/events", &body.to_string());
    assert_eq!(posted.status, 201, "{posted}");
    assert_eq!(posted.json()["clipUrl"], Value::Null, "no clip yet");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(40));
    let clip = node.get(events[0]["clipUrl"].as_str().unwrap());
    let file = data.path().join("posted.mp4");
    std::fs::write(&file, &clip.body).unwrap();
    let seconds = probe_file(&file).1;
    assert!(
        (11.0..=22.0).contains(&seconds),
        "{seconds} s for a 2 s event"
    );
    // Ranges, for players.
    let part = node.request(
        "GET",
        events[0]["clipUrl"].as_str().unwrap(),
        &[("Range", "bytes=0-99")],
        b"",
    );
    assert_eq!((part.status, part.body.len()), (206, 100));
    let unknown = node.get(&format!("/api/events/{}/clip.mp4", uuid::Uuid::new_v4()));
    assert_eq!(unknown.status, 404, "{unknown}");
}

#[test]
fn the_decoder_stops_with_detect_off_and_dies_with_the_node() {
    let camera = Camera::start();
    let data = TempDir::new("decoder");
    let node = start_node(data.path(), &[]);
    let url = camera.url("", "/scene");
    let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": url, "record": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    let decoders = || processes_connected_to(common::MOTION_RECEIVER, camera.port);
    assert!(
        wait_for(Duration::from_secs(10), || decoders().len() == 1),
        "no decoder for a camera with detect on: {:?}",
        decoders()
    );

    let patch = |body: Value| node.patch_camera(&id, body);
    patch(json!({ "detect": false }));
    let off = Instant::now();
    assert!(
        wait_for(Duration::from_secs(2), || decoders().is_empty()),
        "the decoder outlived detect by 2 s: {:?}",
        decoders()
    );
    eprintln!("decoder gone {:?} after detect went off", off.elapsed());

    patch(json!({ "detect": true }));
    // The receiver, and the decoder once the stream comes.
    let watcher = || {
        let mut both = decoders();
        both.extend(common::motion_decoders(node.pid()));
        both
    };
    assert!(
        wait_for(Duration::from_secs(10), || watcher().len() == 2),
        "not a receiver and a decoder after detect went on again: {:?}",
        watcher()
    );
    // A node killed outright takes its receiver and decoder with it
    // (PR_SET_PDEATHSIG).
    let watcher = watcher();
    node.kill();
    assert!(
        wait_for(Duration::from_secs(2), || !watcher
            .iter()
            .any(|p| common::is_running(*p))),
        "the watcher's processes {watcher:?} outlived the node's SIGKILL"
    );
}

#[test]
fn motion_under_a_mask_is_nothing_and_a_zone_limits_events_to_what_enters_it() {
    let camera = Camera::start();
    let data = TempDir::new("zones");
    let node = start_node(data.path(), &[]);
    // The box (80 px square, its bottom at 220 of 360) starts at x 40 of 640
    // and moves 100 px a second. The mask takes the left 40 % of the
    // picture; the zone the right 40 %.
    let rect =
        |left: f64, right: f64| json!([[left, 0.0], [right, 0.0], [right, 1.0], [left, 1.0]]);
    let created = node.add_camera(json!({
        "name": "Yard", "rtspUrl": camera.url("", "/scene"),
        "motionMasks": [rect(0.0, 0.4)],
        "zones": [{ "name": "Lawn", "polygon": rect(0.6, 1.0) }],
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["zones"][0]["kinds"].as_array().map(Vec::len),
        Some(5),
        "{created}"
    );
    node.settle(&id);
    // 1 s: the box stays under the mask (it ends at 220 px, 34 %).
    camera.scene("box 1");
    thread::sleep(Duration::from_secs(14));
    // 2 s: it comes out of the mask (to 50 %) but not into the zone.
    camera.scene("box 2");
    thread::sleep(Duration::from_secs(16));
    assert_eq!(
        node.events_of(&id),
        Vec::<Value>::new(),
        "an event from under the mask or outside the zone"
    );
    // 5 s: it crosses into the zone: one event, that names it, made once
    // what moved entered it.
    let crossed = camera.scene("box 5");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["zones"], json!(["Lawn"]), "{}", events[0]);
    let (start, end) = span(&events[0]);
    assert!(
        start - crossed >= 1_000 && end - crossed <= 5_000 + WITHIN_MS,
        "the event is the box out of the mask, from {} to {} ms: {}",
        start - crossed,
        end - crossed,
        events[0]
    );
}

/// The motion watcher's waits to start again, in seconds, as its log says,
/// in order.
fn watcher_waits(node: &Node, camera: &str) -> Vec<u64> {
    let said = format!("motion watcher of camera {camera}: its decoder stopped; trying again in ");
    node.logs()
        .lines()
        .filter_map(|line| line.split_once(&said)?.1.strip_suffix(" s")?.parse().ok())
        .collect()
}

#[test]
fn a_camera_back_from_a_reboot_is_watched_again_within_10_s() {
    let port = common::free_port();
    let camera = Camera::start_on(port);
    let data = TempDir::new("watch-reboot");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(
        json!({ "name": "Reboot", "rtspUrl": camera.url("", "/scene"), "record": false }),
    );
    let id = created["id"].as_str().unwrap().to_owned();
    let decoders = || processes_connected_to(common::MOTION_RECEIVER, port);
    assert!(
        wait_for(Duration::from_secs(30), || decoders().len() == 1),
        "no decoder: {}",
        node.logs()
    );
    drop(camera);
    let gone = Instant::now();
    // A minute's reboot; the camera comes back just as the watcher begins a
    // wait of 24 s or more (its back-off by then), which it would sit out.
    thread::sleep(Duration::from_secs(60));
    let before = watcher_waits(&node, &id).len();
    let mut long = None;
    assert!(
        wait_for(Duration::from_secs(90), || {
            long = watcher_waits(&node, &id)[before..]
                .iter()
                .copied()
                .find(|s| *s >= 24);
            long.is_some()
        }),
        "no long wait after a minute away: {:?}",
        watcher_waits(&node, &id)
    );
    let _camera = Camera::start_on(port);
    let back = Instant::now();
    assert!(
        wait_for(Duration::from_secs(40), || decoders().len() == 1),
        "not watched again: {}",
        node.logs()
    );
    let after = back.elapsed();
    eprintln!(
        "watched again {} ms after the camera came back ({} s away, the wait {} s)",
        after.as_millis(),
        (back - gone).as_secs(),
        long.unwrap()
    );
    assert!(
        after <= Duration::from_secs(10),
        "watched again only {after:?} after the camera came back, in a wait of {} s",
        long.unwrap()
    );
}

/// The bytes of one picture the decoder `pid` sends of the 640x360 scene:
/// grey at 160x90, or colour at 640 wide (`pgmyuv`, the chroma below the
/// luma), each with its header.
fn picture_bytes(pid: u32) -> u64 {
    let (header, pixels) = if common::command_line(pid).contains("pgmyuv") {
        ("P5\n640 540\n255\n", 640 * 540)
    } else {
        ("P5\n160 90\n255\n", 160 * 90)
    };
    header.len() as u64 + pixels
}

/// Pictures a second the motion decoder `pid` sent the node over `window`,
/// from the bytes it wrote.
fn pictures_per_second(pid: u32, window: Duration) -> f64 {
    let before = common::bytes_written(pid);
    let start = Instant::now();
    thread::sleep(window);
    let bytes = common::bytes_written(pid) - before;
    bytes as f64 / picture_bytes(pid) as f64 / start.elapsed().as_secs_f64()
}

/// The camera's `keyFrames`, once `done` holds of it within `timeout`.
fn key_frames_when(
    node: &Node,
    id: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let held = wait_for(timeout, || done(&node.camera(id)["keyFrames"]));
    let now = node.camera(id)["keyFrames"].clone();
    assert!(held, "keyFrames did not come to what was waited for: {now}");
    now
}

/// A still camera is decoded on its key frames alone (the test camera's:
/// one a second), and at full rate (5 pictures a second) from its first
/// moving key frame to the end of the event; then on key frames again. The
/// pace is read from the bytes the decoder sends the node, not from the
/// node's word.
#[test]
fn a_still_camera_is_decoded_on_its_key_frames_and_an_event_at_full_rate() {
    let camera = Camera::start();
    let data = TempDir::new("pace");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(json!({ "name": "Drive", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    let still = key_frames_when(&node, &id, Duration::from_secs(20), |k| k["pace"] == "key");
    assert_eq!(still["intervalSeconds"], 1.0, "{still}");
    assert_eq!(still["warning"], Value::Null, "{still}");
    let decoders = common::motion_decoders(node.pid());
    let [decoder] = decoders[..] else {
        panic!("not one decoder: {decoders:?}")
    };
    let still_rate = pictures_per_second(decoder, Duration::from_secs(5));
    assert!(
        (0.6..=1.4).contains(&still_rate),
        "{still_rate:.2} pictures a second while nothing moves"
    );

    let started = camera.scene("box 6");
    key_frames_when(&node, &id, Duration::from_secs(3), |k| k["pace"] == "full");
    let moving_rate = pictures_per_second(decoder, Duration::from_secs(3));
    assert!(
        (4.0..=6.0).contains(&moving_rate),
        "{moving_rate:.2} pictures a second while the box moves"
    );
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events.len(), 1, "{events:#?}");
    let (from_start, from_end) = assert_times(&events[0], started, started + 6_000, WITHIN_MS);
    check_files(&node, &events[0], data.path());
    key_frames_when(&node, &id, Duration::from_secs(30), |k| k["pace"] == "key");
    let after_rate = pictures_per_second(decoder, Duration::from_secs(4));
    assert!(
        after_rate <= 1.4,
        "{after_rate:.2} pictures a second after the event"
    );
    eprintln!(
        "pictures a second: {still_rate:.2} still, {moving_rate:.2} moving, {after_rate:.2} after; \
         event {from_start} ms from the box, ended {from_end} ms from it"
    );
}

/// Key frames 4 s apart: on them alone a box crossing in 3 s could fall
/// between two, so the camera is decoded at full rate all the time, and
/// warned of. The crossing is one event; the lights are none.
#[test]
fn key_frames_4_s_apart_are_decoded_at_full_rate_and_a_3_s_crossing_is_one_event() {
    let camera = Camera::with_key_seconds(4);
    let data = TempDir::new("pace-4");
    let node = start_node(data.path(), &[]);
    let created = node.add_camera(json!({ "name": "Lane", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    let shown = key_frames_when(&node, &id, Duration::from_secs(30), |k| {
        k["intervalSeconds"] == 4.0
    });
    assert_eq!(shown["pace"], "full", "{shown}");
    let warning = shown["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("every 4 s") && warning.contains("I-frame interval"),
        "{shown}"
    );

    let started = camera.scene("box 3");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_times(&events[0], started, started + 3_000, WITHIN_MS);
    camera.scene("lights on");
    thread::sleep(Duration::from_secs(4));
    camera.scene("lights off");
    thread::sleep(Duration::from_secs(14));
    let events = node.events_of(&id);
    assert_eq!(events.len(), 1, "the lights made an event: {events:#?}");
}

/// Key frames 10 s apart: the camera's card says so in plain words (added
/// through the UI's form, at a phone's size and a laptop's), the camera JSON
/// says motion would be found late on them alone, and a box crossing in 3 s
/// is still found.
#[test]
fn key_frames_10_s_apart_are_warned_of_on_the_card_and_motion_is_still_found() {
    let camera = Camera::with_key_seconds(10);
    let data = TempDir::new("pace-10");
    let node = start_node(data.path(), &[]);
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = browser_script(
        "warnings.mjs",
        &[
            "--origin",
            &node.url(),
            "--camera-url",
            &camera.url("", "/scene"),
            "--name",
            "Far gate",
            "--screenshots",
            &screenshots.display().to_string(),
            // The camera's first key frame may come 10 s after it is
            // added, and a wait of 3 s without one is what warns.
            "--wait-ms",
            "30000",
        ],
    );
    assert_eq!(verdict["ok"], true, "{}", verdict["output"]);
    for (size, card) in verdict["cards"].as_object().unwrap() {
        let card = card.as_str().unwrap();
        assert!(
            card.contains("Key frames come only every") && card.contains("I-frame interval"),
            "{size}: {card}"
        );
    }
    let cameras = node.get("/api/cameras").json();
    let id = cameras[0]["id"].as_str().unwrap().to_owned();
    let shown = key_frames_when(&node, &id, Duration::from_secs(40), |k| {
        k["intervalSeconds"] == 10.0
    });
    let warning = shown["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("found up to 10 s late"), "{shown}");
    assert_eq!(shown["pace"], "full", "{shown}");

    let started = camera.scene("box 3");
    let events = wait_for_clips(&node, &id, 1, Duration::from_secs(60));
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_times(&events[0], started, started + 3_000, WITHIN_MS);
}

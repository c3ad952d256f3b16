//! Classification of what moved, end to end with the real parts: the test
//! camera slides real photographs (people, one of them about 100 px tall,
//! a car in colour and in grey, a cat) and a plain box across its picture; the node's decoder and detector find the motion,
//! crop it, and the real `nvr-classify` (tract, with the model
//! `deploy/model/install-model.sh` installs) says what it is; the events
//! are stored with their kind, clip and a thumbnail with the object boxed.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::Duration;

use crate::common;
use crate::common::{
    Camera, Node, TempDir, browser_script, children_of, cpu_ticks, is_running, now_ms, wait_for,
};
use serde_json::{Value, json};

/// The shipped model (`target/model`) in the classifier as it ships, on
/// the test camera's photographs (`target/photos`) squeezed to 300x300,
/// against what the TFLite runtime (ai-edge-litert 2.3.0, running the model
/// quantised, with its own post-processing) found in the same crops:
/// `deploy/model/reference.py`. The best object: its label, its score
/// within 0.03 (the model runs here in float, there in 8 bits) and its box
/// within 0.02.
#[test]
fn the_classifier_sees_what_the_tflite_runtime_sees() {
    let photos = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/photos");
    let expected = [
        ("cat", "cat", 0.9102, [0.017, 0.005, 0.916, 0.989]),
        ("person", "person", 0.7305, [0.013, 0.027, 0.714, 0.984]),
        ("car", "car", 0.8789, [0.039, 0.127, 0.866, 0.938]),
        ("cameraman", "person", 0.8398, [0.004, 0.129, 0.595, 0.997]),
    ];
    let crops: Vec<Vec<u8>> = expected
        .iter()
        .map(|(photo, ..)| {
            let path = photos.join(format!("{photo}.png"));
            assert!(
                path.is_file(),
                "{} is missing: bash tests/camera/get_photos.sh target/photos",
                path.display()
            );
            common::classifier::crop(&path)
        })
        .collect();
    let program = common::classifier::program();
    let model = common::classifier::model_dir();
    let answers = common::classifier::answers(&[&program], &model, &crops);
    for ((photo, label, score, bbox), answer) in expected.iter().zip(&answers) {
        let best = &answer["objects"][0];
        assert_eq!(best["label"], *label, "{photo}: {answer}");
        let off = (best["score"].as_f64().unwrap() - score).abs();
        assert!(off <= 0.03, "{photo}: score off by {off}: {answer}");
        let found: Vec<f64> = serde_json::from_value(best["box"].clone()).unwrap();
        let off = found.iter().zip(bbox).map(|(f, e)| (f - e).abs());
        let off = off.fold(0.0, f64::max);
        assert!(
            found.len() == 4 && off <= 0.02,
            "{photo}: box off by {off}: {answer}"
        );
    }
}

/// Waits for the camera's `count`-th event with its clip and thumbnail.
fn wait_for_event(node: &Node, camera: &str, count: usize) -> Vec<Value> {
    let done = wait_for(Duration::from_secs(90), || {
        let events = node.events_of(camera);
        events.len() >= count && events.iter().all(|e| e["thumbnailUrl"].is_string())
    });
    let events = node.events_of(camera);
    assert!(
        done,
        "not {count} events with thumbnails within 90 s: {events:#?}\n{}",
        what_it_said(node)
    );
    events
}

/// The node's log lines about motion and the classifier, for failures.
fn what_it_said(node: &Node) -> String {
    let logs = node.logs();
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("classifier") || l.contains("motion") || l.contains(" event "))
        .collect();
    format!("the node said:\n{}", lines.join("\n"))
}

/// The classifier's process: the node's child running `nvr-classify`.
fn classifier_pid(node: &Node) -> Option<u32> {
    children_of(node.pid()).into_iter().find(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("nvr-classify"))
    })
}

/// The red box drawn on a thumbnail: the bounding box of its pure red
/// pixels, when its top and left edges are red lines (a red thing in the
/// photograph is not a frame).
fn red_box(jpeg: &[u8], dir: &Path) -> Option<(usize, usize, usize, usize)> {
    let file = dir.join("thumbnail.jpg");
    std::fs::write(&file, jpeg).unwrap();
    let output = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&file)
        .args([
            "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "640x360", "pipe:1",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ffmpeg cannot decode the thumbnail"
    );
    let (w, h) = (640, 360);
    let red = |x: usize, y: usize| {
        let p = &output.stdout[(y * w + x) * 3..][..3];
        p[0] > 170 && p[1] < 90 && p[2] < 90
    };
    let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
    for y in 0..h {
        for x in 0..w {
            if red(x, y) {
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            }
        }
    }
    if x1 <= x0 + 10 || y1 <= y0 + 10 {
        return None;
    }
    let share = |n: usize, of: usize| n as f64 / of as f64;
    let top = (x0..=x1).filter(|&x| red(x, y0) || red(x, y0 + 1)).count();
    let left = (y0..=y1).filter(|&y| red(x0, y) || red(x0 + 1, y)).count();
    (share(top, x1 - x0 + 1) > 0.8 && share(left, y1 - y0 + 1) > 0.8).then_some((x0, y0, x1, y1))
}

/// A node that records, with the real classifier installed.
fn start_node(data: &TempDir) -> Node {
    let classifier = common::classifier::real();
    let env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Node::start_recording(data.path(), &data.path().join("recordings"), &env)
}

#[test]
fn each_photograph_is_one_event_of_its_kind_and_the_box_and_the_lights_are_not() {
    let camera = Camera::start();
    let data = TempDir::new("classify");
    let node = start_node(&data);
    assert_eq!(
        node.get("/api/status").json()["classifier"]["installed"],
        true
    );
    let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["classify"], true, "{created}");
    node.settle(&id);

    // Nothing moves: the classifier is up, and spends nothing.
    assert!(
        wait_for(Duration::from_secs(30), || classifier_pid(&node).is_some()),
        "no classifier process: {}",
        what_it_said(&node)
    );
    let pid = classifier_pid(&node).unwrap();
    assert!(wait_for(Duration::from_secs(60), || {
        node.get("/api/status").json()["classifier"]["running"] == true
    }));
    let before = cpu_ticks(pid);
    thread::sleep(Duration::from_secs(20));
    let idle = cpu_ticks(pid) - before;
    assert!(
        idle <= 1,
        "the classifier used {idle} ticks of CPU in 20 s with nothing moving"
    );
    eprintln!("classifier idle: {idle} ticks in 20 s");

    let mut seen = 0;
    for (photo, kind) in [
        ("person", "person"),
        ("hopper", "person"),
        ("small_person", "person"),
        ("car", "vehicle"),
        ("car_grey", "vehicle"),
        ("cat", "animal"),
        ("box", "motion"),
    ] {
        camera.slide(photo, 8);
        seen += 1;
        let all = wait_for_event(&node, &id, seen);
        // No second event of the same slide.
        thread::sleep(Duration::from_secs(3));
        let now = node.events_of(&id);
        assert_eq!(
            now.len(),
            seen,
            "the {photo} made more than one event: {now:#?}"
        );
        let event = &all[seen - 1];
        assert_eq!(
            event["kind"],
            kind,
            "the model did not see the {photo} as {kind}: {event}\n{}",
            what_it_said(&node)
        );
        assert!(event["clipUrl"].is_string(), "no clip: {event}");
        let thumbnail = node.get(event["thumbnailUrl"].as_str().unwrap());
        assert_eq!(thumbnail.status, 200);
        let boxed = red_box(&thumbnail.body, data.path());
        if kind == "motion" {
            assert_eq!(boxed, None, "a motion event's thumbnail has a box: {event}");
        } else {
            assert!(
                boxed.is_some(),
                "no box on the {photo}'s thumbnail: {event}"
            );
        }
        eprintln!("{photo}: {kind}, score {}, box {boxed:?}", event["score"]);
    }

    // The lights: the whole picture changes; no event.
    camera.scene("lights on");
    thread::sleep(Duration::from_secs(4));
    camera.scene("lights off");
    thread::sleep(Duration::from_secs(14));
    let after = node.events_of(&id);
    assert_eq!(after.len(), seen, "the lights made an event: {after:#?}");
}

#[test]
fn the_classifier_runs_only_for_cameras_that_classify_and_comes_back_when_killed() {
    let camera = Camera::start();
    let data = TempDir::new("classify-kill");
    let node = start_node(&data);
    let created = node.add_camera(json!({
        "name": "Gate", "rtspUrl": camera.url("", "/scene"), "classify": false
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    thread::sleep(Duration::from_secs(3));
    assert_eq!(
        classifier_pid(&node),
        None,
        "a classifier with no camera classifying"
    );

    node.patch_camera(&id, json!({ "classify": true }));
    assert!(
        wait_for(Duration::from_secs(60), || {
            node.get("/api/status").json()["classifier"]["running"] == true
        }),
        "the classifier did not start: {}",
        what_it_said(&node)
    );
    let first = classifier_pid(&node).unwrap();
    // The camera's watcher started again with its new settings: time for
    // its detector to learn the scene (as `settle` gives a new camera).
    thread::sleep(Duration::from_secs(8));

    // Killed two seconds into an event: the event is still stored (as
    // motion at worst), and the classifier is back within its backoff.
    camera.slide("person", 8);
    thread::sleep(Duration::from_secs(2));
    // SAFETY: kill on a pid we found as the node's child.
    unsafe { libc::kill(first as libc::pid_t, libc::SIGKILL) };
    assert!(
        wait_for(Duration::from_secs(10), || {
            classifier_pid(&node).is_some_and(|pid| pid != first)
                && node.get("/api/status").json()["classifier"]["running"] == true
        }),
        "the classifier did not come back within 10 s: {}",
        what_it_said(&node)
    );
    let status = node.get("/api/status").json();
    assert!(
        status["classifier"]["failures"].as_u64() >= Some(1),
        "{status}"
    );
    let events = wait_for_event(&node, &id, 1);
    assert_eq!(events.len(), 1, "{events:#?}");
    let kind = events[0]["kind"].as_str().unwrap();
    assert!(kind == "motion" || kind == "person", "{}", events[0]);
    eprintln!("killed mid-event: stored as {kind}");

    // Classify off again: the classifier stops.
    let second = classifier_pid(&node).unwrap();
    node.patch_camera(&id, json!({ "classify": false }));
    assert!(
        wait_for(Duration::from_secs(15), || !is_running(second)),
        "the classifier still runs with no camera classifying"
    );
}

/// In each pass of the test camera's `/footage` (a driveway camera's real
/// footage), the car backs into the picture at about 5.5 s and is out of
/// sight up the road at about 38 s (its frames looked at a second apart):
/// between, it is hidden by a tree for 3 s. The tree and a date stamp move
/// all along, and the camera's exposure follows the car.
const CAR_IN_MS: i64 = 5_500;
const CAR_GONE_MS: i64 = 38_000;

fn ms(iso: &Value) -> i64 {
    common::ms(iso.as_str().unwrap())
}

#[test]
fn real_footage_gives_one_vehicle_event_a_pass_listed_from_its_start() {
    let camera = Camera::start();
    let data = TempDir::new("footage");
    let node = start_node(&data);
    let created = node.add_camera(json!({
        "name": "Driveway", "rtspUrl": camera.url("", "/footage")
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    // The same footage decoded at full rate all along: the same events as
    // on key frames a second apart.
    let full = node.add_camera(json!({
        "name": "Driveway, full rate", "rtspUrl": camera.url("", "/footage"), "fullRate": true
    }));
    let full = full["id"].as_str().unwrap().to_owned();
    // The same footage watched most eagerly: the date stamp's seconds move
    // past its threshold, until the node has learnt them.
    let eager = node.add_camera(json!({
        "name": "Driveway, high", "rtspUrl": camera.url("", "/footage"),
        "detectSensitivity": "high"
    }));
    let eager = eager["id"].as_str().unwrap().to_owned();
    // The node watches from some moment of the first pass: the next two
    // are judged whole.
    assert!(
        wait_for(Duration::from_secs(90), || camera.footage_passes().len()
            >= 2),
        "the footage did not loop: {:?}",
        camera.footage_passes()
    );
    let first = camera.footage_passes()[1];
    // Oldest first.
    let since = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .filter(|e| ms(&e["startedAt"]) >= first - 1_000)
            .collect()
    };

    // Listed while it goes on, a few seconds after it started.
    let listed = wait_for(Duration::from_secs(40), || {
        since(node.events_of(&id))
            .first()
            .is_some_and(|e| e["inProgress"] == true)
    });
    let seen_at = now_ms();
    let going = since(node.events_of(&id));
    assert!(
        listed,
        "no event listed in progress: {going:#?}\n{}",
        what_it_said(&node)
    );
    let event = &going[0];
    assert!(
        seen_at - ms(&event["startedAt"]) <= 6_000,
        "listed {} ms after it started: {event}",
        seen_at - ms(&event["startedAt"])
    );
    assert!(ms(&event["endedAt"]) >= ms(&event["startedAt"]), "{event}");
    // And the UI lists it as going on.
    let origin = format!("http://127.0.0.1:{}", node.port);
    let row = browser_script(
        "ongoing.mjs",
        &[
            "--origin",
            &origin,
            "--event",
            event["id"].as_str().unwrap(),
        ],
    );
    assert_eq!(row["ok"], true, "{}", row["output"].as_str().unwrap_or(""));
    assert!(row["text"].as_str().unwrap().contains("going on"), "{row}");
    assert_eq!(row["live"], "Driveway", "it opens live: {row}");

    // The eager camera learns the stamp's seconds and suggests a mask over
    // them, which a user takes (the camera above has no mask).
    let mut learnt = Value::Null;
    let suggested = wait_for(Duration::from_secs(150), || {
        learnt = node
            .get("/api/cameras")
            .json()
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == eager.as_str())
            .map(|c| c["suggestedMasks"].clone())
            .unwrap();
        learnt.as_array().unwrap().iter().any(|mask| {
            mask.as_array()
                .unwrap()
                .iter()
                .all(|p| p[1].as_f64().unwrap() <= 0.15)
        })
    });
    assert!(
        suggested,
        "no suggested mask on the date stamp: {learnt}\n{}",
        what_it_said(&node)
    );
    let taken = now_ms();
    node.patch_camera(&eager, json!({ "motionMasks": learnt }));

    // After the car of the third pass has gone, and the 10 s of quiet, and
    // the same for the first pass the eager camera watched masked.
    let mut paces = BTreeSet::new();
    let (passes, masked) = loop {
        paces.insert(node.camera(&id)["keyFrames"]["pace"].to_string());
        let passes = camera.footage_passes();
        let masked = passes.iter().copied().find(|&p| p > taken);
        if let Some(masked) = masked
            .filter(|&m| passes.len() >= 3 && now_ms() >= m.max(passes[2]) + CAR_GONE_MS + 15_000)
        {
            break (passes, masked);
        }
        assert!(
            now_ms() < first + 5 * 61_000,
            "the footage stalled: {passes:?}"
        );
        thread::sleep(Duration::from_millis(500));
    };
    // Between the cars, the first camera was on key frames.
    assert!(paces.contains("\"key\""), "{paces:?}");
    assert_eq!(node.camera(&full)["keyFrames"]["pace"], "full");
    for (watched, pace) in [(&id, "key frames"), (&full, "full rate")] {
        let events: Vec<Value> = since(node.events_of(watched))
            .into_iter()
            .filter(|e| passes.get(3).is_none_or(|&p| ms(&e["startedAt"]) < p))
            .collect();
        assert_eq!(
            events.len(),
            2,
            "{pace}: not one event a pass (passes at {passes:?}): {events:#?}\n{}",
            what_it_said(&node)
        );
        for (event, pass) in events.iter().zip(1..) {
            assert_one_pass(event, &camera_footage(&camera, pass), pace, &node);
        }
    }
    // With the mask taken, the eager camera's first whole pass is the car's
    // event alone (which may begin when the looped footage's stamp jumps back
    // a minute, at the pass's start, a change no real camera's clock makes).
    let eager_pass: Vec<Value> = node
        .events_of(&eager)
        .into_iter()
        .filter(|e| {
            ms(&e["endedAt"]) >= masked + 3_000
                && ms(&e["startedAt"]) < masked + CAR_GONE_MS + 15_000
        })
        .collect();
    assert_eq!(
        eager_pass.len(),
        1,
        "{eager_pass:#?}\n{}",
        what_it_said(&node)
    );
    let (start, end) = (
        ms(&eager_pass[0]["startedAt"]) - masked,
        ms(&eager_pass[0]["endedAt"]) - masked,
    );
    assert!(
        start <= CAR_IN_MS + 3_000
            && end >= CAR_GONE_MS - 8_000
            && eager_pass[0]["kind"] == "vehicle",
        "from {start} to {end} ms: {}",
        eager_pass[0]
    );
}

/// When the car of pass `pass` came and went, as the camera sent them.
struct CarPass {
    came: i64,
    gone: i64,
}

fn camera_footage(camera: &Camera, pass: usize) -> CarPass {
    let at = |into| {
        camera.footage_at(pass, into).unwrap_or_else(|| {
            panic!("the camera did not say when it sent {into} ms of pass {pass}")
        })
    };
    CarPass {
        came: at(CAR_IN_MS),
        gone: at(CAR_GONE_MS),
    }
}

/// `event` is the car of `pass`: from its coming to its going, a vehicle.
fn assert_one_pass(event: &Value, pass: &CarPass, pace: &str, node: &Node) {
    let (start, end) = (
        ms(&event["startedAt"]) - pass.came,
        ms(&event["endedAt"]) - pass.gone,
    );
    eprintln!(
        "{pace}: {} from {start} ms after the car came to {end} ms after it was gone, score {}",
        event["kind"], event["score"]
    );
    assert!(
        (-1_500..=3_000).contains(&start),
        "{pace}: started {start} ms after the car came: {event}"
    );
    assert!(
        (-8_000..=4_000).contains(&end),
        "{pace}: ended {end} ms after the car was gone: {event}"
    );
    assert_eq!(event["inProgress"], false, "{event}");
    assert_eq!(
        event["kind"],
        "vehicle",
        "{pace}: the car was not seen as a vehicle: {event}\n{}",
        what_it_said(node)
    );
}

/// A camera on the test camera's `/scene` with the real classifier, added
/// and settled; its id.
fn scene_camera(node: &Node, camera: &Camera, name: &str) -> String {
    let created = node.add_camera(json!({ "name": name, "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    id
}

/// Waits until the camera has `count` events, none in progress, each with
/// its clip; returns them, oldest first.
fn wait_for_ended(node: &Node, camera: &str, count: usize, timeout: Duration) -> Vec<Value> {
    let done = wait_for(timeout, || {
        let events = node.events_of(camera);
        events.len() >= count
            && events
                .iter()
                .all(|e| e["inProgress"] == false && e["clipUrl"].is_string())
    });
    let events = node.events_of(camera);
    assert!(
        done,
        "not {count} ended events with clips within {timeout:?}: {events:#?}\n{}",
        what_it_said(node)
    );
    events
}

#[test]
fn a_person_who_waits_is_one_event_until_they_leave() {
    let camera = Camera::start();
    let data = TempDir::new("waits");
    let node = start_node(&data);
    let id = scene_camera(&node, &camera, "Door");
    // Walks in for 4 s, waits 40 s (longer than the quiet that ends an
    // event and than the background takes to absorb them), then is gone.
    let started = camera.scene("leave person 4 40");
    let gone = started + 44_000;
    let events = wait_for_ended(&node, &id, 1, Duration::from_secs(100));
    thread::sleep(Duration::from_secs(12));
    let events_now = node.events_of(&id);
    assert_eq!(
        events_now.len(),
        1,
        "{events_now:#?}\n{}",
        what_it_said(&node)
    );
    let event = &events[0];
    assert_eq!(event["kind"], "person", "{event}");
    let (start, end) = (
        ms(&event["startedAt"]) - started,
        ms(&event["endedAt"]) - gone,
    );
    assert!(
        (-1_000..=2_000).contains(&start),
        "started {start} ms from the walk: {event}"
    );
    assert!(
        (-2_000..=2_000).contains(&end),
        "ended {end} ms from their going: {event}"
    );
}

#[test]
fn a_thing_left_at_the_door_is_a_package_and_taking_it_is_none() {
    let camera = Camera::start();
    let data = TempDir::new("parcel");
    let node = start_node(&data);
    let id = scene_camera(&node, &camera, "Door");
    // Carried in for 4 s, left for 60 s, then gone.
    let started = camera.scene("leave parcel 4 60");
    let left = started + 4_000;
    let events = wait_for_ended(&node, &id, 2, Duration::from_secs(90));
    let package = &events[1];
    assert_eq!(
        package["kind"],
        "package",
        "{events:#?}\n{}",
        what_it_said(&node)
    );
    assert_eq!(events[0]["kind"], "motion", "the carrying in: {events:#?}");
    let from_left = ms(&package["startedAt"]) - left;
    assert!(
        (-1_000..=2_000).contains(&from_left),
        "the package started {from_left} ms from when it was left: {package}"
    );
    let score = package["score"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&score), "{package}");
    // Its thumbnail shows the thing, boxed.
    let thumbnail = node.get(package["thumbnailUrl"].as_str().unwrap());
    assert_eq!(thumbnail.status, 200);
    let (x0, y0, x1, y1) = red_box(&thumbnail.body, data.path())
        .unwrap_or_else(|| panic!("no box on the package's thumbnail: {package}"));
    assert!(
        x0 < 320 && x1 > 320 && y1 > 250,
        "the box {x0},{y0}-{x1},{y1} is not at the middle bottom"
    );
    // Taken away: its going is an event, not a second package.
    let all = wait_for_ended(&node, &id, 3, Duration::from_secs(100));
    thread::sleep(Duration::from_secs(20));
    let packages = node
        .events_of(&id)
        .iter()
        .filter(|e| e["kind"] == "package")
        .count();
    assert_eq!(packages, 1, "{all:#?}\n{}", what_it_said(&node));
}

#[test]
fn a_car_that_parks_is_one_vehicle_event_past_the_cap_and_its_going_one_more() {
    let camera = Camera::start();
    let data = TempDir::new("parks");
    let node = start_node(&data);
    let id = scene_camera(&node, &camera, "Drive");
    // Drives in for 4 s and stands for 6 minutes, past the 5 minute cap.
    let started = camera.scene("leave car 4 360");
    let (stopped, gone) = (started + 4_000, started + 364_000);
    let events = wait_for_ended(&node, &id, 1, Duration::from_secs(90));
    let parked = &events[0];
    assert_eq!(
        parked["kind"],
        "vehicle",
        "{parked}\n{}",
        what_it_said(&node)
    );
    let end = ms(&parked["endedAt"]) - stopped;
    assert!(
        (-1_000..=3_000).contains(&end),
        "ended {end} ms from its stop: {parked}"
    );
    // Nothing more while it stands.
    while now_ms() < gone - 2_000 {
        let now = node.events_of(&id);
        assert_eq!(
            now.len(),
            1,
            "an event while the car stood: {now:#?}\n{}",
            what_it_said(&node)
        );
        thread::sleep(Duration::from_secs(5));
    }
    let events = wait_for_ended(&node, &id, 2, Duration::from_secs(60));
    thread::sleep(Duration::from_secs(15));
    let after = node.events_of(&id);
    assert_eq!(after.len(), 2, "{after:#?}");
    let going = ms(&events[1]["startedAt"]) - gone;
    assert!(
        (-1_000..=2_000).contains(&going),
        "its going started {going} ms from it: {}",
        events[1]
    );
}

#[test]
fn an_event_kept_while_on_ends_with_its_clip_when_its_kind_leaves_its_zones() {
    let camera = Camera::start();
    let data = TempDir::new("kept-on");
    let node = start_node(&data);
    // Detects without recording (its clips come from the ring), with one
    // zone over the whole picture meant for motion alone: the event is
    // made as motion and becomes a person, whom no zone is meant for.
    let created = node.add_camera(json!({
        "name": "Gate",
        "rtspUrl": camera.url("", "/scene"),
        "record": false,
        "zones": [{"name": "Anywhere", "kinds": ["motion"],
                   "polygon": [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]}],
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    // Nothing is recorded to wait for: the camera online and the classifier
    // up, then the detector's time to learn the scene.
    assert!(
        wait_for(Duration::from_secs(60), || {
            node.camera(&id)["online"] == true
                && node.get("/api/status").json()["classifier"]["running"] == true
        }),
        "the camera or the classifier never came up: {}",
        what_it_said(&node)
    );
    thread::sleep(Duration::from_secs(5));
    camera.slide("person", 8);
    let mut on = None;
    assert!(
        wait_for(Duration::from_secs(30), || {
            on = node
                .events_of(&id)
                .into_iter()
                .find(|e| e["inProgress"] == true);
            on.is_some()
        }),
        "no event in progress: {:#?}\n{}",
        node.events_of(&id),
        what_it_said(&node)
    );
    let on = on.unwrap();
    let kept = node.patch_json(
        &format!("/api/events/{}", on["id"].as_str().unwrap()),
        r#"{"keep": true}"#,
    );
    assert_eq!(kept.status, 200, "{kept}");

    let events = wait_for_ended(&node, &id, 1, Duration::from_secs(90));
    let event = &events[0];
    assert_eq!(event["id"], on["id"], "{events:#?}");
    assert_eq!(event["kind"], "person", "{event}\n{}", what_it_said(&node));
    assert_eq!(event["keep"], true, "{event}");
    assert_eq!(event["zones"], json!(["Anywhere"]), "{event}");
    let clip = node.get(event["clipUrl"].as_str().unwrap());
    assert_eq!(clip.status, 200, "{event}");
    assert!(
        clip.body.len() > 10_000,
        "a clip of {} bytes: {event}",
        clip.body.len()
    );
}

/// Asks the test camera for `command` (`cross` or `sway`), once the
/// photographs it shows are there (`tests/camera/get_photos.sh`).
fn scene_with(camera: &Camera, photos: &[&str], command: &str) -> i64 {
    for name in photos {
        let photo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/photos")
            .join(format!("{name}.png"));
        assert!(
            photo.is_file(),
            "{} is missing: `bash tests/camera/get_photos.sh target/photos` puts it there",
            photo.display()
        );
    }
    camera.scene(command)
}

/// An event's objects of `kind`: (left, top, right, bottom), first and
/// last seen (ms).
fn objects_of(event: &Value, kind: &str) -> Vec<([f64; 4], i64, i64)> {
    event["objects"]
        .as_array()
        .unwrap_or_else(|| panic!("no objects: {event}"))
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            let b: Vec<f64> = o["box"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            (
                [b[0], b[1], b[2], b[3]],
                ms(&o["firstSeenAt"]),
                ms(&o["lastSeenAt"]),
            )
        })
        .collect()
}

/// A car (150 px high) crossing the left of the picture and a person (100
/// px) the right, at once: each is classified on its own, where their
/// union's one square would show only the larger, the car. One event, with
/// both as its objects, of the stronger kind: the person's.
#[test]
fn a_car_and_a_person_at_once_are_one_event_of_the_person_with_both_its_objects() {
    let camera = Camera::start();
    let data = TempDir::new("pair");
    let node = start_node(&data);
    let id = scene_camera(&node, &camera, "Street");
    let started = scene_with(&camera, &["car_grey"], "cross car_grey 20 120 8");
    scene_with(&camera, &["small_person"], "cross small_person 533 433 8");
    wait_for_ended(&node, &id, 1, Duration::from_secs(90));
    // No second event of the pair.
    thread::sleep(Duration::from_secs(10));
    let events = node.events_of(&id);
    assert_eq!(events.len(), 1, "{events:#?}\n{}", what_it_said(&node));
    let event = &events[0];
    assert_eq!(event["kind"], "person", "{event}\n{}", what_it_said(&node));
    let (cars, people) = (objects_of(event, "vehicle"), objects_of(event, "person"));
    assert_eq!(
        (cars.len(), people.len()),
        (1, 1),
        "one object each: {event}"
    );
    assert_eq!(event["objects"].as_array().unwrap().len(), 2, "{event}");
    eprintln!("the pair: {}", event["objects"]);
    let (start, end) = (ms(&event["startedAt"]), ms(&event["endedAt"]));
    for (kind, ([left, top, right, bottom], first, last), side, high) in [
        ("car", cars[0], 0.0..0.55, 150.0 / 360.0),
        ("person", people[0], 0.6..1.0, 100.0 / 360.0),
    ] {
        // On its side of the picture, standing on the bottom margin (20
        // px), about as high as it is shown.
        assert!(
            side.contains(&left) && side.contains(&right),
            "the {kind}'s box {left}..{right} is not on its side: {event}"
        );
        assert!(
            (bottom - 340.0 / 360.0).abs() < 0.06 && ((bottom - top) - high).abs() < 0.1,
            "the {kind}'s box {top}..{bottom} is not where it is: {event}"
        );
        assert!(
            started - 1_000 <= first && first <= last && start <= first && last <= end,
            "the {kind} seen {first}..{last}, the event {start}..{end}: {event}"
        );
    }
}

/// Grass (a real photograph) sways over the left half of the picture all
/// the time, the larger motion by far; a person crosses the right. The
/// union's square would show the grass alone, again and again; each region
/// on its own shows the person: the event is `person`.
#[test]
fn a_person_walking_past_a_swaying_tree_is_a_person() {
    let camera = Camera::start();
    let data = TempDir::new("sway");
    let node = start_node(&data);
    let id = scene_camera(&node, &camera, "Garden");
    scene_with(&camera, &["grass"], "sway 60");
    // The grass alone first: a motion event, under way.
    assert!(
        wait_for(Duration::from_secs(30), || !node.events_of(&id).is_empty()),
        "the grass made no event: {}",
        what_it_said(&node)
    );
    thread::sleep(Duration::from_secs(5));
    let alone = node.events_of(&id);
    assert!(
        alone.iter().all(|e| e["kind"] == "motion"),
        "the grass alone is of a kind: {alone:#?}"
    );
    scene_with(&camera, &["small_person"], "cross small_person 533 400 8");
    let person = wait_for(Duration::from_secs(60), || {
        node.events_of(&id).iter().any(|e| e["kind"] == "person")
    });
    let events = node.events_of(&id);
    assert!(person, "no person: {events:#?}\n{}", what_it_said(&node));
    let event = events.iter().find(|e| e["kind"] == "person").unwrap();
    let people = objects_of(event, "person");
    assert!(
        people.len() == 1 && people[0].0[0] > 0.55,
        "not one person, on the right, among its objects: {event}"
    );
    eprintln!("past the grass: {} {}", event["score"], event["objects"]);
}

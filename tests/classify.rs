//! Classification of what moved, end to end with the real parts: the test
//! camera slides real photographs (people, one of them about 100 px tall,
//! a car in colour and in grey, a cat) and a plain box across its picture; the node's decoder and detector find the motion,
//! crop it, and the real `nvr-classify` (tract, with the model
//! `deploy/model/install-model.sh` installs) says what it is; the events
//! are stored with their kind, clip and a thumbnail with the object boxed.

mod common;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::Duration;

use common::{Camera, Node, TempDir, children_of, cpu_ticks, is_running, wait_for};
use serde_json::{Value, json};

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

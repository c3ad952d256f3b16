//! The live `online` state: a background RTSP OPTIONS check of each enabled
//! camera (every second here), against the real GStreamer camera.

use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Camera, Node, SilentCamera, TempDir, closed_port, wait_for};
use serde_json::{Value, json};

/// The camera's `online` in the camera list, checked to be the same in status.
fn online(node: &Node, name: &str) -> Value {
    let find = |cameras: &Value| {
        let camera = cameras
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned();
        camera.unwrap_or_else(|| panic!("no camera {name}: {cameras}"))["online"].clone()
    };
    let listed = find(&node.get("/api/cameras").json());
    let in_status = find(&node.get("/api/status").json()["cameras"]);
    assert_eq!(listed, in_status, "the list and status disagree on {name}");
    listed
}

#[test]
fn online_follows_the_camera() {
    let camera = Camera::start();
    let silent = SilentCamera::start();
    let dir = TempDir::new("online");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start(dir.path(), &relay, &[("CAMERA_CHECK_INTERVAL", "1s")]);
    // Its probe fails (no such path), but the camera answers OPTIONS: online.
    node.add_camera(json!({ "name": "wrong-path", "rtspUrl": camera.url("", "/nope") }));
    node.add_camera(json!({ "name": "off", "rtspUrl": camera.url("", "/main"), "enabled": false }));
    node.add_camera(
        json!({ "name": "closed", "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()) }),
    );
    assert!(
        wait_for(Duration::from_secs(4), || online(&node, "wrong-path")
            == true),
        "a camera that answers OPTIONS is online"
    );
    assert_eq!(online(&node, "off"), false, "disabled cameras are offline");
    assert_eq!(online(&node, "closed"), false);

    // A silent camera is offline: its 5 s check times out without delaying the others.
    node.add_camera(json!({ "name": "silent", "rtspUrl": silent.url() }));
    assert_eq!(online(&node, "silent"), false);

    drop(camera);
    let gone = Instant::now();
    assert!(
        wait_for(Duration::from_secs(4), || online(&node, "wrong-path")
            == false),
        "still online 4 s after the camera stopped: did the silent camera's 5 s check hold it up?"
    );
    eprintln!("camera loss seen after {:?}", gone.elapsed());
    common::assert_no_secret(&node.logs(), "the node's log");
}

/// Bytes written by `pid` to storage so far, from /proc/PID/io.
fn written_bytes(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("read /proc/PID/io");
    let line = io
        .lines()
        .find(|l| l.starts_with("wchar:"))
        .expect("wchar in /proc/PID/io");
    line["wchar:".len()..].trim().parse().unwrap()
}

/// The data folder's files and their sizes and modification times.
fn data_files(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                meta.len(),
                meta.modified().unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn an_idle_node_writes_nothing() {
    let camera = Camera::start();
    let dir = TempDir::new("idle");
    let relay = common::go2rtc::Go2rtc::start();
    let node = Node::start(
        dir.path(),
        &relay.url(),
        &[("CAMERA_CHECK_INTERVAL", "1s"), ("LOG_LEVEL", "warn")],
    );
    // Idle: not recording (a recording camera writes a segment every 10 s)
    // nor detecting (the camera's ball moves all the time: an event, which
    // is written while it goes on).
    node.add_camera(json!({
        "name": "Porch", "rtspUrl": camera.url("", "/main"), "record": false, "detect": false
    }));
    std::thread::sleep(Duration::from_secs(2));
    let (before, files) = (written_bytes(node.pid()), data_files(dir.path()));
    // Checks every second, status polled as the UI does, relay health and reconcile running.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(6) {
        assert_eq!(node.get("/api/status").status, 200);
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        data_files(dir.path()),
        files,
        "the data folder changed while idle"
    );
    // wchar counts write(2) to files and pipes (the log too); sockets use send(2).
    let written = written_bytes(node.pid()) - before;
    assert_eq!(written, 0, "bytes written while idle:\n{}", node.logs());
    assert!(
        wait_for(Duration::from_secs(1), || online(&node, "Porch") == true),
        "the checks ran"
    );
}

//! The live `online` state: a background RTSP OPTIONS check of each enabled
//! camera (every second here), against the real GStreamer camera.

mod common;

use std::time::{Duration, Instant};

use common::{Camera, Node, SilentCamera, TempDir, closed_port, wait_for};
use serde_json::{Value, json};

fn online(node: &Node, name: &str) -> Value {
    let cameras = node.get("/api/cameras").json();
    let camera = cameras
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned();
    camera.unwrap_or_else(|| panic!("no camera {name}: {cameras}"))["online"].clone()
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
    assert!(!node.logs().contains("silent-secret"));
}

//! A camera's picture now (`GET /api/cameras/{id}/snapshot.jpg`) through the
//! real node, ffmpeg and the GStreamer test camera (which wants a password,
//! so every answer and log line is checked for it): read from the sub
//! stream, or from the main one cut to 640 wide, for cameras whose motion
//! watcher sends no colour frames; taken from the watcher's own frame for
//! one that classifies (the real classifier); 404 for an unknown camera,
//! 502 in plain words when no picture can be had.

use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Camera, Node, TempDir, closed_port, wait_for};
use serde_json::json;

/// A JPEG's width and height, from its frame header.
fn jpeg_size(jpeg: &[u8]) -> (u16, u16) {
    assert!(jpeg.starts_with(&[0xFF, 0xD8]), "not a JPEG");
    let be = |at: usize| u16::from_be_bytes([jpeg[at], jpeg[at + 1]]);
    let mut at = 2;
    while at + 9 < jpeg.len() {
        assert_eq!(jpeg[at], 0xFF, "a JPEG segment at {at}");
        if (0xC0..=0xC2).contains(&jpeg[at + 1]) {
            return (be(at + 7), be(at + 5));
        }
        at += 2 + usize::from(be(at + 2));
    }
    panic!("no frame header in the JPEG");
}

fn relay() -> String {
    format!("http://127.0.0.1:{}", closed_port())
}

fn user(camera: &Camera, path: &str) -> String {
    camera.url(&format!("admin:{}", common::password("snapshot")), path)
}

#[test]
fn a_snapshot_is_read_from_the_stream_at_most_640_wide() {
    let camera = Camera::with_credentials("admin", &common::password("snapshot"));
    let dir = TempDir::new("snapshot-stream");
    let missing = common::classifier::missing(dir.path());
    let env: Vec<(&str, &str)> = missing.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let node = Node::start(dir.path(), &relay(), &env);
    let add = |body: serde_json::Value| node.add_camera(body)["id"].as_str().unwrap().to_owned();
    // Neither detects: no watcher has a frame to give.
    let with_sub = add(json!({
        "name": "Porch", "rtspUrl": user(&camera, "/main"), "rtspSubUrl": user(&camera, "/sub"),
        "detect": false,
    }));
    let hd_only = add(json!({ "name": "Drive", "rtspUrl": user(&camera, "/hd"), "detect": false }));
    for (id, size) in [(&with_sub, (320, 180)), (&hd_only, (640, 360))] {
        let started = Instant::now();
        let response = node.get(&format!("/api/cameras/{id}/snapshot.jpg"));
        assert_eq!(response.status, 200, "{response}");
        assert_eq!(response.header("Content-Type"), Some("image/jpeg"));
        assert_eq!(response.header("Cache-Control"), Some("no-store"));
        assert_eq!(jpeg_size(&response.body), size, "camera {id}");
        eprintln!("a snapshot of {id} in {:?}", started.elapsed());
    }
    assert!(
        node.logs()
            .contains(&format!("camera {with_sub}: snapshot read from its stream")),
        "{}",
        node.logs()
    );

    let unknown = node.get(&format!(
        "/api/cameras/{}/snapshot.jpg",
        uuid::Uuid::new_v4()
    ));
    assert_eq!(unknown.status, 404, "{unknown}");
    assert_eq!(unknown.error(), "no such camera");

    // A camera that refuses, and one without that stream: 502, in plain words.
    let refusing = format!(
        "rtsp://admin:{}@127.0.0.1:{}/main",
        common::password("snapshot"),
        closed_port()
    );
    for (url, why) in [
        (refusing, "the camera refused the connection"),
        (
            user(&camera, "/nope"),
            "the camera has no stream at this path",
        ),
    ] {
        let id = add(json!({ "name": "Gone", "rtspUrl": url, "detect": false }));
        let response = node.get(&format!("/api/cameras/{id}/snapshot.jpg"));
        assert_eq!(response.status, 502, "{response}");
        assert_eq!(response.header("Content-Type"), Some("application/json"));
        assert!(
            response
                .error()
                .starts_with(&format!("no picture could be had from the camera: {why}")),
            "{response}"
        );
    }
}

#[test]
fn a_camera_that_classifies_gives_its_watchers_frame() {
    let camera = Camera::with_credentials("admin", &common::password("snapshot"));
    let dir = TempDir::new("snapshot-watcher");
    let installed = common::classifier::real();
    let env: Vec<(&str, &str)> = installed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let node = Node::start(dir.path(), &relay(), &env);
    let id = node.add_camera(json!({
        "name": "Yard", "rtspUrl": user(&camera, "/main"), "rtspSubUrl": user(&camera, "/sub"),
        "record": false, "classify": true,
    }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/cameras/{id}/snapshot.jpg");
    let from_watcher = format!("camera {id}: snapshot of its motion watcher's frame");
    // Until the watcher's decoder sends frames, snapshots are read from the stream.
    let mut last = None;
    let taken = wait_for(Duration::from_secs(30), || {
        let started = Instant::now();
        let response = node.get(&path);
        last = Some((response.status, started.elapsed()));
        response.status == 200 && node.logs().contains(&from_watcher) && {
            assert_eq!(jpeg_size(&response.body), (320, 180));
            true
        }
    });
    assert!(
        taken,
        "no snapshot from the watcher: {last:?}\n{}",
        node.logs()
    );
    eprintln!("a snapshot from the watcher's frame: {last:?}");
}

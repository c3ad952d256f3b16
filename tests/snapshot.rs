//! A camera's picture now (`GET /api/cameras/{id}/snapshot.jpg`) through the
//! real node, ffmpeg and the GStreamer test camera (which wants a password,
//! so every answer and log line is checked for it): read from the sub
//! stream, or from the main one cut to 640 wide, for cameras whose motion
//! watcher sends no colour frames; taken from the watcher's own frame for
//! one that classifies (the real classifier), in the camera's own colours;
//! 404 for an unknown camera, 502 in plain words when no picture can be had.

use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Camera, Node, TempDir, closed_port, now_ms, segment_rows, wait_for};
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

/// A picture (ffmpeg's input options and file, or `-` for `stdin`) decoded
/// to RGB by ffmpeg.
fn rgb(input: &[&str], stdin: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin"])
        .args(input)
        .args(["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run ffmpeg (Debian's ffmpeg): {e}"));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "ffmpeg {input:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// How colourful a picture is: the mean of |R-G| + |B-G| over its pixels
/// (0 for grey).
fn colourfulness(rgb: &[u8]) -> f64 {
    let sum: u64 = rgb
        .chunks_exact(3)
        .map(|p| u64::from(p[0].abs_diff(p[1])) + u64::from(p[2].abs_diff(p[1])))
        .sum();
    sum as f64 / (rgb.len() / 3) as f64
}

/// The watcher's frame reaches the snapshot in the colours the camera
/// recorded: the astronaut's photograph (orange suit, flag) sliding across
/// the scene, as colourful in the snapshot as in a frame of the recording
/// of that moment. Read with its chroma rows taken for planes (fixed in
/// 8a6f2b2), it came out with cyan and magenta fringes.
#[test]
fn a_classifying_cameras_snapshot_is_as_colourful_as_its_recording() {
    let camera = Camera::with_credentials("admin", &common::password("snapshot"));
    let dir = TempDir::new("snapshot-colours");
    let recordings = dir.path().join("recordings");
    let installed = common::classifier::real();
    let env: Vec<(&str, &str)> = installed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let node = Node::start_recording(dir.path(), &recordings, &env);
    let id = node.add_camera(json!({
        "name": "Yard", "rtspUrl": user(&camera, "/scene"), "classify": true,
    }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    node.settle(&id);
    let path = format!("/api/cameras/{id}/snapshot.jpg");
    let from_watcher = format!("camera {id}: snapshot of its motion watcher's frame");
    let watching = wait_for(Duration::from_secs(30), || {
        node.get(&path).status == 200 && node.logs().contains(&from_watcher)
    });
    assert!(watching, "no snapshot from the watcher\n{}", node.logs());

    camera.slide("person", 30);
    // Taken while the photograph moves, wholly in the picture.
    std::thread::sleep(Duration::from_secs(8));
    let taken = node.logs().matches(&from_watcher).count();
    let at = now_ms();
    let snapshot = node.get(&path);
    assert_eq!(snapshot.status, 200, "{snapshot}");
    assert_eq!(
        node.logs().matches(&from_watcher).count(),
        taken + 1,
        "not the watcher's frame\n{}",
        node.logs()
    );
    assert_eq!(jpeg_size(&snapshot.body), (640, 360));
    let snapshot = colourfulness(&rgb(&["-f", "mjpeg", "-i", "-"], &snapshot.body));

    let mut segment = None;
    let recorded = wait_for(Duration::from_secs(40), || {
        segment = segment_rows(dir.path())
            .into_iter()
            .find(|s| s.camera == id && s.start_ms <= at - 500 && at + 500 < s.end_ms);
        segment.is_some()
    });
    assert!(recorded, "no segment recorded at {at}\n{}", node.logs());
    let segment = segment.unwrap();
    let file = recordings.join(&segment.path);
    let offset = format!("{:.3}", (at - segment.start_ms) as f64 / 1000.0);
    let frame = colourfulness(&rgb(
        &["-ss", &offset, "-i", &file.display().to_string()],
        &[],
    ));
    eprintln!("colourfulness: the snapshot {snapshot:.1}, the recording {frame:.1}");
    // The grey scene has next to no colour: the photograph must be in the frame.
    assert!(
        frame > 8.0,
        "the recording's frame has no colour: {frame:.1}"
    );
    assert!(
        (snapshot - frame).abs() <= 0.2 * frame,
        "the snapshot's colourfulness {snapshot:.1} is not within 20 % of the recording's {frame:.1}"
    );
}

//! The browser UI, end to end: `tests/e2e/ui.mjs` drives headless Debian
//! Chromium through every task a person does (add, probe, edit, watch, read
//! events, play and download recordings, delete) against the real node, the
//! test camera (which the node records) and the WebRTC relay stand-in. When
//! the script prints `need-events <cameraId>`, this test writes three events
//! for that camera into the node's database, as the detector will.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Camera, Node, TempDir, WebrtcRelay};

fn insert_events(data: &Path, camera: &str) {
    let db = rusqlite::Connection::open(data.join("nvr-node.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let events = [
        ("person", 0.91, "uploaded", 90_000),
        ("vehicle", 0.5, "uploading", 60_000),
        ("motion", 0.33, "local", 5_000),
    ];
    for (kind, score, clip, ago) in events {
        db.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![uuid::Uuid::new_v4().to_string(), camera, kind, score, now - ago, now - ago + 12_000, clip],
        )
        .unwrap();
    }
}

#[test]
fn a_person_can_do_everything_in_the_browser() {
    let camera = Camera::start();
    let relay = WebrtcRelay::start_on(0);
    let dir = TempDir::new("ui");
    let node = Node::start(dir.path(), &relay.url(), &[("CAMERA_CHECK_INTERVAL", "2s")]);
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/ui.mjs");
    let mut command = Command::new("node");
    command
        .arg(&script)
        .args(["--base", &format!("http://127.0.0.1:{}", node.port)])
        .args([
            "--camera-url",
            &camera.url("", "/main"),
            "--sub-url",
            &camera.url("", "/sub"),
        ])
        .arg("--screenshots")
        .arg(&screenshots);
    let description = format!("{command:?}");
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node (Node.js, for playwright-core): {e}"));
    let mut output = String::new();
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        if let Some(camera) = line.strip_prefix("need-events ") {
            insert_events(dir.path(), camera.trim());
        }
        output.push_str(&line);
        output.push('\n');
    }
    let status = child.wait().unwrap();
    common::assert_no_secret(&output, "the browser's pages");
    let verdict: serde_json::Value = output
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    assert!(
        status.success() && verdict["ok"] == true,
        "command: {description}\nstatus: {status}\nstdout:\n{output}"
    );
    eprintln!("{verdict}");
}

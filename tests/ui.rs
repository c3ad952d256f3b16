//! The browser UI, end to end: `tests/e2e/ui.mjs` drives headless Debian
//! Chromium through every task a person does (add, probe, edit, set the
//! motion sensitivity and what to classify, watch, read events, filter them
//! by kind, play their clips, play and
//! download recordings, delete) against the real node, the test camera (which
//! the node records) and the real go2rtc. When the script prints
//! `need-events <cameraId>`, this test posts four events for that camera to
//! the node's API without clips (from loopback, as the other detectors on its
//! machine do): three within the last 15 s of recording, whose clips and
//! thumbnails the node cuts, and one from before the camera was added, which
//! never gets any. A second test draws masks and zones over the camera's
//! snapshot with a mouse and with a finger, and filters events by zone
//! (`tests/e2e/zones.mjs`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common;
use crate::common::go2rtc::Go2rtc;
use crate::common::{Camera, Node, TempDir};
use serde_json::{Value, json};

fn post_events(node: &Node, camera: &str) {
    let now = SystemTime::now();
    let at = |ago_ms: u64| {
        humantime::format_rfc3339_millis(now - Duration::from_millis(ago_ms)).to_string()
    };
    // (kind, score, started, ended) in ms before now; the motion one ends 2 s
    // before now, so its clip (to 5 s after) is there some 3 s from now.
    let events = [
        ("package", 0.77, 1_200_000, 1_192_000),
        ("person", 0.91, 14_000, 11_000),
        ("vehicle", 0.5, 10_000, 7_000),
        ("motion", 0.33, 6_000, 2_000),
    ];
    for (kind, score, started, ended) in events {
        let body = json!({
            "cameraId": camera,
            "kind": kind,
            "score": score,
            "startedAt": at(started),
            "endedAt": at(ended),
        });
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "POST /api/events {body}: {response}");
    }
}

#[test]
fn a_person_can_do_everything_in_the_browser() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("ui");
    let [classifier, model] = common::classifier::real();
    let node = Node::start(
        dir.path(),
        &relay.url(),
        &[
            ("CAMERA_CHECK_INTERVAL", "2s"),
            (classifier.0, &classifier.1),
            (model.0, &model.1),
        ],
    );
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
            post_events(&node, camera.trim());
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

#[test]
fn masks_and_zones_are_drawn_with_a_mouse_and_a_finger() {
    let camera = Camera::start();
    let dir = TempDir::new("ui-zones");
    let missing = common::classifier::missing(dir.path());
    let env: Vec<(&str, &str)> = missing.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let relay = format!("http://127.0.0.1:{}", common::closed_port());
    let node = Node::start(dir.path(), &relay, &env);
    // Not detecting: the events are the test's own.
    let id = node.add_camera(json!({
        "name": "Drive", "rtspUrl": camera.url("", "/main"), "rtspSubUrl": camera.url("", "/sub"),
        "detect": false, "record": false,
    }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = common::browser_script(
        "zones.mjs",
        &[
            "--base",
            &node.url(),
            "--camera",
            &id,
            "--screenshots",
            &screenshots.display().to_string(),
        ],
    );
    assert!(
        verdict["ok"] == true,
        "{}",
        verdict["output"].as_str().unwrap_or_default()
    );
    eprintln!("{}", verdict["steps"]);
}

#[test]
fn an_mjpeg_camera_is_added_with_a_warning_in_plain_words_on_its_card() {
    let camera = Camera::start();
    let dir = TempDir::new("ui-mjpeg");
    let missing = common::classifier::missing(dir.path());
    let env: Vec<(&str, &str)> = missing.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let relay = format!("http://127.0.0.1:{}", common::closed_port());
    let node = Node::start(dir.path(), &relay, &env);
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = common::browser_script(
        "warnings.mjs",
        &[
            "--origin",
            &node.url(),
            "--camera-url",
            &camera.url("", "/mjpeg"),
            "--name",
            "Old gate",
            "--screenshots",
            &screenshots.display().to_string(),
        ],
    );
    assert_eq!(verdict["ok"], true, "{}", verdict["output"]);
    let warned = |text: &Value| {
        text.as_str()
            .is_some_and(|t| t.contains("MJPEG") && t.contains("no browser plays"))
    };
    assert!(
        warned(&verdict["added"]),
        "the form said: {}",
        verdict["added"]
    );
    for size in ["390x844", "1280x800"] {
        assert!(
            warned(&verdict["cards"][size]),
            "the card at {size}: {verdict}"
        );
    }
    let cameras = node.get("/api/cameras").json();
    let shown = &cameras[0];
    assert_eq!(shown["capabilities"]["videoCodec"], "mjpeg", "{shown}");
    let warnings = shown["warnings"].as_array().unwrap();
    assert!(warnings.len() == 1 && warned(&warnings[0]), "{warnings:?}");
}

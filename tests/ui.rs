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
//! (`tests/e2e/zones.mjs`). A third deletes a camera with recordings and
//! events (`tests/e2e/delete.mjs`): its dialog's counts are what the node
//! then deletes, and it wants the camera's name typed. Two run the real
//! classifier: a package's object boxed over its thumbnail and its
//! loitering badged (`tests/e2e/objects.mjs`), and a person who lingers said
//! so while the event goes on (`tests/e2e/lingers.mjs`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common;
use crate::common::go2rtc::Go2rtc;
use crate::common::{
    Camera, Node, TempDir, browser_script, closed_port, iso, now_ms, read_database, segment_rows,
    wait_for, write_segments,
};
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
    let verdict = common::verdict_in(&output);
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

/// The files under `dir`, recursively (none when it is gone).
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .flat_map(|p| if p.is_dir() { files_under(&p) } else { vec![p] })
        .collect()
}

/// The clip and thumbnail files of `camera`'s events, from the node's index.
fn event_files(data: &Path, camera: &str) -> Vec<std::path::PathBuf> {
    let db = read_database(data);
    let mut stmt = db
        .prepare("SELECT clip_path, thumbnail_path FROM event WHERE camera_id = ?1")
        .unwrap();
    let rows = stmt.query_map([camera], |r| {
        Ok([r.get::<_, Option<String>>(0)?, r.get(1)?])
    });
    rows.unwrap()
        .flat_map(|r| r.unwrap())
        .flatten()
        .map(|p| data.join(p))
        .collect()
}

#[test]
fn the_delete_dialog_says_what_goes_and_wants_the_cameras_name() {
    let data = TempDir::new("delete-dialog");
    let recordings = data.path().join("recordings");
    let node = Node::start_recording(data.path(), &recordings, &[]);
    // Not recording while deleted: what the dialog counts stays as it is.
    let [porch, yard] = ["Porch", "Yard"].map(|name| {
        let url = format!("rtsp://127.0.0.1:{}/gone", closed_port());
        let created = node.add_camera(json!({ "name": name, "rtspUrl": url, "enabled": false }));
        created["id"].as_str().unwrap().to_owned()
    });
    drop(node);
    let scratch = TempDir::new("delete-dialog-scratch");
    let start = (now_ms() - 86_400_000) / 1000 * 1000;
    write_segments(&recordings, &porch, start, 3, scratch.path());
    write_segments(&recordings, &yard, start, 1, scratch.path());
    let node = Node::start_recording(data.path(), &recordings, &[]);
    assert!(wait_for(Duration::from_secs(20), || segment_rows(
        data.path()
    )
    .len()
        == 4));
    // Three events of Porch's (one kept) and one of Yard's, each cut a clip.
    let ids: Vec<String> = [(&porch, 3), (&porch, 12), (&porch, 21), (&yard, 3)]
        .iter()
        .map(|(camera, second)| {
            let at = start + second * 1000;
            let body = json!({ "cameraId": camera, "kind": "person", "score": 0.8,
                "startedAt": iso(at), "endedAt": iso(at + 2000) });
            let response = node.post_json("/api/events", &body.to_string());
            assert_eq!(response.status, 201, "{response}");
            response.json()["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let kept = node.patch_json(&format!("/api/events/{}", ids[1]), r#"{"keep": true}"#);
    assert_eq!(kept.status, 200, "{kept}");
    assert!(
        wait_for(Duration::from_secs(60), || ids.iter().all(|e| node
            .listed_event(e)
            .is_some_and(
                |e| e["clipUrl"].is_string() && e["thumbnailUrl"].is_string()
            ))),
        "no clips: {}",
        node.get("/api/events").json()
    );

    // What the node says goes is what it holds of Porch.
    let held: Vec<_> = segment_rows(data.path())
        .into_iter()
        .filter(|s| s.camera == porch)
        .collect();
    let files = event_files(data.path(), &porch);
    assert_eq!((held.len(), files.len()), (3, 6), "{held:?} {files:?}");
    assert_eq!(files_under(&recordings.join(&porch)).len(), 3);
    let stored = node.get(&format!("/api/cameras/{porch}/stored"));
    assert_eq!(stored.status, 200, "{stored}");
    assert_eq!(
        stored.json(),
        json!({
            "recordings": 3,
            "recordingBytes": held.iter().map(|s| s.bytes).sum::<u64>(),
            "recordedSeconds": 30,
            "recordedFrom": iso(held[0].start_ms),
            "recordedTo": iso(held[2].end_ms),
            "events": 3,
            "kept": 1,
        })
    );
    let unknown = node.get(&format!("/api/cameras/{}/stored", uuid::Uuid::new_v4()));
    assert_eq!(unknown.status, 404, "{unknown}");

    let verdict = browser_script("delete.mjs", &[&node.url(), &porch, "Porch"]);
    let report = verdict["output"].as_str().unwrap().to_owned();
    assert_eq!(verdict["ok"], true, "{report}");
    let text = verdict["text"].as_str().unwrap();
    eprintln!("the dialog said: {text}");
    for said in [
        "3 recordings (30 s,",
        "3 events with their clips, 1 of them kept",
    ] {
        assert!(text.contains(said), "{said:?} not in {text:?}");
    }

    // Then gone: Porch's rows and files, kept clip too; Yard's stay.
    let gone = wait_for(Duration::from_secs(30), || {
        files_under(&recordings.join(&porch)).is_empty() && files.iter().all(|f| !f.exists())
    });
    assert!(
        gone,
        "files left: {:?} {:?}",
        files_under(&recordings.join(&porch)),
        files.iter().filter(|f| f.exists()).collect::<Vec<_>>()
    );
    let rows = segment_rows(data.path());
    assert!(
        rows.iter().all(|s| s.camera == yard) && rows.len() == 1,
        "{rows:?}"
    );
    let events = read_database(data.path())
        .query_row(
            "SELECT COUNT(*) FROM event WHERE camera_id = ?1",
            [&porch],
            |r| r.get::<_, i64>(0),
        )
        .unwrap();
    assert_eq!(events, 0);
    assert_eq!(
        event_files(data.path(), &yard)
            .iter()
            .filter(|f| f.exists())
            .count(),
        2
    );
    assert_eq!(files_under(&recordings.join(&yard)).len(), 1);
}

/// A package event made by the real classifier (its thing is its one
/// object), drawn in Chromium at 390×844 and 1280×800
/// (`tests/e2e/objects.mjs`): the object's box over the card's thumbnail and
/// its label are where and what the API's `objects` say, and the event's
/// `loitering` shows as a badge on its card and in its player; the event of
/// carrying it in, with no object and not loitering, shows neither.
#[test]
fn an_events_objects_are_boxed_over_its_picture_and_loitering_is_badged() {
    let camera = Camera::start();
    let dir = TempDir::new("ui-objects");
    let classifier = common::classifier::real();
    let env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let recordings = dir.path().join("recordings");
    let node = Node::start_recording(dir.path(), &recordings, &env);
    let created = node.add_camera(json!({ "name": "Door", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    // Carried in for 4 s and left: a motion event, then a package.
    camera.scene("leave parcel 4 60");
    let ready = |e: &&Value| {
        e["inProgress"] == false && e["clipUrl"].is_string() && e["thumbnailUrl"].is_string()
    };
    let found = wait_for(Duration::from_secs(180), || {
        let events = node.events_of(&id);
        events.iter().filter(ready).count() >= 2
            && events.iter().any(|e| e["kind"] == "package" && ready(&e))
    });
    let events = node.events_of(&id);
    assert!(found, "no package event with its files: {events:#?}");
    let package = events.iter().find(|e| e["kind"] == "package").unwrap();
    let plain = events
        .iter()
        .find(|e| e["kind"] != "package" && ready(e))
        .unwrap();
    let objects = package["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "a package carries its thing: {package}");
    assert_eq!(plain["objects"], json!([]), "{plain}");
    // Only the node's motion logic flags loitering (i49-loiter builds it, not
    // merged here): the flag is set in its SQLite file while it is stopped.
    let package_id = package["id"].as_str().unwrap().to_owned();
    node.terminate();
    node.wait();
    let db = rusqlite::Connection::open(dir.path().join("nvr-node.db")).unwrap();
    let set = db
        .execute(
            "UPDATE event SET loitering = 1 WHERE id = ?1",
            [&package_id],
        )
        .unwrap();
    assert_eq!(set, 1);
    drop(db);
    let node = Node::start_recording(dir.path(), &recordings, &env);
    let listed = node.listed_event(&package_id).unwrap();
    assert_eq!(listed["loitering"], true, "{listed}");
    assert_eq!(listed["objects"], package["objects"], "{listed}");

    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = common::browser_script(
        "objects.mjs",
        &[
            "--base",
            &node.url(),
            "--event",
            &package_id,
            "--plain",
            plain["id"].as_str().unwrap(),
            "--screenshots",
            &screenshots.display().to_string(),
        ],
    );
    assert!(
        verdict["ok"] == true,
        "{}",
        verdict["output"].as_str().unwrap_or_default()
    );
    eprintln!("{}", verdict["drawn"]);
}

/// A person who stands in a zone with `loiterSeconds: 10` (the real
/// classifier, the node's own loitering): while the event goes on, the live
/// tile says "Loitering" and its card has the badge (`tests/e2e/lingers.mjs`).
#[test]
fn a_person_who_lingers_is_said_loitering_while_the_event_goes_on() {
    let camera = Camera::start();
    let dir = TempDir::new("ui-lingers");
    let classifier = common::classifier::real();
    let env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let node = Node::start_recording(dir.path(), &dir.path().join("recordings"), &env);
    let created = node.add_camera(json!({
        "name": "Door",
        "rtspUrl": camera.url("", "/scene"),
        "zones": [{"name": "Step", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]], "loiterSeconds": 10}],
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    node.settle(&id);
    // Walks in for 4 s and stands 20 s: loitering some 10 s after showing.
    camera.scene("leave person 4 20");
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let verdict = common::browser_script(
        "lingers.mjs",
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
        "{}\nevents: {:#?}",
        verdict["output"].as_str().unwrap_or_default(),
        node.events_of(&id)
    );
}

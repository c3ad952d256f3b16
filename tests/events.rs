//! Event intake: detectors on this machine add events; the LAN cannot (a
//! network namespace of the test's own gives a real non-loopback client);
//! retention drops the oldest with their clips; a camera takes its events along.

use std::path::Path;
use std::process::Command;

use crate::common;
use crate::common::{Node, TempDir, browser_script, closed_port};
use serde_json::{Value, json};

fn node(dir: &Path, extra: &[(&str, &str)]) -> Node {
    Node::start(dir, &format!("http://127.0.0.1:{}", closed_port()), extra)
}

fn camera(node: &Node) -> String {
    let url = format!("rtsp://127.0.0.1:{}/x", closed_port());
    node.add_camera(json!({ "name": "Door", "rtspUrl": url }))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn event(camera: &str, minute: u32) -> Value {
    let at = format!("2026-11-22T10:{minute:02}:00.000Z");
    json!({ "cameraId": camera, "kind": "vehicle", "score": 0.75, "startedAt": at, "endedAt": at })
}

#[test]
fn events_are_added_and_listed() {
    let dir = TempDir::new("events-add");
    let node = node(dir.path(), &[]);
    let camera = camera(&node);
    let mut body = event(&camera, 4);
    body["endedAt"] = json!("2026-11-22T10:04:07.250Z");
    let response = node.post_json("/api/events", &body.to_string());
    assert_eq!(response.status, 201, "{response}");
    let created = response.json();
    assert!(uuid::Uuid::try_parse(created["id"].as_str().unwrap()).is_ok());
    let expected = json!({
        "id": created["id"], "cameraId": camera, "kind": "vehicle", "score": 0.75,
        "startedAt": "2026-11-22T10:04:00.000Z", "endedAt": "2026-11-22T10:04:07.250Z", "clipStatus": "local",
        "clipUrl": null, "thumbnailUrl": null, "zones": [], "inProgress": false,
        "reviewed": false, "keep": false, "objects": [], "loitering": false,
    });
    assert_eq!(created, expected);
    let mut zoned = event(&camera, 9);
    zoned["zones"] = json!(["Driveway", " Door "]);
    let response = node.post_json("/api/events", &zoned.to_string());
    assert_eq!(response.status, 201, "{response}");
    assert_eq!(response.json()["zones"], json!(["Driveway", "Door"]));
    let listed = node.get("/api/events").json();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["zones"], json!(["Driveway", "Door"]));
    assert_eq!(listed[1], expected, "newest first");

    let bad = [
        (
            json!({ "cameraId": uuid::Uuid::new_v4().to_string() }),
            400,
            "kind is required",
        ),
        (
            event(&uuid::Uuid::new_v4().to_string(), 1),
            400,
            "cameraId names no camera",
        ),
        (
            {
                let mut e = event(&camera, 1);
                e["score"] = json!(2);
                e
            },
            400,
            "score must be a number from 0 to 1",
        ),
        (
            {
                let mut e = event(&camera, 1);
                e["clipPath"] = json!("clips/missing.mp4");
                e
            },
            400,
            "clipPath names no regular file",
        ),
        (
            {
                let mut e = event(&camera, 1);
                e["clipPath"] = json!("../escape.mp4");
                e
            },
            400,
            "clipPath must name an .mp4 file below clips/",
        ),
    ];
    let with_zones = |zones: Value| {
        let mut e = event(&camera, 1);
        e["zones"] = zones;
        e
    };
    let nine: Vec<String> = (0..9).map(|i| format!("z{i}")).collect();
    let bad = bad.into_iter().chain([
        (
            with_zones(json!("Driveway")),
            400,
            "zones must be an array of at most 8 zone names",
        ),
        (
            with_zones(json!(nine)),
            400,
            "zones must be an array of at most 8 zone names",
        ),
        (
            with_zones(json!(["Door", 3])),
            400,
            "zones[1] must be a string",
        ),
        (
            with_zones(json!([""])),
            400,
            "zones[0] must be 1 to 32 characters",
        ),
        (
            with_zones(json!(["d".repeat(33)])),
            400,
            "zones[0] must be 1 to 32 characters",
        ),
        (
            with_zones(json!(["Do\u{0}or"])),
            400,
            "zones[0] must not contain control characters",
        ),
        (
            with_zones(json!(["Door", "Door"])),
            400,
            "zones[1] must not name a zone twice",
        ),
    ]);
    for (body, status, message) in bad {
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, status, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    assert_eq!(
        node.get("/api/events").json().as_array().unwrap().len(),
        2,
        "bad input changed nothing"
    );
}

#[test]
fn retention_drops_the_oldest_with_their_clips_and_cameras_take_theirs() {
    let dir = TempDir::new("events-retention");
    std::fs::create_dir_all(dir.path().join("clips")).unwrap();
    let node = node(dir.path(), &[("MAX_EVENTS", "3")]);
    let (door, yard) = (camera(&node), camera(&node));
    for minute in [1, 2, 3, 4] {
        let clip = format!("clips/{minute}.mp4");
        std::fs::write(dir.path().join(&clip), b"x").unwrap();
        let mut body = event(&door, minute);
        body["clipPath"] = json!(clip);
        assert_eq!(node.post_json("/api/events", &body.to_string()).status, 201);
    }
    let starts: Vec<String> = node
        .get("/api/events")
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["startedAt"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        starts,
        [
            "2026-11-22T10:04:00.000Z",
            "2026-11-22T10:03:00.000Z",
            "2026-11-22T10:02:00.000Z"
        ]
    );
    assert!(
        !dir.path().join("clips/1.mp4").exists(),
        "the dropped event's clip is deleted"
    );
    assert!(dir.path().join("clips/2.mp4").exists());

    assert_eq!(
        node.post_json("/api/events", &event(&yard, 30).to_string())
            .status,
        201
    );
    assert_eq!(node.delete(&format!("/api/cameras/{door}")).status, 204);
    let left = node.get("/api/events").json();
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert_eq!(left[0]["cameraId"], yard.as_str());
    for minute in [2, 3, 4] {
        assert!(
            !dir.path().join(format!("clips/{minute}.mp4")).exists(),
            "clip {minute} left behind"
        );
    }
}

/// Posts an event of `camera` with `clip` as its clipPath.
fn post_with_clip(node: &Node, camera: &str, clip: &str) -> common::Response {
    let mut body = event(camera, 1);
    body["clipPath"] = json!(clip);
    node.post_json("/api/events", &body.to_string())
}

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3";

#[test]
fn a_clip_path_that_is_not_an_mp4_below_clips_is_refused_naming_the_field() {
    let dir = TempDir::new("events-clip-db");
    let node = node(dir.path(), &[]);
    let camera = camera(&node);
    std::fs::create_dir_all(dir.path().join("clips/cam")).unwrap();
    // A link to the database, there before the event is posted.
    std::os::unix::fs::symlink("../../nvr-node.db", dir.path().join("clips/cam/db.mp4")).unwrap();
    for clip in [
        "nvr-node.db",
        "nvr-node.db-wal",
        "clips/../nvr-node.db",
        "clips/cam/db.mp4",
    ] {
        let response = post_with_clip(&node, &camera, clip);
        assert_eq!(response.status, 400, "{clip}: {response}");
        assert!(
            response.error().starts_with("clipPath "),
            "{clip}: {response}"
        );
    }
    let events = node.get("/api/events").json();
    assert_eq!(events, json!([]), "nothing was added");
}

#[test]
fn a_clip_replaced_by_a_link_after_its_event_was_taken_is_not_served() {
    let dir = TempDir::new("events-clip-link");
    let node = node(dir.path(), &[]);
    let camera = camera(&node);
    let data = dir.path();
    std::fs::create_dir_all(data.join("clips/cam")).unwrap();
    std::fs::create_dir_all(data.join("clips/folder")).unwrap();
    std::fs::create_dir_all(data.join("elsewhere")).unwrap();
    for clip in [
        "clips/cam/good.mp4",
        "clips/cam/a.mp4",
        "clips/folder/b.mp4",
    ] {
        std::fs::write(data.join(clip), b"a clip the detector cut").unwrap();
    }
    let mut clip_urls = Vec::new();
    for clip in [
        "clips/cam/good.mp4",
        "clips/cam/a.mp4",
        "clips/folder/b.mp4",
    ] {
        let response = post_with_clip(&node, &camera, clip);
        assert_eq!(response.status, 201, "{clip}: {response}");
        clip_urls.push(response.json()["clipUrl"].as_str().unwrap().to_owned());
    }
    // After the events were taken: the clip becomes a link to the database,
    // and the folder of the other becomes a link to a folder holding a copy
    // of the database under the clip's name.
    std::fs::remove_file(data.join("clips/cam/a.mp4")).unwrap();
    std::os::unix::fs::symlink("../../nvr-node.db", data.join("clips/cam/a.mp4")).unwrap();
    std::fs::copy(data.join("nvr-node.db"), data.join("elsewhere/b.mp4")).unwrap();
    std::fs::remove_dir_all(data.join("clips/folder")).unwrap();
    std::os::unix::fs::symlink("../elsewhere", data.join("clips/folder")).unwrap();
    assert!(
        std::fs::read(data.join("clips/cam/a.mp4"))
            .unwrap()
            .starts_with(SQLITE_HEADER),
        "the link leads to the database"
    );

    let good = node.get(&clip_urls[0]);
    assert_eq!(good.status, 200, "{good}");
    assert_eq!(good.body, b"a clip the detector cut");
    for (url, what) in [
        (&clip_urls[1], "a link"),
        (&clip_urls[2], "a linked folder"),
    ] {
        let served = node.get(url);
        assert!(
            !served.body.starts_with(SQLITE_HEADER),
            "the database was served through {what}"
        );
        assert_eq!(served.status, 404, "{what}: {served}");
        assert_eq!(served.error(), "the file of this event is gone");
    }
}

#[test]
fn an_upload_cut_short_by_a_crash_is_local_again() {
    let dir = TempDir::new("events-crash");
    let node = node(dir.path(), &[]);
    let camera = camera(&node);
    let id = node
        .post_json("/api/events", &event(&camera, 1).to_string())
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    node.kill();
    let db = rusqlite::Connection::open(dir.path().join("nvr-node.db")).unwrap();
    // As the uploader leaves it: only an event with a clip is ever uploading.
    db.execute(
        "UPDATE event SET clip_status = 'uploading', clip_path = 'clips/1.mp4' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    drop(db);
    let node = self::node(dir.path(), &[]);
    assert_eq!(node.get("/api/events").json()[0]["clipStatus"], "local");
}

/// A network namespace of the test's own, removed on drop.
struct Netns(String);

impl Netns {
    /// A namespace whose loopback device also carries 10.77.0.1, a LAN-like address.
    fn new() -> Netns {
        let name = format!("nvrtest{}", std::process::id());
        let ip = |args: &[&str]| {
            let out = Command::new("ip")
                .args(args)
                .output()
                .expect("ip (iproute2) runs");
            assert!(
                out.status.success(),
                "ip {args:?} failed (needs root and iproute2): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        ip(&["netns", "add", &name]);
        let ns = Netns(name.clone());
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        ip(&["-n", &name, "addr", "add", "10.77.0.1/32", "dev", "lo"]);
        ns
    }

    /// `curl` inside the namespace: the JSON answer of a GET.
    fn get_json(&self, url: &str) -> Value {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0, "curl", "-s", url])
            .output()
            .expect("curl runs");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("not JSON from {url}: {out:?}"))
    }

    /// `curl` inside the namespace; returns the HTTP status.
    fn post(&self, url: &str, body: &str) -> u16 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.0,
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
            ])
            .args([
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "--data",
                body,
                url,
            ])
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn events_from_the_lan_are_refused() {
    let ns = Netns::new();
    let dir = TempDir::new("events-lan");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start_wrapped(
        &["ip", "netns", "exec", &ns.0],
        dir.path(),
        &relay,
        &[("LISTEN_ADDRESS", "0.0.0.0")],
    );
    let created = ns.post(
        &format!("http://127.0.0.1:{}/api/cameras", node.port),
        &json!({ "name": "Door", "rtspUrl": "rtsp://127.0.0.1:9/x" }).to_string(),
    );
    assert_eq!(created, 201);
    let cameras = ns.get_json(&format!("http://127.0.0.1:{}/api/cameras", node.port));
    let body = event(cameras[0]["id"].as_str().unwrap(), 1).to_string();
    // From 10.77.0.1, a LAN address: refused. From loopback: taken.
    assert_eq!(
        ns.post(&format!("http://10.77.0.1:{}/api/events", node.port), &body),
        403
    );
    assert_eq!(
        ns.post(&format!("http://127.0.0.1:{}/api/events", node.port), &body),
        201
    );
    let listed = ns.get_json(&format!("http://127.0.0.1:{}/api/events", node.port));
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "only the loopback event: {listed}"
    );
}

/// `PATCH /api/events/{id}` with `body`.
fn mark(node: &Node, id: &Value, body: Value) -> common::Response {
    node.patch_json(
        &format!("/api/events/{}", id.as_str().unwrap()),
        &body.to_string(),
    )
}

/// The status's count of events not reviewed: of all, and of each camera.
fn unreviewed(node: &Node) -> (Value, Vec<Value>) {
    let status = node.get("/api/status").json();
    let cameras = status["cameras"].as_array().unwrap();
    let each = cameras
        .iter()
        .map(|c| c["unreviewedEvents"].clone())
        .collect();
    (status["unreviewedEvents"].clone(), each)
}

/// The starts of the events `query` lists.
fn listed(node: &Node, query: &str) -> Vec<String> {
    let response = node.get(&format!("/api/events{query}"));
    assert_eq!(response.status, 200, "{query}: {response}");
    let events = response.json();
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["startedAt"].as_str().unwrap()[14..16].to_owned())
        .collect()
}

#[test]
fn events_are_reviewed_counted_and_filtered() {
    let dir = TempDir::new("events-review");
    let node = node(dir.path(), &[]);
    let (door, yard) = (camera(&node), camera(&node));
    let mut ids = Vec::new();
    for (camera, minute, kind) in [
        (&door, 1, "person"),
        (&yard, 2, "vehicle"),
        (&door, 3, "vehicle"),
    ] {
        let mut body = event(camera, minute);
        body["kind"] = json!(kind);
        if minute == 2 {
            body["zones"] = json!(["Gate", "Back door"]);
        }
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        assert_eq!(response.json()["reviewed"], false, "false when made");
        ids.push(response.json()["id"].clone());
    }
    assert_eq!(unreviewed(&node), (json!(3), vec![json!(2), json!(1)]));

    let response = mark(&node, &ids[0], json!({ "reviewed": true }));
    assert_eq!(response.status, 200, "{response}");
    let marked = response.json();
    assert_eq!(
        (
            marked["id"].clone(),
            marked["reviewed"].clone(),
            marked["keep"].clone()
        ),
        (ids[0].clone(), json!(true), json!(false))
    );
    assert_eq!(unreviewed(&node), (json!(2), vec![json!(1), json!(1)]));

    // Bad input names the field and changes nothing.
    let bad = [
        (
            json!({ "reviewed": "yes" }),
            400,
            "reviewed must be true or false",
        ),
        (
            json!({ "reviewed": false, "keep": 1 }),
            400,
            "keep must be true or false",
        ),
        (json!({}), 400, "reviewed or keep is required"),
        (json!([true]), 400, "body must be a JSON object"),
    ];
    for (body, status, message) in bad {
        let response = mark(&node, &ids[0], body.clone());
        assert_eq!(response.status, status, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    let missing = json!(uuid::Uuid::new_v4().to_string());
    assert_eq!(
        mark(&node, &missing, json!({ "reviewed": true })).status,
        404
    );
    let plain = node.request(
        "PATCH",
        &format!("/api/events/{}", ids[1].as_str().unwrap()),
        &[("Content-Type", "text/plain")],
        br#"{"reviewed": true}"#,
    );
    assert_eq!(plain.status, 415, "{plain}");
    assert_eq!(
        unreviewed(&node),
        (json!(2), vec![json!(1), json!(1)]),
        "unchanged"
    );

    // The list's filters, newest first, and refusals naming the parameter.
    let ids_of = |query: &str| listed(&node, query);
    assert_eq!(ids_of(""), ["03", "02", "01"]);
    assert_eq!(ids_of("?reviewed=false"), ["03", "02"]);
    assert_eq!(ids_of("?reviewed=true"), ["01"]);
    assert_eq!(ids_of(&format!("?cameraId={door}")), ["03", "01"]);
    assert_eq!(ids_of("?kind=vehicle"), ["03", "02"]);
    assert_eq!(ids_of("?before=2026-11-22T10:03:00.000Z"), ["02", "01"]);
    assert_eq!(
        ids_of(&format!(
            "?before=2026-11-22T10%3A03%3A00Z&cameraId={door}&kind=person"
        )),
        ["01"]
    );
    assert_eq!(ids_of("?keep=true"), Vec::<String>::new());
    assert_eq!(ids_of("?after=2026-11-22T10:02:00.000Z"), ["03", "02"]);
    assert_eq!(
        ids_of("?after=2026-11-22T10:01:00Z&before=2026-11-22T10:03:00Z"),
        ["02", "01"]
    );
    assert_eq!(ids_of("?zone=Back%20door"), ["02"]);
    assert_eq!(
        ids_of(&format!("?zone=Gate&cameraId={door}")),
        Vec::<String>::new()
    );
    assert_eq!(
        ids_of("?zone=Back"),
        Vec::<String>::new(),
        "whole names only"
    );
    for (query, message) in [
        ("?before=yesterday", "before must be an ISO 8601 UTC time"),
        ("?after=noon", "after must be an ISO 8601 UTC time"),
        ("?zone=", "zone must be 1 to 32 characters"),
        ("?cameraId=door", "cameraId must be a camera id"),
        ("?kind=cat", "kind must be one of motion, person"),
        ("?reviewed=1", "reviewed must be true or false"),
        ("?keep=yes", "keep must be true or false"),
    ] {
        let response = node.get(&format!("/api/events{query}"));
        assert_eq!(response.status, 400, "{query}: {response}");
        assert!(response.error().contains(message), "{query}: {response}");
    }

    // Marked as the list's filters show them: counted first (a dry run),
    // then of one kind and camera, of one camera, of all before a moment.
    let before = |body: Value| node.post_json("/api/events/reviewed", &body.to_string());
    let marked = |ids: &[&Value]| json!({ "marked": ids.len(), "ids": ids });
    let at = "2026-11-22T10:05:00.000Z";
    let door_vehicles = json!({ "before": at, "cameraId": door, "kind": "vehicle" });
    let mut dry = door_vehicles.clone();
    dry["dryRun"] = json!(true);
    let response = before(dry);
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json(), marked(&[&ids[2]]));
    assert_eq!(unreviewed(&node).0, json!(2), "a dry run marks nothing");
    let people = before(json!({ "before": at, "kind": "person", "keep": false }));
    assert_eq!(
        people.json(),
        marked(&[]),
        "the person was reviewed already"
    );
    let response = before(json!({ "before": at, "cameraId": yard, "zone": "Gate" }));
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json(), marked(&[&ids[1]]));
    assert_eq!(unreviewed(&node), (json!(1), vec![json!(1), json!(0)]));
    for (body, message) in [
        (json!({ "cameraId": door }), "before is required"),
        (
            json!({ "before": "soon" }),
            "before must be an ISO 8601 UTC time",
        ),
        (
            json!({ "before": at, "cameraId": "x" }),
            "cameraId must be a camera id",
        ),
        (
            json!({ "before": at, "cameraId": uuid::Uuid::new_v4().to_string() }),
            "cameraId names no camera",
        ),
        (
            json!({ "before": at, "kind": "cat" }),
            "kind must be one of",
        ),
        (json!({ "before": at, "kind": 1 }), "kind must be a string"),
        (
            json!({ "before": at, "keep": "yes" }),
            "keep must be true or false",
        ),
        (
            json!({ "before": at, "dryRun": 1 }),
            "dryRun must be true or false",
        ),
        (
            json!({ "before": at, "after": "noon" }),
            "after must be an ISO 8601",
        ),
    ] {
        let response = before(body.clone());
        assert_eq!(response.status, 400, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    assert_eq!(unreviewed(&node).0, json!(1), "bad input marked nothing");
    let response = before(json!({ "before": "2026-11-22T10:03:00.000Z" }));
    assert_eq!(
        response.json(),
        marked(&[]),
        "the 10:03 event is not before 10:03"
    );
    let response = before(json!({ "before": "2026-11-22T10:03:00.001Z" }));
    assert_eq!(response.json(), marked(&[&ids[2]]));
    assert_eq!(unreviewed(&node), (json!(0), vec![json!(0), json!(0)]));
    // Undone by the ids a mark answered: exactly those.
    let undo = |body: Value| node.post_json("/api/events/unreviewed", &body.to_string());
    let response = undo(json!({ "ids": [ids[1], ids[2]] }));
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json(), json!({ "unmarked": 2 }));
    assert_eq!(listed(&node, "?reviewed=false"), ["03", "02"]);
    for (body, message) in [
        (
            json!({ "ids": [] }),
            "ids must be an array of 1 to 1000 event ids",
        ),
        (
            json!({ "ids": ids[1] }),
            "ids must be an array of 1 to 1000",
        ),
        (
            json!({ "ids": [ids[1], "x"] }),
            "ids[1] must be an event id",
        ),
    ] {
        let response = undo(body.clone());
        assert_eq!(response.status, 400, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    assert_eq!(before(door_vehicles).json(), marked(&[&ids[2]]));
    assert_eq!(before(json!({ "before": at })).json(), marked(&[&ids[1]]));
    // Unmarked, and it lasts past a restart.
    assert_eq!(
        mark(&node, &ids[2], json!({ "reviewed": false })).status,
        200
    );
    drop(node);
    let node = self::node(dir.path(), &[]);
    assert_eq!(unreviewed(&node), (json!(1), vec![json!(1), json!(0)]));
    assert_eq!(listed(&node, "?reviewed=false"), ["03"]);
}

#[test]
fn kept_events_outlive_the_cap_and_the_clips_budget_within_their_own() {
    let dir = TempDir::new("events-keep");
    std::fs::create_dir_all(dir.path().join("clips")).unwrap();
    let env = [
        ("MAX_EVENTS", "2"),
        ("CLIPS_RESERVE", "0"),
        ("CLIPS_KEEP_MAX_BYTES", "1500"),
    ];
    let node = node(dir.path(), &env);
    let door = camera(&node);
    let post = |node: &Node, minute: u32| {
        let clip = format!("clips/{minute}.mp4");
        std::fs::write(dir.path().join(&clip), [0; 1000]).unwrap();
        let mut body = event(&door, minute);
        body["clipPath"] = json!(clip);
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        response.json()["id"].clone()
    };
    let kept = post(&node, 1);
    let response = mark(&node, &kept, json!({ "keep": true }));
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json()["keep"], true);
    let storage = node.get("/api/status").json()["storage"].clone();
    assert_eq!(
        (
            storage["keptBytes"].clone(),
            storage["keptBudgetBytes"].clone()
        ),
        (json!(1000), json!(1500)),
        "{storage}"
    );
    // Its bytes leave the clips' count at once, not at the next minute's look.
    assert!(
        common::wait_for(std::time::Duration::from_secs(5), || node
            .get("/api/status")
            .json()["storage"]["clipsBytes"]
            == 0),
        "{}",
        node.get("/api/status").json()["storage"]
    );

    // Past the budget: refused, saying how much is kept and how to free it.
    let second = post(&node, 2);
    let response = mark(&node, &second, json!({ "keep": true }));
    assert_eq!(response.status, 409, "{response}");
    let said = response.error();
    for part in [
        "kept events take 1000 bytes of their 1500",
        "this one takes 1000",
        "\"keep\": false",
        "CLIPS_KEEP_MAX_BYTES",
    ] {
        assert!(said.contains(part), "{said:?} lacks {part:?}");
    }
    assert_eq!(listed(&node, "?keep=true"), ["01"], "nothing else changed");

    // The cap (2) counts the others only: the oldest of them goes, with its clip.
    post(&node, 3);
    post(&node, 4);
    assert_eq!(listed(&node, ""), ["04", "03", "01"]);
    assert_eq!(last_events_deletion(&node), ("MAX_EVENTS".into(), 1, 1000));
    assert!(
        node.logs().contains(
            "deleted the 1 oldest events with their clips and thumbnails (1000 bytes): MAX_EVENTS"
        ),
        "{}",
        node.logs()
    );
    assert!(
        !dir.path().join("clips/2.mp4").exists(),
        "the unkept event's clip is left"
    );
    assert!(
        dir.path().join("clips/1.mp4").exists(),
        "the kept event's clip went"
    );

    // A clips' budget that holds one of the others: the older goes, the kept one stays.
    drop(node);
    let budget = [("CLIPS_MAX_BYTES", "1000")];
    let node = self::node(dir.path(), &[&env[..], &budget[..]].concat());
    assert!(
        common::wait_for(std::time::Duration::from_secs(10), || listed(&node, "")
            == ["04", "01"]),
        "{}",
        node.get("/api/events").json()
    );
    assert!(common::wait_for(std::time::Duration::from_secs(5), || !dir
        .path()
        .join("clips/3.mp4")
        .exists()));
    assert!(
        dir.path().join("clips/1.mp4").exists(),
        "the budget deleted the kept clip"
    );
    assert!(
        common::wait_for(std::time::Duration::from_secs(5), || node
            .logs()
            .contains("clips over their budget")),
        "{}",
        node.logs()
    );
    assert_eq!(
        last_events_deletion(&node),
        ("CLIPS_MAX_BYTES".into(), 1, 1000)
    );
    let storage = node.get("/api/status").json()["storage"].clone();
    assert_eq!(
        (storage["clipsBytes"].clone(), storage["keptBytes"].clone()),
        (json!(1000), json!(1000)),
        "{storage}"
    );

    // No longer kept, it goes like any other.
    assert_eq!(mark(&node, &kept, json!({ "keep": false })).status, 200);
    // (The cap drops it at once; the budget may drop 04 soon after.)
    post(&node, 5);
    let left = listed(&node, "");
    assert!(
        left.starts_with(&["05".to_owned()]) && !left.contains(&"01".to_owned()),
        "{left:?}"
    );
    assert!(!dir.path().join("clips/1.mp4").exists());
}

#[test]
fn events_past_their_days_go_but_kept_ones() {
    let dir = TempDir::new("events-age");
    let node = node(dir.path(), &[]);
    let door = camera(&node);
    let ids = common::post_aged_events(&node, dir.path(), &door);
    drop(node);
    let node = self::node(dir.path(), &[("EVENTS_RETAIN_DAYS", "2")]);
    assert!(
        common::wait_for(std::time::Duration::from_secs(10), || node
            .listed_event(&ids[0])
            .is_none()),
        "the 3-day-old event outlived EVENTS_RETAIN_DAYS=2"
    );
    assert!(common::wait_for(std::time::Duration::from_secs(5), || !dir
        .path()
        .join("clips/old.mp4")
        .exists()));
    for (id, clip) in [(&ids[1], "kept"), (&ids[2], "new")] {
        assert!(node.listed_event(id).is_some(), "{clip} went");
        assert!(
            dir.path().join(format!("clips/{clip}.mp4")).exists(),
            "{clip}'s clip went"
        );
    }
    let said = "deleted the 1 events older than 2 days with their clips and thumbnails (1 bytes): EVENTS_RETAIN_DAYS";
    assert!(
        common::wait_for(std::time::Duration::from_secs(5), || node
            .logs()
            .contains(said)),
        "{}",
        node.logs()
    );
    assert_eq!(
        last_events_deletion(&node),
        ("EVENTS_RETAIN_DAYS".into(), 1, 1)
    );
}

/// status.storage.lastEventsDeletion's rule, events and bytes.
fn last_events_deletion(node: &Node) -> (String, u64, u64) {
    let last = node.get("/api/status").json()["storage"]["lastEventsDeletion"].clone();
    assert!(
        last["at"].as_str().is_some_and(|at| at.ends_with('Z')),
        "{last}"
    );
    (
        last["rule"].as_str().unwrap_or_default().to_owned(),
        last["events"].as_u64().unwrap_or(u64::MAX),
        last["bytes"].as_u64().unwrap_or(u64::MAX),
    )
}

/// The review list in Chromium at a laptop's and a phone's size
/// (`tests/e2e/review.mjs`), each against a node of its own with five events
/// with 1000-byte clips on two cameras and room to keep one of them (the
/// script posts 50 more to page back).
#[test]
fn events_are_reviewed_and_kept_in_the_browser() {
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for viewport in ["1280x800", "390x844"] {
        let dir = TempDir::new("events-review-ui");
        std::fs::create_dir_all(dir.path().join("clips")).unwrap();
        let env = [("CLIPS_KEEP_MAX_BYTES", "1500"), ("CLIPS_RESERVE", "0")];
        let node = node(dir.path(), &env);
        let url = format!("rtsp://127.0.0.1:{}/x", closed_port());
        let add = |name: &str| {
            let camera = node.add_camera(json!({ "name": name, "rtspUrl": url }));
            camera["id"].as_str().unwrap().to_owned()
        };
        let (door, yard) = (add("Door"), add("Yard"));
        let events = [
            (&door, "2026-11-20T09:00:00.000Z", "motion", json!([])),
            (&door, "2026-11-22T10:01:00.000Z", "person", json!([])),
            (
                &yard,
                "2026-11-22T10:02:00.000Z",
                "vehicle",
                json!(["Gate"]),
            ),
            (&door, "2026-11-22T10:03:00.000Z", "vehicle", json!([])),
            (&yard, "2026-11-22T10:04:00.000Z", "motion", json!([])),
        ];
        for (i, (camera, at, kind, zones)) in events.into_iter().enumerate() {
            let clip = format!("clips/{i}.mp4");
            std::fs::write(dir.path().join(&clip), [0; 1000]).unwrap();
            let body = json!({
                "cameraId": camera, "kind": kind, "score": 0.8, "startedAt": at, "endedAt": at,
                "zones": zones, "clipPath": clip,
            });
            let response = node.post_json("/api/events", &body.to_string());
            assert_eq!(response.status, 201, "{response}");
        }
        let verdict = browser_script(
            "review.mjs",
            &[
                "--url",
                &node.url(),
                "--viewport",
                viewport,
                "--screenshots",
                &shots.display().to_string(),
            ],
        );
        assert_eq!(
            verdict["ok"],
            true,
            "reviewing at {viewport}:\n{}",
            verdict["output"].as_str().unwrap()
        );
        eprintln!(
            "{viewport}: the header counted one less {} ms after an event was opened",
            verdict["headerMs"]
        );
    }
}

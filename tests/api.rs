//! The spec's endpoints and errors, against the real binary. Cameras here point
//! at closed ports, so their probes fail fast; `probe.rs` uses a real camera.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::http::served_as;
use crate::common::{Node, TempDir, Tmpfs, closed_port};
use serde_json::{Value, json};

/// A node without the classifier (its paths named, so one built beside the
/// node's program does not count).
fn node(dir: &TempDir) -> Node {
    node_with(dir, &[])
}

fn node_with(dir: &TempDir, extra: &[(&str, &str)]) -> Node {
    let missing = common::classifier::missing(dir.path());
    let mut env: Vec<(&str, &str)> = missing.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &env,
    )
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn dead_url() -> String {
    format!(
        "rtsp://admin:{}@127.0.0.1:{}/main",
        common::password("hunter2"),
        closed_port()
    )
}

const CAMERA_FIELDS: [&str; 27] = [
    "id",
    "name",
    "make",
    "model",
    "enabled",
    "record",
    "detect",
    "detectSensitivity",
    "classify",
    "kinds",
    "motionMasks",
    "zones",
    "autoMask",
    "suggestedMasks",
    "retainDays",
    "capabilities",
    "hasSubstream",
    "audioCodec",
    "recordedAudio",
    "warnings",
    "online",
    "recording",
    "onvif",
    "fullRate",
    "keyFrames",
    "motionSource",
    "motionEvents",
];

/// Cameras (one or a list) without their `recording` state and `keyFrames`,
/// which move on by themselves (starting, then retrying for these
/// unreachable cameras; none, then the watcher's pace), and
/// without the count of their events not reviewed that only the status
/// shows (none here).
fn settled(value: &Value) -> Value {
    match value {
        Value::Array(cameras) => Value::Array(cameras.iter().map(settled).collect()),
        Value::Object(camera) => {
            let mut camera = camera.clone();
            camera.remove("recording");
            camera.remove("keyFrames");
            if let Some(count) = camera.remove("unreviewedEvents") {
                assert_eq!(count, 0, "{value}");
            }
            Value::Object(camera)
        }
        other => other.clone(),
    }
}

#[test]
fn status_has_the_spec_fields() {
    let dir = TempDir::new("status");
    let node = node(&dir);
    let response = node.get("/api/status");
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    let status = response.json();
    assert_eq!(
        keys(&status),
        BTreeSet::from([
            "nodeId",
            "nodeName",
            "version",
            "cloud",
            "relayHealthy",
            "relayVersion",
            "mqtt",
            "classifier",
            "clock",
            "cameras",
            "unreviewedEvents",
            "storage",
            "alerts"
        ])
    );
    assert_eq!(
        status["alerts"],
        json!({ "armed": true, "snoozed": [], "destinations": [], "noticesLost": 0 }),
        "alerts armed, going nowhere yet"
    );
    assert_eq!(status["clock"], Value::Null, "this machine's clock is set");
    assert_eq!(
        status["classifier"],
        json!({ "installed": false, "running": false, "failures": 0 }),
        "no classifier where CLASSIFIER and MODEL_DIR point"
    );
    assert_eq!(
        status["mqtt"],
        json!({ "state": "disabled", "message": null }),
        "no MQTT_URL: MQTT is off"
    );
    assert_eq!(status["nodeId"], Value::Null);
    assert_eq!(status["nodeName"], "test-node");
    let version = status["version"].as_str().unwrap();
    assert!(
        version.split('.').count() >= 2 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "version {version:?} is not dotted numeric"
    );
    assert_eq!(status["cloud"], json!({ "state": "disabled" }));
    assert_eq!(status["relayHealthy"], false);
    assert_eq!(status["relayVersion"], Value::Null, "no relay, no version");
    assert_eq!(status["cameras"], json!([]));
    let storage = &status["storage"];
    assert_eq!(
        keys(storage),
        BTreeSet::from([
            "usedBytes",
            "budgetBytes",
            "reserveBytes",
            "freeBytes",
            "totalBytes",
            "oldestRecordingAt",
            "lastDeletion",
            "unclaimedBytes",
            "message",
            "clipsBytes",
            "lastEventsDeletion",
            "clipsBudgetBytes",
            "clipsReserveBytes",
            "keptBytes",
            "keptBudgetBytes"
        ]),
        "{storage}"
    );
    assert_eq!(storage["usedBytes"], 0);
    assert_eq!(storage["unclaimedBytes"], 0);
    assert_eq!(storage["message"], Value::Null, "all is well");
    assert_eq!(storage["budgetBytes"], Value::Null);
    assert_eq!(storage["oldestRecordingAt"], Value::Null);
    assert_eq!(storage["lastDeletion"], Value::Null, "nothing deleted yet");
    assert_eq!(
        storage["lastEventsDeletion"],
        Value::Null,
        "no event deleted yet"
    );
    assert_eq!(storage["clipsBytes"], 0);
    assert_eq!(storage["clipsBudgetBytes"], 2_u64 << 30);
}

#[test]
fn cameras_are_added_listed_and_deleted() {
    let dir = TempDir::new("cameras");
    let node = node(&dir);
    let url = dead_url();
    let created = node.add_camera(json!({
        "name": "  Front door ", "rtspUrl": url, "rtspSubUrl": format!("{url}/sub"),
        "make": "Acme", "model": "X1", "record": false,
    }));
    assert_eq!(keys(&created), BTreeSet::from(CAMERA_FIELDS));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::try_parse(&id).is_ok(), "{id}");
    assert_eq!(created["name"], "Front door");
    assert_eq!(
        (&created["make"], &created["model"]),
        (&json!("Acme"), &json!("X1"))
    );
    assert_eq!(
        (&created["enabled"], &created["record"], &created["detect"]),
        (&json!(true), &json!(false), &json!(true))
    );
    assert_eq!(
        created["capabilities"],
        json!({}),
        "the probe of a closed port fails"
    );
    assert_eq!(
        (&created["hasSubstream"], &created["online"]),
        (&json!(true), &json!(false))
    );

    let plain = node.add_camera(json!({ "name": "Yard", "rtspUrl": dead_url() }));
    assert_eq!((&plain["make"], &plain["model"]), (&json!(""), &json!("")));
    assert_eq!(plain["hasSubstream"], false);

    let listed = node.get("/api/cameras");
    assert_eq!(listed.status, 200, "{listed}");
    assert_eq!(listed.header("Content-Type"), Some("application/json"));
    assert_eq!(settled(&listed.json()), settled(&json!([created, plain])));
    assert_eq!(
        settled(&node.get("/api/status").json()["cameras"]),
        settled(&listed.json())
    );
    // Recording is on by default; off for the camera created without it.
    assert_eq!(plain["recording"]["state"], "starting", "{plain}");
    assert_eq!(created["recording"]["state"], "off", "{created}");
    assert_eq!(
        keys(&created["recording"]),
        BTreeSet::from(["state", "since"])
    );
    for text in [listed.text(), node.get("/api/status").text()] {
        assert!(
            !text.contains("rtsp") && !text.contains("hunter2"),
            "a URL leaked: {text}"
        );
    }

    let deleted = node.delete(&format!("/api/cameras/{id}"));
    assert_eq!(deleted.status, 204, "{deleted}");
    assert!(deleted.body.is_empty());
    let again = node.delete(&format!("/api/cameras/{id}"));
    assert_eq!(again.status, 404, "{again}");
    assert_eq!(again.error(), "no such camera");
    assert_eq!(
        settled(&node.get("/api/cameras").json()),
        settled(&json!([plain]))
    );
    assert!(
        !node.logs().contains("hunter2"),
        "a password reached the log"
    );
}

#[test]
fn invalid_camera_bodies_get_400_and_change_nothing() {
    let dir = TempDir::new("invalid");
    let node = node(&dir);
    let long = "x".repeat(65);
    let table = [
        ("", "missing request body"),
        ("{", "not valid JSON"),
        ("[1]", "JSON object"),
        (r#"{"rtspUrl":"rtsp://h/"}"#, "name is required"),
        (
            r#"{"name":7,"rtspUrl":"rtsp://h/"}"#,
            "name must be a string",
        ),
        (
            &format!(r#"{{"name":"{long}","rtspUrl":"rtsp://h/"}}"#),
            "name must be 1 to 64",
        ),
        (
            r#"{"name":"a\u0007","rtspUrl":"rtsp://h/"}"#,
            "name must not contain control",
        ),
        (r#"{"name":"a"}"#, "rtspUrl is required"),
        (
            r#"{"name":"a","rtspUrl":"exec:/bin/sh"}"#,
            "rtspUrl must be an rtsp",
        ),
        (
            r#"{"name":"a","rtspUrl":"file:///etc/passwd"}"#,
            "rtspUrl must be an rtsp",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://h/x#input=exec:id"}"#,
            "rtspUrl must not contain a #",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp:///x"}"#,
            "rtspUrl must name a host",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://h/","rtspSubUrl":"echo:x"}"#,
            "rtspSubUrl must be an rtsp",
        ),
        // Addresses go2rtc's URL parser refuses (and would repeat, password included).
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw-Sw33p-9qX@127.0.0.1:abc/x"}"#,
            "rtspUrl has a port that is not a number from 1 to 65535",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw-Sw33p-9qX@cam:65536/x"}"#,
            "rtspUrl has a port that is not a number from 1 to 65535",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://h/","rtspSubUrl":"rtsp://admin:pw%zz-Sw33p-9qX@cam/x"}"#,
            "rtspSubUrl has a % that is not followed by two hexadecimal digits",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw-Sw33p-9qX@cam/x%4"}"#,
            "rtspUrl has a % that is not followed by two hexadecimal digits",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw-Sw33p-9qX@[::1/x"}"#,
            "rtspUrl must write an IPv6 host as [address]",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw-Sw33p-9qX@10.0.0.2]/x"}"#,
            "rtspUrl must write an IPv6 host as [address]",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://admin:pw\"Sw33p-9qX@cam/x"}"#,
            "rtspUrl must %-encode characters other than letters",
        ),
        (
            &format!(r#"{{"name":"a","rtspUrl":"rtsp://h/","model":"{long}"}}"#),
            "model must be at most 64",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://h/","make":false}"#,
            "make must be a string",
        ),
        (
            r#"{"name":"a","rtspUrl":"rtsp://h/","enabled":"no"}"#,
            "enabled must be true or false",
        ),
    ];
    for (body, message) in table {
        let response = node.post_json("/api/cameras", body);
        assert_eq!(response.status, 400, "{body}: {response}");
        let error = response.error();
        assert!(error.contains(message), "{body}: {error}");
    }
    let invalid_utf8 = b"{\"name\":\"\xc3\x28\",\"rtspUrl\":\"rtsp://h/\"}";
    let response = node.request(
        "POST",
        "/api/cameras",
        &[("Content-Type", "application/json")],
        invalid_utf8,
    );
    assert_eq!(response.status, 400, "{response}");
    response.error();

    let good = format!(r#"{{"name":"a","rtspUrl":"{}"}}"#, dead_url());
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|t| ("Content-Type", t))
            .into_iter()
            .collect();
        let response = node.request("POST", "/api/cameras", &headers, good.as_bytes());
        assert_eq!(response.status, 415, "{content_type:?}: {response}");
        assert!(response.error().contains("application/json"));
    }
    let with_charset = node.request(
        "POST",
        "/api/cameras",
        &[("Content-Type", "Application/JSON; charset=utf-8")],
        b"{}",
    );
    assert_eq!(
        with_charset.status, 400,
        "a parameter on the media type is fine: {with_charset}"
    );

    let huge = format!(
        r#"{{"name":"a","rtspUrl":"rtsp://h/","make":"{}"}}"#,
        "m".repeat(70_000)
    );
    let response = node.post_json("/api/cameras", &huge);
    assert_eq!(response.status, 413, "{response}");
    response.error();

    assert_eq!(node.get("/api/cameras").json(), json!([]));
}

const ALL_KINDS: [&str; 4] = ["person", "vehicle", "animal", "package"];

#[test]
fn classify_is_off_by_default_without_the_classifier() {
    let dir = TempDir::new("classify-missing");
    let node = node(&dir);
    let plain = node.add_camera(json!({ "name": "Yard", "rtspUrl": dead_url() }));
    assert_eq!(plain["classify"], false, "{plain}");
    assert_eq!(plain["kinds"], json!(ALL_KINDS));
    // Asked for, it is kept: the classifier may be installed later.
    let asked = node.add_camera(json!({
        "name": "Gate", "rtspUrl": dead_url(), "classify": true, "kinds": ["person"],
    }));
    assert_eq!(
        (&asked["classify"], &asked["kinds"]),
        (&json!(true), &json!(["person"]))
    );
}

#[test]
fn classify_and_kinds_are_set_checked_and_kept() {
    let dir = TempDir::new("classify");
    let installed = common::classifier::real();
    let env: Vec<(&str, &str)> = installed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start(dir.path(), &relay, &env);
    assert_eq!(
        node.get("/api/status").json()["classifier"]["installed"],
        true
    );
    let plain = node.add_camera(json!({ "name": "Yard", "rtspUrl": dead_url() }));
    assert_eq!(
        (&plain["classify"], &plain["kinds"]),
        (&json!(true), &json!(ALL_KINDS)),
        "on, into every kind, by default where the classifier is installed"
    );
    let chosen = node.add_camera(json!({
        "name": "Door", "rtspUrl": dead_url(), "classify": false,
        "kinds": ["package", "person"],
    }));
    assert_eq!(
        (&chosen["classify"], &chosen["kinds"]),
        (&json!(false), &json!(["person", "package"])),
        "kinds in one order"
    );

    let invalid = [
        (r#""classify":"yes""#, "classify must be true or false"),
        (
            r#""kinds":"person""#,
            "kinds must be an array of names from person, vehicle, animal, package",
        ),
        (
            r#""kinds":["motion"]"#,
            "kinds may only name person, vehicle, animal, package",
        ),
        (r#""kinds":["dog"]"#, "kinds may only name"),
        (r#""kinds":[1]"#, "kinds may only name"),
        (
            r#""kinds":["person","person"]"#,
            "kinds must not name a kind twice",
        ),
        (
            r#""kinds":[]"#,
            "kinds must name at least one kind; to classify nothing, turn classify off",
        ),
    ];
    let before = settled(&node.get("/api/cameras").json());
    let path = format!("/api/cameras/{}", chosen["id"].as_str().unwrap());
    for (field, message) in invalid {
        let body = format!(r#"{{"name":"Bad","rtspUrl":"rtsp://h/",{field}}}"#);
        let response = node.post_json("/api/cameras", &body);
        assert_eq!(response.status, 400, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
        let body = format!(r#"{{"name":"Renamed",{field}}}"#);
        let response = node.patch_json(&path, &body);
        assert_eq!(response.status, 400, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    assert_eq!(
        settled(&node.get("/api/cameras").json()),
        before,
        "bad input changed nothing"
    );

    let patched = node.patch_json(&path, r#"{"classify":true,"kinds":["animal","vehicle"]}"#);
    assert_eq!(patched.status, 200, "{patched}");
    let patched = patched.json();
    assert_eq!(
        (&patched["classify"], &patched["kinds"]),
        (&json!(true), &json!(["vehicle", "animal"]))
    );
    let only_classify =
        node.patch_camera(chosen["id"].as_str().unwrap(), json!({"classify": false}));
    assert_eq!(
        only_classify["kinds"],
        json!(["vehicle", "animal"]),
        "kinds kept"
    );
    let listed = settled(&node.get("/api/cameras").json());
    assert_eq!(listed, settled(&json!([plain, only_classify])));
    assert_eq!(settled(&node.get("/api/status").json()["cameras"]), listed);

    node.kill();
    let restarted = Node::start(dir.path(), &relay, &env);
    assert_eq!(
        settled(&restarted.get("/api/cameras").json()),
        listed,
        "the same after a restart"
    );
}

/// Masks and zones at creation and by PATCH, each refusal (POST and PATCH
/// alike) naming the field and the element, and changing nothing.
#[test]
fn masks_and_zones_are_set_checked_and_kept() {
    let dir = TempDir::new("areas");
    let node = node(&dir);
    let plain = node.add_camera(json!({ "name": "Yard", "rtspUrl": dead_url() }));
    assert_eq!(
        [
            &plain["motionMasks"],
            &plain["zones"],
            &plain["autoMask"],
            &plain["suggestedMasks"]
        ],
        [&json!([]), &json!([]), &json!(true), &json!([])],
        "none, and autoMask on, by default"
    );
    let triangle = json!([[0.1, 0.1], [0.9, 0.1], [0.5, 0.75]]);
    let stamp = json!([[0.0, 0.0], [0.3, 0.0], [0.3, 0.08], [0.0, 0.08]]);
    let created = node.add_camera(json!({
        "name": "Drive", "rtspUrl": dead_url(), "motionMasks": [stamp, triangle],
        "zones": [
            {"name": " Driveway ", "polygon": triangle, "kinds": ["vehicle", "person"]},
            {"name": "Door", "polygon": stamp, "loiterSeconds": 30},
        ],
        "autoMask": false,
    }));
    assert_eq!(created["motionMasks"], json!([stamp, triangle]));
    assert_eq!(
        created["zones"],
        json!([
            {"name": "Driveway", "polygon": triangle, "kinds": ["person", "vehicle"]},
            {"name": "Door", "polygon": stamp,
             "kinds": ["motion", "person", "vehicle", "animal", "package"], "loiterSeconds": 30},
        ]),
        "names trimmed, kinds in one order, all of them by default"
    );
    assert_eq!(created["autoMask"], false);

    let zone = |fields: Value| {
        let mut zone = json!({"name": "Gate", "polygon": triangle});
        for (k, v) in fields.as_object().unwrap() {
            zone[k] = v.clone();
        }
        json!([{"name": "Yard", "polygon": triangle}, zone])
    };
    let many_points: Vec<[f64; 2]> = (0..33).map(|i| [f64::from(i) / 33.0, 0.5]).collect();
    let invalid = [
        (
            json!({"motionMasks": "all"}),
            "motionMasks must be an array of at most 16 polygons",
        ),
        (
            json!({"motionMasks": vec![triangle.clone(); 17]}),
            "motionMasks must be an array of at most 16 polygons",
        ),
        (
            json!({"motionMasks": [triangle, {"x": 1}]}),
            "motionMasks[1] must have 3 to 32 points [x, y]",
        ),
        (
            json!({"motionMasks": [[[0, 0], [1, 1]]]}),
            "motionMasks[0] must have 3 to 32 points [x, y]",
        ),
        (
            json!({"motionMasks": [many_points]}),
            "motionMasks[0] must have 3 to 32 points [x, y]",
        ),
        (
            json!({"motionMasks": [triangle, [[0, 0], [1, 0], [0.5, 1.2]]]}),
            "motionMasks[1][2] must be [x, y] with x and y from 0 to 1",
        ),
        (
            json!({"motionMasks": [[[0, 0], [-0.5, 0], [0.5, 1]]]}),
            "motionMasks[0][1] must be [x, y] with x and y from 0 to 1",
        ),
        (
            json!({"motionMasks": [[[0, 0], [0.5], [0.5, 1]]]}),
            "motionMasks[0][1] must be [x, y]",
        ),
        (
            json!({"motionMasks": [[[0, 0], ["0.5", 0], [0.5, 1]]]}),
            "motionMasks[0][1] must be [x, y]",
        ),
        (
            json!({"zones": {"name": "Gate"}}),
            "zones must be an array of at most 8 zones",
        ),
        (
            json!({"zones": (0..9).map(|i| json!({"name": format!("z{i}"), "polygon": triangle})).collect::<Vec<_>>()}),
            "zones must be an array of at most 8 zones",
        ),
        (
            json!({"zones": [triangle]}),
            "zones[0] must be {\"name\", \"polygon\", \"kinds\"}",
        ),
        (
            json!({"zones": zone(json!({"name": null}))}),
            "zones[1].name is required",
        ),
        (
            json!({"zones": zone(json!({"loiterSeconds": 3601}))}),
            "zones[1].loiterSeconds must be a whole number of seconds from 1 to 3600",
        ),
        (
            json!({"zones": zone(json!({"name": 7}))}),
            "zones[1].name must be a string",
        ),
        (
            json!({"zones": zone(json!({"name": " "}))}),
            "zones[1].name must be 1 to 32 characters",
        ),
        (
            json!({"zones": zone(json!({"name": "g".repeat(33)}))}),
            "zones[1].name must be 1 to 32 characters",
        ),
        (
            json!({"zones": zone(json!({"name": "Ga\nte"}))}),
            "zones[1].name must not contain control characters",
        ),
        (
            json!({"zones": zone(json!({"name": "yard"}))}),
            "zones[1].name must be unique on the camera",
        ),
        (
            json!({"zones": zone(json!({"polygon": null}))}),
            "zones[1].polygon is required",
        ),
        (
            json!({"zones": zone(json!({"polygon": [[0, 0], [1, 1]]}))}),
            "zones[1].polygon must have 3 to 32 points [x, y]",
        ),
        (
            json!({"zones": zone(json!({"polygon": [[0, 0], [1, 1], [1, 2]]}))}),
            "zones[1].polygon[2] must be [x, y] with x and y from 0 to 1",
        ),
        (
            json!({"zones": zone(json!({"kinds": "person"}))}),
            "zones[1].kinds must be an array of names from motion, person, vehicle, animal, package",
        ),
        (
            json!({"zones": zone(json!({"kinds": ["person", "dog"]}))}),
            "zones[1].kinds may only name motion, person, vehicle, animal, package",
        ),
        (
            json!({"zones": zone(json!({"kinds": ["person", "person"]}))}),
            "zones[1].kinds must not name a kind twice",
        ),
        (
            json!({"zones": zone(json!({"kinds": []}))}),
            "zones[1].kinds must name at least one kind",
        ),
        (json!({"autoMask": "no"}), "autoMask must be true or false"),
    ];
    let before = settled(&node.get("/api/cameras").json());
    let path = format!("/api/cameras/{}", created["id"].as_str().unwrap());
    for (fields, message) in invalid {
        let mut body = fields.clone();
        body["name"] = json!("Bad");
        body["rtspUrl"] = json!(dead_url());
        let response = node.post_json("/api/cameras", &body.to_string());
        assert_eq!(response.status, 400, "{fields}: {response}");
        assert!(response.error().contains(message), "{fields}: {response}");
        // With a change that is fine: the whole body is refused.
        let mut body = fields.clone();
        body["name"] = json!("Renamed");
        let response = node.patch_json(&path, &body.to_string());
        assert_eq!(response.status, 400, "{fields}: {response}");
        assert!(response.error().contains(message), "{fields}: {response}");
    }
    assert_eq!(
        settled(&node.get("/api/cameras").json()),
        before,
        "bad input changed nothing"
    );

    let patched = node.patch_camera(
        created["id"].as_str().unwrap(),
        json!({"motionMasks": [], "zones": [{"name": "Gate", "polygon": stamp, "kinds": ["animal"]}],
               "autoMask": true}),
    );
    assert_eq!(patched["motionMasks"], json!([]), "[] removes them");
    assert_eq!(
        patched["zones"],
        json!([{"name": "Gate", "polygon": stamp, "kinds": ["animal"]}])
    );
    assert_eq!(patched["autoMask"], true);
    let renamed = node.patch_camera(created["id"].as_str().unwrap(), json!({"name": "Drive 2"}));
    assert_eq!(
        (&renamed["zones"], &renamed["autoMask"]),
        (&patched["zones"], &json!(true)),
        "kept when not given"
    );
    let listed = settled(&node.get("/api/cameras").json());
    assert_eq!(listed, settled(&json!([plain, renamed])));
    assert_eq!(settled(&node.get("/api/status").json()["cameras"]), listed);
    node.kill();
    let restarted = self::node(&dir);
    assert_eq!(
        settled(&restarted.get("/api/cameras").json()),
        listed,
        "the same after a restart"
    );
}

#[test]
fn unknown_cameras_get_404() {
    let dir = TempDir::new("unknown");
    let node = node(&dir);
    let unknown = uuid::Uuid::new_v4();
    let offer = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n";
    let responses = [
        node.delete(&format!("/api/cameras/{unknown}")),
        node.delete("/api/cameras/not-a-uuid"),
        node.post(&format!("/api/cameras/{unknown}/probe")),
        node.post("/api/cameras/42/probe"),
        node.post_sdp(&format!("/api/whep/{unknown}"), offer),
        node.post_sdp("/api/whep/front-door", offer),
    ];
    for response in responses {
        assert_eq!(response.status, 404, "{response}");
        assert_eq!(response.error(), "no such camera");
    }
}

#[test]
fn unknown_paths_and_wrong_methods() {
    let dir = TempDir::new("paths");
    let node = node(&dir);
    for path in [
        "/api/nope",
        "/api/",
        "/api/status/extra",
        "/api/cameras/x/y/z",
    ] {
        let response = node.get(path);
        assert_eq!(response.status, 404, "{path}: {response}");
        response.error();
    }
    let id = uuid::Uuid::new_v4();
    let table = [
        ("POST", "/api/status".to_owned(), "GET"),
        ("DELETE", "/api/events".to_owned(), "GET, POST"),
        ("PATCH", "/api/cameras".to_owned(), "GET, POST"),
        ("GET", format!("/api/cameras/{id}"), "DELETE, PATCH"),
        ("GET", format!("/api/cameras/{id}/probe"), "POST"),
        ("GET", format!("/api/whep/{id}"), "POST, OPTIONS"),
        ("DELETE", "/".to_owned(), "GET, HEAD"),
    ];
    for (method, path, allow) in table {
        let response = node.request(method, &path, &[], b"");
        assert_eq!(response.status, 405, "{method} {path}: {response}");
        assert_eq!(response.header("Allow"), Some(allow), "{method} {path}");
        assert_eq!(response.error(), "method not allowed");
    }
}

/// Writes events straight into the node's SQLite file, as the detector will.
fn insert_events(dir: &TempDir, camera: &str, starts: impl Iterator<Item = i64>) {
    let mut db = rusqlite::Connection::open(dir.path().join("nvr-node.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let tx = db.transaction().unwrap();
    for (i, start) in starts.enumerate() {
        tx.execute(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                uuid::Uuid::new_v4().to_string(),
                camera,
                ["motion", "person", "vehicle", "animal", "package"][i % 5],
                0.5 + (i % 50) as f64 / 100.0,
                start,
                start + 4_321,
                ["local", "uploading", "uploaded"][i % 3],
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn events_are_the_50_newest_first() {
    let dir = TempDir::new("events");
    let node = node(&dir);
    let empty = node.get("/api/events");
    assert_eq!(empty.status, 200, "{empty}");
    assert_eq!(empty.header("Content-Type"), Some("application/json"));
    assert_eq!(empty.json(), json!([]));

    let camera = uuid::Uuid::new_v4().to_string();
    // 2026-11-22T10:00:00.000Z onwards, a minute apart, inserted out of order.
    let base = 1_795_341_600_000_i64;
    let mut starts: Vec<i64> = (0..60).map(|i| base + i * 60_000 + i).collect();
    starts.reverse();
    starts.swap(3, 40);
    insert_events(&dir, &camera, starts.into_iter());

    let events = node.get("/api/events").json();
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 50);
    for event in events {
        assert_eq!(
            keys(event),
            BTreeSet::from([
                "id",
                "cameraId",
                "kind",
                "score",
                "startedAt",
                "endedAt",
                "clipStatus",
                "clipUrl",
                "thumbnailUrl",
                "zones",
                "inProgress",
                "reviewed",
                "keep",
                "objects",
                "loitering"
            ])
        );
        assert_eq!(event["cameraId"], camera.as_str());
        assert_eq!(event["inProgress"], false);
        assert_eq!(
            (&event["objects"], &event["loitering"]),
            (&json!([]), &json!(false))
        );
        assert_eq!(
            (&event["reviewed"], &event["keep"]),
            (&json!(false), &json!(false))
        );
        assert!(event["score"].is_f64());
    }
    let newest = &events[0];
    assert_eq!(newest["startedAt"], "2026-11-22T10:59:00.059Z");
    assert_eq!(newest["endedAt"], "2026-11-22T10:59:04.380Z");
    let started: Vec<&str> = events
        .iter()
        .map(|e| e["startedAt"].as_str().unwrap())
        .collect();
    let mut sorted = started.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(started, sorted, "newest first");
    assert_eq!(*started.last().unwrap(), "2026-11-22T10:10:00.010Z");
}

#[test]
fn a_camera_acknowledged_survives_a_crash() {
    let dir = TempDir::new("crash");
    let node = node(&dir);
    let created = node.add_camera(json!({ "name": "Garage", "rtspUrl": dead_url() }));
    node.kill();
    let restarted = self::node(&dir);
    assert_eq!(
        settled(&restarted.get("/api/cameras").json()),
        settled(&json!([created]))
    );
}

#[test]
fn the_ui_is_served_from_the_binary() {
    let dir = TempDir::new("ui");
    let node = node(&dir);
    let www = Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    let index = std::fs::read(www.join("index.html")).unwrap();
    // Chromium's header; no header at all means any coding will do (RFC 9110).
    let chromium = [("Accept-Encoding", "gzip, deflate, br, zstd")];
    for (path, headers) in [
        ("/", &chromium[..]),
        ("/index.html", &chromium[..]),
        ("/", &[][..]),
    ] {
        let page = node.request("GET", path, headers, b"");
        assert_eq!(page.status, 200, "{page}");
        assert_eq!(
            page.header("Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(page.header("Vary"), Some("Accept-Encoding"), "{page}");
        assert_eq!(page.header("Cache-Control"), Some("no-cache"), "{page}");
        assert!(
            served_as(&page.gunzipped(), &index) > 0,
            "{path}: no indentation of www/index.html was left out"
        );
    }
    // Every file is its file in www/ line for line, less indentation and
    // the lines that were comments (build.rs).
    let mut left_out = 0;
    for entry in std::fs::read_dir(&www).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with('.') {
            continue;
        }
        let file = node.request("GET", &format!("/{name}"), &chromium, b"");
        assert_eq!(file.status, 200, "/{name}: {file}");
        left_out += served_as(&file.gunzipped(), &std::fs::read(www.join(&name)).unwrap());
    }
    assert!(left_out > 0, "nothing of www/ was left out");
    for refusing in ["identity", "gzip;q=0", "br, *;q=0", ""] {
        let page = node.request("GET", "/", &[("Accept-Encoding", refusing)], b"");
        assert_eq!(page.status, 406, "{refusing:?}: {page}");
        assert_eq!(page.header("Content-Encoding"), None, "{page}");
        assert!(page.error().contains("curl --compressed"), "{page}");
    }
    let head = node.request("HEAD", "/", &chromium, b"");
    assert_eq!(head.status, 200, "{head}");
    assert_eq!(head.header("Content-Encoding"), Some("gzip"), "{head}");
    assert_eq!(node.get("/missing.js").status, 404);
}

#[test]
fn keep_alive_answers_are_not_held_back() {
    let dir = TempDir::new("nagle");
    let node = node(&dir);
    // A status of a few KiB, which tiny_http writes in more than one piece.
    for i in 0..8 {
        node.add_camera(json!({ "name": format!("camera {i}"), "rtspUrl": dead_url() }));
    }
    let mut connection = common::http::Connection::open(node.port);
    let mut times: Vec<Duration> = (0..40)
        .map(|_| {
            let started = Instant::now();
            let response = connection.get("/api/status");
            assert_eq!(response.status, 200, "{response}");
            started.elapsed()
        })
        .collect();
    times.sort();
    // Nagle's algorithm against a delayed ACK costs ~40 ms an answer; a
    // generous bound that only that (not a busy machine) exceeds.
    assert!(
        times[20] < Duration::from_millis(20),
        "median {:?}",
        times[20]
    );
}

#[test]
fn help_version_and_bad_configuration() {
    let binary = env!("CARGO_BIN_EXE_nvr-node");
    let help = Command::new(binary).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for var in ["PORT", "DATA_DIR", "NODE_NAME", "RELAY_URL", "FFPROBE"] {
        assert!(text.contains(var), "--help does not mention {var}: {text}");
    }
    let version = Command::new(binary).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("nvr-node {}", env!("CARGO_PKG_VERSION"))
    );
    let dir = TempDir::new("config");
    let bad_port = Command::new(binary)
        .env("PORT", "eighty")
        .env("DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(bad_port.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad_port.stderr).contains("PORT must be a number"));
    // A reserve set by its new name and, to another value, by its old one:
    // which one was meant is not guessed.
    let both = Command::new(binary)
        .env("RECORDINGS_RESERVE", "5G")
        .env("RECORDINGS_KEEP_FREE", "1G")
        .env("DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(1));
    let said = String::from_utf8_lossy(&both.stderr);
    assert!(
        said.contains("RECORDINGS_RESERVE is \"5G\" and RECORDINGS_KEEP_FREE"),
        "{said}"
    );
}

#[test]
fn cameras_are_changed_with_patch() {
    let dir = TempDir::new("patch");
    let node = node(&dir);
    let created = node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url(), "make": "Acme" }));
    let path = format!("/api/cameras/{}", created["id"].as_str().unwrap());
    let patch = |body: &str| node.patch_json(&path, body);

    let renamed = patch(r#"{"name":" Front door ","record":false,"model":"X2","unknown":true}"#);
    assert_eq!(renamed.status, 200, "{renamed}");
    let mut expected = created.clone();
    expected["name"] = json!("Front door");
    expected["record"] = json!(false);
    expected["model"] = json!("X2");
    assert_eq!(settled(&renamed.json()), settled(&expected));
    assert_eq!(
        settled(&node.get("/api/cameras").json()),
        settled(&json!([expected]))
    );

    let off = patch(r#"{"enabled":false,"detect":false}"#);
    assert_eq!(off.status, 200, "{off}");
    assert_eq!(
        (&off.json()["enabled"], &off.json()["detect"]),
        (&json!(false), &json!(false))
    );
    let unchanged = patch("{}");
    assert_eq!(settled(&unchanged.json()), settled(&off.json()));

    let invalid = [
        (r#"{"name":""}"#, "name must be 1 to 64"),
        (r#"{"rtspUrl":"exec:/bin/sh"}"#, "rtspUrl must be an rtsp"),
        (
            r#"{"rtspSubUrl":"rtsp://h/x#y"}"#,
            "rtspSubUrl must not contain a #",
        ),
        (
            r#"{"rtspUrl":"rtsp://admin:pw-Sw33p-9qX@cam:8o54/x"}"#,
            "rtspUrl has a port that is not a number",
        ),
        (r#"{"enabled":"yes"}"#, "enabled must be true or false"),
        ("[]", "JSON object"),
    ];
    for (body, message) in invalid {
        let response = patch(body);
        assert_eq!(response.status, 400, "{body}: {response}");
        assert!(response.error().contains(message), "{body}: {response}");
    }
    let wrong_type = node.request("PATCH", &path, &[("Content-Type", "text/plain")], b"{}");
    assert_eq!(wrong_type.status, 415, "{wrong_type}");
    assert_eq!(
        settled(&node.get("/api/cameras").json()),
        settled(&json!([off.json()])),
        "bad input changed nothing"
    );

    let unknown = format!("/api/cameras/{}", uuid::Uuid::new_v4());
    let missing = node.patch_json(&unknown, r#"{"name":"x"}"#);
    assert_eq!(missing.status, 404, "{missing}");
    assert_eq!(missing.error(), "no such camera");
}

#[test]
fn foreign_host_names_and_other_sites_are_refused() {
    let dir = TempDir::new("guard");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start(
        dir.path(),
        &relay,
        &[("ALLOWED_HOSTS", "nvr.example.com, cams.lan")],
    );
    let host = format!("127.0.0.1:{}", node.port);
    // DNS rebinding: a page of evil.example whose name now points at the node.
    for path in ["/api/status", "/", "/api/cameras"] {
        let response = node.request("GET", path, &[("Host", "evil.example")], b"");
        assert_eq!(response.status, 403, "{path}: {response}");
        assert!(response.error().contains("ALLOWED_HOSTS"), "{response}");
    }
    for name in [
        "localhost:8080",
        "nvr-board.local",
        "nvr.example.com",
        "CAMS.LAN:80",
        "[::1]:8080",
        "10.1.2.3",
    ] {
        let response = node.request("GET", "/api/status", &[("Host", name)], b"");
        assert_eq!(response.status, 200, "{name}: {response}");
    }
    // Cross-site requests: a form or script on another site.
    let body = json!({ "name": "Evil", "rtspUrl": dead_url() }).to_string();
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let headers = [
            ("Content-Type", "application/json"),
            ("Origin", origin),
            ("Host", &host),
        ];
        let response = node.request("POST", "/api/cameras", &headers, body.as_bytes());
        assert_eq!(response.status, 403, "{origin}: {response}");
        assert_eq!(
            response.error(),
            "requests from other sites are not allowed"
        );
    }
    let same_site = format!("http://{host}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Origin", same_site.as_str()),
    ];
    let response = node.request("POST", "/api/cameras", &headers, body.as_bytes());
    assert_eq!(response.status, 201, "{response}");
    let cameras = node.get("/api/cameras").json();
    assert_eq!(
        cameras.as_array().unwrap().len(),
        1,
        "only the same-site camera: {cameras}"
    );
    let id = cameras[0]["id"].as_str().unwrap();
    let delete = node.request(
        "DELETE",
        &format!("/api/cameras/{id}"),
        &[("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(delete.status, 403, "{delete}");
    assert!(
        node.get("/api/status")
            .header("Access-Control-Allow-Origin")
            .is_none()
    );
}

#[test]
fn status_answers_304_to_its_etag_until_it_changes() {
    let dir = TempDir::new("etag");
    let node = node(&dir);
    let asked = |tags: &str| node.request("GET", "/api/status", &[("If-None-Match", tags)], b"");
    let tag_of = |response: &common::http::Response| {
        response
            .header("ETag")
            .expect("status has an ETag")
            .to_owned()
    };
    // The node's first seconds change its status (the storage's first
    // count): a tag is asked for again until three askings in a row match it.
    let mut etag = String::new();
    let mut last = None;
    let unchanged = common::wait_for(Duration::from_secs(20), || {
        etag = tag_of(&node.get("/api/status"));
        [etag.clone(), format!("W/{etag}"), format!("\"0\", {etag}")]
            .iter()
            .all(|tags| {
                let answer = asked(tags);
                let kept = answer.status == 304
                    && answer.body.is_empty()
                    && answer.header("Content-Length").is_none()
                    && tag_of(&answer) == etag;
                last = Some(format!("If-None-Match: {tags}\n{answer}"));
                kept
            })
    });
    assert!(
        unchanged,
        "no 304 to status's own tag within 20 s; last: {last:?}"
    );
    assert_eq!(asked("\"0\"").status, 200, "another tag gets the body");

    let camera = node.add_camera(json!({ "name": "Porch", "rtspUrl": dead_url() }));
    let changed = asked(&etag);
    assert_eq!(changed.status, 200, "status changed: {changed}");
    assert_ne!(changed.header("ETag"), Some(etag.as_str()));
    assert_eq!(changed.json()["cameras"][0]["id"], camera["id"]);
}

#[test]
fn overlong_urls_get_414() {
    let dir = TempDir::new("uri");
    let node = node(&dir);
    let long = format!("/api/status?{}", "a".repeat(8 * 1024));
    let response = node.get(&long);
    assert_eq!(response.status, 414, "{response}");
    assert_eq!(response.error(), "the URL is longer than 8 KiB");
    assert_eq!(
        node.get(&long[..8 * 1024]).status,
        200,
        "8 KiB exactly is fine"
    );
}

#[test]
fn past_its_most_cameras_the_node_refuses_another_and_changes_nothing() {
    let dir = TempDir::new("most-cameras");
    let node = node(&dir);
    let body = |name: String| {
        json!({ "name": name, "rtspUrl": dead_url(), "record": false, "detect": false }).to_string()
    };
    let listed = || node.get("/api/cameras").json().as_array().unwrap().len();
    for i in 0..14 {
        let added = node.post_json("/api/cameras", &body(format!("Camera {i}")));
        assert_eq!(added.status, 201, "{added}");
    }
    // Six at once for the last two places (the default is 16): two in.
    let statuses: Vec<(u16, String)> = std::thread::scope(|s| {
        let posts: Vec<_> = (0..6)
            .map(|i| {
                let (port, body) = (node.port, body(format!("At once {i}")));
                s.spawn(move || {
                    let answer = common::http::request(
                        port,
                        "POST",
                        "/api/cameras",
                        &[("Content-Type", "application/json")],
                        body.as_bytes(),
                    );
                    let error = (answer.status != 201).then(|| answer.error());
                    (answer.status, error.unwrap_or_default())
                })
            })
            .collect();
        posts.into_iter().map(|p| p.join().unwrap()).collect()
    });
    let refused: Vec<&String> = statuses
        .iter()
        .filter(|(status, _)| *status == 409)
        .map(|(_, error)| error)
        .collect();
    assert_eq!(refused.len(), 4, "{statuses:?}");
    assert!(
        refused[0].contains("16 cameras") && refused[0].contains("MAX_CAMERAS"),
        "{statuses:?}"
    );
    assert_eq!(listed(), 16);
    // Bad input is still a 400 naming its field.
    let bad = node.post_json("/api/cameras", r#"{"name": "", "rtspUrl": "rtsp://h/x"}"#);
    assert_eq!(bad.status, 400, "{bad}");
    assert!(bad.error().contains("name"), "{bad}");
    // One deleted, one more fits.
    let first = node.get("/api/cameras").json()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(node.delete(&format!("/api/cameras/{first}")).status, 204);
    let again = node.post_json("/api/cameras", &body("Again".into()));
    assert_eq!(again.status, 201, "{again}");
    assert_eq!(listed(), 16);
}

#[test]
fn every_camera_acknowledged_survives_a_sigkill_mid_stream() {
    let dir = TempDir::new("sigkill");
    // Past the default's 16: the mid-stream kill comes after 20.
    let node = node_with(&dir, &[("MAX_CAMERAS", "256")]);
    let port = node.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let (stop, created) = (stop.clone(), created.clone());
        std::thread::spawn(move || {
            let mut acknowledged = Vec::new();
            for i in 0..10_000 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let body = json!({ "name": format!("cam {i}"), "rtspUrl": "rtsp://127.0.0.1:1/x", "record": false, "detect": false })
                    .to_string();
                let sent = std::panic::catch_unwind(|| {
                    common::http::request(
                        port,
                        "POST",
                        "/api/cameras",
                        &[("Content-Type", "application/json")],
                        body.as_bytes(),
                    )
                });
                match sent {
                    Ok(response) if response.status == 201 => {
                        acknowledged.push(response.json()["id"].as_str().unwrap().to_owned());
                        created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    _ => break,
                }
            }
            acknowledged
        })
    };
    // Mid-stream on a busy machine too: after some cameras, not after a fixed time.
    common::wait_for(Duration::from_secs(30), || {
        created.load(std::sync::atomic::Ordering::Relaxed) > 20
    });
    node.kill();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged = writer.join().unwrap();
    assert!(
        acknowledged.len() > 5,
        "only {} cameras created before the kill",
        acknowledged.len()
    );
    let db = rusqlite::Connection::open(dir.path().join("nvr-node.db")).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    drop(db);
    let restarted = self::node(&dir);
    let listed = restarted.get("/api/cameras").json();
    let ids: BTreeSet<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !ids.contains(id.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged cameras lost",
        lost.len(),
        acknowledged.len()
    );
    eprintln!(
        "{} cameras acknowledged before SIGKILL, all there after restart",
        acknowledged.len()
    );
}

#[test]
fn a_full_disk_gives_507_and_reads_keep_working() {
    let disk = Tmpfs::new("4m");
    let data = disk.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start(&data, &relay, &[("MAX_CAMERAS", "256")]);
    // Recording has its own full-disk test (tests/recording.rs); these
    // cameras neither record nor detect.
    let first = node.add_camera(
        json!({ "name": "Before", "rtspUrl": dead_url(), "record": false, "detect": false }),
    );
    // Fill the disk to the last byte.
    let filler = disk.fill("filler");
    let mut full = None;
    for i in 0..200 {
        let body = json!({ "name": format!("More {i} {}", "x".repeat(40)), "rtspUrl": dead_url(), "record": false, "detect": false })
            .to_string();
        let response = node.post_json("/api/cameras", &body);
        if response.status != 201 {
            full = Some(response);
            break;
        }
    }
    let full = full.expect("a write failed once the disk was full");
    assert_eq!(full.status, 507, "{full}");
    assert!(full.error().contains("storage is full"), "{full}");
    let listed = node.get("/api/cameras");
    assert_eq!(listed.status, 200, "reads keep working: {listed}");
    assert_eq!(settled(&listed.json()[0]), settled(&first));
    assert_eq!(node.get("/api/status").status, 200);

    std::fs::remove_file(&filler).unwrap();
    let after = node.post_json(
        "/api/cameras",
        &json!({ "name": "After", "rtspUrl": dead_url(), "record": false, "detect": false })
            .to_string(),
    );
    assert_eq!(after.status, 201, "recovered once space returned: {after}");
}

#[test]
fn running_out_of_file_descriptors_ends_the_node_with_an_error() {
    let dir = TempDir::new("emfile");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    // $0 is the node binary, appended by start_wrapped.
    let wrapper = ["sh", "-c", "ulimit -n 48 && exec \"$0\""];
    let node = Node::start_wrapped(&wrapper, dir.path(), &relay, &[]);
    assert_eq!(node.get("/api/status").status, 200);
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..80 {
        match std::net::TcpStream::connect(("127.0.0.1", node.port)) {
            Ok(stream) => held.push(stream),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let pid = node.pid();
    let exited = common::wait_for_exit(pid, Duration::from_secs(10));
    assert!(
        exited,
        "the node kept running deaf after accept failed ({} connections held, \
         then {refused:?}; the node has {} file descriptors open):\n{}",
        held.len(),
        std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count()),
        node.logs()
    );
    let logs = node.logs();
    assert_eq!(node.wait(), Some(1), "{logs}");
    assert!(logs.contains("stopped accepting connections"), "{logs}");
}

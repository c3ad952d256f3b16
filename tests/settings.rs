//! `/api/settings`: the settings a person changes in the UI, kept by the
//! node over its environment's, taken in without a restart where it can,
//! and checked by the same rules as the settings file.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Node, TempDir, closed_port};

fn node(dir: &Path) -> Node {
    let env = [("NODE_NAME", "from-the-file"), ("EVENTS_RETAIN_DAYS", "30")];
    Node::start(dir, &format!("http://127.0.0.1:{}", closed_port()), &env)
}

/// The setting `name` as `GET /api/settings` shows it.
fn setting(node: &Node, name: &str) -> Value {
    let response = node.get("/api/settings");
    assert_eq!(response.status, 200, "{response}");
    let body = response.json();
    body["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        .clone()
}

fn shown(node: &Node, name: &str) -> (Value, Value) {
    let s = setting(node, name);
    (s["value"].clone(), s["from"].clone())
}

fn node_name(node: &Node) -> Value {
    node.get("/api/status").json()["nodeName"].clone()
}

#[test]
fn settings_changed_take_effect_at_once_and_survive_a_restart() {
    let dir = TempDir::new("settings");
    let node = node(dir.path());
    // Nothing set in the UI: the environment's, else the default.
    assert_eq!(
        shown(&node, "NODE_NAME"),
        (json!("from-the-file"), json!("file"))
    );
    assert_eq!(
        shown(&node, "EVENTS_RETAIN_DAYS"),
        (json!("30"), json!("file"))
    );
    assert_eq!(shown(&node, "MAX_EVENTS"), (Value::Null, json!("default")));
    assert_eq!(setting(&node, "MAX_EVENTS")["default"], "10000");
    assert_eq!(node_name(&node), "from-the-file");

    // Events of 3 days ago (one kept) and of today.
    let camera = node.add_camera(json!({
        "name": "Door",
        "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()),
    }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ids = common::post_aged_events(&node, dir.path(), &camera);

    let response = node.patch_json(
        "/api/settings",
        r#"{"NODE_NAME": " Garage ", "EVENTS_RETAIN_DAYS": 2}"#,
    );
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json()["restartNeeded"], json!([]), "{response}");
    assert_eq!(shown(&node, "NODE_NAME"), (json!(" Garage "), json!("ui")));
    // At once, without a restart: the name, and events past 2 days go.
    assert_eq!(node_name(&node), "Garage");
    assert!(
        common::wait_for(Duration::from_secs(10), || node
            .listed_event(&ids[0])
            .is_none()),
        "the 3-day-old event outlived EVENTS_RETAIN_DAYS=2 set in the UI: {}",
        node.logs()
    );
    assert!(node.listed_event(&ids[1]).is_some(), "the kept one went");
    assert!(node.listed_event(&ids[2]).is_some(), "today's went");

    // Kept over a restart, over the environment's.
    drop(node);
    let node = self::node(dir.path());
    assert_eq!(node_name(&node), "Garage");
    assert_eq!(
        shown(&node, "EVENTS_RETAIN_DAYS"),
        (json!("2"), json!("ui"))
    );

    // Cleared in the UI, the environment's holds again.
    let response = node.patch_json("/api/settings", r#"{"NODE_NAME": null}"#);
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(node_name(&node), "from-the-file");
    assert_eq!(
        shown(&node, "NODE_NAME"),
        (json!("from-the-file"), json!("file"))
    );
}

#[test]
fn a_bad_setting_is_refused_naming_it_and_changes_nothing() {
    let dir = TempDir::new("settings-bad");
    let node = node(dir.path());
    let before = node.get("/api/settings").json();
    let refused = |body: &str, field: &str| {
        let response = node.patch_json("/api/settings", body);
        assert_eq!(response.status, 400, "{body}: {response}");
        let error = response.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.starts_with(field), "{body}: {error}");
        error
    };
    refused(
        r#"{"NODE_NAME": "Garage", "EVENTS_RETAIN_DAYS": "0"}"#,
        "EVENTS_RETAIN_DAYS",
    );
    refused(r#"{"CLIPS_MAX_BYTES": "lots"}"#, "CLIPS_MAX_BYTES");
    refused(r#"{"MAX_EVENTS": true}"#, "MAX_EVENTS");
    // Set only in the settings file.
    refused(r#"{"PORT": "80"}"#, "PORT");
    // The rules between settings, as at a start.
    let secret = common::password("mqtt");
    let error = refused(
        &json!({ "MQTT_URL": "mqtt://127.0.0.1:1", "MQTT_PASSWORD": secret }).to_string(),
        "MQTT_PASSWORD",
    );
    common::assert_no_secret(&error, "the error");
    assert_eq!(node.get("/api/settings").json(), before);
    assert_eq!(node_name(&node), "from-the-file");

    // A secret is kept, never shown; Home Assistant takes it at a restart.
    let body =
        json!({ "MQTT_URL": "mqtt://127.0.0.1:1", "MQTT_USER": "nvr", "MQTT_PASSWORD": secret });
    let response = node.patch_json("/api/settings", &body.to_string());
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(
        response.json()["restartNeeded"],
        json!(["MQTT_URL", "MQTT_USER", "MQTT_PASSWORD"])
    );
    // Another broker: the password goes there only when given again.
    let elsewhere = r#"{"MQTT_URL": "mqtt://127.0.0.2:1"}"#;
    let response = node.patch_json("/api/settings", elsewhere);
    assert_eq!(response.status, 400, "{response}");
    assert!(response.error().starts_with("MQTT_PASSWORD"), "{response}");
    assert_eq!(shown(&node, "MQTT_URL").0, "mqtt://127.0.0.1:1");
    let again = json!({ "MQTT_URL": "mqtt://127.0.0.2:1", "MQTT_PASSWORD": secret });
    let response = node.patch_json("/api/settings", &again.to_string());
    assert_eq!(response.status, 200, "{response}");
    let password = setting(&node, "MQTT_PASSWORD");
    assert_eq!(
        (&password["set"], &password["value"]),
        (&json!(true), &Value::Null)
    );
    let text = node.get("/api/settings").text();
    assert!(!text.contains(&secret), "{text}");
    assert!(!node.logs().contains(&secret));
}

/// The "This node" panel in Chromium (`tests/e2e/settings.mjs`), at a
/// laptop's size and a phone's with touch: a bad value refused at its
/// field, then the node's name and the days to keep events saved, kept over
/// a restart of the node.
#[test]
fn the_panel_changes_the_name_and_the_days_kept_over_a_restart() {
    let dir = TempDir::new("settings-ui");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let mut node = node(dir.path());
    for (size, name, days) in [("laptop", "Garage", "5"), ("phone", "Shed 2", "7")] {
        let shot = shots.join(format!("settings-{size}.png"));
        let run = |node: &Node, phase: &str| {
            let url = node.url();
            let args = [
                "--origin",
                &url,
                "--size",
                size,
                "--phase",
                phase,
                "--name",
                name,
                "--days",
                days,
                "--screenshot",
            ];
            let verdict = common::browser_script(
                "settings.mjs",
                &[&args[..], &[shot.to_str().unwrap()]].concat(),
            );
            assert!(
                verdict["ok"] == true,
                "{size} {phase}: {}\n{}",
                verdict["output"].as_str().unwrap_or_default(),
                node.logs()
            );
        };
        run(&node, "set");
        assert_eq!(
            shown(&node, "EVENTS_RETAIN_DAYS"),
            (json!(days), json!("ui"))
        );
        drop(node);
        node = self::node(dir.path());
        run(&node, "check");
    }
}

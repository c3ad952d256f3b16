//! The node as a real Home Assistant sees it: Home Assistant Core 2024.3.3
//! (`.venv-ha`, made by tests/run.sh; run offline, already onboarded, by
//! `tests/home_assistant/run_ha.sh`) with its MQTT integration on the
//! test's mosquitto. What it makes of the node's discovery (devices and
//! entities, read back by `entities.py` through its websocket API), a switch
//! turned from Home Assistant, the node's alerts disarmed and armed from
//! it, motion, the event entity, the last event's
//! image, which Home Assistant fetches from the node by NODE_URL, the
//! sensors of the kinds of event (person, …), which go with classify, and
//! the count of events not reviewed, as events come and are marked.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use crate::common::mosquitto::Broker;
use crate::common::{
    Camera, Node, Response, TempDir, closed_port, drain_into, free_port, http, iso, now_ms,
    password, wait_for,
};
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A Home Assistant started by the test, stopped when dropped.
struct HomeAssistant {
    child: Child,
    config: PathBuf,
    port: u16,
    output: Arc<Mutex<String>>,
    _dir: TempDir,
}

impl HomeAssistant {
    fn start(broker: &Broker) -> HomeAssistant {
        let venv = repo().join(".venv-ha");
        assert!(
            venv.join("bin/hass").exists(),
            "Home Assistant is not installed in {}: run tests/run.sh, which makes it from tests/home_assistant/requirements.txt",
            venv.display()
        );
        let dir = TempDir::new("home-assistant");
        let config = dir.path().join("config");
        let port = free_port();
        let mut child = Command::new(repo().join("tests/home_assistant/run_ha.sh"))
            .arg(&config)
            .arg(port.to_string())
            .arg(broker.port.to_string())
            .arg(&broker.user)
            .arg(&broker.password)
            .env("HA_VENV", &venv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tests/home_assistant/run_ha.sh");
        let output = Arc::new(Mutex::new(String::new()));
        drain_into(child.stdout.take().unwrap(), output.clone());
        drain_into(child.stderr.take().unwrap(), output.clone());
        let ha = HomeAssistant {
            child,
            config,
            port,
            output,
            _dir: dir,
        };
        let running = wait_for(Duration::from_secs(120), || {
            ha.config.join("token").exists()
                && TcpStream::connect(("127.0.0.1", port)).is_ok()
                && serde_json::from_slice::<Value>(&ha.api("GET", "/api/config", b"").body)
                    .is_ok_and(|config| config["state"] == "RUNNING")
        });
        assert!(running, "Home Assistant did not start:\n{}", ha.output());
        ha
    }

    fn token(&self) -> String {
        std::fs::read_to_string(self.config.join("token"))
            .unwrap()
            .trim()
            .to_owned()
    }

    fn api(&self, method: &str, path: &str, body: &[u8]) -> Response {
        let auth = format!("Bearer {}", self.token());
        let headers = [
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ];
        http::request(self.port, method, path, &headers, body)
    }

    fn state(&self, entity: &str) -> Value {
        self.api("GET", &format!("/api/states/{entity}"), b"")
            .json()
    }

    /// Waits up to `timeout` for `entity` to be in `state`; panics with `what` and its state.
    fn expect_state(&self, entity: &str, state: &str, timeout: Duration, what: &str) {
        let reached = wait_for(timeout, || self.state(entity)["state"] == state);
        assert!(reached, "{what}: {}", self.state(entity));
    }

    fn call(&self, service: &str, entity: &str) {
        let body = json!({ "entity_id": entity }).to_string();
        let response = self.api("POST", &format!("/api/services/{service}"), body.as_bytes());
        assert_eq!(response.status, 200, "{service} {entity}: {response}");
    }

    /// The MQTT devices and entities, as `entities.py` reads them.
    fn entities(&self) -> Value {
        let python = repo().join(".venv-ha/bin/python");
        let output = Command::new(&python)
            .arg(repo().join("tests/home_assistant/entities.py"))
            .arg(&self.config)
            .arg(self.port.to_string())
            .output()
            .expect("run entities.py");
        assert!(
            output.status.success(),
            "entities.py: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("entities.py prints JSON")
    }

    fn output(&self) -> String {
        let log =
            std::fs::read_to_string(self.config.join("home-assistant.log")).unwrap_or_default();
        format!(
            "{}\n--- home-assistant.log ---\n{log}",
            self.output.lock().unwrap()
        )
    }

    /// Home Assistant's warnings and errors about MQTT entities.
    fn mqtt_complaints(&self) -> Vec<String> {
        let log =
            std::fs::read_to_string(self.config.join("home-assistant.log")).unwrap_or_default();
        log.lines()
            .filter(|l| (l.contains("WARNING") || l.contains("ERROR")) && l.contains("mqtt"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for HomeAssistant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The entity whose unique id ends with `_{object}`.
fn entity<'a>(entities: &'a Value, object: &str) -> &'a Value {
    entities["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["unique_id"]
                .as_str()
                .unwrap()
                .ends_with(&format!("_{object}"))
        })
        .unwrap_or_else(|| panic!("no {object} entity: {entities:#}"))
}

fn device<'a>(entities: &'a Value, name: &str) -> &'a Value {
    entities["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no device {name}: {entities:#}"))
}

/// A node with MQTT on `broker`, no relay, and `extra` settings; its NODE_URL.
fn node_for(broker: &Broker, data: &TempDir, extra: &[(&str, &str)]) -> (Node, String) {
    let port = free_port().to_string();
    let node_url = format!("http://localhost:{port}");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let mqtt_url = format!("mqtt://127.0.0.1:{}", broker.port);
    let mut settings = vec![
        ("PORT", port.as_str()),
        ("NODE_URL", &node_url),
        ("MQTT_URL", &mqtt_url),
        ("MQTT_USER", "nvr"),
        ("MQTT_PASSWORD", &broker.password),
    ];
    settings.extend_from_slice(extra);
    let node = Node::start(data.path(), &relay, &settings);
    (node, node_url)
}

/// Posts an event of `camera` that started `ago_s` seconds ago; its id.
fn post_event(node: &Node, camera: &str, ago_s: i64) -> String {
    let at = iso(now_ms() - ago_s * 1000);
    let body = json!({ "cameraId": camera, "kind": "person", "score": 0.9, "startedAt": at, "endedAt": at });
    let response = node.post_json("/api/events", &body.to_string());
    assert_eq!(response.status, 201, "{response}");
    response.json()["id"].as_str().unwrap().to_owned()
}

#[test]
fn home_assistant_shows_the_node_and_its_camera_and_works_them() {
    let dir = TempDir::new("ha-broker");
    let broker = Broker::start(dir.path(), "nvr", &password("mqtt"));
    let camera = Camera::start();
    let data = TempDir::new("ha-node");
    let recordings = data.path().join("recordings").display().to_string();
    let classifier = common::classifier::real();
    let (node, node_url) = node_for(
        &broker,
        &data,
        &[
            (classifier[0].0, &classifier[0].1),
            (classifier[1].0, &classifier[1].1),
            ("RECORDINGS_DIR", &recordings),
            ("RECORDINGS_RESERVE", "0"),
        ],
    );
    let created = node.add_camera(json!({
        "name": "Front door", "make": "Acme", "model": "C1",
        "rtspUrl": camera.url("", "/scene"), "record": true, "detect": true,
        // The whole picture, where no one should linger (all kinds: every
        // event is made as without it).
        "zones": [{"name": "Front step", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]], "loiterSeconds": 30}],
    }));
    let id = created["id"].as_str().unwrap().to_owned();

    let ha = HomeAssistant::start(&broker);
    // Discovered, then available (the node's availability topic) with their states.
    let all_there = wait_for(Duration::from_secs(60), || {
        let entities = ha.entities()["entities"].as_array().unwrap().clone();
        entities.len() == 16 && entities.iter().all(|e| e["state"] != "unavailable")
    });
    let entities = ha.entities();
    assert!(
        all_there,
        "not the 16 entities: {entities:#}\n{}",
        ha.output()
    );
    eprintln!("Home Assistant shows: {entities:#}");

    let hub = device(&entities, "test-node");
    assert_eq!(hub["manufacturer"], "nvr-node");
    assert_eq!(hub["model"], "NVR node");
    assert_eq!(hub["configuration_url"], node_url.as_str());
    let front = device(&entities, "Front door");
    assert_eq!(front["via_device"], "test-node");
    assert_eq!(front["manufacturer"], "Acme");
    assert_eq!(front["model"], "C1");
    assert_eq!(
        front["configuration_url"],
        format!("{node_url}/#camera-{id}")
    );

    let motion = entity(&entities, "motion");
    assert_eq!(motion["entity_id"], "binary_sensor.front_door_motion");
    assert_eq!(motion["device"], "Front door");
    assert_eq!(motion["device_class"], "motion");
    assert_eq!(motion["state"], "off");
    let online = entity(&entities, "online");
    assert_eq!(online["device_class"], "connectivity");
    assert_eq!(online["entity_category"], "diagnostic");
    for object in ["record", "detect"] {
        assert_eq!(entity(&entities, object)["state"], "on", "{object}");
    }
    for object in ["storage_used", "storage_free"] {
        let sensor = entity(&entities, object);
        assert_eq!(sensor["device"], "test-node");
        assert_eq!(sensor["device_class"], "data_size");
        assert!(
            sensor["state"].as_str().unwrap().parse::<f64>().is_ok(),
            "{sensor}"
        );
    }
    // Classifying (on by default, the classifier installed): a sensor per kind.
    for (object, name) in [
        ("person", "Person"),
        ("vehicle", "Vehicle"),
        ("animal", "Animal"),
        ("package", "Package"),
    ] {
        let sensor = entity(&entities, object);
        assert_eq!(
            sensor["entity_id"],
            format!("binary_sensor.front_door_{object}")
        );
        assert_eq!(sensor["name"], format!("Front door {name}"));
        assert_eq!(sensor["device"], "Front door");
        assert_eq!(sensor["device_class"], "occupancy");
        assert_eq!(sensor["state"], "off", "{object}: off when the node starts");
    }
    // And one per zone with loiterSeconds.
    let loitering = entity(&entities, "loitering_front_20step");
    assert_eq!(
        loitering["entity_id"],
        "binary_sensor.front_door_front_step_loitering"
    );
    assert_eq!(loitering["name"], "Front door Front step loitering");
    assert_eq!(loitering["device"], "Front door");
    assert_eq!(loitering["device_class"], "occupancy");
    assert_eq!(loitering["state"], "off", "off when the node starts");
    assert_eq!(
        entity(&entities, "event")["attributes"]["event_types"],
        json!(["motion", "person", "vehicle", "animal", "package"])
    );
    let relay_entity = entity(&entities, "relay");
    assert_eq!(relay_entity["state"], "off", "no relay runs in this test");
    let event_id = entity(&entities, "event")["entity_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let image_id = entity(&entities, "snapshot")["entity_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ha.expect_state(
        "binary_sensor.front_door_online",
        "on",
        Duration::from_secs(40),
        "the camera never showed online in Home Assistant",
    );

    // Motion, as Home Assistant shows it: the sensor, then the event entity
    // (fired once, at the start), then the last event's image, fetched from
    // the node.
    node.settle(&id);
    camera.scene("box 3");
    ha.expect_state(
        "binary_sensor.front_door_motion",
        "on",
        Duration::from_secs(5),
        "motion never showed on in Home Assistant",
    );
    assert!(
        wait_for(Duration::from_secs(5), || ha.state(&event_id)["attributes"]
            ["event_type"]
            == "motion"),
        "the event entity never fired: {}",
        ha.state(&event_id)
    );
    let fired = ha.state(&event_id)["state"].clone();
    ha.expect_state(
        "binary_sensor.front_door_motion",
        "off",
        Duration::from_secs(20),
        "motion never went off in Home Assistant",
    );
    assert!(
        wait_for(Duration::from_secs(40), || ha.state(&image_id)["state"]
            != "unknown"),
        "the image never got a picture: {}",
        ha.state(&image_id)
    );
    let picture = ha.api("GET", &format!("/api/image_proxy/{image_id}"), b"");
    assert_eq!(picture.status, 200, "{}\n{}", picture.status, ha.output());
    assert_eq!(picture.header("Content-Type"), Some("image/jpeg"));
    let events = node.get("/api/events").json();
    let thumbnail = node.get(events[0]["thumbnailUrl"].as_str().unwrap());
    assert_eq!(
        picture.body, thumbnail.body,
        "Home Assistant shows another picture"
    );
    assert_eq!(
        ha.state(&event_id)["state"],
        fired,
        "the event's end fired the event entity again"
    );

    // A switch turned from Home Assistant: the node stops recording.
    ha.call("switch/turn_off", "switch.front_door_record");
    assert!(
        wait_for(Duration::from_secs(5), || node.get("/api/cameras").json()
            [0]["record"]
            == false),
        "record still on in the node after Home Assistant turned it off"
    );
    ha.expect_state(
        "switch.front_door_record",
        "off",
        Duration::from_secs(5),
        "the switch did not settle off in Home Assistant",
    );

    // The node's alerts, off and on again from Home Assistant.
    let alerts = entity(&entities, "alerts");
    assert_eq!(alerts["entity_id"], "switch.test_node_alerts");
    assert_eq!(alerts["device"], "test-node");
    assert_eq!(alerts["state"], "on", "armed until a person disarms");
    let armed = || node.get("/api/alerts").json()["armed"].clone();
    for (service, state, on) in [("turn_off", "off", false), ("turn_on", "on", true)] {
        ha.call(&format!("switch/{service}"), "switch.test_node_alerts");
        assert!(
            wait_for(Duration::from_secs(5), || armed() == on),
            "alerts not {state} in the node after Home Assistant's {service}"
        );
        ha.expect_state(
            "switch.test_node_alerts",
            state,
            Duration::from_secs(5),
            "the alerts' switch did not settle in Home Assistant",
        );
    }

    let complaints = ha.mqtt_complaints();
    assert!(
        complaints.is_empty(),
        "Home Assistant complained: {complaints:#?}"
    );

    // Fewer kinds, then classify off: their sensors go.
    let has = |object: &str| {
        ha.entities()["entities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| {
                e["unique_id"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("_{object}"))
            })
    };
    node.patch_camera(&id, json!({ "kinds": ["person", "vehicle"] }));
    assert!(
        wait_for(Duration::from_secs(10), || !has("animal")
            && !has("package")),
        "the animal and package sensors are still there: {:#}",
        ha.entities()
    );
    assert!(has("person") && has("vehicle"), "{:#}", ha.entities());
    node.patch_camera(&id, json!({ "classify": false }));
    assert!(
        wait_for(Duration::from_secs(10), || !has("person")
            && !has("vehicle")),
        "the kinds' sensors are still there with classify off: {:#}",
        ha.entities()
    );
    assert!(
        has("motion"),
        "the motion sensor went too: {:#}",
        ha.entities()
    );
    let complaints = ha.mqtt_complaints();
    assert!(
        complaints.is_empty(),
        "Home Assistant complained: {complaints:#?}"
    );

    // The camera deleted: its device goes from Home Assistant.
    assert_eq!(node.delete(&format!("/api/cameras/{id}")).status, 204);
    assert!(
        wait_for(Duration::from_secs(10), || ha.entities()["devices"]
            .as_array()
            .unwrap()
            .len()
            == 1),
        "the deleted camera's device is still there: {:#}",
        ha.entities()
    );
}

#[test]
fn home_assistant_counts_each_cameras_events_not_reviewed() {
    let dir = TempDir::new("ha-review-broker");
    let broker = Broker::start(dir.path(), "nvr", &password("mqtt"));
    let data = TempDir::new("ha-review-node");
    let (node, _) = node_for(&broker, &data, &[]);
    // No stream needed: the count is the events', whatever the camera does.
    let url = format!("rtsp://127.0.0.1:{}/x", closed_port());
    let porch = node
        .add_camera(json!({ "name": "Porch", "rtspUrl": url, "record": false, "detect": false }));
    let porch = porch["id"].as_str().unwrap().to_owned();
    let first = post_event(&node, &porch, 300);
    post_event(&node, &porch, 200);
    // What the node itself says, that Home Assistant must show.
    let node_count = || node.get("/api/status").json()["cameras"][0]["unreviewedEvents"].clone();
    assert_eq!(node_count(), 2);

    let ha = HomeAssistant::start(&broker);
    let sensor = "sensor.porch_unreviewed_events";
    ha.expect_state(
        sensor,
        "2",
        Duration::from_secs(60),
        "the sensor never showed the node's 2 events not reviewed",
    );
    let entities = ha.entities();
    let count = entity(&entities, "unreviewed_events");
    assert_eq!(count["entity_id"], sensor);
    assert_eq!(count["name"], "Porch Events not reviewed");
    assert_eq!(count["device"], "Porch");
    assert_eq!(count["attributes"]["state_class"], "measurement");
    assert_eq!(count["attributes"]["icon"], "mdi:bell-badge-outline");

    // A new event counts at once; marking them, through the node's API, counts down.
    let newest = post_event(&node, &porch, 100);
    ha.expect_state(
        sensor,
        "3",
        Duration::from_secs(10),
        "a new event was not counted",
    );
    assert_eq!(node_count(), 3);
    let response = node.patch_json(&format!("/api/events/{first}"), r#"{"reviewed": true}"#);
    assert_eq!(response.status, 200, "{response}");
    ha.expect_state(
        sensor,
        "2",
        Duration::from_secs(10),
        "the event marked reviewed still counts",
    );
    assert_eq!(node_count(), 2);
    let body = json!({ "before": iso(now_ms()), "cameraId": porch });
    let response = node.post_json("/api/events/reviewed", &body.to_string());
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.json()["marked"], 2);
    ha.expect_state(
        sensor,
        "0",
        Duration::from_secs(10),
        "the events marked reviewed still count",
    );
    assert_eq!(node_count(), 0);
    // Marked not reviewed again: it counts again.
    let response = node.patch_json(&format!("/api/events/{newest}"), r#"{"reviewed": false}"#);
    assert_eq!(response.status, 200, "{response}");
    ha.expect_state(
        sensor,
        "1",
        Duration::from_secs(10),
        "the event marked not reviewed does not count",
    );

    let complaints = ha.mqtt_complaints();
    assert!(
        complaints.is_empty(),
        "Home Assistant complained: {complaints:#?}"
    );
}

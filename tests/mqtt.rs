//! Home Assistant through MQTT, with the real parts: the node paired with a
//! real mosquitto (a password file, anonymous clients refused), started and
//! killed by each test; the GStreamer test camera for motion; mosquitto's own
//! clients to read what is on the broker and to send commands as Home
//! Assistant would. The broker password carries the secret marker, so the
//! harness's sweep of every response and log line covers it.

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::common;
use crate::common::mosquitto::{Broker, Seen};
use crate::common::{
    Camera, Node, TempDir, closed_port, password, processes_connected_to, wait_for,
};
use serde_json::{Value, json};

const USER: &str = "nvr";
/// Entities per camera (motion, online, record, detect, image, event, events
/// not reviewed) and of the node itself (storage used and free, the relay,
/// the alerts' switch).
const PER_CAMERA: usize = 7;
const OF_NODE: usize = 4;

fn start_node(data: &TempDir, mqtt_url: &str, mqtt_password: &str, extra: &[(&str, &str)]) -> Node {
    let mut vars = vec![
        ("MQTT_URL", mqtt_url),
        ("MQTT_USER", USER),
        ("MQTT_PASSWORD", mqtt_password),
    ];
    vars.extend_from_slice(extra);
    Node::start_recording(data.path(), &data.path().join("recordings"), &vars)
}

fn plain_node(data: &TempDir, broker: &Broker, extra: &[(&str, &str)]) -> Node {
    let url = format!("mqtt://127.0.0.1:{}", broker.port);
    start_node(data, &url, &broker.password, extra)
}

/// A broker, and a node connected to it with one camera (that does not
/// record or detect): (the broker's folder, the broker, the node's folder,
/// the node, its id on the broker, the camera's id).
fn connected_with_a_camera(name: &str) -> (TempDir, Broker, TempDir, Node, String, String) {
    let dir = TempDir::new("mqtt-broker");
    let broker = Broker::start(dir.path(), USER, &password("mqtt"));
    let data = TempDir::new(name);
    let node = plain_node(&data, &broker, &[]);
    wait_for_mqtt(&node, "connected", Duration::from_secs(10));
    let node_id = node_id(&broker);
    let url = format!("rtsp://127.0.0.1:{}/x", closed_port());
    let created = node
        .add_camera(json!({ "name": "Gate", "rtspUrl": url, "record": false, "detect": false }));
    let id = created["id"].as_str().unwrap().to_owned();
    (dir, broker, data, node, node_id, id)
}

/// The node's `mqtt` status.
fn mqtt_status(node: &Node) -> Value {
    node.get("/api/status").json()["mqtt"].clone()
}

fn wait_for_mqtt(node: &Node, state: &str, timeout: Duration) -> Value {
    let reached = wait_for(timeout, || mqtt_status(node)["state"] == state);
    let status = mqtt_status(node);
    assert!(
        reached,
        "mqtt not {state} within {timeout:?}: {status}\n{}",
        node.logs()
    );
    status
}

/// The node's id on the broker, from its retained availability topic.
fn node_id(broker: &Broker) -> String {
    let retained = broker.retained("nvr/+/availability");
    assert_eq!(retained.len(), 1, "{retained:?}");
    retained[0].0.split('/').nth(1).unwrap().to_owned()
}

fn text(payload: &[u8]) -> &str {
    std::str::from_utf8(payload).unwrap()
}

/// The discovery configs on the broker, parsed, by topic.
fn configs(broker: &Broker) -> Vec<(String, Value)> {
    broker
        .retained("homeassistant/#")
        .into_iter()
        .filter(|(topic, _)| topic.ends_with("/config"))
        .map(|(topic, payload)| {
            let config = serde_json::from_slice(&payload)
                .unwrap_or_else(|e| panic!("{topic}: not JSON ({e}): {}", text(&payload)));
            (topic, config)
        })
        .collect()
}

/// Checks the configs as Home Assistant reads them: unique ids unique, each
/// state, image and command topic one the node publishes or subscribes to,
/// one device per camera by way of the node's device.
fn check_discovery(configs: &[(String, Value)], node: &str, states: &HashSet<String>) {
    let unique: HashSet<&str> = configs
        .iter()
        .map(|(_, c)| c["unique_id"].as_str().expect("a unique_id"))
        .collect();
    assert_eq!(
        unique.len(),
        configs.len(),
        "unique ids repeat: {configs:#?}"
    );
    let node_device = format!("nvr-node_{node}");
    let ours = format!("nvr/{node}/");
    for (topic, config) in configs {
        let component = topic.split('/').nth(1).unwrap();
        assert!(
            ["binary_sensor", "sensor", "switch", "image", "event"].contains(&component),
            "{topic}"
        );
        assert_eq!(
            config["availability_topic"],
            format!("nvr/{node}/availability"),
            "{topic}"
        );
        assert!(config["name"].is_string(), "{topic}: a name");
        let device = &config["device"];
        assert!(device["name"].is_string(), "{topic}: a device name");
        let identifier = device["identifiers"][0]
            .as_str()
            .expect("device identifiers");
        if identifier == node_device {
            assert_eq!(device["name"], "test-node", "{topic}");
        } else {
            assert_eq!(device["via_device"], node_device.as_str(), "{topic}");
            assert!(
                device["configuration_url"]
                    .as_str()
                    .is_some_and(|u| u.contains("/#camera-")),
                "{topic}: {device}"
            );
        }
        for key in ["state_topic", "url_topic", "command_topic"] {
            let Some(used) = config[key].as_str() else {
                continue;
            };
            assert!(used.starts_with(&ours), "{topic}: {key} {used}");
            let published = states.contains(used)
                || used.ends_with("/event")
                || used.ends_with("/snapshot")
                || (key == "command_topic" && used.ends_with("/set"));
            assert!(published, "{topic}: {key} {used} is not on the broker");
        }
        match component {
            "switch" => assert!(config["command_topic"].is_string(), "{topic}"),
            "event" => assert_eq!(
                config["event_types"],
                json!(["motion", "person", "vehicle", "animal", "package"])
            ),
            "image" => assert!(config["url_topic"].is_string(), "{topic}"),
            _ => {}
        }
    }
}

fn retained_topics(broker: &Broker, node: &str) -> HashSet<String> {
    broker
        .retained(&format!("nvr/{node}/#"))
        .into_iter()
        .map(|(topic, _)| topic)
        .collect()
}

fn retained_value(broker: &Broker, topic: &str) -> Option<String> {
    broker
        .retained(topic)
        .into_iter()
        .next()
        .map(|(_, payload)| text(&payload).to_owned())
}

fn is(topic: String, payload: &'static str) -> impl Fn(&Seen) -> bool {
    move |seen| seen.topic == topic && seen.payload == payload.as_bytes()
}

fn event_message(seen: &Seen, topic: &str, phase: &str) -> Option<Value> {
    let event: Value = serde_json::from_slice(&seen.payload).ok()?;
    (seen.topic == topic && event["type"] == phase).then_some(event)
}

/// The camera's motion watcher (its receiver, the ffmpeg that copies the stream for its decoder).
fn decoders(camera: &Camera) -> Vec<u32> {
    processes_connected_to(common::MOTION_RECEIVER, camera.port)
}

/// How many times the node has connected to the broker, from the broker's log.
fn connects(broker: &Broker, node_id: &str) -> usize {
    let as_node = format!(" as nvr-node-{node_id} (");
    broker
        .log()
        .lines()
        .filter(|l| l.contains("New client connected") && l.contains(&as_node))
        .count()
}

/// How many pings the broker had from the node.
fn pings(broker: &Broker, node_id: &str) -> usize {
    let from_node = format!("Received PINGREQ from nvr-node-{node_id}\n");
    broker.log().matches(&from_node).count()
}

/// The database's files with their sizes and modification times.
fn database_files(data: &Path) -> Vec<(String, u64, SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("nvr-node.db"))
        .map(|e| {
            let meta = e.metadata().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, meta.len(), meta.modified().unwrap())
        })
        .collect();
    files.sort();
    files
}

fn camera_field(node: &Node, id: &str, field: &str) -> Value {
    let all = node.get("/api/cameras").json();
    let camera = all.as_array().unwrap().iter().find(|c| c["id"] == id);
    camera.map_or(Value::Null, |c| c[field].clone())
}

#[test]
fn discovery_states_motion_and_commands_follow_the_cameras() {
    let dir = TempDir::new("mqtt-broker");
    let broker = Broker::start(dir.path(), USER, &password("mqtt"));
    let camera = Camera::start();
    let data = TempDir::new("mqtt");
    let node = plain_node(&data, &broker, &[("NODE_URL", "http://nvr.test:8080")]);
    wait_for_mqtt(&node, "connected", Duration::from_secs(10));
    let node_id = node_id(&broker);
    assert_eq!(
        retained_value(&broker, &format!("nvr/{node_id}/availability")).as_deref(),
        Some("online")
    );
    // The node alone: its own entities.
    assert_eq!(configs(&broker).len(), OF_NODE);

    let watch = broker.watch(&format!("nvr/{node_id}/#"));
    let created = node.add_camera(json!({
        "name": "Front door", "make": "Acme", "model": "C1",
        "rtspUrl": camera.url("", "/scene"), "record": true, "detect": true,
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    let topic = |object: &str| format!("nvr/{node_id}/{id}/{object}");
    watch.expect(
        "record ON",
        Duration::from_secs(3),
        is(topic("record"), "ON"),
    );
    let configs_now = configs(&broker);
    assert_eq!(configs_now.len(), OF_NODE + PER_CAMERA, "{configs_now:#?}");
    check_discovery(&configs_now, &node_id, &retained_topics(&broker, &node_id));
    let motion_config = &configs_now
        .iter()
        .find(|(t, _)| t.ends_with(&format!("{node_id}_{id}/motion/config")))
        .expect("a motion binary sensor")
        .1;
    assert_eq!(motion_config["device_class"], "motion");
    assert_eq!(motion_config["device"]["name"], "Front door");
    assert_eq!(motion_config["device"]["manufacturer"], "Acme");
    for object in ["record", "detect"] {
        assert_eq!(
            retained_value(&broker, &topic(object)).as_deref(),
            Some("ON")
        );
    }
    assert!(
        wait_for(Duration::from_secs(15), || {
            retained_value(&broker, &topic("online")).as_deref() == Some("ON")
        }),
        "the camera never showed online"
    );

    // Motion: ON with the box, an event start, OFF 10 s after it stops,
    // then the event's end with its clip and thumbnail, and the snapshot.
    node.settle(&id);
    let events = topic("event");
    let moved = camera.scene("box 3");
    let on = watch.expect(
        "motion ON",
        Duration::from_secs(5),
        is(topic("motion"), "ON"),
    );
    let start = watch
        .wait_for(Duration::from_secs(5), |s| {
            event_message(s, &events, "start").is_some()
        })
        .and_then(|s| event_message(&s, &events, "start"))
        .expect("an event start message");
    assert_eq!(start["event_type"], "motion");
    assert_eq!(start["kind"], "motion");
    assert!(start["endedAt"].is_null() && start["zones"].is_null());
    assert!(start["objects"].is_null(), "nothing seen yet: {start}");
    let off = watch.expect("motion OFF", Duration::from_secs(20), |s| {
        s.topic == topic("motion") && s.payload == b"OFF" && s.at > on.at
    });
    let quiet = off.at.duration_since(on.at);
    assert!(
        (Duration::from_secs(11)..Duration::from_secs(16)).contains(&quiet),
        "motion was ON for {quiet:?}: 3 s of box and 10 s of quiet"
    );
    let end = watch
        .wait_for(Duration::from_secs(40), |s| {
            event_message(s, &events, "end").is_some()
        })
        .and_then(|s| event_message(&s, &events, "end"))
        .unwrap_or_else(|| panic!("no event end message: {:#?}", watch.all()));
    assert_eq!(end["id"], start["id"]);
    assert!(end["score"].as_f64().unwrap() > 0.0);
    assert_eq!(end["zones"], json!([]), "a camera without zones");
    assert_eq!(end["objects"], json!([]), "the box is none of the kinds");
    let thumbnail = end["thumbnailUrl"].as_str().expect("a thumbnail link");
    let clip = end["clipUrl"].as_str().expect("a clip link");
    assert!(
        thumbnail.starts_with("http://nvr.test:8080/api/events/"),
        "{thumbnail}"
    );
    assert!(clip.ends_with("/clip.mp4"), "{clip}");
    let started_at = humantime::parse_rfc3339(start["startedAt"].as_str().unwrap()).unwrap();
    let started_ms = started_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (started_ms - moved).abs() < 1_500,
        "started {} ms from the box",
        started_ms - moved
    );
    assert_eq!(
        retained_value(&broker, &topic("snapshot")).as_deref(),
        Some(thumbnail)
    );
    eprintln!(
        "motion: event started {} ms from the box; ON for {quiet:?}; the end message {:?} after OFF",
        started_ms - moved,
        watch
            .all()
            .iter()
            .find(|s| event_message(s, &events, "end").is_some())
            .map(|s| s.at.duration_since(off.at)),
    );

    // Home Assistant fetches it by NODE_URL: that host passes the node's guard.
    let path = thumbnail.strip_prefix("http://nvr.test:8080").unwrap();
    let jpeg = node.request("GET", path, &[("Host", "nvr.test:8080")], b"");
    assert_eq!(jpeg.status, 200, "{jpeg}");
    assert_eq!(jpeg.header("Content-Type"), Some("image/jpeg"));

    // A PATCH shows on the broker; a command from the broker acts as a PATCH.
    let patch = |body: Value| node.patch_camera(&id, body);
    patch(json!({ "record": false }));
    watch.expect(
        "record OFF",
        Duration::from_secs(2),
        is(topic("record"), "OFF"),
    );
    assert!(!decoders(&camera).is_empty(), "detecting, yet no decoder");
    broker.publish(&topic("detect/set"), b"OFF", false);
    assert!(
        wait_for(Duration::from_secs(2), || camera_field(
            &node, &id, "detect"
        ) == false
            && decoders(&camera).is_empty()),
        "detect/set OFF: detect {}, decoders {:?}",
        camera_field(&node, &id, "detect"),
        decoders(&camera)
    );
    watch.expect(
        "detect OFF",
        Duration::from_secs(2),
        is(topic("detect"), "OFF"),
    );
    broker.publish(&topic("detect/set"), b"ON", false);
    assert!(
        wait_for(Duration::from_secs(2), || camera_field(
            &node, &id, "detect"
        ) == true
            && !decoders(&camera).is_empty()),
        "detect/set ON: detect {}, decoders {:?}",
        camera_field(&node, &id, "detect"),
        decoders(&camera)
    );
    broker.publish(&topic("record/set"), b"ON", false);
    assert!(
        wait_for(Duration::from_secs(2), || camera_field(
            &node, &id, "record"
        ) == true),
        "record/set ON did not reach the camera"
    );
    // Commands are never retained by the node.
    assert!(
        broker
            .retained(&format!("nvr/{node_id}/+/+/set"))
            .is_empty()
    );

    // Garbage and 1 MiB on the command topics: ignored, and the link stays up.
    let before = node.get("/api/cameras").json();
    broker.publish(&topic("record/set"), b"maybe", false);
    broker.publish(&topic("detect/set"), &vec![b'x'; 1 << 20], false);
    broker.publish(&topic("record/set"), &vec![0xff; 70_000], false);
    thread::sleep(Duration::from_secs(1));
    let mut after = node.get("/api/cameras").json();
    after[0]["online"] = before[0]["online"].clone();
    after[0]["recording"] = before[0]["recording"].clone();
    assert_eq!(after, before, "a bad command changed the camera");
    assert_eq!(mqtt_status(&node)["state"], "connected");
    assert!(
        !watch
            .all()
            .iter()
            .any(|s| s.topic.ends_with("/availability") && !s.retained),
        "the node went offline and back: {:#?}",
        watch.all()
    );
    let logs = node.logs();
    assert!(logs.contains("neither ON nor OFF"), "{logs}");
    assert!(logs.contains("larger than the node takes"), "{logs}");

    // A rename updates the device; a deletion takes the entities away.
    patch(json!({ "name": "Porch" }));
    assert!(
        wait_for(Duration::from_secs(2), || configs(&broker)
            .iter()
            .any(|(t, c)| t.contains(&id) && c["device"]["name"] == "Porch")),
        "the rename did not reach the device"
    );
    assert_eq!(node.delete(&format!("/api/cameras/{id}")).status, 204);
    assert!(
        wait_for(Duration::from_secs(2), || configs(&broker).len() == OF_NODE),
        "entities of a deleted camera are left: {:#?}",
        configs(&broker)
    );
    assert!(
        retained_topics(&broker, &node_id)
            .iter()
            .all(|t| !t.contains(&id)),
        "states of a deleted camera are left"
    );
}

#[test]
fn home_assistant_and_broker_restarts_bring_everything_back() {
    let dir = TempDir::new("mqtt-broker");
    let mut broker = Broker::start(dir.path(), USER, &password("mqtt"));
    let data = TempDir::new("mqtt-restarts");
    let node = plain_node(&data, &broker, &[]);
    wait_for_mqtt(&node, "connected", Duration::from_secs(10));
    let port = closed_port();
    node.add_camera(json!({ "name": "Gate", "rtspUrl": format!("rtsp://127.0.0.1:{port}/x"), "record": false, "detect": false }));
    let node_id = node_id(&broker);
    let all = OF_NODE + PER_CAMERA;
    assert!(wait_for(Duration::from_secs(3), || configs(&broker).len() == all));
    let states = retained_topics(&broker, &node_id);

    // Home Assistant's birth: every config and state again, live.
    let watch = broker.watch("#");
    broker.publish("homeassistant/status", b"online", false);
    let fresh = |s: &Seen| !s.retained;
    assert!(
        wait_for(Duration::from_secs(3), || {
            let seen: HashSet<String> = watch
                .all()
                .into_iter()
                .filter(fresh)
                .map(|s| s.topic)
                .collect();
            seen.iter().filter(|t| t.ends_with("/config")).count() == all
                && states.iter().all(|t| seen.contains(t))
        }),
        "not everything again after Home Assistant's birth: {:#?}",
        watch.all()
    );
    drop(watch);

    // A flood of births: everything again at most once in 5 s, and again
    // for a birth after those 5 s.
    let relay_config = format!("homeassistant/binary_sensor/{node_id}/relay/config");
    let watch = broker.watch(&relay_config);
    let mut births = broker.lines("homeassistant/status");
    for _ in 0..20 {
        births.send("online");
    }
    thread::sleep(Duration::from_secs(6));
    let resent = || watch.all().into_iter().filter(fresh).count();
    let flooded = resent();
    births.send("online");
    assert!(
        wait_for(Duration::from_secs(3), || resent() > flooded),
        "nothing again for a birth 6 s after the flood: {:#?}",
        watch.all()
    );
    assert!(
        flooded <= 1,
        "{flooded} times everything for 20 births: {:#?}",
        watch.all()
    );
    drop(watch);

    // The broker restarted, its retained messages lost: the node is back
    // within the first retry (1 s) and everything is there again.
    broker.restart();
    assert!(
        wait_for(Duration::from_secs(5), || configs(&broker).len() == all
            && retained_topics(&broker, &node_id) == states),
        "not everything back after a broker restart: {:?}\n{}",
        broker.retained("#"),
        node.logs()
    );
    wait_for_mqtt(&node, "connected", Duration::from_secs(1));

    // The broker down for a while: status says so, the API answers; back
    // within the backoff (1, 2, 4, 8 s) once it returns.
    broker.stop();
    let down = wait_for_mqtt(&node, "error", Duration::from_secs(5));
    assert!(
        down["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{down}"
    );
    assert_eq!(node.get("/api/cameras").status, 200);
    thread::sleep(Duration::from_secs(4));
    broker.start_again();
    wait_for_mqtt(&node, "connected", Duration::from_secs(12));
    assert!(wait_for(Duration::from_secs(3), || configs(&broker).len() == all));

    // The node killed: the broker says it is offline (its last will).
    node.kill();
    assert!(
        wait_for(Duration::from_secs(3), || retained_value(
            &broker,
            &format!("nvr/{node_id}/availability")
        )
        .as_deref()
            == Some("offline")),
        "no offline after kill -9"
    );
}

#[test]
fn a_wrong_password_or_a_silent_broker_shows_in_status_and_blocks_nothing() {
    let dir = TempDir::new("mqtt-broker");
    let broker = Broker::start(dir.path(), USER, &password("mqtt"));
    let data = TempDir::new("mqtt-refused");
    let url = format!("mqtt://127.0.0.1:{}", broker.port);
    let node = start_node(&data, &url, &password("wrong"), &[]);
    let status = wait_for_mqtt(&node, "error", Duration::from_secs(5));
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("not authorized"), "{message}");
    assert_eq!(node.get("/api/cameras").status, 200);
    assert!(broker.retained("#").is_empty(), "a refused node published");
    drop(node);

    // A broker that takes the connection and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = thread::spawn(move || {
        let mut streams = Vec::new();
        for stream in silent.incoming().take(2) {
            streams.push(stream);
        }
        thread::sleep(Duration::from_secs(20));
    });
    let data = TempDir::new("mqtt-silent");
    let node = start_node(&data, &format!("mqtt://127.0.0.1:{port}"), "x", &[]);
    assert_eq!(mqtt_status(&node)["state"], "connecting");
    assert_eq!(node.get("/api/cameras").status, 200);
    let status = wait_for_mqtt(&node, "error", Duration::from_secs(10));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{status}"
    );
    drop(node);
    drop(held);
}

#[test]
fn tls_to_the_broker_with_its_authority_and_refused_without() {
    let dir = TempDir::new("mqtt-broker");
    let broker = Broker::start_tls(dir.path(), USER, &password("mqtt"));
    let ca = broker.ca_file.clone().unwrap();
    let url = format!("mqtts://127.0.0.1:{}", broker.port);
    let data = TempDir::new("mqtt-tls");
    let node = start_node(
        &data,
        &url,
        &broker.password,
        &[("MQTT_CA_FILE", ca.to_str().unwrap())],
    );
    wait_for_mqtt(&node, "connected", Duration::from_secs(10));
    assert!(wait_for(Duration::from_secs(3), || configs(&broker).len() == OF_NODE));
    drop(node);

    // The system's authorities do not know the test's: refused, and said so.
    let data = TempDir::new("mqtt-tls-refused");
    let node = start_node(&data, &url, &broker.password, &[]);
    let status = wait_for_mqtt(&node, "error", Duration::from_secs(10));
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("TLS") && message.contains("certificate"),
        "{message}"
    );
}

#[test]
fn messages_the_broker_kept_are_passed_over_at_each_connect() {
    let (_dir, broker, data, node, node_id, id) = connected_with_a_camera("mqtt-kept");
    let topic = |camera: &str, object: &str| format!("nvr/{node_id}/{camera}/{object}");

    // A command sent with retain acts once, as it is sent, like any other.
    broker.publish(&topic(&id, "record/set"), b"ON", true);
    assert!(
        wait_for(Duration::from_secs(3), || camera_field(
            &node, &id, "record"
        ) == true),
        "a live command sent with retain did not act"
    );
    node.patch_camera(&id, json!({ "record": false }));
    // Messages too large, kept on topics the node subscribes to: the broker
    // sends them back to back after each connect. Two cost the connection
    // when the second's head came in the same read as the first's end: at
    // about half the connects with two of 66 kB, at each with four.
    for n in 1..=4 {
        let camera = format!("00000000-0000-4000-8000-00000000000{n}");
        broker.publish(&topic(&camera, "online"), &vec![b'x'; 66_000], true);
    }
    drop(node);

    // Started again: the kept command is not applied again, and the two
    // large messages cost no connection.
    let before = connects(&broker, &node_id);
    let node = plain_node(&data, &broker, &[]);
    wait_for_mqtt(&node, "connected", Duration::from_secs(10));
    // With them, the node had dropped the connection and come back each second.
    thread::sleep(Duration::from_secs(4));
    assert_eq!(
        connects(&broker, &node_id) - before,
        1,
        "the node connected again and again\n--- broker ---\n{}\n--- node ---\n{}",
        broker.log(),
        node.logs()
    );
    assert_eq!(mqtt_status(&node)["state"], "connected");
    assert_eq!(
        camera_field(&node, &id, "record"),
        false,
        "the kept record/set ON was applied again\n{}",
        node.logs()
    );
    let logs = node.logs();
    assert!(
        logs.contains("a retained command") && logs.contains("larger than the node takes"),
        "the kept messages were not seen:\n{logs}"
    );

    // Too large at QoS 1 and acknowledged: unacknowledged, 20 of them would
    // fill the broker's window, and it would hold back every command after.
    for _ in 0..25 {
        broker.publish(&topic(&id, "detect/set"), &vec![b'y'; 70_000], false);
    }
    broker.publish(&topic(&id, "record/set"), b"ON", false);
    assert!(
        wait_for(Duration::from_secs(3), || camera_field(
            &node, &id, "record"
        ) == true),
        "record/set ON after 25 messages too large did not arrive\n{}",
        node.logs()
    );
}

#[test]
fn a_minute_of_junk_commands_starves_nothing() {
    let (_dir, broker, data, node, node_id, id) = connected_with_a_camera("mqtt-junk");
    let watch = broker.watch("homeassistant/#");
    let topic = |camera: &str, object: &str| format!("nvr/{node_id}/{camera}/{object}");
    // (Mosquitto refuses control characters in topics: the node's escaping
    // of a newline is tested on its own.)
    let long = "x".repeat(300);
    // 20 a second in all, at QoS 1, each kind on its own connection: a
    // command that changes nothing, a payload that is no command, a long
    // topic that names no camera, an unknown camera.
    let mut junk = [
        (broker.lines(&topic(&id, "record/set")), "OFF"),
        (broker.lines(&topic(&id, "detect/set")), "maybe"),
        (broker.lines(&topic(&long, "record/set")), "ON"),
        (
            broker.lines(&topic("00000000-0000-4000-8000-000000000009", "record/set")),
            "ON",
        ),
    ];
    const EVERY: Duration = Duration::from_millis(50);
    const SENT: u32 = 1200;
    let started = Instant::now();
    let (latencies, unchanged, pings_before) = thread::scope(|scope| {
        scope.spawn(|| {
            for n in 0..SENT {
                let (lines, payload) = &mut junk[n as usize % 4];
                lines.send(payload);
                thread::sleep(
                    (started + EVERY * (n + 1)).saturating_duration_since(Instant::now()),
                );
            }
        });
        // A PATCH shows on the broker within 5 s, three times in the minute.
        let mut latencies = Vec::new();
        for (n, at) in [5, 20, 35].into_iter().enumerate() {
            thread::sleep(Duration::from_secs(at).saturating_sub(started.elapsed()));
            let name = format!("Gate {n}");
            let patched = Instant::now();
            node.patch_camera(&id, json!({ "name": name }));
            watch.expect(
                &format!("the device renamed {name}"),
                Duration::from_secs(5),
                |s| {
                    serde_json::from_slice::<Value>(&s.payload)
                        .is_ok_and(|c| c["device"]["name"] == name.as_str())
                },
            );
            latencies.push(patched.elapsed());
        }
        // From here on only commands that change nothing reach the camera,
        // and only pings keep the link alive (the keep-alive is 30 s).
        thread::sleep(Duration::from_secs(1));
        (
            latencies,
            database_files(data.path()),
            pings(&broker, &node_id),
        )
    });
    let took = started.elapsed();
    eprintln!("{SENT} junk commands in {took:?}; PATCH to broker {latencies:?}");

    // The link stayed up, kept alive by the node's pings.
    assert_eq!(mqtt_status(&node)["state"], "connected");
    let broker_log = broker.log();
    assert_eq!(connects(&broker, &node_id), 1, "{broker_log}");
    let pings_after_patches = pings(&broker, &node_id) - pings_before;
    assert!(
        pings_after_patches >= 1,
        "no ping after the last PATCH, in {took:?} of junk\n{broker_log}"
    );
    // Commands that changed nothing wrote nothing, and updated nothing:
    // only the three renames did. (SQLite itself leaves a page it would
    // write unchanged alone: the files stayed the same before the node
    // skipped such updates too, which it logged, and after which it built
    // its cached views again.)
    assert_eq!(database_files(data.path()), unchanged);
    let logs = node.logs();
    let updates = logs.matches(&format!("updated camera {id}")).count();
    assert_eq!(updates, 3, "camera {id} updated {updates} times");
    // The junk was read, and logged at most once a second, shortened; the
    // lines it held back are counted in the next one.
    let ignored: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("mqtt: ignored"))
        .collect();
    let limit = took.as_secs() as usize + 2;
    assert!(
        (10..=limit).contains(&ignored.len()),
        "{} lines of ignored commands in {took:?}, the first: {:#?}",
        ignored.len(),
        &ignored[..ignored.len().min(5)]
    );
    assert!(ignored.iter().all(|l| l.len() < 300), "{ignored:#?}");
    let counted: u32 = ignored
        .iter()
        .map(|l| {
            let held = l
                .split(" (")
                .last()
                .and_then(|t| t.strip_suffix(" more not logged since the last such line)"));
            1 + held.map_or(0, |n| n.parse::<u32>().unwrap())
        })
        .sum();
    // Three kinds of four are ignored; the last second's may not be counted yet.
    assert!(
        counted > SENT * 3 / 4 - 30,
        "{counted} of {} ignored commands counted: {ignored:#?}",
        SENT * 3 / 4
    );
}

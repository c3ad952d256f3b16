//! The topics and payloads the node publishes for Home Assistant (its MQTT
//! discovery and the states), and what the node makes of a message it
//! receives. Pure functions of a snapshot of the node: every retained
//! message can be built again at any time and compared with what was sent.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::event::{Event, EventView, Kind, format_timestamp};
use crate::mqtt::limit::shorten;

/// Where the node publishes, and as what.
#[derive(Clone, Debug)]
pub struct Names {
    /// `MQTT_TOPIC_PREFIX`: `nvr`.
    pub prefix: String,
    /// `MQTT_DISCOVERY_PREFIX`: `homeassistant`.
    pub discovery: String,
    /// The node's stable id.
    pub node: String,
    pub node_name: String,
    /// `NODE_URL`, without a trailing slash.
    pub node_url: String,
}

/// What Home Assistant is shown of one camera.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CameraState {
    pub id: Uuid,
    pub name: String,
    pub make: String,
    pub model: String,
    pub record: bool,
    pub detect: bool,
    pub online: bool,
    pub moving: bool,
    /// The kinds the camera's events are classified into, each with its
    /// sensor (none when it does not classify).
    pub kinds: Vec<Kind>,
    /// Of those, the kinds of the event under way.
    pub seen: Vec<Kind>,
    /// The newest event with a thumbnail.
    pub snapshot: Option<Uuid>,
    /// Its events not reviewed.
    pub unreviewed: u64,
}

/// What Home Assistant is shown of the node itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeState {
    pub relay_healthy: bool,
    /// Whether alerts go out.
    pub armed: bool,
    pub used_bytes: u64,
    pub budget_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
}

/// Retained messages by topic: discovery and states.
pub type Retained = BTreeMap<String, Vec<u8>>;

impl Names {
    pub fn availability(&self) -> String {
        format!("{}/{}/availability", self.prefix, self.node)
    }

    fn node_topic(&self, object: &str) -> String {
        format!("{}/{}/{object}", self.prefix, self.node)
    }

    fn camera_topic(&self, camera: Uuid, object: &str) -> String {
        format!("{}/{}/{camera}/{object}", self.prefix, self.node)
    }

    /// `nvr/<node>/<cam>/event`: events as they start and end, not retained.
    pub fn event_topic(&self, camera: Uuid) -> String {
        self.camera_topic(camera, "event")
    }

    /// `homeassistant/status`: Home Assistant's birth and will.
    fn home_assistant_status(&self) -> String {
        format!("{}/status", self.discovery)
    }

    /// What the node subscribes to: the switches' commands, Home
    /// Assistant's birth, and its own cameras' retained `online` states
    /// (which name the cameras a broker still shows, deleted ones included).
    pub fn subscriptions(&self) -> Vec<String> {
        vec![
            self.node_topic("alerts/set"),
            self.camera_topic_filter("record/set"),
            self.camera_topic_filter("detect/set"),
            self.camera_topic_filter("online"),
            self.home_assistant_status(),
        ]
    }

    fn camera_topic_filter(&self, object: &str) -> String {
        format!("{}/{}/+/{object}", self.prefix, self.node)
    }

    fn config_topic(&self, component: &str, camera: Option<Uuid>, object: &str) -> String {
        let id = match camera {
            Some(camera) => format!("{}_{camera}", self.node),
            None => self.node.clone(),
        };
        format!("{}/{component}/{id}/{object}/config", self.discovery)
    }

    fn node_device(&self) -> Value {
        json!({
            "identifiers": [self.node_identifier()],
            "name": self.node_name,
            "manufacturer": "nvr-node",
            "model": "NVR node",
            "sw_version": env!("CARGO_PKG_VERSION"),
            "configuration_url": self.node_url,
        })
    }

    fn node_identifier(&self) -> String {
        format!("nvr-node_{}", self.node)
    }

    fn camera_device(&self, camera: &CameraState) -> Value {
        let mut device = json!({
            "identifiers": [format!("{}_{}", self.node_identifier(), camera.id)],
            "name": camera.name,
            "via_device": self.node_identifier(),
            "configuration_url": format!("{}/#camera-{}", self.node_url, camera.id),
        });
        for (key, value) in [("manufacturer", &camera.make), ("model", &camera.model)] {
            if !value.is_empty() {
                device[key] = json!(value);
            }
        }
        device
    }

    /// A discovery config: `fields` plus the unique id, availability and device.
    fn config(&self, camera: Option<&CameraState>, object: &str, mut fields: Value) -> Value {
        let unique_id = match camera {
            Some(camera) => format!("{}_{}_{object}", self.node_identifier(), camera.id),
            None => format!("{}_{object}", self.node_identifier()),
        };
        fields["unique_id"] = json!(unique_id);
        fields["object_id"] = json!(match camera {
            Some(camera) => format!("{}_{object}", camera.name),
            None => format!("{}_{object}", self.node_name),
        });
        fields["availability_topic"] = json!(self.availability());
        fields["device"] = match camera {
            Some(camera) => self.camera_device(camera),
            None => self.node_device(),
        };
        fields
    }
}

/// A kind's word in an entity's name: `Front door Person`.
fn kind_title(kind: Kind) -> &'static str {
    match kind {
        Kind::Motion => "Motion",
        Kind::Person => "Person",
        Kind::Vehicle => "Vehicle",
        Kind::Animal => "Animal",
        Kind::Package => "Package",
    }
}

fn on_off(on: bool) -> &'static [u8] {
    if on { b"ON" } else { b"OFF" }
}

/// Every retained message the node's state calls for.
pub fn retained(names: &Names, node: &NodeState, cameras: &[CameraState]) -> Retained {
    let mut out = node_messages(names, node);
    for camera in cameras {
        out.extend(camera_messages(names, camera));
    }
    out
}

fn node_messages(names: &Names, node: &NodeState) -> Retained {
    let storage = names.node_topic("storage");
    let relay = names.node_topic("relay");
    let alerts = names.node_topic("alerts");
    let size = |object: &str, name: &str, field: &str| {
        let config = names.config(
            None,
            object,
            json!({
                "name": name,
                "state_topic": storage,
                "value_template": format!("{{{{ value_json.{field} }}}}"),
                "device_class": "data_size",
                "unit_of_measurement": "B",
                "state_class": "measurement",
                "entity_category": "diagnostic",
            }),
        );
        (names.config_topic("sensor", None, object), config)
    };
    let configs = [
        size("storage_used", "Recordings storage used", "usedBytes"),
        size("storage_free", "Recordings storage free", "freeBytes"),
        (
            names.config_topic("binary_sensor", None, "relay"),
            names.config(
                None,
                "relay",
                json!({
                    "name": "Stream relay",
                    "state_topic": relay,
                    "device_class": "connectivity",
                    "entity_category": "diagnostic",
                }),
            ),
        ),
        (
            names.config_topic("switch", None, "alerts"),
            names.config(
                None,
                "alerts",
                json!({
                    "name": "Alerts",
                    "state_topic": alerts,
                    "command_topic": names.node_topic("alerts/set"),
                    "icon": "mdi:bell-ring",
                }),
            ),
        ),
    ];
    let mut out: Retained = configs
        .into_iter()
        .map(|(topic, config)| (topic, config.to_string().into_bytes()))
        .collect();
    out.insert(relay, on_off(node.relay_healthy).to_vec());
    out.insert(alerts, on_off(node.armed).to_vec());
    let storage_state = json!({
        "usedBytes": node.used_bytes,
        "budgetBytes": node.budget_bytes,
        "freeBytes": node.free_bytes,
    });
    out.insert(storage, storage_state.to_string().into_bytes());
    out
}

/// A camera's discovery configs and states.
fn camera_messages(names: &Names, camera: &CameraState) -> Retained {
    let id = camera.id;
    let topic = |object: &str| names.camera_topic(id, object);
    let switch = |object: &str, name: &str, icon: &str| {
        json!({
            "name": name,
            "state_topic": topic(object),
            "command_topic": topic(&format!("{object}/set")),
            "icon": icon,
        })
    };
    let event_types: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    let configs = [
        (
            "binary_sensor",
            "motion",
            json!({"name": "Motion", "state_topic": topic("motion"), "device_class": "motion"}),
        ),
        (
            "binary_sensor",
            "online",
            json!({
                "name": "Online",
                "state_topic": topic("online"),
                "device_class": "connectivity",
                "entity_category": "diagnostic",
            }),
        ),
        (
            "switch",
            "record",
            switch("record", "Record", "mdi:record-rec"),
        ),
        (
            "switch",
            "detect",
            switch("detect", "Detect", "mdi:motion-sensor"),
        ),
        (
            "image",
            "snapshot",
            json!({"name": "Last event", "url_topic": topic("snapshot")}),
        ),
        (
            "sensor",
            "unreviewed_events",
            json!({
                "name": "Events not reviewed",
                "state_topic": topic("unreviewed_events"),
                "icon": "mdi:bell-badge-outline",
                "state_class": "measurement",
            }),
        ),
        (
            "event",
            "event",
            json!({
                "name": "Event",
                "state_topic": names.event_topic(id),
                "event_types": event_types,
                // Only an event's start is one in Home Assistant: its end
                // (with the clip) renders nothing and is passed over.
                "value_template": "{% if value_json.type == 'start' %}{{ value_json | to_json }}{% endif %}",
            }),
        ),
    ];
    // One sensor per kind, on while an event of that kind is.
    let kinds = camera.kinds.iter().map(|kind| {
        (
            "binary_sensor",
            kind.name(),
            json!({
                "name": kind_title(*kind),
                "state_topic": topic(kind.name()),
                "device_class": "occupancy",
            }),
        )
    });
    let mut out: Retained = configs
        .into_iter()
        .chain(kinds)
        .map(|(component, object, fields)| {
            let config = names.config(Some(camera), object, fields);
            (
                names.config_topic(component, Some(id), object),
                config.to_string().into_bytes(),
            )
        })
        .collect();
    for (object, on) in [
        ("motion", camera.moving),
        ("online", camera.online),
        ("record", camera.record),
        ("detect", camera.detect),
    ] {
        out.insert(topic(object), on_off(on).to_vec());
    }
    for kind in &camera.kinds {
        let on = camera.seen.contains(kind);
        out.insert(topic(kind.name()), on_off(on).to_vec());
    }
    out.insert(
        topic("unreviewed_events"),
        camera.unreviewed.to_string().into_bytes(),
    );
    if let Some(event) = camera.snapshot {
        out.insert(topic("snapshot"), thumbnail_url(names, event).into_bytes());
    }
    out
}

/// Every retained topic a camera may have, to clear when it is gone.
pub fn camera_topics(names: &Names, camera: Uuid) -> Vec<String> {
    let any = CameraState {
        id: camera,
        kinds: Kind::CLASSIFIED.to_vec(),
        snapshot: Some(Uuid::nil()),
        ..CameraState::default()
    };
    camera_messages(names, &any).into_keys().collect()
}

fn thumbnail_url(names: &Names, event: Uuid) -> String {
    format!("{}/api/events/{event}/thumbnail.jpg", names.node_url)
}

fn clip_url(names: &Names, event: Uuid) -> String {
    format!("{}/api/events/{event}/clip.mp4", names.node_url)
}

/// The event message's payload as an event starts: `score`, `endedAt` and
/// `zones` not yet known.
pub fn event_started(id: Uuid, kind: &str, at_ms: i64) -> Vec<u8> {
    event_payload(
        "start",
        json!({
            "id": id.to_string(),
            "kind": kind,
            "score": null,
            "startedAt": format_timestamp(at_ms),
            "endedAt": null,
            "thumbnailUrl": null,
            "clipUrl": null,
            "zones": null,
            "objects": null,
        }),
    )
}

/// The payload for an event as stored, as it starts or ends (`phase`); the
/// links are there once the files are.
pub fn event_stored(names: &Names, phase: &str, event: &Event) -> Vec<u8> {
    let link = |file: &Option<String>, url: fn(&Names, Uuid) -> String| {
        file.as_ref().map(|_| url(names, event.id))
    };
    // The objects as the API shows them.
    let objects =
        serde_json::to_value(EventView::new(event)).expect("an event serializes")["objects"].take();
    event_payload(
        phase,
        json!({
            "id": event.id.to_string(),
            "kind": event.kind,
            "score": event.score,
            "startedAt": format_timestamp(event.started_at_ms),
            "endedAt": format_timestamp(event.ended_at_ms),
            "thumbnailUrl": link(&event.thumbnail_path, thumbnail_url),
            "clipUrl": link(&event.clip_path, clip_url),
            "zones": event.zones,
            "objects": objects,
        }),
    )
}

fn event_payload(phase: &str, mut fields: Value) -> Vec<u8> {
    fields["type"] = json!(phase);
    // Home Assistant's event entity takes the kind from `event_type`.
    fields["event_type"] = fields["kind"].clone();
    fields.to_string().into_bytes()
}

/// A camera's switch that Home Assistant can set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Switch {
    Record,
    Detect,
}

/// What a received message asks of the node.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// `nvr/<node>/<cam>/record/set` (or `detect/set`) with `ON` or `OFF`.
    Set {
        camera: Uuid,
        switch: Switch,
        on: bool,
    },
    /// `nvr/<node>/alerts/set` with `ON` or `OFF`: arm or disarm alerts.
    Arm(bool),
    /// Home Assistant started again: send it everything.
    HomeAssistantOnline,
    /// A camera's retained `online` state is on the broker.
    CameraSeen(Uuid),
    /// Not for the node, or nothing to do (Home Assistant's will, echoes).
    Nothing,
    /// A command the node refuses, and why (for a log line: the topic
    /// shortened, never the payload).
    Refused(String),
}

/// What the message on `topic` asks; `retained`: the broker's kept copy,
/// sent because the node subscribed (at each connect).
pub fn incoming(names: &Names, topic: &str, payload: &[u8], retained: bool) -> Incoming {
    if topic == names.home_assistant_status() {
        // A kept birth says nothing new: the node sent everything as it connected.
        return if payload == b"online" && !retained {
            Incoming::HomeAssistantOnline
        } else {
            Incoming::Nothing
        };
    }
    let Some(rest) = topic
        .strip_prefix(&names.prefix)
        .and_then(|t| t.strip_prefix('/'))
        .and_then(|t| t.strip_prefix(&names.node))
        .and_then(|t| t.strip_prefix('/'))
    else {
        return Incoming::Nothing;
    };
    if rest == "alerts/set" {
        return match command(topic, payload, retained) {
            Ok(on) => Incoming::Arm(on),
            Err(refused) => refused,
        };
    }
    let Some((camera, object)) = rest.split_once('/') else {
        return Incoming::Nothing;
    };
    let Ok(camera) = camera.parse::<Uuid>() else {
        return Incoming::Refused(format!("{}: not a camera id", shorten(topic)));
    };
    let switch = match object {
        "online" if !payload.is_empty() => return Incoming::CameraSeen(camera),
        "record/set" => Switch::Record,
        "detect/set" => Switch::Detect,
        _ => return Incoming::Nothing,
    };
    match command(topic, payload, retained) {
        Ok(on) => Incoming::Set { camera, switch, on },
        Err(refused) => refused,
    }
}

/// A switch's command: ON or OFF, never a retained one.
fn command(topic: &str, payload: &[u8], retained: bool) -> Result<bool, Incoming> {
    if retained {
        // Stale: it was acted on when it was sent, and it would undo every
        // change made since at each connect.
        return Err(Incoming::Refused(format!(
            "{}: a retained command, which the broker sends again at each connect",
            shorten(topic)
        )));
    }
    match payload {
        b"ON" => Ok(true),
        b"OFF" => Ok(false),
        _ => Err(Incoming::Refused(format!(
            "{}: a {}-byte payload that is neither ON nor OFF",
            shorten(topic),
            payload.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SeenObject;
    use crate::media::area::Area;

    fn names() -> Names {
        Names {
            prefix: "nvr".into(),
            discovery: "homeassistant".into(),
            node: "n1".into(),
            node_name: "garage".into(),
            node_url: "http://nvr.lan:8080".into(),
        }
    }

    fn camera(name: &str) -> CameraState {
        CameraState {
            id: Uuid::new_v4(),
            name: name.into(),
            record: true,
            kinds: Kind::CLASSIFIED.to_vec(),
            snapshot: Some(Uuid::new_v4()),
            ..CameraState::default()
        }
    }

    /// Whether `topic` matches the MQTT filter `filter` (`+` only).
    fn matches(filter: &str, topic: &str) -> bool {
        let (f, t): (Vec<_>, Vec<_>) = (filter.split('/').collect(), topic.split('/').collect());
        f.len() == t.len() && f.iter().zip(&t).all(|(f, t)| *f == "+" || f == t)
    }

    #[test]
    fn discovery_is_consistent_with_the_states() {
        let names = names();
        let mut yard = camera("Yard");
        // Classifying into two kinds, a person seen.
        yard.kinds = vec![Kind::Person, Kind::Animal];
        yard.seen = vec![Kind::Person];
        yard.unreviewed = 12;
        let cameras = [camera("Front door"), yard];
        let node = NodeState {
            relay_healthy: true,
            armed: true,
            used_bytes: 5,
            budget_bytes: None,
            free_bytes: Some(7),
        };
        let all = retained(&names, &node, &cameras);
        let configs: Vec<(&String, Value)> = all
            .iter()
            .filter(|(t, _)| t.starts_with("homeassistant/"))
            .map(|(t, p)| (t, serde_json::from_slice(p).unwrap()))
            .collect();
        assert_eq!(configs.len(), 4 + 7 * cameras.len() + 4 + 2);
        let mut unique_ids: Vec<&str> = configs
            .iter()
            .map(|(_, c)| c["unique_id"].as_str().unwrap())
            .collect();
        unique_ids.sort();
        unique_ids.dedup();
        assert_eq!(unique_ids.len(), configs.len(), "unique ids are unique");
        let node_device = names.node_identifier();
        for (topic, config) in &configs {
            let levels: Vec<&str> = topic.split('/').collect();
            assert_eq!(levels.len(), 5, "{topic}");
            assert!(
                levels[1..4].iter().all(|l| l
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))),
                "{topic}: discovery ids are [a-zA-Z0-9_-]"
            );
            assert_eq!(config["availability_topic"], "nvr/n1/availability");
            let device = &config["device"];
            let identifier = device["identifiers"][0].as_str().unwrap();
            if identifier != node_device {
                assert_eq!(device["via_device"], node_device.as_str(), "{topic}");
                assert!(
                    device["configuration_url"]
                        .as_str()
                        .unwrap()
                        .starts_with("http://nvr.lan:8080/#camera-")
                );
            }
            for key in ["state_topic", "url_topic"] {
                if let Some(state) = config[key].as_str() {
                    assert!(
                        all.contains_key(state) || state.ends_with("/event"),
                        "{topic}: {key} {state} is published"
                    );
                }
            }
            if let Some(command) = config["command_topic"].as_str() {
                assert!(
                    names.subscriptions().iter().any(|f| matches(f, command)),
                    "{topic}: {command} is subscribed"
                );
            }
        }
        let front = cameras[0].id;
        assert_eq!(all[&format!("nvr/n1/{front}/record")], b"ON");
        assert_eq!(all[&format!("nvr/n1/{front}/motion")], b"OFF");
        assert_eq!(
            String::from_utf8_lossy(&all[&format!("nvr/n1/{front}/snapshot")]),
            format!(
                "http://nvr.lan:8080/api/events/{}/thumbnail.jpg",
                cameras[0].snapshot.unwrap()
            )
        );
        for kind in ["person", "vehicle", "animal", "package"] {
            assert_eq!(all[&format!("nvr/n1/{front}/{kind}")], b"OFF", "{kind}");
        }
        let yard = cameras[1].id;
        assert_eq!(all[&format!("nvr/n1/{yard}/person")], b"ON");
        assert_eq!(all[&format!("nvr/n1/{yard}/animal")], b"OFF");
        assert!(!all.contains_key(&format!("nvr/n1/{yard}/vehicle")));
        let sensor: Value = serde_json::from_slice(
            &all[&format!("homeassistant/binary_sensor/n1_{yard}/person/config")],
        )
        .unwrap();
        assert_eq!(sensor["name"], "Person", "shown as Yard Person");
        assert_eq!(sensor["device_class"], "occupancy");
        assert_eq!(sensor["state_topic"], format!("nvr/n1/{yard}/person"));
        // The count not reviewed: a plain number, none at first.
        assert_eq!(all[&format!("nvr/n1/{front}/unreviewed_events")], b"0");
        assert_eq!(all[&format!("nvr/n1/{yard}/unreviewed_events")], b"12");
        let count: Value = serde_json::from_slice(
            &all[&format!("homeassistant/sensor/n1_{yard}/unreviewed_events/config")],
        )
        .unwrap();
        assert_eq!(count["name"], "Events not reviewed");
        assert_eq!(
            count["state_topic"],
            format!("nvr/n1/{yard}/unreviewed_events")
        );
        assert_eq!(count["state_class"], "measurement");
        assert_eq!(count["icon"], "mdi:bell-badge-outline");
        assert_eq!(count["object_id"], "Yard_unreviewed_events");
        let event: Value =
            serde_json::from_slice(&all[&format!("homeassistant/event/n1_{yard}/event/config")])
                .unwrap();
        assert_eq!(
            event["event_types"],
            json!(["motion", "person", "vehicle", "animal", "package"])
        );
        // Classifying turned off, its sensors go.
        let mut quiet = cameras[1].clone();
        quiet.kinds.clear();
        quiet.seen.clear();
        let fewer = retained(&names, &node, &[quiet]);
        assert!(
            !fewer.keys().any(|t| ["person", "animal"]
                .iter()
                .any(|k| t.ends_with(&format!("/{k}")) || t.ends_with(&format!("/{k}/config")))),
            "{:?}",
            fewer.keys()
        );
        assert_eq!(all["nvr/n1/relay"], b"ON");
        assert_eq!(all["nvr/n1/alerts"], b"ON");
        let alerts: Value =
            serde_json::from_slice(&all["homeassistant/switch/n1/alerts/config"]).unwrap();
        assert_eq!(alerts["command_topic"], "nvr/n1/alerts/set");
        assert_eq!(alerts["name"], "Alerts");
        let storage: Value = serde_json::from_slice(&all["nvr/n1/storage"]).unwrap();
        assert_eq!(
            storage,
            json!({"usedBytes": 5, "budgetBytes": null, "freeBytes": 7})
        );
        // Everything of a camera, and nothing else, is what goes when it goes.
        let mut of_front: Vec<String> = all
            .keys()
            .filter(|t| t.contains(&front.to_string()))
            .cloned()
            .collect();
        of_front.sort();
        assert_eq!(camera_topics(&names, front), of_front);
    }

    #[test]
    fn event_messages() {
        let names = names();
        let id = Uuid::new_v4();
        let start: Value = serde_json::from_slice(&event_started(id, "motion", 0)).unwrap();
        assert_eq!(start["type"], "start");
        assert_eq!(start["event_type"], "motion");
        assert_eq!(start["id"], id.to_string());
        assert_eq!(start["startedAt"], "1970-01-01T00:00:00.000Z");
        assert!(start["endedAt"].is_null() && start["clipUrl"].is_null());
        assert!(start["zones"].is_null(), "not known yet");
        assert!(start["objects"].is_null(), "not known yet");
        let event = Event {
            id,
            camera_id: Uuid::new_v4(),
            kind: "person".into(),
            score: 0.5,
            started_at_ms: 1000,
            ended_at_ms: 2000,
            clip_status: "local".into(),
            clip_path: Some("clips/a.mp4".into()),
            thumbnail_path: None,
            zones: vec!["Drive".into()],
            in_progress: false,
            reviewed: false,
            keep: false,
            objects: vec![SeenObject {
                kind: Kind::Person,
                score: 0.87654,
                area: Area::new(0.1, 0.2, 0.35, 0.9),
                first_seen_ms: 1200,
                last_seen_ms: 1800,
            }],
            loitering: false,
        };
        let end: Value = serde_json::from_slice(&event_stored(&names, "end", &event)).unwrap();
        assert_eq!(end["type"], "end");
        assert_eq!(end["event_type"], "person");
        assert_eq!(
            end["clipUrl"],
            format!("http://nvr.lan:8080/api/events/{id}/clip.mp4")
        );
        assert!(end["thumbnailUrl"].is_null());
        assert_eq!(end["zones"], json!(["Drive"]));
        // As the API shows them.
        assert_eq!(
            end["objects"],
            json!([{
                "kind": "person",
                "score": 0.877,
                "box": [0.1, 0.2, 0.35, 0.9],
                "firstSeenAt": "1970-01-01T00:00:01.200Z",
                "lastSeenAt": "1970-01-01T00:00:01.800Z",
            }])
        );
    }

    #[test]
    fn what_comes_in() {
        let names = names();
        let cam = Uuid::new_v4();
        let set = |object: &str| format!("nvr/n1/{cam}/{object}");
        let record_on = Incoming::Set {
            camera: cam,
            switch: Switch::Record,
            on: true,
        };
        let long = format!("nvr/n1/{}\nforged/record/set", "x".repeat(200));
        let table: [(String, &[u8], bool, Incoming); 19] = [
            ("nvr/n1/alerts/set".into(), b"OFF", false, Incoming::Arm(false)),
            ("nvr/n1/alerts/set".into(), b"ON", false, Incoming::Arm(true)),
            (
                "nvr/n1/alerts/set".into(),
                b"ON",
                true,
                Incoming::Refused(
                    "nvr/n1/alerts/set: a retained command, which the broker sends again at each connect"
                        .into(),
                ),
            ),
            (set("record/set"), b"ON", false, record_on),
            (
                set("detect/set"),
                b"OFF",
                false,
                Incoming::Set {
                    camera: cam,
                    switch: Switch::Detect,
                    on: false,
                },
            ),
            (
                set("record/set"),
                b"ON",
                true,
                Incoming::Refused(format!(
                    "{}: a retained command, which the broker sends again at each connect",
                    set("record/set")
                )),
            ),
            (
                set("detect/set"),
                b"on",
                false,
                Incoming::Refused(format!(
                    "{}: a 2-byte payload that is neither ON nor OFF",
                    set("detect/set")
                )),
            ),
            (
                set("record/set"),
                b"",
                false,
                Incoming::Refused(format!(
                    "{}: a 0-byte payload that is neither ON nor OFF",
                    set("record/set")
                )),
            ),
            (
                "nvr/n1/not-a-uuid/record/set".into(),
                b"ON",
                false,
                Incoming::Refused("nvr/n1/not-a-uuid/record/set: not a camera id".into()),
            ),
            (
                long.clone(),
                b"ON",
                false,
                Incoming::Refused(format!("{}: not a camera id", shorten(&long))),
            ),
            (set("online"), b"ON", false, Incoming::CameraSeen(cam)),
            // What the node reads back on connect: its cameras' kept states.
            (set("online"), b"ON", true, Incoming::CameraSeen(cam)),
            (set("online"), b"", false, Incoming::Nothing),
            (set("record"), b"ON", false, Incoming::Nothing),
            (
                format!("nvr/n2/{cam}/record/set"),
                b"ON",
                false,
                Incoming::Nothing,
            ),
            (
                "homeassistant/status".into(),
                b"online",
                false,
                Incoming::HomeAssistantOnline,
            ),
            (
                "homeassistant/status".into(),
                b"online",
                true,
                Incoming::Nothing,
            ),
            (
                "homeassistant/status".into(),
                b"offline",
                false,
                Incoming::Nothing,
            ),
            (
                "homeassistant/status".into(),
                b"offline",
                true,
                Incoming::Nothing,
            ),
        ];
        for (topic, payload, retained, want) in table {
            assert_eq!(
                incoming(&names, &topic, payload, retained),
                want,
                "{topic:.80} {payload:?} retained {retained}"
            );
        }
    }
}

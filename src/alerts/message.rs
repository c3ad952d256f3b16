//! What an alert says, kept in the outbox as it was when the alert was
//! made, and its words and links as each destination sends them. The links
//! are made at each send from the node's address (`NODE_URL`), so a changed
//! address applies to alerts still waiting.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The event's kind is known.
    Alert,
    /// Its end, with its clip, adding a kind or a zone.
    Update,
    /// A person asked for a test.
    Test,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub phase: Phase,
    pub camera_id: String,
    pub camera_name: String,
    /// The event as the API shows it (`GET /api/events`); for a test, an
    /// example one of no camera.
    pub event: Value,
}

/// Minutes a camera is snoozed from a notification's button.
pub const SNOOZE_MINUTES: u32 = 60;

impl Message {
    pub fn event_id(&self) -> &str {
        self.event["id"].as_str().unwrap_or_default()
    }

    pub fn kind(&self) -> &str {
        self.event["kind"].as_str().unwrap_or("motion")
    }

    pub fn zones(&self) -> Vec<&str> {
        self.event["zones"]
            .as_array()
            .map(|zones| zones.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// "Person at Front door"; "Person loitering at Front door" once the
    /// event loiters.
    pub fn title(&self, node_name: &str) -> String {
        if self.phase == Phase::Test {
            return format!("Test alert from {node_name}");
        }
        let kind = self.kind();
        let mut capital = kind[..1].to_ascii_uppercase();
        capital.push_str(&kind[1..]);
        if self.event["loitering"] == true {
            capital.push_str(" loitering");
        }
        format!("{capital} at {}", self.camera_name)
    }

    /// A line under the title.
    pub fn body(&self) -> String {
        let zones = self.zones().join(", ");
        match self.phase {
            Phase::Test => "Alerts from this node reach you here.".to_owned(),
            Phase::Alert if zones.is_empty() => "Tap to see it.".to_owned(),
            Phase::Alert => format!("In {zones}. Tap to see it."),
            Phase::Update if zones.is_empty() => "It has gone; its clip is ready.".to_owned(),
            Phase::Update => format!("It went through {zones}; its clip is ready."),
        }
    }

    /// A person comes first.
    pub fn urgent(&self) -> bool {
        self.kind() == "person"
    }

    pub fn links(&self, base: &str) -> Links {
        let event = self.event_id();
        Links {
            event: format!("{base}/review?event={event}"),
            thumbnail: format!("{base}/api/events/{event}/thumbnail.jpg"),
            clip: format!("{base}/api/events/{event}/clip.mp4"),
            snooze: format!("{base}/api/cameras/{}/snooze", self.camera_id),
        }
    }
}

/// Where a person goes from an alert.
pub struct Links {
    /// The event's page in the node's UI.
    pub event: String,
    pub thumbnail: String,
    pub clip: String,
    /// `POST {"minutes": N}` snoozes the camera.
    pub snooze: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_and_links() {
        let camera = "c1";
        let mut message = Message {
            phase: Phase::Alert,
            camera_id: camera.into(),
            camera_name: "Front door".into(),
            event: json!({"id": "e1", "kind": "person", "zones": ["Porch", "Path"]}),
        };
        assert_eq!(message.title("n"), "Person at Front door");
        assert_eq!(message.body(), "In Porch, Path. Tap to see it.");
        assert!(message.urgent());
        let links = message.links("http://nvr.lan:8080");
        assert_eq!(links.event, "http://nvr.lan:8080/review?event=e1");
        assert_eq!(
            links.thumbnail,
            "http://nvr.lan:8080/api/events/e1/thumbnail.jpg"
        );
        assert_eq!(
            links.snooze,
            format!("http://nvr.lan:8080/api/cameras/{camera}/snooze")
        );
        message.event["loitering"] = json!(true);
        assert_eq!(message.title("n"), "Person loitering at Front door");
        message.phase = Phase::Update;
        message.event = json!({"id": "e1", "kind": "vehicle", "zones": []});
        assert_eq!(message.title("n"), "Vehicle at Front door");
        assert_eq!(message.body(), "It has gone; its clip is ready.");
        assert!(!message.urgent());
        message.phase = Phase::Test;
        assert_eq!(message.title("Shed"), "Test alert from Shed");
        let kept: Message =
            serde_json::from_str(&serde_json::to_string(&message).unwrap()).unwrap();
        assert_eq!(kept, message);
    }
}

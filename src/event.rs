//! Detection events as stored: what a camera saw, when, and where its clip is.

use std::path::{Component, Path};

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::error::Error;
use crate::json_body::object;
use crate::media::area::Area;

/// The most zones a camera has, so also the most an event enters.
pub const MAX_ZONES: usize = 8;
const MAX_ZONE_NAME_CHARS: usize = 32;

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: Uuid,
    pub camera_id: Uuid,
    pub kind: String,
    pub score: f64,
    /// Milliseconds since the Unix epoch, UTC.
    pub started_at_ms: i64,
    pub ended_at_ms: i64,
    pub clip_status: String,
    /// The clip file, relative to `DATA_DIR`.
    pub clip_path: Option<String>,
    /// The thumbnail (JPEG), relative to `DATA_DIR`.
    pub thumbnail_path: Option<String>,
    /// The names of the zones what moved entered; none on a camera without zones.
    pub zones: Vec<String>,
    /// It goes on: `ended_at_ms` is its latest moment so far, and its kind
    /// may still change.
    pub in_progress: bool,
    /// A person marked it seen; false when it is made.
    pub reviewed: bool,
    /// A person kept it: no rule deletes it or its files.
    pub keep: bool,
    /// What the classifier saw in it, each thing once; none in an event
    /// not classified or posted.
    pub objects: Vec<SeenObject>,
    /// A person or vehicle stayed in a zone longer than the zone allows
    /// (its `loiterSeconds`).
    pub loitering: bool,
}

/// A thing an event saw: its kind, its best score, where it was then, and
/// when it was first and last seen (ms since the Unix epoch, UTC).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenObject {
    pub kind: Kind,
    pub score: f32,
    pub area: Area,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
}

/// An event as the API shows it (and alerts and webhooks send it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView<'a> {
    id: String,
    camera_id: String,
    kind: &'a str,
    score: f64,
    started_at: String,
    ended_at: String,
    clip_status: &'a str,
    /// Where the clip plays from, once it is cut; null before or without one.
    clip_url: Option<String>,
    thumbnail_url: Option<String>,
    /// The zones what moved entered.
    zones: &'a [String],
    /// It goes on: `endedAt` is its latest moment so far.
    in_progress: bool,
    /// A person marked it seen.
    reviewed: bool,
    /// A person kept it: no rule deletes it or its clip.
    keep: bool,
    objects: Vec<ObjectView>,
    loitering: bool,
}

/// An object as the API shows it: `box` is left, top, right and bottom,
/// as shares of the picture (Frigate's order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectView {
    kind: &'static str,
    score: f64,
    #[serde(rename = "box")]
    area: [f64; 4],
    first_seen_at: String,
    last_seen_at: String,
}

impl ObjectView {
    fn new(seen: &SeenObject) -> ObjectView {
        let share = |x: f32| (f64::from(x) * 10_000.0).round() / 10_000.0;
        let a = seen.area;
        ObjectView {
            kind: seen.kind.name(),
            score: (f64::from(seen.score) * 1000.0).round() / 1000.0,
            area: [share(a.left), share(a.top), share(a.right), share(a.bottom)],
            first_seen_at: format_timestamp(seen.first_seen_ms),
            last_seen_at: format_timestamp(seen.last_seen_ms),
        }
    }
}

impl<'a> EventView<'a> {
    pub fn new(event: &'a Event) -> EventView<'a> {
        EventView {
            id: event.id.to_string(),
            camera_id: event.camera_id.to_string(),
            kind: &event.kind,
            score: event.score,
            started_at: format_timestamp(event.started_at_ms),
            ended_at: format_timestamp(event.ended_at_ms),
            clip_status: &event.clip_status,
            clip_url: event
                .clip_path
                .as_ref()
                .map(|_| format!("/api/events/{}/clip.mp4", event.id)),
            thumbnail_url: event
                .thumbnail_path
                .as_ref()
                .map(|_| format!("/api/events/{}/thumbnail.jpg", event.id)),
            zones: &event.zones,
            in_progress: event.in_progress,
            reviewed: event.reviewed,
            keep: event.keep,
            objects: event.objects.iter().map(ObjectView::new).collect(),
            loitering: event.loitering,
        }
    }
}

/// Around an event, the recording its clip is cut from: this long before
/// its start and after its end.
pub const CLIP_MARGIN_MS: i64 = 5_000;

/// The longest event a clip covers: motion events end at it, and a posted
/// event's clip stops this long after its start.
pub const LONGEST_EVENT_MS: i64 = 5 * 60_000;

/// `2026-11-22T10:04:05.123Z`: ISO 8601, UTC, milliseconds.
pub fn format_timestamp(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

/// A zone's name (`field`): trimmed, 1 to 32 characters, no control characters.
pub fn checked_zone_name(field: &str, value: &Value) -> Result<String, Error> {
    let Value::String(name) = value else {
        return Err(Error::bad_request(format!("{field} must be a string")));
    };
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_ZONE_NAME_CHARS {
        return Err(Error::bad_request(format!(
            "{field} must be 1 to {MAX_ZONE_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::bad_request(format!(
            "{field} must not contain control characters"
        )));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_event(body: serde_json::Value) -> Result<NewEvent, Error> {
        NewEvent::from_json(body.to_string().as_bytes())
    }

    #[test]
    fn valid_events() {
        let id = Uuid::new_v4();
        let event = new_event(serde_json::json!({
            "cameraId": id.to_string(), "kind": "person", "score": 0.87,
            "startedAt": "2026-11-22T10:04:05.123Z", "endedAt": "2026-11-22T10:04:09.000Z",
            "clipPath": "clips/2026/a.mp4", "extra": 1,
        }))
        .unwrap();
        assert_eq!(
            event,
            NewEvent {
                camera_id: id,
                kind: "person".into(),
                score: 0.87,
                started_at_ms: 1_795_341_845_123,
                ended_at_ms: 1_795_341_849_000,
                clip_path: Some("clips/2026/a.mp4".into()),
                zones: Vec::new(),
            }
        );
        let bounds = new_event(serde_json::json!({
            "cameraId": id.to_string(), "kind": "package", "score": 1,
            "startedAt": "2026-11-22T10:04:05Z", "endedAt": "2026-11-22T10:04:05Z",
        }))
        .unwrap();
        assert_eq!((bounds.score, bounds.clip_path), (1.0, None));
        let zoned = new_event(serde_json::json!({
            "cameraId": id.to_string(), "kind": "person", "score": 0.5,
            "startedAt": "2026-11-22T10:04:05Z", "endedAt": "2026-11-22T10:04:05Z",
            "zones": [" Driveway", "Door"],
        }))
        .unwrap();
        assert_eq!(zoned.zones, ["Driveway", "Door"], "names trimmed, in order");
        let most: Vec<String> = (0..8).map(|i| format!("z{i}")).collect();
        let eight = new_event(serde_json::json!({
            "cameraId": id.to_string(), "kind": "person", "score": 0.5,
            "startedAt": "2026-11-22T10:04:05Z", "endedAt": "2026-11-22T10:04:05Z",
            "zones": most, "clipPath": null,
        }))
        .unwrap();
        assert_eq!(eight.zones.len(), 8);
    }

    #[test]
    fn marks_and_reviewed_before() {
        let marks = |body: &str| Marks::from_json(body.as_bytes()).map_err(|e| e.message);
        let table: [(&str, Result<Marks, String>); 6] = [
            (
                r#"{"reviewed":true}"#,
                Ok(Marks {
                    reviewed: Some(true),
                    keep: None,
                }),
            ),
            (
                r#"{"keep":false,"reviewed":false,"other":1}"#,
                Ok(Marks {
                    reviewed: Some(false),
                    keep: Some(false),
                }),
            ),
            (r#"{"keep":null}"#, Err("keep must be true or false".into())),
            (
                r#"{"reviewed":1}"#,
                Err("reviewed must be true or false".into()),
            ),
            (
                r#"{"zones":[]}"#,
                Err("reviewed or keep is required".into()),
            ),
            ("true", Err("body must be a JSON object".into())),
        ];
        for (body, want) in table {
            assert_eq!(marks(body), want, "{body}");
        }
    }

    #[test]
    fn invalid_events() {
        let good = serde_json::json!({
            "cameraId": Uuid::new_v4().to_string(), "kind": "motion", "score": 0.5,
            "startedAt": "2026-11-22T10:04:05.123Z", "endedAt": "2026-11-22T10:04:06.123Z",
        });
        let nine: Vec<String> = (0..9).map(|i| format!("z{i}")).collect();
        let table: [(&str, serde_json::Value, &str); 31] = [
            (
                "zones",
                "Driveway".into(),
                "zones must be an array of at most 8 zone names",
            ),
            (
                "zones",
                nine.into(),
                "zones must be an array of at most 8 zone names",
            ),
            ("zones", serde_json::json!([1]), "zones[0] must be a string"),
            (
                "zones",
                serde_json::json!(["a", ""]),
                "zones[1] must be 1 to 32 characters",
            ),
            (
                "zones",
                serde_json::json!(["x".repeat(33)]),
                "zones[0] must be 1 to 32 characters",
            ),
            (
                "zones",
                serde_json::json!(["a\u{7}"]),
                "zones[0] must not contain control characters",
            ),
            (
                "zones",
                serde_json::json!(["Door", "Door "]),
                "zones[1] must not name a zone twice",
            ),
            ("cameraId", serde_json::Value::Null, "cameraId is required"),
            ("cameraId", "cam-1".into(), "cameraId must be a camera id"),
            (
                "kind",
                "dog".into(),
                "kind must be one of motion, person, vehicle, animal, package",
            ),
            ("kind", 3.into(), "kind must be a string"),
            ("score", 1.5.into(), "score must be a number from 0 to 1"),
            ("score", (-0.1).into(), "score must be a number from 0 to 1"),
            ("score", "0.5".into(), "score must be a number from 0 to 1"),
            ("score", serde_json::Value::Null, "score is required"),
            (
                "startedAt",
                "yesterday".into(),
                "startedAt must be an ISO 8601 UTC time",
            ),
            (
                "startedAt",
                "2026-11-22 10:04:05".into(),
                "startedAt must be an ISO 8601 UTC time",
            ),
            (
                "endedAt",
                "2026-11-22T10:04:05.000Z".into(),
                "endedAt must not be before startedAt",
            ),
            ("endedAt", serde_json::Value::Null, "endedAt is required"),
            (
                "clipPath",
                "/etc/passwd".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "../nvr-node.db".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips/../../x.mp4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "nvr-node.db".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips/a.avi".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips.mp4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips/.mp4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "./clips/a.mp4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "clips/a.MP4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
            (
                "clipPath",
                "elsewhere/a.mp4".into(),
                "clipPath must name an .mp4 file below clips/",
            ),
        ];
        for (field, value, message) in table {
            let mut body = good.clone();
            body[field] = value;
            let err = new_event(body).expect_err(field);
            assert!(err.message.contains(message), "{field}: {}", err.message);
        }
        assert!(NewEvent::from_json(b"[]").is_err());
    }

    #[test]
    fn timestamps() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_timestamp(1_795_341_845_123),
            "2026-11-22T10:04:05.123Z"
        );
    }
}

/// What an event saw: motion, or the kind of thing that moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Motion,
    Person,
    Vehicle,
    Animal,
    Package,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Motion,
        Kind::Person,
        Kind::Vehicle,
        Kind::Animal,
        Kind::Package,
    ];
    /// The kinds the classifier tells apart: all but `motion`.
    pub const CLASSIFIED: [Kind; 4] = [Kind::Person, Kind::Vehicle, Kind::Animal, Kind::Package];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Motion => "motion",
            Kind::Person => "person",
            Kind::Vehicle => "vehicle",
            Kind::Animal => "animal",
            Kind::Package => "package",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// `field`: a JSON array of distinct names of `allowed` kinds, sorted.
pub fn kind_names(field: &str, value: &Value, allowed: &[Kind]) -> Result<Vec<Kind>, Error> {
    let names = || {
        let names: Vec<&str> = allowed.iter().map(|k| k.name()).collect();
        names.join(", ")
    };
    let Value::Array(items) = value else {
        return Err(Error::bad_request(format!(
            "{field} must be an array of names from {}",
            names()
        )));
    };
    let mut kinds = Vec::with_capacity(items.len());
    for item in items {
        let kind = item
            .as_str()
            .and_then(Kind::from_name)
            .filter(|k| allowed.contains(k))
            .ok_or_else(|| Error::bad_request(format!("{field} may only name {}", names())))?;
        if kinds.contains(&kind) {
            return Err(Error::bad_request(format!(
                "{field} must not name a kind twice"
            )));
        }
        kinds.push(kind);
    }
    kinds.sort();
    Ok(kinds)
}

/// A kind is shown by its name.
impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A validated `POST /api/events` body.
#[derive(Debug, PartialEq)]
pub struct NewEvent {
    pub camera_id: Uuid,
    pub kind: String,
    pub score: f64,
    pub started_at_ms: i64,
    pub ended_at_ms: i64,
    /// An `.mp4` below `clips/`, relative to `DATA_DIR`, without `..`.
    pub clip_path: Option<String>,
    /// Names of zones, at most 8, distinct.
    pub zones: Vec<String>,
}

/// A validated `PATCH /api/events/{id}` body: the marks to set, at least one.
#[derive(Debug, PartialEq)]
pub struct Marks {
    pub reviewed: Option<bool>,
    pub keep: Option<bool>,
}

impl Marks {
    pub fn from_json(body: &[u8]) -> Result<Marks, Error> {
        let fields = object(body)?;
        let flag = |name: &str| match fields.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Error::bad_request(format!("{name} must be true or false"))),
        };
        let marks = Marks {
            reviewed: flag("reviewed")?,
            keep: flag("keep")?,
        };
        if marks.reviewed.is_none() && marks.keep.is_none() {
            return Err(Error::bad_request("reviewed or keep is required"));
        }
        Ok(marks)
    }
}

/// A camera's id as a client gives it (`cameraId`).
pub fn camera_id(text: &str) -> Result<Uuid, Error> {
    Uuid::try_parse(text).map_err(|_| Error::bad_request("cameraId must be a camera id (a UUID)"))
}

impl NewEvent {
    pub fn from_json(body: &[u8]) -> Result<NewEvent, Error> {
        let fields = object(body)?;
        let text = |name: &str| match fields.get(name) {
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            None | Some(Value::Null) => Ok(None),
            Some(_) => Err(Error::bad_request(format!("{name} must be a string"))),
        };
        let required = |name: &str| {
            text(name)?.ok_or_else(|| Error::bad_request(format!("{name} is required")))
        };
        let camera_id = camera_id(required("cameraId")?)?;
        let kind = required("kind")?;
        if Kind::from_name(kind).is_none() {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            return Err(Error::bad_request(format!(
                "kind must be one of {}",
                names.join(", ")
            )));
        }
        let score = match fields.get("score") {
            Some(Value::Number(n)) => n.as_f64().filter(|s| (0.0..=1.0).contains(s)),
            None | Some(Value::Null) => return Err(Error::bad_request("score is required")),
            Some(_) => None,
        }
        .ok_or_else(|| Error::bad_request("score must be a number from 0 to 1"))?;
        let started_at_ms = parse_timestamp("startedAt", required("startedAt")?)?;
        let ended_at_ms = parse_timestamp("endedAt", required("endedAt")?)?;
        if ended_at_ms < started_at_ms {
            return Err(Error::bad_request("endedAt must not be before startedAt"));
        }
        let clip_path = text("clipPath")?.map(checked_clip_path).transpose()?;
        let zones = match fields.get("zones") {
            None | Some(Value::Null) => Vec::new(),
            Some(zones) => checked_zones(zones)?,
        };
        Ok(NewEvent {
            camera_id,
            kind: kind.to_owned(),
            score,
            started_at_ms,
            ended_at_ms,
            clip_path,
            zones,
        })
    }
}

/// `zones`: at most 8 distinct zone names. They need not be the camera's
/// zones now: a detector may post an event from before a zone was renamed.
fn checked_zones(value: &Value) -> Result<Vec<String>, Error> {
    let Value::Array(items) = value else {
        return Err(Error::bad_request(format!(
            "zones must be an array of at most {MAX_ZONES} zone names"
        )));
    };
    if items.len() > MAX_ZONES {
        return Err(Error::bad_request(format!(
            "zones must be an array of at most {MAX_ZONES} zone names"
        )));
    }
    let mut zones: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = checked_zone_name(&format!("zones[{i}]"), item)?;
        if zones.contains(&name) {
            return Err(Error::bad_request(format!(
                "zones[{i}] must not name a zone twice"
            )));
        }
        zones.push(name);
    }
    Ok(zones)
}

/// Milliseconds since the epoch from `2026-11-22T10:04:05.123Z` (UTC, `Z`).
pub fn parse_timestamp(field: &str, text: &str) -> Result<i64, Error> {
    let bad = || {
        Error::bad_request(format!(
            "{field} must be an ISO 8601 UTC time like 2026-11-22T10:04:05.123Z"
        ))
    };
    let time = humantime::parse_rfc3339(text).map_err(|_| bad())?;
    let since_epoch = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| bad())?;
    i64::try_from(since_epoch.as_millis()).map_err(|_| bad())
}

/// A clip path a detector on this machine may give: an `.mp4` below
/// `clips/` in the data folder, named without `..` (the file itself is
/// opened, links refused, when the event is taken, served and uploaded).
fn checked_clip_path(path: &str) -> Result<String, Error> {
    let bad = || {
        Error::bad_request("clipPath must name an .mp4 file below clips/ in DATA_DIR, without ..")
    };
    if path.len() > 1024 || path.chars().any(char::is_control) {
        return Err(bad());
    }
    let mut components = Path::new(path).components();
    let under_clips = components.next() == Some(Component::Normal("clips".as_ref()))
        && components.all(|c| matches!(c, Component::Normal(_)));
    if under_clips && Path::new(path).extension().is_some_and(|e| e == "mp4") {
        Ok(path.to_owned())
    } else {
        Err(bad())
    }
}

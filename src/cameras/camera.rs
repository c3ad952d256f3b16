//! Cameras as the node knows them, and the validation of what clients send.

pub mod account;
mod areas;

use std::net::Ipv4Addr;

use serde_json::{Map, Value};
use uuid::Uuid;

use crate::cameras::rtsp_url;
use crate::error::Error;
use crate::event::{Kind, kind_names};
use crate::json_body::{field, object, optional_bool, optional_str};
use crate::media::polygon::Polygon;
pub use areas::{MAX_MASKS, MAX_POINTS, Zone, checked_masks, checked_zones};

/// A stored camera, with its stream addresses. Never serialized as is: the
/// URLs carry credentials.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    pub id: Uuid,
    pub settings: Settings,
    /// None until a probe succeeds.
    pub capabilities: Option<Capabilities>,
}

/// What a probe found in the main stream.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    pub video_codec: String,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_codec: Option<String>,
}

/// How eagerly motion is detected (`detectSensitivity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sensitivity {
    Low,
    #[default]
    Medium,
    High,
}

impl Sensitivity {
    pub fn name(self) -> &'static str {
        match self {
            Sensitivity::Low => "low",
            Sensitivity::Medium => "medium",
            Sensitivity::High => "high",
        }
    }

    pub fn from_name(name: &str) -> Option<Sensitivity> {
        [Sensitivity::Low, Sensitivity::Medium, Sensitivity::High]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// Whose motion detection a camera's events start on (`motionSource`):
/// the node's own detector, the camera's (its ONVIF events), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MotionSource {
    Node,
    Camera,
    Both,
}

impl MotionSource {
    pub fn name(self) -> &'static str {
        match self {
            MotionSource::Node => "node",
            MotionSource::Camera => "camera",
            MotionSource::Both => "both",
        }
    }

    pub fn from_name(name: &str) -> Option<MotionSource> {
        [MotionSource::Node, MotionSource::Camera, MotionSource::Both]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// What a user sets for a camera: a validated `POST /api/cameras` body.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub name: String,
    pub make: String,
    pub model: String,
    pub rtsp_url: String,
    pub rtsp_sub_url: Option<String>,
    pub enabled: bool,
    pub record: bool,
    pub detect: bool,
    pub detect_sensitivity: Sensitivity,
    /// Motion events are classified (person, vehicle, …).
    pub classify: bool,
    /// The kinds an event may become; one of another kind stays `motion`.
    pub kinds: Vec<Kind>,
    /// The ONVIF device the camera is, when known: followed when it moves.
    pub onvif: Option<OnvifLink>,
    /// Polygons whose motion the detector never sees.
    pub motion_masks: Vec<Polygon>,
    /// Where what moved must go for an event to be made; none: anywhere.
    pub zones: Vec<Zone>,
    /// The areas the node learns are always moving are left out of detection.
    pub auto_mask: bool,
    /// Recorded segments older than this many days are deleted; None: no
    /// age limit (`retainDays`, 1 to 3650).
    pub retain_days: Option<u32>,
    /// The motion decoder decodes every frame all the time, not key frames
    /// only while nothing moves (`fullRate`).
    pub full_rate: bool,
    /// None: both where its ONVIF device offers events, else the node's.
    pub motion_source: Option<MotionSource>,
}

/// A camera's ONVIF device: its stable id and where its service last answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnvifLink {
    /// The WS-Discovery endpoint reference (`urn:uuid:…`).
    pub endpoint: String,
    /// The device service's address (`http://host[:port]/…`).
    pub address: String,
    /// What the node saw of the device at that address while it worked:
    /// how it tells the device from another that answers with its endpoint.
    pub seen: Seen,
}

/// A linked device as the node saw it while the camera worked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Its hardware (MAC) address, from the kernel's neighbour table.
    pub mac: Option<String>,
    /// Its serial number, as GetDeviceInformation gave it with the camera's account.
    pub serial: Option<String>,
}

const MAX_NAME_CHARS: usize = 64;

impl Settings {
    /// Parses and validates a `POST /api/cameras` body; each error message
    /// names the field. `classify_by_default`: whether the classifier is
    /// installed, which makes `classify` default to on.
    pub fn from_json(body: &[u8], classify_by_default: bool) -> Result<Settings, Error> {
        let fields = object(body)?;
        let given = SettingsPatch::from_fields(&fields)?;
        if given.confirm_move.is_some() {
            return Err(Error::bad_request(
                "onvif.confirmMove moves a camera that exists: send it with PATCH",
            ));
        }
        let required = |field: &str| Error::bad_request(format!("{field} is required"));
        let mut rtsp_url = given.rtsp_url.ok_or_else(|| required("rtspUrl"))?;
        let mut rtsp_sub_url = given.rtsp_sub_url.flatten();
        // Discovery gives URLs without user info: the credentials come apart.
        if let Some((user, password)) = credentials(&fields)? {
            let with = |field: &str, url: &str| {
                rtsp_url::checked(field, &rtsp_url::with_userinfo(url, &user, &password))
            };
            rtsp_url = with("rtspUrl", &rtsp_url)?;
            rtsp_sub_url = rtsp_sub_url
                .map(|url| with("rtspSubUrl", &url))
                .transpose()?;
        }
        Ok(Settings {
            name: given.name.ok_or_else(|| required("name"))?,
            rtsp_url,
            make: given.make.unwrap_or_default(),
            model: given.model.unwrap_or_default(),
            rtsp_sub_url,
            enabled: given.enabled.unwrap_or(true),
            record: given.record.unwrap_or(true),
            detect: given.detect.unwrap_or(true),
            detect_sensitivity: given.detect_sensitivity.unwrap_or_default(),
            classify: given.classify.unwrap_or(classify_by_default),
            kinds: given.kinds.unwrap_or_else(|| Kind::CLASSIFIED.to_vec()),
            onvif: given.onvif.flatten(),
            motion_masks: given.motion_masks.unwrap_or_default(),
            zones: given.zones.unwrap_or_default(),
            auto_mask: given.auto_mask.unwrap_or(true),
            retain_days: given.retain_days.flatten(),
            full_rate: given.full_rate.unwrap_or(false),
            motion_source: given.motion_source.flatten(),
        })
    }
}

const MAX_CREDENTIAL_CHARS: usize = 128;

/// `username` and `password` of a `POST /api/cameras` body, if given: the
/// user info the node puts in the camera's URLs.
fn credentials(fields: &Map<String, Value>) -> Result<Option<(String, String)>, Error> {
    let text = |name: &str| credential_text(fields, name);
    match (text("username")?, text("password")?) {
        (Some(user), password) if !user.is_empty() => {
            Ok(Some((user, password.unwrap_or_default())))
        }
        (_, Some(password)) if !password.is_empty() => {
            Err(Error::bad_request("password needs a username"))
        }
        _ => Ok(None),
    }
}

/// The user name or password field `name`, if given.
fn credential_text(fields: &Map<String, Value>, name: &str) -> Result<Option<String>, Error> {
    let Some(text) = optional_str(fields, name)? else {
        return Ok(None);
    };
    if text.chars().count() > MAX_CREDENTIAL_CHARS || text.chars().any(char::is_control) {
        return Err(Error::bad_request(format!(
            "{name} must be at most {MAX_CREDENTIAL_CHARS} characters, none of them control characters"
        )));
    }
    Ok(Some(text.to_owned()))
}

/// A validated `PATCH /api/cameras/{id}` body: the fields given, each checked
/// as at creation. JSON null counts as absent, except that `rtspSubUrl: null`
/// removes the sub stream.
#[derive(Debug, Default, PartialEq)]
pub struct SettingsPatch {
    pub name: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub rtsp_url: Option<String>,
    /// `Some(None)`: remove the sub stream.
    pub rtsp_sub_url: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub record: Option<bool>,
    pub detect: Option<bool>,
    pub detect_sensitivity: Option<Sensitivity>,
    pub classify: Option<bool>,
    /// Distinct, in [`Kind::CLASSIFIED`]'s order, never empty.
    pub kinds: Option<Vec<Kind>>,
    /// `Some(None)`: unlink the camera from its ONVIF device.
    pub onvif: Option<Option<OnvifLink>>,
    /// `onvif: {"confirmMove": address}`: the user confirms that the device
    /// answering there for the camera's ONVIF device is the camera.
    pub confirm_move: Option<Ipv4Addr>,
    pub motion_masks: Option<Vec<Polygon>>,
    pub zones: Option<Vec<Zone>>,
    pub auto_mask: Option<bool>,
    /// `Some(None)`: no age limit (`retainDays: null`).
    pub retain_days: Option<Option<u32>>,
    pub full_rate: Option<bool>,
    /// `Some(None)`: the default (`motionSource: null`).
    pub motion_source: Option<Option<MotionSource>>,
    /// `password`: the camera's password, which a change that would send
    /// its account to a new host must carry (see [`account`]); compared,
    /// never stored.
    pub password: Option<Password>,
}

/// A password a request carries; never printed.
#[derive(Clone, Default, PartialEq)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

impl SettingsPatch {
    pub fn from_json(body: &[u8]) -> Result<SettingsPatch, Error> {
        SettingsPatch::from_fields(&object(body)?)
    }

    fn from_fields(fields: &Map<String, Value>) -> Result<SettingsPatch, Error> {
        let url = |field: &str| -> Result<Option<String>, Error> {
            optional_str(fields, field)?
                .map(|url| rtsp_url::checked(field, url))
                .transpose()
        };
        let rtsp_sub_url = match fields.get("rtspSubUrl") {
            Some(Value::Null) => Some(None),
            _ => url("rtspSubUrl")?.map(Some),
        };
        let confirm_move = fields
            .get("onvif")
            .map(confirmed_move)
            .transpose()?
            .flatten();
        Ok(SettingsPatch {
            name: optional_str(fields, "name")?
                .map(checked_name)
                .transpose()?,
            make: short_text(fields, "make")?,
            model: short_text(fields, "model")?,
            rtsp_url: url("rtspUrl")?,
            rtsp_sub_url,
            enabled: optional_bool(fields, "enabled")?,
            record: optional_bool(fields, "record")?,
            detect: optional_bool(fields, "detect")?,
            detect_sensitivity: optional_str(fields, "detectSensitivity")?
                .map(|name| {
                    Sensitivity::from_name(name).ok_or_else(|| {
                        Error::bad_request("detectSensitivity must be low, medium or high")
                    })
                })
                .transpose()?,
            classify: optional_bool(fields, "classify")?,
            kinds: field(fields, "kinds").map(checked_kinds).transpose()?,
            onvif: match fields.get("onvif") {
                None => None,
                _ if confirm_move.is_some() => None,
                Some(Value::Null) => Some(None),
                Some(link) => Some(Some(checked_onvif(link)?)),
            },
            confirm_move,
            motion_masks: field(fields, "motionMasks")
                .map(checked_masks)
                .transpose()?,
            zones: field(fields, "zones").map(checked_zones).transpose()?,
            auto_mask: optional_bool(fields, "autoMask")?,
            retain_days: match fields.get("retainDays") {
                None => None,
                Some(Value::Null) => Some(None),
                Some(days) => Some(Some(checked_retain_days(days)?)),
            },
            full_rate: optional_bool(fields, "fullRate")?,
            motion_source: match fields.get("motionSource") {
                None => None,
                Some(Value::Null) => Some(None),
                Some(source) => Some(Some(
                    source
                        .as_str()
                        .and_then(MotionSource::from_name)
                        .ok_or_else(|| {
                            Error::bad_request(
                                "motionSource must be node, camera, both, or null for the default",
                            )
                        })?,
                )),
            },
            password: credential_text(fields, "password")?.map(Password),
        })
    }

    /// `settings` with the given fields changed.
    pub fn apply(&self, settings: &Settings) -> Settings {
        let pick = |new: &Option<String>, old: &String| new.clone().unwrap_or_else(|| old.clone());
        Settings {
            name: pick(&self.name, &settings.name),
            make: pick(&self.make, &settings.make),
            model: pick(&self.model, &settings.model),
            rtsp_url: pick(&self.rtsp_url, &settings.rtsp_url),
            rtsp_sub_url: self
                .rtsp_sub_url
                .clone()
                .unwrap_or_else(|| settings.rtsp_sub_url.clone()),
            enabled: self.enabled.unwrap_or(settings.enabled),
            record: self.record.unwrap_or(settings.record),
            detect: self.detect.unwrap_or(settings.detect),
            detect_sensitivity: self
                .detect_sensitivity
                .unwrap_or(settings.detect_sensitivity),
            classify: self.classify.unwrap_or(settings.classify),
            kinds: self.kinds.clone().unwrap_or_else(|| settings.kinds.clone()),
            onvif: match &self.onvif {
                None => settings.onvif.clone(),
                Some(None) => None,
                // The same device at the same address: what was seen of it holds.
                Some(Some(link)) => Some(match &settings.onvif {
                    Some(old) if old.endpoint == link.endpoint && old.address == link.address => {
                        old.clone()
                    }
                    _ => link.clone(),
                }),
            },
            motion_masks: self
                .motion_masks
                .clone()
                .unwrap_or_else(|| settings.motion_masks.clone()),
            zones: self.zones.clone().unwrap_or_else(|| settings.zones.clone()),
            auto_mask: self.auto_mask.unwrap_or(settings.auto_mask),
            retain_days: self.retain_days.unwrap_or(settings.retain_days),
            full_rate: self.full_rate.unwrap_or(settings.full_rate),
            motion_source: self.motion_source.unwrap_or(settings.motion_source),
        }
    }
}

/// `onvif`: `{"endpoint": "urn:…", "address": "http://…"}`, as discovery
/// lists a device.
fn checked_onvif(value: &Value) -> Result<OnvifLink, Error> {
    let shape = || Error::bad_request("onvif must be {\"endpoint\": …, \"address\": …} or null");
    let Value::Object(fields) = value else {
        return Err(shape());
    };
    let endpoint = optional_str(fields, "endpoint")?.ok_or_else(shape)?;
    if endpoint.is_empty() || endpoint.len() > 256 || endpoint.chars().any(char::is_control) {
        return Err(Error::bad_request(
            "onvif.endpoint must be 1 to 256 bytes, no control characters",
        ));
    }
    let address = optional_str(fields, "address")?.ok_or_else(shape)?;
    Ok(OnvifLink {
        endpoint: endpoint.to_owned(),
        address: service_address("onvif.address", address)?,
        seen: Seen::default(),
    })
}

/// The address of `onvif: {"confirmMove": "<IPv4 address>"}`, None for
/// another shape of `onvif`.
fn confirmed_move(value: &Value) -> Result<Option<Ipv4Addr>, Error> {
    let Value::Object(fields) = value else {
        return Ok(None);
    };
    let Some(address) = fields.get("confirmMove") else {
        return Ok(None);
    };
    let bad = || {
        Error::bad_request(
            "onvif.confirmMove must be the IPv4 address the camera's message names, alone in onvif",
        )
    };
    if fields.len() != 1 {
        return Err(bad());
    }
    address
        .as_str()
        .and_then(|a| a.parse().ok())
        .map(Some)
        .ok_or_else(bad)
}

/// A `POST /api/discover/streams` body: a device's service address and the
/// account (user name, password), if the device needs one: checked as at
/// camera creation.
pub fn device_login(body: &[u8]) -> Result<(String, Option<(String, String)>), Error> {
    let fields = object(body)?;
    let address = optional_str(&fields, "address")?
        .ok_or_else(|| Error::bad_request("address is required"))?;
    Ok((service_address("address", address)?, credentials(&fields)?))
}

/// An ONVIF service address: http or https, at most 2048 bytes, no user
/// info (it would be a password in the database and the logs).
pub fn service_address(field: &str, address: &str) -> Result<String, Error> {
    let bad = |why: &str| Err(Error::bad_request(format!("{field} {why}")));
    if address.len() > 2048 {
        return bad("must be at most 2048 bytes");
    }
    if address.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must not contain spaces or control characters");
    }
    let Some(rest) = address
        .strip_prefix("http://")
        .or_else(|| address.strip_prefix("https://"))
    else {
        return bad("must be an http:// or https:// URL");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return bad("must not contain a user name or password");
    }
    let Some(host) = rtsp_url::http_host(address) else {
        return bad("must name a host");
    };
    if !rtsp_url::reachable_host(host) {
        return bad(
            "must not name a loopback, link-local, unspecified, multicast or broadcast address: \
             the node calls only devices on the LAN",
        );
    }
    Ok(address.to_owned())
}

/// A name: trimmed, 1 to 64 characters, no control characters.
fn checked_name(name: &str) -> Result<String, Error> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(Error::bad_request(format!(
            "name must be 1 to {MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::bad_request(
            "name must not contain control characters",
        ));
    }
    Ok(name.to_owned())
}

/// `kinds`: a JSON array of distinct names from person, vehicle, animal and
/// package, at least one (classifying into no kind is `classify: false`,
/// one way to say it); kept in [`Kind::CLASSIFIED`]'s order.
fn checked_kinds(value: &Value) -> Result<Vec<Kind>, Error> {
    let kinds = kind_names("kinds", value, &Kind::CLASSIFIED)?;
    if kinds.is_empty() {
        return Err(Error::bad_request(
            "kinds must name at least one kind; to classify nothing, turn classify off",
        ));
    }
    Ok(kinds)
}

/// The most days `retainDays` may be: ten years.
pub const MAX_RETAIN_DAYS: u32 = 3650;

/// `retainDays`: a whole number of days from 1 to [`MAX_RETAIN_DAYS`].
fn checked_retain_days(value: &Value) -> Result<u32, Error> {
    value
        .as_u64()
        .filter(|d| (1..=u64::from(MAX_RETAIN_DAYS)).contains(d))
        .map(|d| d as u32)
        .ok_or_else(|| {
            Error::bad_request(format!(
                "retainDays must be a whole number of days from 1 to {MAX_RETAIN_DAYS}, or null for no age limit"
            ))
        })
}

/// `make` and `model`: at most 64 characters, no control characters.
fn short_text(fields: &Map<String, Value>, name: &str) -> Result<Option<String>, Error> {
    let Some(text) = optional_str(fields, name)? else {
        return Ok(None);
    };
    if text.chars().count() > MAX_NAME_CHARS {
        return Err(Error::bad_request(format!(
            "{name} must be at most {MAX_NAME_CHARS} characters"
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::bad_request(format!(
            "{name} must not contain control characters"
        )));
    }
    Ok(Some(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    fn parse(body: &str) -> Result<Settings, Error> {
        Settings::from_json(body.as_bytes(), true)
    }

    #[test]
    fn valid_bodies() {
        let full = parse(
            r#"{"name":"  Porch ","rtspUrl":"rtsp://u:p@10.0.0.2:554/main","rtspSubUrl":"rtsps://cam.local/sub",
               "make":"Acme","model":"X1","enabled":false,"record":false,"detect":true,"extra":[1]}"#,
        )
        .unwrap();
        assert_eq!(
            full,
            Settings {
                name: "Porch".into(),
                make: "Acme".into(),
                model: "X1".into(),
                rtsp_url: "rtsp://u:p@10.0.0.2:554/main".into(),
                rtsp_sub_url: Some("rtsps://cam.local/sub".into()),
                enabled: false,
                record: false,
                detect: true,
                detect_sensitivity: Sensitivity::Medium,
                classify: true,
                kinds: crate::event::Kind::CLASSIFIED.to_vec(),
                onvif: None,
                motion_masks: Vec::new(),
                zones: Vec::new(),
                auto_mask: true,
                retain_days: None,
                full_rate: false,
                motion_source: None,
            }
        );
        let minimal =
            parse(r#"{"name":"a","rtspUrl":"RTSP://[::1]:8554/x","rtspSubUrl":null,"make":null}"#)
                .unwrap();
        assert_eq!(minimal.rtsp_sub_url, None);
        assert_eq!(
            minimal.rtsp_url, "rtsp://[::1]:8554/x",
            "the scheme is stored lowercase"
        );
        assert_eq!((minimal.make.as_str(), minimal.model.as_str()), ("", ""));
        assert!(minimal.enabled && minimal.record && minimal.detect);
        let longest = format!(r#"{{"name":"{}","rtspUrl":"rtsp://h/"}}"#, "é".repeat(64));
        assert!(parse(&longest).is_ok());
        let long_url = format!(
            r#"{{"name":"a","rtspUrl":"rtsp://h/{}"}}"#,
            "a".repeat(2048 - 9)
        );
        assert!(parse(&long_url).is_ok());
    }

    #[test]
    fn credentials_go_into_both_urls_and_the_onvif_link_is_kept() {
        let settings = parse(
            r#"{"name":"a","rtspUrl":"rtsp://old:x@10.0.0.5/main","rtspSubUrl":"rtsp://10.0.0.5/sub",
               "username":"admin","password":"p@ss word",
               "onvif":{"endpoint":"urn:uuid:1","address":"http://10.0.0.5/onvif/device_service"}}"#,
        )
        .unwrap();
        assert_eq!(
            settings.rtsp_url,
            "rtsp://admin:p%40ss%20word@10.0.0.5/main"
        );
        assert_eq!(
            settings.rtsp_sub_url.as_deref(),
            Some("rtsp://admin:p%40ss%20word@10.0.0.5/sub")
        );
        assert_eq!(
            settings.onvif,
            Some(OnvifLink {
                endpoint: "urn:uuid:1".into(),
                address: "http://10.0.0.5/onvif/device_service".into(),
                seen: Seen::default(),
            })
        );
        let unlink = SettingsPatch::from_json(br#"{"onvif":null}"#).unwrap();
        assert_eq!(unlink.apply(&settings).onvif, None);
        let untouched = SettingsPatch::from_json(br#"{"name":"b"}"#).unwrap();
        assert_eq!(untouched.apply(&settings).onvif, settings.onvif);
        let user_only = parse(r#"{"name":"a","rtspUrl":"rtsp://h/","username":"u"}"#).unwrap();
        assert_eq!(user_only.rtsp_url, "rtsp://u@h/");
    }

    #[test]
    fn invalid_bodies() {
        let long_name = format!(r#"{{"name":"{}","rtspUrl":"rtsp://h/"}}"#, "a".repeat(65));
        let long_make = format!(
            r#"{{"name":"a","rtspUrl":"rtsp://h/","make":"{}"}}"#,
            "m".repeat(65)
        );
        let long_url = format!(
            r#"{{"name":"a","rtspUrl":"rtsp://h/{}"}}"#,
            "a".repeat(2048 - 8)
        );
        let table: &[(&str, &str)] = &[
            ("", "not valid JSON"),
            ("{", "not valid JSON"),
            ("[]", "JSON object"),
            ("\"x\"", "JSON object"),
            ("null", "JSON object"),
            (r#"{"rtspUrl":"rtsp://h/"}"#, "name is required"),
            (r#"{"name":null,"rtspUrl":"rtsp://h/"}"#, "name is required"),
            (
                r#"{"name":5,"rtspUrl":"rtsp://h/"}"#,
                "name must be a string",
            ),
            (
                r#"{"name":"   ","rtspUrl":"rtsp://h/"}"#,
                "name must be 1 to 64",
            ),
            (
                r#"{"name":"","rtspUrl":"rtsp://h/"}"#,
                "name must be 1 to 64",
            ),
            (&long_name, "name must be 1 to 64"),
            (
                r#"{"name":"a\u0000b","rtspUrl":"rtsp://h/"}"#,
                "name must not contain control",
            ),
            (
                r#"{"name":"a\nb","rtspUrl":"rtsp://h/"}"#,
                "name must not contain control",
            ),
            (r#"{"name":"a"}"#, "rtspUrl is required"),
            (r#"{"name":"a","rtspUrl":7}"#, "rtspUrl must be a string"),
            (
                r#"{"name":"a","rtspUrl":"http://h/"}"#,
                "rtspUrl must be an rtsp",
            ),
            (
                r#"{"name":"a","rtspUrl":"exec:ffmpeg -i x"}"#,
                "rtspUrl must not contain spaces",
            ),
            (
                r#"{"name":"a","rtspUrl":"exec:/bin/sh"}"#,
                "rtspUrl must be an rtsp",
            ),
            (
                r#"{"name":"a","rtspUrl":"file:///etc/passwd"}"#,
                "rtspUrl must be an rtsp",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp:/h/x"}"#,
                "rtspUrl must be an rtsp",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://"}"#,
                "rtspUrl must name a host",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://u:p@/x"}"#,
                "rtspUrl must name a host",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://:554/x"}"#,
                "rtspUrl must name a host",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/x#backchannel=1"}"#,
                "rtspUrl must not contain a #",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/x y"}"#,
                "rtspUrl must not contain spaces",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/x\ty"}"#,
                "rtspUrl must not contain spaces",
            ),
            (&long_url, "rtspUrl must be at most 2048 bytes"),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","rtspSubUrl":false}"#,
                "rtspSubUrl must be a string",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","rtspSubUrl":"echo:hi"}"#,
                "rtspSubUrl must be an rtsp",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","make":1}"#,
                "make must be a string",
            ),
            (&long_make, "make must be at most 64"),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","model":{}}"#,
                "model must be a string",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","model":"a\u001bb"}"#,
                "model must not contain control",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","enabled":"yes"}"#,
                "enabled must be true or false",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","password":"x"}"#,
                "password needs a username",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","username":"a\u0000"}"#,
                "username must be at most 128 characters, none of them control",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":"urn:uuid:1"}"#,
                "onvif must be",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"","address":"http://h/"}}"#,
                "onvif.endpoint must be 1 to 256 bytes",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"e","address":"ftp://h/"}}"#,
                "onvif.address must be an http:// or https:// URL",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"e","address":"http://:80/x"}}"#,
                "onvif.address must name a host",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"e","address":"http:///x"}}"#,
                "onvif.address must name a host",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"e","address":"http://u:pw@h/"}}"#,
                "onvif.address must not contain a user name or password",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"endpoint":"e","address":"http://127.0.0.1:1984/"}}"#,
                "onvif.address must not name a loopback",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","onvif":{"confirmMove":"10.0.0.9"}}"#,
                "onvif.confirmMove moves a camera that exists",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","record":1}"#,
                "record must be true or false",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","detect":[]}"#,
                "detect must be true or false",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","detectSensitivity":"max"}"#,
                "detectSensitivity must be low, medium or high",
            ),
            (
                r#"{"name":"a","rtspUrl":"rtsp://h/","detectSensitivity":2}"#,
                "detectSensitivity must be a string",
            ),
        ];
        for (body, message) in table {
            let err = parse(body).expect_err(body);
            assert_eq!(err.kind, Kind::BadRequest, "{body}");
            assert!(err.message.contains(message), "{body}: {}", err.message);
        }
        let invalid_utf8 =
            Settings::from_json(b"{\"name\":\"\xff\",\"rtspUrl\":\"rtsp://h/\"}", true);
        assert_eq!(invalid_utf8.unwrap_err().kind, Kind::BadRequest);
    }

    #[test]
    fn retain_days() {
        let base = parse(r#"{"name":"a","rtspUrl":"rtsp://h/1"}"#).unwrap();
        assert_eq!(base.retain_days, None, "no age limit unless asked");
        let created = |days: &str| {
            parse(&format!(
                r#"{{"name":"a","rtspUrl":"rtsp://h/1","retainDays":{days}}}"#
            ))
            .map(|s| s.retain_days)
        };
        let patched = |days: &str, was: Option<u32>| {
            let old = Settings {
                retain_days: was,
                ..base.clone()
            };
            SettingsPatch::from_json(format!(r#"{{"retainDays":{days}}}"#).as_bytes())
                .map(|p| p.apply(&old).retain_days)
        };
        let table = [
            // retainDays -> on creation, patched over 7 days (None: a 400)
            ("1", Some(Some(1)), Some(Some(1))),
            ("30", Some(Some(30)), Some(Some(30))),
            ("3650", Some(Some(3650)), Some(Some(3650))),
            ("null", Some(None), Some(None)),
            ("0", None, None),
            ("3651", None, None),
            ("-1", None, None),
            ("1.5", None, None),
            ("\"7\"", None, None),
            ("true", None, None),
            ("4294967297", None, None),
        ];
        for (days, create, patch) in table {
            assert_eq!(created(days).ok(), create, "created with {days}");
            assert_eq!(patched(days, Some(7)).ok(), patch, "patched with {days}");
            if create.is_none() {
                let e = created(days).unwrap_err();
                assert!(
                    e.message.starts_with("retainDays must be"),
                    "{days}: {}",
                    e.message
                );
            }
        }
        assert_eq!(
            SettingsPatch::from_json(b"{}").unwrap().apply(&Settings {
                retain_days: Some(7),
                ..base.clone()
            }),
            Settings {
                retain_days: Some(7),
                ..base
            },
            "absent leaves it as it is"
        );
    }

    #[test]
    fn motion_source() {
        let base = parse(r#"{"name":"a","rtspUrl":"rtsp://h/1"}"#).unwrap();
        assert_eq!(base.motion_source, None, "the default unless asked");
        let camera =
            parse(r#"{"name":"a","rtspUrl":"rtsp://h/1","motionSource":"camera"}"#).unwrap();
        assert_eq!(camera.motion_source, Some(MotionSource::Camera));
        let patched =
            |body: &str| SettingsPatch::from_json(body.as_bytes()).map(|p| p.apply(&camera));
        assert_eq!(
            patched(r#"{"motionSource":"node"}"#).unwrap().motion_source,
            Some(MotionSource::Node)
        );
        assert_eq!(
            patched(r#"{"motionSource":null}"#).unwrap().motion_source,
            None
        );
        assert_eq!(
            patched("{}").unwrap().motion_source,
            Some(MotionSource::Camera)
        );
        for bad in [r#""onvif""#, "1", r#""Both""#, "true"] {
            let e = patched(&format!(r#"{{"motionSource":{bad}}}"#)).unwrap_err();
            assert_eq!(e.kind, Kind::BadRequest);
            assert!(
                e.message.starts_with("motionSource must be"),
                "{bad}: {}",
                e.message
            );
            let e = parse(&format!(
                r#"{{"name":"a","rtspUrl":"rtsp://h/","motionSource":{bad}}}"#
            ))
            .unwrap_err();
            assert!(
                e.message.starts_with("motionSource must be"),
                "{bad}: {}",
                e.message
            );
        }
    }

    #[test]
    fn patches() {
        let patch = |body: &str| SettingsPatch::from_json(body.as_bytes());
        assert_eq!(patch("{}").unwrap(), SettingsPatch::default());
        let confirm = patch(r#"{"onvif":{"confirmMove":"10.0.0.9"}}"#).unwrap();
        assert_eq!(confirm.confirm_move, Some(Ipv4Addr::new(10, 0, 0, 9)));
        assert_eq!(confirm.onvif, None);
        for bad in [
            r#"{"onvif":{"confirmMove":5}}"#,
            r#"{"onvif":{"confirmMove":"cam.lan"}}"#,
            r#"{"onvif":{"confirmMove":"10.0.0.9","endpoint":"e"}}"#,
        ] {
            let e = patch(bad).unwrap_err();
            assert!(
                e.message.starts_with("onvif.confirmMove must be"),
                "{bad}: {}",
                e.message
            );
        }
        let base =
            parse(r#"{"name":"a","rtspUrl":"rtsp://h/1","rtspSubUrl":"rtsp://h/2","make":"M"}"#)
                .unwrap();
        let renamed = patch(r#"{"name":" b ","record":false,"unknown":1}"#)
            .unwrap()
            .apply(&base);
        assert_eq!((renamed.name.as_str(), renamed.record), ("b", false));
        assert_eq!(
            (renamed.rtsp_url.as_str(), renamed.make.as_str()),
            ("rtsp://h/1", "M")
        );
        assert_eq!(renamed.rtsp_sub_url.as_deref(), Some("rtsp://h/2"));
        let moved = patch(r#"{"rtspUrl":"rtsp://h/3","rtspSubUrl":null,"make":""}"#)
            .unwrap()
            .apply(&base);
        assert_eq!(
            (
                moved.rtsp_url.as_str(),
                moved.rtsp_sub_url,
                moved.make.as_str()
            ),
            ("rtsp://h/3", None, "")
        );
        let nulls = patch(r#"{"name":null,"rtspUrl":null,"enabled":null}"#)
            .unwrap()
            .apply(&base);
        assert_eq!(nulls, base, "null leaves a field as it is");
        let table = [
            (r#"{"name":""}"#, "name must be 1 to 64"),
            (r#"{"name":1}"#, "name must be a string"),
            (r#"{"rtspUrl":"exec:sh"}"#, "rtspUrl must be an rtsp"),
            (
                r#"{"rtspSubUrl":"rtsp://h/#x"}"#,
                "rtspSubUrl must not contain a #",
            ),
            (r#"{"model":"\u0000"}"#, "model must not contain control"),
            (r#"{"detect":"no"}"#, "detect must be true or false"),
            (
                r#"{"detectSensitivity":"High"}"#,
                "detectSensitivity must be low",
            ),
            ("[]", "JSON object"),
        ];
        for (body, message) in table {
            let err = patch(body).expect_err(body);
            assert!(err.message.contains(message), "{body}: {}", err.message);
        }
    }

    #[test]
    fn classify_and_kinds() {
        use crate::event::Kind::{Animal, Package, Person, Vehicle};
        let body = r#"{"name":"a","rtspUrl":"rtsp://h/"}"#;
        let installed = Settings::from_json(body.as_bytes(), true).unwrap();
        assert!(installed.classify, "on by default with the classifier");
        assert_eq!(installed.kinds, [Person, Vehicle, Animal, Package]);
        let missing = Settings::from_json(body.as_bytes(), false).unwrap();
        assert!(!missing.classify, "off by default without it");
        let chosen = Settings::from_json(
            br#"{"name":"a","rtspUrl":"rtsp://h/","classify":true,"kinds":["package","person"]}"#,
            false,
        )
        .unwrap();
        assert!(chosen.classify);
        assert_eq!(chosen.kinds, [Person, Package], "kept in one order");
        let patch = |body: &str| SettingsPatch::from_json(body.as_bytes());
        let changed = patch(r#"{"classify":false,"kinds":["animal"]}"#)
            .unwrap()
            .apply(&chosen);
        assert_eq!(
            (changed.classify, changed.kinds.as_slice()),
            (false, &[Animal][..])
        );
        let nulls = patch(r#"{"classify":null,"kinds":null}"#)
            .unwrap()
            .apply(&chosen);
        assert_eq!(nulls, chosen, "null leaves them as they are");
        let table = [
            (r#"{"classify":"yes"}"#, "classify must be true or false"),
            (r#"{"classify":1}"#, "classify must be true or false"),
            (
                r#"{"kinds":"person"}"#,
                "kinds must be an array of names from person, vehicle, animal, package",
            ),
            (r#"{"kinds":{}}"#, "kinds must be an array"),
            (
                r#"{"kinds":["motion"]}"#,
                "kinds may only name person, vehicle, animal, package",
            ),
            (r#"{"kinds":["Person"]}"#, "kinds may only name"),
            (r#"{"kinds":["person",1]}"#, "kinds may only name"),
            (r#"{"kinds":[null]}"#, "kinds may only name"),
            (r#"{"kinds":["cat"]}"#, "kinds may only name"),
            (
                r#"{"kinds":["person","person"]}"#,
                "kinds must not name a kind twice",
            ),
            (r#"{"kinds":[]}"#, "kinds must name at least one kind"),
        ];
        for (body, message) in table {
            let err = patch(body).expect_err(body);
            assert_eq!(err.kind, Kind::BadRequest, "{body}");
            assert!(err.message.contains(message), "{body}: {}", err.message);
            let full = body.replacen('{', r#"{"name":"a","rtspUrl":"rtsp://h/","#, 1);
            let err = parse(&full).expect_err(&full);
            assert!(err.message.contains(message), "{full}: {}", err.message);
        }
    }

    #[test]
    fn masks_zones_and_auto_mask() {
        let plain = parse(r#"{"name":"a","rtspUrl":"rtsp://h/"}"#).unwrap();
        assert!(plain.motion_masks.is_empty() && plain.zones.is_empty());
        assert!(plain.auto_mask, "on by default");
        let triangle = "[[0.1,0.1],[0.4,0.1],[0.4,0.4]]";
        let given = parse(&format!(
            r#"{{"name":"a","rtspUrl":"rtsp://h/","motionMasks":[{triangle}],
                "zones":[{{"name":"Door","polygon":{triangle},"kinds":["person"]}}],"autoMask":false}}"#
        ))
        .unwrap();
        assert_eq!(given.motion_masks[0].points()[2], [0.4, 0.4]);
        assert_eq!(
            (
                given.zones[0].name.as_str(),
                given.zones[0].kinds.as_slice()
            ),
            ("Door", &[crate::event::Kind::Person][..])
        );
        assert!(!given.auto_mask);
        let patch = |body: &str| SettingsPatch::from_json(body.as_bytes());
        let cleared = patch(r#"{"motionMasks":[],"zones":[]}"#)
            .unwrap()
            .apply(&given);
        assert!(cleared.motion_masks.is_empty() && cleared.zones.is_empty());
        assert!(!cleared.auto_mask, "autoMask kept");
        let nulls = patch(r#"{"motionMasks":null,"zones":null,"autoMask":null}"#)
            .unwrap()
            .apply(&given);
        assert_eq!(nulls, given, "null leaves them as they are");
        let table = [
            (r#"{"autoMask":"yes"}"#, "autoMask must be true or false"),
            (
                r#"{"motionMasks":[[[0,0],[1,1]]]}"#,
                "motionMasks[0] must have 3 to 32 points",
            ),
            (
                r#"{"zones":[{"name":"a","polygon":[[0,0],[1,0],[1,1]]},{"name":"A","polygon":[[0,0],[1,0],[1,1]]}]}"#,
                "zones[1].name must be unique on the camera",
            ),
        ];
        for (body, message) in table {
            let err = patch(body).expect_err(body);
            assert!(err.message.contains(message), "{body}: {}", err.message);
            let full = body.replacen('{', r#"{"name":"a","rtspUrl":"rtsp://h/","#, 1);
            let err = parse(&full).expect_err(&full);
            assert!(err.message.contains(message), "{full}: {}", err.message);
        }
    }

    #[test]
    fn error_messages_do_not_repeat_urls() {
        let err = parse(r#"{"name":"a","rtspUrl":"rtsp://admin:s3cret@h/x#y"}"#).unwrap_err();
        assert!(!err.message.contains("s3cret"), "{}", err.message);
    }
}

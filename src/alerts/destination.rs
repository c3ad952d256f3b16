//! Where alerts go, as a person sets it: a name, a target (this browser or
//! phone by Web Push, an ntfy topic, or a webhook) and rules. What comes in
//! is checked field by field (a 400 names the field); what goes out never
//! holds a secret: not the ntfy token, the webhook's secret or its URL
//! (which may carry one in its path), nor a push subscription's endpoint.

use serde_json::{Map, Value, json};
use url::Url;
use uuid::Uuid;

use super::address::{check_host, checked_url};
use super::rules::Rules;
use super::webpush::{self, AUTH_BYTES, PUBLIC_KEY_BYTES};
use crate::error::Error;
use crate::event::{Kind, checked_zone_name, kind_names};
use crate::json_body::{field, optional_bool, optional_str};

/// The most destinations a node keeps (each phone that subscribes is one).
pub const MAX_DESTINATIONS: usize = 32;
const MAX_NAME_CHARS: usize = 64;
const MAX_TOKEN_CHARS: usize = 256;
/// The longest cooldown: a day.
const MAX_COOLDOWN_S: u64 = 86_400;
pub const DEFAULT_NTFY_SERVER: &str = "https://ntfy.sh";

#[derive(Clone, Debug, PartialEq)]
pub struct Destination {
    pub id: Uuid,
    pub name: String,
    pub target: Target,
    pub rules: Rules,
}

/// Where a destination sends, secrets included.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A browser's push subscription: its endpoint and keys (base64url).
    WebPush {
        endpoint: String,
        p256dh: String,
        auth: String,
    },
    Ntfy {
        server: String,
        topic: String,
        token: Option<String>,
    },
    Webhook {
        url: String,
        secret: String,
    },
}

impl Target {
    /// As the database keeps it: its type and fields, secrets included.
    pub fn stored(&self) -> String {
        let mut fields = match self {
            Target::WebPush {
                endpoint,
                p256dh,
                auth,
            } => json!({"endpoint": endpoint, "p256dh": p256dh, "auth": auth}),
            Target::Ntfy {
                server,
                topic,
                token,
            } => json!({"server": server, "topic": topic, "token": token}),
            Target::Webhook { url, secret } => json!({"url": url, "secret": secret}),
        };
        fields["type"] = json!(self.type_name());
        fields.to_string()
    }

    /// What `stored` wrote; None for anything else.
    pub fn from_stored(text: &str) -> Option<Target> {
        let value: Value = serde_json::from_str(text).ok()?;
        let text = |name: &str| value.get(name)?.as_str().map(str::to_owned);
        Some(match value.get("type")?.as_str()? {
            "webpush" => Target::WebPush {
                endpoint: text("endpoint")?,
                p256dh: text("p256dh")?,
                auth: text("auth")?,
            },
            "ntfy" => Target::Ntfy {
                server: text("server")?,
                topic: text("topic")?,
                token: text("token"),
            },
            "webhook" => Target::Webhook {
                url: text("url")?,
                secret: text("secret")?,
            },
            _ => return None,
        })
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Target::WebPush { .. } => "webpush",
            Target::Ntfy { .. } => "ntfy",
            Target::Webhook { .. } => "webhook",
        }
    }

    /// Where it sends, for people: the host alone.
    pub fn host(&self) -> String {
        let url = match self {
            Target::WebPush { endpoint, .. } => endpoint,
            Target::Ntfy { server, .. } => server,
            Target::Webhook { url, .. } => url,
        };
        Url::parse(url)
            .ok()
            .and_then(|u| {
                let host = u.host_str()?.to_owned();
                Some(match u.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                })
            })
            .unwrap_or_default()
    }
}

/// A new webhook's secret: 32 random bytes, in hex.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random numbers");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `POST /api/alerts/destinations`'s body: a new destination (its id made
/// here). The cameras its rules name are checked by the caller.
pub fn from_new(fields: &Map<String, Value>) -> Result<Destination, Error> {
    let name = checked_name(optional_str(fields, "name")?.ok_or_else(|| required("name"))?)?;
    let target = match optional_str(fields, "type")? {
        Some("webpush") => subscription(field(fields, "subscription"))?,
        Some("ntfy") => {
            let server = optional_str(fields, "server")?.unwrap_or(DEFAULT_NTFY_SERVER);
            Target::Ntfy {
                server: checked_server("server", server)?,
                topic: checked_topic(
                    optional_str(fields, "topic")?.ok_or_else(|| required("topic"))?,
                )?,
                token: token(fields)?.flatten(),
            }
        }
        Some("webhook") => Target::Webhook {
            url: checked_destination(
                "url",
                optional_str(fields, "url")?.ok_or_else(|| required("url"))?,
            )?,
            secret: new_secret(),
        },
        Some(_) => return Err(Error::bad_request("type must be webpush, ntfy or webhook")),
        None => return Err(required("type")),
    };
    let rules = match field(fields, "rules") {
        Some(value) => rules(value, &Rules::default())?,
        None => Rules::default(),
    };
    Ok(Destination {
        id: crate::id::new_id(),
        name,
        target,
        rules,
    })
}

/// `PATCH`'s body applied to `destination`; also returns whether a new
/// webhook secret was made (`rotateSecret: true`), to show once.
pub fn patched(
    destination: &Destination,
    fields: &Map<String, Value>,
) -> Result<(Destination, bool), Error> {
    let mut changed = destination.clone();
    if let Some(name) = optional_str(fields, "name")? {
        changed.name = checked_name(name)?;
    }
    if let Some(value) = field(fields, "rules") {
        changed.rules = rules(value, &destination.rules)?;
    }
    let mut rotated = false;
    let not_for = |name: &str| {
        Error::bad_request(format!(
            "{name} is not a field of a {} destination",
            destination.target.type_name()
        ))
    };
    match &mut changed.target {
        Target::WebPush { .. } => {
            for name in ["server", "topic", "token", "url", "rotateSecret"] {
                if fields.contains_key(name) {
                    return Err(not_for(name));
                }
            }
            if let Some(value) = field(fields, "subscription") {
                changed.target = subscription(Some(value))?;
            }
        }
        Target::Ntfy {
            server,
            topic,
            token: kept,
        } => {
            for name in ["url", "rotateSecret", "subscription"] {
                if fields.contains_key(name) {
                    return Err(not_for(name));
                }
            }
            if let Some(text) = optional_str(fields, "server")? {
                *server = checked_server("server", text)?;
            }
            if let Some(text) = optional_str(fields, "topic")? {
                *topic = checked_topic(text)?;
            }
            if let Some(new) = token(fields)? {
                *kept = new;
            }
        }
        Target::Webhook { url, secret } => {
            for name in ["server", "topic", "token", "subscription"] {
                if fields.contains_key(name) {
                    return Err(not_for(name));
                }
            }
            if let Some(text) = optional_str(fields, "url")? {
                *url = checked_destination("url", text)?;
            }
            if optional_bool(fields, "rotateSecret")? == Some(true) {
                *secret = new_secret();
                rotated = true;
            }
        }
    }
    Ok((changed, rotated))
}

fn required(name: &str) -> Error {
    Error::bad_request(format!("{name} is required"))
}

fn checked_name(name: &str) -> Result<String, Error> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(Error::bad_request(format!(
            "name must be 1 to {MAX_NAME_CHARS} characters, none of them control characters"
        )));
    }
    Ok(name.to_owned())
}

/// A URL the node may send to: checked, and its host is no address of the
/// node's own, loopback or the like.
fn checked_destination(field: &str, text: &str) -> Result<String, Error> {
    let url = checked_url(field, text)?;
    check_host(field, &url)?;
    Ok(url.to_string())
}

/// An ntfy server: a destination URL with no query, kept without its final `/`.
fn checked_server(field: &str, text: &str) -> Result<String, Error> {
    let url = checked_destination(field, text)?;
    if url.contains('?') {
        return Err(Error::bad_request(format!("{field} must not have a query")));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// ntfy's own rule for topics.
fn checked_topic(topic: &str) -> Result<String, Error> {
    let ok = (1..=64).contains(&topic.len())
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok {
        return Err(Error::bad_request(
            "topic must be 1 to 64 letters, digits, - or _",
        ));
    }
    Ok(topic.to_owned())
}

/// `token`: absent (None), null to remove it (Some(None)), or a new one.
fn token(fields: &Map<String, Value>) -> Result<Option<Option<String>>, Error> {
    match fields.get("token") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(text)) => {
            let ok = !text.is_empty()
                && text.len() <= MAX_TOKEN_CHARS
                && text.bytes().all(|b| b.is_ascii_graphic());
            if !ok {
                return Err(Error::bad_request(format!(
                    "token must be 1 to {MAX_TOKEN_CHARS} printable ASCII characters without spaces"
                )));
            }
            Ok(Some(Some(text.clone())))
        }
        Some(_) => Err(Error::bad_request("token must be a string or null")),
    }
}

/// `subscription`: a browser's `PushSubscription.toJSON()`.
fn subscription(value: Option<&Value>) -> Result<Target, Error> {
    let Some(Value::Object(fields)) = value else {
        return Err(Error::bad_request(
            "subscription must be the browser's push subscription (endpoint and keys)",
        ));
    };
    let endpoint =
        optional_str(fields, "endpoint")?.ok_or_else(|| required("subscription.endpoint"))?;
    let endpoint = checked_destination("subscription.endpoint", endpoint)?;
    let keys = match field(fields, "keys") {
        Some(Value::Object(keys)) => keys,
        _ => return Err(required("subscription.keys")),
    };
    let key = |name: &str, len: usize| {
        let label = format!("subscription.keys.{name}");
        let text = match keys.get(name) {
            Some(Value::String(text)) => text,
            _ => return Err(required(&label)),
        };
        match webpush::decode(text) {
            Some(bytes) if bytes.len() == len && (name != "p256dh" || bytes[0] == 4) => {
                Ok(webpush::encode(&bytes))
            }
            _ => Err(Error::bad_request(format!(
                "{label} must be {len} bytes in base64url"
            ))),
        }
    };
    Ok(Target::WebPush {
        endpoint,
        p256dh: key("p256dh", PUBLIC_KEY_BYTES)?,
        auth: key("auth", AUTH_BYTES)?,
    })
}

/// `rules`: its fields change those of `base`; absent ones are kept.
pub fn rules(value: &Value, base: &Rules) -> Result<Rules, Error> {
    let Value::Object(fields) = value else {
        return Err(Error::bad_request("rules must be an object"));
    };
    let mut rules = base.clone();
    match fields.get("cameras") {
        None => {}
        Some(Value::Null) => rules.cameras = None,
        Some(Value::Array(items)) => {
            let ids = items
                .iter()
                .map(|item| item.as_str().and_then(|t| Uuid::try_parse(t).ok()))
                .collect::<Option<Vec<Uuid>>>()
                .ok_or_else(|| {
                    Error::bad_request(
                        "rules.cameras must be an array of camera ids, or null for all",
                    )
                })?;
            rules.cameras = Some(ids);
        }
        Some(_) => {
            return Err(Error::bad_request(
                "rules.cameras must be an array of camera ids, or null for all",
            ));
        }
    }
    if let Some(value) = fields.get("kinds") {
        rules.kinds = kind_names("rules.kinds", value, &Kind::ALL)?;
        if rules.kinds.is_empty() {
            return Err(Error::bad_request(
                "rules.kinds must name at least one kind",
            ));
        }
    }
    match fields.get("zones") {
        None => {}
        Some(Value::Null) => rules.zones = None,
        Some(Value::Array(items)) if !items.is_empty() => {
            let names = items
                .iter()
                .enumerate()
                .map(|(i, item)| checked_zone_name(&format!("rules.zones[{i}]"), item))
                .collect::<Result<Vec<String>, Error>>()?;
            rules.zones = Some(names);
        }
        Some(_) => {
            return Err(Error::bad_request(
                "rules.zones must be a non-empty array of zone names, or null for anywhere",
            ));
        }
    }
    if let Some(value) = fields.get("cooldownSeconds") {
        rules.cooldown_s = value
            .as_u64()
            .filter(|s| *s <= MAX_COOLDOWN_S)
            .ok_or_else(|| {
                Error::bad_request(format!(
                    "rules.cooldownSeconds must be a whole number from 0 to {MAX_COOLDOWN_S}"
                ))
            })? as u32;
    }
    if let Some(value) = fields.get("atEnd") {
        rules.at_end = value
            .as_bool()
            .ok_or_else(|| Error::bad_request("rules.atEnd must be true or false"))?;
    }
    if let Some(value) = fields.get("loitering") {
        rules.loitering = value
            .as_bool()
            .ok_or_else(|| Error::bad_request("rules.loitering must be true or false"))?;
    }
    Ok(rules)
}

/// The rules as the API shows them (and the database keeps them).
pub fn rules_json(rules: &Rules) -> Value {
    json!({
        "cameras": rules.cameras.as_ref().map(|ids| ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
        "kinds": rules.kinds,
        "zones": rules.zones,
        "cooldownSeconds": rules.cooldown_s,
        "atEnd": rules.at_end,
        "loitering": rules.loitering,
    })
}

/// The destination as the API shows it: no secret, the host of where it
/// sends, and for ntfy the topic's first letters, for a person to know it.
pub fn view(destination: &Destination) -> Value {
    let target = &destination.target;
    let mut view = json!({
        "id": destination.id.to_string(),
        "name": destination.name,
        "type": target.type_name(),
        "host": target.host(),
        "rules": rules_json(&destination.rules),
    });
    match target {
        Target::WebPush { .. } => {}
        Target::Ntfy {
            server,
            topic,
            token,
        } => {
            let shown: String = topic.chars().take(3).collect();
            view["server"] = json!(
                Url::parse(server)
                    .map(|u| u.origin().ascii_serialization())
                    .unwrap_or_default()
            );
            view["topicHint"] = json!(format!("{shown}…"));
            view["tokenSet"] = json!(token.is_some());
        }
        Target::Webhook { .. } => view["secretSet"] = json!(true),
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn refused(value: Value) -> String {
        from_new(&fields(value)).unwrap_err().message
    }

    const P256DH: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";

    #[test]
    fn each_type_is_made_with_its_fields_and_default_rules() {
        let push = from_new(&fields(json!({
            "name": " Phone ", "type": "webpush",
            "subscription": {"endpoint": "https://push.example.net/a/b", "keys": {"p256dh": P256DH, "auth": "BTBZMqHH6r4Tts7J_aSIgg=="}},
        })))
        .unwrap();
        assert_eq!(push.name, "Phone");
        assert_eq!(
            push.target,
            Target::WebPush {
                endpoint: "https://push.example.net/a/b".into(),
                p256dh: P256DH.into(),
                auth: "BTBZMqHH6r4Tts7J_aSIgg".into(),
            }
        );
        assert_eq!(push.rules, Rules::default());
        let ntfy = from_new(&fields(
            json!({"name": "n", "type": "ntfy", "topic": "door_42", "token": "tk_abc"}),
        ))
        .unwrap();
        assert_eq!(
            ntfy.target,
            Target::Ntfy {
                server: DEFAULT_NTFY_SERVER.into(),
                topic: "door_42".into(),
                token: Some("tk_abc".into()),
            }
        );
        let hook = from_new(&fields(json!({
            "name": "h", "type": "webhook", "url": "https://hooks.example.com/h/SECRET?x=1",
            "rules": {"kinds": ["person", "motion"], "zones": ["Porch"], "cooldownSeconds": 0, "atEnd": true, "loitering": true},
        })))
        .unwrap();
        let Target::Webhook { secret, .. } = &hook.target else {
            panic!("{hook:?}")
        };
        assert_eq!(secret.len(), 64);
        assert_eq!(
            hook.rules,
            Rules {
                cameras: None,
                kinds: vec![Kind::Motion, Kind::Person],
                zones: Some(vec!["Porch".into()]),
                cooldown_s: 0,
                at_end: true,
                loitering: true,
            }
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let table = [
            (json!({"type": "ntfy", "topic": "t"}), "name is required"),
            (json!({"name": "n"}), "type is required"),
            (
                json!({"name": "n", "type": "mail"}),
                "type must be webpush, ntfy or webhook",
            ),
            (json!({"name": "n", "type": "ntfy"}), "topic is required"),
            (
                json!({"name": "n", "type": "ntfy", "topic": "a b"}),
                "topic must be 1 to 64",
            ),
            (
                json!({"name": "n", "type": "ntfy", "topic": "t", "server": "ftp://x"}),
                "server must be an http:// or https:// URL",
            ),
            (
                json!({"name": "n", "type": "ntfy", "topic": "t", "server": "http://127.0.0.1"}),
                "server must not point at a loopback address",
            ),
            (
                json!({"name": "n", "type": "ntfy", "topic": "t", "token": "a b"}),
                "token must be 1 to 256",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "http://localhost:1984/api/streams"}),
                "url must not point at a loopback address",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "http://169.254.169.254/"}),
                "url must not point at a link-local address",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "http://u:p@h.example/"}),
                "url must not carry a user name or password",
            ),
            (
                json!({"name": "n", "type": "webpush"}),
                "subscription must be",
            ),
            (
                json!({"name": "n", "type": "webpush", "subscription": {"endpoint": "http://[::1]/x", "keys": {}}}),
                "subscription.endpoint must not point at a loopback address",
            ),
            (
                json!({"name": "n", "type": "webpush", "subscription": {"endpoint": "https://p.example/x", "keys": {"p256dh": "AAAA", "auth": "BTBZMqHH6r4Tts7J_aSIgg"}}}),
                "subscription.keys.p256dh must be 65 bytes",
            ),
            (
                json!({"name": "n", "type": "webpush", "subscription": {"endpoint": "https://p.example/x", "keys": {"p256dh": P256DH}}}),
                "subscription.keys.auth is required",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"kinds": []}}),
                "rules.kinds must name at least one kind",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"kinds": ["cat"]}}),
                "rules.kinds may only name",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"cameras": ["x"]}}),
                "rules.cameras must be an array of camera ids",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"zones": [""]}}),
                "rules.zones[0] must be 1 to 32 characters",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"cooldownSeconds": -1}}),
                "rules.cooldownSeconds must be a whole number",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"atEnd": 1}}),
                "rules.atEnd must be true or false",
            ),
            (
                json!({"name": "n", "type": "webhook", "url": "https://h.example/", "rules": {"loitering": "yes"}}),
                "rules.loitering must be true or false",
            ),
        ];
        for (body, message) in table {
            let got = refused(body.clone());
            assert!(got.starts_with(message), "{body}: {got}");
        }
    }

    #[test]
    fn patches_change_what_they_name_and_rotate_the_secret() {
        let hook = from_new(&fields(
            json!({"name": "h", "type": "webhook", "url": "https://h.example/x"}),
        ))
        .unwrap();
        let (same, rotated) =
            patched(&hook, &fields(json!({"rules": {"cooldownSeconds": 5}}))).unwrap();
        assert!(!rotated);
        assert_eq!(same.target, hook.target);
        assert_eq!(same.rules.cooldown_s, 5);
        assert_eq!(same.rules.kinds, Rules::default().kinds, "the rest kept");
        let (new, rotated) = patched(&hook, &fields(json!({"rotateSecret": true}))).unwrap();
        assert!(rotated);
        assert_ne!(new.target, hook.target);
        let wrong = patched(&hook, &fields(json!({"topic": "t"}))).unwrap_err();
        assert_eq!(
            wrong.message,
            "topic is not a field of a webhook destination"
        );
        let ntfy = from_new(&fields(
            json!({"name": "n", "type": "ntfy", "topic": "t", "token": "tk"}),
        ))
        .unwrap();
        let (cleared, _) = patched(&ntfy, &fields(json!({"token": null}))).unwrap();
        assert!(matches!(cleared.target, Target::Ntfy { token: None, .. }));
    }

    #[test]
    fn targets_are_kept_as_they_were_made() {
        let targets = [
            Target::WebPush {
                endpoint: "https://p.example/x".into(),
                p256dh: P256DH.into(),
                auth: "BTBZMqHH6r4Tts7J_aSIgg".into(),
            },
            Target::Ntfy {
                server: "https://ntfy.sh".into(),
                topic: "t".into(),
                token: None,
            },
            Target::Ntfy {
                server: "https://ntfy.sh".into(),
                topic: "t".into(),
                token: Some("tk".into()),
            },
            Target::Webhook {
                url: "https://h.example/x".into(),
                secret: "s".into(),
            },
        ];
        for target in targets {
            assert_eq!(Target::from_stored(&target.stored()), Some(target.clone()));
        }
        assert_eq!(Target::from_stored(r#"{"type": "mail"}"#), None);
    }

    #[test]
    fn views_show_no_secret() {
        let ntfy = from_new(&fields(json!({"name": "n", "type": "ntfy", "topic": "secret_topic_9", "token": "tk_SECRET", "server": "https://ntfy.example.com/base/"}))).unwrap();
        let view = view(&ntfy);
        let text = view.to_string();
        assert!(
            !text.contains("tk_SECRET") && !text.contains("secret_topic_9"),
            "{text}"
        );
        assert_eq!(view["topicHint"], "sec…");
        assert_eq!(view["server"], "https://ntfy.example.com");
        assert_eq!(view["tokenSet"], true);
        let hook = from_new(&fields(json!({"name": "h", "type": "webhook", "url": "https://h.example:8443/hook/PATHSECRET"}))).unwrap();
        let text = super::view(&hook).to_string();
        assert!(!text.contains("PATHSECRET"), "{text}");
        let Target::Webhook { secret, .. } = &hook.target else {
            unreachable!()
        };
        assert!(!text.contains(secret.as_str()));
        assert!(text.contains("\"host\":\"h.example:8443\""), "{text}");
    }
}

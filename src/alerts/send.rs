//! Sending one alert to one destination, by its kind: a Web Push message
//! (RFC 8030) to the browser's push service, a message published to an
//! ntfy topic (by ntfy's documented publish API), or a signed webhook. The
//! HTTP client checks every address it connects to (`address::Resolver`),
//! follows no redirect, and trusts the system's authorities. What goes
//! wrong is said in plain words naming the host alone: the client's own
//! error text holds the whole URL, which may carry a token.

use std::error::Error as _;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use serde_json::json;
use url::Url;
use uuid::Uuid;

use super::address::{self, Refused};
use super::destination::Target;
use super::message::{Message, Phase, SNOOZE_MINUTES};
use super::webpush::{self, Vapid};
use crate::tls;

/// How long a push service keeps a message for a phone that is away.
const PUSH_TTL_S: u32 = 12 * 3600;

/// What a try came to.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Delivered,
    /// Worth trying again later; why, in plain words.
    Failed(String),
    /// The push subscription is no more (404, 410): the browser left.
    Gone(String),
}

/// What a send needs besides the destination and the message.
pub struct Context<'a> {
    /// The node's address, for links (`NODE_URL`).
    pub base: &'a str,
    pub node_name: &'a str,
    pub vapid: &'a Vapid,
    /// The alert's id: the receiver drops a second copy by it.
    pub alert_id: Uuid,
    /// A picture of what was seen (JPEG), for ntfy.
    pub picture: Option<&'a [u8]>,
    /// Seconds since the epoch, for the VAPID token.
    pub now_s: u64,
}

pub struct Sender {
    agent: ureq::Agent,
}

impl Default for Sender {
    fn default() -> Sender {
        Sender {
            agent: ureq::AgentBuilder::new()
                .tls_connector(tls::Connector::system())
                .resolver(address::Resolver)
                .redirects(0)
                .timeout_connect(Duration::from_secs(5))
                .timeout(Duration::from_secs(15))
                .user_agent(concat!("nvr-node/", env!("CARGO_PKG_VERSION")))
                .build(),
        }
    }
}

impl Sender {
    pub fn send(&self, target: &Target, message: &Message, cx: &Context) -> Outcome {
        match target {
            Target::WebPush {
                endpoint,
                p256dh,
                auth,
            } => self.web_push(endpoint, p256dh, auth, message, cx),
            Target::Ntfy {
                server,
                topic,
                token,
            } => {
                let url = format!("{server}/{topic}");
                let first = self.ntfy(&url, token.as_deref(), message, cx, cx.picture);
                match first {
                    // A server that takes no attachments takes the message.
                    Err(Failure::Status(400 | 413)) if cx.picture.is_some() => {
                        self.ntfy(&url, token.as_deref(), message, cx, None)
                    }
                    other => other,
                }
                .map_or_else(|why| failed(&url, why), |()| Outcome::Delivered)
            }
            Target::Webhook { url, secret } => self.webhook(url, secret, message, cx),
        }
    }

    fn web_push(
        &self,
        endpoint: &str,
        p256dh: &str,
        auth: &str,
        message: &Message,
        cx: &Context,
    ) -> Outcome {
        let event = message.event_id();
        let test = message.phase == Phase::Test;
        let payload = json!({
            "title": message.title(cx.node_name),
            "body": message.body(),
            "phase": message.phase,
            "tag": event,
            "eventId": event,
            "cameraId": message.camera_id,
            "camera": message.camera_name,
            "kind": message.kind(),
            "at": message.event["startedAt"],
            "url": if test { "/".to_owned() } else { format!("/review?event={event}") },
            "image": (!test).then(|| format!("/api/events/{event}/thumbnail.jpg")),
            "snooze": format!("/api/cameras/{}/snooze", message.camera_id),
            "snoozeMinutes": SNOOZE_MINUTES,
        });
        let keys = webpush::decode(p256dh).zip(webpush::decode(auth));
        let Some(body) = keys
            .and_then(|(key, auth)| webpush::encrypt(payload.to_string().as_bytes(), &key, &auth))
        else {
            return Outcome::Gone("the subscription's keys are not usable".into());
        };
        let Ok(url) = Url::parse(endpoint) else {
            return Outcome::Gone("the subscription's endpoint is not a URL".into());
        };
        let audience = url.origin().ascii_serialization();
        let subject = match cx.base.starts_with("https://") {
            true => cx.base.to_owned(),
            false => "mailto:nvr-node@localhost".to_owned(),
        };
        let mut request = self
            .agent
            .post(endpoint)
            .set("TTL", &PUSH_TTL_S.to_string())
            .set("Content-Encoding", "aes128gcm")
            .set("Content-Type", "application/octet-stream")
            .set("Urgency", if message.urgent() { "high" } else { "normal" })
            .set(
                "Authorization",
                &cx.vapid.authorization(&audience, &subject, cx.now_s),
            );
        if !test {
            // An update takes the place of its alert not yet delivered.
            request = request.set("Topic", &event.replace('-', ""));
        }
        match status(request.send_bytes(&body)) {
            Ok(_) => Outcome::Delivered,
            Err(Failure::Status(code @ (404 | 410))) => Outcome::Gone(format!(
                "the push service answered {code}: the browser no longer takes alerts"
            )),
            Err(why) => failed(endpoint, why),
        }
    }

    /// Publishes to ntfy: with the picture as an attachment (PUT), else the
    /// text as the body.
    fn ntfy(
        &self,
        url: &str,
        token: Option<&str>,
        message: &Message,
        cx: &Context,
        picture: Option<&[u8]>,
    ) -> Result<(), Failure> {
        let links = message.links(cx.base);
        let tag = match message.kind() {
            "person" => "bust_in_silhouette",
            "vehicle" => "car",
            "animal" => "paw_prints",
            "package" => "package",
            _ => "eyes",
        };
        let actions = json!([
            {"action": "view", "label": "Open", "url": links.event},
            {"action": "http", "label": format!("Snooze {SNOOZE_MINUTES} min"), "url": links.snooze,
             "method": "POST", "headers": {"Content-Type": "application/json"},
             "body": json!({"minutes": SNOOZE_MINUTES}).to_string(), "clear": true},
        ]);
        let method = if picture.is_some() { "PUT" } else { "POST" };
        let mut request = self
            .agent
            .request(method, url)
            .set("Title", &header_text(&message.title(cx.node_name)))
            .set(
                "Priority",
                if message.urgent() { "high" } else { "default" },
            )
            .set("Tags", tag)
            .set("Click", &links.event)
            .set("Actions", &actions.to_string());
        if let Some(token) = token {
            request = request.set("Authorization", &format!("Bearer {token}"));
        }
        let sent = match picture {
            Some(jpeg) => request
                .set("Message", &header_text(&message.body()))
                .set("Filename", "picture.jpg")
                .send_bytes(jpeg),
            None => request.send_string(&message.body()),
        };
        status(sent).map(drop)
    }

    fn webhook(&self, url: &str, secret: &str, message: &Message, cx: &Context) -> Outcome {
        let links = message.links(cx.base);
        let body = json!({
            "alertId": cx.alert_id.to_string(),
            "type": message.phase,
            "event": message.event,
            "camera": {"id": message.camera_id, "name": message.camera_name},
            "node": {"name": cx.node_name},
            "title": message.title(cx.node_name),
            "eventUrl": links.event,
            "thumbnailUrl": links.thumbnail,
            "clipUrl": links.clip,
            "snoozeUrl": links.snooze,
        })
        .to_string();
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        let signature: String = hmac::sign(&key, body.as_bytes())
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let sent = self
            .agent
            .post(url)
            .set("Content-Type", "application/json")
            .set("X-Nvr-Alert-Id", &cx.alert_id.to_string())
            .set("X-Nvr-Signature", &format!("sha256={signature}"))
            .send_string(&body);
        match status(sent) {
            Ok(_) => Outcome::Delivered,
            Err(why) => failed(url, why),
        }
    }
}

/// Why a request got no success.
#[derive(Debug, PartialEq)]
enum Failure {
    Status(u16),
    /// No answer: why, in plain words.
    NoAnswer(String),
}

/// The status of an answer that is a success (2xx), or why there is none.
fn status(sent: Result<ureq::Response, ureq::Error>) -> Result<u16, Failure> {
    match sent {
        Ok(response) if (200..300).contains(&response.status()) => Ok(response.status()),
        Ok(response) => Err(Failure::Status(response.status())),
        Err(ureq::Error::Status(code, _)) => Err(Failure::Status(code)),
        Err(ureq::Error::Transport(transport)) => Err(Failure::NoAnswer(cause(&transport))),
    }
}

/// Why sending to `url` failed, naming its host alone.
fn failed(url: &str, failure: Failure) -> Outcome {
    let host = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    Outcome::Failed(match failure {
        Failure::Status(code @ (401 | 403)) => {
            format!("{host} refused the node ({code}): check the access token or the key")
        }
        Failure::Status(code @ 300..=399) => {
            format!("{host} answered {code}, a redirect, which the node does not follow")
        }
        Failure::Status(code) => format!("{host} answered {code}"),
        Failure::NoAnswer(why) => format!("no answer from {host}: {why}"),
    })
}

/// A transport error's cause without its URL: where it was refused, or the
/// operating system's words.
fn cause(transport: &ureq::Transport) -> String {
    let mut source = transport.source();
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return refused.to_string();
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return match io.get_ref() {
                Some(inner) => inner.to_string(),
                None => io.to_string(),
            };
        }
        source = e.source();
    }
    match transport.kind() {
        ureq::ErrorKind::Dns => "its name does not resolve".to_owned(),
        kind => kind.to_string(),
    }
}

/// A header's value: as it is in ASCII, else as RFC 2047's encoded word,
/// which ntfy reads.
fn header_text(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_owned()
    } else {
        format!("=?UTF-8?B?{}?=", STANDARD.encode(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_ascii_or_encoded_words() {
        assert_eq!(header_text("Person at Door"), "Person at Door");
        assert_eq!(
            header_text("Person at Tür"),
            "=?UTF-8?B?UGVyc29uIGF0IFTDvHI=?="
        );
    }

    #[test]
    fn failures_name_the_host_alone() {
        let url = "https://hooks.example.com/hook/SECRET?token=X";
        assert_eq!(
            failed(url, Failure::Status(500)),
            Outcome::Failed("hooks.example.com answered 500".into())
        );
        let Outcome::Failed(refused) = failed(url, Failure::Status(401)) else {
            unreachable!()
        };
        assert!(refused.starts_with("hooks.example.com refused the node (401)"));
    }

    #[test]
    fn loopback_is_refused_before_connecting_and_said_so() {
        let url = "http://127.0.0.1:1984/api/streams?src=SECRET";
        let sent = Sender::default().agent.get(url).call();
        let why = status(sent).unwrap_err();
        assert_eq!(
            failed(url, why),
            Outcome::Failed(
                "no answer from 127.0.0.1: the host resolves to a loopback address".into()
            )
        );
    }
}

//! The cloud link: the node's side of pairing, modelled on the OAuth 2.0
//! device authorization grant (RFC 8628), then a heartbeat while claimed.
//! The protocol is written down in `deploy/cloud-protocol.md`.
//!
//! States, as `GET /api/status` shows them: `disabled` (no `CLOUD_URL`),
//! `registering`, `unclaimed` (with the claim code), `connecting`, `online`,
//! and `error` (the cloud rejected the node; it registers afresh after a pause).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use crate::app::App;
use crate::clock::now_ms;
use crate::link_state::LinkState;
use crate::store::Identity;
use crate::tls;

/// The wait after the cloud rejects the node, before registering afresh.
const ERROR_PAUSE: Duration = Duration::from_secs(10);
/// Heartbeat interval when the cloud names none.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);
/// Added to the poll interval each time the cloud says `slow_down` (RFC 8628, 3.5).
const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);
/// Claim codes: no 0/O, 1/I/L look-alikes.
const CLAIM_ALPHABET: &str = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Why a call to the cloud failed. Never carries the cloud's text or the secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloudError {
    /// Refused, timed out, 429 or 5xx: try again later.
    Unreachable,
    /// 401, 403, 404 or 410: the cloud does not (or no longer) know this node.
    Rejected,
    /// An answer this node cannot use.
    Protocol(&'static str),
}

/// What a claim poll found (RFC 8628's token endpoint answers).
#[derive(Debug, PartialEq)]
pub enum Claim {
    Claimed,
    Pending,
    SlowDown,
    Expired,
}

/// A claim code, checked and formatted `XXXX-XXXX`, with its lifetime.
#[derive(Debug, PartialEq)]
pub struct ClaimCode {
    pub code: String,
    pub expires_in: Duration,
    pub interval: Duration,
}

pub struct Client {
    base: String,
    agent: ureq::Agent,
    /// Clip uploads may take a while on a slow uplink.
    uploads: ureq::Agent,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodeAnswer {
    claim_code: String,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RegisterAnswer {
    node_id: String,
    node_secret: String,
    #[serde(flatten)]
    code: CodeAnswer,
}

impl Client {
    pub fn new(base: &str) -> Client {
        let agent = |total| {
            ureq::AgentBuilder::new()
                .tls_connector(tls::Connector::system())
                .timeout_connect(Duration::from_secs(5))
                .timeout(total)
                .build()
        };
        Client {
            base: base.trim_end_matches('/').to_owned(),
            agent: agent(Duration::from_secs(20)),
            uploads: agent(Duration::from_secs(300)),
        }
    }

    fn post(
        &self,
        path: &str,
        identity: Option<&Identity>,
        body: serde_json::Value,
    ) -> Result<ureq::Response, Box<ureq::Error>> {
        let mut request = self.agent.post(&format!("{}{path}", self.base));
        if let Some(identity) = identity {
            request = request.set("Authorization", &format!("Bearer {}", identity.secret));
        }
        request
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
            .map_err(Box::new)
    }

    /// `POST /v1/nodes`: a new identity and its first claim code.
    pub fn register(&self, name: &str, version: &str) -> Result<(Identity, ClaimCode), CloudError> {
        let answer: RegisterAnswer = json_answer(self.post(
            "/v1/nodes",
            None,
            json!({ "name": name, "version": version }),
        ))?;
        if answer.node_secret.is_empty() || uuid::Uuid::try_parse(&answer.node_id).is_err() {
            return Err(CloudError::Protocol(
                "the cloud sent an unusable node id or secret",
            ));
        }
        let identity = Identity {
            node_id: answer.node_id,
            secret: answer.node_secret,
            claimed: false,
        };
        Ok((identity, claim_code(answer.code)?))
    }

    /// `POST /v1/nodes/{id}/claim-code`: a fresh claim code for an unclaimed node.
    pub fn new_claim_code(&self, identity: &Identity) -> Result<ClaimCode, CloudError> {
        let path = format!("/v1/nodes/{}/claim-code", identity.node_id);
        claim_code(json_answer(self.post(&path, Some(identity), json!({})))?)
    }

    /// `POST /v1/nodes/{id}/claim`: has a person claimed the node yet?
    pub fn poll_claim(&self, identity: &Identity) -> Result<Claim, CloudError> {
        let path = format!("/v1/nodes/{}/claim", identity.node_id);
        match self.post(&path, Some(identity), json!({})).map_err(|e| *e) {
            Ok(_) => Ok(Claim::Claimed),
            Err(ureq::Error::Status(400, response)) => {
                #[derive(Deserialize)]
                struct Pending {
                    error: String,
                }
                let answer: Pending = read_json(response)?;
                match answer.error.as_str() {
                    "authorization_pending" => Ok(Claim::Pending),
                    "slow_down" => Ok(Claim::SlowDown),
                    "expired_token" => Ok(Claim::Expired),
                    _ => Err(CloudError::Protocol(
                        "the cloud answered the claim poll with an unknown error",
                    )),
                }
            }
            Err(e) => Err(classify(e)),
        }
    }

    /// `POST /v1/nodes/{id}/heartbeat` with a summary; returns the next interval.
    pub fn heartbeat(
        &self,
        identity: &Identity,
        summary: serde_json::Value,
    ) -> Result<Duration, CloudError> {
        #[derive(Deserialize)]
        struct Answer {
            #[serde(default)]
            interval: Option<u64>,
        }
        let path = format!("/v1/nodes/{}/heartbeat", identity.node_id);
        let answer: Answer = json_answer(self.post(&path, Some(identity), summary))?;
        Ok(answer.interval.map_or(DEFAULT_HEARTBEAT, seconds))
    }

    /// `PUT /v1/nodes/{id}/clips/{eventId}` with the clip `name`, opened as
    /// `body` (by `Clips::open`, which follows no link), as the body.
    pub fn upload_clip(
        &self,
        identity: &Identity,
        event: uuid::Uuid,
        name: &str,
        body: std::fs::File,
    ) -> Result<(), CloudError> {
        let url = format!("{}/v1/nodes/{}/clips/{event}", self.base, identity.node_id);
        let content_type = match Path::new(name).extension().and_then(|e| e.to_str()) {
            Some("mp4") => "video/mp4",
            _ => "application/octet-stream",
        };
        self.uploads
            .put(&url)
            .set("Authorization", &format!("Bearer {}", identity.secret))
            .set("Content-Type", content_type)
            .send(body)
            .map(drop)
            .map_err(classify)
    }
}

fn seconds(s: u64) -> Duration {
    Duration::from_secs(s.clamp(1, 3600))
}

fn classify(error: ureq::Error) -> CloudError {
    match error {
        ureq::Error::Status(401 | 403 | 404 | 410, _) => CloudError::Rejected,
        ureq::Error::Status(429 | 500..=599, _) | ureq::Error::Transport(_) => {
            CloudError::Unreachable
        }
        ureq::Error::Status(_, _) => {
            CloudError::Protocol("the cloud answered with an unexpected status")
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(response: ureq::Response) -> Result<T, CloudError> {
    let reader = response.into_reader().take(64 * 1024);
    serde_json::from_reader(reader)
        .map_err(|_| CloudError::Protocol("the cloud sent an answer this node cannot read"))
}

fn json_answer<T: serde::de::DeserializeOwned>(
    result: Result<ureq::Response, Box<ureq::Error>>,
) -> Result<T, CloudError> {
    read_json(result.map_err(|e| classify(*e))?)
}

/// Checks a claim code: 8 characters of [`CLAIM_ALPHABET`], with or without the dash.
fn claim_code(answer: CodeAnswer) -> Result<ClaimCode, CloudError> {
    let bare: String = answer.claim_code.chars().filter(|c| *c != '-').collect();
    if bare.len() != 8
        || !bare.chars().all(|c| CLAIM_ALPHABET.contains(c))
        || answer.claim_code.len() > 9
    {
        return Err(CloudError::Protocol(
            "the cloud sent an unusable claim code",
        ));
    }
    Ok(ClaimCode {
        code: format!("{}-{}", &bare[..4], &bare[4..]),
        expires_in: Duration::from_secs(answer.expires_in.min(86_400)),
        interval: answer.interval.map_or(Duration::from_secs(5), seconds),
    })
}

/// Exponential backoff from 1 s, doubling to at most 60 s, each wait ±25 %.
#[derive(Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let base = Duration::from_secs(1 << self.failures.min(6)).min(Duration::from_secs(60));
        self.failures += 1;
        // Jitter, so nodes that lost the cloud together do not all return at once.
        let random = (crate::id::new_id().as_u128() % 1000) as f64 / 1000.0;
        base.mul_f64(0.75 + random * 0.5)
    }

    fn reset(&mut self) {
        self.failures = 0;
    }
}

/// Where the link is, between steps.
enum Phase {
    Register,
    /// Has an identity, needs a claim code (after a restart, or the last one expired).
    NeedCode,
    Unclaimed {
        expires: Instant,
        interval: Duration,
    },
    Heartbeat,
}

/// Starts the link when `CLOUD_URL` is set.
pub fn spawn(app: Arc<App>, base: &str) {
    let client = Client::new(base);
    crate::spawn::spawn(thread::Builder::new(), move || {
        let mut backoff = Backoff::default();
        let mut phase = match app.db(|s| s.identity()) {
            Ok(Some(identity)) if identity.claimed => Phase::Heartbeat,
            Ok(Some(_)) => Phase::NeedCode,
            _ => Phase::Register,
        };
        if matches!(phase, Phase::Heartbeat) {
            app.set_cloud_state(LinkState::Connecting);
        }
        loop {
            let (next, wait) = step(&app, &client, phase, &mut backoff);
            phase = next;
            thread::sleep(wait);
        }
    })
    .expect("failed to spawn thread");
}

/// One step of the link; returns the next phase and how long to wait first.
fn step(app: &App, client: &Client, phase: Phase, backoff: &mut Backoff) -> (Phase, Duration) {
    let identity = match app.db(|s| s.identity()) {
        Ok(identity) => identity,
        Err(_) => return (phase, backoff.next()),
    };
    let rejected = |app: &App, message: &str| {
        // Forget the identity: the next registration starts afresh.
        let _ = app.db(|s| s.set_identity(None));
        app.set_cloud_state(LinkState::Error {
            message: message.to_owned(),
        });
        (Phase::Register, ERROR_PAUSE)
    };
    match (phase, identity) {
        (Phase::Register, _) | (_, None) => {
            app.set_cloud_state(LinkState::Registering);
            match client.register(&app.node_name(), env!("CARGO_PKG_VERSION")) {
                Ok((identity, code)) => {
                    if app.db(|s| s.set_identity(Some(&identity))).is_err() {
                        return (Phase::Register, backoff.next());
                    }
                    backoff.reset();
                    show_code(app, code)
                }
                Err(CloudError::Unreachable) => (Phase::Register, backoff.next()),
                Err(CloudError::Rejected) => {
                    rejected(app, "the cloud refused to register this node")
                }
                Err(CloudError::Protocol(message)) => rejected(app, message),
            }
        }
        (Phase::NeedCode, Some(identity)) => match client.new_claim_code(&identity) {
            Ok(code) => {
                backoff.reset();
                show_code(app, code)
            }
            Err(CloudError::Unreachable) => {
                app.set_cloud_state(LinkState::Registering);
                (Phase::NeedCode, backoff.next())
            }
            Err(CloudError::Rejected) => rejected(
                app,
                "the cloud no longer knows this node; registering again",
            ),
            Err(CloudError::Protocol(message)) => rejected(app, message),
        },
        (Phase::Unclaimed { expires, interval }, Some(identity)) => {
            if Instant::now() >= expires {
                return (Phase::NeedCode, Duration::ZERO);
            }
            match client.poll_claim(&identity) {
                Ok(Claim::Claimed) => {
                    let claimed = Identity {
                        claimed: true,
                        ..identity
                    };
                    if app.db(|s| s.set_identity(Some(&claimed))).is_err() {
                        return (Phase::Unclaimed { expires, interval }, interval);
                    }
                    app.set_cloud_state(LinkState::Connecting);
                    backoff.reset();
                    (Phase::Heartbeat, Duration::ZERO)
                }
                Ok(Claim::Pending) => (Phase::Unclaimed { expires, interval }, interval),
                Ok(Claim::SlowDown) => {
                    let interval = interval + SLOW_DOWN_STEP;
                    (Phase::Unclaimed { expires, interval }, interval)
                }
                Ok(Claim::Expired) => (Phase::NeedCode, Duration::ZERO),
                Err(CloudError::Unreachable) => (
                    Phase::Unclaimed { expires, interval },
                    backoff.next().max(interval),
                ),
                Err(CloudError::Rejected) => rejected(
                    app,
                    "the cloud no longer knows this node; registering again",
                ),
                Err(CloudError::Protocol(message)) => rejected(app, message),
            }
        }
        (Phase::Heartbeat, Some(identity)) => {
            match client.heartbeat(&identity, app.cloud_summary()) {
                Ok(interval) => {
                    app.set_cloud_state(LinkState::Online);
                    backoff.reset();
                    (Phase::Heartbeat, interval)
                }
                Err(CloudError::Rejected) => rejected(
                    app,
                    "the cloud no longer knows this node (it may have been removed from its account); registering again",
                ),
                Err(CloudError::Unreachable | CloudError::Protocol(_)) => {
                    app.set_cloud_state(LinkState::Connecting);
                    (Phase::Heartbeat, backoff.next())
                }
            }
        }
    }
}

fn show_code(app: &App, code: ClaimCode) -> (Phase, Duration) {
    app.set_cloud_state(LinkState::Unclaimed {
        code: code.code,
        expires_at_ms: now_ms() + code.expires_in.as_millis() as i64,
    });
    let phase = Phase::Unclaimed {
        expires: Instant::now() + code.expires_in,
        interval: code.interval,
    };
    (phase, code.interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> Result<ClaimCode, CloudError> {
        claim_code(CodeAnswer {
            claim_code: text.into(),
            expires_in: 600,
            interval: Some(2),
        })
    }

    #[test]
    fn claim_codes() {
        assert_eq!(code("7KQM3XPR").unwrap().code, "7KQM-3XPR");
        assert_eq!(code("7KQM-3XPR").unwrap().code, "7KQM-3XPR");
        assert_eq!(code("7KQM-3XPR").unwrap().interval, Duration::from_secs(2));
        for bad in [
            "7KQM3XP",
            "7KQM3XPR9",
            "7kqm3xpr",
            "0KQM3XPR",
            "IKQM3XPR",
            "7KQ-M-3XPR",
            "7KQM 3XPR",
        ] {
            assert!(code(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_to_a_cap_with_jitter() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..10).map(|_| backoff.next()).collect();
        for (i, wait) in waits.iter().enumerate() {
            let base = Duration::from_secs(1 << i.min(6)).min(Duration::from_secs(60));
            assert!(
                *wait >= base.mul_f64(0.75) && *wait <= base.mul_f64(1.25),
                "{i}: {wait:?}"
            );
        }
        backoff.reset();
        assert!(backoff.next() <= Duration::from_millis(1250));
    }

    #[test]
    fn status_fields() {
        let unclaimed = LinkState::Unclaimed {
            code: "7KQM-3XPR".into(),
            expires_at_ms: 0,
        };
        assert_eq!(
            unclaimed.to_json(),
            json!({ "state": "unclaimed", "claimCode": "7KQM-3XPR", "claimCodeExpiresAt": "1970-01-01T00:00:00.000Z" })
        );
        let error = LinkState::Error {
            message: "gone".into(),
        };
        assert_eq!(
            error.to_json(),
            json!({ "state": "error", "message": "gone" })
        );
        assert_eq!(LinkState::Online.to_json(), json!({ "state": "online" }));
    }
}

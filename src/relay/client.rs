//! Client for the stream relay (go2rtc's HTTP API): stream registration,
//! health, and WHEP offers.
//!
//! Errors are reduced to a status code or "unreachable": the relay's text and
//! ureq's error messages carry the request URL, whose query holds the camera
//! address with its password.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

/// The largest SDP answer accepted from the relay.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// The largest stream listing accepted from the relay.
const MAX_LISTING_BYTES: u64 = 4 * 1024 * 1024;
/// The largest `GET /api` answer read for the relay's version.
const MAX_INFO_BYTES: u64 = 64 * 1024;
/// The longest relay version shown.
const MAX_VERSION_CHARS: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayError {
    /// Refused, timed out, or an unreadable answer.
    Unreachable,
    /// The relay answered with this non-2xx status.
    Status(u16),
    /// A 2xx without an SDP answer in its body.
    EmptyAnswer,
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::Unreachable => f.write_str("relay unreachable"),
            RelayError::Status(code) => write!(f, "relay answered {code}"),
            RelayError::EmptyAnswer => f.write_str("relay answered without an SDP answer"),
        }
    }
}

/// The relay's answer to a WHEP offer.
pub struct WhepAnswer {
    pub sdp: String,
    /// The relay's session resource, if it names one.
    pub location: Option<String>,
}

pub struct Relay {
    base: String,
    /// For WHEP offers, which wait for the camera: 2 s to connect, 15 s in all.
    agent: ureq::Agent,
    /// For health checks and stream changes, which go2rtc answers at once: 2 s in all.
    quick: ureq::Agent,
}

impl Relay {
    pub fn new(base: &str) -> Relay {
        let agent = |total| {
            ureq::AgentBuilder::new()
                // No kept-alive connections: a restarted relay would leave them stale,
                // and a new connection to the board's own relay costs ~0.1 ms.
                .max_idle_connections(0)
                .timeout_connect(Duration::from_secs(2))
                .timeout(total)
                .build()
        };
        Relay {
            base: base.trim_end_matches('/').to_owned(),
            agent: agent(Duration::from_secs(15)),
            quick: agent(Duration::from_secs(2)),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Whether the relay answers `GET /api`, and the version it names there, if
    /// it names one fit to show.
    pub fn health(&self) -> Result<Option<String>, RelayError> {
        let response = send(self.quick.get(&self.url("/api")).call())?;
        let reader = response.into_reader().take(MAX_INFO_BYTES);
        let info: serde_json::Value = serde_json::from_reader(reader).unwrap_or_default();
        Ok(info["version"]
            .as_str()
            .filter(|v| showable_version(v))
            .map(str::to_owned))
    }

    /// The relay's streams and their sources. The sources carry passwords: never log them.
    pub fn streams(&self) -> Result<BTreeMap<String, Vec<String>>, RelayError> {
        let response = send(self.quick.get(&self.url("/api/streams")).call())?;
        let reader = response.into_reader().take(MAX_LISTING_BYTES);
        let listing: serde_json::Value =
            serde_json::from_reader(reader).map_err(|_| RelayError::Unreachable)?;
        let Some(streams) = listing.as_object() else {
            return Err(RelayError::Unreachable);
        };
        let sources = |stream: &serde_json::Value| -> Vec<String> {
            let producers = stream["producers"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            producers
                .iter()
                .filter_map(|p| p["url"].as_str().map(str::to_owned))
                .collect()
        };
        Ok(streams
            .iter()
            .map(|(name, stream)| (name.clone(), sources(stream)))
            .collect())
    }

    /// Adds or replaces the stream `name` with source `src`.
    pub fn put_stream(&self, name: &str, src: &str) -> Result<(), RelayError> {
        let request = self.quick.put(&self.url("/api/streams"));
        send(request.query("name", name).query("src", src).call()).map(drop)
    }

    pub fn delete_stream(&self, name: &str) -> Result<(), RelayError> {
        let request = self.quick.delete(&self.url("/api/streams"));
        send(request.query("src", name).call()).map(drop)
    }

    /// Forwards a WHEP offer for stream `name`; returns the SDP answer.
    pub fn whep(&self, name: &str, offer: &str) -> Result<WhepAnswer, RelayError> {
        let request = self
            .agent
            .post(&self.url("/api/webrtc"))
            .query("src", name)
            .set("Content-Type", "application/sdp");
        let response = send(request.send_string(offer))?;
        let location = response.header("Location").map(str::to_owned);
        let mut answer = String::new();
        response
            .into_reader()
            .take(MAX_ANSWER_BYTES)
            .read_to_string(&mut answer)
            .map_err(|_| RelayError::Unreachable)?;
        if answer.trim().is_empty() {
            return Err(RelayError::EmptyAnswer);
        }
        Ok(WhepAnswer {
            sdp: answer,
            location,
        })
    }

    /// Ends the relay's side of a WHEP session at its `Location`, resolved
    /// against the relay's API; a location elsewhere is not followed.
    pub fn end_session(&self, location: &str) -> Result<(), RelayError> {
        let url = if location.starts_with("http://") || location.starts_with("https://") {
            location.to_owned()
        } else if location.starts_with('/') {
            self.url(location)
        } else {
            self.url(&format!("/api/{location}"))
        };
        if !url.starts_with(&format!("{}/", self.base)) {
            return Err(RelayError::Status(400));
        }
        send(self.quick.delete(&url).call()).map(drop)
    }
}

/// A short version string such as `1.9.14` or `1.9.14+dev.`, and nothing
/// that could carry markup or a message.
fn showable_version(version: &str) -> bool {
    (1..=MAX_VERSION_CHARS).contains(&version.len())
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+_~-".contains(&b))
}

fn send(result: Result<ureq::Response, ureq::Error>) -> Result<ureq::Response, RelayError> {
    match result {
        Ok(response) => Ok(response),
        Err(ureq::Error::Status(code, _)) => Err(RelayError::Status(code)),
        Err(ureq::Error::Transport(_)) => Err(RelayError::Unreachable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_fit_to_show() {
        for version in ["1.9.14", "1.9.14+dev.", "v2_rc~1-x", &"9".repeat(40)] {
            assert!(showable_version(version), "{version}");
        }
        for version in ["", "1.9 beta", "<b>1</b>", "1.9.14\n", "é", &"9".repeat(41)] {
            assert!(!showable_version(version), "{version}");
        }
    }
}

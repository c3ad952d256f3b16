//! The cloud link's state, as status shows it: held by the node (`App`),
//! moved along by the link (`cloud::link`).

use serde_json::json;

use crate::event::format_timestamp;

/// The link's state as status shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum LinkState {
    Disabled,
    Registering,
    Unclaimed { code: String, expires_at_ms: i64 },
    Connecting,
    Online,
    Error { message: String },
}

impl LinkState {
    pub fn name(&self) -> &'static str {
        match self {
            LinkState::Disabled => "disabled",
            LinkState::Registering => "registering",
            LinkState::Unclaimed { .. } => "unclaimed",
            LinkState::Connecting => "connecting",
            LinkState::Online => "online",
            LinkState::Error { .. } => "error",
        }
    }

    /// The status fields: `state`, and `claimCode` with `claimCodeExpiresAt`, or `message`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            LinkState::Unclaimed {
                code,
                expires_at_ms,
            } => json!({
                "state": self.name(),
                "claimCode": code,
                "claimCodeExpiresAt": format_timestamp(*expires_at_ms),
            }),
            LinkState::Error { message } => json!({ "state": self.name(), "message": message }),
            _ => json!({ "state": self.name() }),
        }
    }
}

//! MQTT for Home Assistant (issue 16): the packets (`codec`), the session
//! that owns the broker connection (`session`), and the topics and
//! discovery messages the node publishes (`topics`).

pub mod codec;
pub mod config;
pub mod session;
pub mod tls;
pub mod topics;

pub use session::State;

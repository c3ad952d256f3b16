//! MQTT for Home Assistant (issue 16): the packets (`codec`), the session
//! that owns the broker connection (`session`), the topics and discovery
//! messages the node publishes (`topics`), and how much the broker's
//! messages may cost it (`limit`).

pub mod codec;
pub mod config;
pub mod limit;
pub mod session;
pub mod topics;

pub use session::State;

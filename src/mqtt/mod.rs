//! Home Assistant through MQTT (issue 16): the packets so far; the session
//! that owns the broker connection, discovery and the topics come next.
#![allow(dead_code)] // Not wired into the node yet.

pub mod codec;
pub mod session;

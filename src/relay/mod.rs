//! The stream relay (go2rtc): its HTTP API (`client`) and the WHEP sessions
//! handed out through it (`sessions`). Keeping its streams in step with the
//! cameras takes the whole node, so it is background work (`relay_sync`).

pub mod client;
pub mod sessions;

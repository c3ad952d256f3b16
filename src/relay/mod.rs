//! The stream relay (go2rtc): its HTTP API (`client`), keeping its streams
//! in step with the cameras (`sync`), and the WHEP sessions handed out
//! through it (`sessions`).

pub mod client;
pub mod sessions;
pub mod sync;

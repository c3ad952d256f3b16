//! nvr-node: the local node of a network video recorder appliance. It serves
//! the Local Node API and the browser UI, records the cameras, detects and
//! classifies what moves, and proxies WHEP live view to the stream relay.
//!
//! # Layers
//!
//! A module imports only from the layers below its own, never from above:
//!
//! 1. `node`: start-up. Opens the store, binds the port, starts every
//!    subsystem and the server, and stops them on a signal.
//! 2. `web`: the HTTP side (server loop, route table, handlers in `web::api`,
//!    the UI's files); beside it, the background work that acts on the whole
//!    node: `relay::sync`, `cameras::monitor`, `cameras::follow`, `cloud`
//!    and `home_assistant`.
//! 3. `app`: the node at run time, handed to the handlers and to that
//!    background work.
//! 4. The subsystems, each owning its threads and children: `recording`,
//!    `motion`, `clips`, `classify`, `cameras`, `onvif`, `relay`, `mqtt`,
//!    `clock`, `workers`, with `notices` and `changes` telling others of
//!    what they did.
//! 5. The store: `db` (SQLite behind one lock, and the one place SQLite's
//!    errors become the node's) over `store` (the SQL).
//! 6. The ground: `media` (ffmpeg and ffprobe as supervised children, fMP4),
//!    `sys` (the operating system's calls that std does not make), `tls`,
//!    `config`, `error` and `event`.
//!
//! The documents are in `docs/`; the design of recording and motion, whose
//! rules the code cites, in `docs/design/`.

mod app;
mod cameras;
mod changes;
pub mod classify;
mod clips;
mod clock;
mod cloud;
pub mod config;
mod db;
mod error;
mod event;
mod home_assistant;
mod media;
mod motion;
mod mqtt;
mod node;
mod notices;
mod onvif;
#[cfg(test)]
mod properties;
mod recording;
mod relay;
#[cfg(test)]
mod rng;
mod store;
mod sys;
mod tls;
mod web;
mod workers;

pub use node::run;

/// What the detector's benchmark (`benches/detector.rs`) runs: the motion
/// detector as the node runs it, the masks' pixels and the frames' halving.
pub mod bench {
    pub use crate::media::polygon::{Polygon, rasterise};
    pub use crate::motion::detector::{Detector, Params};
    pub use crate::motion::frame::for_detector;
}

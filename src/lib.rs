//! nvr-node: the local node of a network video recorder appliance. It serves
//! the Local Node API and the browser UI, records the cameras, detects and
//! classifies what moves, and proxies WHEP live view to the stream relay.
//!
//! # Layers
//!
//! From the top down; a module imports only from layers below its own (and
//! its own folder), never from above, and no two modules import each other:
//!
//! 1. `node`: start-up. Opens the store, binds the port, starts every part
//!    and the server, and stops them on a signal.
//! 2. `web`: the HTTP side: the server loop, the route table, the handlers
//!    (`web::api`) and the UI's files.
//! 3. The work that acts on the whole node, beside the HTTP side:
//!    `background` (cameras answering, cameras that moved, the relay's
//!    streams), `cloud`, `home_assistant` and `alerting`.
//! 4. `app`: the node at run time, handed to the handlers and to that work.
//! 5. The footage: `motion` (over `clips`, over `recording`), each owning
//!    its threads and its children.
//! 6. The database: `db` (SQLite behind one lock, the one place where
//!    SQLite's errors become the node's) over `store` (the SQL).
//! 7. What those build on: `cameras` (a camera, its address, probing it,
//!    ONVIF), `classify`, `notices`, `alerts` (destinations, rules, sending)
//!    and `config`.
//! 8. The ground: `media` (ffmpeg and ffprobe as supervised children,
//!    fMP4), `event`, `id`, `json_body`, `clock`, `workers`, `changes`, `link_state`, `mqtt`,
//!    `relay`, `retention` (which files go first, and how many bytes, when
//!    recordings or clips must make room), `tls`, `sys` (the system calls
//!    std does not make), `spawn` (starting a thread), `lock`
//!    and `error`.
//!
//! The modules that need no I/O (the parsers, the arithmetic of pictures,
//! time and retention, the motion detector) are the crate `nvr-base`
//! (`crates/base`), re-exported where they belong (`media::fmp4`,
//! `motion::detector`, `web::range`, `mqtt::codec`, `classify::crop`,
//! `retention`, …): its unit tests are the ones run for the boards under
//! qemu.
//!
//! The documents are in `docs/`; the design of recording and motion, whose
//! rules the code cites, in `docs/design/`.

mod alerting;
mod alerts;
mod app;
mod background;
mod cameras;
mod changes;
mod channel;
mod classify;
mod clips;
mod clock;
mod cloud;
pub mod config;
mod db;
mod error;
mod event;
mod home_assistant;
mod id;
mod json_body;
mod link_state;
mod lock;
mod media;
mod motion;
mod mqtt;
mod node;
mod notices;
#[cfg(test)]
mod properties;
mod recording;
mod relay;
use nvr_base::retention;
mod spawn;
mod store;
mod sys;
mod tls;
mod web;
mod workers;

pub use node::run;

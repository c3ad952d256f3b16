//! The cloud: pairing and the heartbeat (`link`), the link's state as status
//! shows it (`state`), and clip uploads (`uploader`).

pub mod link;
pub mod state;
pub mod uploader;

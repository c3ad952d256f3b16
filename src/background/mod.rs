//! The background work that acts on the whole node (`App`), beside the
//! HTTP side: whether each camera answers (`monitor`), following a camera
//! that moved to another address (`follow`), and the relay's streams kept
//! in step with the cameras (`relay_sync`).

pub mod follow;
pub mod monitor;
pub mod relay_sync;

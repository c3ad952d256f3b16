//! The cameras: what one is and its settings (`camera`), its RTSP address
//! (`rtsp_url`), probing it (`prober`), watching that it answers
//! (`monitor`), finding cameras on the LAN (`discover`), following one that
//! moved (`follow`, `neighbours`) and its picture now (`snapshot`).

pub mod camera;
pub mod discover;
pub mod follow;
pub mod monitor;
pub mod neighbours;
pub mod prober;
pub mod rtsp_url;
pub mod snapshot;

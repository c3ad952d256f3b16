//! The cameras: what one is and its settings (`camera`), its RTSP address
//! (`rtsp_url`), whether it answers (`answers`), probing it (`prober`), the ONVIF devices they are
//! (`onvif`), finding them on the LAN (`discover`) and telling a device by
//! its hardware address (`neighbours`).

pub mod answers;
pub mod camera;
pub mod discover;
pub mod neighbours;
pub mod onvif;
pub mod prober;
pub mod rtsp_url;

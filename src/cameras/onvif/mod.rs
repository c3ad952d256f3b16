//! ONVIF client: WS-Discovery of cameras on the LAN, a device's video
//! profiles with their RTSP addresses, and its motion events. Synchronous
//! and bounded: each network step has a deadline and each answer a size limit.

mod auth;
mod device;
mod discovery;
mod error;
mod events;
mod md5;
mod soap;
mod xml;

pub use device::{Credentials, Profile, Streams, serial_number, streams};
pub use discovery::{Discovery, Found, discover, interfaces};
pub use error::OnvifError;
pub use events::PullPoint;

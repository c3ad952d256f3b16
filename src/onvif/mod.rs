//! ONVIF client: WS-Discovery of cameras on the LAN, and a device's video
//! profiles with their RTSP addresses. Synchronous and bounded: each network
//! step has a deadline and each answer a size limit.

// `unused_imports` allowance on the re-exports below.

mod auth;
mod device;
mod discovery;
mod error;
mod md5;
mod soap;
mod xml;

#[allow(unused_imports)]
pub use device::{Credentials, Profile, Streams, streams};
#[allow(unused_imports)]
pub use discovery::{Discovery, Found, Interface, discover, interfaces};
pub use error::OnvifError;

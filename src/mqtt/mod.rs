//! MQTT, as the node speaks it to Home Assistant's broker: the packets
//! (`codec`), the session that owns the broker connection (`session`), its
//! settings (`config`), and how much the broker's messages may cost the
//! node (`limit`).

pub use nvr_base::mqtt::codec;
pub mod config;
pub use nvr_base::mqtt::limit;
pub mod session;

pub use session::State;

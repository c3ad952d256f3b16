//! The cloud: pairing and the heartbeat (`link`), and clip uploads
//! (`uploader`). The link's state, which the node holds, is `link_state`.

pub mod link;
pub mod uploader;

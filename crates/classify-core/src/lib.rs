//! The classifier's part that needs no model: what the node and
//! `nvr-classify` say to each other (`protocol`), and what `nvr-classify`
//! does around its network: the SSD head's anchors, decoding and
//! suppression (`ssd`) and the model's labels (`labels`). A crate of its
//! own so that the node builds without tract and the classifier without
//! the node, and so that its unit tests run on every architecture without
//! either.

pub mod labels;
pub mod protocol;
pub mod ssd;

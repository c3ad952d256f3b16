//! The node's calls into the operating system that std does not make.

pub mod data_file;
pub mod filesystem;

//! What recording takes from the node's configuration.

use std::path::PathBuf;

use crate::config::Config;

#[derive(Clone, Debug)]
pub struct Settings {
    pub dir: PathBuf,
    /// Where the database is: whether deleting recordings frees its disk too.
    pub data_dir: PathBuf,
    pub ffmpeg: PathBuf,
    pub max_bytes: Option<u64>,
    pub keep_free: Option<u64>,
}

impl Settings {
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            dir: config.recordings_dir.clone(),
            data_dir: config.data_dir.clone(),
            ffmpeg: config.ffmpeg.clone(),
            max_bytes: config.recordings_max_bytes,
            keep_free: config.recordings_reserve,
        }
    }
}

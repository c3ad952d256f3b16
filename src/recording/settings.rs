//! What recording takes from the node's configuration.

use std::path::PathBuf;

use crate::config::Config;

#[derive(Clone, Debug)]
pub struct Settings {
    pub dir: PathBuf,
    /// Where the database is: whether deleting recordings frees its disk too.
    pub data_dir: PathBuf,
    pub ffmpeg: PathBuf,
}

/// How much the recordings may take, which a person may change while the
/// node runs.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bytes: Option<u64>,
    /// The free space kept on their file system; None: the default reserve.
    pub reserve: Option<u64>,
}

impl Settings {
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            dir: config.recordings_dir.clone(),
            data_dir: config.data_dir.clone(),
            ffmpeg: config.ffmpeg.clone(),
        }
    }
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            max_bytes: config.recordings_max_bytes,
            reserve: config.recordings_reserve,
        }
    }
}

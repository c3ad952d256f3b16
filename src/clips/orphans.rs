//! Clip files that no event names (the database was lost, or a crash came
//! between writing a clip and naming it): files of the node's own layout,
//! `DATA_DIR/clips/<camera>/<event>.mp4` and `.jpg`, that no event's row
//! holds. They are never deleted at start, only counted, with their time of
//! change, for the clips' retention to delete oldest first when room is
//! needed. What a crash left half written (`<event>.mp4.part`) is deleted.
//! The walk stops after [`MOST_ENTRIES`] entries.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::UNIX_EPOCH;

use uuid::Uuid;

use super::CLIPS;

/// Entries looked at, at most: the 10,000 events kept by default have
/// 20,000 files.
const MOST_ENTRIES: usize = 100_000;

/// A clip file no event names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    /// Relative to `DATA_DIR`.
    pub path: String,
    pub bytes: u64,
    /// Its time of change, in ms since the epoch.
    pub changed_ms: i64,
}

/// What a file in a camera's clips folder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A clip or thumbnail, as the node names them.
    Ours,
    /// One being written when the node stopped.
    Part,
    /// Anything else, left alone.
    Stranger,
}

/// Whether `name` is an id as the node writes them (hyphenated, lower case).
fn is_id(name: &str) -> bool {
    Uuid::try_parse(name).is_ok_and(|id| id.to_string() == name)
}

fn kind(name: &str) -> Kind {
    let stem = |suffixes: [&str; 2]| suffixes.iter().find_map(|s| name.strip_suffix(s));
    if stem([".mp4", ".jpg"]).is_some_and(is_id) {
        Kind::Ours
    } else if stem([".mp4.part", ".jpg.part"]).is_some_and(is_id) {
        Kind::Part
    } else {
        Kind::Stranger
    }
}

/// Whether `folder` is a camera's folder of clips, `data_dir/clips/<camera>`.
pub fn is_camera_folder(data_dir: &Path, folder: &Path) -> bool {
    folder.parent() == Some(data_dir.join(CLIPS).as_path())
        && folder
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_id)
}

/// The files of the node's layout under `data_dir/clips` that are not
/// `named` (files relative to `data_dir`), oldest first by their time of
/// change; deletes the half-written ones.
pub fn find(data_dir: &Path, named: &[String]) -> Vec<Orphan> {
    let named: HashSet<&str> = named.iter().map(String::as_str).collect();
    let mut found = Vec::new();
    let mut seen = 0;
    let Ok(cameras) = fs::read_dir(data_dir.join(CLIPS)) else {
        return found;
    };
    'walk: for camera in cameras.flatten() {
        let camera_name = camera.file_name();
        let Some(camera_name) = camera_name.to_str().filter(|n| is_id(n)) else {
            continue;
        };
        if !camera.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for file in fs::read_dir(camera.path()).into_iter().flatten().flatten() {
            seen += 1;
            if seen > MOST_ENTRIES {
                log::warn!(
                    "clips: stopped counting the files of {} after {MOST_ENTRIES}; those past them are not counted",
                    data_dir.join(CLIPS).display()
                );
                break 'walk;
            }
            let name = file.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            match kind(name) {
                Kind::Part => {
                    let _ = fs::remove_file(file.path());
                }
                Kind::Ours => {
                    let relative = format!("{CLIPS}/{camera_name}/{name}");
                    // Not followed: a link is not a clip of ours.
                    let Ok(meta) = file.metadata() else {
                        continue;
                    };
                    if named.contains(relative.as_str()) || !meta.is_file() {
                        continue;
                    }
                    let changed = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
                    found.push(Orphan {
                        path: relative,
                        bytes: meta.len(),
                        changed_ms: changed.map_or(0, |d| d.as_millis() as i64),
                    });
                }
                Kind::Stranger => {}
            }
        }
    }
    found.sort_unstable_by_key(|o| o.changed_ms);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    const ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn names() {
        let table = [
            (format!("{ID}.mp4"), Kind::Ours),
            (format!("{ID}.jpg"), Kind::Ours),
            (format!("{ID}.mp4.part"), Kind::Part),
            (format!("{ID}.jpg.part"), Kind::Part),
            (format!("{}.mp4", ID.to_uppercase()), Kind::Stranger),
            (format!("{}.mp4", ID.replace('-', "")), Kind::Stranger),
            (format!("{ID}.mkv"), Kind::Stranger),
            (format!("{ID}.mp4.bak"), Kind::Stranger),
            ("notes.mp4".into(), Kind::Stranger),
            (".part".into(), Kind::Stranger),
            ("".into(), Kind::Stranger),
        ];
        for (name, want) in table {
            assert_eq!(kind(&name), want, "{name}");
        }
        let data = Path::new("/data");
        assert!(is_camera_folder(data, &data.join("clips").join(ID)));
        assert!(!is_camera_folder(data, &data.join("clips")));
        assert!(!is_camera_folder(data, &data.join("clips/2026")));
        assert!(!is_camera_folder(data, &data.join("other").join(ID)));
    }

    #[test]
    fn unnamed_files_of_ours_are_found_oldest_first() {
        let data = std::env::temp_dir().join(format!("nvr-node-orphans-{}", std::process::id()));
        let _ = fs::remove_dir_all(&data);
        let camera = data.join(CLIPS).join(ID);
        fs::create_dir_all(&camera).unwrap();
        fs::create_dir_all(data.join(CLIPS).join("by-hand")).unwrap();
        let (old, new, named) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let write = |name: String, bytes: usize, age_s: u64| {
            let path = camera.join(name);
            fs::write(&path, vec![0u8; bytes]).unwrap();
            let file = fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(age_s))
                .unwrap();
            path
        };
        write(format!("{new}.mp4"), 30, 10);
        write(format!("{old}.jpg"), 20, 100);
        write(format!("{named}.mp4"), 10, 1000);
        let part = write(format!("{new}.jpg.part"), 5, 0);
        let stranger = write("notes.txt".into(), 5, 5000);
        let by_hand = data.join(CLIPS).join("by-hand").join(format!("{old}.mp4"));
        fs::write(&by_hand, b"x").unwrap();
        let named_file = format!("{CLIPS}/{ID}/{named}.mp4");

        let found = find(&data, &[named_file, "clips/elsewhere.mp4".into()]);
        let files: Vec<(&str, u64)> = found.iter().map(|o| (o.path.as_str(), o.bytes)).collect();
        assert_eq!(
            files,
            [
                (format!("clips/{ID}/{old}.jpg").as_str(), 20),
                (format!("clips/{ID}/{new}.mp4").as_str(), 30)
            ]
        );
        assert!(found[0].changed_ms < found[1].changed_ms);
        assert!(!part.exists(), "a half-written file is deleted");
        assert!(stranger.exists() && by_hand.exists(), "others' files stay");
        assert_eq!(found.len(), 2, "nothing else is counted");
        assert!(find(&data.join("nothing"), &[]).is_empty());
        fs::remove_dir_all(&data).unwrap();
    }
}

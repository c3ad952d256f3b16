//! Where recordings live on disk, and what their names mean:
//! `<dir>/<camera>/<hour>/<start>.mp4` for indexed segments (for example
//! `<camera>/2026-11-22T21Z/2026-11-22T21-36-14.123Z.mp4`, UTC), and
//! `<dir>/<camera>/incoming/` for the files ffmpeg is writing, named by it
//! (`20261122T213614.mp4`); the camera folders, the note of what each
//! records (`source`), and removing the folders that empty.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use uuid::Uuid;

pub const INCOMING: &str = "incoming";
/// ffmpeg's `-strftime` pattern for the files it writes (with `TZ=UTC`).
pub const INCOMING_PATTERN: &str = "%Y%m%dT%H%M%S.mp4";

const HOUR_MS: i64 = 3_600_000;

pub fn camera_dir(dir: &Path, camera: Uuid) -> PathBuf {
    dir.join(camera.to_string())
}

pub fn incoming_dir(dir: &Path, camera: Uuid) -> PathBuf {
    camera_dir(dir, camera).join(INCOMING)
}

/// The name of the newest file in a camera's incoming folder (the one
/// ffmpeg is writing).
pub fn newest_incoming(dir: &Path, camera: Uuid) -> Option<String> {
    std::fs::read_dir(incoming_dir(dir, camera))
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| incoming_start(name).is_some())
        .max()
}

/// The camera folders in the recordings folder.
pub fn camera_folders(dir: &Path) -> Vec<Uuid> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let name = name.to_str()?;
            let id = Uuid::try_parse(name).ok().filter(|_| name.len() == 36)?;
            entry.file_type().ok()?.is_dir().then_some(id)
        })
        .collect()
}

/// In a camera's folder, the fingerprint of the address its recorder
/// records: after a lost database, a camera added again with the same
/// address takes its old footage over. A hash, so that the disk holds no
/// address; of the address without user name and password, so that a new
/// password is still the same camera.
const SOURCE: &str = "source";

pub fn fingerprint(url: &str) -> String {
    // FNV-1a, 64 bits: stable across builds, unlike std's hasher.
    let hash = crate::cameras::rtsp_url::redact(url)
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("rtsp-fnv1a64 {hash:016x}\n")
}

/// Whether a file of a camera's folder is its note of its source.
pub fn is_note(name: &str) -> bool {
    name.strip_suffix(".part").unwrap_or(name) == SOURCE
}

/// Notes in the camera's folder the address it records, if it is not noted yet.
pub fn note_source(dir: &Path, camera: Uuid, url: &str) -> io::Result<()> {
    let folder = camera_dir(dir, camera);
    let note = fingerprint(url);
    if std::fs::read_to_string(folder.join(SOURCE)).is_ok_and(|n| n == note) {
        return Ok(());
    }
    std::fs::create_dir_all(&folder)?;
    let part = folder.join(format!("{SOURCE}.part"));
    let mut file = File::create(&part)?;
    io::Write::write_all(&mut file, note.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&part, folder.join(SOURCE))?;
    crate::sys::filesystem::sync_dir(&folder)
}

/// The camera folders whose recorder last recorded `url`.
pub fn folders_recording(dir: &Path, url: &str) -> Vec<Uuid> {
    let note = fingerprint(url);
    camera_folders(dir)
        .into_iter()
        .filter(|id| {
            std::fs::read_to_string(camera_dir(dir, *id).join(SOURCE)).is_ok_and(|n| n == note)
        })
        .collect()
}

/// `2026-11-22T21:36:14.123Z` for a time in ms since the epoch.
fn rfc3339(ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

fn parse_rfc3339(text: &str) -> Option<i64> {
    let time = humantime::parse_rfc3339(text).ok()?;
    let ms = time.duration_since(UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok()
}

/// The hour folder of a moment: `2026-11-22T21Z`.
pub fn hour_folder(ms: i64) -> String {
    format!("{}Z", &rfc3339(ms)[..13])
}

/// The start of the hour a folder stands for, if it is one of ours.
pub fn hour_of(folder: &str) -> Option<i64> {
    let hour = folder.strip_suffix('Z').filter(|h| h.len() == 13)?;
    parse_rfc3339(&format!("{hour}:00:00Z")).filter(|ms| hour_folder(*ms) == folder)
}

/// Where the segment of `camera` starting at `start_ms` is kept, relative
/// to the recordings folder.
pub fn segment_path(camera: Uuid, start_ms: i64) -> String {
    let name = rfc3339(start_ms).replace(':', "-");
    format!("{camera}/{}/{name}.mp4", hour_folder(start_ms))
}

/// The start of an indexed segment from its file name, if it is one of ours.
pub fn start_of(file_name: &str) -> Option<i64> {
    let stem = file_name.strip_suffix(".mp4")?;
    if stem.len() != 24 || !stem.is_ascii() {
        return None;
    }
    let text = format!("{}:{}:{}", &stem[..13], &stem[14..16], &stem[17..]);
    parse_rfc3339(&text).filter(|ms| format!("{}.mp4", rfc3339(*ms).replace(':', "-")) == file_name)
}

/// When ffmpeg began a file it named `20261122T213614.mp4`, to the second.
pub fn incoming_start(file_name: &str) -> Option<i64> {
    let stem = file_name.strip_suffix(".mp4")?;
    let digits = |r: std::ops::Range<usize>| {
        stem.get(r)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
    };
    if stem.len() != 15 || stem.as_bytes()[8] != b'T' {
        return None;
    }
    let text = format!(
        "{}-{}-{}T{}:{}:{}Z",
        digits(0..4)?,
        digits(4..6)?,
        digits(6..8)?,
        digits(9..11)?,
        digits(11..13)?,
        digits(13..15)?
    );
    parse_rfc3339(&text)
}

/// The hour (its start in ms) that `ms` falls in.
pub fn hour_start(ms: i64) -> i64 {
    ms.div_euclid(HOUR_MS) * HOUR_MS
}

pub const HOUR: i64 = HOUR_MS;

/// Removes a folder if it is empty; anything else is left alone.
pub fn remove_if_empty(path: &Path) {
    let _ = std::fs::remove_dir(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAMERA: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn names_round_trip() {
        let camera = Uuid::parse_str(CAMERA).unwrap();
        let start = 1_795_383_374_123; // 2026-11-22T21:36:14.123Z
        let path = segment_path(camera, start);
        assert_eq!(
            path,
            format!("{CAMERA}/2026-11-22T21Z/2026-11-22T21-36-14.123Z.mp4")
        );
        let (_, name) = path.rsplit_once('/').unwrap();
        assert_eq!(start_of(name), Some(start));
        assert_eq!(
            hour_of("2026-11-22T21Z"),
            Some(start - 36 * 60_000 - 14_123)
        );
        assert_eq!(hour_start(start), start - 36 * 60_000 - 14_123);
        assert_eq!(incoming_start("20261122T213614.mp4"), Some(start - 123));
    }

    #[test]
    fn strangers_are_not_ours() {
        for name in [
            "2026-11-22T21-36-14.123Z.mkv",
            "2026-11-22T21-36-14Z.mp4",
            "2026-11-22T21:36:14.123Z.mp4",
            "2026-13-22T21-36-14.123Z.mp4",
            "notes.mp4",
            "",
        ] {
            assert_eq!(start_of(name), None, "{name}");
        }
        for folder in [
            "2026-11-22T21",
            "2026-11-22T25Z",
            "2026-11-22Z",
            "incoming",
            "x",
        ] {
            assert_eq!(hour_of(folder), None, "{folder}");
        }
        for name in [
            "20261122T213614.mkv",
            "20261122-213614.mp4",
            "2026112xT213614.mp4",
            "x.mp4",
        ] {
            assert_eq!(incoming_start(name), None, "{name}");
        }
    }

    #[test]
    fn sources_are_noted_without_credentials() {
        let dir = std::env::temp_dir().join(format!("nvr-node-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        note_source(&dir, a, "rtsp://admin:old@10.0.0.2/main").unwrap();
        note_source(&dir, b, "rtsp://10.0.0.3/main").unwrap();
        std::fs::create_dir_all(dir.join("not-a-camera")).unwrap();
        assert_eq!(
            folders_recording(&dir, "rtsp://admin:new@10.0.0.2/main"),
            vec![a]
        );
        assert_eq!(folders_recording(&dir, "rtsp://10.0.0.3/main"), vec![b]);
        assert!(folders_recording(&dir, "rtsp://10.0.0.2/sub").is_empty());
        let note = std::fs::read_to_string(camera_dir(&dir, a).join(SOURCE)).unwrap();
        assert!(
            !note.contains("10.0.0.2") && !note.contains("old"),
            "{note}"
        );
        let mut all = camera_folders(&dir);
        all.sort();
        let mut want = vec![a, b];
        want.sort();
        assert_eq!(all, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

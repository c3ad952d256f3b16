//! The recordings folder's identity, as Moonfire NVR gives its sample file
//! directories one: on first use the node writes a marker file holding an
//! id into the folder, and keeps the same id in its database. It records
//! into the folder, deletes from it and reconciles it with the index only
//! while the two agree (or when both are new). A USB disk that did not
//! mount leaves an empty folder on the SD card: without this the node
//! would take every recording for lost, drop its index, and fill the card.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use uuid::Uuid;

use crate::db::Db;
use crate::sys::filesystem;

/// The marker file, in the recordings folder.
pub const MARKER: &str = ".nvr-node-recordings";
/// What the marker says before the id, so that a person who finds it knows.
const MARKER_HEAD: &str = "nvr-node recordings folder: keep this file with the recordings\nid=";

/// What the database says of the folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Known {
    /// The id the database keeps, if it has one.
    pub id: Option<String>,
    /// When it has none but has an index (a node from before markers): whether
    /// any of the newest indexed files is in the folder.
    pub index_found: Option<bool>,
}

/// What is in the folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// The folder does not exist.
    NoFolder,
    Absent,
    Present(String),
    Unreadable(String),
}

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ready,
    /// The database is new (or was lost) and the folder has a marker: the
    /// database takes its id.
    Adopt(String),
    /// Both new: write a marker with a new id and keep it.
    Create,
    /// Not the folder the node recorded into: why, in plain words.
    Refuse(String),
}

/// The decision, from what the database and the folder say.
pub fn verdict(dir: &Path, known: &Known, marker: &Marker) -> Verdict {
    let dir = dir.display();
    let not_mounted = |why: String| {
        Verdict::Refuse(format!(
            "the recordings disk is not mounted: {why}; recording starts by itself once it is (the node looks every 10 s)"
        ))
    };
    match (&known.id, marker) {
        (_, Marker::Unreadable(e)) => {
            Verdict::Refuse(format!("the recordings folder {dir} cannot be read: {e}"))
        }
        (Some(id), Marker::Present(found)) if found == id => Verdict::Ready,
        (Some(_), Marker::Present(_)) => Verdict::Refuse(format!(
            "the recordings disk is not this node's: {dir} holds the recordings of another node or \
             installation; mount this node's disk there, or see docs/install.md (\"Moving the recordings\") \
             to use this one"
        )),
        (Some(_), Marker::NoFolder) => not_mounted(format!("{dir} does not exist")),
        (Some(_), Marker::Absent) => not_mounted(format!(
            "{dir} has no {MARKER} file, so it is not the folder this node recorded into"
        )),
        (None, Marker::Present(found)) => Verdict::Adopt(found.clone()),
        (None, Marker::NoFolder | Marker::Absent) => match known.index_found {
            Some(false) => not_mounted(format!(
                "none of the latest recordings the node indexed are in {dir}"
            )),
            _ => Verdict::Create,
        },
    }
}

/// Checks `dir` against the database, writing the marker or the id where
/// the verdict says so. Ok with the folder's id when the node may use it;
/// otherwise why not, in plain words.
pub fn check(dir: &Path, db: &Db) -> Result<String, String> {
    let id = db.run(|s| s.recordings_disk()).map_err(|e| e.message)?;
    let index_found = match id {
        Some(_) => None,
        None => {
            let newest = db
                .run(|s| s.newest_segment_paths(8))
                .map_err(|e| e.message)?;
            (!newest.is_empty()).then(|| newest.iter().any(|p| dir.join(p).is_file()))
        }
    };
    let known = Known {
        id: id.clone(),
        index_found,
    };
    match verdict(dir, &known, &read_marker(dir)) {
        Verdict::Ready => Ok(id.expect("ready only with an id")),
        Verdict::Adopt(id) => {
            db.run(|s| s.set_recordings_disk(&id))
                .map_err(|e| e.message)?;
            log::info!(
                "recordings: {} has recordings but the database knew none: they are kept, counted, and \
                 reconciled with the index",
                dir.display()
            );
            Ok(id)
        }
        Verdict::Create => {
            let id = create_marker(dir).map_err(|e| {
                format!(
                    "the recordings folder {} cannot be written: {e}",
                    dir.display()
                )
            })?;
            db.run(|s| s.set_recordings_disk(&id))
                .map_err(|e| e.message)?;
            log::info!(
                "recordings: {} is this node's recordings folder",
                dir.display()
            );
            Ok(id)
        }
        Verdict::Refuse(why) => Err(why),
    }
}

/// Reads the marker of `dir`.
pub fn read_marker(dir: &Path) -> Marker {
    match fs::read_to_string(dir.join(MARKER)) {
        Ok(text) => match text
            .strip_prefix(MARKER_HEAD)
            .map(str::trim)
            .filter(|id| Uuid::try_parse(id).is_ok())
        {
            Some(id) => Marker::Present(id.to_owned()),
            None => Marker::Unreadable(format!("its {MARKER} file is damaged")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if dir.is_dir() {
                Marker::Absent
            } else {
                Marker::NoFolder
            }
        }
        Err(e) => Marker::Unreadable(e.to_string()),
    }
}

/// Makes `dir` (if need be) and writes a marker with a new id, durably:
/// beside it first, then renamed, then the folder synced.
pub fn create_marker(dir: &Path) -> io::Result<String> {
    fs::create_dir_all(dir)?;
    let id = crate::id::new_id().to_string();
    let part = dir.join(format!("{MARKER}.part"));
    let mut file = fs::File::create(&part)?;
    file.write_all(format!("{MARKER_HEAD}{id}\n").as_bytes())?;
    file.sync_all()?;
    fs::rename(&part, dir.join(MARKER))?;
    filesystem::sync_dir(dir)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const B: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    fn known(id: Option<&str>, index_found: Option<bool>) -> Known {
        Known {
            id: id.map(str::to_owned),
            index_found,
        }
    }

    #[test]
    fn records_only_where_the_marker_matches_or_both_are_new() {
        let dir = Path::new("/media/usb/recordings");
        let present = |id: &str| Marker::Present(id.into());
        // Ok(verdict), or Err(what the refusal says).
        let table: [(Known, Marker, Result<Verdict, &str>); 11] = [
            (known(Some(A), None), present(A), Ok(Verdict::Ready)),
            // The disk did not mount: an empty folder, or none.
            (
                known(Some(A), None),
                Marker::Absent,
                Err("the recordings disk is not mounted: /media/usb/recordings has no"),
            ),
            (
                known(Some(A), None),
                Marker::NoFolder,
                Err("not mounted: /media/usb/recordings does not exist"),
            ),
            // Another node's disk.
            (known(Some(A), None), present(B), Err("not this node's")),
            // The database was lost: it takes the folder's id.
            (known(None, None), present(B), Ok(Verdict::Adopt(B.into()))),
            (
                known(None, Some(true)),
                present(B),
                Ok(Verdict::Adopt(B.into())),
            ),
            // Both new.
            (known(None, None), Marker::Absent, Ok(Verdict::Create)),
            (known(None, None), Marker::NoFolder, Ok(Verdict::Create)),
            // A node from before markers: its files are there, or the disk is not.
            (known(None, Some(true)), Marker::Absent, Ok(Verdict::Create)),
            (
                known(None, Some(false)),
                Marker::Absent,
                Err("none of the latest recordings"),
            ),
            (
                known(Some(A), None),
                Marker::Unreadable("Input/output error".into()),
                Err("cannot be read: Input/output error"),
            ),
        ];
        for (known, marker, want) in table {
            let verdict = verdict(dir, &known, &marker);
            match want {
                Ok(want) => assert_eq!(verdict, want, "{known:?} {marker:?}"),
                Err(why) => assert!(
                    matches!(&verdict, Verdict::Refuse(m) if m.contains(why)),
                    "{known:?} {marker:?}: {verdict:?}"
                ),
            }
        }
    }

    #[test]
    fn markers_are_written_and_read() {
        let dir = std::env::temp_dir().join(format!("nvr-node-disk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(read_marker(&dir), Marker::NoFolder);
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(read_marker(&dir), Marker::Absent);
        let id = create_marker(&dir).unwrap();
        assert_eq!(read_marker(&dir), Marker::Present(id));
        fs::write(dir.join(MARKER), "something else").unwrap();
        assert!(matches!(read_marker(&dir), Marker::Unreadable(_)));
        fs::remove_dir_all(&dir).unwrap();
    }
}

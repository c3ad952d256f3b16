//! What a file system has room for (`statvfs`), whether two folders share
//! one, whether it is in RAM (`statfs`), whether the node may change a
//! folder's entries, and making them durable: the few calls the clips'
//! retention and the recordings need of the disk.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// tmpfs's magic number in `statfs`'s `f_type`.
const TMPFS_MAGIC: libc::c_long = 0x0102_1994;

/// Free and total bytes of the file system holding a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    /// What an unprivileged process (the node) may still write.
    pub free: u64,
    pub total: u64,
}

pub fn space(path: &Path) -> io::Result<Space> {
    let path = c_path(path)?;
    // SAFETY: statvfs writes only into `stats`, and `path` is NUL-terminated.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let block = stats.f_frsize as u64;
    Ok(Space {
        free: stats.f_bavail as u64 * block,
        total: stats.f_blocks as u64 * block,
    })
}

/// Whether `a` and `b` are on one file system; None when either cannot be
/// read (a folder not made yet, a disk not mounted).
pub fn same_file_system(a: &Path, b: &Path) -> Option<bool> {
    Some(a.metadata().ok()?.dev() == b.metadata().ok()?.dev())
}

/// Whether the node may add and remove entries of `folder`: not when its
/// file system is read-only (remounted so after an I/O error) or the folder
/// is not the node's to change (owned by another user after a manual copy).
pub fn writable(folder: &Path) -> io::Result<()> {
    let path = c_path(folder)?;
    // SAFETY: `path` is NUL-terminated; faccessat only reads it.
    // AT_EACCESS: as the node's effective user, the one that unlinks.
    let mode = libc::W_OK | libc::X_OK;
    if unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), mode, libc::AT_EACCESS) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a folder's entries (a file created, renamed or unlinked) survive a power cut.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Unlinks `paths` (relative to `root`; a missing one counts as gone) and
/// makes that durable: each folder that held one is fsynced, then handed to
/// `synced` (to remove it if it is left empty). Returns the paths that are
/// gone, and why the first of the others is not; each of those is logged.
pub fn unlink_durably(
    root: &Path,
    paths: &[String],
    mut synced: impl FnMut(&Path),
) -> (Vec<String>, Option<String>) {
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    let mut gone = Vec::with_capacity(paths.len());
    let mut refusal = None;
    for path in paths {
        let file = root.join(path);
        match std::fs::remove_file(&file) {
            Ok(()) => gone.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => gone.push(path.clone()),
            Err(e) => {
                log::warn!("cannot delete {} (kept): {e}", file.display());
                refusal.get_or_insert_with(|| format!("cannot delete {}: {e}", file.display()));
            }
        }
        if let Some(folder) = file.parent() {
            folders.insert(folder.to_owned());
        }
    }
    for folder in &folders {
        let _ = sync_dir(folder);
        synced(folder);
    }
    (gone, refusal)
}

/// Whether `path` is on a tmpfs, in RAM; false when it cannot be read.
#[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
pub fn is_tmpfs(path: &Path) -> bool {
    let Ok(path) = c_path(path) else {
        return false;
    };
    // SAFETY: statfs writes only into `stats`; the path is NUL-terminated.
    let mut stats: libc::statfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statfs(path.as_ptr(), &mut stats) } == 0;
    ok && stats.f_type as libc::c_long == TMPFS_MAGIC
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_and_file_systems() {
        let root = space(Path::new("/")).unwrap();
        assert!(root.total > 0 && root.free <= root.total, "{root:?}");
        assert!(space(Path::new("/nonexistent/nvr")).is_err());
        assert_eq!(same_file_system(Path::new("/"), Path::new("/")), Some(true));
        assert_eq!(
            same_file_system(Path::new("/"), Path::new("/proc")),
            Some(false),
            "procfs is a file system of its own"
        );
        assert!(writable(&std::env::temp_dir()).is_ok());
        assert!(writable(Path::new("/nonexistent/nvr")).is_err());
        assert_eq!(
            same_file_system(Path::new("/"), Path::new("/nonexistent")),
            None
        );
    }

    #[test]
    fn unlinking_counts_a_missing_file_as_gone_and_names_the_first_refusal() {
        let root = std::env::temp_dir().join(format!("nvr-unlink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a/folder.mp4")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::write(root.join("a/1.mp4"), b"x").unwrap();
        std::fs::write(root.join("b/2.mp4"), b"x").unwrap();
        let paths = ["a/1.mp4", "a/folder.mp4", "b/2.mp4", "b/missing.mp4"].map(String::from);
        let mut synced = Vec::new();
        let (gone, refusal) =
            unlink_durably(&root, &paths, |folder| synced.push(folder.to_owned()));
        assert_eq!(gone, ["a/1.mp4", "b/2.mp4", "b/missing.mp4"]);
        let refusal = refusal.expect("a folder is no file to unlink");
        assert!(refusal.starts_with("cannot delete "), "{refusal}");
        assert!(refusal.contains("a/folder.mp4"), "{refusal}");
        assert!(root.join("a/folder.mp4").is_dir(), "what is refused stays");
        assert!(!root.join("b/2.mp4").exists());
        assert_eq!(synced, [root.join("a"), root.join("b")], "each folder once");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn tmpfs_is_told_from_other_file_systems() {
        // /dev/shm is one on every Linux the node and its tests run on.
        assert!(is_tmpfs(Path::new("/dev/shm")));
        assert!(!is_tmpfs(Path::new("/proc")));
        assert!(!is_tmpfs(Path::new("/nonexistent/nvr")));
    }
}

//! Opening a file that stored data names below the data folder (an event's
//! clip or thumbnail), without following symbolic links: each folder on the
//! way and the file itself are opened with `openat` and `O_NOFOLLOW`, one
//! component at a time from the data folder, so a link put there after the
//! name was checked is refused when the file is served or uploaded.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Opens `relative` below `root` for reading. The root itself may be a link
/// (where the administrator put the data folder); below it, a link, a
/// component other than a plain name (`..`, `/`), or something other than a
/// regular file is refused with [`io::ErrorKind::InvalidInput`], and nothing
/// there with [`io::ErrorKind::NotFound`].
pub fn open_regular(root: &Path, relative: &Path) -> io::Result<File> {
    let names = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(refused()),
        })
        .collect::<io::Result<Vec<&OsStr>>>()?;
    let (file, folders) = names.split_last().ok_or_else(refused)?;
    let mut folder = OwnedFd::from(File::open(root)?);
    for name in folders {
        folder = open_at(&folder, name, libc::O_DIRECTORY)?;
    }
    // O_NONBLOCK: opening a FIFO put there must not hang the thread (it has
    // no effect on reading a regular file).
    let file = File::from(open_at(&folder, file, libc::O_NONBLOCK)?);
    if !file.metadata()?.is_file() {
        return Err(refused());
    }
    Ok(file)
}

/// Whether `error`, from [`open_regular`], means there is no file to open
/// there (rather than a fault worth trying again, like too many open files).
pub fn is_absent(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::InvalidInput
    )
}

fn refused() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file below the data folder without symbolic links",
    )
}

/// `name` in `folder`, opened read-only with `flags`, never through a link.
fn open_at(folder: &OwnedFd, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let name = CString::new(name.as_bytes()).map_err(|_| refused())?;
    let flags = flags | libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // SAFETY: a valid folder descriptor and a NUL-terminated name that
    // outlive the call.
    let fd = unsafe { libc::openat(folder.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        let error = io::Error::last_os_error();
        // A link where a folder or the file was expected.
        return match error.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => Err(refused()),
            _ => Err(error),
        };
    }
    // SAFETY: openat just returned this descriptor, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_anywhere_below_the_root_are_refused() {
        let root = std::env::temp_dir().join(format!("nvr-data-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let clips = root.join("clips/cam");
        std::fs::create_dir_all(&clips).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::fs::write(root.join("nvr-node.db"), b"secret").unwrap();
        std::fs::write(clips.join("a.mp4"), b"clip").unwrap();
        std::fs::write(root.join("elsewhere/b.mp4"), b"other").unwrap();
        symlink(root.join("nvr-node.db"), clips.join("db.mp4")).unwrap();
        symlink(root.join("elsewhere"), root.join("clips/linked")).unwrap();
        std::fs::create_dir(clips.join("folder.mp4")).unwrap();
        let fifo = CString::new(clips.join("fifo.mp4").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // The root given through a link is fine.
        symlink(&root, root.with_extension("link")).unwrap();

        let mut text = String::new();
        let mut file = open_regular(&root.with_extension("link"), Path::new("clips/cam/a.mp4"))
            .expect("a regular file");
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "clip");
        let table = [
            ("clips/cam/db.mp4", io::ErrorKind::InvalidInput),
            ("clips/linked/b.mp4", io::ErrorKind::InvalidInput),
            ("clips/cam/folder.mp4", io::ErrorKind::InvalidInput),
            ("clips/cam/fifo.mp4", io::ErrorKind::InvalidInput),
            ("clips/cam/a.mp4/x", io::ErrorKind::InvalidInput),
            ("clips/../nvr-node.db", io::ErrorKind::InvalidInput),
            ("/etc/passwd", io::ErrorKind::InvalidInput),
            ("", io::ErrorKind::InvalidInput),
            ("clips/cam/missing.mp4", io::ErrorKind::NotFound),
            ("clips/none/a.mp4", io::ErrorKind::NotFound),
        ];
        for (relative, kind) in table {
            let error = open_regular(&root, Path::new(relative)).expect_err(relative);
            assert_eq!(error.kind(), kind, "{relative}: {error}");
            assert!(is_absent(&error), "{relative}");
        }
        let _ = std::fs::remove_file(root.with_extension("link"));
        let _ = std::fs::remove_dir_all(&root);
    }
}

//! Waiting on several descriptors at once (`poll`): std waits on one at a
//! time. A supervised child's pipes and the sockets of an ONVIF probe are
//! each read from one thread.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// One descriptor to wait on, and after [`poll`], whether it is ready.
/// It holds the descriptor's number only: one closed meanwhile is reported
/// ready (`POLLNVAL`), and its read then fails.
#[repr(transparent)]
pub struct PollFd(libc::pollfd);

impl PollFd {
    /// Ready when there is something to read, or the other end closed.
    pub fn readable(fd: &impl AsRawFd) -> PollFd {
        PollFd::new(fd, libc::POLLIN)
    }

    /// Ready when a write would not block, or the other end closed.
    pub fn writable(fd: &impl AsRawFd) -> PollFd {
        PollFd::new(fd, libc::POLLOUT)
    }

    fn new(fd: &impl AsRawFd, events: libc::c_short) -> PollFd {
        PollFd(libc::pollfd {
            fd: fd.as_raw_fd(),
            events,
            revents: 0,
        })
    }

    /// Whether the last [`poll`] found it ready (or in error, or hung up).
    pub fn ready(&self) -> bool {
        self.0.revents != 0
    }
}

/// Waits at most `wait`, at least a millisecond, for any of `fds` to be
/// ready; how many are. A signal's arrival is an error of kind
/// [`io::ErrorKind::Interrupted`], for the caller to wait again.
pub fn poll(fds: &mut [PollFd], wait: Duration) -> io::Result<usize> {
    let millis = wait.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int;
    // SAFETY: PollFd is a transparent pollfd, and the slice is valid for
    // its length across the call.
    let ready = unsafe {
        libc::poll(
            fds.as_mut_ptr().cast::<libc::pollfd>(),
            fds.len() as libc::nfds_t,
            millis,
        )
    };
    if ready < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ready as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    #[test]
    fn ready_when_there_is_something_to_read_and_never_sooner() {
        let (mut near, far) = UnixStream::pair().unwrap();
        let (_quiet, other) = UnixStream::pair().unwrap();
        let mut fds = [PollFd::readable(&far), PollFd::readable(&other)];
        let started = Instant::now();
        assert_eq!(poll(&mut fds, Duration::from_millis(50)).unwrap(), 0);
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(!fds[0].ready() && !fds[1].ready());

        near.write_all(b"x").unwrap();
        assert_eq!(poll(&mut fds, Duration::from_secs(5)).unwrap(), 1);
        assert!(fds[0].ready() && !fds[1].ready());

        // Each call says afresh what is ready.
        let mut writable = [PollFd::writable(&near), PollFd::readable(&other)];
        assert_eq!(poll(&mut writable, Duration::ZERO).unwrap(), 1);
        assert!(writable[0].ready() && !writable[1].ready());
    }
}

//! What supervising a child takes beyond std's `Command`: its death with
//! the thread that started it, signals to its process group, a pipe to it
//! that never blocks; and the node's own limit of open files.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};

/// The signals the node sends its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: finish, in your own time.
    Terminate,
    /// SIGKILL: gone at once.
    Kill,
}

impl Signal {
    fn number(self) -> libc::c_int {
        match self {
            Signal::Terminate => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }

    /// The exit status of a process this signal ended.
    pub fn exit_status(self) -> ExitStatus {
        ExitStatus::from_raw(self.number())
    }
}

/// Makes the child that `command` starts die with the thread that starts
/// it: the kernel sends it SIGKILL when that thread ends
/// (`PR_SET_PDEATHSIG`), even when the node itself is killed. It does not
/// start if the node died before that was set.
pub fn die_with_spawning_thread(command: &mut Command) -> &mut Command {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid) run between
    // fork and exec, and nothing allocates.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The node died between fork and prctl: nobody will reap us.
            // (std hands the parent only the error's number; an error with
            // a message of its own would allocate here.)
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// Sends `signal` to every process of the group `group`.
pub fn signal_group(group: u32, signal: Signal) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(-(group as libc::pid_t), signal.number()) };
}

/// Makes reads and writes of `fd` return [`io::ErrorKind::WouldBlock`]
/// instead of waiting.
pub fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller holds, with no pointers.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Waits for the child `pid` to exit and reaps it, for a test that let go
/// of its `std::process::Child`.
#[cfg(test)]
pub fn reap(pid: u32) {
    // SAFETY: waitpid with no status to write.
    unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0) };
}

/// Raises the soft limit of open files to `wanted`, or as far towards it as
/// the hard limit allows; the soft limit then in force.
#[allow(clippy::unnecessary_cast)] // rlim_t is 32 bits on armv7
pub fn raise_open_files(wanted: u64) -> io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(io::Error::last_os_error());
        }
        let wanted = wanted.min(limit.rlim_max as u64) as libc::rlim_t;
        if limit.rlim_cur < wanted {
            let raised = libc::rlimit {
                rlim_cur: wanted,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Ok(limit.rlim_cur as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_of_open_files_is_the_kernels() {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap();
        let soft: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        // Nothing to raise: the soft limit as it is.
        assert_eq!(raise_open_files(0).unwrap(), soft);
        assert_eq!(raise_open_files(soft).unwrap(), soft);
    }

    #[test]
    fn a_signal_to_a_group_ends_it_with_a_status_naming_the_signal() {
        for signal in [Signal::Terminate, Signal::Kill] {
            let mut leader = Command::new("sh")
                .args(["-c", "echo ready; exec sleep 30"])
                .stdout(std::process::Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap();
            // Its group is made before it runs (under qemu perhaps after
            // spawn returned): a line from it says it is there.
            let mut ready = [0u8; 6];
            io::Read::read_exact(leader.stdout.as_mut().unwrap(), &mut ready).unwrap();
            signal_group(leader.id(), signal);
            assert_eq!(leader.wait().unwrap(), signal.exit_status());
        }
    }
}

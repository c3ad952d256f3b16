//! Supervised child processes (ffprobe, ffmpeg): each runs in its own process
//! group and is killed by the kernel when the thread that started it dies
//! (`PR_SET_PDEATHSIG`), so none outlives the node, even after SIGKILL. Its
//! stdout is read by lines or to the end, its stderr drained on the same
//! thread into a small tail that is never logged (ffmpeg prints the camera
//! URL with its password there). Stopping is SIGTERM, then SIGKILL after a
//! grace: a stalled RTSP read leaves ffmpeg deaf to SIGTERM.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::sys::poll::{self, PollFd};
use crate::sys::process::{Signal, die_with_spawning_thread, set_nonblocking, signal_group};

/// How much of stderr is kept, from its end: enough for the last error lines.
const STDERR_TAIL_BYTES: usize = 4096;
/// The longest stdout line kept whole; a longer one is cut.
const MAX_LINE_BYTES: usize = 4096;

/// For an ffmpeg child's environment: glibc's malloc then gives back freed
/// memory at the top of its heap past 128 KiB. Left to itself it raises that
/// bound to twice the largest block freed (up to 64 MiB), and what ffmpeg
/// freed after probing the stream stays resident. Measured: 0.7 MiB less
/// private memory in a recorder, 0.9 MiB in a motion decoder, same CPU.
pub const MALLOC_TRIM: (&str, &str) = ("MALLOC_TRIM_THRESHOLD_", "131072");

pub struct Child {
    process: std::process::Child,
    /// Piped only for a child that takes input ([`Child::spawn_with_input`]).
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    /// Stdout read but not yet returned.
    pending: Vec<u8>,
    stderr_tail: Vec<u8>,
    exited: Option<ExitStatus>,
}

/// What [`Child::next_line`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Output {
    Line(String),
    /// Nothing within the wait.
    Quiet,
    /// Stdout reached its end: the child is exiting or gone.
    Closed,
}

/// What [`Child::read_exact`] got.
#[derive(Debug, PartialEq, Eq)]
pub enum Filled {
    Full,
    Quiet,
    Closed,
}

impl Child {
    /// Starts `command` with stdin from /dev/null and stdout and stderr piped.
    /// It must be supervised from the calling thread for its whole life: the
    /// kernel kills it when this thread ends.
    pub fn spawn(command: &mut Command) -> io::Result<Child> {
        Child::start(command.stdin(Stdio::null()))
    }

    /// [`Child::spawn`] with stdin piped, for [`Child::write_all`].
    pub fn spawn_with_input(command: &mut Command) -> io::Result<Child> {
        let child = Child::start(command.stdin(Stdio::piped()))?;
        if let Some(stdin) = &child.stdin {
            // Non-blocking, so a child that stops reading cannot hold us past
            // a deadline.
            set_nonblocking(stdin)?;
        }
        Ok(child)
    }

    /// [`Child::spawn`] with stdin read from `input` (a pipe the node writes
    /// from another thread).
    pub fn spawn_reading(command: &mut Command, input: impl Into<Stdio>) -> io::Result<Child> {
        Child::start(command.stdin(input))
    }

    fn start(command: &mut Command) -> io::Result<Child> {
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut process = die_with_spawning_thread(command).spawn()?;
        Ok(Child {
            stdin: process.stdin.take(),
            stdout: process.stdout.take(),
            stderr: process.stderr.take(),
            process,
            pending: Vec::new(),
            stderr_tail: Vec::new(),
            exited: None,
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// The end of what the child wrote to stderr, to classify a failure by.
    /// It may hold a camera password: never log it or show it.
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&self.stderr_tail).into_owned()
    }

    /// Waits at most `wait` for the next line of stdout, draining stderr meanwhile.
    pub fn next_line(&mut self, wait: Duration) -> Output {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(line) = self.take_line() {
                return Output::Line(line);
            }
            if self.stdout.is_none() {
                return Output::Closed;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Output::Quiet;
            }
            self.pump(left);
        }
    }

    /// Fills `buf` from stdout, waiting at most `wait`: Full, or Quiet with
    /// nothing taken (what has arrived waits for the next call), or Closed.
    /// The pipe is read straight into `buf`: a frame is held once, not also
    /// in `pending`.
    pub fn read_exact(&mut self, buf: &mut [u8], wait: Duration) -> Filled {
        let deadline = Instant::now() + wait;
        let mut filled = self.pending.len().min(buf.len());
        buf[..filled].copy_from_slice(&self.pending[..filled]);
        self.pending.drain(..filled);
        // A partial frame given back by a Quiet grew it: give that memory back.
        self.pending.shrink_to(MAX_LINE_BYTES);
        while filled < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.stdout.is_none() || left.is_zero() {
                // Only stdout's own bytes are in `buf`: `pending` is empty.
                self.pending.extend_from_slice(&buf[..filled]);
                return if self.stdout.is_none() {
                    Filled::Closed
                } else {
                    Filled::Quiet
                };
            }
            filled += self.poll(left, false, Some(&mut buf[filled..]));
        }
        Filled::Full
    }

    /// Reads stdout to its end (keeping at most `limit` bytes) and waits for
    /// the exit, all before `deadline`; past it the child is killed and None
    /// returned.
    pub fn finish(&mut self, deadline: Instant, limit: usize) -> Option<(Vec<u8>, ExitStatus)> {
        while self.stdout.is_some() || self.stderr.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.kill();
                return None;
            }
            self.pump(left);
            if self.pending.len() > limit {
                self.pending.truncate(limit);
            }
        }
        let Some(status) = self.wait_until(deadline) else {
            self.kill();
            return None;
        };
        Some((std::mem::take(&mut self.pending), status))
    }

    /// Writes all of `bytes` to stdin before `deadline`, reading stdout and
    /// stderr meanwhile (so a child blocked on writing cannot deadlock us);
    /// false if the time ran out, stdin is closed or the child is gone.
    pub fn write_all(&mut self, mut bytes: &[u8], deadline: Instant) -> bool {
        while !bytes.is_empty() {
            let Some(stdin) = self.stdin.as_mut() else {
                return false;
            };
            match stdin.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.pump_until_writable(left);
                }
                Err(_) => {
                    self.stdin = None;
                    return false;
                }
            }
        }
        true
    }

    /// Closes stdin: the child reads the end of its input.
    pub fn close_input(&mut self) {
        self.stdin = None;
    }

    /// Stops the child: SIGTERM, and SIGKILL if it has not exited after `grace`.
    pub fn stop(&mut self, grace: Duration) -> ExitStatus {
        self.terminate();
        match self.wait_until(Instant::now() + grace) {
            Some(status) => status,
            None => self.kill(),
        }
    }

    /// Asks the child to finish (SIGTERM to its group); it may take a while.
    pub fn terminate(&self) {
        self.signal(Signal::Terminate);
    }

    /// Waits for the exit until `deadline`; None if it is still running.
    pub fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.exited {
                return Some(status);
            }
            if let Ok(Some(status)) = self.process.try_wait() {
                self.exited = Some(status);
                continue;
            }
            if Instant::now() >= deadline {
                return None;
            }
            // Keep stderr flowing so a chatty child cannot block on it.
            if self.stdout.is_some() || self.stderr.is_some() {
                self.pump(Duration::from_millis(20).min(deadline - Instant::now()));
            } else {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// SIGKILL to the group, and reaps the child.
    pub fn kill(&mut self) -> ExitStatus {
        if let Some(status) = self.exited {
            return status;
        }
        self.signal(Signal::Kill);
        let status = self
            .process
            .wait()
            .unwrap_or_else(|_| Signal::Kill.exit_status());
        self.exited = Some(status);
        status
    }

    fn signal(&self, signal: Signal) {
        if self.exited.is_some() {
            return;
        }
        // The group's id is the child's pid (process_group(0)). While the
        // child is unreaped its pid cannot be reused, so this never hits a
        // stranger.
        signal_group(self.process.id(), signal);
    }

    /// Returns the next complete line of `pending` (or what is left once
    /// stdout is closed).
    fn take_line(&mut self) -> Option<String> {
        let end = match self.pending.iter().position(|&b| b == b'\n') {
            Some(newline) => newline + 1,
            None if self.stdout.is_none() && !self.pending.is_empty() => self.pending.len(),
            None if self.pending.len() > MAX_LINE_BYTES => self.pending.len(),
            None => return None,
        };
        let line: Vec<u8> = self.pending.drain(..end).collect();
        let line = String::from_utf8_lossy(&line);
        Some(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// Waits at most `wait` for either pipe to have something, and reads it.
    fn pump(&mut self, wait: Duration) {
        self.poll(wait, false, None);
    }

    /// [`Child::pump`], returning early when stdin can take more.
    fn pump_until_writable(&mut self, wait: Duration) {
        self.poll(wait, true, None);
    }

    /// Waits at most `wait` and reads what came: stdout into `into` when
    /// given (returning how much), else onto `pending`; stderr into its tail.
    fn poll(&mut self, wait: Duration, writing: bool, mut into: Option<&mut [u8]>) -> usize {
        let input = self
            .stdin
            .as_ref()
            .filter(|_| writing)
            .map(PollFd::writable);
        let fds: Vec<(i32, bool)> = [
            self.stdout.as_ref().map(|p| (p.as_raw_fd(), true)),
            self.stderr.as_ref().map(|p| (p.as_raw_fd(), false)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if fds.is_empty() && input.is_none() {
            std::thread::sleep(wait);
            return 0;
        }
        let mut polls: Vec<PollFd> = fds
            .iter()
            .map(|(fd, _)| PollFd::readable(fd))
            .chain(input)
            .collect();
        // Nothing ready, or interrupted: the callers loop to their deadlines.
        let Ok(1..) = poll::poll(&mut polls, wait) else {
            return 0;
        };
        let mut buf = [0u8; 8192];
        let mut taken = 0;
        // `zip` leaves out the stdin entry, last: it needs no reading.
        for (poll, &(_, is_stdout)) in polls.iter().zip(&fds) {
            if !poll.ready() {
                continue;
            }
            let read = if is_stdout {
                let to = into.as_deref_mut().unwrap_or(&mut buf);
                self.stdout.as_mut().map(|p| p.read(to))
            } else {
                self.stderr.as_mut().map(|p| p.read(&mut buf))
            };
            match read {
                Some(Ok(n)) if n > 0 => {
                    if is_stdout && into.is_some() {
                        taken = n;
                    } else if is_stdout {
                        self.pending.extend_from_slice(&buf[..n]);
                    } else {
                        self.stderr_tail.extend_from_slice(&buf[..n]);
                        let over = self.stderr_tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        self.stderr_tail.drain(..over);
                    }
                }
                Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                // End of file, or an error: the pipe is done.
                _ => {
                    if is_stdout {
                        self.stdout = None;
                    } else {
                        self.stderr = None;
                    }
                }
            }
        }
        taken
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::process::reap;

    fn sh(script: &str) -> Child {
        Child::spawn(Command::new("sh").args(["-c", script])).unwrap()
    }

    fn alive(pid: u32) -> bool {
        // A zombie is dead for our purposes.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false)
    }

    #[test]
    fn lines_and_the_end_of_stdout() {
        let mut child = sh("echo one; echo two >&2; printf 'two\\nthree'; exit 3");
        let wait = Duration::from_secs(5);
        assert_eq!(child.next_line(wait), Output::Line("one".into()));
        assert_eq!(child.next_line(wait), Output::Line("two".into()));
        assert_eq!(child.next_line(wait), Output::Line("three".into()));
        assert_eq!(child.next_line(wait), Output::Closed);
        let status = child.wait_until(Instant::now() + wait).unwrap();
        assert_eq!(status.code(), Some(3));
        assert_eq!(child.stderr_tail(), "two\n");
    }

    #[test]
    fn binary_after_a_header() {
        let mut child = sh("printf 'P5\\n2 2\\n255\\n'; printf 'abcd'; sleep 0.3; printf 'efgh'");
        let wait = Duration::from_secs(5);
        for want in ["P5", "2 2", "255"] {
            assert_eq!(child.next_line(wait), Output::Line(want.into()));
        }
        let mut frame = [0u8; 4];
        assert_eq!(child.read_exact(&mut frame, wait), Filled::Full);
        assert_eq!(&frame, b"abcd");
        let mut more = [0u8; 8];
        assert_eq!(
            child.read_exact(&mut more, Duration::from_millis(50)),
            Filled::Quiet
        );
        assert_eq!(child.read_exact(&mut frame, wait), Filled::Full);
        assert_eq!(&frame, b"efgh");
        assert_eq!(child.read_exact(&mut frame, wait), Filled::Closed);
    }

    #[test]
    fn a_partial_read_waits_for_the_next_call() {
        let mut child = sh("printf 'abcd'; sleep 0.5; printf 'efgh'");
        let mut more = [0u8; 8];
        // Half of it comes, then nothing within the wait: nothing is taken.
        assert_eq!(
            child.read_exact(&mut more, Duration::from_millis(250)),
            Filled::Quiet
        );
        let mut half = [0u8; 2];
        let wait = Duration::from_secs(5);
        assert_eq!(child.read_exact(&mut half, wait), Filled::Full);
        assert_eq!(&half, b"ab");
        let mut rest = [0u8; 6];
        assert_eq!(child.read_exact(&mut rest, wait), Filled::Full);
        assert_eq!(&rest, b"cdefgh");
        assert_eq!(child.read_exact(&mut half, wait), Filled::Closed);
    }

    #[test]
    fn input_larger_than_a_pipe_goes_through_and_a_deaf_child_times_out() {
        let mut cat = Child::spawn_with_input(Command::new("wc").arg("-c")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        assert!(cat.write_all(&vec![7u8; 300_000], deadline));
        cat.close_input();
        assert_eq!(
            cat.next_line(Duration::from_secs(5)),
            Output::Line("300000".into())
        );
        let mut deaf = Child::spawn_with_input(Command::new("sleep").arg("30")).unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        assert!(!deaf.write_all(&vec![7u8; 300_000], deadline));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(!deaf.stop(Duration::from_millis(500)).success());
    }

    #[test]
    fn quiet_children_time_out() {
        let mut child = sh("sleep 5");
        let started = Instant::now();
        assert_eq!(child.next_line(Duration::from_millis(200)), Output::Quiet);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn stderr_keeps_only_its_tail() {
        let mut child = sh("head -c 100000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo out");
        let (out, status) = child
            .finish(Instant::now() + Duration::from_secs(5), 1024)
            .unwrap();
        assert_eq!((out.as_slice(), status.success()), (&b"out\n"[..], true));
        let tail = child.stderr_tail();
        assert_eq!(tail.len(), STDERR_TAIL_BYTES);
        assert!(tail.ends_with("xxEND\n"), "{tail}");
    }

    #[test]
    fn finish_kills_at_the_deadline() {
        let mut child = sh("echo started; exec sleep 30");
        let pid = child.pid();
        let started = Instant::now();
        assert!(
            child
                .finish(Instant::now() + Duration::from_millis(300), 1024)
                .is_none()
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!alive(pid), "{pid} still alive");
    }

    #[test]
    fn sigterm_then_sigkill() {
        let mut child = sh("trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.1; done");
        let wait = Duration::from_secs(5);
        assert_eq!(child.next_line(wait), Output::Line("ready".into()));
        child.terminate();
        assert_eq!(child.next_line(wait), Output::Line("bye".into()));
        assert!(child.wait_until(Instant::now() + wait).unwrap().success());

        // One deaf to SIGTERM, like ffmpeg blocked on a stalled camera.
        let mut deaf = sh("trap '' TERM; echo ready; while :; do sleep 0.1; done");
        assert_eq!(deaf.next_line(wait), Output::Line("ready".into()));
        deaf.terminate();
        assert_eq!(
            deaf.wait_until(Instant::now() + Duration::from_millis(300)),
            None
        );
        assert!(!deaf.kill().success());
        assert!(!alive(deaf.pid()));
    }

    #[test]
    fn the_whole_group_is_killed() {
        // The shell's own child (sleep) is in the same group and goes too.
        let mut child = sh("sleep 30 & echo $!; wait");
        let Output::Line(grandchild) = child.next_line(Duration::from_secs(5)) else {
            panic!("no pid printed");
        };
        let grandchild: u32 = grandchild.parse().unwrap();
        assert!(alive(grandchild));
        child.kill();
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(grandchild)
        });
        assert!(gone, "sleep {grandchild} outlived its group");
    }

    #[test]
    fn children_die_with_the_thread_that_started_them() {
        let pid = std::thread::spawn(|| {
            let child = sh("exec sleep 30");
            let pid = child.pid();
            // Leak it: only the kernel's death signal can end it now.
            std::mem::forget(child);
            pid
        })
        .join()
        .unwrap();
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        });
        assert!(gone, "sleep {pid} outlived the thread that started it");
        reap(pid);
    }
}

//! A camera's stream handed to ffmpeg or ffprobe without its address on the
//! command line: every local account can read a process's arguments
//! (`/proc/PID/cmdline`), and a camera's address holds its password. The
//! tool reads a one-entry concat list from stdin instead (`-f concat -i
//! pipe:0`), which opens the stream with the options given in the list; what
//! it reads from the stream is the same, packet for packet.

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use super::child::Child;

/// The protocols an RTSP or RTSPS stream is read through (the list itself
/// comes through `pipe`). Nothing else is opened: no files, no HTTP.
const PROTOCOLS: &str = "pipe,tcp,udp,rtp,tls";
/// Writing the list (well under a pipe's buffer) takes no waiting; a tool
/// that dies first is found out by its caller from its exit.
const WRITE_WITHIN: Duration = Duration::from_secs(1);

/// An RTSP stream, read over TCP.
pub struct Input {
    list: String,
}

impl Input {
    /// `url` (checked: no spaces or control characters) read over TCP, each
    /// wait on its socket bounded by `timeout`.
    pub fn rtsp(url: &str, timeout: Duration) -> Input {
        // Inside single quotes nothing is special; a quote itself ends the
        // quoted part, is escaped, and starts another.
        let quoted = url.replace('\'', r"'\''");
        let list = format!(
            "ffconcat version 1.0\nfile '{quoted}'\noption rtsp_transport tcp\noption timeout {}\n",
            timeout.as_micros()
        );
        Input { list }
    }

    /// The input's options, where `-i URL` would be.
    pub fn args() -> [&'static str; 10] {
        [
            "-protocol_whitelist",
            PROTOCOLS,
            "-f",
            "concat",
            // Allows a URL in the list.
            "-safe",
            "0",
            // Left as the camera sent it.
            "-auto_convert",
            "0",
            "-i",
            "pipe:0",
        ]
    }

    /// Starts `command` (built with [`Input::args`]) and hands it the list.
    pub fn spawn(&self, command: &mut Command) -> io::Result<Child> {
        let mut child = Child::spawn_with_input(command)?;
        child.write_all(self.list.as_bytes(), Instant::now() + WRITE_WITHIN);
        child.close_input();
        Ok(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_quotes_the_address_and_bounds_the_socket() {
        let input = Input::rtsp("rtsp://u:it's@cam/main", Duration::from_secs(10));
        assert_eq!(
            input.list,
            "ffconcat version 1.0\nfile 'rtsp://u:it'\\''s@cam/main'\n\
             option rtsp_transport tcp\noption timeout 10000000\n"
        );
    }
}

//! What an ffmpeg or ffprobe failure means, read from its error text (by the
//! messages ffmpeg 5.1 prints). The text itself is never passed on: it holds
//! the camera URL with its password.

/// Why reading a stream (or writing a recording) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    NotFound,
    Refused,
    TimedOut,
    Unreachable,
    /// The disk the recordings go to is full.
    NoSpace,
    /// Anything else.
    Other,
}

impl Failure {
    /// Reads `stderr`, the end of what the tool printed.
    pub fn classify(stderr: &str) -> Failure {
        const TABLE: [(&str, Failure); 10] = [
            ("No space left on device", Failure::NoSpace),
            ("401 Unauthorized", Failure::Unauthorized),
            ("404 Not Found", Failure::NotFound),
            ("Connection refused", Failure::Refused),
            ("timed out", Failure::TimedOut),
            ("No route to host", Failure::Unreachable),
            ("Network is unreachable", Failure::Unreachable),
            ("Name or service not known", Failure::Unreachable),
            ("Failed to resolve hostname", Failure::Unreachable),
            ("Temporary failure in name resolution", Failure::Unreachable),
        ];
        TABLE
            .iter()
            .find(|(needle, _)| stderr.contains(needle))
            .map_or(Failure::Other, |(_, failure)| *failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_ffmpeg_errors() {
        let table = [
            (
                "[rtsp @ 0x55] method DESCRIBE failed: 401 Unauthorized\nrtsp://u:p@h/x: Server returned 401 Unauthorized (authorization failed)",
                Failure::Unauthorized,
            ),
            (
                "[rtsp @ 0x55] method DESCRIBE failed: 404 Not Found\nrtsp://h/x: Server returned 404 Not Found",
                Failure::NotFound,
            ),
            (
                "[tcp @ 0x55] Connection to tcp://127.0.0.1:9 failed: Connection refused",
                Failure::Refused,
            ),
            ("rtsp://h/x: Connection timed out", Failure::TimedOut),
            (
                "[tcp @ 0x5] Failed to resolve hostname nope: Name or service not known",
                Failure::Unreachable,
            ),
            (
                "[segment @ 0x5] Failed to open segment 'x.mp4'\nav_interleaved_write_frame(): No space left on device",
                Failure::NoSpace,
            ),
            (
                "rtsp://h/x: Invalid data found when processing input",
                Failure::Other,
            ),
        ];
        for (stderr, want) in table {
            assert_eq!(Failure::classify(stderr), want, "{stderr}");
        }
    }
}

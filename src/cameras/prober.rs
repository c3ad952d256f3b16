//! Stream probing: runs ffprobe (supervised, killed at 10 s) on a camera's
//! RTSP URL over TCP, or on a recorded file, and reads the capabilities of
//! the main stream from its JSON.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::cameras::camera::Capabilities;
use crate::media::failure::Failure;
use crate::media::gate::Gate;
use crate::media::input::Input;

/// The spec's probe timeout.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Children started by requests (probes, snapshots) running at once,
/// node-wide: each is an ffprobe or ffmpeg of tens of MB on a 1 GB board,
/// and one request (a device's profiles) starts several.
pub const READERS_AT_ONCE: usize = 4;
/// The longest a request waits for one of those places before it is told
/// the node is busy (a 503): a probe of a camera that answers takes a
/// second or two.
pub const READER_WAIT: Duration = Duration::from_secs(5);

/// Why a probe failed, in words safe to show: ffprobe's own text is never
/// passed on because it prints the URL with its password.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeError {
    TimedOut,
    Refused,
    NotFound,
    Unauthorized,
    Unreachable,
    NoVideo,
    /// ffprobe ended with a video stream but before it had read a picture's
    /// size: the camera closed the stream early.
    NoPicture,
    Unreadable,
    ToolMissing,
    /// [`READERS_AT_ONCE`] streams were being read already.
    Busy,
}

impl ProbeError {
    pub fn message(self) -> String {
        format!("probe failed: {}", self.reason())
    }

    /// What went wrong, in words that fit any read of the stream.
    pub fn reason(self) -> &'static str {
        match self {
            ProbeError::TimedOut => "the camera did not answer within 10 seconds",
            ProbeError::Refused => "the camera refused the connection",
            ProbeError::NotFound => "the camera has no stream at this path (not found)",
            ProbeError::Unauthorized => {
                "the camera rejected the user name or password (authorization failed)"
            }
            ProbeError::Unreachable => "the camera's host could not be reached",
            ProbeError::NoVideo => "the stream has no video",
            ProbeError::NoPicture => "the camera ended the stream before its first picture",
            ProbeError::Unreadable => "the stream could not be read",
            ProbeError::ToolMissing => {
                "the stream probe tool (ffprobe) is not available on the node"
            }
            ProbeError::Busy => {
                "the node is reading as many streams at once as it may; try again in a few seconds"
            }
        }
    }
}

impl From<Failure> for ProbeError {
    fn from(failure: Failure) -> ProbeError {
        match failure {
            Failure::Unauthorized => ProbeError::Unauthorized,
            Failure::NotFound => ProbeError::NotFound,
            Failure::Refused => ProbeError::Refused,
            Failure::TimedOut => ProbeError::TimedOut,
            Failure::Unreachable => ProbeError::Unreachable,
            Failure::NoSpace | Failure::Other => ProbeError::Unreadable,
        }
    }
}

/// The most of ffprobe's JSON read: a few streams' worth is a few KiB.
const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// A stream cut before its first picture is probed again when at least this
/// much of the 10 s is left: a camera whose server restarts, or that turns a
/// reader away after PLAY, is readable a moment later, and one retry costs
/// about a second where a failed probe leaves the camera without
/// capabilities.
const RETRY_WHEN_LEFT: Duration = Duration::from_secs(3);

/// The places of the children that requests start: one set, node-wide,
/// for the prober and the snapshots.
pub fn readers() -> Arc<Gate> {
    Arc::new(Gate::new(READERS_AT_ONCE))
}

#[derive(Clone)]
pub struct Prober {
    ffprobe: PathBuf,
    readers: Arc<Gate>,
}

impl Prober {
    /// `readers`: the places of the children that requests start.
    pub fn new(ffprobe: PathBuf, readers: Arc<Gate>) -> Prober {
        Prober { ffprobe, readers }
    }

    /// Probes `url`. Blocks for at most [`READER_WAIT`] for a place, then
    /// [`PROBE_TIMEOUT`] plus the time to
    /// reap ffprobe: a stream cut before its first picture is probed once
    /// more within that time.
    pub fn probe(&self, url: &str) -> Result<Capabilities, ProbeError> {
        let Some(_place) = self.readers.enter_within(READER_WAIT) else {
            return Err(ProbeError::Busy);
        };
        let deadline = Instant::now() + PROBE_TIMEOUT;
        let input = Input::rtsp(url, PROBE_TIMEOUT);
        let attempt = || {
            let mut command = self.command();
            command.args(Input::args());
            self.run(&input, command, deadline)
        };
        let first = attempt();
        let left = deadline.saturating_duration_since(Instant::now());
        if first != Err(ProbeError::NoPicture) || left < RETRY_WHEN_LEFT {
            return first;
        }
        log::debug!("probe: the stream ended before its first picture; probing again");
        attempt()
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.ffprobe);
        command
            .args(["-v", "error", "-of", "json", "-show_entries"])
            .arg("stream=codec_type,codec_name,width,height,avg_frame_rate,r_frame_rate");
        command
    }

    fn run(
        &self,
        input: &Input,
        mut command: Command,
        deadline: Instant,
    ) -> Result<Capabilities, ProbeError> {
        let mut child = match input.spawn(&mut command) {
            Ok(child) => child,
            Err(e) => {
                log::error!("cannot run {}: {e}", self.ffprobe.display());
                return Err(ProbeError::ToolMissing);
            }
        };
        let Some((stdout, status)) = child.finish(deadline, MAX_OUTPUT_BYTES) else {
            return Err(ProbeError::TimedOut);
        };
        // On failure ffprobe still prints `{}`: judge by the exit status.
        if !status.success() {
            return Err(Failure::classify(&child.stderr_tail()).into());
        }
        parse(&stdout)
    }
}

#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    streams: Vec<Stream>,
}

#[derive(Deserialize)]
struct Stream {
    codec_type: Option<String>,
    codec_name: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    avg_frame_rate: Option<String>,
    r_frame_rate: Option<String>,
}

/// Capabilities from the first video and first audio stream of ffprobe's JSON.
fn parse(stdout: &[u8]) -> Result<Capabilities, ProbeError> {
    let output: Output = serde_json::from_slice(stdout).map_err(|_| ProbeError::Unreadable)?;
    let of_type = |t: &str| {
        output
            .streams
            .iter()
            .find(|s| s.codec_type.as_deref() == Some(t))
    };
    let video = of_type("video").ok_or(ProbeError::NoVideo)?;
    let (width, height) = (video.width.unwrap_or(0), video.height.unwrap_or(0));
    if width == 0 || height == 0 {
        return Err(ProbeError::NoPicture);
    }
    let fps = [&video.avg_frame_rate, &video.r_frame_rate]
        .into_iter()
        .find_map(|rate| rate.as_deref().and_then(frame_rate))
        .unwrap_or(0);
    Ok(Capabilities {
        video_codec: video.codec_name.clone().unwrap_or_default(),
        width,
        height,
        fps,
        audio_codec: of_type("audio").and_then(|a| a.codec_name.clone()),
    })
}

/// `"30000/1001"` -> 30; `"0/0"` and junk -> None.
fn frame_rate(rate: &str) -> Option<u32> {
    let (num, den) = rate.split_once('/')?;
    let (num, den): (f64, f64) = (num.parse().ok()?, den.parse().ok()?);
    let fps = (num / den).round();
    (fps.is_finite() && fps >= 1.0 && fps <= u32::MAX as f64).then_some(fps as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn parses_video_and_audio() {
        let json = br#"{"programs":[],"streams":[
            {"codec_name":"pcm_alaw","codec_type":"audio","r_frame_rate":"0/0","avg_frame_rate":"0/0"},
            {"codec_name":"h264","codec_type":"video","width":1920,"height":1080,"r_frame_rate":"25/1","avg_frame_rate":"30000/1001"},
            {"codec_name":"hevc","codec_type":"video","width":640,"height":360,"r_frame_rate":"10/1","avg_frame_rate":"10/1"}]}"#;
        assert_eq!(
            parse(json),
            Ok(Capabilities {
                video_codec: "h264".into(),
                width: 1920,
                height: 1080,
                fps: 30,
                audio_codec: Some("pcm_alaw".into()),
            })
        );
    }

    #[test]
    fn falls_back_to_real_frame_rate() {
        let json = br#"{"streams":[{"codec_name":"h264","codec_type":"video","width":2,"height":2,"r_frame_rate":"15/1","avg_frame_rate":"0/0"}]}"#;
        let caps = parse(json).unwrap();
        assert_eq!((caps.fps, caps.audio_codec), (15, None));
    }

    #[test]
    fn failures() {
        let table: [(&[u8], ProbeError); 5] = [
            (b"{}", ProbeError::NoVideo),
            (br#"{"streams":[{"codec_type":"audio","codec_name":"aac"}]}"#, ProbeError::NoVideo),
            (br#"{"streams":[{"codec_type":"video","codec_name":"h264","width":0,"height":720}]}"#, ProbeError::NoPicture),
            (br#"{"streams":[{"codec_type":"video","codec_name":"h264","width":1280}]}"#, ProbeError::NoPicture),
            (b"not json", ProbeError::Unreadable),
        ];
        for (json, want) in table {
            assert_eq!(parse(json), Err(want), "{}", String::from_utf8_lossy(json));
        }
    }

    #[test]
    fn frame_rates() {
        let table = [
            ("25/1", Some(25)),
            ("30000/1001", Some(30)),
            ("15/2", Some(8)),
            ("0/0", None),
            ("1/0", None),
            ("x/1", None),
            ("25", None),
        ];
        for (rate, want) in table {
            assert_eq!(frame_rate(rate), want, "{rate}");
        }
    }

    #[test]
    fn failures_map_to_reasons() {
        let table = [
            (Failure::Unauthorized, ProbeError::Unauthorized),
            (Failure::NotFound, ProbeError::NotFound),
            (Failure::Refused, ProbeError::Refused),
            (Failure::TimedOut, ProbeError::TimedOut),
            (Failure::Unreachable, ProbeError::Unreachable),
            (Failure::NoSpace, ProbeError::Unreadable),
            (Failure::Other, ProbeError::Unreadable),
        ];
        for (failure, want) in table {
            assert_eq!(ProbeError::from(failure), want, "{failure:?}");
        }
    }

    /// A stand-in ffprobe that prints a stream without a size on its first
    /// run and a whole one after, counting its runs in `runs`.
    fn flaky_ffprobe(dir: &Path, always_cut: bool) -> PathBuf {
        let script = dir.join("ffprobe");
        let cut = r#"{"streams":[{"codec_type":"video","codec_name":"h264"}]}"#;
        let whole = r#"{"streams":[{"codec_type":"video","codec_name":"h264","width":640,"height":360,"avg_frame_rate":"25/1"}]}"#;
        let second = if always_cut { cut } else { whole };
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho run >> '{runs}'\nif [ $(wc -l < '{runs}') -eq 1 ]; then echo '{cut}'; else echo '{second}'; fi\n",
                runs = dir.join("runs").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        script
    }

    fn runs(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("runs"))
            .unwrap()
            .lines()
            .count()
    }

    #[test]
    fn a_stream_cut_before_its_first_picture_is_probed_once_more() {
        for (always_cut, want) in [(false, Ok((640, 360))), (true, Err(ProbeError::NoPicture))] {
            let dir = std::env::temp_dir().join(format!(
                "nvr-node-prober-{}-{always_cut}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let prober = Prober::new(flaky_ffprobe(&dir, always_cut), readers());
            let got = prober
                .probe("rtsp://127.0.0.1/x")
                .map(|c| (c.width, c.height));
            assert_eq!((got, runs(&dir)), (want, 2), "always cut: {always_cut}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn missing_tool() {
        let prober = Prober::new("/nonexistent/ffprobe".into(), readers());
        assert_eq!(
            prober.probe("rtsp://127.0.0.1/x"),
            Err(ProbeError::ToolMissing)
        );
    }
}

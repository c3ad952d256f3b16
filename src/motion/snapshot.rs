//! A camera's picture now, as a JPEG at most 640 pixels wide, to draw its
//! motion masks and zones on (`GET /api/cameras/{id}/snapshot.jpg`): the
//! motion watcher's next colour frame where one runs (a camera that
//! classifies), encoded by ffmpeg from its stdin; otherwise one frame read
//! from the sub stream (the main one when there is none) by ffmpeg within
//! the probe's 10 s. Both ffmpeg are supervised children. Their error text
//! holds the camera's URL with its password: it is read only to tell what
//! went wrong, never passed on or logged.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cameras::camera::Camera;
use crate::cameras::prober::{PROBE_TIMEOUT, ProbeError, READER_WAIT};
use crate::media::child::Child;
use crate::media::failure::Failure;
use crate::media::gate::Gate;
use crate::media::input::Input;
use crate::motion::Motion;
use crate::motion::frame_requests::Yuv420Frame;

/// The longest wait for the watcher's next frame (it sends 5 a second).
const FRAME_WAIT: Duration = Duration::from_secs(2);
/// The longest a frame from the watcher takes to encode.
const ENCODE_TIMEOUT: Duration = Duration::from_secs(5);
/// A JPEG at most 640 wide is a few tens of KiB: more is not ffmpeg's.
const MAX_JPEG_BYTES: usize = 4 * 1024 * 1024;
/// ffmpeg's output: one picture, at most 640 wide (even heights, the
/// thumbnails' quality), as a JPEG on stdout.
const TO_JPEG: [&str; 12] = [
    "-an",
    "-frames:v",
    "1",
    "-vf",
    "scale='min(640,iw)':-2",
    "-q:v",
    "4",
    "-c:v",
    "mjpeg",
    "-f",
    "image2pipe",
    "pipe:1",
];

/// Why there is no picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPicture {
    /// Reading the camera's stream failed.
    Stream(ProbeError),
    /// ffmpeg failed on a frame the watcher gave.
    Encoding,
    /// ffmpeg could not be run.
    ToolMissing,
}

impl NoPicture {
    /// In plain words, for the API's 502.
    pub fn message(self) -> String {
        let why = match self {
            NoPicture::Stream(e) => e.reason(),
            NoPicture::Encoding => "the camera's picture could not be turned into a JPEG",
            NoPicture::ToolMissing => "the picture tool (ffmpeg) is not available on the node",
        };
        format!("no picture could be had from the camera: {why}")
    }
}

pub struct Snapshots {
    ffmpeg: PathBuf,
    readers: Arc<Gate>,
}

impl Snapshots {
    /// `readers`: the places of the children that requests start.
    pub fn new(ffmpeg: PathBuf, readers: Arc<Gate>) -> Snapshots {
        Snapshots { ffmpeg, readers }
    }

    /// `camera`'s picture now, as a JPEG. Blocks for at most the probe's
    /// 10 s (plus the wait for the watcher's frame, when it has one).
    pub fn take(&self, camera: &Camera, motion: &Motion) -> Result<Vec<u8>, NoPicture> {
        let Some(_place) = self.readers.enter_within(READER_WAIT) else {
            return Err(NoPicture::Stream(ProbeError::Busy));
        };
        let taken = match motion.next_frame(camera.id, FRAME_WAIT) {
            Some(frame) => {
                log::debug!(
                    "camera {}: snapshot of its motion watcher's frame",
                    camera.id
                );
                self.encode(&frame)
            }
            None => {
                log::debug!("camera {}: snapshot read from its stream", camera.id);
                let settings = &camera.settings;
                self.read(settings.rtsp_sub_url.as_ref().unwrap_or(&settings.rtsp_url))
            }
        };
        if let Err(e) = taken {
            log::info!("camera {}: {}", camera.id, e.message());
        }
        taken
    }

    /// The watcher's frame as a JPEG.
    fn encode(&self, frame: &Yuv420Frame) -> Result<Vec<u8>, NoPicture> {
        let planar = frame.planar().ok_or(NoPicture::Encoding)?;
        let size = format!("{}x{}", frame.width, frame.height);
        let mut command = self.command();
        command
            .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", &size])
            .args(["-i", "pipe:0"])
            .args(TO_JPEG);
        let mut child = Child::spawn_with_input(&mut command).map_err(|e| self.missing(e))?;
        let deadline = Instant::now() + ENCODE_TIMEOUT;
        if !child.write_all(&planar, deadline) {
            return Err(NoPicture::Encoding);
        }
        child.close_input();
        jpeg(&mut child, deadline).map_err(|_| NoPicture::Encoding)
    }

    /// One frame of `url`'s stream as a JPEG, within the probe's limit.
    fn read(&self, url: &str) -> Result<Vec<u8>, NoPicture> {
        let input = Input::rtsp(url, PROBE_TIMEOUT);
        let mut command = self.command();
        command.args(Input::args()).args(TO_JPEG);
        let mut child = input.spawn(&mut command).map_err(|e| self.missing(e))?;
        jpeg(&mut child, Instant::now() + PROBE_TIMEOUT).map_err(NoPicture::Stream)
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.ffmpeg);
        command.args(["-hide_banner", "-nostdin", "-loglevel", "error"]);
        command
    }

    fn missing(&self, e: std::io::Error) -> NoPicture {
        log::error!("cannot run {}: {e}", self.ffmpeg.display());
        NoPicture::ToolMissing
    }
}

/// The JPEG `child` writes on stdout before `deadline`, or why there is none.
fn jpeg(child: &mut Child, deadline: Instant) -> Result<Vec<u8>, ProbeError> {
    let Some((out, status)) = child.finish(deadline, MAX_JPEG_BYTES) else {
        return Err(ProbeError::TimedOut);
    };
    if !status.success() {
        return Err(Failure::classify(&child.stderr_tail()).into());
    }
    // ffmpeg ends well without a picture when the stream ends before one.
    if !out.starts_with(&[0xFF, 0xD8]) {
        return Err(ProbeError::NoPicture);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::prober::readers;

    #[test]
    fn a_watchers_frame_becomes_a_jpeg_of_its_size() {
        let snapshots = Snapshots::new("ffmpeg".into(), readers());
        // 64×36: a grey luma, neutral chroma.
        let frame = Yuv420Frame {
            width: 64,
            height: 36,
            data: [vec![90; 64 * 36], vec![128; 64 * 36 / 2]].concat(),
        };
        let jpeg = snapshots.encode(&frame).expect("a JPEG");
        assert!(jpeg.starts_with(&[0xFF, 0xD8]) && jpeg.ends_with(&[0xFF, 0xD9]));
        // The frame header (SOF0): height, then width, after its length and precision.
        let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let size = |at: usize| u16::from_be_bytes([jpeg[at], jpeg[at + 1]]);
        assert_eq!((size(sof + 7), size(sof + 5)), (64, 36));

        let short = Yuv420Frame {
            data: vec![0; 10],
            ..frame
        };
        assert_eq!(snapshots.encode(&short), Err(NoPicture::Encoding));

        // Red (BT.601: Y 81, U 90, V 240) as the watcher lays it out: each
        // chroma row its U half, then its V half.
        let (w, h) = (64, 36);
        let chroma_row = [vec![90u8; w / 2], vec![240u8; w / 2]].concat();
        let red = Yuv420Frame {
            width: w,
            height: h,
            data: [vec![81; w * h], chroma_row.repeat(h / 2)].concat(),
        };
        let jpeg = snapshots.encode(&red).expect("a JPEG");
        let decoded = std::process::Command::new("ffmpeg")
            .args([
                "-v", "error", "-f", "mjpeg", "-i", "pipe:0", "-f", "rawvideo",
            ])
            .args(["-pix_fmt", "rgb24", "pipe:1"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(&jpeg)?;
                child.wait_with_output()
            })
            .expect("run ffmpeg (Debian's) to decode the JPEG");
        let rgb = decoded.stdout;
        assert_eq!(rgb.len(), w * h * 3);
        for pixel in rgb.chunks_exact(3) {
            assert!(
                pixel[0] > 200 && pixel[1] < 60 && pixel[2] < 60,
                "red in, {pixel:?} out"
            );
        }
        let missing = Snapshots::new("/nonexistent/ffmpeg".into(), readers());
        assert_eq!(missing.read("rtsp://h/x"), Err(NoPicture::ToolMissing));
    }

    #[test]
    fn messages_say_why_in_plain_words() {
        assert_eq!(
            NoPicture::Stream(ProbeError::Refused).message(),
            "no picture could be had from the camera: the camera refused the connection"
        );
        assert!(
            NoPicture::ToolMissing
                .message()
                .contains("(ffmpeg) is not available")
        );
    }
}

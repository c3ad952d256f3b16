//! nvr-classify: the node's object classifier, a child process of the node.
//!
//! `nvr-classify MODEL_DIR` loads `MODEL_DIR/model.tflite` and
//! `MODEL_DIR/labels.txt`, prints `ready`, then answers records on stdin:
//! a line `<id> <width> <height>` (300 and 300) and width*height*3 bytes of
//! RGB, with one JSON line on stdout (docs/design/classification.md).
//! Strict on purpose: a header line is bounded, a payload is read to the
//! exact byte, and a stream it can no longer follow ends the process.

mod heap;
mod model;

use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use nvr_classify_core::{labels, protocol, ssd};

/// Objects reported per crop, their least score and the suppression IoU.
const MAX_OBJECTS: usize = 10;
const MIN_SCORE: f32 = 0.1;
const NMS_IOU: f32 = 0.5;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let [dir] = &args[..] else {
        eprintln!("usage: nvr-classify MODEL_DIR");
        return ExitCode::from(2);
    };
    match run(Path::new(dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("nvr-classify: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<(), String> {
    let labels = labels::read(&dir.join("labels.txt"))?;
    let path: PathBuf = dir.join("model.tflite");
    if !path.is_file() {
        return Err(format!(
            "{} is missing: install the model with deploy/model/install-model.sh",
            path.display()
        ));
    }
    heap::loading();
    let model = model::Model::load(&path).map_err(|e| format!("{e:#}"))?;
    heap::loaded();
    let anchors = ssd::anchors();
    let mut out = io::stdout().lock();
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let fail = |e: io::Error| format!("stdout: {e}");
    writeln!(out, "{}", protocol::READY)
        .and_then(|()| out.flush())
        .map_err(fail)?;
    let mut rgb = vec![0u8; ssd::INPUT_SIZE * ssd::INPUT_SIZE * 3];
    loop {
        let Some(line) = protocol::read_line(&mut input)? else {
            return Ok(());
        };
        let id = match protocol::parse_header(&line, ssd::INPUT_SIZE) {
            Ok(id) => id,
            Err(bad) => {
                let Some(id) = bad.id else {
                    return Err(format!("bad record header: {}", bad.message));
                };
                writeln!(out, "{}", protocol::error_line(id, &bad.message)).map_err(fail)?;
                out.flush().map_err(fail)?;
                match bad.skip {
                    Some(n) => {
                        let skipped = io::copy(&mut (&mut input).take(n), &mut io::sink())
                            .map_err(|e| format!("stdin: {e}"))?;
                        if skipped < n {
                            return Err(format!("stdin ended inside record {id}"));
                        }
                        continue;
                    }
                    None => return Err(format!("record {id}: {}", bad.message)),
                }
            }
        };
        if let Err(e) = input.read_exact(&mut rgb) {
            let message = "stdin ended inside the record";
            writeln!(out, "{}", protocol::error_line(id, message)).map_err(fail)?;
            return Err(format!("record {id}: {e}"));
        }
        let started = Instant::now();
        let reply = match model.run(&rgb) {
            Ok(raw) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                labels::answer_line(id, ms, &objects(&raw, &anchors), &labels)
            }
            Err(e) => protocol::error_line(id, &format!("{e:#}")),
        };
        writeln!(out, "{reply}")
            .and_then(|()| out.flush())
            .map_err(fail)?;
    }
}

/// The objects in the model's raw output, decoded as the classifier
/// answers them.
fn objects(raw: &model::Raw, anchors: &[ssd::Anchor]) -> Vec<ssd::Object> {
    ssd::detect(
        &raw.boxes,
        &raw.scores,
        anchors,
        MIN_SCORE,
        NMS_IOU,
        MAX_OBJECTS,
    )
}

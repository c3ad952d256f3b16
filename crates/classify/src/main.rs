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

/// The system's allocator, with each crop's tensors in one planned block.
#[global_allocator]
static HEAP: heap::Arena = heap::Arena::new();

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
    heap::trim();
    let anchors = ssd::anchors();
    // One crop, grey, shows the arena what a crop allocates, up to its
    // objects: the raw outputs then die within the run as well.
    let mut rgb = vec![128u8; ssd::INPUT_SIZE * ssd::INPUT_SIZE * 3];
    HEAP.plan(|| classify(&model, &rgb, &anchors))
        .map_err(|e| format!("{e:#}"))?;
    heap::loaded();
    let mut out = io::stdout().lock();
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let fail = |e: io::Error| format!("stdout: {e}");
    writeln!(out, "{}", protocol::READY)
        .and_then(|()| out.flush())
        .map_err(fail)?;
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
        let reply = match HEAP.replay(|| classify(&model, &rgb, &anchors)) {
            Ok((ms, objects)) => labels::answer_line(id, ms, &objects, &labels),
            Err(e) => protocol::error_line(id, &format!("{e:#}")),
        };
        writeln!(out, "{reply}")
            .and_then(|()| out.flush())
            .map_err(fail)?;
    }
}

/// The objects the model finds in a crop, decoded as the classifier
/// answers them, and the ms the network took.
fn classify(
    model: &model::Model,
    rgb: &[u8],
    anchors: &[ssd::Anchor],
) -> tract_tflite::prelude::TractResult<(f64, Vec<ssd::Object>)> {
    let started = Instant::now();
    let raw = model.run(rgb)?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let objects = ssd::detect(
        &raw.boxes,
        &raw.scores,
        anchors,
        MIN_SCORE,
        NMS_IOU,
        MAX_OBJECTS,
    );
    Ok((ms, objects))
}

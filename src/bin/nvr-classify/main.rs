//! nvr-classify: the node's object classifier, a child process of the node.
//!
//! `nvr-classify MODEL_DIR` loads `MODEL_DIR/model.tflite` and
//! `MODEL_DIR/labels.txt`, prints `ready`, then answers records on stdin:
//! a line `<id> <width> <height>` (300 and 300) and width*height*3 bytes of
//! RGB, with one JSON line on stdout (docs/design/classification.md).
//! Strict on purpose: a header line is bounded, a payload is read to the
//! exact byte, and a stream it can no longer follow ends the process.

mod model;
mod ssd;

use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use nvr_node::classify_protocol as protocol;

/// Objects reported per crop, their least score and the suppression IoU.
const MAX_OBJECTS: usize = 10;
const MIN_SCORE: f32 = 0.1;
const NMS_IOU: f32 = 0.5;
/// The label of the background and of the ids the labels do not name.
const UNNAMED: &str = "???";

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
    let labels = read_labels(&dir.join("labels.txt"))?;
    let path: PathBuf = dir.join("model.tflite");
    if !path.is_file() {
        return Err(format!(
            "{} is missing: install the model with deploy/model/install-model.sh",
            path.display()
        ));
    }
    let model = model::Model::load(&path).map_err(|e| format!("{e:#}"))?;
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
                reply(id, ms, &objects(&raw, &anchors), &labels)
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

/// The label of each score column, read from `labels.txt` as the model's
/// package ships it: lines of `<id>  <name>`, COCO's ids counted from 0
/// (person), the score column of an id being the id plus 1 (column 0 is the
/// background). Columns without a name are `???`, as the background.
fn read_labels(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read {}: {e} (install the model with deploy/model/install-model.sh)",
            path.display()
        )
    })?;
    parse_labels(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_labels(text: &str) -> Result<Vec<String>, String> {
    let mut labels = vec![UNNAMED.to_owned(); ssd::CLASSES];
    for (n, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
        let (id, name) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("not <id> <name>"))?;
        let column = id
            .parse::<usize>()
            .ok()
            .map(|id| id + 1)
            .filter(|&c| c < ssd::CLASSES)
            .ok_or_else(|| bad(&format!("not an id from 0 to {}", ssd::CLASSES - 2)))?;
        let name = name.trim();
        if name.is_empty() || labels[column] != UNNAMED {
            return Err(bad("no name, or an id named twice"));
        }
        labels[column] = name.to_owned();
    }
    if labels.iter().all(|l| l == UNNAMED) {
        return Err("no labels".into());
    }
    Ok(labels)
}

fn reply(id: u64, ms: f64, objects: &[ssd::Object], labels: &[String]) -> String {
    let round = |v: f32| (v * 10_000.0).round() / 10_000.0;
    let objects: Vec<_> = objects
        .iter()
        .map(|o| protocol::Object {
            label: labels[o.class].clone(),
            score: round(o.score),
            area: o.bbox.map(round),
        })
        .collect();
    protocol::answer_line(id, ms, &objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_as_the_package_ships_them() {
        let labels = parse_labels("0  person\n2  car\n89  toothbrush\n").unwrap();
        assert_eq!(labels.len(), ssd::CLASSES);
        assert_eq!(
            [&labels[0], &labels[1], &labels[2], &labels[3], &labels[90]],
            ["???", "person", "???", "car", "toothbrush"]
        );
        for bad in [
            "",
            "person",
            "x  person",
            "90  hair brush",
            "-1  person",
            "0  ",
            "0  person\n0  man",
        ] {
            assert!(parse_labels(bad).is_err(), "{bad:?}");
        }
    }

    /// The shipped model (`target/model`, installed by tests/run.sh) on
    /// crops of the test camera's photographs (`target/photos`), against
    /// what the TFLite runtime (ai-edge-litert 2.3.0, running the model
    /// quantised, with its own post-processing) found in the same crops:
    /// `deploy/model/reference.py`. The best object: its label, its score
    /// within 0.03 (the model runs here in float, there in 8 bits) and its
    /// box within 0.02.
    #[test]
    fn the_model_sees_what_the_tflite_runtime_sees() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        let dir = root.join("model");
        assert!(
            dir.join("labels.txt").is_file(),
            "the model is not installed in {}: sh deploy/model/install-model.sh target/model",
            dir.display()
        );
        let labels = read_labels(&dir.join("labels.txt")).unwrap();
        let model = model::Model::load(&dir.join("model.tflite")).unwrap();
        let anchors = ssd::anchors();
        for (photo, label, score, bbox) in [
            ("cat", "cat", 0.9102, [0.017, 0.005, 0.916, 0.989]),
            ("person", "person", 0.7305, [0.013, 0.027, 0.714, 0.984]),
            ("car", "car", 0.8789, [0.039, 0.127, 0.866, 0.938]),
            ("cameraman", "person", 0.8398, [0.004, 0.129, 0.595, 0.997]),
        ] {
            let path = root.join("photos").join(format!("{photo}.png"));
            assert!(
                path.is_file(),
                "{} is missing: bash tests/camera/get_photos.sh target/photos",
                path.display()
            );
            // As reference.py makes it: the photograph squeezed to 300x300.
            let crop = std::process::Command::new("ffmpeg")
                .args(["-v", "error", "-i"])
                .arg(&path)
                .args(["-vf", "scale=300:300:flags=bilinear"])
                .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
                .output()
                .expect("ffmpeg (Debian package ffmpeg) makes the crops");
            assert!(crop.status.success(), "ffmpeg failed on {}", path.display());
            let objects = objects(&model.run(&crop.stdout).unwrap(), &anchors);
            let best = &objects[0];
            assert_eq!(labels[best.class], label, "{photo}: {objects:?}");
            assert!((best.score - score).abs() <= 0.03, "{photo}: {best:?}");
            let off = best.bbox.iter().zip(bbox).map(|(g, e)| (g - e).abs());
            assert!(off.fold(0.0, f32::max) <= 0.02, "{photo}: {best:?}");
        }
    }

    #[test]
    fn a_reply_names_labels_and_rounds() {
        let labels: Vec<String> = ["???", "person"].map(String::from).to_vec();
        let object = ssd::Object {
            class: 1,
            score: 0.123456,
            bbox: [0.1, 0.2, 0.30004, 1.0],
        };
        let reply = reply(7, 35.25, &[object], &labels);
        assert_eq!(
            reply,
            r#"{"id":7,"ms":35.3,"objects":[{"label":"person","score":0.1235,"box":[0.1,0.2,0.3,1.0]}]}"#
        );
    }
}

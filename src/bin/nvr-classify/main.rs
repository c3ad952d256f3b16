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

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;

/// Longest header line accepted, newline included: a u64 and two sizes.
const MAX_LINE: usize = 64;
/// Objects reported per crop, their least score and the suppression IoU.
const MAX_OBJECTS: usize = 10;
const MIN_SCORE: f32 = 0.1;
const NMS_IOU: f32 = 0.5;
/// Largest payload skipped after a header with the wrong size (so the
/// stream stays in step); past it the stream is given up.
const MAX_SKIP: u64 = 4096 * 4096 * 3;
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
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(fail)?;
    let mut rgb = vec![0u8; ssd::INPUT_SIZE * ssd::INPUT_SIZE * 3];
    loop {
        let Some(line) = read_line(&mut input)? else {
            return Ok(());
        };
        let id = match parse_header(&line) {
            Ok(id) => id,
            Err(bad) => {
                let Some(id) = bad.id else {
                    return Err(format!("bad record header: {}", bad.message));
                };
                writeln!(out, "{}", json!({"id": id, "error": bad.message})).map_err(fail)?;
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
            writeln!(
                out,
                "{}",
                json!({"id": id, "error": "stdin ended inside the record"})
            )
            .map_err(fail)?;
            return Err(format!("record {id}: {e}"));
        }
        let started = Instant::now();
        let reply = match model.run(&rgb) {
            Ok(raw) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                reply(id, ms, &objects(&raw, &anchors), &labels)
            }
            Err(e) => json!({"id": id, "error": format!("{e:#}")}),
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

/// The next header line without its newline; `None` at a clean end of input.
fn read_line(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    let mut line = Vec::with_capacity(MAX_LINE);
    input
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("stdin: {e}"))?;
    match line.pop() {
        None => Ok(None),
        Some(b'\n') => Ok(Some(line)),
        Some(_) if line.len() + 1 == MAX_LINE => {
            Err(format!("a header line longer than {MAX_LINE} bytes"))
        }
        Some(_) => Err("stdin ended inside a header line".into()),
    }
}

/// Why a header was refused: the id when it could be read, and how many
/// payload bytes to skip to stay in step (`None`: the stream is lost).
#[derive(Debug, PartialEq)]
struct BadHeader {
    id: Option<u64>,
    message: String,
    skip: Option<u64>,
}

/// Parses `<id> <width> <height>` (decimal, single spaces) into the id,
/// refusing any size but 300x300.
fn parse_header(line: &[u8]) -> Result<u64, BadHeader> {
    let bad = |id, message: &str, skip| BadHeader {
        id,
        message: message.into(),
        skip,
    };
    let number = |s: &str| -> Option<u64> {
        // u64::from_str takes a leading '+'; the protocol is digits only.
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let text = std::str::from_utf8(line).map_err(|_| bad(None, "not ASCII", None))?;
    let mut fields = text.split(' ');
    let id = fields
        .next()
        .and_then(number)
        .ok_or_else(|| bad(None, "no record id", None))?;
    let (Some(w), Some(h), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad(Some(id), "expected <id> <width> <height>", None));
    };
    let (Some(w), Some(h)) = (number(w), number(h)) else {
        return Err(bad(Some(id), "width and height must be numbers", None));
    };
    let size = ssd::INPUT_SIZE as u64;
    if (w, h) != (size, size) {
        let bytes = w.checked_mul(h).and_then(|p| p.checked_mul(3));
        let skip = bytes.filter(|&n| n <= MAX_SKIP);
        let message = format!("the crop must be {size}x{size}, not {w}x{h}");
        return Err(bad(Some(id), &message, skip));
    }
    Ok(id)
}

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

fn reply(id: u64, ms: f64, objects: &[ssd::Object], labels: &[String]) -> serde_json::Value {
    let objects: Vec<_> = objects
        .iter()
        .map(|o| {
            json!({
                "label": labels[o.class],
                "score": round(o.score as f64, 4),
                "box": o.bbox.map(|v| round(v as f64, 4)),
            })
        })
        .collect();
    json!({"id": id, "ms": round(ms, 1), "objects": objects})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_header_gives_its_id() {
        assert_eq!(parse_header(b"7 300 300"), Ok(7));
        assert_eq!(parse_header(b"18446744073709551615 300 300"), Ok(u64::MAX));
    }

    #[test]
    fn a_header_without_an_id_is_refused_without_one() {
        for line in [
            &b""[..],
            b"x 300 300",
            b"-1 300 300",
            b"+7 300 300",
            b" 7 300 300",
            b"\xff",
        ] {
            let bad = parse_header(line).unwrap_err();
            assert_eq!(bad.id, None, "{line:?}: {bad:?}");
            assert_eq!(bad.skip, None);
        }
        // One past u64::MAX.
        assert_eq!(
            parse_header(b"18446744073709551616 300 300")
                .unwrap_err()
                .id,
            None
        );
    }

    #[test]
    fn a_header_with_an_id_but_no_sizes_loses_the_stream() {
        for line in [
            &b"7"[..],
            b"7 300",
            b"7 300 300 1",
            b"7  300 300",
            b"7 300 30a",
            b"7 300 300\r",
        ] {
            let bad = parse_header(line).unwrap_err();
            assert_eq!((bad.id, bad.skip), (Some(7), None), "{line:?}: {bad:?}");
        }
    }

    #[test]
    fn a_header_with_another_size_says_how_much_to_skip() {
        let bad = parse_header(b"9 320 240").unwrap_err();
        assert_eq!((bad.id, bad.skip), (Some(9), Some(320 * 240 * 3)));
        assert!(bad.message.contains("300x300"), "{}", bad.message);
        // Too large to skip, or overflowing: the stream is given up.
        assert_eq!(parse_header(b"9 5000 5000").unwrap_err().skip, None);
        let bad = parse_header(b"9 18446744073709551615 2").unwrap_err();
        assert_eq!((bad.id, bad.skip), (Some(9), None));
    }

    #[test]
    fn header_lines_are_bounded_and_must_end() {
        let mut input = &b"1 300 300\n"[..];
        assert_eq!(read_line(&mut input), Ok(Some(b"1 300 300".to_vec())));
        assert_eq!(read_line(&mut input), Ok(None));
        let long = [b'1'; 200];
        assert!(
            read_line(&mut &long[..])
                .unwrap_err()
                .contains("longer than 64")
        );
        assert!(
            read_line(&mut &b"1 300"[..])
                .unwrap_err()
                .contains("ended inside")
        );
    }

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
            reply.to_string(),
            r#"{"id":7,"ms":35.3,"objects":[{"box":[0.1,0.2,0.3,1.0],"label":"person","score":0.1235}]}"#
        );
    }
}

//! The classifier for the tests: the real `nvr-classify`, built for speed
//! as it ships, and the model `tests/run.sh` installs, or nothing
//! installed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The real `nvr-classify` as the quick start builds it (Cargo.toml's
/// profile `classify`), not a debug build of this test's: what ships, and
/// no second build of tract. Fails the test, saying how to build it, when
/// it is not there.
pub fn program() -> String {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/classify/nvr-classify");
    assert!(
        program.is_file(),
        "the classifier {} is not built: run `cargo build --profile classify -p nvr-classify` \
         (tests/run.sh does)",
        program.display()
    );
    program.display().to_string()
}

/// The real `nvr-classify` and the model `tests/run.sh` installs into
/// `target/model`; fails the test, saying how to install it, when it is
/// not there.
pub fn real() -> [(&'static str, String); 2] {
    [
        ("CLASSIFIER", program()),
        ("MODEL_DIR", model_dir().display().to_string()),
    ]
}

/// The model `tests/run.sh` installs into `target/model`; fails the test,
/// saying how to install it, when it is not there.
pub fn model_dir() -> PathBuf {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/model");
    for file in ["model.tflite", "labels.txt"] {
        assert!(
            model.join(file).is_file(),
            "the classifier's model is not installed in {}: run \
             `sh deploy/model/install-model.sh target/model` (tests/run.sh does)",
            model.display()
        );
    }
    model
}

/// A photograph as the classifier takes it: squeezed to 300x300
/// (bilinear) and decoded to RGB by ffmpeg.
pub fn crop(photo: &Path) -> Vec<u8> {
    assert!(photo.is_file(), "{} is missing", photo.display());
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(photo)
        .args(["-vf", "scale=300:300:flags=bilinear"])
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run ffmpeg (Debian's ffmpeg): {e}"));
    assert!(
        out.status.success() && out.stdout.len() == 300 * 300 * 3,
        "ffmpeg made no 300x300 crop of {}: {}",
        photo.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `program` (a command line: an emulator and its binary, or the
/// binary) with `model` on `crops`, one record each with ids from 1, and
/// returns its answers in order; fails the test with all it printed when
/// it does not answer each as the protocol says.
pub fn answers(program: &[&str], model: &Path, crops: &[Vec<u8>]) -> Vec<serde_json::Value> {
    let mut child = Command::new(program[0])
        .args(&program[1..])
        .arg(model)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let records: Vec<u8> = crops
        .iter()
        .enumerate()
        .flat_map(|(n, rgb)| [format!("{} 300 300\n", n + 1).into_bytes(), rgb.clone()])
        .flatten()
        .collect();
    // Written beside the reading: the answers must not wait on a full pipe.
    let writer = std::thread::spawn(move || stdin.write_all(&records));
    let out = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failure = format!(
        "{program:?} {}: {}, {written:?}\nstdout:\n{stdout}stderr:\n{}",
        model.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && written.is_ok(), "{failure}");
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("ready"), "{failure}");
    let answers: Vec<serde_json::Value> = lines
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {failure}")))
        .collect();
    assert_eq!(answers.len(), crops.len(), "{failure}");
    for (n, answer) in answers.iter().enumerate() {
        assert_eq!(answer["id"], n + 1, "{failure}");
        assert!(answer["objects"].is_array(), "{failure}");
    }
    answers
}

/// `CLASSIFIER` and `MODEL_DIR` naming nothing: no classifier installed.
pub fn missing(dir: &Path) -> [(&'static str, String); 2] {
    [
        (
            "CLASSIFIER",
            dir.join("no-classifier").display().to_string(),
        ),
        ("MODEL_DIR", dir.join("no-model").display().to_string()),
    ]
}

//! A classifier that is "installed" for tests of the settings, the UI and
//! Home Assistant, which need the node to find one but see no classification:
//! until the real `nvr-classify` and its model are built by the test command,
//! a stand-in that speaks its protocol (`ready`, then one line a record)
//! and finds nothing in any crop. Tests of classification itself use the
//! real one.

use std::path::Path;

const STAND_IN: &str = r#"#!/usr/bin/python3
# nvr-classify's protocol, finding nothing: see tests/common/classifier.rs.
import json, sys
print("ready", flush=True)
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    ident, width, height = (int(x) for x in line.split())
    sys.stdin.buffer.read(width * height * 3)
    print(json.dumps({"id": ident, "ms": 0.0, "objects": []}), flush=True)
"#;

/// Writes the stand-in and a model folder with a `labels.txt` into `dir`;
/// returns `CLASSIFIER` and `MODEL_DIR` for the node.
pub fn installed(dir: &Path) -> [(&'static str, String); 2] {
    use std::os::unix::fs::PermissionsExt;
    let program = dir.join("nvr-classify");
    std::fs::write(&program, STAND_IN).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let model = dir.join("model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("labels.txt"), "???\nPerson\n").unwrap();
    [
        ("CLASSIFIER", program.display().to_string()),
        ("MODEL_DIR", model.display().to_string()),
    ]
}

/// The real `nvr-classify` and the model `tests/run.sh` installs into
/// `target/model`; fails the test, saying how to install it, when it is
/// not there.
pub fn real() -> [(&'static str, String); 2] {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/model");
    assert!(
        model.join("labels.txt").is_file(),
        "the classifier's model is not installed in {}: run \
         `sh deploy/model/install-model.sh target/model` (tests/run.sh does)",
        model.display()
    );
    [
        ("CLASSIFIER", env!("CARGO_BIN_EXE_nvr-classify").to_owned()),
        ("MODEL_DIR", model.display().to_string()),
    ]
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

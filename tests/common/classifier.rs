//! The classifier for the tests: the real `nvr-classify`, built for speed
//! as it ships, and the model `tests/run.sh` installs, or nothing
//! installed.

use std::path::Path;

/// The real `nvr-classify` as the quick start builds it (Cargo.toml's
/// profile `classify`), not a debug build of this test's: what ships, and
/// no second build of tract. Fails the test, saying how to build it, when
/// it is not there.
pub fn program() -> String {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/classify/nvr-classify");
    assert!(
        program.is_file(),
        "the classifier {} is not built: run `cargo build --profile classify --bin nvr-classify` \
         (tests/run.sh does)",
        program.display()
    );
    program.display().to_string()
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
        ("CLASSIFIER", program()),
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

//! The board builds: each ARM release binary runs under qemu user-mode
//! emulation and serves a real request; its linkage and size are what a
//! board with an old C library (or none) and little flash can take.
//!
//! The binaries are built before `cargo test` by `tests/run.sh` (cargo cannot
//! build other targets from inside a test); see docs/install.md, "Building
//! for a board".
//! The classifier's board builds also run under qemu on a real photograph
//! and must agree with the native build.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::http::served_as;
use crate::common::system::stdout_of;
use crate::common::{self, Node, TempDir, closed_port};
use serde_json::json;

/// A board target: where its binary is, how to run it here, and what it may link.
struct Board {
    triple: &'static str,
    /// The command that runs one of its binaries on this machine.
    emulator: &'static [&'static str],
    /// `None`: static. `Some(v)`: glibc, with no symbol version above `v`.
    glibc_floor: Option<(u32, u32)>,
}

const BOARDS: [Board; 2] = [
    Board {
        triple: "aarch64-unknown-linux-musl",
        emulator: &["qemu-aarch64"],
        glibc_floor: None,
    },
    Board {
        triple: "armv7-unknown-linux-gnueabihf",
        emulator: &["qemu-arm", "-L", "/usr/arm-linux-gnueabihf"],
        glibc_floor: Some((2, 17)),
    },
];

/// The most a stripped aarch64 binary may weigh, UI and TLS included.
const AARCH64_MAX_BYTES: u64 = 3 * 1024 * 1024;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

impl Board {
    fn binary(&self) -> PathBuf {
        self.program("nvr-node")
    }

    /// One of the crate's binaries for this board: the node of the release
    /// profile, the classifier of the `classify` profile.
    fn program(&self, name: &str) -> PathBuf {
        let profile = if name == "nvr-classify" {
            "classify"
        } else {
            "release"
        };
        let binary = target_dir().join(self.triple).join(profile).join(name);
        assert!(
            binary.is_file(),
            "{} is missing: build it first with `bash tests/run.sh` or as docs/install.md \
             (\"Building for a board\") says",
            binary.display()
        );
        binary
    }
}

#[test]
fn each_board_binary_serves_status_and_cameras_under_emulation() {
    for board in &BOARDS {
        let binary = board.binary();
        let binary = binary.to_str().unwrap();
        let dir = TempDir::new(board.triple);
        let mut program = board.emulator.to_vec();
        program.push(binary);
        let relay = format!("http://127.0.0.1:{}", closed_port());
        let node = Node::start_program(&program, dir.path(), &relay, &[]);

        let status = node.get("/api/status");
        assert_eq!(status.status, 200, "{}: {status}", board.triple);
        assert_eq!(status.json()["version"], env!("CARGO_PKG_VERSION"));

        let camera = node.add_camera(json!({
            "name": "Porch",
            "rtspUrl": format!("rtsp://127.0.0.1:{}/stream", closed_port()),
        }));
        let cameras = node.get("/api/cameras").json();
        assert_eq!(
            cameras[0]["id"], camera["id"],
            "{}: {cameras}",
            board.triple
        );
        assert_eq!(cameras[0]["name"], "Porch");

        let ui = node.request("GET", "/", &[("Accept-Encoding", "gzip")], b"");
        assert_eq!(ui.status, 200, "{}: the embedded UI", board.triple);
        let index = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/www/index.html")).unwrap();
        assert!(
            served_as(&ui.gunzipped(), &index) > 0,
            "{}: / is not www/index.html without its indentation",
            board.triple
        );

        node.terminate();
        assert_eq!(node.wait(), Some(0), "{}: exit after SIGTERM", board.triple);
    }
}

/// The highest `GLIBC_x.y` version named in `readelf -V` output.
fn highest_glibc(versions: &str) -> Option<(u32, u32)> {
    versions
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut parts = v.split('.').map(|n| n.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .max()
}

#[test]
fn board_binaries_link_within_their_floor() {
    for board in &BOARDS {
        let binary = board.binary();
        let binary = binary.to_str().unwrap();
        let dynamic =
            stdout_of(Command::new("readelf").args(["--dynamic", "--program-headers", binary]));
        match board.glibc_floor {
            None => {
                assert!(
                    !dynamic.contains("NEEDED") && !dynamic.contains("INTERP"),
                    "{} should be static:\n{dynamic}",
                    board.triple
                );
                eprintln!("{}: static", board.triple);
            }
            Some(floor) => {
                let highest = highest_glibc(&stdout_of(
                    Command::new("readelf").args(["--version-info", binary]),
                ));
                let highest = highest.expect("a glibc binary names glibc versions");
                assert!(
                    highest <= floor,
                    "{} needs GLIBC_{}.{}, above the floor {}.{}",
                    board.triple,
                    highest.0,
                    highest.1,
                    floor.0,
                    floor.1
                );
                eprintln!("{}: glibc {}.{}", board.triple, highest.0, highest.1);
            }
        }
        let sections = stdout_of(Command::new("readelf").args(["--section-headers", binary]));
        assert!(
            !sections.contains(".symtab"),
            "{} is not stripped",
            board.triple
        );
    }
}

#[test]
fn the_aarch64_binary_fits_in_3_mib() {
    for board in &BOARDS {
        let size = std::fs::metadata(board.binary()).unwrap().len();
        eprintln!("{}: {size} bytes", board.triple);
        let classifier = std::fs::metadata(board.program("nvr-classify"))
            .unwrap()
            .len();
        eprintln!("{}: nvr-classify {classifier} bytes", board.triple);
        if board.triple.starts_with("aarch64") {
            assert!(
                size <= AARCH64_MAX_BYTES,
                "{} is {size} bytes, over {AARCH64_MAX_BYTES}",
                board.triple
            );
        }
    }
}

#[test]
fn glibc_versions_are_read_from_readelf_output() {
    let sample = "  0x0010:   Name: GLIBC_2.4  Flags: none\n  Name: GLIBC_2.17 \
                  Flags: none\n  Name: GLIBC_PRIVATE\n  Name: GLIBC_2.9\n";
    assert_eq!(highest_glibc(sample), Some((2, 17)));
    assert_eq!(highest_glibc("nothing"), None);
}

#[test]
fn each_board_classifier_agrees_with_the_native_one_on_a_photograph() {
    let model = common::classifier::model_dir();
    // scikit-image's `chelsea` (CC0, Stefan van der Walt), its centred square.
    let rgb = [common::classifier::crop(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/photos/chelsea-300.jpg"),
    )];
    let native = &common::classifier::answers(&[&common::classifier::program()], &model, &rgb)[0];
    eprintln!("native: {native}");
    // The photograph is of a cat: the model must say so.
    assert_eq!(native["objects"][0]["label"], "cat", "native: {native}");
    let native = native["objects"].as_array().unwrap();
    let labels = |objects: &[serde_json::Value]| -> Vec<String> {
        objects
            .iter()
            .map(|o| o["label"].as_str().unwrap().to_owned())
            .collect()
    };
    for board in &BOARDS {
        let binary = board.program("nvr-classify");
        let mut program = board.emulator.to_vec();
        program.push(binary.to_str().unwrap());
        let emulated = &common::classifier::answers(&program, &model, &rgb)[0];
        eprintln!("{}: {emulated}", board.triple);
        let emulated = emulated["objects"].as_array().unwrap();
        assert_eq!(labels(emulated), labels(native), "{}: labels", board.triple);
        for (e, n) in emulated.iter().zip(native) {
            let (e, n) = (e["score"].as_f64().unwrap(), n["score"].as_f64().unwrap());
            assert!(
                (e - n).abs() <= 0.01,
                "{}: score {e}, native {n}",
                board.triple
            );
        }
    }
}

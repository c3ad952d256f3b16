//! Embeds every file under `www/` in the binary, gzip-compressed: writes the
//! compressed copies and the table of (URL path, contents) that
//! `src/web/static_files.rs` includes. Also names the build's date,
//! `NVR_BUILD_TIME` (`src/clock.rs`).
//!
//! The system's `gzip` compresses, so the build needs no crate and the binary
//! no compressor; `-n` leaves out the file's name and time, so a build is the
//! same bytes whenever it runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    // Read when the script runs, not baked in when it is compiled: a target
    // folder shared with another checkout reuses this script.
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("www");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=www");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut table = String::from("&[\n");
    for (i, file) in files.iter().enumerate() {
        let url = file
            .strip_prefix(&root)
            .unwrap()
            .to_str()
            .expect("UTF-8 file names in www/");
        println!("cargo:rerun-if-changed={}", file.display());
        let compressed = out.join(format!("www-{i}.gz"));
        fs::write(&compressed, gzip(file)).unwrap();
        table.push_str(&format!(
            "    ({:?}, include_bytes!({:?})),\n",
            format!("/{url}"),
            compressed
        ));
    }
    table.push(']');
    fs::write(out.join("www.rs"), table).unwrap();
    println!("cargo:rustc-env=NVR_BUILD_TIME={}", build_time());
}

/// The build's date, in seconds since the epoch, from its source rather
/// than the clock of the machine that builds it (so that a build is the
/// same bytes whenever it runs): `SOURCE_DATE_EPOCH` where the packager
/// sets it, else the checkout's last commit, else 0 (unknown). A date left
/// from an earlier commit is only earlier: the node believes a little more.
fn build_time() -> u64 {
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    if let Some(seconds) = env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        return seconds;
    }
    Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .current_dir(env::var("CARGO_MANIFEST_DIR").unwrap())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

fn gzip(file: &Path) -> Vec<u8> {
    let output = Command::new("gzip")
        .args(["-9", "-n", "-c", "--"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("run gzip (install it: it compresses www/): {e}"));
    assert!(
        output.status.success(),
        "gzip {}: {}: {}",
        file.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if !path.file_name().unwrap().to_string_lossy().starts_with('.') {
            files.push(path);
        }
    }
}

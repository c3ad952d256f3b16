//! Embeds every file under `www/` in the binary, gzip-compressed: writes the
//! compressed copies and the table of (URL path, contents) that
//! `src/static_files.rs` includes.
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

//! Embeds every file under `www/` in the binary, gzip-compressed: writes the
//! compressed copies and the table of (URL path, contents) that
//! `src/web/static_files.rs` includes. Also names the build's date,
//! `NVR_BUILD_TIME` (`src/clock.rs`).
//!
//! The system's `gzip` compresses, so the build needs no crate and the binary
//! no compressor; `-n` leaves out the file's name and time, so a build is the
//! same bytes whenever it runs. Scripts lose their whole-line comments first
//! (see `blank_comment_lines`).

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
        let source = match file.extension().and_then(|e| e.to_str()) {
            Some("js") => {
                let text = fs::read_to_string(file).expect("UTF-8 scripts in www/");
                let stripped = out.join(format!("www-{i}.js"));
                fs::write(&stripped, blank_comment_lines(&text)).unwrap();
                stripped
            }
            _ => file.clone(),
        };
        fs::write(&compressed, gzip(&source)).unwrap();
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

/// A script with each line that is only a comment (`// …`, or `/* … */`
/// alone) made empty: the comments are for the code's readers, and would
/// take about 5 KB of the boards' 3 MiB. The lines stay, so a browser's line
/// numbers are the file's. A script with a template literal over several
/// lines (a line with an odd number of backticks) is left whole, since a
/// line of such a literal may start with `//`; none can inside other
/// strings, regular expressions or code.
fn blank_comment_lines(text: &str) -> String {
    if text.lines().any(|line| line.matches('`').count() % 2 == 1) {
        return text.to_owned();
    }
    text.split_inclusive('\n')
        .map(|line| {
            let code = line.trim();
            let comment = code.starts_with("//")
                || (code.starts_with("/*")
                    && code.ends_with("*/")
                    && code.matches("*/").count() == 1);
            if comment { "\n" } else { line }
        })
        .collect()
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

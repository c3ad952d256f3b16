//! Embeds every file under `www/` in the binary, gzip-compressed: writes the
//! compressed copies and the table of (URL path, contents) that
//! `src/web/static_files.rs` includes. Also names the build's date,
//! `NVR_BUILD_TIME` (`src/clock.rs`).
//!
//! Zopfli compresses (the `zopfli` crate, a build-dependency only: the binary
//! holds no compressor): the same gzip stream any browser reads, about 3 %
//! smaller than `gzip -9`, with no file name or time in its header, so a build
//! is the same bytes whenever it runs. Scripts, style sheets and pages lose
//! what no browser reads first (see `minified`).

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
        let source = fs::read(file).unwrap();
        let source = match file.extension().and_then(|e| e.to_str()) {
            Some(kind @ ("js" | "css" | "html")) => {
                let text = String::from_utf8(source).expect("UTF-8 text in www/");
                minified(kind, &text).into_bytes()
            }
            _ => source,
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

/// `text` (a script, a style sheet or a page, by its extension `kind`)
/// without what no browser reads: each line's indentation, and comments
/// (a script's lines that are only a comment, `// …` or `/* … */` alone; a
/// style sheet's `/* … */`). Comments are for the code's readers and took
/// about 11 KB of the boards' 3 MiB gzipped, indentation 1.6 KB more. Every line stays,
/// emptied where it was a comment, so a browser's line numbers are the file's.
///
/// What a line's leading spaces would belong to is left whole: a script with
/// a template literal over several lines (a line with an odd number of
/// backticks), a page with a quoted attribute over several lines (a line
/// with an odd number of `"`) or with `<pre>` or `<textarea>`, whose spaces
/// show. Elsewhere a line break is a space to a browser, and the spaces after
/// it are nothing; no other string, regular expression or comment in a
/// script or style sheet can span lines and start a line with `//`.
fn minified(kind: &str, text: &str) -> String {
    let whole = match kind {
        "js" => text.lines().any(|line| line.matches('`').count() % 2 == 1),
        "html" => {
            text.lines().any(|line| line.matches('"').count() % 2 == 1)
                || text.contains("<pre")
                || text.contains("<textarea")
        }
        _ => false,
    };
    if whole {
        return text.to_owned();
    }
    let text = if kind == "css" {
        blank_css_comments(text)
    } else {
        text.to_owned()
    };
    text.split_inclusive('\n')
        .map(|line| {
            let code = line.trim();
            let comment = kind == "js"
                && (code.starts_with("//")
                    || (code.starts_with("/*")
                        && code.ends_with("*/")
                        && code.matches("*/").count() == 1));
            if comment {
                "\n"
            } else {
                line.trim_start_matches([' ', '\t'])
            }
        })
        .collect()
}

/// A style sheet with each `/* … */` outside a quoted string replaced by the
/// line breaks it spanned.
fn blank_css_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut quote = None;
    while let Some(c) = rest.chars().next() {
        if quote.is_none() && rest.starts_with("/*") {
            let end = rest[2..].find("*/").map_or(rest.len(), |at| at + 4);
            out.extend(rest[..end].chars().filter(|&c| c == '\n'));
            rest = &rest[end..];
            continue;
        }
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            // An escaped character, a quote among them, is the string's.
            (Some(_), '\\') => {
                let escaped = rest[1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&rest[..1 + escaped]);
                rest = &rest[1 + escaped..];
                continue;
            }
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `data` gzip-compressed by Zopfli (its default 15 iterations).
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    zopfli::compress(
        zopfli::Options::default(),
        zopfli::Format::Gzip,
        data,
        &mut out,
    )
    .unwrap();
    out
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

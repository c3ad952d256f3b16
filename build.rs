//! Embeds every file under `www/` in the binary: writes the table of
//! (URL path, contents) that `src/static_files.rs` includes.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    println!("cargo:rerun-if-changed=www");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut table = String::from("&[\n");
    for file in &files {
        let url = file
            .strip_prefix(&root)
            .unwrap()
            .to_str()
            .expect("UTF-8 file names in www/");
        println!("cargo:rerun-if-changed={}", file.display());
        table.push_str(&format!(
            "    ({:?}, include_bytes!({:?})),\n",
            format!("/{url}"),
            file
        ));
    }
    table.push(']');
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("www.rs");
    fs::write(out, table).unwrap();
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

//! The Debian packages (`deploy/package.sh`, `deploy/debian/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const TRIPLES: [&str; 3] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-musl",
    "armv7-unknown-linux-gnueabihf",
];
/// Ours, under the paragraph `Files: *`.
const OURS: [&str; 4] = ["nvr-node", "nvr-base", "nvr-classify", "nvr-classify-core"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// The `Files:` pattern each crate linked into the two binaries for `triple`
/// must have: a path crate's folder in the repository, a registry crate's
/// `vendor/<name>-<version>` (as `cargo vendor --versioned-dirs` lays it out).
fn linked(triple: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = run(
        &cargo,
        &[
            "tree",
            "--locked",
            "-e",
            "normal,no-proc-macro",
            "--target",
            triple,
            "-p",
            "nvr-node",
            "-p",
            "nvr-classify",
            "--prefix",
            "none",
            "--no-dedupe",
            "-f",
            "{p}",
        ],
    );
    let root = format!("{}/", repo().display());
    tree.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (name, version) = (words.next()?, words.next()?.trim_start_matches('v'));
            if OURS.contains(&name) {
                return None;
            }
            Some(match words.next() {
                Some(path) if path.starts_with("(/") => {
                    let path = path.trim_start_matches('(').trim_end_matches(')');
                    format!(
                        "{}/*",
                        path.strip_prefix(&root)
                            .expect("a path crate in the repository")
                    )
                }
                _ => format!("vendor/{name}-{version}/*"),
            })
        })
        .collect()
}

/// A DEP-5 paragraph: each field's first line's value, then its continuation lines.
type Paragraph = BTreeMap<String, (String, Vec<String>)>;

fn paragraphs(text: &str) -> Vec<Paragraph> {
    text.split("\n\n")
        .map(|block| {
            let mut paragraph = Paragraph::new();
            let mut last = None;
            for line in block.lines() {
                if let Some(more) = line.strip_prefix(' ') {
                    let field: &String = last
                        .as_ref()
                        .unwrap_or_else(|| panic!("a continuation first: {block}"));
                    paragraph.get_mut(field).unwrap().1.push(more.to_string());
                } else {
                    let (name, value) = line
                        .split_once(':')
                        .unwrap_or_else(|| panic!("not a field: {line:?}"));
                    assert!(!line.contains('\t'), "a tab in {line:?}");
                    paragraph.insert(name.to_string(), (value.trim().to_string(), vec![]));
                    last = Some(name.to_string());
                }
            }
            paragraph
        })
        .collect()
}

#[test]
fn the_copyright_file_names_every_crate_linked_and_its_licence() {
    for triple in TRIPLES {
        let text = run("python3", &["deploy/debian/copyright.py", triple]);
        let all = paragraphs(&text);
        assert!(
            all[0]["Format"]
                .0
                .starts_with("https://www.debian.org/doc/packaging-manuals/copyright-format/1.0"),
            "{triple}: no DEP-5 header"
        );
        let files: Vec<&Paragraph> = all.iter().filter(|p| p.contains_key("Files")).collect();
        let standalone: BTreeMap<&str, &Paragraph> = all[1..]
            .iter()
            .filter(|p| !p.contains_key("Files"))
            .map(|p| (p["License"].0.as_str(), p))
            .collect();
        assert_eq!(
            files.len() + standalone.len() + 1,
            all.len(),
            "{triple}: a paragraph repeats a licence"
        );

        let patterns: BTreeSet<String> = files
            .iter()
            .flat_map(|p| {
                let (first, more) = &p["Files"];
                std::iter::once(first.clone()).chain(more.iter().cloned())
            })
            .collect();
        for wanted in ["*", "usr/share/nvr-node/model/*"] {
            assert!(patterns.contains(wanted), "{triple}: no Files: {wanted}");
        }
        let missing: Vec<String> = linked(triple).difference(&patterns).cloned().collect();
        assert!(
            missing.is_empty(),
            "{triple}: crates linked but not named: {missing:?}"
        );

        let mut used = BTreeSet::new();
        for paragraph in &files {
            assert!(
                paragraph.contains_key("Copyright"),
                "{triple}: no Copyright in {paragraph:?}"
            );
            let licence = &paragraph["License"].0;
            for name in licence.split(" and ").flat_map(|n| n.split(" or ")) {
                assert!(
                    standalone.contains_key(name),
                    "{triple}: License {name} (of {:?}) has no stand-alone paragraph",
                    paragraph["Files"].0
                );
                used.insert(name);
            }
        }
        for (name, paragraph) in &standalone {
            assert!(
                used.contains(name),
                "{triple}: License {name} is used by no Files paragraph"
            );
            assert!(
                !paragraph["License"].1.is_empty(),
                "{triple}: License {name} has no text"
            );
        }
    }
}

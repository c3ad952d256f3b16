//! The settings file installed on boards (`deploy/nvr-node.default`) and
//! the tables of `docs/configuration.md`, checked against the table: each
//! is written here from the table and compared. After a change to the
//! table, `UPDATE_EXPECT=1 cargo test --bin nvr-node config` rewrites them.

use std::path::Path;

use super::table::{Doc, Fallback, IN_UI, SECTIONS};

const SETTINGS_FILE: &str = "deploy/nvr-node.default";
const DOCS: &str = "docs/configuration.md";

const SETTINGS_HEAD: &str = "\
# Settings of nvr-node, installed as /etc/default/nvr-node.
#
# Read by the systemd unit (EnvironmentFile=) and by the init script
# (/etc/init.d/nvr-node), so it holds only KEY=value lines: no \"export\", no
# $VARIABLES, no `commands`. A value with spaces goes in double quotes. A
# variable that is unset, or set to an empty value, takes its default.
# Restart the node after a change: systemctl restart nvr-node, or
# /etc/init.d/nvr-node restart.
";

const DOCS_START: &str = "<!-- The tables below are made from src/config/table.rs by its tests: \
                          edit the table, then run UPDATE_EXPECT=1 cargo test --bin nvr-node \
                          config. -->";
const DOCS_END: &str = "<!-- End of the tables made from src/config/table.rs. -->";

/// `text`'s words in lines of at most `width` characters, each begun by `prefix`.
fn wrap(text: &str, prefix: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(prefix);
    for word in text.split_whitespace() {
        if line.len() > prefix.len() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(prefix);
        }
        if line.len() > prefix.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// What the variable does, in sentences: its help, its old name, its notes.
fn meaning(var: &Doc) -> String {
    let mut text = format!("{}.", var.help);
    if let Some(old_name) = var.old_name {
        text.push_str(&format!(
            " Called {old_name} before; that name is still read, with a warning."
        ));
    }
    if !var.notes.is_empty() {
        text.push(' ');
        text.push_str(var.notes);
    }
    if let Some(setting) = IN_UI.iter().find(|s| s.name == var.name) {
        text.push_str(match setting.restart {
            false => " Also set in the UI (Settings, This node), over this value; taken in at once.",
            true => " Also set in the UI (Settings, This node), over this value; taken in at the next start.",
        });
    }
    text
}

/// Where the variable is set, for the docs' tables.
fn set_in(var: &Doc) -> &'static str {
    match IN_UI.iter().find(|s| s.name == var.name) {
        None => "file",
        Some(s) if s.restart => "file, UI (restart)",
        Some(_) => "file, UI",
    }
}

fn settings_file() -> String {
    let mut out = String::from(SETTINGS_HEAD);
    for section in SECTIONS {
        out.push_str(&format!("\n# ---- {} ----\n", section.heading));
        if !section.about.is_empty() {
            out.push_str(&wrap(section.about, "# ", 78));
        }
        for var in section.vars {
            out.push('\n');
            out.push_str(&wrap(&format!("{}: {}", var.name, meaning(var)), "# ", 78));
            let default = wrap(&format!("Default: {}.", var.default.text()), "# ", 78);
            let example = format!("Example: {}={}", var.name, var.example);
            // The example whole, on the default's last line if it fits.
            let last = default.trim_end().rsplit('\n').next().unwrap_or_default();
            if last.len() + 1 + example.len() <= 78 {
                out.push_str(&format!("{} {example}\n", default.trim_end()));
            } else {
                out.push_str(&format!("{default}# {example}\n"));
            }
            match var.installed {
                Some(value) => out.push_str(&format!("{}={value}\n", var.name)),
                None => out.push_str(&format!("#{}={}\n", var.name, var.example)),
            }
        }
    }
    out
}

fn docs_tables() -> String {
    let mut out = String::new();
    for section in SECTIONS {
        out.push_str(&format!("\n## {}\n\n", section.heading));
        if !section.about.is_empty() {
            out.push_str(&wrap(section.about, "", 80));
            out.push('\n');
        }
        out.push_str("| variable | default | set in | meaning |\n|---|---|---|---|\n");
        for var in section.vars {
            let default = match var.default {
                Fallback::Value(value) => format!("`{value}`"),
                Fallback::Words(words) => words.to_owned(),
            };
            let meaning = meaning(var);
            let (first, rest) = meaning.split_at(1);
            out.push_str(&format!(
                "| `{}` | {default} | {} | {}{rest} |\n",
                var.name,
                set_in(var),
                first.to_uppercase()
            ));
        }
    }
    out.push('\n');
    out
}

/// Fails, saying where `file` first differs from `want`, unless
/// `UPDATE_EXPECT` is set: then it writes `want` into the file.
fn check(file: &str, found: &str, want: &str, whole: impl Fn(&str) -> String) {
    if found == want {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, whole(want)).unwrap();
        return;
    }
    let line = found
        .lines()
        .zip(want.lines())
        .position(|(f, w)| f != w)
        .unwrap_or(found.lines().count().min(want.lines().count()));
    panic!(
        "{file} is not what src/config/table.rs makes; from line {} of the part made,\n\
         it has:  {:?}\n\
         made:    {:?}\n\
         UPDATE_EXPECT=1 cargo test --bin nvr-node config rewrites it.",
        line + 1,
        found.lines().nth(line),
        want.lines().nth(line),
    );
}

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {file}: {e}"))
}

#[test]
fn the_settings_file_is_the_table() {
    let found = read(SETTINGS_FILE);
    check(SETTINGS_FILE, &found, &settings_file(), str::to_owned);
}

#[test]
fn the_docs_tables_are_the_table() {
    let docs = read(DOCS);
    let (before, rest) = docs
        .split_once(&format!("{DOCS_START}\n"))
        .unwrap_or_else(|| panic!("{DOCS} lacks the line {DOCS_START}"));
    let (found, after) = rest
        .split_once(&format!("{DOCS_END}\n"))
        .unwrap_or_else(|| panic!("{DOCS} lacks the line {DOCS_END}"));
    check(DOCS, found, &docs_tables(), |tables| {
        format!("{before}{DOCS_START}\n{tables}{DOCS_END}\n{after}")
    });
}

/// Their texts go into Markdown tables and a file sh sources.
#[test]
fn the_texts_are_plain() {
    for section in SECTIONS {
        for var in section.vars {
            let texts = [var.help, var.notes, var.default.text(), var.example];
            for text in texts {
                assert!(!text.contains('|'), "{}: {text:?}", var.name);
                assert_eq!(text, text.trim(), "{}", var.name);
            }
            for value in [Some(var.example), var.installed].into_iter().flatten() {
                assert!(
                    !value.contains([' ', '$', '`', '\\', '\'', '"']),
                    "{}: {value:?}",
                    var.name
                );
            }
            assert!(
                !var.help.ends_with('.'),
                "{}: the help is a phrase",
                var.name
            );
        }
    }
}

//! What the install tests read of a system they installed into (a DESTDIR,
//! a Debian root): its accounts and its systemd units; and the commands
//! they run around it, which must succeed.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `command` with no input; panics with the command, its output and
/// status unless it succeeds; returns its stdout.
pub fn stdout_of(command: &mut Command) -> String {
    let description = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {description}: {e}"));
    assert!(
        out.status.success(),
        "{description}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of each `key=` line of a systemd unit.
pub fn unit_values(unit: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key}=");
    unit.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_owned)
        .collect()
}

/// The entries of `name` in `root`'s `etc/FILE` (passwd, group, shadow),
/// each split on its colons.
pub fn account_entries(root: &Path, file: &str, name: &str) -> Vec<Vec<String>> {
    let path = root.join("etc").join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .filter(|l| l.starts_with(&format!("{name}:")))
        .map(|l| l.split(':').map(str::to_owned).collect())
        .collect()
}

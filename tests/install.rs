//! Installation on a board (`deploy/`): install.sh into a temporary DESTDIR
//! (install, upgrade, uninstall, purge), the settings file against the
//! variables the node's --help lists, the systemd unit (`systemd-analyze
//! verify`) and the init script: its commands, and a real supervised node
//! started, killed, restarted and stopped from a copy of it with its paths
//! moved into a temporary folder. With `--with-go2rtc`, the same for go2rtc
//! (the real one, `GO2RTC`): its files, and the installed go2rtc with its
//! installed settings run under its installed init script next to the
//! installed node, which registers a camera in it. With `--classifier` and
//! `--model`, the real classifier and its model (`common::classifier`):
//! installed, upgraded, refused when half given or broken, removed, and
//! found by the installed node without a setting. Nothing is installed on
//! this machine.
//!
//! Runs as any user; as root it also checks that install.sh makes the users
//! `nvr` and `go2rtc` in DESTDIR's own account files (useradd --prefix), and
//! runs the supervised programs as `nobody` through start-stop-daemon --chuid.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::system::{account_entries, unit_values};
use crate::common::{TempDir, closed_port};

const BINARY: &str = env!("CARGO_BIN_EXE_nvr-node");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn deploy(file: &str) -> PathBuf {
    repo().join("deploy").join(file)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A finished command, with what it printed, for failure messages.
struct Run {
    command: String,
    output: Output,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.command,
            self.output.status,
            self.stdout(),
            self.stderr()
        )
    }

    /// Panics with the report unless the command exited 0.
    fn ok(self) -> Run {
        assert!(
            self.output.status.success(),
            "command failed\n{}",
            self.report()
        );
        self
    }

    /// Panics with the report unless the command exited with `code`.
    fn exits(self, code: i32) -> Run {
        assert_eq!(
            self.code(),
            Some(code),
            "unexpected exit status\n{}",
            self.report()
        );
        self
    }
}

fn run(command: &mut Command) -> Run {
    let description = format!("{command:?}");
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {description}: {e}"));
    Run {
        command: description,
        output,
    }
}

/// `command.run_ok()` and `command.exits(code)`: run, then check.
trait RunOk {
    fn run_ok(&mut self) -> Run;
    fn exits(&mut self, code: i32) -> Run;
}

impl RunOk for Command {
    fn run_ok(&mut self) -> Run {
        run(self).ok()
    }

    fn exits(&mut self, code: i32) -> Run {
        run(self).exits(code)
    }
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", "command -v \"$1\" >/dev/null", "sh", program])
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u")).ok().stdout().trim() == "0"
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

// ---- install.sh ----

/// `sh deploy/install.sh ARGS` with DESTDIR=dest and no PREFIX unless given.
fn install(dest: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg(deploy("install.sh"))
        .args(args)
        .env("DESTDIR", dest)
        .env_remove("PREFIX");
    command
}

/// DESTDIR/etc with the account files of a system that has only root, so
/// that useradd --prefix has files to add the user to.
fn seed_accounts(dest: &Path) {
    let etc = dest.join("etc");
    fs::create_dir_all(&etc).unwrap();
    for (file, text, mode) in [
        ("passwd", "root:x:0:0:root:/root:/bin/bash\n", 0o644),
        ("group", "root:x:0:\n", 0o644),
        ("shadow", "root:*:19000:0:99999:7:::\n", 0o640),
        ("gshadow", "root:*::\n", 0o640),
    ] {
        fs::write(etc.join(file), text).unwrap();
        fs::set_permissions(etc.join(file), fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// An empty DESTDIR in `dir`, and whether install.sh can make users in it:
/// useradd --prefix needs root to lock and rewrite the account files.
fn destdir(dir: &TempDir) -> (PathBuf, bool) {
    let dest = dir.path().join("root");
    fs::create_dir_all(&dest).unwrap();
    let accounts = is_root() && have("useradd");
    if accounts {
        seed_accounts(&dest);
    } else {
        eprintln!("not root or no useradd: no users are made in DESTDIR");
    }
    (dest, accounts)
}

/// With `accounts` (root), checks the user as [`assert_system_user`] does
/// and returns its ids; without, that install.sh said it made none.
fn assert_user(
    dest: &Path,
    accounts: bool,
    name: &str,
    home: &str,
    run: &Run,
) -> Option<(u32, u32)> {
    if accounts {
        return Some(assert_system_user(dest, name, home, run));
    }
    let said = format!("user {name}: not made");
    assert!(run.stdout().contains(&said), "{}", run.report());
    None
}

/// Checks that `bin` holds the new build's `bytes` in a new file, so the
/// program that was running (inode `running`) was not rewritten under it.
fn assert_replaced(bin: &Path, bytes: &[u8], running: u64) {
    assert!(
        fs::read(bin).unwrap() == bytes,
        "the new build of {} is not installed",
        bin.display()
    );
    assert_ne!(
        fs::metadata(bin).unwrap().ino(),
        running,
        "{} was rewritten in place, under the running program",
        bin.display()
    );
}

/// Checks that install.sh made `name` a system user (and group) with no
/// login shell and `home`; returns its uid and gid.
fn assert_system_user(dest: &Path, name: &str, home: &str, run: &Run) -> (u32, u32) {
    let users = account_entries(dest, "passwd", name);
    assert_eq!(users.len(), 1, "{users:?}\n{}", run.report());
    let user = &users[0];
    assert_eq!(user[5], home, "home of {user:?}");
    assert!(user[6].ends_with("/nologin"), "shell of {user:?}");
    assert_eq!(account_entries(dest, "group", name).len(), 1);
    let uid: u32 = user[2].parse().unwrap();
    assert!(uid > 0 && uid < 1000, "a system uid: {user:?}");
    (uid, user[3].parse().unwrap())
}

/// A "new build" of `program` in `dir`: the same bytes with some appended.
fn new_build(program: &Path, dir: &Path) -> (PathBuf, Vec<u8>) {
    let path = dir.join(program.file_name().unwrap());
    let mut bytes = fs::read(program).unwrap();
    bytes.extend_from_slice(b"\nnew build\n");
    fs::write(&path, &bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    (path, bytes)
}

/// The files of a model folder (deploy/model/install-model.sh's).
const MODEL_FILES: [&str; 4] = ["model.tflite", "labels.txt", "LICENSE", "SOURCE"];

/// The real classifier and its model, as `--classifier` and `--model` take them.
fn classifier_and_model() -> (String, String) {
    (
        common::classifier::program(),
        common::classifier::model_dir().display().to_string(),
    )
}

fn names_in(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Checks that the model folder `installed` holds `model`'s four files and
/// nothing else, readable by the node, with nothing left beside it.
fn assert_model(installed: &Path, model: &Path, run: &Run) {
    assert_eq!(
        names_in(installed),
        MODEL_FILES.map(str::to_owned).into(),
        "{}",
        run.report()
    );
    for file in MODEL_FILES {
        assert!(
            fs::read(installed.join(file)).unwrap() == fs::read(model.join(file)).unwrap(),
            "{file} differs from {}'s\n{}",
            model.display(),
            run.report()
        );
        assert_eq!(mode(&installed.join(file)), 0o644, "{file}");
    }
    assert_eq!(mode(installed), 0o755);
    assert_eq!(
        names_in(installed.parent().unwrap()),
        BTreeSet::from(["model".to_owned()]),
        "left beside the model\n{}",
        run.report()
    );
}

/// A copy of `model` in `dir`/`name`.
fn copy_model(model: &Path, dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    fs::create_dir_all(&copy).unwrap();
    for file in MODEL_FILES {
        fs::copy(model.join(file), copy.join(file)).unwrap();
    }
    copy
}

/// A newer model in `dir`/model: one more label, and SOURCE naming the new
/// labels' sha256, as install-model.sh would write it.
fn changed_model(model: &Path, dir: &Path) -> PathBuf {
    let changed = copy_model(model, dir, "model");
    let labels = changed.join("labels.txt");
    let mut text = read(&labels);
    text.push_str("91  test label\n");
    fs::write(&labels, text).unwrap();
    let sha = Command::new("sha256sum").arg(&labels).run_ok().stdout();
    let sha = sha.split(' ').next().unwrap();
    let source = read(&changed.join("SOURCE"));
    let old = source
        .lines()
        .find(|l| l.starts_with("labels sha256: "))
        .unwrap_or_else(|| panic!("no labels sha256 in SOURCE:\n{source}"));
    fs::write(
        changed.join("SOURCE"),
        source.replace(old, &format!("labels sha256: {sha}")),
    )
    .unwrap();
    changed
}

/// Every line install.sh prints is one "nvr-node: ..." step.
fn assert_steps(run: &Run) {
    let stdout = run.stdout();
    assert!(
        !stdout.trim().is_empty(),
        "nothing printed\n{}",
        run.report()
    );
    for line in stdout.lines() {
        assert!(
            line.starts_with("nvr-node: "),
            "a line that is not a step: {line:?}\n{}",
            run.report()
        );
    }
}

#[test]
fn install_upgrade_uninstall_and_purge_into_a_destdir() {
    let dir = TempDir::new("install");
    let (dest, accounts) = destdir(&dir);
    let host_passwd = fs::read("/etc/passwd").unwrap_or_default();

    let bin = dest.join("usr/local/bin/nvr-node");
    let env_file = dest.join("etc/default/nvr-node");
    let dist = dest.join("etc/default/nvr-node.dist");
    let unit = dest.join("etc/systemd/system/nvr-node.service");
    let init = dest.join("etc/init.d/nvr-node");
    let data = dest.join("var/lib/nvr-node");
    let classifier_bin = dest.join("usr/local/bin/nvr-classify");
    let share = dest.join("usr/local/share/nvr-node");
    let model_dir = share.join("model");
    let (classifier, model) = classifier_and_model();

    // First install.
    let first = install(
        &dest,
        &[BINARY, "--classifier", &classifier, "--model", &model],
    )
    .run_ok();
    assert_steps(&first);
    assert_eq!(mode(&bin), 0o755, "{}", first.report());
    assert!(
        fs::read(&bin).unwrap() == fs::read(BINARY).unwrap(),
        "{} differs from {BINARY}",
        bin.display()
    );
    assert_eq!(mode(&classifier_bin), 0o755, "{}", first.report());
    assert!(
        fs::read(&classifier_bin).unwrap() == fs::read(&classifier).unwrap(),
        "{} differs from {classifier}",
        classifier_bin.display()
    );
    assert_model(&model_dir, Path::new(&model), &first);
    assert_eq!(read(&env_file), read(&deploy("nvr-node.default")));
    assert_documents_every_variable(&read(&env_file));
    assert!(!dist.exists(), "a fresh install needs no .dist");
    assert_eq!(read(&unit), read(&deploy("nvr-node.service")));
    assert_eq!(read(&init), read(&deploy("nvr-node.init")));
    assert_eq!(mode(&init), 0o755);
    assert_eq!(mode(&data), 0o750, "{}", first.report());
    // The settings may hold MQTT_PASSWORD: root's, readable by the node's group.
    assert_eq!(mode(&env_file), 0o640, "{}", first.report());
    if let Some((uid, gid)) = assert_user(&dest, accounts, "nvr", "/var/lib/nvr-node", &first) {
        assert_eq!(
            fs::metadata(&data).unwrap().uid(),
            uid,
            "owner of the data folder"
        );
        let settings = fs::metadata(&env_file).unwrap();
        assert_eq!(
            (settings.uid(), settings.gid()),
            (0, gid),
            "owner of the settings"
        );
    }

    // Upgrade: the settings were edited and the program is a new build
    // (the same one with bytes appended), while the old one "runs".
    let mut edited = read(&env_file);
    edited.push_str("NODE_NAME=garage\n");
    fs::write(&env_file, &edited).unwrap();
    // As an install before 0640 left them.
    fs::set_permissions(&env_file, fs::Permissions::from_mode(0o644)).unwrap();
    // The classifier and the model too.
    let (new_classifier, classifier_bytes) = new_build(Path::new(&classifier), dir.path());
    let (new_build, bytes) = new_build(Path::new(BINARY), dir.path());
    let running = fs::File::open(&bin).unwrap();
    let running_inode = running.metadata().unwrap().ino();
    let classifier_inode = fs::metadata(&classifier_bin).unwrap().ino();
    let new_model = changed_model(Path::new(&model), dir.path());
    let model_inode = fs::metadata(&model_dir).unwrap().ino();
    // What an install cut short would have left beside it.
    let stale = share.join(".model.new.1");
    fs::create_dir_all(&stale).unwrap();
    fs::write(stale.join("model.tflite"), b"half").unwrap();
    let upgrade_args = [
        new_build.to_str().unwrap(),
        "--classifier",
        new_classifier.to_str().unwrap(),
        "--model",
        new_model.to_str().unwrap(),
    ];

    let upgrade = install(&dest, &upgrade_args).run_ok();
    assert_steps(&upgrade);
    assert_replaced(&bin, &bytes, running_inode);
    assert_eq!(mode(&bin), 0o755);
    assert_replaced(&classifier_bin, &classifier_bytes, classifier_inode);
    assert_eq!(mode(&classifier_bin), 0o755);
    assert_model(&model_dir, &new_model, &upgrade);
    assert_ne!(
        fs::metadata(&model_dir).unwrap().ino(),
        model_inode,
        "the model was rewritten in place, not renamed into it"
    );
    assert_eq!(read(&env_file), edited, "the user's settings were not kept");
    assert_eq!(mode(&env_file), 0o640);
    assert_eq!(
        read(&dist),
        read(&deploy("nvr-node.default")),
        "the shipped settings go beside the user's"
    );
    assert_eq!(mode(&data), 0o750);
    if accounts {
        assert_eq!(
            account_entries(&dest, "passwd", "nvr").len(),
            1,
            "user duplicated"
        );
        assert_eq!(
            account_entries(&dest, "group", "nvr").len(),
            1,
            "group duplicated"
        );
        assert_eq!(
            account_entries(&dest, "shadow", "nvr").len(),
            1,
            "shadow duplicated"
        );
    }

    // The same programs and model again: nothing to replace.
    let model_inode = fs::metadata(&model_dir).unwrap().ino();
    let again = install(&dest, &upgrade_args).run_ok();
    assert_steps(&again);
    for unchanged in [&bin, &classifier_bin, &model_dir] {
        assert!(
            again
                .stdout()
                .contains(&format!("{}: unchanged", unchanged.display())),
            "{}",
            again.report()
        );
    }
    assert_eq!(fs::metadata(&model_dir).unwrap().ino(), model_inode);
    assert_model(&model_dir, &new_model, &again);
    assert_eq!(read(&env_file), edited);

    // The node alone: the classifier and its model stay as they are.
    let node_only = install(&dest, &[new_build.to_str().unwrap()]).run_ok();
    assert_steps(&node_only);
    assert!(
        node_only
            .stdout()
            .contains("classifier and model: left as they are"),
        "{}",
        node_only.report()
    );
    assert!(fs::read(&classifier_bin).unwrap() == classifier_bytes);
    assert_model(&model_dir, &new_model, &node_only);

    // Uninstall keeps the settings and the data.
    fs::write(data.join("nvr-node.db"), b"cameras").unwrap();
    let uninstall = install(&dest, &["--uninstall"]).run_ok();
    assert_steps(&uninstall);
    for gone in [&bin, &unit, &init, &dist, &classifier_bin, &share] {
        assert!(
            !gone.exists(),
            "{} is left\n{}",
            gone.display(),
            uninstall.report()
        );
    }
    assert_eq!(read(&env_file), edited, "{}", uninstall.report());
    assert_eq!(fs::read(data.join("nvr-node.db")).unwrap(), b"cameras");
    if accounts {
        assert_eq!(
            account_entries(&dest, "passwd", "nvr").len(),
            1,
            "the user stays"
        );
    }

    // Purge removes the rest, the user too.
    let purge = install(&dest, &["--uninstall", "--purge"]).run_ok();
    assert_steps(&purge);
    for gone in [&env_file, &data] {
        assert!(
            !gone.exists(),
            "{} is left\n{}",
            gone.display(),
            purge.report()
        );
    }
    if accounts {
        assert!(
            account_entries(&dest, "passwd", "nvr").is_empty(),
            "{}",
            purge.report()
        );
        assert!(
            account_entries(&dest, "group", "nvr").is_empty(),
            "{}",
            purge.report()
        );
        assert!(read(&dest.join("etc/passwd")).starts_with("root:"));
    }
    assert_eq!(
        fs::read("/etc/passwd").unwrap_or_default(),
        host_passwd,
        "this machine's /etc/passwd changed"
    );
}

#[test]
fn install_refuses_a_missing_or_non_executable_program_and_bad_options() {
    let dir = TempDir::new("install-refuse");
    let dest = dir.path().join("root");
    let missing = dir.path().join("no-such-nvr-node");
    let refused = install(&dest, &[missing.to_str().unwrap()]).exits(1);
    assert!(
        refused.stderr().contains("no program at"),
        "{}",
        refused.report()
    );

    let plain = dir.path().join("nvr-node");
    fs::write(&plain, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&plain, fs::Permissions::from_mode(0o644)).unwrap();
    let refused = install(&dest, &[plain.to_str().unwrap()]).exits(1);
    assert!(
        refused.stderr().contains("not executable"),
        "{}",
        refused.report()
    );

    // The same for go2rtc.
    let no_go2rtc = dir.path().join("no-such-go2rtc");
    let refused = install(
        &dest,
        &[BINARY, "--with-go2rtc", no_go2rtc.to_str().unwrap()],
    )
    .exits(1);
    assert!(
        refused.stderr().contains("no program at") && refused.stderr().contains("no-such-go2rtc"),
        "{}",
        refused.report()
    );
    let refused = install(&dest, &[BINARY, "--with-go2rtc", plain.to_str().unwrap()]).exits(1);
    assert!(
        refused.stderr().contains("not executable"),
        "{}",
        refused.report()
    );

    for args in [
        &["--frobnicate"][..],
        &[BINARY, "--with-go2rtc"][..],
        &[BINARY, "--with-go2rtc", ""][..],
        &["--uninstall", "--with-go2rtc", BINARY][..],
    ] {
        let refused = install(&dest, args).exits(2);
        assert!(refused.stderr().contains("usage:"), "{}", refused.report());
    }
    assert!(
        !dest.join("usr").exists() && !dest.join("etc").exists(),
        "refused, yet installed"
    );
}

#[test]
fn install_refuses_half_a_classifier_or_a_broken_model_and_installs_none_unasked() {
    let dir = TempDir::new("install-classifier-refuse");
    let dest = dir.path().join("root");
    let (classifier, model) = classifier_and_model();
    let refused = |args: &[&str], code: i32, says: &str| {
        let refused = install(&dest, args).exits(code);
        assert!(refused.stderr().contains(says), "{}", refused.report());
        assert!(
            !dest.join("usr").exists() && !dest.join("etc").exists(),
            "refused, yet installed\n{}",
            refused.report()
        );
    };

    // Half the pair: the classifier classifies nothing without its model.
    refused(
        &[BINARY, "--classifier", &classifier],
        2,
        "--classifier needs --model",
    );
    refused(
        &[BINARY, "--model", &model],
        2,
        "--model needs --classifier",
    );
    refused(&["--uninstall", "--classifier", &classifier], 2, "usage:");
    refused(&["--uninstall", "--model", &model], 2, "usage:");
    refused(&[BINARY, "--classifier"], 2, "usage:");

    let missing = dir.path().join("no-such-nvr-classify");
    let missing = missing.to_str().unwrap();
    refused(
        &[BINARY, "--classifier", missing, "--model", &model],
        1,
        "no program at",
    );
    let plain = dir.path().join("nvr-classify");
    fs::write(&plain, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&plain, fs::Permissions::from_mode(0o644)).unwrap();
    refused(
        &[
            BINARY,
            "--classifier",
            plain.to_str().unwrap(),
            "--model",
            &model,
        ],
        1,
        "not executable",
    );
    refused(
        &[BINARY, "--classifier", &classifier, "--model", missing],
        1,
        "no folder at",
    );

    // A model copied short, and one a file short.
    let short = copy_model(Path::new(&model), dir.path(), "short");
    let bytes = fs::read(short.join("model.tflite")).unwrap();
    fs::write(short.join("model.tflite"), &bytes[..bytes.len() / 2]).unwrap();
    refused(
        &[
            BINARY,
            "--classifier",
            &classifier,
            "--model",
            short.to_str().unwrap(),
        ],
        1,
        "model.tflite is not the one",
    );
    for file in MODEL_FILES {
        let without = copy_model(Path::new(&model), dir.path(), &format!("no-{file}"));
        fs::remove_file(without.join(file)).unwrap();
        refused(
            &[
                BINARY,
                "--classifier",
                &classifier,
                "--model",
                without.to_str().unwrap(),
            ],
            1,
            &format!("{file} is missing"),
        );
    }

    // Neither: the node alone, and it says what that means.
    let alone = install(&dest, &[BINARY]).run_ok();
    assert_steps(&alone);
    assert!(
        alone
            .stdout()
            .contains("no classifier installed: motion events will not be classified"),
        "{}",
        alone.report()
    );
    assert!(!dest.join("usr/local/bin/nvr-classify").exists());
    assert!(!dest.join("usr/local/share").exists());
}

/// The installed node, with no setting naming them, finds the installed
/// classifier and model (its defaults) and runs them for a new camera.
#[test]
fn the_installed_node_runs_the_installed_classifier_with_the_installed_model() {
    let dir = TempDir::new("install-classify");
    let dest = dir.path().join("root");
    let (classifier, model) = classifier_and_model();
    install(
        &dest,
        &[BINARY, "--classifier", &classifier, "--model", &model],
    )
    .run_ok();
    let bin = dest.join("usr/local/bin/nvr-node");
    let installed_classifier = dest.join("usr/local/bin/nvr-classify");
    let installed_model = dest.join("usr/local/share/nvr-node/model");
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let relay = format!("http://127.0.0.1:{}", closed_port());
    // start_program clears the environment: no CLASSIFIER, no MODEL_DIR.
    let node = common::Node::start_program(&[bin.to_str().unwrap()], &data, &relay, &[]);
    let status = node.get("/api/status").json();
    assert_eq!(
        status["classifier"]["installed"],
        true,
        "{status}\n{}",
        node.logs()
    );
    let created = node.add_camera(serde_json::json!({
        "name": "Porch",
        "rtspUrl": format!("rtsp://127.0.0.1:{}/main", closed_port()),
    }));
    assert_eq!(created["classify"], true, "{created}");
    let running = common::wait_for(Duration::from_secs(60), || {
        node.get("/api/status").json()["classifier"]["running"] == true
    });
    assert!(
        running,
        "the classifier did not run with its model\n{}",
        node.logs()
    );
    let child = common::children_of(node.pid())
        .into_iter()
        .find(|pid| {
            fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == installed_classifier)
        })
        .unwrap_or_else(|| panic!("no child runs the installed classifier\n{}", node.logs()));
    let args = fs::read(format!("/proc/{child}/cmdline")).unwrap();
    let model_arg = args.split(|b| *b == 0).nth(1).unwrap_or_default();
    // As the node names it: `<program dir>/../share/nvr-node/model`.
    let model_arg = Path::new(std::ffi::OsStr::from_bytes(model_arg));
    assert_eq!(
        fs::canonicalize(model_arg).ok(),
        fs::canonicalize(&installed_model).ok(),
        "the classifier's model: {}",
        model_arg.display()
    );
}

#[test]
fn prefix_moves_the_program_and_the_paths_that_name_it() {
    let dir = TempDir::new("install-prefix");
    let dest = dir.path().join("root");
    let go2rtc = common::go2rtc::binary();
    let (classifier, model) = classifier_and_model();
    install(
        &dest,
        &[
            BINARY,
            "--with-go2rtc",
            go2rtc.to_str().unwrap(),
            "--classifier",
            &classifier,
            "--model",
            &model,
        ],
    )
    .env("PREFIX", "/opt/nvr")
    .run_ok();
    assert!(dest.join("opt/nvr/bin/nvr-node").is_file());
    assert!(!dest.join("usr/local/bin/nvr-node").exists());
    // The classifier and its model where the node looks by default.
    assert!(dest.join("opt/nvr/bin/nvr-classify").is_file());
    for file in MODEL_FILES {
        assert!(
            dest.join("opt/nvr/share/nvr-node/model")
                .join(file)
                .is_file()
        );
    }
    assert!(!dest.join("usr/local").exists());
    let unit = read(&dest.join("etc/systemd/system/nvr-node.service"));
    assert!(
        unit.contains("\nExecStart=/opt/nvr/bin/nvr-node\n"),
        "{unit}"
    );
    let init = read(&dest.join("etc/init.d/nvr-node"));
    assert!(init.contains("\nDAEMON=/opt/nvr/bin/nvr-node\n"), "{init}");
    assert!(!init.contains("/usr/local/bin/nvr-node") && !unit.contains("/usr/local/bin/nvr-node"));
    // go2rtc's too.
    assert!(dest.join("opt/nvr/bin/go2rtc").is_file());
    let unit = read(&dest.join("etc/systemd/system/go2rtc.service"));
    assert!(
        unit.contains("\nExecStart=/opt/nvr/bin/go2rtc -config /etc/go2rtc/go2rtc.yaml\n"),
        "{unit}"
    );
    let init = read(&dest.join("etc/init.d/go2rtc"));
    assert!(init.contains("\nDAEMON=/opt/nvr/bin/go2rtc\n"), "{init}");
    install(&dest, &["--uninstall"])
        .env("PREFIX", "/opt/nvr")
        .run_ok();
    assert!(!dest.join("opt/nvr/bin/nvr-node").exists());
    assert!(!dest.join("opt/nvr/bin/go2rtc").exists());
    assert!(!dest.join("opt/nvr/bin/nvr-classify").exists());
    assert!(!dest.join("opt/nvr/share/nvr-node").exists());
}

// ---- the settings file ----

/// The environment variables the node reads, as its `--help` lists them:
/// both it and the settings file are made from src/config/table.rs, whose
/// unit tests check that the node reads no other.
fn variables_the_node_reads() -> BTreeSet<String> {
    let help = Command::new(BINARY).arg("--help").run_ok();
    // "  NAME        its help", or "  NAME" alone when the name is long.
    let names: BTreeSet<String> = help
        .stdout()
        .lines()
        .filter_map(|line| line.strip_prefix("  ")?.split(' ').next())
        .filter(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_owned)
        .collect();
    // The reading must find what is known to be there, or it proves nothing.
    for known in [
        "PORT",
        "DATA_DIR",
        "RELAY_URL",
        "LOG_LEVEL",
        "ALLOWED_HOSTS",
        "MQTT_CA_FILE",
    ] {
        assert!(
            names.contains(known),
            "--help does not list {known}: {names:?}\n{}",
            help.report()
        );
    }
    names
}

/// Plain KEY=value lines and comments; each variable the node reads has a
/// "# NAME: ..." block giving its default and an example, followed by its
/// line, set (only PORT, DATA_DIR, RELAY_URL) or commented out.
fn assert_documents_every_variable(settings: &str) {
    let variables = variables_the_node_reads();
    let lines: Vec<&str> = settings.lines().collect();
    let mut set = BTreeSet::new();
    let mut mentioned = BTreeSet::new();
    for line in &lines {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let assignment = line.strip_prefix('#').unwrap_or(line);
        if let Some((key, value)) = assignment.split_once('=')
            && !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            // Both sh (init script) and systemd (EnvironmentFile) read it.
            assert!(
                !value.contains(['$', '`', '\\', '\'']) && !value.starts_with(' '),
                "not a plain value in {line:?}"
            );
            mentioned.insert(key.to_owned());
            if !line.starts_with('#') {
                set.insert(key.to_owned());
            }
            continue;
        }
        assert!(
            line.starts_with('#'),
            "neither a comment nor KEY=value: {line:?}"
        );
    }
    for name in &variables {
        let start = lines
            .iter()
            .position(|l| l.starts_with(&format!("# {name}:")))
            .unwrap_or_else(|| panic!("no \"# {name}: ...\" documentation in\n{settings}"));
        let block: Vec<&str> = lines[start..]
            .iter()
            .take_while(|l| l.starts_with("# "))
            .copied()
            .collect();
        let text = block.join("\n");
        assert!(text.contains("Default"), "no default for {name}:\n{text}");
        assert!(text.contains("Example"), "no example for {name}:\n{text}");
        let next = lines.get(start + block.len()).copied().unwrap_or_default();
        assert!(
            next.starts_with(&format!("{name}=")) || next.starts_with(&format!("#{name}=")),
            "the documentation of {name} is not followed by its line, but {next:?}"
        );
    }
    assert_eq!(
        mentioned, variables,
        "the settings file and the variables read in src/ differ"
    );
    let expected: BTreeSet<String> = ["PORT", "DATA_DIR", "RELAY_URL"].map(String::from).into();
    assert_eq!(
        set, expected,
        "only these are set; the rest stay commented out"
    );
}

#[test]
fn the_settings_file_documents_every_variable_the_node_reads() {
    let path = deploy("nvr-node.default");
    assert_documents_every_variable(&read(&path));
    // The init script sources it with set -a: it must be valid sh, and give
    // the values the systemd unit gets.
    let env = Command::new("sh")
        .args(["-c", "set -eu; set -a; . \"$1\"; set +a; env", "sh"])
        .arg(&path)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .run_ok();
    assert!(env.stderr().is_empty(), "{}", env.report());
    let stdout = env.stdout();
    for line in [
        "PORT=8080",
        "DATA_DIR=/var/lib/nvr-node",
        "RELAY_URL=http://127.0.0.1:1984",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "{line} not exported\n{}",
            env.report()
        );
    }
}

// ---- the systemd unit ----

#[test]
fn the_systemd_unit_verifies_and_matches_the_settings() {
    let unit = read(&deploy("nvr-node.service"));
    let one = |key: &str| {
        let values = unit_values(&unit, key);
        assert_eq!(values.len(), 1, "{key}= should be set once: {values:?}");
        values[0].clone()
    };
    assert_eq!(one("User"), "nvr");
    assert_eq!(one("ExecStart"), "/usr/local/bin/nvr-node");
    assert_eq!(one("EnvironmentFile"), "-/etc/default/nvr-node");
    // ProtectSystem=strict leaves only the state directory writable: the
    // node's DATA_DIR, here and in the settings file, must be that folder.
    assert_eq!(one("ProtectSystem"), "strict");
    let state = format!("/var/lib/{}", one("StateDirectory"));
    assert_eq!(one("Environment"), format!("DATA_DIR={state}"));
    let settings = read(&deploy("nvr-node.default"));
    assert!(
        settings.lines().any(|l| l == format!("DATA_DIR={state}")),
        "the settings file's DATA_DIR is not {state}"
    );
    assert_eq!(one("Restart"), "on-failure");
    assert_eq!(one("CapabilityBoundingSet"), "");
    assert_eq!(one("ProtectProc"), "invisible");
    // go2rtc, when installed beside it, is started first.
    for key in ["After", "Wants"] {
        assert!(
            one(key).split_whitespace().any(|u| u == "go2rtc.service"),
            "{key}= does not name go2rtc.service"
        );
    }
    systemd_verify("nvr-node.service", &unit);
}

/// `systemd-analyze verify` of `unit`, named `name`, with ExecStart running
/// /bin/true: verify fails when ExecStart's program does not exist, and the
/// programs are not installed here.
fn systemd_verify(name: &str, unit: &str) {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    if !analyze.exists() {
        eprintln!("no {}: {name} is not verified", analyze.display());
        return;
    }
    let dir = TempDir::new("unit");
    let copy = dir.path().join(name);
    let replaced: Vec<&str> = unit
        .lines()
        .map(|l| {
            if l.starts_with("ExecStart=") {
                "ExecStart=/bin/true"
            } else {
                l
            }
        })
        .collect();
    assert_eq!(
        unit_values(unit, "ExecStart").len(),
        1,
        "ExecStart in {name}"
    );
    fs::write(&copy, replaced.join("\n") + "\n").unwrap();
    let verify = run(Command::new(analyze).arg("verify").arg(&copy));
    // verify exits 0 on unknown keys and bad values, only printing them:
    // any line about this unit fails too (other units' noise does not).
    let stem = name.trim_end_matches(".service");
    let complaints: Vec<String> = format!("{}{}", verify.stdout(), verify.stderr())
        .lines()
        .filter(|l| l.contains(stem))
        .map(str::to_owned)
        .collect();
    assert!(
        verify.output.status.success() && complaints.is_empty(),
        "systemd-analyze verify rejects {name}: {complaints:?}\n{}",
        verify.report()
    );
}

#[test]
fn the_go2rtc_unit_verifies_and_matches_its_init_script() {
    let unit = read(&deploy("go2rtc.service"));
    let one = |key: &str| {
        let values = unit_values(&unit, key);
        assert_eq!(values.len(), 1, "{key}= should be set once: {values:?}");
        values[0].clone()
    };
    let init = read(&deploy("go2rtc.init"));
    let init_value = |key: &str| {
        init.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("go2rtc.init sets no {key}"))
            .to_owned()
    };
    // Both run the same program with the same settings as the same user.
    assert_eq!(one("User"), init_value("RUN_AS"));
    assert_eq!(one("User"), "go2rtc");
    assert_eq!(
        one("ExecStart"),
        format!("{} -config {}", init_value("DAEMON"), init_value("CONFIG"))
    );
    assert_eq!(init_value("DAEMON_ARGS"), "\"-config $CONFIG\"");
    // Only its settings file is writable, and its new files are its own.
    assert_eq!(one("ProtectSystem"), "strict");
    assert_eq!(one("ReadWritePaths"), "/etc/go2rtc");
    assert_eq!(one("UMask"), "0077");
    assert!(one("RestrictAddressFamilies").contains("AF_NETLINK"));
    assert_eq!(one("Restart"), "on-failure");
    assert_eq!(one("CapabilityBoundingSet"), "");
    systemd_verify("go2rtc.service", &unit);
}

// ---- the scripts ----

#[test]
fn the_scripts_parse_as_posix_sh() {
    let shells: Vec<&str> = ["sh", "dash"].into_iter().filter(|s| have(s)).collect();
    for script in ["install.sh", "nvr-node.init", "go2rtc.init"] {
        for shell in &shells {
            Command::new(shell).arg("-n").arg(deploy(script)).run_ok();
        }
    }
}

/// A copy of deploy/nvr-node.init whose paths all lie in `dir`, with `daemon`
/// as the program and `run_as` as the user; returns its path.
fn init_copy(dir: &Path, daemon: &Path, run_as: &str) -> PathBuf {
    init_copy_of(&deploy("nvr-node.init"), dir, daemon, run_as, &[])
}

/// A copy of the init script `script` (NAME.init or an installed NAME) as
/// `dir`/NAME.init: its pid file `dir`/NAME.pid, its folders and settings
/// (`dir`/defaults) in `dir`, `daemon` as the program, `run_as` as the user,
/// and the lines starting with the keys of `more` replaced too.
fn init_copy_of(
    script: &Path,
    dir: &Path,
    daemon: &Path,
    run_as: &str,
    more: &[(&str, String)],
) -> PathBuf {
    let original = read(script);
    let name = script.file_stem().unwrap().to_string_lossy();
    let defaults = dir.join("defaults");
    let mut moved = vec![
        ("DAEMON=", daemon.display().to_string()),
        ("RUN_AS=", run_as.to_owned()),
        (
            "PIDFILE=",
            dir.join(format!("{name}.pid")).display().to_string(),
        ),
        ("RUN_DIR=", dir.join("run").display().to_string()),
        ("LOG_DIR=", dir.join("log").display().to_string()),
        (
            "SYSLOG_SOCKET=",
            dir.join("no-syslog").display().to_string(),
        ),
    ];
    moved.extend(more.iter().cloned());
    let mut lines = Vec::new();
    for line in original.lines() {
        let line = line.replace("/etc/default/nvr-node", &defaults.display().to_string());
        match moved.iter().find(|(key, _)| line.starts_with(key)) {
            Some((key, value)) => lines.push(format!("{key}{value}")),
            None => lines.push(line),
        }
    }
    for (key, _) in &moved {
        let count = original.lines().filter(|l| l.starts_with(key)).count();
        assert_eq!(count, 1, "{} should set {key} once", script.display());
    }
    let copy = dir.join(format!("{name}.init"));
    fs::write(&copy, lines.join("\n") + "\n").unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

fn init(script: &Path, action: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg(script);
    if !action.is_empty() {
        command.arg(action);
    }
    command
}

#[test]
fn the_init_script_answers_usage_and_status_without_starting_anything() {
    let dir = TempDir::new("init-args");
    let script = init_copy(dir.path(), Path::new("/nonexistent/nvr-node"), "nobody");
    for action in ["bogus", ""] {
        let usage = init(&script, action).exits(2);
        assert!(usage.stderr().contains("Usage:"), "{}", usage.report());
    }
    let status = init(&script, "status").exits(3);
    assert!(
        status.stdout().contains("not running"),
        "{}",
        status.report()
    );
    // A pid file left by a loop that died: LSB status 1.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    fs::write(dir.path().join("nvr-node.pid"), format!("{dead}\n")).unwrap();
    init(&script, "status").exits(1);
    init(&script, "stop").exits(0);
    assert!(
        !dir.path().join("nvr-node.pid").exists(),
        "stop leaves the stale pid file"
    );
    init(&script, "status").exits(3);
    // Without the program there is nothing to start: LSB 5.
    let start = init(&script, "start").exits(5);
    assert!(
        start.stderr().contains("not installed"),
        "{}",
        start.report()
    );
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; this machine's init may be slow to collect it.
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat.rsplit_once(") ")?.1.starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Live processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle) && alive(pid)
        })
        .collect()
}

fn wait_for<T>(what: &str, log: &Path, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n--- {} ---\n{}",
            log.display(),
            fs::read_to_string(log).unwrap_or_default()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// The user supervised programs run as: `nobody` as root, else this user.
fn service_user() -> String {
    if is_root() && run(Command::new("id").arg("nobody")).code() == Some(0) {
        "nobody".to_owned()
    } else {
        run(Command::new("id").arg("-un"))
            .ok()
            .stdout()
            .trim()
            .to_owned()
    }
}

/// Stops the supervised program however the test ends.
struct Supervised {
    script: PathBuf,
    pids: Vec<u32>,
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = init(&self.script, "stop").output();
        for pid in &self.pids {
            if alive(*pid) {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .status();
            }
        }
    }
}

#[test]
fn the_init_script_restarts_the_node_and_stops_it_without_orphans() {
    let run_as = service_user();
    let dir = TempDir::new("init-supervise");
    // The user runs the program from here, so it must be able to reach it.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let daemon = dir.path().join("nvr-node");
    fs::copy(BINARY, &daemon).unwrap();
    let script = init_copy(dir.path(), &daemon, &run_as);
    let data = dir.path().join("data");
    fs::write(
        dir.path().join("defaults"),
        format!(
            "PORT=0\nLISTEN_ADDRESS=127.0.0.1\nDATA_DIR={}\nRELAY_URL=http://127.0.0.1:{}\nNODE_NAME=init-test\n",
            data.display(),
            closed_port()
        ),
    )
    .unwrap();
    let log = dir.path().join("log/nvr-node.log");
    let node_pid_file = dir.path().join("run/node.pid");
    let mut supervised = Supervised {
        script: script.clone(),
        pids: Vec::new(),
    };

    let start = init(&script, "start").run_ok();
    assert!(start.stdout().contains("started"), "{}", start.report());
    let loop_pid = read_pid(&dir.path().join("nvr-node.pid")).expect("no pid file");
    supervised.pids.push(loop_pid);
    let port = wait_for("the node to listen", &log, || {
        let text = fs::read_to_string(&log).ok()?;
        let line = text
            .lines()
            .rev()
            .find(|l| l.contains("listening on http://"))?;
        line.rsplit(':').next()?.trim().parse::<u16>().ok()
    });
    let node = read_pid(&node_pid_file).expect("no node pid file");
    supervised.pids.push(node);
    let status = common::http::request(port, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200, "{status}");
    assert_eq!(status.json()["nodeName"], "init-test", "{status}");
    init(&script, "status").exits(0);

    // The node runs as the user; its new data folder is the user's, 0750.
    let uid = run(Command::new("id").args(["-u", run_as.as_str()]))
        .ok()
        .stdout();
    let proc_status = read(Path::new(&format!("/proc/{node}/status")));
    let node_uid = proc_status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap();
    assert_eq!(node_uid, uid.trim(), "the node does not run as {run_as}");
    assert_eq!(mode(&data), 0o750);
    assert_eq!(fs::metadata(&data).unwrap().uid().to_string(), uid.trim());

    // A node that dies is started again.
    Command::new("kill")
        .arg("-KILL")
        .arg(node.to_string())
        .run_ok();
    let restarted = wait_for("the node to be started again", &log, || {
        read_pid(&node_pid_file).filter(|&pid| pid != node && alive(pid))
    });
    supervised.pids.push(restarted);
    wait_for("the restart to be logged", &log, || {
        read(&log).contains("exited with status 137").then_some(())
    });
    assert!(alive(loop_pid), "the loop ended with the node");

    // Stop ends the loop, the node and the log reader: nothing is left.
    let started = Instant::now();
    let stop = init(&script, "stop").run_ok();
    eprintln!("stop took {:?}", started.elapsed());
    for pid in [loop_pid, restarted] {
        assert!(!alive(pid), "pid {pid} is still running\n{}", stop.report());
    }
    let left = processes_mentioning(&script.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}\n{}", stop.report());
    assert!(!dir.path().join("nvr-node.pid").exists());
    init(&script, "status").exits(3);
    assert!(read(&log).contains("nvr-node stopped"), "{}", read(&log));
}

// ---- go2rtc beside the node (--with-go2rtc) ----

/// The line above which nvr-node.init and go2rtc.init may differ.
const SHARED_FROM: &str =
    "# ---- Below, nvr-node.init and go2rtc.init are the same (tests/install.rs). ----\n";

/// go2rtc's settings lines that keep it to what the node needs.
const GO2RTC_SETTINGS: [&str; 6] = [
    "api:\n  # Only the node talks to it (its RELAY_URL): the API has no authentication.\n  listen: \"127.0.0.1:1984\"\n",
    "  allow_paths: [\"/api\", \"/api/streams\", \"/api/webrtc\"]\n\nrtsp:\n",
    "rtsp:\n  listen: \"127.0.0.1:8554\"\n",
    "  listen: \":8555\"\n  # The browsers are on the LAN: no STUN servers on the internet.\n  ice_servers: []\n",
    "\nexec:\n  allow_paths: []\n",
    "\necho:\n  allow_paths: []\n",
];

#[test]
fn the_two_init_scripts_differ_only_in_their_values() {
    let split = |file: &str| {
        let text = read(&deploy(file));
        assert_eq!(
            text.matches(SHARED_FROM).count(),
            1,
            "{file} should have the line {SHARED_FROM:?} once"
        );
        let at = text.find(SHARED_FROM).unwrap();
        (text[..at].to_owned(), text[at..].to_owned())
    };
    let (node_values, node_shared) = split("nvr-node.init");
    let (go2rtc_values, go2rtc_shared) = split("go2rtc.init");
    assert!(
        node_shared == go2rtc_shared,
        "nvr-node.init and go2rtc.init differ below {SHARED_FROM:?}: change both"
    );
    // Above it, both set what the shared part uses.
    for key in ["NAME=", "DAEMON=", "DAEMON_ARGS=", "RUN_AS=", "STATE_DIR="] {
        for (file, values) in [
            ("nvr-node.init", &node_values),
            ("go2rtc.init", &go2rtc_values),
        ] {
            let count = values.lines().filter(|l| l.starts_with(key)).count();
            assert_eq!(
                count, 1,
                "{file} should set {key} once above the shared part"
            );
        }
    }
    assert!(node_values.contains("\n# Should-Start:      go2rtc\n"));
    assert!(go2rtc_values.contains("\n# Provides:          go2rtc\n"));
    assert!(go2rtc_values.contains("\nRUN_AS=go2rtc\n"));
}

#[test]
fn install_with_go2rtc_upgrade_uninstall_and_purge_into_a_destdir() {
    let go2rtc = common::go2rtc::binary();
    let go2rtc_arg = go2rtc.to_str().unwrap();
    let dir = TempDir::new("install-go2rtc");
    let (dest, accounts) = destdir(&dir);
    let bin = dest.join("usr/local/bin/go2rtc");
    let config_dir = dest.join("etc/go2rtc");
    let config = config_dir.join("go2rtc.yaml");
    let unit = dest.join("etc/systemd/system/go2rtc.service");
    let init = dest.join("etc/init.d/go2rtc");

    let first = install(&dest, &[BINARY, "--with-go2rtc", go2rtc_arg]).run_ok();
    assert_steps(&first);
    assert_eq!(mode(&bin), 0o755, "{}", first.report());
    assert!(
        fs::read(&bin).unwrap() == fs::read(&go2rtc).unwrap(),
        "{} differs from {}",
        bin.display(),
        go2rtc.display()
    );
    let settings = read(&config);
    assert_eq!(settings, read(&deploy("go2rtc.yaml")));
    for lines in GO2RTC_SETTINGS {
        assert!(settings.contains(lines), "no {lines:?} in\n{settings}");
    }
    assert_eq!(mode(&config), 0o600, "{}", first.report());
    assert_eq!(mode(&config_dir), 0o750, "{}", first.report());
    assert_eq!(read(&unit), read(&deploy("go2rtc.service")));
    assert_eq!(read(&init), read(&deploy("go2rtc.init")));
    assert_eq!(mode(&init), 0o755);
    // The node's unit and init script start it after go2rtc.
    let node_unit = read(&dest.join("etc/systemd/system/nvr-node.service"));
    for key in ["After", "Wants"] {
        let values = unit_values(&node_unit, key).join(" ");
        assert!(values.contains("go2rtc.service"), "{key}={values}");
    }
    assert!(read(&dest.join("etc/init.d/nvr-node")).contains("\n# Should-Start:      go2rtc\n"));
    let ids = |path: &Path| {
        let meta = fs::metadata(path).unwrap();
        (meta.uid(), meta.gid())
    };
    if let Some((uid, gid)) = assert_user(&dest, accounts, "go2rtc", "/var/lib/go2rtc", &first) {
        assert_ne!(
            uid.to_string(),
            account_entries(&dest, "passwd", "nvr")[0][2]
        );
        assert_eq!(ids(&config), (uid, gid), "owner of the settings");
        assert_eq!(
            ids(&config_dir),
            (0, gid),
            "owner of {}",
            config_dir.display()
        );
    }

    // Upgrade: go2rtc saved a camera into its settings, someone loosened the
    // file's mode, and go2rtc is a new build while the old one "runs".
    let mut edited = read(&config);
    edited.push_str(&format!(
        "streams:\n  garage: rtsp://admin:{}@192.0.2.1/main\n",
        common::password("install")
    ));
    fs::write(&config, &edited).unwrap();
    fs::set_permissions(&config, fs::Permissions::from_mode(0o644)).unwrap();
    let owners = ids(&config);
    let (new_build, bytes) = new_build(&go2rtc, dir.path());
    let running_inode = fs::metadata(&bin).unwrap().ino();

    let upgrade = install(
        &dest,
        &[BINARY, "--with-go2rtc", new_build.to_str().unwrap()],
    )
    .run_ok();
    assert_steps(&upgrade);
    assert!(
        upgrade.stdout().contains("go2rtc.yaml: kept, mode 0600"),
        "{}",
        upgrade.report()
    );
    assert!(
        read(&config) == edited,
        "the settings were not kept byte for byte"
    );
    assert_eq!(mode(&config), 0o600, "{}", upgrade.report());
    assert_eq!(ids(&config), owners);
    assert_replaced(&bin, &bytes, running_inode);
    if accounts {
        assert_eq!(
            account_entries(&dest, "passwd", "go2rtc").len(),
            1,
            "user duplicated"
        );
    }

    // Upgrading the node alone leaves go2rtc as it is, and says so.
    let installed = [&bin, &config, &unit, &init].map(|f| fs::read(f).unwrap());
    let node_only = install(&dest, &[BINARY]).run_ok();
    assert_steps(&node_only);
    assert!(
        node_only.stdout().contains("go2rtc: left as it is"),
        "{}",
        node_only.report()
    );
    assert!(
        [&bin, &config, &unit, &init].map(|f| fs::read(f).unwrap()) == installed,
        "an upgrade without --with-go2rtc changed go2rtc's files"
    );

    // Uninstall removes go2rtc with the node and keeps its settings.
    let uninstall = install(&dest, &["--uninstall"]).run_ok();
    assert_steps(&uninstall);
    for gone in [&bin, &unit, &init] {
        assert!(
            !gone.exists(),
            "{} is left\n{}",
            gone.display(),
            uninstall.report()
        );
    }
    assert!(read(&config) == edited, "{}", uninstall.report());
    assert!(
        uninstall.stdout().contains("kept go2rtc's settings"),
        "{}",
        uninstall.report()
    );

    // Purge removes them, which hold camera passwords, and the user go2rtc.
    let purge = install(&dest, &["--uninstall", "--purge"]).run_ok();
    assert_steps(&purge);
    assert!(!config_dir.exists(), "{}", purge.report());
    if accounts {
        for file in ["passwd", "group", "shadow"] {
            assert!(
                account_entries(&dest, file, "go2rtc").is_empty(),
                "go2rtc is left in {file}\n{}",
                purge.report()
            );
        }
        assert!(account_entries(&dest, "passwd", "nvr").is_empty());
        assert!(read(&dest.join("etc/passwd")).starts_with("root:"));
    }
}

#[test]
fn uninstall_leaves_a_go2rtc_it_did_not_install() {
    let dir = TempDir::new("install-foreign");
    let dest = dir.path().join("root");
    install(&dest, &[BINARY]).run_ok();
    // A go2rtc set up by hand, as in the README's manual steps.
    let foreign = [
        ("usr/local/bin/go2rtc", "#!/bin/sh\n"),
        (
            "etc/systemd/system/go2rtc.service",
            "[Service]\nExecStart=/usr/local/bin/go2rtc -config /etc/go2rtc/go2rtc.yaml\n",
        ),
        ("etc/init.d/go2rtc", "#!/bin/sh\n"),
        (
            "etc/go2rtc/go2rtc.yaml",
            "api:\n  listen: \"127.0.0.1:1984\"\n",
        ),
    ];
    for (path, text) in foreign {
        fs::create_dir_all(dest.join(path).parent().unwrap()).unwrap();
        fs::write(dest.join(path), text).unwrap();
    }
    let upgrade = install(&dest, &[BINARY]).run_ok();
    assert!(!upgrade.stdout().contains("go2rtc"), "{}", upgrade.report());
    let purge = install(&dest, &["--uninstall", "--purge"]).run_ok();
    assert_steps(&purge);
    for (path, text) in foreign {
        assert_eq!(
            fs::read_to_string(dest.join(path)).ok().as_deref(),
            Some(text),
            "{path} was touched\n{}",
            purge.report()
        );
    }
    assert!(
        purge
            .stdout()
            .contains("its settings were not written by this script"),
        "{}",
        purge.report()
    );
}

/// A WebRTC offer (from aiortc, trimmed to one H.264 video track): go2rtc
/// parses it fully before it asks the stream's source for media.
const OFFER: &str = "v=0\r\n\
o=- 4004390987 4004390987 IN IP4 0.0.0.0\r\n\
s=-\r\n\
t=0 0\r\n\
a=group:BUNDLE 0\r\n\
a=msid-semantic:WMS *\r\n\
m=video 9 UDP/TLS/RTP/SAVPF 99\r\n\
c=IN IP4 0.0.0.0\r\n\
a=recvonly\r\n\
a=mid:0\r\n\
a=rtcp-mux\r\n\
a=rtpmap:99 H264/90000\r\n\
a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n\
a=ice-ufrag:fpsw\r\n\
a=ice-pwd:5gDsBKwY1TfupDl9X5zp7T\r\n\
a=fingerprint:sha-256 C5:2E:6F:50:A3:B7:6A:9C:C7:CC:A0:5D:86:1D:FA:D3:0C:3C:05:2F:93:84:5B:52:51:64:F7:77:67:CD:A0:DC\r\n\
a=setup:actpass\r\n";

/// Distinct free ports on 127.0.0.1 (bound together, then released).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}

/// The local addresses (hex, as in /proc/net/tcp*) that listen on TCP `port`.
fn listeners_on(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in read(Path::new(table)).lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            let Some((address, hex_port)) = local.split_once(':') else {
                continue;
            };
            if *state == "0A" && u16::from_str_radix(hex_port, 16) == Ok(port) {
                found.push(address.to_owned());
            }
        }
    }
    found
}

/// GET `path` from go2rtc, or None while nothing answers on `port`.
fn try_get(port: u16, path: &str) -> Option<common::Response> {
    std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    Some(common::http::request(port, "GET", path, &[], b""))
}

/// go2rtc's streams: name -> its sources.
fn go2rtc_streams(port: u16) -> std::collections::BTreeMap<String, Vec<String>> {
    let streams = common::http::request(port, "GET", "/api/streams", &[], b"");
    assert_eq!(streams.status, 200, "{streams}");
    streams
        .json()
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {streams}"))
        .iter()
        .map(|(name, stream)| {
            let urls = stream["producers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["url"].as_str().map(str::to_owned))
                .collect();
            (name.clone(), urls)
        })
        .collect()
}

#[test]
fn the_installed_go2rtc_and_node_work_together_under_their_init_scripts() {
    let began = Instant::now();
    let go2rtc = common::go2rtc::binary();
    let dir = TempDir::new("install-pair");
    // The user runs the programs from here, so it must be able to reach them.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let dest = dir.path().join("root");
    install(&dest, &[BINARY, "--with-go2rtc", go2rtc.to_str().unwrap()]).run_ok();
    let run_as = service_user();
    let id_of = |flag: &str| -> u32 {
        run(Command::new("id").args([flag, run_as.as_str()]))
            .ok()
            .stdout()
            .trim()
            .parse()
            .unwrap()
    };

    // go2rtc's folder: the installed settings with free loopback ports (each
    // replaced once, so none is left on its shipped port), given to the user.
    let g2_dir = dir.path().join("go2rtc");
    let out = g2_dir.join("out");
    fs::create_dir_all(&out).unwrap();
    // Where an exec: source would leave its mark, were it run.
    fs::set_permissions(&out, fs::Permissions::from_mode(0o777)).unwrap();
    let [api, rtsp, webrtc] = free_ports::<3>();
    let mut settings = read(&dest.join("etc/go2rtc/go2rtc.yaml"));
    for (shipped, port) in [
        ("\"127.0.0.1:1984\"", api),
        ("\"127.0.0.1:8554\"", rtsp),
        ("\":8555\"", webrtc),
    ] {
        assert_eq!(
            settings.matches(shipped).count(),
            1,
            "{shipped} in\n{settings}"
        );
        settings = settings.replace(shipped, &format!("\"127.0.0.1:{port}\""));
    }
    // An exec: stream in the file, as someone with write access could add.
    let ran = out.join("exec-ran");
    settings.push_str(&format!(
        "\nstreams:\n  exec_test: exec:/bin/touch {}\n",
        ran.display()
    ));
    let config = g2_dir.join("go2rtc.yaml");
    fs::write(&config, &settings).unwrap();
    fs::set_permissions(&config, fs::Permissions::from_mode(0o600)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&config, Some(id_of("-u")), Some(id_of("-g"))).unwrap();
    }
    let g2_script = init_copy_of(
        &dest.join("etc/init.d/go2rtc"),
        &g2_dir,
        &dest.join("usr/local/bin/go2rtc"),
        &run_as,
        &[("CONFIG=", config.display().to_string())],
    );
    let g2_log = g2_dir.join("log/go2rtc.log");

    // The node's folder and settings.
    let node_dir = dir.path().join("node");
    fs::create_dir_all(&node_dir).unwrap();
    fs::write(
        node_dir.join("defaults"),
        format!(
            "PORT=0\nLISTEN_ADDRESS=127.0.0.1\nDATA_DIR={}\nRELAY_URL=http://127.0.0.1:{api}\nNODE_NAME=pair-test\nLOG_LEVEL=debug\n",
            node_dir.join("data").display()
        ),
    )
    .unwrap();
    let node_script = init_copy_of(
        &dest.join("etc/init.d/nvr-node"),
        &node_dir,
        &dest.join("usr/local/bin/nvr-node"),
        &run_as,
        &[],
    );
    let node_log = node_dir.join("log/nvr-node.log");

    // Stopped however the test ends, the node first.
    let _g2_guard = Supervised {
        script: g2_script.clone(),
        pids: Vec::new(),
    };
    let starting = Instant::now();
    init(&g2_script, "start").run_ok();
    let _node_guard = Supervised {
        script: node_script.clone(),
        pids: Vec::new(),
    };
    init(&node_script, "start").run_ok();
    let info = wait_for("go2rtc to answer", &g2_log, || {
        try_get(api, "/api").filter(|r| r.status == 200)
    });
    let go2rtc_up = starting.elapsed();
    assert!(
        info.json()["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.9.14")),
        "{info}"
    );
    let port = wait_for("the node to listen", &node_log, || {
        let text = fs::read_to_string(&node_log).ok()?;
        let line = text
            .lines()
            .rev()
            .find(|l| l.contains("listening on http://"))?;
        line.rsplit(':').next()?.trim().parse::<u16>().ok()
    });
    eprintln!(
        "go2rtc answered {go2rtc_up:?} and the node {:?} after their init scripts started them",
        starting.elapsed()
    );
    let node = |method: &str, path: &str, body: &str| {
        let response = common::http::request(
            port,
            method,
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        common::assert_no_secret(&response.to_string(), &format!("{method} {path}"));
        response
    };

    // The node registers a camera in go2rtc, which saves it in its file.
    let url = format!(
        "rtsp://admin:{}@127.0.0.1:{}/main",
        common::password("pair"),
        closed_port()
    );
    let added = node(
        "POST",
        "/api/cameras",
        &serde_json::json!({ "name": "Door", "rtspUrl": url }).to_string(),
    );
    assert_eq!(added.status, 201, "{added}");
    let id = added.json()["id"].as_str().unwrap().to_owned();
    wait_for("go2rtc to list the camera", &node_log, || {
        (go2rtc_streams(api).get(&id) == Some(&vec![url.clone()])).then_some(())
    });
    assert!(
        read(&config).contains(&url),
        "not saved:\n{}",
        read(&config)
    );
    assert_eq!(mode(&config), 0o600, "go2rtc changed its file's mode");
    wait_for("the node to call the relay healthy", &node_log, || {
        (node("GET", "/api/status", "").json()["relayHealthy"] == true).then_some(())
    });

    // go2rtc's API and RTSP server listen on 127.0.0.1 only.
    for (what, port) in [("API", api), ("RTSP server", rtsp)] {
        let addresses = listeners_on(port);
        assert_eq!(
            addresses,
            vec!["0100007F".to_owned()],
            "go2rtc's {what} (port {port}) should listen on 127.0.0.1 only"
        );
    }
    // Only what the node needs is served: not the settings (passwords).
    let hidden = try_get(api, "/api/config").unwrap();
    assert_eq!(hidden.status, 404, "{hidden}");

    // No program runs: exec: through the API is refused, and the one in the
    // file fails when a viewer asks for it.
    let put_ran = out.join("put-ran");
    let put = common::http::request(
        api,
        "PUT",
        &format!(
            "/api/streams?name=exec_put&src=exec:/bin/touch%20{}",
            put_ran.display()
        ),
        &[],
        b"",
    );
    assert_eq!(put.status, 400, "{put}");
    assert!(!go2rtc_streams(api).contains_key("exec_put"));
    let offer = common::http::request(
        api,
        "POST",
        "/api/webrtc?src=exec_test",
        &[("Content-Type", "application/sdp")],
        OFFER.as_bytes(),
    );
    assert_eq!(offer.status, 500, "{offer}");
    assert!(offer.text().contains("bin not in allow_paths"), "{offer}");
    thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists() && !put_ran.exists(), "go2rtc ran a program");

    // With the node stopped, so that it cannot put the stream back, a
    // restarted go2rtc has the camera from its file.
    init(&node_script, "stop").run_ok();
    init(&g2_script, "restart").run_ok();
    wait_for("go2rtc to answer again", &g2_log, || {
        try_get(api, "/api").filter(|r| r.status == 200)
    });
    wait_for("go2rtc to have the camera again", &g2_log, || {
        (go2rtc_streams(api).get(&id) == Some(&vec![url.clone()])).then_some(())
    });

    init(&g2_script, "stop").run_ok();
    init(&g2_script, "status").exits(3);
    init(&node_script, "status").exits(3);
    let left = processes_mentioning(&dir.path().display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
    let node_logs = read(&node_log);
    common::assert_no_secret(&node_logs, "the node's log");
    assert!(node_logs.contains("nvr-node stopped"), "{node_logs}");
    eprintln!("the whole test took {:?}", began.elapsed());
}

//! The Debian packages (`deploy/package.sh`): each of the three is built
//! and passes lintian; the amd64 one is installed, run, upgraded, removed
//! and purged in a real Debian 12 root (made by mmdebstrap from Debian's
//! mirror, `tests/debian/root.sh`); the boards' binaries run under qemu
//! from their packages, which depend only on packages Debian 12 has for
//! their architecture; the generated copyright file names every crate
//! linked into the two programs, with a licence paragraph for each.
//!
//! The root has no systemd running, as a chroot or an image being built:
//! its `policy-rc.d` records what the maintainer scripts ask of the init
//! script and denies it, as such roots do, and the test starts the node
//! itself as its systemd unit says. The packages are built from what
//! `tests/run.sh` built before `cargo test`, as `arm::`'s binaries are.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::common::system::{account_entries, stdout_of, unit_values};
use crate::common::{self, Camera, Node, TempDir, closed_port, wait_for};
use serde_json::json;

const ARCHES: [&str; 3] = ["amd64", "arm64", "armhf"];
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

/// `sh deploy/package.sh ARCH OUT` with `VERSION` when given; the package's path.
fn build(arch: &str, out: &Path, version: Option<&str>) -> PathBuf {
    let mut command = Command::new("sh");
    command
        .arg(repo().join("deploy/package.sh"))
        .args([arch, out.to_str().unwrap()])
        // As a person runs it: without the variables cargo sets for this
        // test, which would make cargo build the programs again.
        .env_clear();
    for name in [
        "PATH",
        "HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "XDG_CACHE_HOME",
    ] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    if let Some(version) = version {
        command.env("VERSION", version);
    }
    let started = std::time::Instant::now();
    let printed = stdout_of(&mut command);
    let deb = PathBuf::from(printed.lines().last().unwrap_or_default());
    assert!(deb.is_file(), "package.sh printed no package: {printed}");
    let bytes = std::fs::metadata(&deb).unwrap().len();
    eprintln!(
        "{}: {bytes} bytes, built in {:?}",
        deb.display(),
        started.elapsed()
    );
    deb
}

/// The package of `arch` at the checkout's version, built once for all the
/// tests of this process, into target/deb.
fn package(arch: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, deb)) = built.iter().find(|(a, _)| a == arch) {
        return deb.clone();
    }
    let deb = build(arch, &repo().join("target/deb"), None);
    built.push((arch.to_owned(), deb.clone()));
    deb
}

/// A field of the package's control file.
fn field(deb: &Path, name: &str) -> String {
    stdout_of(Command::new("dpkg-deb").arg("--field").arg(deb).arg(name))
        .trim()
        .to_owned()
}

/// The package's files, unpacked into `dir`.
fn unpack(deb: &Path, dir: &Path) {
    stdout_of(Command::new("dpkg-deb").arg("--extract").arg(deb).arg(dir));
}

#[test]
fn each_package_passes_lintian_and_holds_the_node_its_classifier_and_model() {
    for arch in ARCHES {
        let deb = package(arch);
        // Errors and warnings fail it; those overridden (and explained
        // below) do not count.
        let lintian = stdout_of(
            Command::new("lintian")
                .args(["--fail-on", "error,warning", "--tag-display-limit", "0"])
                .arg(&deb),
        );
        eprintln!("{arch}: {}: lintian:\n{lintian}", deb.display());

        assert_eq!(field(&deb, "Package"), "nvr-node");
        assert_eq!(field(&deb, "Version"), env!("CARGO_PKG_VERSION"));
        assert_eq!(field(&deb, "Architecture"), arch);
        let depends = field(&deb, "Depends");
        assert!(depends.starts_with("ffmpeg, passwd"), "{arch}: {depends}");
        match arch {
            // Against this machine's glibc: dpkg-shlibdeps's finding.
            "amd64" => assert!(depends.contains("libc6 (>= 2."), "{arch}: {depends}"),
            // Against glibc 2.17's libraries, by zig (arm::'s floor).
            "armhf" => assert!(depends.contains("libc6 (>= 2.17)"), "{arch}: {depends}"),
            _ => assert!(!depends.contains("libc"), "{arch}: static, {depends}"),
        }

        let dir = TempDir::new(&format!("unpacked-{arch}"));
        unpack(&deb, dir.path());
        let machine = match arch {
            "amd64" => "Advanced Micro Devices X86-64",
            "arm64" => "AArch64",
            _ => "ARM",
        };
        for (path, mode) in [
            ("usr/bin/nvr-node", 0o755),
            ("usr/lib/nvr-node/nvr-classify", 0o755),
            ("usr/share/nvr-node/model/model.tflite", 0o644),
            ("usr/share/nvr-node/model/labels.txt", 0o644),
            ("usr/share/nvr-node/model/LICENSE", 0o644),
            ("usr/share/nvr-node/model/SOURCE", 0o644),
            ("usr/share/nvr-node/go2rtc.yaml", 0o644),
            ("lib/systemd/system/nvr-node.service", 0o644),
            ("lib/systemd/system/go2rtc.service", 0o644),
            ("etc/init.d/nvr-node", 0o755),
            ("etc/default/nvr-node", 0o640),
            ("usr/share/doc/nvr-node/copyright", 0o644),
            ("usr/share/doc/nvr-node/changelog.gz", 0o644),
            ("usr/share/man/man1/nvr-node.1.gz", 0o644),
        ] {
            let file = dir.path().join(path);
            let meta = std::fs::metadata(&file)
                .unwrap_or_else(|e| panic!("{arch}: {path} is not in the package: {e}"));
            assert_eq!(
                meta.permissions().mode() & 0o7777,
                mode,
                "{arch}: {path}'s mode"
            );
            if path.ends_with("/nvr-node") && path.starts_with("usr/bin")
                || path.ends_with("/nvr-classify")
            {
                let header = stdout_of(Command::new("readelf").arg("-h").arg(&file));
                assert!(header.contains(machine), "{arch}: {path}: {header}");
            }
        }
        // The model is the pinned one, whole.
        let source =
            std::fs::read_to_string(dir.path().join("usr/share/nvr-node/model/SOURCE")).unwrap();
        assert!(source.contains("version: 0.0.94"), "{source}");
        // The package's paths, not install.sh's.
        let unit = std::fs::read_to_string(dir.path().join("lib/systemd/system/nvr-node.service"))
            .unwrap();
        assert!(unit.contains("\nExecStart=/usr/bin/nvr-node\n"), "{unit}");
        let settings = std::fs::read_to_string(dir.path().join("etc/default/nvr-node")).unwrap();
        assert!(
            settings.contains("\nCLASSIFIER=/usr/lib/nvr-node/nvr-classify\n"),
            "{arch}: the settings do not name the classifier"
        );
        let init = std::fs::read_to_string(dir.path().join("etc/init.d/nvr-node")).unwrap();
        assert!(init.contains("\nDAEMON=/usr/bin/nvr-node\n"));
        assert!(!init.contains("/usr/local/bin/nvr-node"));

        let overrides =
            std::fs::read_to_string(dir.path().join("usr/share/lintian/overrides/nvr-node"))
                .unwrap();
        // Each override is in a paragraph that opens with its reason.
        for paragraph in overrides
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            assert!(
                paragraph.starts_with('#') && paragraph.lines().any(|l| !l.starts_with('#')),
                "{arch}: overrides without a reason, or a reason without overrides:\n{paragraph}"
            );
        }
    }
}

/// A Debian 12 root file system in `dir`: the cached tarball's, unpacked.
fn debian_root(dir: &Path) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"))
        .join("nvr-node-tests");
    let tarball = stdout_of(
        Command::new("sh")
            .arg(repo().join("tests/debian/root.sh"))
            .arg(&cache),
    );
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    stdout_of(
        Command::new("tar")
            .args([
                "--zstd",
                "--extract",
                "--numeric-owner",
                "--preserve-permissions",
            ])
            .arg("--file")
            .arg(tarball.trim())
            .arg("--directory")
            .arg(&root),
    );
    // As in a chroot or an image being built: the init script is not run,
    // and what the maintainer scripts asked of it is written down.
    let policy = root.join("usr/sbin/policy-rc.d");
    std::fs::write(
        &policy,
        "#!/bin/sh\n# The test's: records the request, denies it.\n\
         echo \"$*\" >>/var/log/policy-rc.d.log\nexit 101\n",
    )
    .unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

/// Runs `args` in `root` as root, in a mount and process namespace of its
/// own with the root's /proc: whatever it starts ends with it.
fn in_root(root: &Path, args: &[&str]) -> String {
    stdout_of(
        Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "--fork",
                "--pid",
                "--kill-child",
            ])
            .args([
                "--",
                "/bin/sh",
                "-c",
                "mount -t proc proc \"$0/proc\" && exec chroot \"$0\" \"$@\"",
            ])
            .arg(root)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("LC_ALL", "C")
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// What the maintainer scripts asked of the init script since the last call.
fn init_requests(root: &Path, seen: &mut usize) -> Vec<String> {
    let log = std::fs::read_to_string(root.join("var/log/policy-rc.d.log")).unwrap_or_default();
    let requests: Vec<String> = log
        .lines()
        .skip(*seen)
        // invoke-rc.d asks `[--quiet] NAME (ACTION) [RUNLEVEL]`.
        .map(|l| {
            l.split_whitespace()
                .filter(|w| !w.starts_with("--"))
                .map(|w| w.trim_matches(|c| c == '(' || c == ')'))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    *seen += requests.len();
    requests
}

/// `name`'s entry in the root's `file` (passwd or group), split on colons.
fn account(root: &Path, file: &str, name: &str) -> Option<Vec<String>> {
    account_entries(root, file, name).into_iter().next()
}

/// The installed node, started as its systemd unit starts it: the unit's
/// user and group, umask, Environment= and then EnvironmentFile=, its
/// ExecStart, with systemd's PATH and nothing else of this process's
/// environment; in a mount namespace of its own with the root's /proc and
/// a tmpfs on /dev/shm, as a booted board has.
fn start_installed(root: &Path) -> Node {
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/nvr-node.service")).unwrap();
    let user = &unit_values(&unit, "User")[0];
    let group = &unit_values(&unit, "Group")[0];
    let passwd = account(root, "passwd", user).expect("the unit's user");
    let gid = account(root, "group", group).expect("the unit's group")[2].clone();
    let mut env = vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin".to_owned()];
    env.extend(unit_values(&unit, "Environment"));
    for file in unit_values(&unit, "EnvironmentFile") {
        let file = file.trim_start_matches('-');
        let text = std::fs::read_to_string(root.join(file.trim_start_matches('/'))).unwrap();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line.split_once('=').expect("KEY=value");
            env.push(format!("{key}={}", value.trim_matches('"')));
        }
    }
    let umask = &unit_values(&unit, "UMask")[0];
    let exec = &unit_values(&unit, "ExecStart")[0];
    let script = format!(
        "mount -t proc proc \"$0/proc\" && mount -t tmpfs tmpfs \"$0/dev/shm\" && \
         umask {umask} && exec chroot --userspec={}:{gid} \
         --groups={gid} \"$0\" /usr/bin/env -i \"$@\" {exec}",
        passwd[2]
    );
    let root = root.to_str().unwrap();
    let mut program = vec![
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        &script,
        root,
    ];
    program.extend(env.iter().map(String::as_str));
    // The harness's own variables are dropped by `env -i`.
    Node::start_program(&program, Path::new("/nonexistent"), "", &[])
}

#[test]
fn the_amd64_package_installs_runs_upgrades_removes_and_purges_in_a_debian_12_root() {
    let deb = package("amd64");
    let dir = TempDir::new("debian-root");
    let root = debian_root(dir.path());
    let mut seen = 0;
    let path_in_root = |deb: &Path| {
        let name = deb.file_name().unwrap().to_str().unwrap().to_owned();
        std::fs::copy(deb, root.join("tmp").join(&name)).unwrap();
        format!("/tmp/{name}")
    };

    // Installed as the README says, with apt: its dependencies are there.
    let first = path_in_root(&deb);
    in_root(&root, &["apt-get", "install", "--yes", &first]);
    let status = in_root(
        &root,
        &["dpkg-query", "-W", "-f", "${Status} ${Version}", "nvr-node"],
    );
    assert_eq!(
        status,
        format!("install ok installed {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(init_requests(&root, &mut seen), ["nvr-node start"]);

    // The users, and the folders and files with their owners and modes.
    let nvr = account(&root, "passwd", "nvr").expect("the user nvr");
    assert_eq!(nvr[5], "/var/lib/nvr-node", "{nvr:?}");
    assert_eq!(nvr[6], "/usr/sbin/nologin", "{nvr:?}");
    let (uid, gid): (u32, u32) = (nvr[2].parse().unwrap(), nvr[3].parse().unwrap());
    assert!(uid < 1000, "nvr is a system user: {nvr:?}");
    let go2rtc = account(&root, "passwd", "go2rtc").expect("the user go2rtc");
    let stat = |path: &str| std::fs::metadata(root.join(path)).unwrap();
    let owner_mode = |path: &str| {
        let meta = stat(path);
        (meta.uid(), meta.gid(), meta.mode() & 0o7777)
    };
    assert_eq!(owner_mode("var/lib/nvr-node"), (uid, gid, 0o750));
    assert_eq!(owner_mode("etc/default/nvr-node"), (0, gid, 0o640));
    let go2rtc_ids: (u32, u32) = (go2rtc[2].parse().unwrap(), go2rtc[3].parse().unwrap());
    assert_eq!(
        owner_mode("etc/go2rtc/go2rtc.yaml"),
        (go2rtc_ids.0, go2rtc_ids.1, 0o600)
    );
    assert_eq!(owner_mode("etc/go2rtc"), (0, go2rtc_ids.1, 0o750));
    // Enabled for systemd and for the init script.
    for unit in ["nvr-node.service", "go2rtc.service"] {
        let link = root
            .join("etc/systemd/system/multi-user.target.wants")
            .join(unit);
        assert_eq!(
            std::fs::read_link(&link).unwrap_or_else(|e| panic!("{unit} not enabled: {e}")),
            Path::new("/lib/systemd/system").join(unit)
        );
    }
    let rc2: Vec<String> = std::fs::read_dir(root.join("etc/rc2.d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        rc2.iter()
            .any(|n| n.starts_with('S') && n.ends_with("nvr-node")),
        "{rc2:?}"
    );

    // The installed classifier and model, run in the root, on a photograph.
    let cat = [common::classifier::crop(
        &repo().join("tests/photos/chelsea-300.jpg"),
    )];
    let root_str = root.to_str().unwrap();
    let answers = common::classifier::answers(
        &["chroot", root_str, "/usr/lib/nvr-node/nvr-classify"],
        Path::new("/usr/share/nvr-node/model"),
        &cat,
    );
    assert_eq!(answers[0]["objects"][0]["label"], "cat", "{}", answers[0]);

    // Started as the unit starts it, on loopback and a free port (set in
    // the settings, which the upgrade must keep).
    let settings = root.join("etc/default/nvr-node");
    let text = std::fs::read_to_string(&settings).unwrap();
    let edited = text.replace("\nPORT=8080\n", "\nPORT=0\n").replace(
        "\n#LISTEN_ADDRESS=127.0.0.1\n",
        "\nLISTEN_ADDRESS=127.0.0.1\n",
    ) + &format!("RELAY_URL=http://127.0.0.1:{}\n", closed_port());
    assert!(edited.contains("\nPORT=0\n") && edited.contains("\nLISTEN_ADDRESS=127.0.0.1\n"));
    std::fs::write(&settings, &edited).unwrap();
    let node = start_installed(&root);
    let status = node.get("/api/status");
    assert_eq!(status.status, 200, "{status}");
    let status = status.json();
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["classifier"]["installed"], true, "{status}");
    // A real camera, probed by the root's ffprobe.
    let camera = Camera::start();
    let added = node.add_camera(json!({
        "name": "Porch",
        "rtspUrl": format!("rtsp://127.0.0.1:{}/main", camera.port),
    }));
    let online = wait_for(Duration::from_secs(30), || {
        node.get("/api/cameras").json()[0]["online"] == true
    });
    assert!(
        online,
        "the camera never came online: {}",
        node.get("/api/cameras").json()
    );
    // Its data are the nvr user's, in the package's folder.
    assert_eq!(stat("var/lib/nvr-node/nvr-node.db").uid(), uid);
    node.terminate();
    assert_eq!(node.wait(), Some(0), "exit after SIGTERM");

    // An upgrade: the settings and the camera are kept, and the node is
    // restarted once (not stopped first).
    let newer = format!("{}+1", env!("CARGO_PKG_VERSION"));
    let second = path_in_root(&build("amd64", dir.path(), Some(&newer)));
    in_root(&root, &["apt-get", "install", "--yes", &second]);
    let status = in_root(
        &root,
        &["dpkg-query", "-W", "-f", "${Status} ${Version}", "nvr-node"],
    );
    assert_eq!(status, format!("install ok installed {newer}"));
    assert_eq!(init_requests(&root, &mut seen), ["nvr-node restart"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), edited);
    assert!(!root.join("etc/default/nvr-node.dpkg-dist").exists());
    assert_eq!(owner_mode("etc/default/nvr-node"), (0, gid, 0o640));
    let node = start_installed(&root);
    let cameras = node.get("/api/cameras").json();
    assert_eq!(cameras[0]["id"], added["id"], "{cameras}");
    assert_eq!(cameras[0]["name"], "Porch");
    node.terminate();
    assert_eq!(node.wait(), Some(0));

    // remove keeps the data, the settings and the users.
    in_root(&root, &["apt-get", "remove", "--yes", "nvr-node"]);
    assert_eq!(init_requests(&root, &mut seen), ["nvr-node stop"]);
    assert!(!root.join("usr/bin/nvr-node").exists());
    assert!(root.join("var/lib/nvr-node/nvr-node.db").is_file());
    assert!(settings.is_file());
    assert!(account(&root, "passwd", "nvr").is_some());
    let status = in_root(&root, &["dpkg-query", "-W", "-f", "${Status}", "nvr-node"]);
    assert_eq!(status, "deinstall ok config-files");

    // purge deletes them.
    in_root(&root, &["apt-get", "purge", "--yes", "nvr-node"]);
    for gone in [
        "var/lib/nvr-node",
        "etc/default/nvr-node",
        "etc/go2rtc",
        "etc/init.d/nvr-node",
        "etc/systemd/system/multi-user.target.wants/nvr-node.service",
    ] {
        assert!(!root.join(gone).exists(), "{gone} is left after purge");
    }
    for user in ["nvr", "go2rtc"] {
        assert!(
            account(&root, "passwd", user).is_none(),
            "user {user} is left"
        );
        assert!(
            account(&root, "group", user).is_none(),
            "group {user} is left"
        );
    }
    let overrides = std::fs::read_to_string(root.join("var/lib/dpkg/statoverride")).unwrap();
    assert!(!overrides.contains("nvr-node"), "{overrides}");
    let rc2 = std::fs::read_dir(root.join("etc/rc2.d")).unwrap();
    assert!(!rc2.into_iter().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("nvr-node")
    }));
}

/// The candidate version of `package` for `arch` in this machine's Debian
/// 12 lists, if any.
fn candidate(package: &str, arch: &str) -> Option<String> {
    let policy =
        stdout_of(Command::new("apt-cache").args(["policy", &format!("{package}:{arch}")]));
    let version = policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate: "))?
        .to_owned();
    if version != "(none)" {
        return Some(version);
    }
    // A package for all architectures (ca-certificates) has no NAME:ARCH.
    let show = Command::new("apt-cache")
        .args(["show", "--no-all-versions", package])
        .output()
        .ok()?;
    let show = String::from_utf8_lossy(&show.stdout);
    show.lines()
        .any(|l| l == "Architecture: all")
        .then(|| show.lines().find_map(|l| l.strip_prefix("Version: ")))
        .flatten()
        .map(str::to_owned)
}

#[test]
fn the_board_packages_run_under_qemu_and_depend_on_what_debian_12_has() {
    let photo = [common::classifier::crop(
        &repo().join("tests/photos/chelsea-300.jpg"),
    )];
    for (arch, emulator) in [
        ("arm64", &["qemu-aarch64"][..]),
        ("armhf", &["qemu-arm", "-L", "/usr/arm-linux-gnueabihf"][..]),
    ] {
        let deb = package(arch);
        let (depends, pre, recommends) = (
            field(&deb, "Depends"),
            field(&deb, "Pre-Depends"),
            field(&deb, "Recommends"),
        );
        for item in depends
            .split(", ")
            .chain(pre.split(", "))
            .chain(recommends.split(", "))
        {
            let (name, constraint) = match item.split_once(" (") {
                Some((name, rest)) => (name, Some(rest.trim_end_matches(')'))),
                None => (item, None),
            };
            let version = candidate(name, arch)
                .unwrap_or_else(|| panic!("{arch}: Debian 12 has no {name} for {arch} ({item})"));
            if let Some(constraint) = constraint {
                let (op, wanted) = constraint.split_once(' ').unwrap();
                let op = match op {
                    ">=" => "ge",
                    "<=" => "le",
                    ">>" => "gt",
                    "<<" => "lt",
                    _ => "eq",
                };
                let ok = Command::new("dpkg")
                    .args(["--compare-versions", &version, op, wanted])
                    .status()
                    .unwrap();
                assert!(
                    ok.success(),
                    "{arch}: {name} {version} does not satisfy {item}"
                );
            }
        }

        let dir = TempDir::new(&format!("board-{arch}"));
        let files = dir.path().join("files");
        unpack(&deb, &files);
        let mut node = emulator.to_vec();
        let binary = files.join("usr/bin/nvr-node");
        node.push(binary.to_str().unwrap());
        let classifier = files.join("usr/lib/nvr-node/nvr-classify");
        let model = files.join("usr/share/nvr-node/model");
        let data = dir.path().join("data");
        let relay = format!("http://127.0.0.1:{}", closed_port());
        let node = Node::start_program(
            &node,
            &data,
            &relay,
            &[
                ("CLASSIFIER", classifier.to_str().unwrap()),
                ("MODEL_DIR", model.to_str().unwrap()),
            ],
        );
        let status = node.get("/api/status").json();
        assert_eq!(status["version"], env!("CARGO_PKG_VERSION"), "{arch}");
        assert_eq!(status["classifier"]["installed"], true, "{arch}: {status}");
        node.terminate();
        assert_eq!(node.wait(), Some(0), "{arch}: exit after SIGTERM");

        let mut program = emulator.to_vec();
        program.push(classifier.to_str().unwrap());
        let answers = common::classifier::answers(&program, &model, &photo);
        assert_eq!(
            answers[0]["objects"][0]["label"], "cat",
            "{arch}: {}",
            answers[0]
        );
    }
}

#[test]
fn the_readme_installs_the_package_that_package_sh_makes() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## On a board\n")
        .nth(1)
        .expect("the README has an \"On a board\" section")
        .split("\n## ")
        .next()
        .unwrap();
    let commands: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::trim)
        .collect();
    assert!(
        commands.contains(&"sh deploy/package.sh arm64"),
        "{commands:?}"
    );
    let deb = package("arm64");
    let name = deb.file_name().unwrap().to_str().unwrap();
    let scp = format!("scp target/deb/{name} pi@board.local:");
    assert!(
        commands.contains(&scp.as_str()),
        "{scp} is not in {commands:?}"
    );
    let install = format!("ssh pi@board.local sudo apt install ./{name}");
    assert!(
        commands.contains(&install.as_str()),
        "{install} is not in {commands:?}"
    );
}

/// The `Files:` pattern each crate linked into the two binaries for `triple`
/// must have: a path crate's folder in the repository, a registry crate's
/// `vendor/<name>-<version>` (as `cargo vendor --versioned-dirs` lays it out).
fn linked(triple: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = stdout_of(Command::new(cargo).current_dir(repo()).args([
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
    ]));
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
        let text = stdout_of(
            Command::new("python3")
                .current_dir(repo())
                .args(["deploy/debian/copyright.py", triple]),
        );
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

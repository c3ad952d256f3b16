//! The README's quick start, as a new user runs it: its run command, taken
//! from the README itself (so the two cannot drift apart) and run as
//! written from the repository's folder, must build what it needs, install
//! the classifier's model, and give a node that records, detects and
//! classifies. It builds the release and classify profiles for this
//! machine in `target/`, as a user's first run would (minutes the first
//! time; nothing when they are up to date). The quick start's other
//! command, the test command, runs this test: CI runs it as written, and
//! a test here checks that CI's script holds it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Camera, TempDir, closed_port, drain_into, http, wait_for};
use serde_json::{Value, json};

/// Building both profiles from nothing on a loaded 2-core machine.
const BUILD_TIMEOUT: Duration = Duration::from_secs(40 * 60);

/// The indented (code) lines of the README's "Quick start" section, in
/// order: the commands a new user runs.
fn quick_start_commands(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Quick start"))
        .expect("the README has a Quick start section");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(|l| l.trim().to_owned())
        .collect()
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The quick start's commands after the first (the test command, which
/// runs the test below among all the others) are each a line of CI's
/// script, which runs on a clean clone from the repository's folder: so
/// every command the quick start shows is run as written.
#[test]
fn ci_runs_the_quick_starts_other_commands_as_written() {
    let ci = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .expect("CI's script, .ci/run");
    let commands = quick_start_commands(&readme());
    assert!(
        !commands.is_empty(),
        "the Quick start section shows no command"
    );
    for command in &commands[1..] {
        assert!(
            ci.lines().any(|line| line.trim() == command),
            "the quick start's {command:?} is not run as written by .ci/run:\n{ci}"
        );
    }
}

/// The command's process group (the builds, then the node), killed when
/// the test ends however it ends.
struct Running {
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill on the process group this test made.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(6);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- the command's output ---\n{}",
                self.output.lock().unwrap()
            );
        }
    }
}

fn get(port: u16, path: &str) -> common::Response {
    http::request(port, "GET", path, &[], b"")
}

#[test]
fn the_readme_run_command_gives_a_node_that_classifies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let command = quick_start_commands(&readme())
        .into_iter()
        .next()
        .expect("the Quick start section shows a command");
    eprintln!("the README's run command: {command}");
    let data = TempDir::new("quick-start");
    let started = Instant::now();
    let mut command_line = Command::new("sh");
    // What cargo set for this test, which a user's shell has not: the
    // builds' fingerprints track some (CARGO_MANIFEST_DIR, then OUT_DIR, made
    // ring build again, and the classifier's LTO with it), so the command
    // would not find tests/run.sh's builds done.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if (name == "CARGO" || name.starts_with("CARGO_") || name == "OUT_DIR")
            && name != "CARGO_HOME"
            && name != "CARGO_TARGET_DIR"
        {
            command_line.env_remove(&*name);
        }
    }
    let mut child = command_line
        .args(["-c", &command])
        .current_dir(root)
        // What a user's shell would not have set: the command's own defaults.
        .env_remove("CLASSIFIER")
        .env_remove("MODEL_DIR")
        .env("PORT", "0")
        .env("DATA_DIR", data.path())
        .env("LISTEN_ADDRESS", "127.0.0.1")
        // As the other tests: no relay, no free-space reserve on a test disk.
        .env("RELAY_URL", format!("http://127.0.0.1:{}", closed_port()))
        .env("RECORDINGS_RESERVE", "0")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run sh -c {command:?}: {e}"));
    let output = Arc::new(Mutex::new(String::new()));
    let stdout = child.stdout.take().unwrap();
    drain_into(child.stderr.take().unwrap(), output.clone());
    let running = Running {
        child,
        output: output.clone(),
    };
    let (port_tx, port_rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(port) = line
                .strip_prefix("listening on http://127.0.0.1:")
                .and_then(|p| p.parse::<u16>().ok())
            {
                let _ = port_tx.send(port);
            }
            output.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    let port = port_rx
        .recv_timeout(BUILD_TIMEOUT)
        .unwrap_or_else(|_| panic!("{command:?} started no node within {BUILD_TIMEOUT:?}"));
    eprintln!(
        "{command:?}: the node listened after {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let status = get(port, "/api/status").json();
    assert_eq!(status["classifier"]["installed"], true, "{status}");

    let camera = Camera::start();
    let created = http::request(
        port,
        "POST",
        "/api/cameras",
        &[("Content-Type", "application/json")],
        json!({ "name": "Porch", "rtspUrl": camera.url("", "/scene") })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(created.status, 201, "{created}");
    let created = created.json();
    assert_eq!(created["classify"], true, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let ready = wait_for(Duration::from_secs(60), || {
        let cameras = get(port, "/api/cameras").json();
        let recording = cameras
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == id.as_str() && c["recording"]["state"] == "recording");
        recording && get(port, "/api/status").json()["classifier"]["running"] == true
    });
    assert!(
        ready,
        "the camera did not record, or the classifier did not run, within 60 s"
    );
    // Time for the detector to learn the scene.
    thread::sleep(Duration::from_secs(3));

    camera.slide("person", 8);
    // Listed while it goes on (as motion, until the classifier has seen
    // enough), then finished as the person it was.
    let mut events: Vec<Value> = Vec::new();
    let classified = wait_for(Duration::from_secs(90), || {
        events = get(port, "/api/events").json().as_array().unwrap().clone();
        events.iter().any(|e| {
            e["cameraId"] == id.as_str() && e["inProgress"] == false && e["kind"] == "person"
        })
    });
    assert!(
        classified,
        "no person event within 90 s of the person's photograph: {events:#?}"
    );
    drop(running);
}

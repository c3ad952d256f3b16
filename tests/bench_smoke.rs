//! The benchmark's parts (`benches/bench_*.py`, over `benches/harness/`)
//! in their short smoke mode, each run alone, against this build's binary:
//! each must finish, exit 0 and write exactly its own figures as JSON. Their
//! targets are not enforced here, so the parts run side by side with each
//! other and the other tests, whose load their figures then include. They need Debian's `wrk`, `nginx`
//! (`nginx-light`), `mosquitto` and `mosquitto-clients`; when one is missing
//! the script's error names the package. The classification and busy parts
//! also need nvr-classify (target/classify/nvr-classify), its model
//! (target/model) and the test camera's photographs and footage
//! (target/photos): without them they fail and say which is missing. The UI part needs Node.js, playwright-core and
//! Debian's Chromium, as the browser tests do, and reports the aarch64
//! node's size only where one is built. The ONVIF and alerts parts make a
//! network namespace, so they need root, as the tests of `onvif_events::`
//! and `alerts::` do.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common;

/// Each part's program and the figures it reports, as named in its JSON.
const PARTS: [(&str, &str, &[&str]); 11] = [
    (
        "http",
        "benches/bench_http.py",
        &[
            "status_vs_nginx",
            "status_p99",
            "status_vs_nginx_8",
            "status_vs_nginx_256",
            "events_large_vs_small",
            "whep_overhead",
            "idle_rss",
            "peak_rss",
            "hung_probes_p99_ratio",
            "startup",
            "idle_disk_writes",
        ],
    ),
    (
        "recording",
        "benches/bench_recording.py",
        &[
            "recording_start",
            "recording_cpu",
            "recording_write_ratio",
            "recording_rss",
            "g711_to_aac",
            "reconcile_first_recorder",
            "reconcile_done",
            "dead_cameras_status_p99",
            "dead_cameras_rss",
        ],
    ),
    (
        "motion",
        "benches/bench_motion.py",
        &[
            "detector_frame",
            "detector_masked_ratio",
            "detection_cpu",
            "detection_still_ratio",
            "detection_event_ratio",
            "detection_sixteen_ratio",
            "detection_four_cameras",
            "motion_listed_latency",
            "motion_event_latency",
            "motion_clip_latency",
        ],
    ),
    ("onvif", "benches/bench_onvif.py", &["onvif_event_latency"]),
    ("mqtt", "benches/bench_mqtt.py", &["mqtt_cpu", "mqtt_rss"]),
    (
        "memory",
        "benches/bench_memory.py",
        &["memory_children_per_camera", "memory_node_per_camera"],
    ),
    (
        "classification",
        "benches/bench_classify.py",
        &[
            "classify_crop",
            "classifier_rss",
            "classify_idle_cpu",
            "classify_kind_latency",
        ],
    ),
    (
        "busy",
        "benches/bench_busy.py",
        &[
            "busy_crops",
            "busy_crop_budget",
            "busy_classifier_cpu",
            "second_kind_latency",
        ],
    ),
    (
        "ui",
        "benches/bench_ui.py",
        &[
            "ui_weight",
            "board_binary",
            "grid_cpu",
            "grid_rss",
            "grid_other_requests",
        ],
    ),
    (
        "events",
        "benches/bench_events.py",
        &[
            "events_page",
            "events_page_camera",
            "events_page_kind",
            "events_page_unreviewed",
            "events_page_filtered",
        ],
    ),
    (
        "alerts",
        "benches/bench_alerts.py",
        &["alert_latency", "alert_cpu", "alert_flood_status_p99"],
    ),
];

/// Whether the part reports `figure` in this checkout: the aarch64 node's
/// size only where one is built (`cargo build --release --target
/// aarch64-unknown-linux-musl`, which `tests/run.sh` does), as `tests/arm.rs`
/// finds it.
fn reported_here(figure: &str) -> bool {
    if figure != "board_binary" {
        return true;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    target
        .join("aarch64-unknown-linux-musl/release/nvr-node")
        .is_file()
}

/// Runs `program` (a part's own file, or bench.py with `args` naming parts)
/// in smoke mode; checks that it reports exactly the figures of `parts`.
fn smoke_run(program: &str, args: &[&str], parts: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Not target/bench.json: that is where a real run's figures go.
    let json: PathBuf = std::env::temp_dir().join(format!(
        "nvr-node-bench-smoke-{}-{}.json",
        std::process::id(),
        parts.join("-")
    ));
    let _ = std::fs::remove_file(&json);
    let mut command = Command::new("/usr/bin/python3");
    command
        .arg(root.join(program))
        .args(args)
        .arg("--smoke")
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_nvr-node"))
        .arg("--json")
        .arg(&json)
        .current_dir(root);
    let started = Instant::now();
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    eprintln!(
        "{program} {args:?} --smoke took {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        output.status.success(),
        "{program} failed (a missing tool is named with its apt package: wrk, nginx-light, \
         mosquitto, mosquitto-clients; a missing classifier, model or photograph by its path)\n\
         command: {command:?}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );

    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("{program} wrote no {}: {e}", json.display()));
    let _ = std::fs::remove_file(&json);
    let report: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(report["smoke"], true, "{text}");
    assert_eq!(report["parts"], serde_json::json!(parts), "{text}");
    assert!(report["machine"]["cpus"].is_u64(), "{text}");
    assert!(report["machine"]["kernel"].is_string(), "{text}");
    assert!(report["machine"]["memory_mib"].is_u64(), "{text}");
    assert!(report["machine"]["load_before"].is_array(), "{text}");
    // Where and when: this checkout's commit, its changes, the date.
    let commit = report["commit"].as_str().unwrap_or_default();
    assert!(
        commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{text}"
    );
    assert!(report["uncommitted"].is_array(), "{text}");
    assert!(
        report["date"]
            .as_str()
            .is_some_and(|d| d.ends_with("+00:00")),
        "{text}"
    );
    let mut wanted: Vec<&str> = PARTS
        .iter()
        .filter(|(name, _, _)| parts.contains(name))
        .flat_map(|(_, _, figures)| figures.iter().copied())
        .filter(|figure| reported_here(figure))
        .collect();
    // serde_json's map is sorted by name: compare as sets.
    wanted.sort_unstable();
    let reported: Vec<&str> = report["figures"]
        .as_object()
        .unwrap_or_else(|| panic!("no figures: {text}"))
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(reported, wanted, "{text}");
    for name in wanted {
        let figure = &report["figures"][name];
        assert!(figure["value"].is_number(), "figure {name}: {figure}");
        assert!(figure["met"].is_boolean(), "figure {name}: {figure}");
        assert!(figure["unit"].is_string(), "figure {name}: {figure}");
        assert!(figure["target"].is_string(), "figure {name}: {figure}");
    }
}

/// Runs the part `name` from its own file.
fn part_alone(name: &str) {
    let (_, program, _) = PARTS.iter().find(|(part, _, _)| *part == name).unwrap();
    smoke_run(program, &[], &[name]);
}

#[test]
fn the_http_part_run_alone_reports_its_own_figures() {
    part_alone("http");
}

#[test]
fn the_recording_part_run_alone_reports_its_own_figures() {
    part_alone("recording");
}

#[test]
fn the_motion_part_run_alone_reports_its_own_figures() {
    part_alone("motion");
}

/// The camera's ONVIF motion events through the device stand-in, in a
/// network namespace of the part's own (so as root).
#[test]
fn the_onvif_part_run_alone_reports_its_own_figures() {
    part_alone("onvif");
}

#[test]
fn the_mqtt_part_run_alone_reports_its_own_figures() {
    part_alone("mqtt");
}

#[test]
fn the_memory_part_run_alone_reports_its_own_figures() {
    part_alone("memory");
}

#[test]
fn the_ui_part_run_alone_reports_its_own_figures() {
    part_alone("ui");
}

#[test]
fn the_events_part_run_alone_reports_its_own_figures() {
    part_alone("events");
}

/// Through bench.py, naming the part: the classifier's figures, measured
/// with the real nvr-classify and model, or a failure that names what is
/// missing. The classifier is the one the tests run, built for speed.
#[test]
fn classification_part_reports_its_figures() {
    let classifier = common::classifier::program();
    let args = ["classification", "--classifier", &classifier];
    smoke_run("benches/bench.py", &args, &["classification"]);
}

/// Through bench.py, naming the part: the classifier on a busy and a quiet
/// real scene, and a second thing's kind, with the real nvr-classify.
#[test]
fn the_busy_part_reports_its_figures() {
    let classifier = common::classifier::program();
    let args = ["busy", "--classifier", &classifier];
    smoke_run("benches/bench.py", &args, &["busy"]);
}

/// Through bench.py, naming the part: alerts to far ends in a network
/// namespace of its own (so as root), with the real classifier.
#[test]
fn the_alerts_part_reports_its_figures() {
    let classifier = common::classifier::program();
    let args = ["alerts", "--classifier", &classifier];
    smoke_run("benches/bench.py", &args, &["alerts"]);
}

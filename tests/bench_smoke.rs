//! The benchmark script `benches/bench.py` in its short smoke mode, against
//! this build's binary: it must finish, exit 0 and write every figure as JSON.
//! Its targets are not enforced here. It needs Debian's `wrk` and `nginx`
//! (`nginx-light`); when one is missing the script's error names the package.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The figures the script reports, as named in its JSON.
const FIGURES: [&str; 24] = [
    "status_vs_nginx",
    "status_p99",
    "events_large_vs_small",
    "whep_overhead",
    "idle_rss",
    "peak_rss",
    "hung_probes_p99_ratio",
    "startup",
    "idle_disk_writes",
    "recording_start",
    "recording_cpu",
    "recording_write_ratio",
    "recording_rss",
    "detector_frame",
    "detection_cpu",
    "detection_four_cameras",
    "motion_event_latency",
    "motion_clip_latency",
    "mqtt_cpu",
    "mqtt_rss",
    "reconcile_first_recorder",
    "reconcile_done",
    "dead_cameras_status_p99",
    "dead_cameras_rss",
];

#[test]
fn smoke_run_reports_every_figure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Not target/bench.json: that is where a real run's figures go.
    let json =
        std::env::temp_dir().join(format!("nvr-node-bench-smoke-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&json);
    let mut command = Command::new("/usr/bin/python3");
    command
        .arg(root.join("benches/bench.py"))
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
        "bench.py --smoke took {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        output.status.success(),
        "bench.py failed (a missing tool is named with its apt package: wrk, nginx-light)\n\
         command: {command:?}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );

    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("bench.py wrote no {}: {e}", json.display()));
    let _ = std::fs::remove_file(&json);
    let report: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(report["smoke"], true, "{text}");
    assert!(report["machine"]["cpus"].is_u64(), "{text}");
    assert!(report["machine"]["kernel"].is_string(), "{text}");
    for name in FIGURES {
        let figure = &report["figures"][name];
        assert!(figure["value"].is_number(), "figure {name}: {figure}");
        assert!(figure["met"].is_boolean(), "figure {name}: {figure}");
        assert!(figure["unit"].is_string(), "figure {name}: {figure}");
        assert!(figure["target"].is_string(), "figure {name}: {figure}");
    }
}

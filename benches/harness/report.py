"""The figures' report and the command line: the table's order, the
markdown table, where and when a run measured, the JSON and
benches/results.json, the options every part shares, and main."""

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from . import standins
from .base import ROOT, BenchError
from .processes import Cleanup
from .run import Bench, Settings, find_tools

# The latest full run of each part, kept in the repository (--record).
RESULTS = ROOT / "benches/results.json"
# The figures in the order of the table (the order of the issues' items),
# whichever parts measured them.
FIGURES = (
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
    "recording_start",
    "recording_cpu",
    "recording_write_ratio",
    "recording_rss",
    "g711_to_aac",
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
    "onvif_event_latency",
    "mqtt_cpu",
    "mqtt_rss",
    "memory_children_per_camera",
    "memory_node_per_camera",
    "reconcile_first_recorder",
    "reconcile_done",
    "dead_cameras_status_p99",
    "dead_cameras_rss",
    "classify_crop",
    "classifier_rss",
    "classify_idle_cpu",
    "classify_kind_latency",
    "busy_crops",
    "busy_crop_budget",
    "busy_classifier_cpu",
    "second_kind_latency",
    "ui_weight",
    "board_binary",
    "grid_cpu",
    "grid_rss",
    "grid_other_requests",
    "events_page",
    "events_page_camera",
    "events_page_kind",
    "events_page_unreviewed",
    "events_page_filtered",
    "alert_latency",
    "alert_cpu",
    "alert_flood_status_p99",
    "soak_rss_kib_growth",
    "soak_fds_growth",
    "soak_threads_growth",
    "soak_children_growth",
    "soak_footage_lost",
    "soak_events_in_progress",
    "soak_status_p99",
)


def number(value):
    """A figure as text: whole above 100, three significant digits below."""
    if isinstance(value, list):
        return " ".join(number(v) for v in value)
    if isinstance(value, (int, float)) and abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def measured(bench):
    """The names of the figures measured, in the table's order."""
    return [name for name in FIGURES if name in bench.figures]


def table(bench):
    """The markdown table of the figures."""
    lines = ["smoke run: targets not enforced", ""] if bench.settings.smoke else []
    lines += ["| measurement | figure | target | result | details |", "|---|---|---|---|---|"]
    shown = ("label", "value", "unit", "target", "met")
    for figure in (bench.figures[name] for name in measured(bench)):
        details = ", ".join(f"{k} {number(v)}" for k, v in figure.items() if k not in shown)
        value = f"{number(figure['value'])} {figure['unit']}".strip()
        met = "met" if figure["met"] else "not met"
        lines.append(f"| {figure['label']} | {value} | {figure['target']} | {met} | {details} |")
    return "\n".join(lines)


def git(*args):
    """What git says in the repository, or None without git or a checkout."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def provenance():
    """Where and when a run measures, taken as it starts: the checkout's
    commit and its tracked files changed since (the figures are that
    commit's only when there are none; benches/results.json itself aside),
    the date, and the machine, with its load average (a benchmark wants an
    idle machine)."""
    uname = os.uname()
    meminfo = Path("/proc/meminfo").read_text()
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    changed = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": (git("rev-parse", "HEAD") or "").strip() or None,
        "uncommitted": None
        if changed is None
        else [
            name for name in (line[3:] for line in changed.splitlines()) if ROOT / name != RESULTS
        ],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": model.group(1).strip() if model else uname.machine,
            "memory_mib": int(re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.M).group(1)) // 1024,
            "kernel": f"{uname.sysname} {uname.release} {uname.version} {uname.machine}",
            "load_before": [round(load, 2) for load in os.getloadavg()],
        },
    }


def write_json(bench, path, parts, where):
    """Writes the figures, the parts that measured them, and where and when
    they were measured (`provenance()`), to `path`."""
    report = {
        "smoke": bench.settings.smoke,
        "binary": str(bench.source_binary),
        "parts": parts,
        **where,
        "figures": {name: bench.figures[name] for name in measured(bench)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


def record(bench, by_part, where):
    """Puts each part's figures, with where and when they were measured, in
    place of that part's in benches/results.json; the other parts keep
    theirs."""
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    parts = results.setdefault("parts", {})
    for part, names in by_part.items():
        parts[part] = {**where, "figures": {name: bench.figures[name] for name in FIGURES if name in names}}
    # In the table's order, whichever parts this run took.
    first = {name: min(map(FIGURES.index, part["figures"]), default=len(FIGURES)) for name, part in parts.items()}
    results["parts"] = {name: parts[name] for name in sorted(parts, key=first.get)}
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


def parse_args(parts, description):
    """The command line; `parts` are the part modules the program can run."""
    names = [part.NAME for part in parts]
    parser = argparse.ArgumentParser(description=description)
    if len(parts) > 1:
        parser.add_argument(
            "parts",
            nargs="*",
            metavar="PART",
            help=f"the parts to run, in the table's order: {', '.join(names)} (default: all)",
        )
    parser.add_argument("--smoke", action="store_true", help="short run; targets not enforced")
    parser.add_argument(
        "--record",
        action="store_true",
        help="also put the figures of each part run in benches/results.json, in place of that part's "
        "(a full run of a committed checkout only)",
    )
    parser.add_argument(
        "--binary",
        type=Path,
        default=ROOT / "target/release/nvr-node",
        help="the nvr-node binary (default target/release/nvr-node)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=ROOT / "target/bench.json",
        help="where to write the figures (default target/bench.json)",
    )
    parser.add_argument(
        "--classifier",
        type=Path,
        default=ROOT / "target/classify/nvr-classify",
        help="the nvr-classify binary (default target/classify/nvr-classify)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=ROOT / "target/model",
        help="the classifier's model folder (default target/model)",
    )
    parser.add_argument(
        "--standin",
        type=Path,
        help="the nvr-standin program (crates/standins; default: built with cargo into target/standins)",
    )
    args = parser.parse_args()
    if args.record and args.smoke:
        parser.error("--record keeps full runs only, not --smoke")
    wanted = getattr(args, "parts", None) or names
    unknown = [name for name in wanted if name not in names]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)}; the parts: {', '.join(names)}")
    args.chosen = [part for part in parts if part.NAME in wanted]
    return args


def exit_on_signal(signum, _frame):
    """Turns SIGTERM or SIGHUP into an exit that runs the clean-up."""
    raise SystemExit(128 + signum)


def main(parts, description):
    """Runs the parts the command line names (all of `parts` by default), each
    after the other on one Bench; returns the exit status. A part may have a
    `check(bench)` that looks for what it needs: all run first, so that a
    missing program fails the run before the others' minutes are spent."""
    args = parse_args(parts, description)
    binary = args.binary.resolve()
    if not os.access(binary, os.X_OK):
        print(f"bench: no node binary at {binary}; build it with `cargo build --release`", file=sys.stderr)
        return 2
    where = provenance()
    if args.record:
        if not where["commit"] or where["uncommitted"]:
            print(
                "bench: --record wants a committed checkout, so that the figures are its commit's: "
                f"commit {where['commit']}, changed {where['uncommitted']}",
                file=sys.stderr,
            )
            return 1
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    cleanup = Cleanup()
    bench = None
    try:
        bench = Bench(
            Settings(args.smoke),
            binary,
            find_tools(),
            cleanup,
            classifier=args.classifier.resolve(),
            model_dir=args.model.resolve(),
            standin=standins.program(args.standin and args.standin.resolve()),
        )
        for part in args.chosen:
            if hasattr(part, "check"):
                part.check(bench)
        by_part = {}
        for part in args.chosen:
            before = set(bench.figures)
            part.run(bench)
            by_part[part.NAME] = set(bench.figures) - before
    except (BenchError, OSError, subprocess.TimeoutExpired) as e:
        output = bench.unstopped_nodes_output() if bench else ""
        print(f"bench: failed: {e}{output}", file=sys.stderr)
        if bench and bench.figures:
            # Kept for reading, not as a result: the run as a whole failed.
            print("figures measured before the failure:")
            print(table(bench))
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    finally:
        cleanup.run()
    print(table(bench))
    write_json(bench, args.json, [part.NAME for part in args.chosen], where)
    if args.record:
        record(bench, by_part, where)
        print(f"recorded in {RESULTS.relative_to(ROOT)}")
    return 0

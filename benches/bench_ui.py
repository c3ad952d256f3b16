#!/usr/bin/python3
"""The benchmark's UI part: the UI's weight in the binary (www/ as build.rs
embeds it, against main's, and what each view costs), the aarch64 node's
size where one is built, and what a browser showing the live grid of 4 cameras costs the node
(its CPU and RSS against the same node with no browser, and the requests
the page makes).

Run alone: python3 benches/bench_ui.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py ui).
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
from harness import (
    HD_PATH,
    ROOT,
    SUB_PATH,
    BenchError,
    Node,
    Relay,
    add_cameras,
    cpu_seconds,
    expect,
    proc_fields,
    progress,
    request,
)

NAME = "ui"
# Its figures, in the table's order; board_binary only where an aarch64 node is built.
FIGURES = ("ui_weight", "board_binary", "grid_cpu", "grid_rss", "grid_other_requests")
# The UI's weight is also given against this branch's (its merge base with the checkout).
REFERENCE = "main"
# What the UI may weigh, gzipped: its share of the boards' 3 MiB. Before
# issue 33 it weighed 54 KB, and the aarch64 node left 50 to 75 KB of the 3 MiB.
UI_MAX_BYTES = 64 * 1024
# The boards' limit (tests/arm.rs checks it in the test command too).
BOARD_MAX_BYTES = 3 * 1024 * 1024
GRID_CAMERAS = 4
# The modules that draw each view (www/app.js loads them all at start, so the
# page carries every view; this says what each adds). A view's weight is
# theirs and that of the modules only they import (followed through imports,
# not into another view's); the rest (the page, its style sheet, the shell's
# scripts, what views share, the pop-out live.html) is "shared".
VIEW_MODULES = {
    "live": ("grid.js", "liveview.js"),
    "review": ("events.js", "clip.js"),
    "recordings": ("recordings.js",),
    "settings": ("cameras.js", "addform.js", "discover.js", "alerts.js", "settings.js"),
}
GRID_SCRIPT = ROOT / "benches/grid_watch.mjs"


def board_binary():
    """Where `cargo build --release --target aarch64-unknown-linux-musl` puts the node."""
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return target / "aarch64-unknown-linux-musl/release/nvr-node"


def gzip_size(data):
    """Bytes of `data` compressed by the system's `gzip -9 -n`: the measure
    that compares the checkout's www/ with REFERENCE's (see reference_weight)."""
    done = subprocess.run(["gzip", "-9", "-n", "-c"], input=data, capture_output=True, check=True)
    return len(done.stdout)


def git(*args):
    """What git says in the checkout (bytes), or None."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=30)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def www_files():
    """The files build.rs embeds: every file under www/ whose name does not start with a dot."""
    return sorted(
        path for path in (ROOT / "www").rglob("*") if path.is_file() and not path.name.startswith(".")
    )


def reference_weight():
    """(commit, gzipped bytes) of www/ at the merge base of the checkout and
    REFERENCE, each file gzipped whole by `gzip -9` (gzip_size); (None, None)
    without git or that branch."""
    base = git("merge-base", "HEAD", REFERENCE)
    if base is None:
        return None, None
    commit = base.decode().strip()
    names = git("ls-tree", "-r", "--name-only", commit, "www/").decode().split()
    names = [name for name in names if not Path(name).name.startswith(".")]
    return commit, sum(gzip_size(git("show", f"{commit}:{name}")) for name in names)


def view_weights(sizes):
    """{view: gzipped bytes} of VIEW_MODULES, with "shared" for the rest."""
    imports = {
        name: re.findall(r"""from\s+['"]\./([\w.-]+\.js)['"]""", (ROOT / "www" / name).read_text())
        for name in sizes
        if name.endswith(".js")
    }
    roots = {module: view for view, modules in VIEW_MODULES.items() for module in modules}
    owners = {}
    for view, modules in VIEW_MODULES.items():
        seen, todo = set(), list(modules)
        while todo:
            module = todo.pop()
            if module in seen or roots.get(module, view) != view:
                continue
            seen.add(module)
            todo.extend(imports.get(module, []))
        for module in seen:
            owners.setdefault(module, set()).add(view)
    weights = {view: 0 for view in [*VIEW_MODULES, "shared"]}
    for name, size in sizes.items():
        views = owners.get(name, set())
        weights[next(iter(views)) if len(views) == 1 else "shared"] += size
    return weights


def served_sizes(bench, files):
    """{name: bytes} of each UI file as the node serves it from its binary
    (build.rs's own output: gzipped, without comments and indentation)."""
    node = Node(bench, bench.temp_dir("ui-node")).wait_listening()
    sizes = {}
    for path in files:
        name = path.relative_to(ROOT / "www").as_posix()
        status, body = request(node.port, "GET", f"/{name}", headers={"Accept-Encoding": "gzip"})
        expect(status, body, 200, f"GET /{name}")
        sizes[name] = len(body)
    node.stop()
    return sizes


def measure_weight(bench):
    """The UI's gzipped bytes in the binary, the bytes added since REFERENCE,
    and the aarch64 node's size where it is built."""
    files = www_files()
    sizes = served_sizes(bench, files)
    total = sum(sizes.values())
    commit, reference = reference_weight()
    largest = sorted(sizes, key=sizes.get, reverse=True)[:3]
    bench.add_figure(
        "ui_weight",
        f"the UI in the binary (www/ as the node serves it: Zopfli's gzip, without comments and indentation), {len(files)} files",
        total,
        "bytes",
        ("<=", UI_MAX_BYTES),
        raw_bytes=sum(path.stat().st_size for path in files),
        reference=f"{REFERENCE} at {commit[:12]}" if commit else f"no {REFERENCE}",
        reference_bytes=reference,
        # Both sides by the same measure: the served bytes of REFERENCE would
        # need its build.
        added_bytes=None if reference is None else sum(gzip_size(p.read_bytes()) for p in files) - reference,
        largest=", ".join(f"{name} {sizes[name]}" for name in largest),
        views=", ".join(f"{view} {size}" for view, size in view_weights(sizes).items()),
    )
    binary = board_binary()
    if binary.is_file():
        built = binary.stat().st_mtime
        bench.add_figure(
            "board_binary",
            f"the aarch64 node ({binary.relative_to(ROOT) if binary.is_relative_to(ROOT) else binary})",
            binary.stat().st_size,
            "bytes",
            ("<=", BOARD_MAX_BYTES),
            headroom_bytes=BOARD_MAX_BYTES - binary.stat().st_size,
            # A build older than the UI does not hold it as it is.
            older_than_www=built < max(path.stat().st_mtime for path in files),
        )
    else:
        progress(f"ui: no aarch64 node at {binary}: its size is not measured")


class RssSampler:
    """The node's VmRSS read every 0.2 s while it runs, in MiB."""

    def __init__(self, pid):
        self.pid = pid
        self.samples = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.done.is_set():
            self.samples.append(proc_fields(self.pid, "status")["VmRSS"] / 1024)
            self.done.wait(0.2)

    def stop(self):
        """Stops sampling; returns (peak, median)."""
        self.done.set()
        self.thread.join()
        return max(self.samples), statistics.median(self.samples)


def window_without_browser(node, seconds):
    """The node's CPU seconds and (peak, median) RSS over `seconds` with no browser."""
    before, sampler = cpu_seconds(node.pid), RssSampler(node.pid)
    time.sleep(seconds)
    used = cpu_seconds(node.pid) - before
    return {"cpu_seconds": used, **dict(zip(("peak_mib", "median_mib"), sampler.stop()))}


def window_with_browser(bench, node, ids, seconds):
    """The same while Chromium shows the grid (benches/grid_watch.mjs), the
    window starting once every tile plays; with the requests the page made."""
    command = [
        bench.tools["node"], str(GRID_SCRIPT), "--url", f"http://127.0.0.1:{node.port}/",
        "--cameras", ",".join(ids), "--seconds", str(seconds),
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    bench.cleanup.add(lambda: harness.stop_process(proc))
    lines, started, window = [], None, None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.strip() == "window start":
            started = (cpu_seconds(node.pid), RssSampler(node.pid))
        elif line.strip() == "window end" and started:
            before, sampler = started
            used = cpu_seconds(node.pid) - before
            window = dict(zip(("cpu_seconds", "peak_mib", "median_mib"), (used, *sampler.stop())))
    proc.wait(timeout=30)
    verdict = next((json.loads(line) for line in reversed(lines) if line.startswith("{")), {"ok": False})
    if proc.returncode != 0 or not verdict.get("ok") or window is None:
        output = "\n".join(lines)
        raise BenchError(f"{' '.join(command)} failed ({proc.returncode}):\n{output}\n{node.tail()}")
    return {**window, **verdict}


def grid_node(bench):
    """A node with a real go2rtc as its relay and 4 cameras on the test
    camera (main /hd, sub /main), neither recording nor detecting, all online."""
    camera = bench.camera()
    node = Node(bench, bench.temp_dir("grid-node"), relay=Relay(bench)).wait_listening()
    ids = add_cameras(node.port, [camera.url(HD_PATH)] * GRID_CAMERAS, GRID_CAMERAS, sub_url=camera.url(SUB_PATH))
    deadline = time.monotonic() + 60
    while not all(c["online"] for c in json.loads(node.get("/api/cameras"))):
        if time.monotonic() > deadline:
            raise BenchError(f"the grid's cameras are not online after 60 s:\n{node.tail()}")
        time.sleep(0.2)
    return node, ids


def measure_grid(bench):
    """The node's CPU and RSS with no browser, then with the grid open, each
    over the same seconds, `grid_runs` times in turns on one node."""
    settings = bench.settings
    seconds = settings.grid_seconds
    node, ids = grid_node(bench)
    time.sleep(settings.memory_settle_seconds)
    runs = []
    for number in range(settings.grid_runs):
        progress(f"ui: {seconds} s with no browser, then with the grid open ({number + 1} of {settings.grid_runs})")
        none = window_without_browser(node, seconds)
        runs.append({"none": none, "grid": window_with_browser(bench, node, ids, seconds)})
    node.stop()

    def median(side, key):
        return statistics.median(run[side][key] for run in runs)

    def requests(phase, kind):
        return statistics.median(run["grid"][phase][kind] for run in runs)

    cpu_none, cpu_grid = median("none", "cpu_seconds"), median("grid", "cpu_seconds")
    bench.add_figure(
        "grid_cpu",
        f"node CPU, the grid of {GRID_CAMERAS} cameras open in Chromium − no browser, "
        f"{seconds} s each, median of {len(runs)}",
        100 * (cpu_grid - cpu_none) / seconds,
        "% of a core",
        ("<", 0.5),
        cpu_seconds_grid=cpu_grid,
        cpu_seconds_none=cpu_none,
        status_polls=requests("watching", "status"),
        events_polls=requests("watching", "events"),
        whep_posts=requests("watching", "whepPost"),
        opening_whep_posts=requests("opening", "whepPost"),
        opening_status_polls=requests("opening", "status"),
        opening_other_requests=requests("opening", "other"),
        seconds=seconds,
        runs=len(runs),
    )
    bench.add_figure(
        "grid_rss",
        f"node peak RSS, the grid open − no browser, {seconds} s each, median of {len(runs)}",
        median("grid", "peak_mib") - median("none", "peak_mib"),
        "MiB",
        ("<", 1),
        peak_grid_mib=median("grid", "peak_mib"),
        median_grid_mib=median("grid", "median_mib"),
        peak_none_mib=median("none", "peak_mib"),
        median_none_mib=median("none", "median_mib"),
    )
    others = sorted({path for run in runs for path in run["grid"]["other"]})
    bench.add_figure(
        "grid_other_requests",
        "requests of the open grid to the node besides status and events polls and WHEP, while watched",
        max(run["grid"]["watching"]["other"] for run in runs),
        "",
        ("=", 0),
        **({"paths": ", ".join(others)} if others else {}),
    )


def check(bench):
    """The grid needs Node.js (playwright-core's) and Debian's Chromium."""
    bench.tools["node"] = shutil.which("node")
    missing = [] if bench.tools["node"] else ["node (apt-get install nodejs)"]
    if not os.access("/usr/bin/chromium", os.X_OK):
        missing.append("/usr/bin/chromium (apt-get install chromium)")
    if not (ROOT / "tests/e2e/node_modules/playwright-core").is_dir():
        missing.append("playwright-core (cd tests/e2e && npm ci)")
    if missing:
        raise BenchError(f"the grid needs {', '.join(missing)}")


def run(bench):
    """The UI's weight, then the grid's cost."""
    progress("ui: the UI's weight")
    measure_weight(bench)
    progress(f"ui: the node with the grid of {GRID_CAMERAS} cameras open in Chromium against none")
    measure_grid(bench)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

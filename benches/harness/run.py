"""One benchmark run: its settings (full or smoke), the tools it needs, its
temporary folders, and the figures it measures."""

import os
import shutil
import tempfile
from pathlib import Path

from .base import BenchError
from .processes import TestCamera

TOOLS = {
    "wrk": "apt-get install wrk",
    "nginx": "apt-get install nginx-light (or nginx)",
    "mosquitto": "apt-get install mosquitto",
    "mosquitto_passwd": "apt-get install mosquitto",
    "mosquitto_sub": "apt-get install mosquitto-clients",
}


class Settings:
    """Durations and sizes of one run: the full benchmark or the short smoke run."""

    def __init__(self, smoke):
        self.smoke = smoke
        self.wrk_seconds = 2 if smoke else 10
        # Status is measured in turns with nginx, the median reported.
        self.status_runs = 1 if smoke else 3
        self.isolation_wrk_seconds = 2 if smoke else 5
        self.large_events = 10_000 if smoke else 1_000_000
        self.whep_requests = 200 if smoke else 2000
        self.startup_launches = 3 if smoke else 5
        self.idle_seconds = 5 if smoke else 60
        self.recording_seconds = 10 if smoke else 60
        self.detection_seconds = 10 if smoke else 60
        self.footage_files = 8_000 if smoke else 100_000
        self.footage_runs = 1 if smoke else 3
        self.dead_cameras_seconds = 8 if smoke else 60
        # The classifier's crops: runs of its own process (the median taken),
        # the crops timed in each.
        self.classify_runs = 1 if smoke else 3
        self.classify_crops = 30 if smoke else 300
        self.classify_idle_seconds = 10 if smoke else 60
        # The busy part: seconds each scene is watched.
        self.busy_seconds = 10 if smoke else 60
        # The memory part: nodes measured (the median taken), the cameras
        # each grows to, and the seconds let settle and of CPU read at the most.
        self.memory_runs = 1 if smoke else 3
        self.memory_counts = (1, 2, 4) if smoke else (1, 8, 32)
        self.memory_settle_seconds = 3 if smoke else 10
        self.memory_cpu_seconds = 3 if smoke else 10
        # The UI part: seconds the node is watched with no browser and with
        # the grid open, in turns, `grid_runs` times (the median taken).
        self.grid_seconds = 5 if smoke else 60
        self.grid_runs = 1 if smoke else 3
        # The events part: events stored, and the requests timed for each filter.
        self.paging_events = 20_000 if smoke else 1_000_000
        self.paging_requests = 100 if smoke else 1000
        # The ONVIF part: the camera's motion events timed (the median taken).
        self.onvif_runs = 1 if smoke else 3


class Bench:
    """One benchmark run: its settings, tools, temporary folders and figures."""

    def __init__(self, settings, binary, tools, cleanup, classifier=None, model_dir=None, standin=None):
        self.settings = settings
        self.tools = tools
        # The nvr-standin program, which the relay stand-ins and the silent camera run.
        self.standin = standin
        self.cleanup = cleanup
        self.root = Path(tempfile.mkdtemp(prefix="nvr-node-bench-"))
        # nginx started by root reads its files as an unprivileged worker.
        self.root.chmod(0o711)
        cleanup.add(lambda: shutil.rmtree(self.root, ignore_errors=True))
        # A copy, so that a rebuild during the run cannot mix two versions.
        self.source_binary = binary
        self.binary = shutil.copy2(binary, self.root / "nvr-node")
        self.figures = {}
        self.nodes = []
        # nvr-classify and its model folder, for the classification part.
        self.classifier = classifier
        self.model_dir = model_dir
        self.test_camera = None

    def camera(self):
        """The GStreamer test camera, started by the first part that needs it
        and shared by the later ones."""
        if self.test_camera is None:
            self.test_camera = TestCamera(self)
        return self.test_camera

    def unstopped_nodes_output(self):
        """What every node not stopped by the run printed last, for error messages: one
        that exited, and one still running (a failed request's reason is in its log)."""
        output = ""
        for node in self.nodes:
            if node.stopped:
                continue
            code = node.proc.poll()
            state = "is running" if code is None else f"exited with status {code}"
            output += f"\n--- node {node.pid} {state}; its last output ---\n{node.tail()}"
        return output

    def temp_dir(self, name):
        """A new folder of its own under the run's temporary folder (`name`,
        or `name-2`, `name-3`… when one is asked for again)."""
        folder, n = self.root / name, 1
        while folder.exists():
            n += 1
            folder = self.root / f"{name}-{n}"
        folder.mkdir()
        return folder

    def add_figure(self, name, label, value, unit, target, **raw):
        """Records a figure; `target` is (operator, limit) with operator one of < <= >= =."""
        operator, limit = target
        met = {"<": value < limit, "<=": value <= limit, ">=": value >= limit, "=": value == limit}
        symbol = {"<": "<", "<=": "≤", ">=": "≥", "=": "="}[operator]
        # A whole limit in full (3,145,728 bytes), not as 3.14573e+06.
        shown = f"{limit:,}" if isinstance(limit, int) else f"{limit:g}"
        self.figures[name] = {
            "label": label,
            "value": round(value, 3),
            "unit": unit,
            "target": f"{symbol} {shown} {unit}".strip(),
            "met": met[operator],
            **{k: round(v, 3) if isinstance(v, float) else v for k, v in raw.items()},
        }


def classifier_missing(bench):
    """What of the classifier and its model a part cannot find, each named."""
    missing = []
    if not os.access(bench.classifier, os.X_OK):
        missing.append(f"classifier not built: no program at {bench.classifier} (--classifier PATH)")
    model = bench.model_dir
    if not (model / "labels.txt").is_file() or not any(model.glob("model.*")):
        missing.append(
            f"classifier not installed: no model.* and labels.txt in {model} "
            f"(bash deploy/model/install-model.sh {model}, or --model PATH)"
        )
    return missing


def find_tools():
    """Paths of wrk and nginx; raises BenchError naming the Debian package of a missing one."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    tools = {name: shutil.which(name, path=search) for name in TOOLS}
    missing = [f"{name} is missing: {TOOLS[name]}" for name, path in tools.items() if not path]
    if missing:
        raise BenchError("; ".join(missing))
    return tools

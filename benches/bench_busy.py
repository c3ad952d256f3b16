#!/usr/bin/python3
"""The benchmark's busy-scene part (issue 49): the classifier's crops a
second and CPU on a busy real scene (the test camera's /busy, a motorway
with a dozen cars moving at once) against a quiet one (/footage, a
driveway where one car leaves a pass), the per-camera crop budget held in
every few seconds of it; and the time from a second thing's first moving
frame to its kind, a person crossing while a car already moves.

The crops are counted where they are answered: the node runs a wrapper in
the classifier's place (a program named nvr-classify in the part's own
folder) that runs the real one with the node's stdin and arguments and
passes each line of its answers on, noting when each came; the CPU is the
real classifier's own.

It needs nvr-classify (--classifier, default target/classify/nvr-classify),
its model folder (--model, default target/model), and the test camera's
footage and photographs (target/photos, made by tests/camera/get_photos.sh
target/photos); when one is missing the run fails and says which, before
any part runs: no figure is made up. The second thing's latency needs the
test camera's `cross` command (two slides at once); a camera without it
fails the part, naming it.

Run alone: python3 benches/bench_busy.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py busy).
"""

import json
import os
import sys
import time
from pathlib import Path

import harness
from harness import (
    BenchError,
    Node,
    add_cameras,
    cpu_seconds,
    iso_ms,
    progress,
    wait_for_process,
)

NAME = "busy"
FIGURES = (
    "busy_crops",
    "busy_crop_budget",
    "busy_classifier_cpu",
    "second_kind_latency",
)
PHOTOS = harness.ROOT / "target/photos"
# The scenes: mount, file it serves (target/photos).
SCENES = {"busy": (harness.BUSY_PATH, "busy.mp4"), "quiet": (harness.FOOTAGE_PATH, "prius_movie.mov")}
# The photographs the second thing's latency crosses the scene with.
SLIDES = ("car_grey", "person")
# A camera's crops a second at the most (docs/design/classification.md: three
# a second while an event begins, its regions sharing them), and the window
# over which the budget is read: the classifier answers a burst of crops
# together, so one second of answers can hold more than a second's crops.
BUDGET_PER_SECOND = 3
BUDGET_WINDOW_S = 5
# The wrapper the node runs as its classifier: the real one's answers passed
# on, each noted (ms since the epoch) in a file.
WRAPPER = """#!/usr/bin/python3
import ctypes, signal, subprocess, sys, time
# Killed with the node, as the node's own classifier is.
ctypes.CDLL(None).prctl(1, signal.SIGKILL)
child = subprocess.Popen([{real!r}, *sys.argv[1:]], stdout=subprocess.PIPE,
                         preexec_fn=lambda: ctypes.CDLL(None).prctl(1, signal.SIGKILL))
with open({log!r}, "a") as log:
    for line in child.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        if line.startswith(b"{{"):
            log.write("%d\\n" % int(time.time() * 1000))
            log.flush()
sys.exit(child.wait())
"""


def check(bench):
    """Raises BenchError naming each thing the part needs and cannot find."""
    missing = harness.classifier_missing(bench)
    files = [file for _, file in SCENES.values()] + [f"{name}.png" for name in SLIDES]
    absent = [file for file in files if not (PHOTOS / file).is_file()]
    if absent:
        missing.append(
            f"footage and photographs missing in {PHOTOS}: {', '.join(absent)} "
            "(bash tests/camera/get_photos.sh target/photos)"
        )
    if missing:
        raise BenchError("; ".join(missing))


class CountedNode:
    """A node whose classifier is the counting wrapper, with one camera on
    `url` detecting and classifying."""

    def __init__(self, bench, name, url):
        folder = bench.temp_dir(f"busy-{name}")
        self.answers = folder / "answers"
        self.answers.touch()
        wrapper = folder / "nvr-classify"
        wrapper.write_text(WRAPPER.format(real=str(Path(bench.classifier).resolve()), log=str(self.answers)))
        wrapper.chmod(0o755)
        env = {"RECORDINGS_RESERVE": "0", "CLASSIFIER": str(wrapper), "MODEL_DIR": str(bench.model_dir)}
        data = folder / "node"
        data.mkdir()
        self.node = Node(bench, data, extra_env=env).wait_listening()
        [self.camera] = add_cameras(self.node.port, [url], 1, detect=True, classify=True)
        # The wrapper, the node's child, and the real classifier, its child.
        [wrapper_pid] = wait_for_process(
            lambda: harness.children_named(self.node, "nvr-classify"), 1, 60, "the classifier's wrapper"
        )
        self.classifier = wait_for_process(lambda: harness.children_of(wrapper_pid), 1, 60, "the classifier")[0]

    def answered(self):
        """When each crop was answered so far, ms since the epoch."""
        return [int(line) for line in self.answers.read_text().split()]

    def events(self):
        return json.loads(self.node.get(f"/api/events?cameraId={self.camera}"))


def most_in_window(times, window_ms):
    """The most of `times` (ms) in any `window_ms` from one of them on."""
    times = sorted(times)
    return max((sum(1 for t in times[i:] if t < start + window_ms) for i, start in enumerate(times)), default=0)


def measure_scene(bench, camera, name):
    """One scene watched for the run's seconds: crops a second, the most in
    a budget window, the classifier's CPU, and the events' kinds."""
    path, _ = SCENES[name]
    counted = CountedNode(bench, name, camera.url(path))
    # Past the camera's start and the detector's calibration.
    time.sleep(5)
    seconds = bench.settings.busy_seconds
    start_ms, cpu_before = time.time() * 1000, cpu_seconds(counted.classifier)
    time.sleep(seconds)
    cpu = 100 * (cpu_seconds(counted.classifier) - cpu_before) / seconds
    answered = [t for t in counted.answered() if t >= start_ms]
    kinds = sorted({event["kind"] for event in counted.events()})
    counted.node.stop()
    return {
        "crops_per_second": len(answered) / seconds,
        "most_in_window": most_in_window(answered, BUDGET_WINDOW_S * 1000),
        "cpu": cpu,
        "kinds": kinds,
    }


def measure_second_kind(bench, camera):
    """A car crosses the left of the scene; once its event is on, a person
    crosses the right: from the person's first frame to the camera's event
    holding a person object."""
    counted = CountedNode(bench, "second", camera.url(harness.SCENE_PATH))
    time.sleep(5)
    # The car (209 px wide) from x 140 to 0 over 12 s; the person (280 px
    # tall and wide) coming in from the right edge to 360 over 8 s: apart
    # all along, both moving.
    camera.scene("cross car_grey 140 0 12")
    deadline = time.monotonic() + 30
    while not any(e.get("inProgress") and e["kind"] == "vehicle" for e in counted.events()):
        if any("unknown command" in line for line in camera.output):
            raise BenchError(f"the test camera has no `cross` command: {list(camera.output)[-3:]}")
        if time.monotonic() > deadline:
            raise BenchError(f"the car's event was not a vehicle within 30 s: {counted.events()}\n{counted.node.tail()}")
        time.sleep(0.1)
    sent = camera.scene("cross person 640 360 8")
    deadline = time.monotonic() + 30
    while True:
        people = [o for e in counted.events() for o in e.get("objects", []) if o["kind"] == "person"]
        if people:
            known = time.time() * 1000
            break
        if time.monotonic() > deadline:
            raise BenchError(f"no person object within 30 s of the person's first frame: {counted.events()}\n{counted.node.tail()}")
        time.sleep(0.05)
    first_seen = min(iso_ms(o["firstSeenAt"]) for o in people)
    counted.node.stop()
    bench.add_figure(
        "second_kind_latency",
        "a person's first frame, while a car's event is on, to the event holding the person",
        (known - sent) / 1000,
        "s",
        ("<=", 2),
        first_seen_after_s=round((first_seen - sent) / 1000, 3),
    )


def run(bench):
    """Runs the part's measurements, one after the other."""
    camera = bench.camera()
    seconds = bench.settings.busy_seconds
    progress(f"busy: the classifier on the quiet and the busy scene, {seconds} s each")
    quiet = measure_scene(bench, camera, "quiet")
    busy = measure_scene(bench, camera, "busy")
    bench.add_figure(
        "busy_crops",
        f"crops a second on a busy motorway, one camera ({seconds} s)",
        busy["crops_per_second"],
        "crops/s",
        ("<=", BUDGET_PER_SECOND),
        quiet_crops_per_second=round(quiet["crops_per_second"], 2),
        busy_kinds=busy["kinds"],
        quiet_kinds=quiet["kinds"],
    )
    bench.add_figure(
        "busy_crop_budget",
        f"most crops in any {BUDGET_WINDOW_S} s on the busy motorway, a second",
        busy["most_in_window"] / BUDGET_WINDOW_S,
        "crops/s",
        ("<=", BUDGET_PER_SECOND),
        quiet=quiet["most_in_window"] / BUDGET_WINDOW_S,
        window_s=BUDGET_WINDOW_S,
    )
    bench.add_figure(
        "busy_classifier_cpu",
        f"the classifier's CPU on the busy motorway ({seconds} s)",
        busy["cpu"],
        "% of a core",
        ("<=", 10),
        quiet_percent=round(quiet["cpu"], 2),
    )
    progress("busy: a person's kind while a car moves")
    measure_second_kind(bench, camera)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

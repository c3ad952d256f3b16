#!/usr/bin/python3
"""The benchmark's classification part (issue 22): nvr-classify's time per
300x300 crop and its memory, run as the node runs it; the CPU per camera
while nothing moves, classification on against off; and the time from the
first moving frame of a photograph of a person to the kind known (the
person sensor on in Home Assistant's MQTT).

It needs nvr-classify (--classifier, default target/classify/nvr-classify),
its model folder (--model, default target/model, made by
deploy/model/install-model.sh target/model) and the test camera's
photographs (target/photos, made by tests/camera/get_photos.sh
target/photos); when one is missing the run fails and says which, before
any part runs: no figure is made up.

Run alone: python3 benches/bench_classify.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py classification).
"""

import collections
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

import harness
from harness import (
    ROOT,
    SCENE_PATH,
    BenchError,
    Broker,
    MQTT_PASSWORD,
    MQTT_USER,
    Node,
    add_cameras,
    children_named,
    cpu_of,
    cpu_seconds,
    proc_fields,
    progress,
    recorders_of,
    stop_process,
    wait_all_recording,
    wait_for_process,
)

NAME = "classification"
# Its figures, in the table's order.
FIGURES = (
    "classify_crop",
    "classifier_rss",
    "classify_idle_cpu",
    "classify_kind_latency",
)
# The classifier's input: width = height = 300, RGB.
CROP = 300
PHOTOS = ROOT / "target/photos"
# Each photograph and the model's labels of its kind (src/classify/tally.rs's map).
PHOTO_LABELS = {
    "person": ("person",),
    "car": ("bicycle", "car", "motorcycle", "bus", "truck"),
    "cat": ("bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"),
}
CLASSIFYING_CAMERAS = 4
# How long a photograph slides across the scene for the kind's latency.
SLIDE_SECONDS = 4


def check(bench):
    """Raises BenchError naming each thing the part needs and cannot find."""
    missing = harness.classifier_missing(bench)
    absent = [name for name in PHOTO_LABELS if not (PHOTOS / f"{name}.png").is_file()]
    if absent:
        missing.append(
            f"photographs missing in {PHOTOS}: {', '.join(absent)} (bash tests/camera/get_photos.sh target/photos)"
        )
    if missing:
        raise BenchError("; ".join(missing))


def crop_of(photo):
    """The photograph as the classifier gets a crop: fitted into 300x300 on
    the scene's grey, RGB bytes row by row."""
    scale = (
        f"scale={CROP}:{CROP}:force_original_aspect_ratio=decrease,"
        f"pad={CROP}:{CROP}:(ow-iw)/2:(oh-ih)/2:color=0x707070"
    )
    command = ["ffmpeg", "-v", "error", "-i", str(photo), "-vf", scale, "-frames:v", "1"]
    command += ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    done = subprocess.run(command, capture_output=True, timeout=60)
    if done.returncode != 0 or len(done.stdout) != CROP * CROP * 3:
        raise BenchError(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


class Classifier:
    """`nvr-classify MODEL_DIR` as the node runs it: a record on stdin
    (`<id> 300 300\\n` and the RGB bytes), a line of JSON on stdout for each."""

    def __init__(self, bench):
        self.proc = subprocess.Popen(
            [str(bench.classifier), str(bench.model_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        bench.cleanup.add(lambda: stop_process(self.proc))
        self.lines = queue.Queue()
        self.errors = collections.deque(maxlen=20)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()
        # Loading the model is not measured; only what follows.
        if (line := self._next(120, "its `ready` line")) != "ready":
            raise BenchError(f"nvr-classify said {line!r} where it should say `ready`{self.tail()}")

    def _read(self):
        """Queues each stdout line; None at its end."""
        for line in self.proc.stdout:
            self.lines.put(line.decode(errors="replace").strip())
        self.lines.put(None)

    def _read_errors(self):
        """Keeps the last stderr lines, for error messages."""
        for line in self.proc.stderr:
            self.errors.append(line.decode(errors="replace").rstrip())

    def tail(self):
        """Its stderr's last lines, for error messages."""
        return "".join(f"\n{line}" for line in self.errors)

    def _next(self, timeout, what):
        """Its next stdout line; BenchError if none comes within `timeout` s."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise BenchError(f"nvr-classify gave no {what} within {timeout} s{self.tail()}") from None
        if line is None:
            raise BenchError(f"nvr-classify exited (status {self.proc.wait()}) before {what}{self.tail()}")
        return line

    def classify(self, record_id, rgb):
        """Sends one crop; returns the classifier's answer (a dict)."""
        self.proc.stdin.write(f"{record_id} {CROP} {CROP}\n".encode() + rgb)
        self.proc.stdin.flush()
        line = self._next(60, f"answer to record {record_id}")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise BenchError(f"nvr-classify answered record {record_id} with {line!r}") from None
        if answer.get("id") != record_id or "error" in answer or "ms" not in answer:
            raise BenchError(f"nvr-classify answered record {record_id} with {line}{self.tail()}")
        return answer

    def close(self):
        """Ends its stdin: it must exit 0."""
        self.proc.stdin.close()
        try:
            status = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise BenchError("nvr-classify did not exit within 30 s of its stdin's end") from None
        if status != 0:
            raise BenchError(f"nvr-classify exited with status {status} at its stdin's end{self.tail()}")


def crop_run(bench, crops, run):
    """One classifier process on the photographs in turn: the median of its
    own `ms` and of the round trip through its pipes, its processor time a
    crop, its peak RSS (VmHWM, its model's load included) and each
    photograph's best score of its kind."""
    names = list(crops)
    classifier = Classifier(bench)
    for n in range(len(names)):  # the first runs warm the caches
        classifier.classify(n, crops[names[n]])
    count = bench.settings.classify_crops
    inference, round_trip, best = [], [], dict.fromkeys(names, 0.0)
    cpu_before = cpu_seconds(classifier.proc.pid)
    for n in range(count):
        name = names[n % len(names)]
        started = time.perf_counter()
        answer = classifier.classify(1000 * (run + 1) + n, crops[name])
        round_trip.append((time.perf_counter() - started) * 1000)
        inference.append(float(answer["ms"]))
        for found in answer.get("objects", []):
            if found.get("label") in PHOTO_LABELS[name]:
                best[name] = max(best[name], float(found["score"]))
    cpu = (cpu_seconds(classifier.proc.pid) - cpu_before) * 1000 / count
    memory = proc_fields(classifier.proc.pid, "status")
    classifier.close()
    return {
        "inference": statistics.median(inference),
        "p99": sorted(inference)[int(len(inference) * 0.99)],
        "round_trip": statistics.median(round_trip),
        "cpu": cpu,
        "hwm": memory["VmHWM"] / 1024,
        "rss": memory["VmRSS"] / 1024,
        "best": best,
    }


def measure_crops(bench):
    """ms per crop and the classifier's peak memory, each the median of
    `classify_runs` processes (a process's peak is mostly its model's load,
    so each run is a process of its own)."""
    crops = {name: crop_of(PHOTOS / f"{name}.png") for name in PHOTO_LABELS}
    runs = [crop_run(bench, crops, run) for run in range(bench.settings.classify_runs)]
    count = bench.settings.classify_crops

    def median(key):
        return statistics.median(run[key] for run in runs)

    def each(key):
        return [round(run[key], 1) for run in runs]

    bench.add_figure(
        "classify_crop",
        f"classifier, one {CROP}x{CROP} crop: inference time, median of {len(runs)} runs' medians "
        f"({count} crops of {len(crops)} photographs each)",
        median("inference"),
        "ms",
        ("<=", 25),
        runs_ms=each("inference"),
        p99_ms=median("p99"),
        round_trip_median_ms=median("round_trip"),
        cpu_ms_per_crop=median("cpu"),
        crops=count,
        **{f"{name}_best_score": min(run["best"][name] for run in runs) for name in crops},
    )
    bench.add_figure(
        "classifier_rss",
        f"classifier RSS at most (VmHWM, its model's load included), median of {len(runs)} runs "
        f"of {count} crops",
        median("hwm"),
        "MiB",
        ("<=", 40),
        runs_mib=each("hwm"),
        rss_mib=median("rss"),
    )


def classifier_env(bench):
    """The node's settings naming the classifier and its model."""
    return {"CLASSIFIER": str(bench.classifier), "MODEL_DIR": str(bench.model_dir)}


def expect_classify(node, wanted):
    """Raises BenchError unless every camera of `node` says classify `wanted`."""
    cameras = json.loads(node.get("/api/cameras"))
    said = [camera.get("classify") for camera in cameras]
    if any(value is not wanted for value in said):
        raise BenchError(f"cameras added with classify {wanted} say {said}: the node does not keep the setting")


def measure_idle_cpu(bench, camera):
    """CPU per camera of the node and all its children (ring recorders,
    decoders, the classifier) while nothing moves in the scene,
    classification on against off."""
    seconds = bench.settings.classify_idle_seconds
    measured = {}
    for name, on in (("off", False), ("on", True)):
        folder = bench.temp_dir(f"classify-idle-{name}-node")
        env = {"RECORDINGS_RESERVE": "0", **classifier_env(bench)}
        node = Node(bench, folder, extra_env=env).wait_listening()
        urls = [camera.url(SCENE_PATH)] * CLASSIFYING_CAMERAS
        add_cameras(node.port, urls, 4, detect=True, classify=on)
        expect_classify(node, on)
        wait_for_process(lambda: recorders_of(node, "image2pipe"), CLASSIFYING_CAMERAS, 30, "decoders")
        time.sleep(5)  # past the decoders' start and the detector's calibration
        classifiers = children_named(node, "nvr-classify")
        pids = [node.pid, *recorders_of(node, ""), *classifiers]
        cpu = cpu_of(pids, seconds)
        measured[name] = (
            sum(cpu.values()) / CLASSIFYING_CAMERAS,
            sum(cpu[pid] for pid in classifiers),
            len(classifiers),
        )
        node.stop()
    (off, _, _), (on, classifier_cpu, running) = measured["off"], measured["on"]
    bench.add_figure(
        "classify_idle_cpu",
        f"CPU per camera while nothing moves, classification on minus off ({CLASSIFYING_CAMERAS} cameras detecting, node and children, {seconds} s each)",
        on - off,
        "% of a core",
        ("<", 0.5),
        on_percent=on,
        off_percent=off,
        classifier_percent=classifier_cpu,
        classifiers_running=running,
    )


class MqttWatch:
    """mosquitto_sub on every topic of the broker; notes when each message came."""

    def __init__(self, bench, broker):
        command = [bench.tools["mosquitto_sub"], "-h", "127.0.0.1", "-p", str(broker.port)]
        command += ["-u", MQTT_USER, "-P", MQTT_PASSWORD, "-v", "-t", "#"]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        bench.cleanup.add(lambda: stop_process(self.proc))
        self.messages = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        """Keeps (ms since the epoch, topic, payload) for each message."""
        for line in self.proc.stdout:
            topic, _, payload = line.rstrip("\n").partition(" ")
            self.messages.append((time.time() * 1000, topic, payload))

    def first(self, topic_end, payload, since_ms):
        """The ms of the first message since `since_ms` on a topic ending in
        `topic_end` with `payload`; None if there is none yet."""
        for at, topic, said in list(self.messages):
            if at >= since_ms and topic.endswith(topic_end) and said == payload:
                return at
        return None


def measure_kind_latency(bench, camera):
    """A photograph of a person slides across the scene: from its first
    frame to the camera's person sensor on (Home Assistant, through MQTT)."""
    broker = Broker(bench)
    folder = bench.temp_dir("classify-latency-node")
    env = {"RECORDINGS_RESERVE": "0", **broker.node_env(), **classifier_env(bench)}
    node = Node(bench, folder, extra_env=env).wait_listening()
    [camera_id] = add_cameras(node.port, [camera.url(SCENE_PATH)], 1, record=True, detect=True, classify=True)
    expect_classify(node, True)
    wait_all_recording(node, 1, 60)
    watch = MqttWatch(bench, broker)
    time.sleep(3)
    sent = camera.scene(f"slide person {SLIDE_SECONDS}")
    deadline = time.monotonic() + 30
    while (seen := watch.first(f"/{camera_id}/person", "ON", sent)) is None:
        if any("unknown command" in line for line in camera.output):
            raise BenchError(f"the test camera has no `slide` command: {list(camera.output)[-3:]}")
        if time.monotonic() > deadline:
            raise BenchError(f"the person sensor did not go on within 30 s of the photograph:\n{node.tail()}")
        time.sleep(0.05)
    bench.add_figure(
        "classify_kind_latency",
        "a person's photograph's first frame to the kind known (the person sensor on)",
        (seen - sent) / 1000,
        "s",
        ("<=", 2),
        slide_s=SLIDE_SECONDS,
    )
    node.stop()


def run(bench):
    """Runs the part's measurements, one after the other."""
    progress(f"classification: ms per crop and the classifier's memory ({bench.classifier.name}, {bench.settings.classify_runs} runs)")
    measure_crops(bench)
    camera = bench.camera()
    progress("classification: CPU while nothing moves, off then on; a person's kind known")
    measure_idle_cpu(bench, camera)
    measure_kind_latency(bench, camera)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

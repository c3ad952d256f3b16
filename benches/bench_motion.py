#!/usr/bin/python3
"""The benchmark's motion part: the detector's time per frame, the CPU of
detecting one camera, the node's CPU and RSS with four detecting and
recording, and an event's latency to its listing and to its clip.

Run alone: python3 benches/bench_motion.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py motion).
"""

import json
import subprocess
import sys
import time

import harness
from harness import (
    BenchError,
    HD_PATH,
    Node,
    ROOT,
    SCENE_PATH,
    SUB_PATH,
    add_cameras,
    cpu_of,
    iso_ms,
    proc_fields,
    progress,
    recorders_of,
    wait_all_recording,
    wait_for_process,
)

NAME = "motion"
# Its figures, in the table's order.
FIGURES = (
    "detector_frame",
    "detector_masked_ratio",
    "detection_cpu",
    "detection_four_cameras",
    "motion_listed_latency",
    "motion_event_latency",
    "motion_clip_latency",
)
DETECTING_CAMERAS = 4


def measure_detector(bench):
    """The detector's time per 320x180 frame, halved and looked at (benches/detector.rs,
    release build)."""
    # Without the classifier's crate, which the detector does not use: as
    # tests/run.sh builds it.
    command = ["cargo", "bench", "--locked", "--quiet", "--bench", "detector"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise BenchError(f"{' '.join(command)} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}")
    times = json.loads(lines[-1])
    bench.add_figure(
        "detector_frame",
        "motion detector, 320x180 frame with a box moving: median",
        times["moving_median_us"] / 1000,
        "ms",
        ("<=", 0.3),
        moving_p99_ms=times["moving_p99_us"] / 1000,
        still_median_ms=times["still_median_us"] / 1000,
        still_p99_ms=times["still_p99_us"] / 1000,
        frames=times["frames"],
    )
    bench.add_figure(
        "detector_masked_ratio",
        "motion detector with a mask over half the picture, against none (moving box): medians",
        times["masked_median_us"] / times["moving_median_us"],
        "ratio",
        ("<=", 1.0),
        masked_median_ms=times["masked_median_us"] / 1000,
        masked_p99_ms=times["masked_p99_us"] / 1000,
    )


def measure_detection(bench, camera):
    """The CPU of motion detection: one camera (its decoder of the 640x360 sub
    stream at 25 fps, and the node), then four cameras detecting and recording
    (the node's own CPU and RSS)."""
    folder = bench.temp_dir("detection-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    add_cameras(node.port, [camera.url(HD_PATH)], 1, detect=True, sub_url=camera.url(SUB_PATH))
    [decoder] = wait_for_process(lambda: recorders_of(node, "image2pipe"), 1, 30, "decoders")
    time.sleep(5)  # past the decoder's start and the detector's calibration
    seconds = bench.settings.detection_seconds
    cpu = cpu_of([node.pid, decoder], seconds)
    bench.add_figure(
        "detection_cpu",
        f"CPU of detecting one camera (decoder of the 640x360 sub stream + node), {seconds} s",
        cpu[node.pid] + cpu[decoder],
        "% of a core",
        ("<=", 3),
        decoder_percent=cpu[decoder],
        node_percent=cpu[node.pid],
    )
    node.stop()
    folder = bench.temp_dir("four-cameras-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    urls = [camera.url(HD_PATH)] * DETECTING_CAMERAS
    add_cameras(node.port, urls, 4, record=True, detect=True, sub_url=camera.url(SUB_PATH))
    wait_all_recording(node, DETECTING_CAMERAS, 60)
    wait_for_process(lambda: recorders_of(node, "image2pipe"), DETECTING_CAMERAS, 30, "decoders")
    time.sleep(5)
    cpu = cpu_of([node.pid], seconds)
    bench.add_figure(
        "detection_four_cameras",
        f"node's own CPU, {DETECTING_CAMERAS} cameras detecting and recording, {seconds} s",
        cpu[node.pid],
        "% of a core",
        ("<=", 2),
        node_rss_mib=proc_fields(node.pid, "status")["VmRSS"] / 1024,
        node_rss_target_mib=8,
    )
    node.stop()


def measure_motion_latency(bench, camera):
    """A box moves 3 s in the test camera's scene: from the event's first
    moving frame to it listed (in progress), from its last moving frame to
    it finished, and from there to its clip on disk."""
    folder = bench.temp_dir("latency-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    add_cameras(node.port, [camera.url(SCENE_PATH)], 1, record=True, detect=True)
    wait_all_recording(node, 1, 60)
    time.sleep(3)
    camera.scene("box 3")
    event = listed_at = ended_at = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = json.loads(node.get("/api/events"))
        now = time.time() * 1000
        if events and listed_at is None:
            listed_at = now
        if events and not events[0]["inProgress"] and ended_at is None:
            event, ended_at = events[0], now
        if event and events[0]["clipUrl"]:
            clip_at = now
            break
        time.sleep(0.05)
    else:
        raise BenchError(f"no motion event with its clip within 60 s: {event}\n{node.tail()}")
    started, ended = iso_ms(event["startedAt"]), iso_ms(event["endedAt"])
    bench.add_figure(
        "motion_listed_latency",
        "first moving frame to the event listed, in progress",
        (listed_at - started) / 1000,
        "s",
        ("<=", 2),
    )
    bench.add_figure(
        "motion_event_latency",
        "last moving frame to the event finished",
        (ended_at - ended) / 1000,
        "s",
        ("<=", 11),
        debounce_s=10,
    )
    # The event is finished 10 s after its end, so its 5 s of post-capture
    # are over by then: from then on, the clip should take 5 s at most.
    bench.add_figure(
        "motion_clip_latency",
        "event finished to its clip and thumbnail on disk",
        (clip_at - ended_at) / 1000,
        "s",
        ("<=", 5),
        after_post_capture_s=(clip_at - (ended + 5000)) / 1000,
        event_length_s=(ended - started) / 1000,
    )
    node.stop()


def run(bench):
    """Runs the part's measurements, one after the other."""
    camera = bench.camera()
    progress("motion detection: the detector, one camera, four cameras, an event's latency")
    measure_detector(bench)
    measure_detection(bench, camera)
    measure_motion_latency(bench, camera)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

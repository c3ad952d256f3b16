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
from harness.net import expect, request
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
    "detection_still_ratio",
    "detection_event_ratio",
    "detection_sixteen_ratio",
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


def key_pace(node, count, timeout):
    """Waits until `count` cameras of `node` are watched on key frames alone."""
    deadline = time.monotonic() + timeout
    while True:
        cameras = json.loads(node.get("/api/cameras"))
        paced = [c for c in cameras if (c.get("keyFrames") or {}).get("pace") == "key"]
        if len(paced) >= count:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"{len(paced)} of {count} cameras at key-frame pace after {timeout} s")
        time.sleep(0.5)


def watcher_processes(node, count):
    """The node's motion receivers and decoders, `count` of each."""
    receivers = wait_for_process(lambda: recorders_of(node, "frag_every_frame"), count, 30, "receivers")
    decoders = wait_for_process(lambda: recorders_of(node, "image2pipe"), count, 30, "decoders")
    return receivers + decoders


def bare_receiver(url):
    """An ffmpeg that receives `url` and throws it away: what receiving costs."""
    command = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-threads", "1",
               "-rtsp_transport", "tcp", "-i", url, "-an", "-c", "copy", "-f", "null", "-"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure_detection(bench, camera):
    """The CPU of watching one still camera (the scene: grey with sensor
    noise, 25 fps, a key frame a second): its watcher's children against a
    bare ffmpeg receiving the same stream in the same window, still and
    during an event; then 16 still cameras watched on key frames against the
    same at full rate (`fullRate`, every frame decoded, as before key-frame
    pace); then four cameras detecting and recording (the node's own CPU and
    RSS)."""
    folder = bench.temp_dir("detection-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    url = camera.url(SCENE_PATH)
    add_cameras(node.port, [url], 1, detect=True, classify=False)
    children = watcher_processes(node, 1)
    key_pace(node, 1, 30)
    bare = bare_receiver(url)
    try:
        time.sleep(3)  # past the bare receiver's start
        seconds = bench.settings.detection_seconds
        cpu = cpu_of([node.pid, bare.pid, *children], seconds)
        watcher = sum(cpu[pid] for pid in children)
        bench.add_figure(
            "detection_cpu",
            f"CPU of watching one still camera (receiver + decoder + node), {seconds} s",
            watcher + cpu[node.pid],
            "% of a core",
            ("<=", 3),
            children_percent=watcher,
            node_percent=cpu[node.pid],
        )
        bench.add_figure(
            "detection_still_ratio",
            "CPU of a still camera's watcher (receiver + decoder) against a bare ffmpeg "
            "receiving the same stream, same window",
            watcher / max(cpu[bare.pid], 0.01),
            "ratio",
            ("<=", 1.7),
            watcher_percent=watcher,
            bare_percent=cpu[bare.pid],
        )
        camera.scene("box 8")
        time.sleep(1)
        cpu = cpu_of([bare.pid, *children], 5)
        watcher = sum(cpu[pid] for pid in children)
        bench.add_figure(
            "detection_event_ratio",
            "the same during an event (a box moving, every frame decoded), 5 s",
            watcher / max(cpu[bare.pid], 0.01),
            "ratio",
            ("<=", 8.6),
            watcher_percent=watcher,
            bare_percent=cpu[bare.pid],
        )
    finally:
        bare.kill()
        bare.wait()
    node.stop()

    sixteen = {}
    for full_rate in (False, True):
        folder = bench.temp_dir("sixteen-cameras-node")
        node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
        ids = add_cameras(node.port, [url] * 16, 4, detect=True, classify=False)
        if full_rate:
            for id in ids:
                body = json.dumps({"fullRate": True}).encode()
                status, answer = request(node.port, "PATCH", f"/api/cameras/{id}", body, "application/json")
                expect(status, answer, 200, "PATCH fullRate")
        children = watcher_processes(node, 16)
        if not full_rate:
            key_pace(node, 16, 60)
        time.sleep(5)
        cpu = cpu_of([node.pid, *children], seconds)
        sixteen[full_rate] = sum(cpu.values())
        node.stop()
    bench.add_figure(
        "detection_sixteen_ratio",
        f"node and children with 16 still cameras on key frames, against the same at full rate, {seconds} s",
        sixteen[False] / max(sixteen[True], 0.01),
        "ratio",
        ("<=", 0.5),
        key_pace_percent=sixteen[False],
        full_rate_percent=sixteen[True],
    )

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
    key_pace(node, 1, 30)
    moved = time.time() * 1000
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
        "first moving frame to the event listed, in progress (a still camera on key frames a second apart)",
        (listed_at - moved) / 1000,
        "s",
        ("<=", 1.5),
        event_start_after_s=(started - moved) / 1000,
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
    progress("motion detection: the detector, one still camera, 16, four recording, an event's latency")
    measure_detector(bench)
    measure_detection(bench, camera)
    measure_motion_latency(bench, camera)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

#!/usr/bin/python3
"""The benchmark's recording and footage part: record on to the first
segment, the CPU and storage writes of recording one 1280x720 camera, the
node's RSS with 8 recording; what converting a camera's G.711 sound to AAC
costs; start-up over months of footage (issue 21);
and 64 cameras that do not answer, recording and detecting.

Run alone: python3 benches/bench_recording.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py recording).
"""

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

import harness
from harness import (
    BenchError,
    HD_PATH,
    Node,
    RECORDING_CAMERAS,
    ROOT,
    SUB_PATH,
    VIDEO_ONLY_PATH,
    SilentCamera,
    add_cameras,
    cpu_seconds,
    expect,
    private_mib,
    proc_fields,
    progress,
    recorders_of,
    request,
    segment_count,
    wait_all_recording,
)

NAME = "recording"
# Its figures, in the table's order.
FIGURES = (
    "recording_start",
    "recording_cpu",
    "recording_write_ratio",
    "recording_rss",
    "g711_to_aac",
    "reconcile_first_recorder",
    "reconcile_done",
    "dead_cameras_status_p99",
    "dead_cameras_rss",
)


# Start-up over months of footage (issue 21, item 4): cameras, days of index,
# segment files; and cameras whose addresses do not answer.
FOOTAGE_CAMERAS = 8
FOOTAGE_DAYS = 30
DEAD_CAMERAS = 64
# A real segment the recorder's command made (3 s, H.264 + AAC, with its mfra).
SEGMENT_SAMPLE = ROOT / "crates/base/src/media/testdata/segment.mp4"


def measure_recording(bench, camera):
    """The recording figures: from record on to the first segment; CPU and storage
    writes of one camera (the 1280x720 test camera) over a window; RSS with 8."""
    folder = bench.temp_dir("recording-node")
    # The reserve would be 1 GiB or more: on a nearly full disk nothing would be kept.
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    url = camera.url(HD_PATH)
    [camera_id] = add_cameras(node.port, [url], 1)
    body = json.dumps({"record": True}).encode()
    started = time.perf_counter()
    status, answer = request(node.port, "PATCH", f"/api/cameras/{camera_id}", body, "application/json")
    expect(status, answer, 200, "PATCH record on")
    while segment_count(folder) == 0:
        if time.perf_counter() - started > 60:
            raise BenchError(f"no segment 60 s after record went on:\n{node.tail()}")
        time.sleep(0.02)
    bench.add_figure(
        "recording_start",
        "record on to the first indexed segment (a 10 s segment; reported)",
        time.perf_counter() - started,
        "s",
        ("<", 15),
    )
    wait_all_recording(node, 1, 30)
    [recorder] = recorders_of(node)
    recordings = folder / "recordings"
    seconds = bench.settings.recording_seconds
    before = {
        "cpu": {pid: cpu_seconds(pid) for pid in (node.pid, recorder)},
        "written": {pid: proc_fields(pid, "io")["write_bytes"] for pid in (node.pid, recorder)},
        "video": recorded_bytes(recordings),
        "segments": segment_count(folder),
    }
    time.sleep(seconds)
    if recorders_of(node) != [recorder]:
        raise BenchError(f"the recorder restarted during the measurement:\n{node.tail()}")
    cpu = {pid: cpu_seconds(pid) - before["cpu"][pid] for pid in (node.pid, recorder)}
    written = {pid: proc_fields(pid, "io")["write_bytes"] - before["written"][pid] for pid in (node.pid, recorder)}
    video = recorded_bytes(recordings) - before["video"]
    if written[recorder] == 0:
        raise BenchError(f"ffmpeg wrote no bytes to storage: is {recordings} on a RAM disk (tmpfs)?")
    bench.add_figure(
        "recording_cpu",
        f"CPU of recording one 1280x720 camera (ffmpeg + node), {seconds} s",
        100 * (cpu[node.pid] + cpu[recorder]) / seconds,
        "% of a core",
        ("<=", 1),
        ffmpeg_percent=100 * cpu[recorder] / seconds,
        node_percent=100 * cpu[node.pid] / seconds,
        video_kbit_per_s=video * 8 / 1000 / seconds,
    )
    bench.add_figure(
        "recording_write_ratio",
        "bytes written to storage ÷ bytes of video recorded (write_bytes of node and ffmpeg)",
        (written[node.pid] + written[recorder]) / video,
        "",
        ("<=", 1.02),
        video_bytes=video,
        ffmpeg_written_bytes=written[recorder],
        node_written_bytes=written[node.pid],
        segments=segment_count(folder) - before["segments"],
    )
    add_cameras(node.port, [url] * (RECORDING_CAMERAS - 1), 4, record=True)
    wait_all_recording(node, RECORDING_CAMERAS, 60)
    time.sleep(2)
    recorders = recorders_of(node)
    # An ffmpeg's RSS counts the libraries all of them share; what each adds
    # on its own is its private memory.
    ffmpeg_rss = [proc_fields(pid, "status")["VmRSS"] / 1024 for pid in recorders]
    ffmpeg_private = [private_mib(pid) for pid in recorders]
    bench.add_figure(
        "recording_rss",
        f"node RSS with {RECORDING_CAMERAS} cameras recording",
        proc_fields(node.pid, "status")["VmRSS"] / 1024,
        "MiB",
        ("<", 6),
        ffmpeg_rss_mib=[round(m, 1) for m in ffmpeg_rss],
        ffmpeg_private_mib=[round(m, 1) for m in ffmpeg_private],
        ffmpeg_private_total_mib=sum(ffmpeg_private),
    )
    node.stop()


def measure_g711(bench, camera):
    """The processor time of converting a camera's G.711 sound to AAC: the
    recorder of the 640x360 camera with G.711 A-law (SUB_PATH) less that
    of the same video without sound (VIDEO_ONLY_PATH), side by side in the
    same window."""
    folder = bench.temp_dir("g711-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    add_cameras(node.port, [camera.url(SUB_PATH), camera.url(VIDEO_ONLY_PATH)], 2, record=True)
    wait_all_recording(node, 2, 60)
    # The converting recorder is the one told to make AAC.
    converting = recorders_of(node, "-c:a aac")
    copying = [pid for pid in recorders_of(node) if pid not in converting]
    if len(converting) != 1 or len(copying) != 1:
        raise BenchError(f"not one recorder converting and one copying: {converting} {copying}:\n{node.tail()}")
    pids = converting + copying
    seconds = bench.settings.recording_seconds
    before = {pid: cpu_seconds(pid) for pid in pids}
    time.sleep(seconds)
    if sorted(recorders_of(node)) != sorted(pids):
        raise BenchError(f"a recorder restarted during the measurement:\n{node.tail()}")
    percent = {pid: 100 * (cpu_seconds(pid) - before[pid]) / seconds for pid in pids}
    bench.add_figure(
        "g711_to_aac",
        f"CPU of converting a 640x360 camera's G.711 sound to AAC (its recorder less one without sound), {seconds} s",
        percent[converting[0]] - percent[copying[0]],
        "% of a core",
        ("<=", 1.5),
        converting_ffmpeg_percent=percent[converting[0]],
        copying_ffmpeg_percent=percent[copying[0]],
    )
    node.stop()


def recorded_bytes(folder):
    """The bytes of every recording file under `folder`, those being written included."""
    return sum(f.stat().st_size for f in folder.rglob("*.mp4"))


def segment_name(ms):
    """The node's file name of a segment starting at `ms`, relative to its
    camera's folder: `2026-11-22T21Z/2026-11-22T21-36-14.123Z.mp4`."""
    moment = time.gmtime(ms // 1000)
    hour = time.strftime("%Y-%m-%dT%H", moment)
    return f"{hour}Z/{hour}-{time.strftime('%M-%S', moment)}.{ms % 1000:03d}Z.mp4"


def prepare_footage(bench, camera):
    """A data folder and a recordings folder as months of recording leave them:
    FOOTAGE_CAMERAS cameras (recording the test camera's 640x360 stream), and
    `footage_files` segment files over FOOTAGE_DAYS days, hard links of a
    copy of one real segment for each camera (ext4 allows 65,000 links to a
    file, and each run links them all once more), with their rows; 1 % of the
    files without a row and 1 % of the rows without a file, for the
    reconciliation to find."""
    folder = bench.temp_dir("footage-template")
    data, recordings = folder / "data", folder / "recordings"
    data.mkdir()
    env = {"RECORDINGS_DIR": str(recordings), "RECORDINGS_RESERVE": "0"}
    node = Node(bench, data, extra_env=env).wait_listening()
    urls = [camera.url(SUB_PATH)] * FOOTAGE_CAMERAS
    ids = add_cameras(node.port, urls, FOOTAGE_CAMERAS, record=True)
    deadline = time.monotonic() + 20
    while not (recordings / ".nvr-node-recordings").exists():
        if time.monotonic() > deadline:
            raise BenchError(f"the node never marked its recordings folder:\n{node.tail()}")
        time.sleep(0.1)
    node.stop()
    size = SEGMENT_SAMPLE.stat().st_size
    per_camera = bench.settings.footage_files // FOOTAGE_CAMERAS
    now_ms = int(time.time() * 1000)
    first_ms = now_ms - FOOTAGE_DAYS * 86_400_000
    step = (now_ms - 3_600_000 - first_ms) // per_camera
    rows = []
    for n, camera_id in enumerate(ids):
        sample = folder / f"segment-{n}.mp4"
        shutil.copyfile(SEGMENT_SAMPLE, sample)
        for i in range(per_camera):
            start = first_ms + i * step + n
            path = f"{camera_id}/{segment_name(start)}"
            file = recordings / path
            if i % 100 != 1:  # a row whose file is gone
                file.parent.mkdir(parents=True, exist_ok=True)
                os.link(sample, file)
            if i % 100 != 2:  # a file without a row
                rows.append((camera_id, start, start + 3000, size, path))
    db = sqlite3.connect(data / "nvr-node.db")
    db.executemany("INSERT INTO segment (camera_id, start_ms, end_ms, bytes, path) VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    return folder


def reconcile_once(bench, template, run):
    """One start of a node over a copy of `template`: (s from launch to its first
    recorder, s to the end of the reconciliation, what the node says it did)."""
    folder = bench.temp_dir(f"footage-run-{run}")
    subprocess.run(["cp", "-a", str(template / "data"), str(folder / "data")], check=True)
    subprocess.run(["cp", "-al", str(template / "recordings"), str(folder / "recordings")], check=True)
    env = {"RECORDINGS_DIR": str(folder / "recordings"), "RECORDINGS_RESERVE": "0"}
    node = Node(bench, folder / "data", extra_env=env)
    first_recorder = None
    deadline = node.started_at + 600
    while "folder and index reconciled in" not in node.seen or first_recorder is None:
        if first_recorder is None and recorders_of(node):
            first_recorder = time.perf_counter() - node.started_at
        if time.perf_counter() > deadline or node.proc.poll() is not None:
            raise BenchError(f"the reconciliation did not end within 10 minutes:\n{node.tail()}")
        time.sleep(0.01)
    done_at, line = node.seen["folder and index reconciled in"]
    node.stop()
    shutil.rmtree(folder, ignore_errors=True)
    return first_recorder, done_at - node.started_at, line


def measure_reconciliation(bench, camera):
    """Item 4 of issue 21: start-up over months of footage."""
    files = bench.settings.footage_files
    progress(f"start-up over {files:,} segment files of {FOOTAGE_CAMERAS} cameras")
    template = prepare_footage(bench, camera)
    runs = [reconcile_once(bench, template, n) for n in range(bench.settings.footage_runs)]
    shutil.rmtree(template, ignore_errors=True)
    firsts, dones = [r[0] for r in runs], [r[1] for r in runs]
    bench.add_figure(
        "reconcile_first_recorder",
        f"start to the first recorder, {FOOTAGE_CAMERAS} cameras, {FOOTAGE_DAYS} days, {files:,} files (median of {len(runs)})",
        statistics.median(firsts),
        "s",
        ("<", 5),
        runs_s=[round(f, 2) for f in firsts],
    )
    bench.add_figure(
        "reconcile_done",
        f"start to the end of the reconciliation, the same (median of {len(runs)})",
        statistics.median(dones),
        "s",
        ("<", 600),
        runs_s=[round(d, 2) for d in dones],
        node_says=runs[-1][2].split("reconciled in ", 1)[-1][:160],
    )


def first_minute(bench, data_dir, seconds):
    """Starts a node on `data_dir` and, for its first `seconds`, asks for status
    from 4 clients in turn and reads its RSS every 0.5 s: (p99 ms, max RSS MiB)."""
    node = Node(bench, data_dir).wait_listening()
    latencies, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            started = time.perf_counter_ns()
            status, body = request(node.port, "GET", "/api/status")
            expect(status, body, 200, "GET /api/status")
            latencies.append(time.perf_counter_ns() - started)

    pollers = [threading.Thread(target=poll, daemon=True) for _ in range(4)]
    for thread in pollers:
        thread.start()
    rss = []
    until = node.started_at + seconds
    while time.perf_counter() < until:
        rss.append(proc_fields(node.pid, "status")["VmRSS"] / 1024)
        time.sleep(0.5)
    stop.set()
    for thread in pollers:
        thread.join(timeout=10)
    node.stop()
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)] / 1e6
    return p99, max(rss), len(latencies)


def measure_dead_cameras(bench):
    """Item 4 of issue 21: 64 cameras whose addresses do not answer (they accept
    and say nothing), with record and detect on (the defaults), against off."""
    silent = SilentCamera(bench)
    seconds = bench.settings.dead_cameras_seconds
    figures = {}
    for name, wanted in (("on", True), ("off", False)):
        folder = bench.temp_dir(f"dead-cameras-{name}")
        node = Node(bench, folder).wait_listening()
        urls = [f"rtsp://127.0.0.1:{silent.port}/dead{n}" for n in range(1, DEAD_CAMERAS + 1)]
        add_cameras(node.port, urls, DEAD_CAMERAS, record=wanted, detect=wanted)
        node.stop()
        progress(f"{DEAD_CAMERAS} cameras that do not answer, record and detect {name}: the first {seconds} s")
        figures[name] = first_minute(bench, folder, seconds)
    silent.stop()
    (p99_on, rss_on, asked_on), (p99_off, rss_off, _) = figures["on"], figures["off"]
    bench.add_figure(
        "dead_cameras_status_p99",
        f"status p99 in the first {seconds} s, {DEAD_CAMERAS} cameras that do not answer, record and detect on",
        p99_on,
        "ms",
        ("<", 20),
        p99_off_ms=p99_off,
        requests=asked_on,
    )
    bench.add_figure(
        "dead_cameras_rss",
        f"node RSS at most in the first {seconds} s, the same",
        rss_on,
        "MiB",
        ("<", 9.3),
        rss_off_mib=rss_off,
    )


def run(bench):
    """Runs the part's measurements, one after the other."""
    camera = bench.camera()
    progress("recording: one camera's CPU and writes, then 8 cameras")
    measure_recording(bench, camera)
    progress("recording: converting G.711 sound to AAC")
    measure_g711(bench, camera)
    measure_reconciliation(bench, camera)
    measure_dead_cameras(bench)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

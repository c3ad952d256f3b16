#!/usr/bin/python3
"""A week of faults in an hour (issue 46): 8 cameras recording for an hour
(--minutes) while a fault comes every few minutes (--fault-every), in an
order fixed by --seed: a camera dropping and returning, the node's go2rtc
restarted, the MQTT broker restarted, the classifier killed, the
recordings' disk filled to the reserve and freed, the clock stepped forward
(and back again with --clock-back). Reports the growth of the node's RSS, open files, threads and
descendant processes from the first to the last window (ten minutes, or a
third of a shorter run), the seconds of footage lost outside the cameras'
own outages, the events left in progress, and GET /api/status's p99
throughout.

Everything is real: one GStreamer test camera process per camera
(tests/camera/rtsp_camera.py; dropping a camera is SIGKILL, returning it is
a new process on the same port), read through a go2rtc of their own as the
other parts do (GStreamer's RTSP server deadlocks when clients join a mount
at once); a real go2rtc as the node's relay; mosquitto; nvr-classify with
its model; an ext4 loop disk for the recordings; Debian's libfaketime for
the node's wall clock (its monotonic clock left alone, as NTP leaves it).
Two of the cameras show /scene with a photograph slid across it now and
then, detected and classified; the other six record /sub.

Not a part of bench.py (an hour); run alone, as root (the loop disk):
    python3 benches/bench_soak.py [--minutes 60] [--fault-every 240] [--seed 46]
                                  [--binary PATH] [--json PATH]
Prints its figures as a table at the end and writes them as JSON (default
target/bench-soak.json). Exits 0 after printing, 1 if something broke or
is missing, 2 if the node binary is missing.
"""

import argparse
import calendar
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import bench_classify
from harness import ROOT, BenchError, Broker, Go2rtc, Node, Relay, add_cameras, progress, request, wait_all_recording
from harness.net import free_port
from harness.processes import CAMERA_SCRIPT, Cleanup, process_table, stop_process
from harness.report import exit_on_signal, provenance, table, write_json
from harness.run import Bench, Settings, find_tools

CAMERAS = 8
# The cameras that also detect and classify, on /scene; the others record /sub.
DETECTING = 2
# After a camera returns, the node may take this long to record it again
# (it restarts a recorder within 10 s of the camera's return; the rest is
# ffmpeg starting and the first keyframe).
GRACE_S = 15
# The node's recording files' length (docs/configuration.md, RECORDINGS_DIR).
SEGMENT_S = 10
# A hole in a camera's spans shorter than this is the spans' rounding, not footage lost.
HOLE_MIN_S = 0.5
RESERVE = 256 * 1024 * 1024
DISK_MIB = 3072
SAMPLE_EVERY_S = 10
STATUS_PER_SECOND = 5
SPANS_EVERY_S = 20
SLIDE_EVERY_S = 40
SETTLE_S = 120
KINDS = ("camera", "relay", "broker", "classifier", "disk", "clock", "camera")


def iso(ms):
    """An API time of `ms` since the epoch."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{int(ms) % 1000:03d}Z"


def iso_ms(text):
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + (int(text[20:23]) if len(text) > 20 else 0)


def now_ms():
    return time.time() * 1000


def run_command(*command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)}: {done.stderr.strip()}")


class LoopDisk:
    """A real ext4 file system in a file, mounted through a loop device;
    unmounted (the loop device going with it) at the run's end."""

    def __init__(self, bench):
        folder = bench.temp_dir("disk")
        self.image = folder / "ext4.img"
        self.mount = folder / "mnt"
        self.mount.mkdir()
        run_command("truncate", "-s", f"{DISK_MIB}M", str(self.image))
        run_command("mkfs.ext4", "-q", str(self.image))
        run_command("mount", "-o", "loop,errors=remount-ro", str(self.image), str(self.mount))
        bench.cleanup.add(lambda: run_command("umount", str(self.mount)))
        self.filler = self.mount / "filler"
        (self.mount / "recordings").mkdir()

    def free(self):
        info = os.statvfs(self.mount)
        return info.f_bavail * info.f_frsize

    def fill_to(self, free):
        """Takes all but `free` bytes with one file, as another program would."""
        run_command("fallocate", "-l", str(max(0, self.free() - free)), str(self.filler))

    def unfill(self):
        self.filler.unlink(missing_ok=True)


class Clock:
    """The node's wall clock through libfaketime: a file the bench rewrites
    with the offset, read again by the node each second."""

    def __init__(self, bench):
        found = [p for p in Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1")]
        if not found:
            raise BenchError("libfaketime is missing: apt-get install faketime")
        self.file = bench.temp_dir("clock") / "faketime"
        self.library = found[0]
        self.offset_s = 0
        self.set(0)

    def env(self):
        return {
            "LD_PRELOAD": str(self.library),
            "FAKETIME_TIMESTAMP_FILE": str(self.file),
            "FAKETIME_CACHE_DURATION": "1",
            "DONT_FAKE_MONOTONIC": "1",
        }

    def set(self, offset_s):
        self.file.write_text(f"{offset_s:+d}\n")
        self.offset_s = offset_s


class Camera:
    """One GStreamer test camera process on a port of its own."""

    def __init__(self, bench, path, max_seconds):
        self.path = path
        self.port = free_port()
        self.max_seconds = max_seconds
        self.proc = None
        bench.cleanup.add(lambda: self.proc and stop_process(self.proc))
        self.start()

    def start(self):
        command = ["/usr/bin/python3", str(CAMERA_SCRIPT), "--port", str(self.port),
                   "--max-seconds", str(self.max_seconds), "--scene-fps", "10"]
        deadline = time.monotonic() + 20
        while True:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
            if self.proc.stdout.readline().startswith("ready "):
                return
            stop_process(self.proc)
            # The port of the process just killed may not be free again yet.
            if time.monotonic() > deadline:
                raise BenchError(f"the test camera did not start on port {self.port}")
            time.sleep(1)

    def drop(self):
        self.proc.kill()
        self.proc.wait()

    def scene(self, command):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # dropped at the moment


def descendants(pid):
    """The processes below `pid`, at any depth: their pids, to their names."""
    table = process_table()
    found, frontier = {}, {pid}
    while frontier:
        frontier = {child for child, (parent, _) in table.items() if parent in frontier}
        found.update({child: table[child][1] for child in frontier})
    return found


def sample(pid):
    """The node's RSS (KiB), open files, threads and descendants now."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return {
        "t": time.monotonic(),
        "rss_kib": rss,
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": len(os.listdir(f"/proc/{pid}/task")),
        "children": len(descendants(pid)),
    }


class Watcher:
    """Threads that, until stopped, sample the node every SAMPLE_EVERY_S,
    time GET /api/status on one kept-alive connection, slide photographs
    across the detecting cameras, and keep the union of every span the node
    ever listed (footage later deleted by a rule stays in it)."""

    def __init__(self, node, cameras, ids):
        self.node, self.cameras, self.ids = node, cameras, ids
        self.stop = threading.Event()
        self.samples, self.status_ms, self.status_errors = [], [], []
        self.seen = {camera_id: [] for camera_id in ids}
        self.listed = {camera_id: [] for camera_id in ids}
        self.failures = []
        self.threads = [threading.Thread(target=self._guard, args=(f,), daemon=True)
                        for f in (self._sample, self._status, self._slides, self._spans)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()
        if self.failures:
            raise BenchError("; ".join(self.failures))

    def _guard(self, loop):
        try:
            loop()
        except Exception as e:  # reported by finish, the run invalid
            self.failures.append(f"{loop.__name__}: {e!r}")

    def _sample(self):
        while not self.stop.wait(0 if not self.samples else SAMPLE_EVERY_S):
            self.samples.append(sample(self.node.pid))

    def _status(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=30)
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                conn.request("GET", "/api/status")
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    raise OSError(f"status {response.status}: {body[:200]!r}")
                self.status_ms.append((time.perf_counter() - started) * 1000)
            except (OSError, http.client.HTTPException) as e:
                self.status_errors.append(f"{time.strftime('%H:%M:%S')} {e!r}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=30)
            self.stop.wait(max(0.0, 1 / STATUS_PER_SECOND - (time.perf_counter() - started)))

    def _slides(self):
        names = ("person", "car", "cat", "person")
        n = 0
        while not self.stop.wait(SLIDE_EVERY_S):
            camera = self.cameras[n % DETECTING]
            camera.scene(f"slide {names[n // DETECTING % len(names)]} 4")
            n += 1

    def _spans(self):
        while not self.stop.wait(SPANS_EVERY_S):
            self.poll_spans()

    def poll_spans(self):
        """Adds what the node lists now to the union of each camera's spans."""
        end = now_ms() + 3_600_000
        for camera_id in self.ids:
            status, body = request(self.node.port, "GET",
                                   f"/api/cameras/{camera_id}/recordings?start={iso(end - 86_000_000)}&end={iso(end)}")
            if status != 200:
                raise BenchError(f"recordings of {camera_id}: {status} {body[:200]!r}")
            spans = [(iso_ms(s["start"]), iso_ms(s["end"])) for s in json.loads(body)]
            self.listed[camera_id] = spans
            self.seen[camera_id] = merge(self.seen[camera_id] + spans)


def merge(spans):
    """The union of (start, end) intervals, sorted; touching ones joined."""
    merged = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def holes(covered, window, excluded):
    """The parts of `window` that neither `covered` nor `excluded` cover,
    HOLE_MIN_S or longer, as (start, end) in ms."""
    lost, at = [], window[0]
    for start, end in merge(covered + excluded):
        if start > at:
            lost.append((at, min(start, window[1])))
        at = max(at, end)
        if at >= window[1]:
            break
    if at < window[1]:
        lost.append((at, window[1]))
    return [(s, e) for s, e in lost if e - s >= HOLE_MIN_S * 1000]


class Faults:
    """The faults, each done and undone by `do`, logged with their real times."""

    def __init__(self, args, node, ids, cameras, relay, broker, disk, clock, rng):
        self.args, self.node, self.ids, self.cameras = args, node, ids, cameras
        self.relay, self.broker, self.disk, self.clock, self.rng = relay, broker, disk, clock, rng
        self.interval = args.fault_every
        self.log = []
        # (camera index, down ms, up ms), real time.
        self.outages = []
        # (real ms, seconds): each offset the wall clock was given.
        self.offsets = [(0, 0)]

    def do(self, kind):
        started = now_ms()
        note = getattr(self, f"fault_{kind}")()
        self.log.append({"at": iso(started), "fault": kind, "took_s": round((now_ms() - started) / 1000, 1), "note": note})
        progress(f"soak: {iso(started)} {kind}: {note}")

    def fault_camera(self):
        index = self.rng.randrange(len(self.cameras))
        down_s = min(60, self.interval / 3)
        down = now_ms()
        self.cameras[index].drop()
        time.sleep(down_s)
        self.cameras[index].start()
        self.outages.append((index, down, now_ms()))
        back = self.wait_for(lambda: self.recording(index), 60)
        return f"camera {index + 1} down {down_s:.0f} s; " + (
            f"recording again {back:.1f} s after its return" if back is not None else "NOT recording 60 s after its return")

    def recording(self, index):
        cameras = json.loads(self.node.get("/api/cameras"))
        return any(c["id"] == self.ids[index] and c["recording"]["state"] == "recording" for c in cameras)

    def fault_relay(self):
        self.relay.go2rtc.restart()
        streams = lambda: len(json.loads(request(self.relay.go2rtc.api, "GET", "/api/streams")[1] or b"{}")) >= len(self.cameras)
        back = self.wait_for(lambda: streams() and self.status()["relayHealthy"], 60)
        return "go2rtc restarted; " + (f"healthy with every stream again in {back:.1f} s" if back is not None
                                       else "NOT healthy with every stream 60 s later")

    def fault_broker(self):
        self.broker.restart()
        connected = lambda: self.status()["mqtt"]["state"] == "connected"
        gone = self.wait_for(lambda: not connected(), 15)
        back = self.wait_for(connected, 60)
        seen = "the node never showed it gone" if gone is None else f"the node showed it gone {gone:.1f} s after"
        return f"mosquitto restarted; {seen}; " + (f"connected {back:.1f} s later" if back is not None
                                                   else f"NOT connected 60 s later: {self.status()['mqtt']}")

    def fault_classifier(self):
        found = [pid for pid, name in descendants(self.node.pid).items() if name == "nvr-classify"]
        for pid in found:
            os.kill(pid, signal.SIGKILL)
        again = lambda: any(n == "nvr-classify" and p not in found for p, n in descendants(self.node.pid).items())
        back = self.wait_for(again, 60)
        return f"killed {len(found)} nvr-classify; " + (f"a new one in {back:.1f} s" if back is not None
                                                        else "none again within 60 s (started on the next event?)")

    def fault_disk(self):
        hold = self.interval / 2
        self.disk.fill_to(RESERVE)
        status_before = self.status()["storage"].get("lastDeletion")
        time.sleep(hold)
        free_low = self.disk.free()
        self.disk.unfill()
        deleted = self.status()["storage"].get("lastDeletion")
        return (f"filled to {RESERVE >> 20} MiB free for {hold:.0f} s (free then {free_low >> 20} MiB), freed; "
                f"lastDeletion {'unchanged' if deleted == status_before else deleted}")

    def fault_clock(self):
        hold = self.interval / 2
        # Ahead of the node's times: a step back leaves them ahead (node_offset_ms).
        offset = max(o for _, o in self.offsets) + self.args.clock_step
        self.set_clock(offset)
        note = f"wall clock +{self.args.clock_step} s (now {offset:+d} s)"
        if self.args.clock_back:
            time.sleep(hold)
            self.set_clock(offset - self.args.clock_step)
            note += f", back {hold:.0f} s later"
        # libfaketime reads the file again each second.
        time.sleep(2)
        return f"{note}; status clock: {json.dumps(self.status()['clock'])}"

    def set_clock(self, offset_s):
        self.clock.set(offset_s)
        self.offsets.append((now_ms(), offset_s))

    def node_offset_ms(self, at_ms):
        """How far ahead of the true time the node's times are at `at_ms`:
        the largest offset the wall clock was given by then, as the node
        believes no clock more than 10 s behind a time it gave out
        (crates/base/src/clock/trust.rs) and the steps are longer."""
        return 1000 * max(offset for t, offset in self.offsets if t <= at_ms)

    def never_lived(self):
        """The node's times a forward step skipped, as (start, end) ms, a
        second wider each side, and SEGMENT_S wider before: the segment in
        progress at the step is timed wholly after it (its start is its end
        less its length)."""
        skipped, ahead = [], 0
        for t, offset in self.offsets:
            if offset * 1000 > ahead:
                skipped.append((t + ahead - SEGMENT_S * 1000 - 1000, t + offset * 1000 + 1000))
                ahead = offset * 1000
        return skipped

    def status(self):
        return json.loads(self.node.get("/api/status"))

    def wait_for(self, condition, timeout):
        """Seconds until `condition()` held, or None after `timeout`."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            try:
                if condition():
                    return time.monotonic() - started
            except (OSError, KeyError, TypeError, json.JSONDecodeError, BenchError):
                pass
            time.sleep(0.5)
        return None


def schedule(count, rng):
    """`count` faults: rounds of KINDS, each round in an order `rng` draws."""
    order = []
    while len(order) < count:
        round_ = list(KINDS)
        rng.shuffle(round_)
        order += round_
    return order[:count]


def events(node):
    """Every event the node lists, paging back."""
    found, before = [], None
    while True:
        page = json.loads(node.get("/api/events" + (f"?before={before}" if before else "")))
        found += page
        if len(page) < 50:
            return found
        before = page[-1]["startedAt"]


def in_progress(node):
    return [e for e in events(node) if e["inProgress"]]


def median_of(samples, key, since, until):
    values = [s[key] for s in samples if since <= s["t"] <= until]
    return statistics.median(values) if values else float("nan")


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def soak(bench, args):
    rng = random.Random(args.seed)
    duration = args.minutes * 60
    disk = LoopDisk(bench)
    clock = Clock(bench)
    cameras = [Camera(bench, "/scene" if n < DETECTING else "/sub", duration + 1200) for n in range(CAMERAS)]
    rtsp = free_port()
    Go2rtc(bench, {
        "rtsp": {"listen": f"127.0.0.1:{rtsp}"},
        "webrtc": {"listen": ""},
        "streams": {f"cam{n}": f"rtsp://127.0.0.1:{c.port}{c.path}" for n, c in enumerate(cameras, 1)},
    }, [rtsp])
    relay = Relay(bench)
    broker = Broker(bench)
    env = {
        "RECORDINGS_DIR": str(disk.mount / "recordings"),
        "RECORDINGS_RESERVE": str(RESERVE),
        "CAMERA_CHECK_INTERVAL": "5s",
        **broker.node_env(),
        **bench_classify.classifier_env(bench),
        **clock.env(),
    }
    node = Node(bench, bench.temp_dir("soak-node"), extra_env=env, relay=relay).wait_listening()
    urls = [f"rtsp://127.0.0.1:{rtsp}/cam{n}" for n in range(1, CAMERAS + 1)]
    ids = add_cameras(node.port, urls[:DETECTING], 1, record=True, detect=True, classify=True)
    ids += add_cameras(node.port, urls[DETECTING:], 1, record=True)
    wait_all_recording(node, CAMERAS, 120)
    progress(f"soak: {CAMERAS} cameras recording; {args.minutes} min, a fault every {args.fault_every} s, seed {args.seed}")
    faults = Faults(args, node, ids, cameras, relay, broker, disk, clock, rng)
    watcher = Watcher(node, cameras, ids)
    # The footage counted from here (the clock not stepped yet).
    started, window_start = time.monotonic(), now_ms() + 5000
    watcher.start()
    try:
        order = schedule(int((duration - 1) // args.fault_every), rng)
        for n, kind in enumerate(order, 1):
            delay = started + n * args.fault_every - time.monotonic()
            if watcher.stop.wait(max(0, delay)) or watcher.failures:
                break
            faults.do(kind)
            if node.proc.poll() is not None:
                raise BenchError(f"the node exited with status {node.proc.poll()}:\n{node.tail()}")
        watcher.stop.wait(max(0, started + duration - time.monotonic()))
        ended = time.monotonic()
        window_end = now_ms() - 20_000
        progress(f"soak: the faults are over; settling (events end, at most {SETTLE_S} s)")
        deadline = time.monotonic() + SETTLE_S
        while in_progress(node) and time.monotonic() < deadline:
            time.sleep(2)
        watcher.poll_spans()
    finally:
        watcher.finish()
    return report(bench, node, watcher, faults, ids, started, ended, (window_start, window_end))


def covered_s(spans, window):
    """Seconds of `window` that `spans` cover."""
    return sum(max(0, min(e, window[1]) - max(s, window[0])) for s, e in merge(spans)) / 1000


def report(bench, node, watcher, faults, ids, started, ended, window):
    """Adds the figures to `bench`; returns the details behind them."""
    part = min(600, (ended - started) / 3)
    first = (started, started + part)
    last = (ended - part, ended)
    label = f"{part / 60:.3g} min"
    minutes = (window[1] - window[0]) / 60000
    units = {"rss_kib": ("RSS", "KiB"), "fds": ("open files", ""), "threads": ("threads", ""),
             "children": ("descendant processes", "")}
    for key, (what, unit) in units.items():
        before = median_of(watcher.samples, key, *first)
        after = median_of(watcher.samples, key, *last)
        # Noise: a page-cache-sized wobble of RSS, a connection or a child starting.
        limit = max(4096, before * 0.05) if key == "rss_kib" else 2
        bench.add_figure(f"soak_{key}_growth", f"the node's {what}: median of the last {label} less the first {label}'s",
                         after - before, unit, ("<=", limit), first=before, last=after)
    steps = faults.never_lived()
    # The window and the outages in the node's times.
    window = (window[0] + faults.node_offset_ms(window[0]), window[1] + faults.node_offset_ms(window[1]))
    lost, deleted = {}, 0.0
    for index, camera_id in enumerate(ids):
        outages = [(down + faults.node_offset_ms(down) - 1000, up + faults.node_offset_ms(up) + GRACE_S * 1000)
                   for i, down, up in faults.outages if i == index]
        found = holes(watcher.seen[camera_id], window, outages + steps)
        if found:
            lost[f"camera {index + 1}"] = [f"{iso(s)} to {iso(e)} ({(e - s) / 1000:.1f} s)" for s, e in found]
        deleted += covered_s(watcher.seen[camera_id], window) - covered_s(watcher.listed[camera_id], window)
    lost_s = sum(float(h.rsplit("(", 1)[1].split()[0]) for found in lost.values() for h in found)
    bench.add_figure("soak_footage_lost", f"seconds of footage lost outside the cameras' outages (each with "
                     f"{GRACE_S} s of grace after its return) and the clock's forward steps (and {SEGMENT_S} s before each), {len(ids)} cameras, "
                     f"{minutes:.0f} min", lost_s, "s", ("=", 0),
                     holes=sum(map(len, lost.values())), listed_then_deleted_s=deleted)
    listed = events(node)
    left = [e for e in listed if e["inProgress"]]
    bench.add_figure("soak_events_in_progress", f"events left in progress {SETTLE_S} s at most after the faults end",
                     len(left), "", ("=", 0), events=len(listed))
    bench.add_figure("soak_status_p99", f"GET /api/status p99 throughout, {STATUS_PER_SECOND} a second kept alive",
                     percentile(watcher.status_ms, 99), "ms", ("<", 20), requests=len(watcher.status_ms),
                     p50_ms=statistics.median(watcher.status_ms), max_ms=max(watcher.status_ms),
                     errors=len(watcher.status_errors))
    return {
        "faults": faults.log,
        "outages": [{"camera": i + 1, "down": iso(d), "up": iso(u)} for i, d, u in faults.outages],
        "footage_lost": lost,
        "events_in_progress": [e["id"] for e in left],
        "status_clock_at_end": json.loads(node.get("/api/status"))["clock"],
        "status_errors": watcher.status_errors,
        "samples": watcher.samples,
        "offsets": [{"at": iso(t), "wall_clock_s": offset} for t, offset in faults.offsets[1:]],
        "spans_seen": {f"camera {n}": [[iso(s), iso(e)] for s, e in watcher.seen[i]] for n, i in enumerate(ids, 1)},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60, help="how long the faults go on (default 60)")
    parser.add_argument("--fault-every", type=float, default=240, help="seconds between faults (default 240)")
    parser.add_argument("--seed", type=int, default=46, help="draws the faults' order and cameras (default 46)")
    parser.add_argument("--clock-step", type=int, default=120, help="seconds the clock steps forward (default 120)")
    parser.add_argument("--clock-back", action="store_true",
                        help="step the clock back again half a fault's interval after each forward step")
    parser.add_argument("--binary", type=Path, default=ROOT / "target/release/nvr-node")
    parser.add_argument("--json", type=Path, default=ROOT / "target/bench-soak.json")
    parser.add_argument("--classifier", type=Path, default=ROOT / "target/classify/nvr-classify")
    parser.add_argument("--model", type=Path, default=ROOT / "target/model")
    args = parser.parse_args()
    if args.fault_every < 30:
        parser.error("--fault-every: 30 s at least, so that each fault is over before the next")
    if args.clock_step <= 10:
        parser.error("--clock-step: more than 10 s, the most the node takes a backward step by")
    binary = args.binary.resolve()
    if not os.access(binary, os.X_OK):
        print(f"bench: no node binary at {binary}; build it with `cargo build --release`", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench: the soak needs root, for its loop disk", file=sys.stderr)
        return 1
    where = provenance()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    cleanup = Cleanup()
    bench = None
    try:
        bench = Bench(Settings(False), binary, find_tools(), cleanup,
                      classifier=args.classifier.resolve(), model_dir=args.model.resolve())
        bench_classify.check(bench)
        details = soak(bench, args)
    except (BenchError, OSError, subprocess.TimeoutExpired) as e:
        output = bench.unstopped_nodes_output() if bench else ""
        print(f"bench: failed: {e}{output}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    finally:
        cleanup.run()
    print("faults:")
    for fault in details["faults"]:
        print(f"  {fault['at']} {fault['fault']}: {fault['note']}")
    print(f"the status's clock at the end: {json.dumps(details['status_clock_at_end'])}")
    for key in ("footage_lost", "events_in_progress", "status_errors"):
        if details[key]:
            print(f"{key}: {json.dumps(details[key], indent=1)}")
    print(table(bench))
    write_json(bench, args.json, ["soak"], where)
    detail = args.json.with_suffix(".details.json")
    detail.write_text(json.dumps(details, indent=1) + "\n")
    print(f"figures in {args.json}, the faults, samples and holes in {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

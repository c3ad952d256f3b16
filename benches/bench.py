#!/usr/bin/python3
"""Benchmark of nvr-node, each figure measured next to a reference in the same run.

Usage: python3 benches/bench.py [--smoke] [--binary PATH] [--json PATH]

Starts everything it needs on 127.0.0.1 (the node, go2rtc stand-ins, a camera
that never answers, nginx, and the GStreamer test camera for the recording
figures), each in its own temporary folder, and stops all of it on exit. Prints a markdown table and writes the same figures as JSON
(default target/bench.json). Needs wrk and nginx (Debian: apt-get install wrk
nginx-light). Exits 0 after printing, 1 if something broke, 2 if the node
binary is missing.
"""

import argparse
import calendar
import collections
import concurrent.futures
import http.client
import json
import os
import re
import selectors
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAMERAS = 64
HUNG_CAMERAS = 16
SMALL_EVENTS = 100
EVENT_KINDS = ("person", "vehicle", "animal", "motion", "package")
ANSWER_SDP = (
    b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=bench relay answer\r\nt=0 0\r\n"
    b"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:96 H264/90000\r\n"
    b"a=setup:passive\r\na=mid:0\r\na=sendonly\r\n"
)
OFFER_SDP = (
    b"v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    b"a=group:BUNDLE 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n"
    b"a=ice-ufrag:bnch\r\na=ice-pwd:benchbenchbenchbenchbe\r\n"
    b"a=fingerprint:sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
    b"00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF\r\n"
    b"a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=rtpmap:96 H264/90000\r\n"
)
# The figures in the order of the table: the order of the items.
FIGURES = (
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
)
# The GStreamer test camera's 1280x720 H.264 stream at 2 Mbit/s, with AAC.
CAMERA_SCRIPT = ROOT / "tests/camera/rtsp_camera.py"
HD_PATH = "/hd"
RECORDING_CAMERAS = 8
# The 640x360 stream the watchers decode as a camera's sub stream.
SUB_PATH = "/main"
SCENE_PATH = "/scene"
DETECTING_CAMERAS = 4
TOOLS = {
    "wrk": "apt-get install wrk",
    "nginx": "apt-get install nginx-light (or nginx)",
    "mosquitto": "apt-get install mosquitto",
    "mosquitto_passwd": "apt-get install mosquitto",
}
# Start-up over months of footage (issue 21, item 4): cameras, days of index,
# segment files; and cameras whose addresses do not answer.
FOOTAGE_CAMERAS = 8
FOOTAGE_DAYS = 30
DEAD_CAMERAS = 64
# A real segment the recorder's command made (3 s, H.264 + AAC, with its mfra).
SEGMENT_SAMPLE = ROOT / "src/media/testdata/segment.mp4"
MQTT_USER = "bench"
MQTT_PASSWORD = "bench-password"


class BenchError(Exception):
    """Something broke: the run is invalid and the script exits 1 with this message."""


class Settings:
    """Durations and sizes of one run: the full benchmark or the short smoke run."""

    def __init__(self, smoke):
        self.smoke = smoke
        self.wrk_seconds = 2 if smoke else 10
        self.isolation_wrk_seconds = 2 if smoke else 5
        self.large_events = 10_000 if smoke else 1_000_000
        self.whep_requests = 200 if smoke else 2000
        self.startup_launches = 3 if smoke else 5
        self.idle_seconds = 10 if smoke else 60
        self.recording_seconds = 20 if smoke else 60
        self.detection_seconds = 20 if smoke else 60
        self.footage_files = 8_000 if smoke else 100_000
        self.footage_runs = 1 if smoke else 3
        self.dead_cameras_seconds = 15 if smoke else 60


class Cleanup:
    """What the run started, stopped in reverse order on exit (also on Ctrl-C or an error)."""

    def __init__(self):
        self.actions = []

    def add(self, action):
        """Registers `action` (no arguments) to run on exit."""
        self.actions.append(action)

    def run(self):
        """Runs every registered action, newest first, going on past failures."""
        while self.actions:
            action = self.actions.pop()
            try:
                action()
            except Exception as e:  # so that every later action still runs
                print(f"bench: cleanup: {e}", file=sys.stderr)


# --- helpers ---------------------------------------------------------------


def free_port():
    """A port nothing listens on now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc, sig=signal.SIGTERM):
    """Stops `proc` with `sig`, killing it if it is still there after 10 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def accepts(port):
    """Whether something accepts connections on 127.0.0.1:`port` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def request(port, method, path, body=None, content_type=None, timeout=30):
    """One HTTP request on a new connection; returns (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": content_type} if content_type else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"{method} {path} on port {port}: {e or type(e).__name__}") from e
    finally:
        conn.close()


def expect(status, body, wanted, what):
    """Raises BenchError unless `status` is `wanted`."""
    if status != wanted:
        text = body[:500].decode("utf-8", "replace")
        raise BenchError(f"{what}: expected {wanted}, got {status}: {text}")


def proc_fields(pid, name):
    """The `key: value` lines of /proc/PID/<name> as a dict of the first number of each."""
    fields = {}
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        key, _, value = line.partition(":")
        number = value.split()
        if number and number[0].isdigit():
            fields[key] = int(number[0])
    return fields


def median_us(samples_ns):
    """The median of nanosecond samples, in microseconds."""
    return statistics.median(samples_ns) / 1000


# --- the processes the benchmark starts ----------------------------------


class RelayStandIn:
    """A go2rtc stand-in on a thread of this process, as fast as Python allows:
    one selector loop, HTTP/1.1 keep-alive, no thread per connection.

    `GET /api` 200 (health), `GET /api/streams` the streams put so far,
    `PUT /api/streams?name=&src=` and `DELETE /api/streams?src=` 200,
    `POST /api/webrtc?src=` 201 with a fixed SDP answer, anything else 404.
    It remembers streams as go2rtc does, so the node's reconcile settles
    instead of putting every stream back every 10 s.
    """

    def __init__(self, cleanup):
        self.streams = {}
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(512)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.buffers = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        cleanup.add(self.stop)

    def url(self):
        """The base URL to give the node as RELAY_URL."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        """Stops the loop and closes every socket."""
        self.stopped.set()
        self.thread.join(timeout=2)

    def _serve(self):
        """The loop: accepts connections and answers each complete request at once."""
        while not self.stopped.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.fileobj)
        for conn in list(self.buffers):
            self._drop(conn)
        self.selector.close()
        self.listener.close()

    def _accept(self):
        """Takes one pending connection into the loop."""
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(False)
        self.buffers[conn] = b""
        self.selector.register(conn, selectors.EVENT_READ)

    def _drop(self, conn):
        """Forgets and closes a connection."""
        self.selector.unregister(conn)
        del self.buffers[conn]
        conn.close()

    def _read(self, conn):
        """Reads what arrived on `conn` and answers the requests it completes."""
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        buffered = self.buffers[conn] + data
        while (parsed := split_request(buffered)) is not None:
            (method, target, _body), buffered = parsed
            conn.setblocking(True)
            try:
                conn.sendall(self._answer(method, target))
            except OSError:
                self._drop(conn)
                return
            conn.setblocking(False)
        self.buffers[conn] = buffered

    def _answer(self, method, target):
        """The full HTTP response to one request."""
        path, _, query = target.partition("?")
        params = dict(urllib.parse.parse_qsl(query))
        if (method, path) == ("POST", "/api/webrtc"):
            return http_response(201, "application/sdp", ANSWER_SDP)
        if (method, path) == ("GET", "/api"):
            return http_response(200, "application/json", b'{"version":"bench"}')
        if (method, path) == ("GET", "/api/streams"):
            listing = {n: {"producers": [{"url": s}]} for n, s in self.streams.items()}
            return http_response(200, "application/json", json.dumps(listing).encode())
        if (method, path) == ("PUT", "/api/streams") and "src" in params:
            self.streams[params.get("name", params["src"])] = params["src"]
            return http_response(200, "text/plain", b"")
        if (method, path) == ("DELETE", "/api/streams"):
            self.streams.pop(params.get("src"), None)
            return http_response(200, "text/plain", b"")
        return http_response(404, "text/plain", b"404 page not found")


def split_request(buffer):
    """Splits one complete request off `buffer`: ((method, target, body), rest), or None."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = buffer[:head_end].decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    end = head_end + 4 + length
    if len(buffer) < end:
        return None
    return (method, target, buffer[head_end + 4 : end]), buffer[end:]


def http_response(status, content_type, body):
    """An HTTP/1.1 response with a body, as bytes."""
    reasons = {200: "OK", 201: "Created", 404: "Not Found"}
    head = (
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class SilentCamera:
    """A TCP server that accepts connections and never answers: a hung camera."""

    def __init__(self, cleanup):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.held = []
        self.stopped = False
        threading.Thread(target=self._hold, daemon=True).start()
        cleanup.add(self.stop)

    def _hold(self):
        """Accepts and keeps every connection, silently, until the listener closes."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)

    def stop(self):
        """Closes the listener and every held connection: the probes waiting on them fail."""
        if self.stopped:
            return
        self.stopped = True
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for conn in self.held:
            conn.close()


class Node:
    """An nvr-node process with its own data folder and relay stand-in; its output is kept."""

    def __init__(self, bench, data_dir, port=0, extra_env=None):
        self.data_dir = data_dir
        self.relay = RelayStandIn(bench.cleanup)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PORT": str(port),
            "LISTEN_ADDRESS": "127.0.0.1",
            "DATA_DIR": str(data_dir),
            "RELAY_URL": self.relay.url(),
            "NODE_NAME": "bench-node",
            "LOG_LEVEL": "info",
            **(extra_env or {}),
        }
        self.port = port
        self.stopped = False
        bench.nodes.append(self)
        self.output = collections.deque(maxlen=100)
        # perf_counter() of the first output line holding each watched text.
        self.seen = {}
        self.watched = ("folder and index reconciled in",)
        self.listening = threading.Event()
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            [bench.binary],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        bench.cleanup.add(self.stop)
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    @property
    def pid(self):
        """The node's process id."""
        return self.proc.pid

    def _drain(self, pipe):
        """Keeps the last lines of a pipe; notes the port from the `listening on` line."""
        for line in pipe:
            self.output.append(line.rstrip("\n"))
            for text in self.watched:
                if text in line and text not in self.seen:
                    self.seen[text] = (time.perf_counter(), line.strip())
            if match := re.match(r"listening on http://[^ ]+:(\d+)$", line.strip()):
                self.port = int(match.group(1))
                self.listening.set()

    def wait_listening(self):
        """Waits for the node to print its port; raises BenchError if it does not."""
        if not self.listening.wait(timeout=20):
            raise BenchError(f"the node did not start (exit status {self.proc.poll()}):\n{self.tail()}")
        return self

    def tail(self):
        """The node's last output lines, for error messages."""
        return "\n".join(self.output)

    def get(self, path):
        """GET `path`; raises BenchError unless 200; returns the body."""
        status, body = request(self.port, "GET", path)
        expect(status, body, 200, f"GET {path}")
        return body

    def stop(self):
        """Stops the node with SIGTERM (killing it if it lingers) and its relay stand-in."""
        self.stopped = True
        stop_process(self.proc)
        self.relay.stop()


class Nginx:
    """nginx serving one file as /api/status, configured in its own temporary folder."""

    def __init__(self, bench, body):
        folder = bench.temp_dir("nginx")
        (folder / "www/api").mkdir(parents=True)
        (folder / "www/api/status").write_bytes(body)
        self.port = free_port()
        self.error_log = folder / "err"
        conf = folder / "nginx.conf"
        conf.write_text(nginx_config(folder, self.port))
        command = [bench.tools["nginx"], "-p", str(folder), "-c", str(conf), "-e", str(self.error_log)]
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        bench.cleanup.add(lambda: stop_process(self.proc, signal.SIGQUIT))
        self._wait_ready(body)

    def _wait_ready(self, body):
        """Waits until nginx serves `body`; raises BenchError if it does not within 5 s."""
        deadline = time.monotonic() + 5
        while not accepts(self.port):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                errors = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
                raise BenchError(f"nginx did not start:\n{errors}{self.tail()}")
            time.sleep(0.02)
        status, served = request(self.port, "GET", "/api/status")
        expect(status, served, 200, "nginx GET /api/status")
        if served != body:
            raise BenchError("nginx serves other bytes than the node's status")

    def tail(self):
        """The end of nginx's error log, for error messages."""
        return self.error_log.read_text()[-4000:] if self.error_log.exists() else ""


def nginx_config(folder, port):
    """An nginx.conf serving `folder`/www on 127.0.0.1:`port`, everything kept in `folder`."""
    temp_paths = "\n".join(
        f"    {kind}_temp_path {folder}/{kind}_temp;"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes auto;
error_log {folder}/err;
pid {folder}/pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    default_type application/json;
    keepalive_requests 1000000;
{temp_paths}
    server {{
        listen 127.0.0.1:{port};
        root {folder}/www;
    }}
}}
"""


# --- wrk --------------------------------------------------------------------


def run_wrk(bench, server, path, seconds):
    """Runs `wrk -t2 -c32 -dNs --latency` on `path` of `server` (a Node or Nginx);
    returns requests/s and percentiles in ms."""
    url = f"http://127.0.0.1:{server.port}{path}"
    command = [bench.tools["wrk"], "-t2", "-c32", f"-d{seconds}s", "--latency", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed: {done.stderr}{done.stdout}")
    if "Non-2xx or 3xx responses" in done.stdout:
        raise BenchError(
            f"{' '.join(command)}: some answers were not 2xx:\n{done.stdout}\n"
            f"--- the server's last output ---\n{server.tail()}"
        )
    return parse_wrk(done.stdout, " ".join(command))


def parse_wrk(output, command):
    """Requests/s and the latency distribution (50/75/90/99 %, in ms) from wrk's output."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    latencies = dict(re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+\w+)\s*$", output, re.M))
    if not rps or "99" not in latencies:
        raise BenchError(f"{command}: cannot read wrk's output:\n{output}")
    return {
        "rps": float(rps.group(1)),
        **{f"p{p}_ms": duration_ms(text) for p, text in latencies.items()},
    }


def duration_ms(text):
    """A wrk duration such as 812.00us, 1.53ms, 2.01s or 1.00m, in milliseconds."""
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000}[unit]


# --- the run ------------------------------------------------------------------


class Bench:
    """One benchmark run: its settings, tools, temporary folders and figures."""

    def __init__(self, settings, binary, tools, cleanup):
        self.settings = settings
        self.tools = tools
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

    def unexpected_exits(self):
        """What every node that exited without being stopped printed last, for error messages."""
        return "".join(
            f"\n--- node {node.pid} exited with status {node.proc.returncode}; its last output ---\n"
            f"{node.tail()}"
            for node in self.nodes
            if not node.stopped and node.proc.poll() is not None
        )

    def temp_dir(self, name):
        """A new folder of its own under the run's temporary folder."""
        folder = self.root / name
        folder.mkdir()
        return folder

    def add_figure(self, name, label, value, unit, target, **raw):
        """Records a figure; `target` is (operator, limit) with operator one of < <= >= =."""
        operator, limit = target
        met = {"<": value < limit, "<=": value <= limit, ">=": value >= limit, "=": value == limit}
        symbol = {"<": "<", "<=": "≤", ">=": "≥", "=": "="}[operator]
        self.figures[name] = {
            "label": label,
            "value": round(value, 3),
            "unit": unit,
            "target": f"{symbol} {limit:g} {unit}".strip(),
            "met": met[operator],
            **{k: round(v, 3) if isinstance(v, float) else v for k, v in raw.items()},
        }


def add_cameras(port, urls, parallel, record=False, detect=False, sub_url=None):
    """Adds a camera per RTSP URL through the API, `parallel` at a time; returns their ids.
    They record and detect only when asked: the API's figures are of a node that does neither."""

    def add(numbered):
        number, url = numbered
        camera = {"name": f"Cam {number}", "rtspUrl": url, "record": record, "detect": detect}
        if sub_url:
            camera["rtspSubUrl"] = sub_url
        body = json.dumps(camera).encode()
        status, answer = request(port, "POST", "/api/cameras", body, "application/json")
        expect(status, answer, 201, "POST /api/cameras")
        return json.loads(answer)["id"]

    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(add, enumerate(urls, 1)))


def wait_relay_healthy(node):
    """Waits (10 s at most) until the node's status says the relay stand-in is healthy."""
    deadline = time.monotonic() + 10
    while not json.loads(node.get("/api/status"))["relayHealthy"]:
        if time.monotonic() > deadline:
            raise BenchError(f"the node never saw its relay stand-in as healthy:\n{node.tail()}")
        time.sleep(0.1)


def measure_idle_rss(bench, node):
    """Item 4a: VmRSS of the node idle with its cameras, after 2 s to settle."""
    time.sleep(2)
    rss_mib = proc_fields(node.pid, "status")["VmRSS"] / 1024
    bench.add_figure(
        "idle_rss", f"RSS idle, {CAMERAS} cameras", rss_mib, "MiB", ("<", 6),
    )


def measure_idle_writes(bench, node):
    """Item 7: bytes the idle node sends to storage while its status is polled every 2 s."""
    seconds = bench.settings.idle_seconds
    before = proc_fields(node.pid, "io")
    start = time.monotonic()
    for tick in range(seconds // 2):
        node.get("/api/status")
        time.sleep(max(0, start + 2 * (tick + 1) - time.monotonic()))
    after = proc_fields(node.pid, "io")
    bench.add_figure(
        "idle_disk_writes",
        f"disk writes idle {seconds} s, status polled every 2 s (write_bytes)",
        after["write_bytes"] - before["write_bytes"],
        "bytes",
        ("=", 0),
        seconds=seconds,
        status_polls=seconds // 2,
        wchar_bytes=after["wchar"] - before["wchar"],
    )


def measure_status(bench, node):
    """Items 1 and 4b: status under wrk next to nginx serving the same bytes; peak RSS after."""
    seconds = bench.settings.wrk_seconds
    node_run = run_wrk(bench, node, "/api/status", seconds)
    peak_mib = proc_fields(node.pid, "status")["VmHWM"] / 1024
    body = node.get("/api/status")
    nginx = Nginx(bench, body)
    nginx_run = run_wrk(bench, nginx, "/api/status", seconds)
    stop_process(nginx.proc, signal.SIGQUIT)
    bench.add_figure(
        "status_vs_nginx",
        f"GET /api/status ({CAMERAS} cameras, {len(body)} bytes): node ÷ nginx requests/s",
        node_run["rps"] / nginx_run["rps"],
        "",
        (">=", 0.8),
        node_rps=node_run["rps"],
        nginx_rps=nginx_run["rps"],
        wrk_seconds=seconds,
        body_bytes=len(body),
    )
    bench.add_figure(
        "status_p99",
        "GET /api/status p99 latency, 32 connections",
        node_run["p99_ms"],
        "ms",
        ("<", 2),
        node_p50_ms=node_run["p50_ms"],
        nginx_p99_ms=nginx_run["p99_ms"],
    )
    bench.add_figure(
        "peak_rss", "peak RSS (VmHWM) after the status load", peak_mib, "MiB", ("<", 24),
    )


def measure_isolation(bench, node, silent):
    """Item 5: status p99 while 16 probes of hung cameras run, next to p99 without them."""
    urls = [f"rtsp://127.0.0.1:{silent.port}/hung{n}" for n in range(1, HUNG_CAMERAS + 1)]
    hung = add_cameras(node.port, urls, HUNG_CAMERAS)
    seconds = bench.settings.isolation_wrk_seconds
    without = run_wrk(bench, node, "/api/status", seconds)
    finished = []

    def probe(camera_id):
        request(node.port, "POST", f"/api/cameras/{camera_id}/probe", timeout=60)
        finished.append(camera_id)

    probes = [threading.Thread(target=probe, args=(i,), daemon=True) for i in hung]
    held_before = len(silent.held)
    for thread in probes:
        thread.start()
    wait_for_connections(silent, held_before + HUNG_CAMERAS)
    loaded = run_wrk(bench, node, "/api/status", seconds)
    in_flight = HUNG_CAMERAS - len(finished)
    silent.stop()
    for thread in probes:
        thread.join(timeout=15)
    if in_flight < HUNG_CAMERAS:
        raise BenchError(f"only {in_flight} of {HUNG_CAMERAS} probes were still running at the end")
    bench.add_figure(
        "hung_probes_p99_ratio",
        f"status p99 with {HUNG_CAMERAS} hung probes ÷ without",
        loaded["p99_ms"] / without["p99_ms"],
        "",
        ("<=", 1.5),
        p99_without_ms=without["p99_ms"],
        p99_with_ms=loaded["p99_ms"],
        rps_without=without["rps"],
        rps_with=loaded["rps"],
        wrk_seconds=seconds,
        probes_in_flight_at_end=in_flight,
    )


def wait_for_connections(silent, count):
    """Waits until the hung camera holds `count` connections (every probe is waiting on it),
    then a moment more for the probe processes to settle; raises BenchError after 5 s."""
    deadline = time.monotonic() + 5
    while len(silent.held) < count:
        if time.monotonic() > deadline:
            raise BenchError(f"the probes did not reach the hung camera ({len(silent.held)} of {count})")
        time.sleep(0.01)
    time.sleep(0.2)


def copy_database(node, folder):
    """Copies the running node's database (schema, version and cameras) into `folder`."""
    source = sqlite3.connect(f"file:{node.data_dir / 'nvr-node.db'}?mode=ro", uri=True)
    target = sqlite3.connect(folder / "nvr-node.db")
    source.backup(target)
    source.close()
    target.close()


def fill_events(folder, camera_ids, count):
    """Inserts `count` events straight into the database in `folder`, in one transaction."""
    db = sqlite3.connect(folder / "nvr-node.db")
    db.execute("PRAGMA cache_size = -262144")
    first_ms = int(time.time() * 1000) - count * 1000
    rows = (
        (
            str(uuid.uuid4()),
            camera_ids[i % len(camera_ids)],
            EVENT_KINDS[i % len(EVENT_KINDS)],
            0.5 + (i % 50) / 100,
            first_ms + i * 1000,
            first_ms + i * 1000 + 800,
        )
        for i in range(count)
    )
    with db:
        db.executemany(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms,"
            " clip_status, clip_path) VALUES (?, ?, ?, ?, ?, ?, 'local', NULL)",
            rows,
        )
    db.close()


def add_events_figure(bench, small_run, large_run):
    """Item 2: GET /api/events requests/s with many events stored ÷ with 100."""
    count = bench.settings.large_events
    bench.add_figure(
        "events_large_vs_small",
        f"GET /api/events: {count:,} ÷ {SMALL_EVENTS} events stored, requests/s",
        large_run["rps"] / small_run["rps"],
        "",
        (">=", 0.9),
        large_events=count,
        small_events=SMALL_EVENTS,
        large_rps=large_run["rps"],
        small_rps=small_run["rps"],
        wrk_seconds=bench.settings.wrk_seconds,
    )


def timed_post(conn, path):
    """POSTs the SDP offer on a kept-alive connection; returns nanoseconds taken."""
    start = time.perf_counter_ns()
    conn.request("POST", path, body=OFFER_SDP, headers={"Content-Type": "application/sdp"})
    response = conn.getresponse()
    body = response.read()
    took = time.perf_counter_ns() - start
    expect(response.status, body, 201, f"POST {path}")
    return took


def timed_post_new_connection(port, path):
    """POSTs the SDP offer on a connection of its own; returns nanoseconds taken, connect included."""
    start = time.perf_counter_ns()
    status, body = request(port, "POST", path, OFFER_SDP, "application/sdp")
    took = time.perf_counter_ns() - start
    expect(status, body, 201, f"POST {path}")
    return took


def measure_whep(bench, node, camera_id):
    """Item 3: median WHEP offer through the node minus straight to the relay stand-in."""
    via_node = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
    direct = http.client.HTTPConnection("127.0.0.1", node.relay.port, timeout=30)
    node_path, relay_path = f"/api/whep/{camera_id}", f"/api/webrtc?src={camera_id}"
    samples = {"node": [], "direct": [], "direct_new": []}
    for _ in range(20):
        timed_post(via_node, node_path)
        timed_post(direct, relay_path)
    for _ in range(bench.settings.whep_requests):
        samples["node"].append(timed_post(via_node, node_path))
        samples["direct"].append(timed_post(direct, relay_path))
        samples["direct_new"].append(timed_post_new_connection(node.relay.port, relay_path))
    via_node.close()
    direct.close()
    medians = {leg: median_us(values) for leg, values in samples.items()}
    bench.add_figure(
        "whep_overhead",
        "WHEP offer: median through the node − straight to the relay",
        medians["node"] - medians["direct"],
        "µs",
        ("<", 1000),
        node_median_us=medians["node"],
        direct_median_us=medians["direct"],
        direct_new_connection_median_us=medians["direct_new"],
        requests=bench.settings.whep_requests,
    )


def answers_status(port):
    """Whether GET /api/status on `port` answers 200 now; False while nothing listens."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except (ConnectionRefusedError, ConnectionResetError):
        return False


def launch_until_status(bench, data_dir):
    """Starts a node on `data_dir`; returns ms from launch to its first status 200."""
    port = free_port()
    node = Node(bench, data_dir, port=port, extra_env={"MAX_EVENTS": "2000000"})
    deadline = node.started_at + 20
    while not answers_status(port):
        if time.perf_counter() > deadline or node.proc.poll() is not None:
            raise BenchError(f"the node did not answer status within 20 s:\n{node.tail()}")
        time.sleep(0.001)
    took_ms = (time.perf_counter() - node.started_at) * 1000
    node.stop()
    return took_ms


def measure_startup(bench, data_dir):
    """Item 6: median time from launch to the first status 200 with the large database."""
    times = [launch_until_status(bench, data_dir) for _ in range(bench.settings.startup_launches)]
    count = bench.settings.large_events
    bench.add_figure(
        "startup",
        f"start-up to the first status 200, {count:,} events (median of {len(times)})",
        statistics.median(times),
        "ms",
        ("<", 100),
        launches_ms=[round(t, 2) for t in times],
        events=count,
    )


def prepare_event_databases(bench, node, camera_ids):
    """Item 2's data folders: copies of the node's database with 100 and with many events."""
    folders = []
    for name, count in (("events-small", SMALL_EVENTS), ("events-large", bench.settings.large_events)):
        progress(f"storing {count:,} events")
        folder = bench.temp_dir(name)
        copy_database(node, folder)
        fill_events(folder, camera_ids, count)
        folders.append(folder)
    return folders


def events_node(bench, folder):
    """A node on an events database, keeping far more events than it holds."""
    node = Node(bench, folder, extra_env={"MAX_EVENTS": "2000000"}).wait_listening()
    wait_relay_healthy(node)
    return node


class TestCamera:
    """The GStreamer RTSP test camera (tests/camera/rtsp_camera.py, run by Debian's
    /usr/bin/python3); it exits with this script (its stdin closes)."""

    def __init__(self, bench):
        command = ["/usr/bin/python3", str(CAMERA_SCRIPT), "--port", "0", "--max-seconds", "1800"]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        bench.cleanup.add(lambda: stop_process(self.proc))
        line = self.proc.stdout.readline()
        match = re.match(r"ready rtsp://127\.0\.0\.1:(\d+)$", line.strip())
        if not match:
            stop_process(self.proc)
            raise BenchError(
                "the GStreamer test camera did not start (it needs python3-gi, "
                f"gir1.2-gst-rtsp-server-1.0 and gstreamer1.0-plugins-*): {self.proc.stderr.read()}"
            )
        self.port = int(match.group(1))

    def url(self, path):
        """The RTSP URL of one of its mounts."""
        return f"rtsp://127.0.0.1:{self.port}{path}"

    def scene(self, command):
        """Changes the /scene mount's picture (`box SECONDS`, `lights on`); returns when, in ms."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return time.time() * 1000


def cpu_seconds(pid):
    """User plus system CPU time of `pid` so far, in seconds (from /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def recorders_of(node, role="-f segment"):
    """The ffmpeg processes the node runs as `role` says (its recorders, by
    default; "image2pipe" for its motion decoders)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name == "ffmpeg" and int(stat.rpartition(")")[2].split()[1]) == node.pid:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if role in command:
                found.append(int(entry.name))
    return sorted(found)


def private_mib(pid):
    """Memory of `pid` shared with no other process (Private_Clean + Private_Dirty), in MiB."""
    fields = proc_fields(pid, "smaps_rollup")
    return (fields["Private_Clean"] + fields["Private_Dirty"]) / 1024


def recorded_bytes(folder):
    """The bytes of every recording file under `folder`, those being written included."""
    return sum(f.stat().st_size for f in folder.rglob("*.mp4"))


def segment_count(data_dir):
    """How many segments the node has indexed."""
    db = sqlite3.connect(f"file:{data_dir / 'nvr-node.db'}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute("SELECT COUNT(*) FROM segment").fetchone()[0]
    except sqlite3.OperationalError:
        return 0  # before the node made its schema
    finally:
        db.close()


def wait_all_recording(node, count, timeout):
    """Waits until `count` cameras of `node` say `recording`; raises BenchError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        cameras = json.loads(node.get("/api/cameras"))
        states = [c["recording"]["state"] for c in cameras]
        if states.count("recording") >= count:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"only {states.count('recording')} of {count} cameras record: {states}\n{node.tail()}")
        time.sleep(0.2)


class Broker:
    """A mosquitto on 127.0.0.1 with a password file (anonymous clients refused)."""

    def __init__(self, bench):
        folder = bench.temp_dir("mosquitto")
        passwords = folder / "passwd"
        subprocess.run(
            [bench.tools["mosquitto_passwd"], "-b", "-c", str(passwords), MQTT_USER, MQTT_PASSWORD],
            check=True,
            capture_output=True,
        )
        self.port = free_port()
        conf = folder / "mosquitto.conf"
        # As root, mosquitto would read the password file as user mosquitto.
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous false\n"
            f"password_file {passwords}\npersistence false\nuser root\n"
        )
        self.log = folder / "mosquitto.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [bench.tools["mosquitto"], "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        bench.cleanup.add(lambda: stop_process(self.proc))
        deadline = time.perf_counter() + 10
        while not accepts(self.port):
            if time.perf_counter() > deadline or self.proc.poll() is not None:
                raise BenchError(f"mosquitto did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def node_env(self):
        """The node's settings for this broker."""
        return {"MQTT_URL": f"mqtt://127.0.0.1:{self.port}", "MQTT_USER": MQTT_USER, "MQTT_PASSWORD": MQTT_PASSWORD}


def measure_mqtt(bench, camera):
    """Home Assistant through MQTT: the node's CPU and RSS with 8 cameras
    recording, their discovery and states on a real mosquitto, against the
    same with MQTT off."""
    broker = Broker(bench)
    seconds = bench.settings.detection_seconds
    measured = {}
    for name, env in (("off", {}), ("on", broker.node_env())):
        folder = bench.temp_dir(f"mqtt-{name}-node")
        node = Node(bench, folder, extra_env={"RECORDINGS_KEEP_FREE": "0", **env}).wait_listening()
        add_cameras(node.port, [camera.url(HD_PATH)] * RECORDING_CAMERAS, 4, record=True)
        wait_all_recording(node, RECORDING_CAMERAS, 60)
        status, body = request(node.port, "GET", "/api/status")
        expect(status, body, 200, "status")
        state = json.loads(body)["mqtt"]["state"]
        if state != ("connected" if env else "disabled"):
            raise BenchError(f"MQTT {name}, yet its state is {state}:\n{node.tail()}")
        time.sleep(5)
        cpu = cpu_of([node.pid], seconds)[node.pid]
        measured[name] = (cpu, proc_fields(node.pid, "status")["VmRSS"] / 1024)
        node.stop()
    (cpu_off, rss_off), (cpu_on, rss_on) = measured["off"], measured["on"]
    bench.add_figure(
        "mqtt_cpu",
        f"node CPU with MQTT connected minus MQTT off, {RECORDING_CAMERAS} cameras recording, {seconds} s each",
        cpu_on - cpu_off,
        "% of a core",
        ("<", 0.5),
        on_percent=cpu_on,
        off_percent=cpu_off,
    )
    bench.add_figure(
        "mqtt_rss",
        f"node RSS with MQTT connected minus MQTT off, {RECORDING_CAMERAS} cameras recording",
        rss_on - rss_off,
        "MiB",
        ("<", 1),
        on_mib=rss_on,
        off_mib=rss_off,
    )


def measure_recording(bench, camera):
    """The recording figures: from record on to the first segment; CPU and storage
    writes of one camera (the 1280x720 test camera) over a window; RSS with 8."""
    folder = bench.temp_dir("recording-node")
    # The reserve would be 1 GiB or more: on a nearly full disk nothing would be kept.
    node = Node(bench, folder, extra_env={"RECORDINGS_KEEP_FREE": "0"}).wait_listening()
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


def measure_detector(bench):
    """The detector's time per 320x180 frame (benches/detector.rs, release build)."""
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


def cpu_of(pids, seconds):
    """CPU seconds each of `pids` takes in the next `seconds`, as % of a core."""
    before = {pid: cpu_seconds(pid) for pid in pids}
    time.sleep(seconds)
    return {pid: 100 * (cpu_seconds(pid) - before[pid]) / seconds for pid in pids}


def wait_for_process(find, count, timeout, what):
    """Waits until `find()` returns `count` processes; returns them."""
    deadline = time.monotonic() + timeout
    while len(found := find()) < count:
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: {len(found)} of {count} after {timeout} s")
        time.sleep(0.2)
    return found


def measure_detection(bench, camera):
    """The CPU of motion detection: one camera (its decoder of the 640x360 sub
    stream at 25 fps, and the node), then four cameras detecting and recording
    (the node's own CPU and RSS)."""
    folder = bench.temp_dir("detection-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_KEEP_FREE": "0"}).wait_listening()
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
    node = Node(bench, folder, extra_env={"RECORDINGS_KEEP_FREE": "0"}).wait_listening()
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
    """A box moves 3 s in the test camera's scene: from the event's last moving
    frame to the event listed, and from there to its clip on disk."""
    folder = bench.temp_dir("latency-node")
    node = Node(bench, folder, extra_env={"RECORDINGS_KEEP_FREE": "0"}).wait_listening()
    add_cameras(node.port, [camera.url(SCENE_PATH)], 1, record=True, detect=True)
    wait_all_recording(node, 1, 60)
    time.sleep(3)
    camera.scene("box 3")
    event = listed_at = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = json.loads(node.get("/api/events"))
        now = time.time() * 1000
        if events and event is None:
            event, listed_at = events[0], now
        if event and events and events[0]["clipUrl"]:
            clip_at = now
            break
        time.sleep(0.05)
    else:
        raise BenchError(f"no motion event with its clip within 60 s: {event}\n{node.tail()}")
    ended = iso_ms(event["endedAt"])
    bench.add_figure(
        "motion_event_latency",
        "last moving frame to the event listed",
        (listed_at - ended) / 1000,
        "s",
        ("<=", 11),
        debounce_s=10,
    )
    # The event is listed 10 s after its end, so its 5 s of post-capture
    # are over by then: from the listing on, the clip should take 5 s at most.
    bench.add_figure(
        "motion_clip_latency",
        "event listed to its clip and thumbnail on disk",
        (clip_at - listed_at) / 1000,
        "s",
        ("<=", 5),
        after_post_capture_s=(clip_at - (ended + 5000)) / 1000,
        event_length_s=(ended - iso_ms(event["startedAt"])) / 1000,
    )
    node.stop()


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
    env = {"RECORDINGS_DIR": str(recordings), "RECORDINGS_KEEP_FREE": "0"}
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
    env = {"RECORDINGS_DIR": str(folder / "recordings"), "RECORDINGS_KEEP_FREE": "0"}
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
    silent = SilentCamera(bench.cleanup)
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


def iso_ms(text):
    """Milliseconds since the epoch of an API time, `2026-11-22T10:04:05.123Z`."""
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(text[20:23])


def progress(message):
    """Tells the person running the benchmark what it is doing (stderr)."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run(bench):
    """Runs every measurement, one at a time, in an order that leaves each undisturbed."""
    silent = SilentCamera(bench.cleanup)
    progress(f"starting the node and adding {CAMERAS} cameras")
    node = Node(bench, bench.temp_dir("status-node")).wait_listening()
    closed = free_port()
    urls = [f"rtsp://127.0.0.1:{closed}/stream{n}" for n in range(1, CAMERAS + 1)]
    camera_ids = add_cameras(node.port, urls, 8)
    wait_relay_healthy(node)
    progress("idle memory and disk writes")
    measure_idle_rss(bench, node)
    measure_idle_writes(bench, node)
    progress("GET /api/status: node, then nginx")
    measure_status(bench, node)
    small_dir, large_dir = prepare_event_databases(bench, node, camera_ids)
    progress(f"adding {HUNG_CAMERAS} cameras that never answer (about 10 s), then status under their probes")
    measure_isolation(bench, node, silent)
    node.stop()
    progress("GET /api/events and WHEP")
    small = events_node(bench, small_dir)
    small_run = run_wrk(bench, small, "/api/events", bench.settings.wrk_seconds)
    measure_whep(bench, small, camera_ids[0])
    small.stop()
    large = events_node(bench, large_dir)
    large_run = run_wrk(bench, large, "/api/events", bench.settings.wrk_seconds)
    large.stop()
    add_events_figure(bench, small_run, large_run)
    progress("start-up")
    measure_startup(bench, large_dir)
    camera = TestCamera(bench)
    progress("recording: one camera's CPU and writes, then 8 cameras")
    measure_recording(bench, camera)
    progress("motion detection: the detector, one camera, four cameras, an event's latency")
    measure_detector(bench)
    measure_detection(bench, camera)
    measure_motion_latency(bench, camera)
    progress("Home Assistant through MQTT: 8 cameras with MQTT off, then connected")
    measure_mqtt(bench, camera)
    measure_reconciliation(bench, camera)
    measure_dead_cameras(bench)


def number(value):
    """A figure as text: whole above 100, three significant digits below."""
    if isinstance(value, list):
        return " ".join(number(v) for v in value)
    if isinstance(value, (int, float)) and abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def table(bench):
    """The markdown table of the figures."""
    lines = ["smoke run: targets not enforced", ""] if bench.settings.smoke else []
    lines += ["| measurement | figure | target | result | details |", "|---|---|---|---|---|"]
    shown = ("label", "value", "unit", "target", "met")
    for figure in (bench.figures[name] for name in FIGURES):
        details = ", ".join(f"{k} {number(v)}" for k, v in figure.items() if k not in shown)
        value = f"{number(figure['value'])} {figure['unit']}".strip()
        met = "met" if figure["met"] else "not met"
        lines.append(f"| {figure['label']} | {value} | {figure['target']} | {met} | {details} |")
    return "\n".join(lines)


def write_json(bench, path):
    """Writes the figures and the machine they were measured on to `path`."""
    uname = os.uname()
    report = {
        "smoke": bench.settings.smoke,
        "binary": str(bench.source_binary),
        "figures": {name: bench.figures[name] for name in FIGURES},
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": f"{uname.sysname} {uname.release} {uname.version} {uname.machine}",
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


def find_tools():
    """Paths of wrk and nginx; raises BenchError naming the Debian package of a missing one."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    tools = {name: shutil.which(name, path=search) for name in TOOLS}
    missing = [f"{name} is missing: {TOOLS[name]}" for name, path in tools.items() if not path]
    if missing:
        raise BenchError("; ".join(missing))
    return tools


def parse_args():
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="short run; targets not enforced")
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
    return parser.parse_args()


def exit_on_signal(signum, _frame):
    """Turns SIGTERM or SIGHUP into an exit that runs the clean-up."""
    raise SystemExit(128 + signum)


def main():
    """Runs the benchmark; returns the exit status."""
    args = parse_args()
    binary = args.binary.resolve()
    if not os.access(binary, os.X_OK):
        print(f"bench: no node binary at {binary}; build it with `cargo build --release`", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    cleanup = Cleanup()
    bench = None
    try:
        bench = Bench(Settings(args.smoke), binary, find_tools(), cleanup)
        run(bench)
    except (BenchError, OSError, subprocess.TimeoutExpired) as e:
        exits = bench.unexpected_exits() if bench else ""
        print(f"bench: failed: {e}{exits}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    finally:
        cleanup.run()
    print(table(bench))
    write_json(bench, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

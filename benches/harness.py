#!/usr/bin/python3
"""The benchmark's shared harness: the processes it starts (the node, go2rtc
stand-ins, a camera that never answers, nginx, the GStreamer test camera,
mosquitto), its measuring helpers (/proc, wrk, medians), the figures and
their report (a markdown table and JSON), and the command line every part
shares. The parts (bench_http.py, bench_recording.py, bench_motion.py,
bench_mqtt.py, bench_memory.py, bench_classify.py) each measure one subject
through it; bench.py runs them all or those named.
"""

import argparse
import calendar
import collections
import concurrent.futures
import datetime
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The latest full run of each part, kept in the repository (--record).
RESULTS = ROOT / "benches/results.json"
ANSWER_SDP = (
    b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=bench relay answer\r\nt=0 0\r\n"
    b"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:96 H264/90000\r\n"
    b"a=setup:passive\r\na=mid:0\r\na=sendonly\r\n"
)
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
    "detector_frame",
    "detector_masked_ratio",
    "detection_cpu",
    "detection_four_cameras",
    "motion_listed_latency",
    "motion_event_latency",
    "motion_clip_latency",
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
)
# The GStreamer test camera's 1280x720 H.264 stream at 2 Mbit/s, with AAC.
CAMERA_SCRIPT = ROOT / "tests/camera/rtsp_camera.py"
HD_PATH = "/hd"
RECORDING_CAMERAS = 8
# The 640x360 stream the watchers decode as a camera's sub stream.
SUB_PATH = "/main"
SCENE_PATH = "/scene"
TOOLS = {
    "wrk": "apt-get install wrk",
    "nginx": "apt-get install nginx-light (or nginx)",
    "mosquitto": "apt-get install mosquitto",
    "mosquitto_passwd": "apt-get install mosquitto",
    "mosquitto_sub": "apt-get install mosquitto-clients",
}
MQTT_USER = "bench"
MQTT_PASSWORD = "bench-password"


class BenchError(Exception):
    """Something broke: the run is invalid and the script exits 1 with this message."""


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
        self.idle_seconds = 10 if smoke else 60
        self.recording_seconds = 20 if smoke else 60
        self.detection_seconds = 20 if smoke else 60
        self.footage_files = 8_000 if smoke else 100_000
        self.footage_runs = 1 if smoke else 3
        self.dead_cameras_seconds = 15 if smoke else 60
        self.classify_crops = 30 if smoke else 300
        self.classify_idle_seconds = 20 if smoke else 60
        # The memory part: nodes measured (the median taken), the cameras
        # each grows to, and the seconds let settle and of CPU read at the most.
        self.memory_runs = 1 if smoke else 3
        self.memory_counts = (1, 2, 4) if smoke else (1, 8, 32)
        self.memory_settle_seconds = 3 if smoke else 10
        self.memory_cpu_seconds = 3 if smoke else 10


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


def cpu_seconds(pid):
    """User plus system CPU time of `pid` so far, in seconds (from /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def children_named(node, name):
    """The node's child processes whose name (comm) is `name`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        if comm == name[:15] and int(stat.rpartition(")")[2].split()[1]) == node.pid:
            found.append(int(entry.name))
    return sorted(found)


def recorders_of(node, role="-f segment"):
    """The ffmpeg processes the node runs as `role` says (its recorders, by
    default; "image2pipe" for its motion decoders)."""
    found = []
    for pid in children_named(node, "ffmpeg"):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if role in command:
            found.append(pid)
    return found


def private_mib(pid):
    """Memory of `pid` shared with no other process (Private_Clean + Private_Dirty), in MiB."""
    fields = proc_fields(pid, "smaps_rollup")
    return (fields["Private_Clean"] + fields["Private_Dirty"]) / 1024


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


def iso_ms(text):
    """Milliseconds since the epoch of an API time, `2026-11-22T10:04:05.123Z`."""
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(text[20:23])


def progress(message):
    """Tells the person running the benchmark what it is doing (stderr)."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


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


class Bench:
    """One benchmark run: its settings, tools, temporary folders and figures."""

    def __init__(self, settings, binary, tools, cleanup, classifier=None, model_dir=None):
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
        self.figures[name] = {
            "label": label,
            "value": round(value, 3),
            "unit": unit,
            "target": f"{symbol} {limit:g} {unit}".strip(),
            "met": met[operator],
            **{k: round(v, 3) if isinstance(v, float) else v for k, v in raw.items()},
        }


def add_cameras(port, urls, parallel, record=False, detect=False, sub_url=None, classify=None):
    """Adds a camera per RTSP URL through the API, `parallel` at a time; returns their ids.
    They record and detect only when asked: the API's figures are of a node that does neither.
    `classify` is sent only when given (True or False)."""

    def add(numbered):
        number, url = numbered
        camera = {"name": f"Cam {number}", "rtspUrl": url, "record": record, "detect": detect}
        if sub_url:
            camera["rtspSubUrl"] = sub_url
        if classify is not None:
            camera["classify"] = classify
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


class TestCamera:
    """The GStreamer RTSP test camera (tests/camera/rtsp_camera.py, run by Debian's
    /usr/bin/python3) behind a real go2rtc, which the node's cameras read;
    both exit with this script (the camera when its stdin closes).

    go2rtc is there because GStreamer 1.22's RTSP server deadlocks when
    several clients join a shared mount at once (a PLAY's seek waits in
    gst_rtsp_stream_set_blocked, holding the media's lock, for the video
    thread, which waits at its sink's preroll; the main loop then blocks on
    that lock, and no mount answers any more): 8 recorders and their probes
    starting together hung it one start in two on a loaded machine, and the
    run stopped at "only 0 of 8 cameras record". go2rtc reads each mount
    once, whoever reads it from go2rtc."""

    def __init__(self, bench):
        command = ["/usr/bin/python3", str(CAMERA_SCRIPT), "--port", "0", "--max-seconds", "3600"]
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
        # Read, so that it never blocks on a full pipe; kept for error messages.
        self.output = collections.deque(maxlen=50)
        threading.Thread(target=self._drain, daemon=True).start()
        self.relay_port = self._start_go2rtc(bench)

    def _start_go2rtc(self, bench):
        """Starts go2rtc with a stream per mount; returns its RTSP port."""
        binary = os.environ.get("GO2RTC") or str(ROOT / "target/go2rtc/go2rtc")
        if not os.access(binary, os.X_OK):
            raise BenchError(f"go2rtc is missing at {binary}: tests/run.sh builds it into target/go2rtc; or set GO2RTC")
        api, rtsp = free_port(), free_port()
        mounts = (HD_PATH, SUB_PATH, SCENE_PATH)
        config = {
            "api": {"listen": f"127.0.0.1:{api}"},
            "rtsp": {"listen": f"127.0.0.1:{rtsp}"},
            "webrtc": {"listen": ""},
            "srtp": {"listen": ""},
            "log": {"level": "warn"},
            "streams": {path.strip("/"): f"rtsp://127.0.0.1:{self.port}{path}" for path in mounts},
        }
        log = bench.temp_dir("go2rtc") / "go2rtc.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [binary, "-config", json.dumps(config)], stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        bench.cleanup.add(lambda: stop_process(proc))
        deadline = time.monotonic() + 10
        while not (accepts(api) and accepts(rtsp)):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise BenchError(f"go2rtc did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        return rtsp

    def _drain(self):
        """Keeps the camera's last lines of stderr."""
        for line in self.proc.stderr:
            self.output.append(line.rstrip("\n"))

    def url(self, path):
        """The RTSP URL of one of its mounts (HD_PATH, SUB_PATH, SCENE_PATH), through go2rtc."""
        return f"rtsp://127.0.0.1:{self.relay_port}{path}"

    def scene(self, command):
        """Changes the /scene mount's picture (`box SECONDS`, `lights on`); returns when, in ms."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return time.time() * 1000


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


def find_tools():
    """Paths of wrk and nginx; raises BenchError naming the Debian package of a missing one."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    tools = {name: shutil.which(name, path=search) for name in TOOLS}
    missing = [f"{name} is missing: {TOOLS[name]}" for name, path in tools.items() if not path]
    if missing:
        raise BenchError("; ".join(missing))
    return tools


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

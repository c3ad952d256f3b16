"""The programs a run starts and stops: the node (with its relay stand-in,
or a real go2rtc as its relay), nginx, the GStreamer test camera behind
go2rtc, and mosquitto; the clean-up that stops them all; and finding the
node's children."""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .base import ROOT, BenchError
from .net import accepts, expect, free_port, request
from .standins import RelayStandIn

# The GStreamer test camera's 1280x720 H.264 stream at 2 Mbit/s, with AAC.
CAMERA_SCRIPT = ROOT / "tests/camera/rtsp_camera.py"
HD_PATH = "/hd"
RECORDING_CAMERAS = 8
# The 640x360 stream the watchers decode as a camera's sub stream.
SUB_PATH = "/main"
SCENE_PATH = "/scene"
# The same 640x360 H.264 as SUB_PATH, without its G.711 sound.
VIDEO_ONLY_PATH = "/video-only"
# Real footage, looped: a driveway where one car leaves, a busy motorway.
FOOTAGE_PATH = "/footage"
BUSY_PATH = "/busy"
MQTT_USER = "bench"
MQTT_PASSWORD = "bench-password"


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


def wait_for_process(find, count, timeout, what):
    """Waits until `find()` returns `count` processes; returns them."""
    deadline = time.monotonic() + timeout
    while len(found := find()) < count:
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: {len(found)} of {count} after {timeout} s")
        time.sleep(0.2)
    return found


def process_table():
    """Every process now: its pid, to its parent's pid and its name (comm)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        table[int(entry.name)] = (int(stat.rpartition(")")[2].split()[1]), comm)
    return table


def children_of(pid, name=None):
    """The child processes of `pid`, those named `name` (comm) when given."""
    return sorted(
        child
        for child, (parent, comm) in process_table().items()
        if parent == pid and (name is None or comm == name[:15])
    )


def children_named(node, name):
    """The node's child processes whose name (comm) is `name`."""
    return children_of(node.pid, name)


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


class Node:
    """An nvr-node process with its own data folder and relay (a stand-in of
    its own, or `relay`, a Relay, when given); its output is kept."""

    def __init__(self, bench, data_dir, port=0, extra_env=None, relay=None):
        self.data_dir = data_dir
        self.relay = relay or RelayStandIn(bench)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PORT": str(port),
            "LISTEN_ADDRESS": "127.0.0.1",
            "DATA_DIR": str(data_dir),
            "RELAY_URL": self.relay.url(),
            "NODE_NAME": "bench-node",
            "LOG_LEVEL": "info",
            # The benchmarks measure 64 and 256 cameras, past a board's default.
            "MAX_CAMERAS": "256",
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
        """Stops the node with SIGTERM (killing it if it lingers), and its
        relay stand-in (a Relay given is the run's, stopped at its end)."""
        self.stopped = True
        stop_process(self.proc)
        if isinstance(self.relay, RelayStandIn):
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
        """Starts go2rtc with a stream per mount, no WebRTC; returns its RTSP port."""
        rtsp = free_port()
        mounts = (HD_PATH, SUB_PATH, SCENE_PATH, VIDEO_ONLY_PATH, FOOTAGE_PATH, BUSY_PATH)
        config = {
            "rtsp": {"listen": f"127.0.0.1:{rtsp}"},
            "webrtc": {"listen": ""},
            "streams": {path.strip("/"): f"rtsp://127.0.0.1:{self.port}{path}" for path in mounts},
        }
        start_go2rtc(bench, config, [rtsp])
        return rtsp

    def _drain(self):
        """Keeps the camera's last lines of stderr."""
        for line in self.proc.stderr:
            self.output.append(line.rstrip("\n"))

    def url(self, path):
        """The RTSP URL of one of its mounts (HD_PATH, SUB_PATH, SCENE_PATH,
        VIDEO_ONLY_PATH, FOOTAGE_PATH, BUSY_PATH), through go2rtc."""
        return f"rtsp://127.0.0.1:{self.relay_port}{path}"

    def scene(self, command):
        """Changes the /scene mount's picture (`box SECONDS`, `lights on`); returns when, in ms."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return time.time() * 1000


def start_go2rtc(bench, config, ports):
    """Starts the real go2rtc with `config` (see Go2rtc); returns its API's port."""
    return Go2rtc(bench, config, ports).api


class Go2rtc:
    """The real go2rtc (`GO2RTC`, else target/go2rtc/go2rtc) with `config`
    and its API on a free port of 127.0.0.1, stopped at the run's end;
    started again on the same ports by `restart`."""

    def __init__(self, bench, config, ports):
        self.binary = os.environ.get("GO2RTC") or str(ROOT / "target/go2rtc/go2rtc")
        if not os.access(self.binary, os.X_OK):
            raise BenchError(
                f"go2rtc is missing at {self.binary}: tests/run.sh builds it into target/go2rtc; or set GO2RTC"
            )
        self.api = free_port()
        self.config = {
            "api": {"listen": f"127.0.0.1:{self.api}"},
            "srtp": {"listen": ""},
            "log": {"level": "warn"},
            **config,
        }
        self.ports = ports
        self.log = bench.temp_dir("go2rtc") / "go2rtc.log"
        self.proc = None
        bench.cleanup.add(lambda: self.proc and stop_process(self.proc))
        self._start()

    def _start(self):
        """Starts it; waits until it accepts on its API and on `ports`."""
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(
                [self.binary, "-config", json.dumps(self.config)], stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        deadline = time.monotonic() + 10
        while not all(accepts(port) for port in (self.api, *self.ports)):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise BenchError(f"go2rtc did not start:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def restart(self):
        """Stops it (SIGTERM) and starts it again with the same configuration."""
        stop_process(self.proc)
        self._start()


class Relay:
    """A real go2rtc as the node's relay (Node's `relay`), as on a board:
    the node puts its cameras' streams in it through its API, and a browser
    plays them over WebRTC on 127.0.0.1 (TCP and UDP, no STUN server), its
    offers sent through the node (WHEP). Its RTSP server is on a free port,
    where no one else's go2rtc is."""

    def __init__(self, bench):
        webrtc, rtsp = free_port(), free_port()
        config = {
            "rtsp": {"listen": f"127.0.0.1:{rtsp}"},
            "webrtc": {
                "listen": f"127.0.0.1:{webrtc}",
                "candidates": [f"127.0.0.1:{webrtc}"],
                "ice_servers": [],
                "filters": {"loopback": True, "candidates": ["127.0.0.1"], "networks": ["udp4", "tcp4"]},
            },
            "exec": {"allow_paths": []},
            "echo": {"allow_paths": []},
        }
        self.go2rtc = Go2rtc(bench, config, [rtsp, webrtc])
        self.port = self.go2rtc.api

    def url(self):
        """The base URL to give the node as RELAY_URL."""
        return f"http://127.0.0.1:{self.port}"


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
        self.conf = conf
        self.tool = bench.tools["mosquitto"]
        self.log = folder / "mosquitto.log"
        self.proc = None
        bench.cleanup.add(lambda: self.proc and stop_process(self.proc))
        self._start()

    def _start(self):
        """Starts mosquitto; waits until it accepts."""
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([self.tool, "-c", str(self.conf)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.perf_counter() + 10
        while not accepts(self.port):
            if time.perf_counter() > deadline or self.proc.poll() is not None:
                raise BenchError(f"mosquitto did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def restart(self):
        """Stops mosquitto (SIGTERM) and starts it again on the same port."""
        stop_process(self.proc)
        self._start()

    def node_env(self):
        """The node's settings for this broker."""
        return {"MQTT_URL": f"mqtt://127.0.0.1:{self.port}", "MQTT_USER": MQTT_USER, "MQTT_PASSWORD": MQTT_PASSWORD}

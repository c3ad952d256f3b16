#!/usr/bin/python3
"""The benchmark's alerts part (issue 45): a person's photograph slid across
the real camera, from the event's first moving frame (its startedAt) to its
alert arriving at a webhook on the LAN; the node's CPU per alert sent to
three destinations (Web Push, ntfy, a webhook); and 100 events a minute on
8 cameras with 3 destinations, one of them down: the status's p99 then
against without them, and every alert accounted for (delivered, waiting or
dropped by a rule that counts it).

The far ends run in a network namespace of the part's own (the node refuses
loopback destinations): tests/alerts/receivers.py (the webhook receiver and
ntfy stand-in of the tests) and web-push-testing (tests/e2e's npm packages).
It needs root (ip netns), Debian's python3, Node.js with tests/e2e's
node_modules, and what the classification part needs (nvr-classify, its
model, the photographs).

Run alone: python3 benches/bench_alerts.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py alerts).
"""

import http.client
import json
import os
import statistics
import sys
import threading
import time

import bench_classify
import harness
from harness.lan import Lan
from harness import (
    ROOT,
    SCENE_PATH,
    BenchError,
    Node,
    add_cameras,
    cpu_seconds,
    expect,
    free_port,
    progress,
    request,
    wait_all_recording,
    wait_ended,
)

NAME = "alerts"
FIGURES = ("alert_latency", "alert_cpu", "alert_flood_status_p99")
RECEIVERS = ROOT / "tests/alerts/receivers.py"
PUSH_SERVER = ROOT / "tests/e2e/node_modules/web-push-testing/src/bin/server.js"
PUSH_PORT = 8090
# The part's own /24, far from the tests' (10.214.n.0/24).
SUBNET = "10.215.45."
FLOOD_CAMERAS = 8
# Events a minute in the flood, and how many the node serves status to meanwhile.
FLOOD_PER_MINUTE = 100
STATUS_PER_SECOND = 20


def check(bench):
    """Raises BenchError naming each thing the part needs and cannot find."""
    missing = []
    if os.geteuid() != 0:
        missing.append("the alerts part needs root, for a network namespace (ip netns)")
    if not PUSH_SERVER.is_file():
        missing.append(f"{PUSH_SERVER} is missing: npm ci in tests/e2e (tests/run.sh does)")
    if missing:
        raise BenchError("; ".join(missing))
    bench_classify.check(bench)


def call(host, port, method, path, body=None):
    """One request to a far end; returns the parsed JSON answer."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        data = json.dumps(body) if isinstance(body, dict) else body
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        text = response.read()
        if response.status != 200:
            raise BenchError(f"{method} {path} on {host}: {response.status} {text[:200]!r}")
        return json.loads(text) if text.strip() else None
    finally:
        conn.close()


def post_json(node, path, body):
    status, answer = request(node.port, "POST", path, json.dumps(body).encode(), "application/json")
    expect(status, answer, 201, f"POST {path}")
    return json.loads(answer)


class FarEnds:
    """The receivers and web-push-testing in `lan`."""

    def __init__(self, bench, lan):
        self.lan = lan
        _, self.port = lan.start(
            bench, ["/usr/bin/python3", str(RECEIVERS), "--address", lan.address], "ready "
        )
        lan.start(bench, ["node", str(PUSH_SERVER), str(PUSH_PORT)], "Server running on port ")

    def url(self):
        return f"http://{self.lan.address}:{self.port}"

    def webhook(self, node, name, rules):
        """A webhook destination to /hook/<name>, its secret given to the receiver."""
        made = post_json(
            node,
            "/api/alerts/destinations",
            {"name": name, "type": "webhook", "url": f"{self.url()}/hook/{name}", "rules": rules},
        )
        call(self.lan.address, self.port, "PUT", "/_secret", made["secret"].encode())
        return made

    def ntfy(self, node, topic, rules):
        return post_json(
            node,
            "/api/alerts/destinations",
            {"name": topic, "type": "ntfy", "server": self.url(), "topic": topic, "rules": rules},
        )

    def web_push(self, node, rules):
        """A Web Push destination: a subscription web-push-testing makes for the node's key."""
        key = json.loads(node.get("/api/alerts"))["vapidPublicKey"]
        made = call(self.lan.address, PUSH_PORT, "POST", "/subscribe",
                    {"applicationServerKey": key, "userVisibleOnly": "true"})["data"]
        endpoint = made["endpoint"].replace("localhost", self.lan.address)
        post_json(node, "/api/alerts/destinations", {
            "name": "phone", "type": "webpush", "rules": rules,
            "subscription": {"endpoint": endpoint, "keys": made["keys"]}})
        return made["clientHash"]

    def hooks(self):
        return call(self.lan.address, self.port, "GET", "/_hooks")

    def pushes(self, client):
        answer = call(self.lan.address, PUSH_PORT, "POST", "/get-notifications", {"clientHash": client})
        return answer["data"]["messages"]


def measure_latency(bench, far):
    """Slides a person across the camera `runs` times: each event's first
    moving frame (startedAt) to its alert at the webhook."""
    camera = bench.camera()
    folder = bench.temp_dir("alerts-latency-node")
    env = {"RECORDINGS_RESERVE": "0", **bench_classify.classifier_env(bench)}
    node = Node(bench, folder, extra_env=env).wait_listening()
    [camera_id] = add_cameras(node.port, [camera.url(SCENE_PATH)], 1, record=True, detect=True, classify=True)
    wait_all_recording(node, 1, 60)
    far.webhook(node, "latency", {"cooldownSeconds": 0})
    time.sleep(3)
    runs = 1 if bench.settings.smoke else 3
    took, detected = [], []
    for n in range(runs):
        before = len(far.hooks())
        sent = camera.scene("slide person 4")
        deadline = time.monotonic() + 40
        while len(hooks := far.hooks()) <= before:
            if time.monotonic() > deadline:
                raise BenchError(f"no alert within 40 s of the photograph:\n{node.tail()}")
            time.sleep(0.05)
        hook = hooks[before]
        started = harness.iso_ms(hook["body"]["event"]["startedAt"])
        took.append((hook["arrivedMs"] - started) / 1000)
        detected.append((started - sent) / 1000)
        # The scene still again, and the event over, before the next.
        wait_ended(node, camera_id)
        progress(f"alerts: run {n + 1}: alert {took[-1]:.2f} s after the first moving frame")
    node.stop()
    bench.add_figure(
        "alert_latency",
        f"a person's first moving frame (the event's startedAt) to its alert at a webhook: median of {runs}",
        statistics.median(took),
        "s",
        ("<=", 2.5),
        runs_s=took,
        slide_to_first_moving_frame_s=detected,
    )


def quiet_cameras(node, count):
    closed = free_port()
    return add_cameras(node.port, [f"rtsp://127.0.0.1:{closed}/s{n}" for n in range(count)], 4)


def post_event(node, camera_id):
    now = time.time()
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".000Z"
    post_json(node, "/api/events", {"cameraId": camera_id, "kind": "person", "score": 0.9,
                                    "startedAt": at, "endedAt": at})


def deliveries(node):
    status = json.loads(node.get("/api/status"))
    return {d["name"]: d["delivery"] for d in status["alerts"]["destinations"]}


def wait_delivered(node, names, count, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = deliveries(node)
        if all(got[name]["delivered"] >= count for name in names):
            return got
        time.sleep(0.1)
    raise BenchError(f"not {count} alerts delivered to {names} in {timeout} s: {deliveries(node)}\n{node.tail()}")


def measure_cpu(bench, far):
    """The node's CPU for alerts to three destinations (one of each kind)."""
    node = Node(bench, bench.temp_dir("alerts-cpu-node")).wait_listening()
    [camera_id] = quiet_cameras(node, 1)
    rules = {"cooldownSeconds": 0}
    far.webhook(node, "cpu", rules)
    far.ntfy(node, "cpu_topic", rules)
    far.web_push(node, rules)
    count = 20 if bench.settings.smoke else 100
    before = cpu_seconds(node.pid)
    # Ten a second: no destination's queue fills, so every alert is sent.
    for _ in range(count):
        post_event(node, camera_id)
        time.sleep(0.1)
    got = wait_delivered(node, ["cpu", "cpu_topic", "phone"], count, 120)
    used = cpu_seconds(node.pid) - before
    node.stop()
    sent = sum(d["delivered"] for d in got.values())
    bench.add_figure(
        "alert_cpu",
        f"the node's CPU per event alerting 3 destinations (Web Push, ntfy, webhook), {count} events",
        1000 * used / count,
        "ms",
        ("<", 20),
        per_send_ms=1000 * used / sent,
        events=count,
    )


def status_times(node, seconds, stop=None):
    """GET /api/status (without If-None-Match) STATUS_PER_SECOND a second for
    `seconds`, on one kept-alive connection, as the UI's polls come; the
    times in ms."""
    took = []
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (stop and stop.is_set()):
        started = time.perf_counter()
        conn.request("GET", "/api/status")
        response = conn.getresponse()
        body = response.read()
        took.append((time.perf_counter() - started) * 1000)
        expect(response.status, body, 200, "GET /api/status")
        time.sleep(max(0.0, 1 / STATUS_PER_SECOND - took[-1] / 1000))
    conn.close()
    return took


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def measure_flood(bench, far):
    """100 events a minute on 8 cameras, to Web Push and ntfy (up) and a
    webhook that is down: the status's p99 meanwhile against before."""
    node = Node(bench, bench.temp_dir("alerts-flood-node")).wait_listening()
    cameras = quiet_cameras(node, FLOOD_CAMERAS)
    rules = {"cooldownSeconds": 0}
    far.web_push(node, rules)
    far.ntfy(node, "flood", rules)
    down = free_port()
    post_json(node, "/api/alerts/destinations", {
        "name": "down", "type": "webhook", "url": f"http://{far.lan.address}:{down}/hook", "rules": rules})
    seconds = 15 if bench.settings.smoke else 60
    events = FLOOD_PER_MINUTE * seconds // 60
    quiet = status_times(node, seconds)
    progress(f"alerts: {events} events in {seconds} s on {FLOOD_CAMERAS} cameras, 3 destinations, one down")
    busy = []
    stop = threading.Event()
    timer = threading.Thread(target=lambda: busy.extend(status_times(node, seconds + 5, stop)))
    timer.start()
    for n in range(events):
        post_event(node, cameras[n % FLOOD_CAMERAS])
        time.sleep(seconds / events)
    stop.set()
    timer.join()
    got = wait_delivered(node, ["phone", "flood"], events, 120)
    waiting = got["down"]
    accounted = waiting["queued"] + waiting["dropped"]["full"] + waiting["dropped"]["expired"]
    if accounted != events or got["phone"]["delivered"] != events or got["flood"]["delivered"] != events:
        raise BenchError(f"not every alert of {events} events accounted for: {got}")
    node.stop()
    bench.add_figure(
        "alert_flood_status_p99",
        f"GET /api/status p99 during {FLOOD_PER_MINUTE} events a minute on {FLOOD_CAMERAS} cameras, "
        "3 destinations, one down",
        percentile(busy, 99),
        "ms",
        ("<", 2),
        quiet_p99_ms=percentile(quiet, 99),
        busy_p50_ms=statistics.median(busy),
        requests=len(busy),
        events=events,
        delivered=events * 2,
        down_queued=waiting["queued"],
        down_dropped_full=waiting["dropped"]["full"],
    )


def run(bench):
    lan = Lan(bench, SUBNET)
    far = FarEnds(bench, lan)
    progress("alerts: a person's first moving frame to the alert at a webhook")
    measure_latency(bench, far)
    progress("alerts: the node's CPU per alert")
    measure_cpu(bench, far)
    measure_flood(bench, far)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

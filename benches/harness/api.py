"""What the parts ask of a running node: cameras added through its API, its
states and its events' ends waited for, and the segments it has indexed."""

import concurrent.futures
import json
import sqlite3
import time

from .base import BenchError
from .net import expect, request

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


def wait_ended(node, camera_id):
    """Waits until camera `camera_id` has events and none in progress;
    raises BenchError after 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = json.loads(node.get(f"/api/events?cameraId={camera_id}"))
        if events and all(not e["inProgress"] for e in events):
            return
        time.sleep(0.2)
    raise BenchError(f"the event did not end within 60 s:\n{node.tail()}")


def segment_count(data_dir):
    """How many segments the node has indexed."""
    db = sqlite3.connect(f"file:{data_dir / 'nvr-node.db'}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute("SELECT COUNT(*) FROM segment").fetchone()[0]
    except sqlite3.OperationalError:
        return 0  # before the node made its schema
    finally:
        db.close()

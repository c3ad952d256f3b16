#!/usr/bin/python3
"""The benchmark's ONVIF part (issue 48): with the camera's own motion
events, from the moment the camera says motion to the node's event listed,
in progress, where the node's own detector alone would have missed the
change.

The camera is the GStreamer test camera's scene, watched on key frames; its
ONVIF device is the tests' stand-in (crates/standins/src/onvif_device.rs,
run as `nvr-standin onvif-device`: no camera in the registries sends ONVIF
events), in a network namespace of the part's own (the node calls a device
only off its loopback), to which the node subscribes (PullPoint) as to any
linked camera's. The device says IsMotion true at a moment it records while
the scene shows a change under the node's threshold (`faint 3`); three times
(once in --smoke), the median reported. It needs root (ip netns).

Run alone: python3 benches/bench_onvif.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py onvif).
"""

import json
import os
import secrets
import statistics
import sys
import time

import harness
from bench_motion import key_pace
from harness.lan import Lan
from harness import (
    SCENE_PATH,
    BenchError,
    Node,
    OnvifDevice,
    expect,
    iso_ms,
    progress,
    request,
    wait_ended,
)

NAME = "onvif"
FIGURES = ("onvif_event_latency",)
# The part's own /24, beside the alerts part's and far from the tests'.
SUBNET = "10.215.46."
# The test camera's change the node's detector does not take for motion
# (the tests' `onvif_events::` check that it does not): its box, barely
# there, crossing for 3 s.
UNDER_THRESHOLD = "faint 3"


def check(bench):
    """Raises BenchError if the part cannot run here."""
    if os.geteuid() != 0:
        raise BenchError("the onvif part needs root, for a network namespace (ip netns)")


def linked_camera(node, camera, device, password):
    """Adds the test camera's scene, detecting, linked to `device` with its
    account; its motion source left to the node (`both`, as the device
    offers events); returns its id once subscribed and watched on key frames."""
    body = {
        "name": "Porch",
        "rtspUrl": camera.url(SCENE_PATH),
        "username": "admin",
        "password": password,
        "record": False,
        "detect": True,
        "onvif": {"endpoint": "urn:uuid:0b5e5a6e-1f0c-4c55-9d0f-2f1e3c7a9d01", "address": device.address},
    }
    status, answer = request(node.port, "POST", "/api/cameras", json.dumps(body).encode(), "application/json")
    expect(status, answer, 201, "POST /api/cameras")
    id = json.loads(answer)["id"]
    deadline = time.monotonic() + 30
    while (events := motion_events(node, id))["state"] != "receiving":
        if time.monotonic() > deadline:
            raise BenchError(f"the node never subscribed to the device's events: {events}\n{node.tail()}")
        time.sleep(0.2)
    key_pace(node, 1, 30)
    return id, events["source"]


def motion_events(node, id):
    """Camera `id`'s `motionEvents`: its event source and the subscription's health."""
    return next(c for c in json.loads(node.get("/api/cameras")) if c["id"] == id)["motionEvents"]


def listed(node, seen, timeout):
    """Waits for an event not in `seen` listed in progress; returns it and when, in ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = json.loads(node.get("/api/events"))
        now = time.time() * 1000
        new = [e for e in events if e["id"] not in seen and e["inProgress"]]
        if new:
            return new[0], now
        time.sleep(0.02)
    raise BenchError(f"no event listed {timeout} s after the camera said motion\n{node.tail()}")


def measure_latency(bench, camera, device, password):
    """The camera's word to the node's event listed, `onvif_runs` times, each
    from a still scene watched on key frames; the median."""
    node = Node(bench, bench.temp_dir("onvif-node"), extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    id, source = linked_camera(node, camera, device, password)
    latencies, starts = [], []
    seen = set()
    for n in range(bench.settings.onvif_runs):
        said = device.motion(True)
        camera.scene(UNDER_THRESHOLD)
        event, listed_at = listed(node, seen, 10)
        latencies.append((listed_at - said) / 1000)
        starts.append((iso_ms(event["startedAt"]) - said) / 1000)
        seen.add(event["id"])
        progress(f"onvif: run {n + 1}: listed {latencies[-1]:.3f} s after the camera said motion")
        time.sleep(3)  # the faint box's crossing
        device.motion(False)
        wait_ended(node, id)
        key_pace(node, 1, 30)
    bench.add_figure(
        "onvif_event_latency",
        "the camera's ONVIF motion event to the node's event listed, in progress, "
        f"the change under the node's threshold (median of {len(latencies)})",
        statistics.median(latencies),
        "s",
        ("<=", 1),
        runs_s=latencies,
        event_start_after_s=starts,
        motion_source=source,
    )
    node.stop()


def run(bench):
    camera = bench.camera()
    lan = Lan(bench, SUBNET)
    password = secrets.token_urlsafe(12)
    device = OnvifDevice(bench, lan, "admin", password)
    progress("onvif: the camera's motion event to the node's event listed")
    measure_latency(bench, camera, device, password)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

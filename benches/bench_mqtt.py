#!/usr/bin/python3
"""The benchmark's MQTT part: what Home Assistant through MQTT costs the node
(CPU and RSS, 8 cameras recording, connected to a real mosquitto against
MQTT off).

Run alone: python3 benches/bench_mqtt.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py mqtt).
"""

import json
import sys
import time

import harness
from harness import (
    BenchError,
    Broker,
    HD_PATH,
    Node,
    RECORDING_CAMERAS,
    add_cameras,
    cpu_of,
    expect,
    proc_fields,
    progress,
    request,
    wait_all_recording,
)

NAME = "mqtt"
# Its figures, in the table's order.
FIGURES = (
    "mqtt_cpu",
    "mqtt_rss",
)


def measure_mqtt(bench, camera):
    """Home Assistant through MQTT: the node's CPU and RSS with 8 cameras
    recording, their discovery and states on a real mosquitto, against the
    same with MQTT off."""
    broker = Broker(bench)
    seconds = bench.settings.detection_seconds
    measured = {}
    for name, env in (("off", {}), ("on", broker.node_env())):
        folder = bench.temp_dir(f"mqtt-{name}-node")
        node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0", **env}).wait_listening()
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


def run(bench):
    """Runs the part's measurement."""
    camera = bench.camera()
    progress("Home Assistant through MQTT: 8 cameras with MQTT off, then connected")
    measure_mqtt(bench, camera)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

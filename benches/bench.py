#!/usr/bin/python3
"""Benchmark of nvr-node, each figure measured next to a reference in the same run.

Usage: python3 benches/bench.py [PART ...] [--smoke] [--record] [--binary PATH]
                                [--json PATH] [--classifier PATH] [--model PATH]
                                [--standin PATH]

PART is http, recording, motion, onvif, mqtt, memory, classification, busy,
ui, events or alerts;
without one, all run, in that order. Each part is also a program of its own
(benches/bench_http.py, bench_recording.py, bench_motion.py, bench_onvif.py,
bench_mqtt.py, bench_memory.py, bench_classify.py, bench_busy.py, bench_ui.py,
bench_events.py, bench_alerts.py, with the
same options), all over one harness (the package benches/harness).

Starts everything it needs on 127.0.0.1 (the node, go2rtc stand-ins, a camera
that never answers, nginx, mosquitto, and the GStreamer test camera for the
recording, motion, ONVIF, MQTT, memory, classification and UI figures, with a real
go2rtc as the node's relay and Debian's Chromium for the UI's), each in its own
temporary folder, and stops all of it on exit; what the node calls only off
its loopback (the ONVIF part's device, the alerts part's far ends) in a
network namespace of the part's own (so those parts need root). The stand-ins are the tests'
(crates/standins), built with cargo into target/standins unless --standin
names the program. Prints a markdown table and
writes the same figures as JSON (default target/bench.json), with the
commit, the date and the machine they were measured on; --record also puts
each part's in benches/results.json, in place of that part's. Needs wrk,
nginx and mosquitto (Debian: apt-get install wrk nginx-light mosquitto
mosquitto-clients); the classification and busy parts need nvr-classify
(target/classify/nvr-classify), its model (target/model) and the test
camera's photographs and footage (target/photos); the UI part Node.js, playwright-core
(tests/e2e/node_modules) and /usr/bin/chromium. Exits 0 after printing, 1 if something
broke or is missing, 2 if the node binary is missing.
"""

import sys

import bench_alerts
import bench_busy
import bench_classify
import bench_events
import bench_http
import bench_memory
import bench_motion
import bench_mqtt
import bench_onvif
import bench_recording
import bench_ui
import harness

# The parts, in the order a full run takes them.
PARTS = (
    bench_http,
    bench_recording,
    bench_motion,
    bench_onvif,
    bench_mqtt,
    bench_memory,
    bench_classify,
    bench_busy,
    bench_ui,
    bench_events,
    bench_alerts,
)


if __name__ == "__main__":
    sys.exit(harness.main(PARTS, __doc__.splitlines()[0]))

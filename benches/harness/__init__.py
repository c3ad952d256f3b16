"""The benchmark's shared harness, a module a reason to change:
- base: the repository's root, the error that makes a run invalid, progress lines;
- net: free ports and HTTP requests on 127.0.0.1;
- standins: the relay stand-in, the camera that never answers and the
  ONVIF device;
- lan: a network namespace of a part's own, for what the node calls only
  off its loopback;
- processes: the programs a run starts (the node, nginx, the GStreamer test
  camera behind go2rtc, go2rtc as the node's relay, mosquitto; go2rtc and
  mosquitto can be restarted) and the clean-up that stops them;
- api: what the parts ask of a running node;
- measure: /proc, medians, API times and wrk;
- run: one run's settings, tools, temporary folders and figures;
- report: the figures' table and JSON, benches/results.json, and the
  command line every part shares (main).
The parts (bench_http.py, bench_recording.py, bench_motion.py,
bench_mqtt.py, bench_memory.py, bench_classify.py) each measure one subject
through it, importing from the package what this file names; bench.py runs
them all or those named. The soak (bench_soak.py, an hour) runs alone.
"""

from .api import add_cameras, segment_count, wait_all_recording, wait_ended, wait_relay_healthy
from .base import ROOT, BenchError, progress
from .measure import cpu_of, cpu_seconds, iso_ms, median_us, private_mib, proc_fields, run_wrk
from .net import expect, free_port, request
from .processes import (
    BUSY_PATH,
    FOOTAGE_PATH,
    HD_PATH,
    MQTT_PASSWORD,
    MQTT_USER,
    RECORDING_CAMERAS,
    SCENE_PATH,
    SUB_PATH,
    VIDEO_ONLY_PATH,
    Broker,
    Go2rtc,
    Nginx,
    Node,
    Relay,
    children_named,
    children_of,
    process_table,
    recorders_of,
    stop_process,
    wait_for_process,
)
from .report import main
from .run import classifier_missing
from .standins import OnvifDevice, SilentCamera

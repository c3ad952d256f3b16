#!/usr/bin/python3
"""The benchmark's HTTP part: GET /api/status against nginx serving the same
bytes and its p99 (three runs each with 8, 64 and 256 cameras), GET /api/events with many events against few, the WHEP
proxy's added latency, memory idle and at peak, status while probes of hung
cameras run, start-up with many events, and the bytes an idle node writes.

Run alone: python3 benches/bench_http.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py http).
"""

import http.client
import signal
import socket
import sqlite3
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import harness
from harness import (
    BenchError,
    Nginx,
    Node,
    SilentCamera,
    add_cameras,
    cpu_seconds,
    expect,
    free_port,
    median_us,
    proc_fields,
    progress,
    request,
    run_wrk,
    stop_process,
    wait_relay_healthy,
)

NAME = "http"
# Its figures, in the table's order.
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
)
CAMERAS = 64
# Status is also measured with these many cameras: a bigger body should cost
# the node no more than it costs nginx.
OTHER_CAMERA_COUNTS = (8, 256)
HUNG_CAMERAS = 16
# The node's bound on streams read at once on request (probes, snapshots):
# the other probes wait for a place, then are told the node is busy (503).
READERS_AT_ONCE = 4
SMALL_EVENTS = 100
EVENT_KINDS = ("person", "vehicle", "animal", "motion", "package")
OFFER_SDP = (
    b"v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    b"a=group:BUNDLE 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n"
    b"a=ice-ufrag:bnch\r\na=ice-pwd:benchbenchbenchbenchbe\r\n"
    b"a=fingerprint:sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
    b"00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF\r\n"
    b"a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=rtpmap:96 H264/90000\r\n"
)


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


def nginx_pids(nginx):
    """nginx's master and its workers."""
    master = nginx.proc.pid
    workers = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [master, *map(int, workers)]


def wrk_with_cpu(bench, server, pids, seconds):
    """`run_wrk` on /api/status, with the CPU time `pids` took for each
    request answered (µs): what a request costs the server, which a busy
    machine's share of the cores for wrk and the server does not change
    as much as it changes requests per second."""
    before = sum(map(cpu_seconds, pids))
    run = run_wrk(bench, server, "/api/status", seconds)
    run["cpu_us"] = (sum(map(cpu_seconds, pids)) - before) / (run["rps"] * seconds) * 1e6
    return run


def status_runs(bench, node):
    """Status under wrk, then nginx serving the same bytes, taken in turns
    (`status_runs` times); returns the body and each run's figures."""
    seconds = bench.settings.wrk_seconds
    body = node.get("/api/status")
    nginx = Nginx(bench, body)
    runs = []
    for _ in range(bench.settings.status_runs):
        node_run = wrk_with_cpu(bench, node, [node.pid], seconds)
        nginx_run = wrk_with_cpu(bench, nginx, nginx_pids(nginx), seconds)
        runs.append({
            "ratio": node_run["rps"] / nginx_run["rps"],
            "node_rps": node_run["rps"],
            "nginx_rps": nginx_run["rps"],
            "node_p50_ms": node_run["p50_ms"],
            "node_p99_ms": node_run["p99_ms"],
            "nginx_p99_ms": nginx_run["p99_ms"],
            "node_cpu_us_per_request": node_run["cpu_us"],
            "nginx_cpu_us_per_request": nginx_run["cpu_us"],
        })
    stop_process(nginx.proc, signal.SIGQUIT)
    return body, runs


def median_of(runs, key):
    """The median of `key` over `runs`."""
    return statistics.median(run[key] for run in runs)


def measure_status(bench, node):
    """Items 1 and 4b: status under wrk next to nginx serving the same bytes,
    the median of three runs; peak RSS after."""
    body, runs = status_runs(bench, node)
    peak_mib = proc_fields(node.pid, "status")["VmHWM"] / 1024
    bench.add_figure(
        "status_vs_nginx",
        f"GET /api/status ({CAMERAS} cameras, {len(body)} bytes): node ÷ nginx requests/s, median of {len(runs)}",
        median_of(runs, "ratio"),
        "",
        (">=", 0.8),
        runs=runs,
        wrk_seconds=bench.settings.wrk_seconds,
        body_bytes=len(body),
        node_cpu_us_per_request=median_of(runs, "node_cpu_us_per_request"),
        nginx_cpu_us_per_request=median_of(runs, "nginx_cpu_us_per_request"),
    )
    bench.add_figure(
        "status_p99",
        f"GET /api/status p99 latency, 32 connections, median of {len(runs)}",
        median_of(runs, "node_p99_ms"),
        "ms",
        ("<", 2),
        node_p50_ms=median_of(runs, "node_p50_ms"),
        nginx_p99_ms=median_of(runs, "nginx_p99_ms"),
    )
    bench.add_figure(
        "peak_rss", "peak RSS (VmHWM) after the status load", peak_mib, "MiB", ("<", 24),
    )


def measure_status_sizes(bench):
    """Item 2 of issue 24: the same with 8 and with 256 cameras, each on a node of its own."""
    for count in OTHER_CAMERA_COUNTS:
        progress(f"GET /api/status with {count} cameras: node, then nginx")
        node = Node(bench, bench.temp_dir(f"status-{count}")).wait_listening()
        closed = free_port()
        add_cameras(node.port, [f"rtsp://127.0.0.1:{closed}/stream{n}" for n in range(1, count + 1)], 8)
        wait_relay_healthy(node)
        body, runs = status_runs(bench, node)
        node.stop()
        bench.add_figure(
            f"status_vs_nginx_{count}",
            f"GET /api/status ({count} cameras, {len(body)} bytes): node ÷ nginx, median of {len(runs)}",
            median_of(runs, "ratio"),
            "",
            (">=", 0.8),
            runs=runs,
            body_bytes=len(body),
            node_p99_ms=median_of(runs, "node_p99_ms"),
        )


def measure_isolation(bench, node, silent):
    """Item 5: status p99 while 16 probes of hung cameras are asked for (as many run as the
    node allows, the others wait for a place), next to p99 without them."""
    urls = [f"rtsp://127.0.0.1:{silent.port}/hung{n}" for n in range(1, HUNG_CAMERAS + 1)]
    hung = add_cameras(node.port, urls, HUNG_CAMERAS)
    seconds = bench.settings.isolation_wrk_seconds
    without = run_wrk(bench, node, "/api/status", seconds)
    finished = []

    def probe(camera_id):
        request(node.port, "POST", f"/api/cameras/{camera_id}/probe", timeout=60)
        finished.append(camera_id)

    probes = [threading.Thread(target=probe, args=(i,), daemon=True) for i in hung]
    held_before = silent.accepted()
    for thread in probes:
        thread.start()
    running = min(HUNG_CAMERAS, READERS_AT_ONCE)
    wait_for_connections(silent, held_before + running)
    loaded = run_wrk(bench, node, "/api/status", seconds)
    in_flight = HUNG_CAMERAS - len(finished)
    silent.stop()
    for thread in probes:
        thread.join(timeout=15)
    if in_flight < running:
        raise BenchError(f"only {in_flight} of {running} hung probes were still running at the end")
    bench.add_figure(
        "hung_probes_p99_ratio",
        f"status p99 with {HUNG_CAMERAS} probes of hung cameras asked for ÷ without",
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
    while silent.accepted() < count:
        if time.monotonic() > deadline:
            raise BenchError(f"the probes did not reach the hung camera ({silent.accepted()} of {count})")
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


def run(bench):
    """Runs the part's measurements, one at a time, in an order that leaves each undisturbed."""
    silent = SilentCamera(bench)
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
    measure_status_sizes(bench)


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

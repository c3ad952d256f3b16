#!/usr/bin/python3
"""The benchmark's events part: paging back through a year of events,
`GET /api/events?before=` with 1,000,000 events stored, alone and with the
filters the events list and the timeline send (`cameraId`, `kind`,
`reviewed=false`, and all three), each the time of many requests at random
moments: p50, p99 and the slowest.

Run alone: python3 benches/bench_events.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py events).
"""

import http.client
import json
import random
import sqlite3
import statistics
import sys
import time
import uuid

import harness
from harness import BenchError, Node, add_cameras, cpu_seconds, expect, free_port, progress

NAME = "events"
# Its figures, in the table's order, each with what it adds to `before`.
PAGES = {
    "events_page": "",
    "events_page_camera": "cameraId",
    "events_page_kind": "kind",
    "events_page_unreviewed": "reviewed=false",
    "events_page_filtered": "cameraId, kind and reviewed=false",
}
FIGURES = tuple(PAGES)
CAMERAS = 4
YEAR_MS = 365 * 24 * 3600 * 1000
# A year's events as a node sees them: most are motion, few a package; one in
# ten not reviewed yet (the rare filters are the slow ones to page through).
KINDS = {"motion": 0.45, "person": 0.3, "vehicle": 0.12, "animal": 0.08, "package": 0.05}
UNREVIEWED = 0.1
# A seed of its own, so that every run pages through the same events.
SEED = 33


def fill_events(data_dir, camera_ids, count, now_ms):
    """Inserts `count` events over the year before `now_ms` straight into the
    node's database (its own schema and indexes: the node made them), in one
    transaction, in the order of their start as a node adds them."""
    rng = random.Random(SEED)
    starts = sorted(rng.randrange(now_ms - YEAR_MS, now_ms) for _ in range(count))
    kinds = rng.choices(list(KINDS), weights=list(KINDS.values()), k=count)
    rows = (
        (
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            rng.choice(camera_ids),
            kinds[i],
            0.5 + rng.random() / 2,
            started,
            started + rng.randrange(1_000, 60_000),
            int(rng.random() >= UNREVIEWED),
        )
        for i, started in enumerate(starts)
    )
    db = sqlite3.connect(data_dir / "nvr-node.db")
    db.execute("PRAGMA cache_size = -262144")
    with db:
        db.executemany(
            "INSERT INTO event (id, camera_id, kind, score, started_at_ms, ended_at_ms, clip_status,"
            " clip_path, clip_bytes, thumbnail_bytes, reviewed) VALUES (?, ?, ?, ?, ?, ?, 'local', NULL, 0, 0, ?)",
            rows,
        )
    db.close()


def iso(ms):
    """An API time, `2026-11-22T10:04:05.123Z`, of milliseconds since the epoch."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def query(rng, filters, camera_ids, now_ms):
    """A page's query: a random `before` within the year, and `filters`' random values."""
    params = [f"before={iso(rng.randrange(now_ms - YEAR_MS, now_ms))}"]
    if "cameraId" in filters:
        params.append(f"cameraId={rng.choice(camera_ids)}")
    if "kind" in filters:
        params.append(f"kind={rng.choice(list(KINDS))}")
    if "reviewed" in filters:
        params.append("reviewed=false")
    return "/api/events?" + "&".join(params)


def time_pages(node, paths):
    """Times GET of each of `paths` on one kept-alive connection; returns ms each and the events listed."""
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
    took, listed = [], 0
    for path in paths:
        start = time.perf_counter_ns()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        took.append((time.perf_counter_ns() - start) / 1e6)
        expect(response.status, body, 200, f"GET {path}")
        listed += len(json.loads(body))
    conn.close()
    return took, listed


def percentile(samples, p):
    """The `p`th percentile of `samples` (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def paging_node(bench):
    """A node whose database holds `paging_events` events of 4 cameras over a
    year: made by the node, filled while it is stopped, then opened by it again;
    returns it, the cameras' ids and the year's end."""
    folder = bench.temp_dir("events-node")
    node = Node(bench, folder).wait_listening()
    closed = free_port()
    camera_ids = add_cameras(node.port, [f"rtsp://127.0.0.1:{closed}/stream{n}" for n in range(1, CAMERAS + 1)], 4)
    node.stop()
    count, now_ms = bench.settings.paging_events, int(time.time() * 1000)
    progress(f"events: storing {count:,} events over a year")
    started = time.perf_counter()
    fill_events(folder, camera_ids, count, now_ms)
    progress(f"events: stored in {time.perf_counter() - started:.1f} s")
    # Keeping far more events than it holds, and them all whatever their age.
    node = Node(bench, folder, extra_env={"MAX_EVENTS": "2000000"}).wait_listening()
    if len(json.loads(node.get("/api/events"))) != 50:
        raise BenchError(f"the node does not list the events stored:\n{node.tail()}")
    return node, camera_ids, now_ms


def run(bench):
    """Times each page's requests, in turns so that the machine's load falls alike on all."""
    node, camera_ids, now_ms = paging_node(bench)
    rng = random.Random(SEED)
    requests = bench.settings.paging_requests
    progress(f"events: {requests} pages of each filter, at random moments of the year")
    # A first pass warms the node's page cache as a board's would be after its first pages.
    time_pages(node, [query(rng, filters, camera_ids, now_ms) for filters in PAGES.values()] * 5)
    samples = {name: [] for name in PAGES}
    listed = dict.fromkeys(PAGES, 0)
    # The node's CPU for each filter's pages: its work, which a busy machine's
    # waits, in the times, do not change.
    cpu = dict.fromkeys(PAGES, 0.0)
    for _ in range(requests // 10):
        for name, filters in PAGES.items():
            paths = [query(rng, filters, camera_ids, now_ms) for _ in range(10)]
            before = cpu_seconds(node.pid)
            took, got = time_pages(node, paths)
            cpu[name] += cpu_seconds(node.pid) - before
            samples[name] += took
            listed[name] += got
    node.stop()
    count = bench.settings.paging_events
    for name, filters in PAGES.items():
        took = samples[name]
        with_filters = f" with {filters}" if filters else ""
        bench.add_figure(
            name,
            f"GET /api/events?before= (a random moment of the year){with_filters}, {count:,} events: p99",
            percentile(took, 99),
            "ms",
            ("<", 50),
            p50_ms=statistics.median(took),
            max_ms=max(took),
            node_cpu_ms_per_request=1000 * cpu[name] / len(took),
            requests=len(took),
            events_listed_per_page=listed[name] / len(took),
            events=count,
        )


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

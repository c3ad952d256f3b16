#!/usr/bin/python3
"""The benchmark's memory part: what each camera that records and detects
costs in memory, in its two ffmpeg children (the recorder of the 1280x720
main stream, the motion decoder of the 640x360 sub stream) and in the node
itself, with the node's RSS idle and with 1, 8 and 32 such cameras.

Run alone: python3 benches/bench_memory.py [--smoke] [--binary PATH] [--json PATH]
(or python3 benches/bench.py memory).
"""

import statistics
import sys
import time

import harness
from harness import (
    HD_PATH,
    Node,
    SUB_PATH,
    add_cameras,
    cpu_of,
    private_mib,
    proc_fields,
    progress,
    recorders_of,
    wait_all_recording,
    wait_for_process,
)

NAME = "memory"
# Its figures, in the table's order.
FIGURES = ("memory_children_per_camera", "memory_node_per_camera")


def rss_mib(pid):
    """The resident memory of `pid`, in MiB."""
    return proc_fields(pid, "status")["VmRSS"] / 1024


def grow_to(bench, node, camera, have, count):
    """Adds cameras (recording main, decoding sub) until `node` has `count`,
    waits for all to record and decode, then lets the figures settle; returns
    (recorder pids, decoder pids)."""
    urls = [camera.url(HD_PATH)] * (count - have)
    add_cameras(node.port, urls, 4, record=True, detect=True, sub_url=camera.url(SUB_PATH))
    # The node starts at most 4 children at once, each held until it delivers.
    timeout = 60 + 3 * count
    wait_all_recording(node, count, timeout)
    decoders = wait_for_process(lambda: recorders_of(node, "image2pipe"), count, timeout, "decoders")
    receivers = wait_for_process(lambda: recorders_of(node, "frag_every_frame"), count, timeout, "receivers")
    time.sleep(bench.settings.memory_settle_seconds)
    recorders = recorders_of(node)
    if len(recorders) != count or len(recorders_of(node, "image2pipe")) != count:
        raise harness.BenchError(f"children restarted while settling:\n{node.tail()}")
    return recorders, decoders, receivers


def one_run(bench, camera, counts):
    """One node, idle then grown to each of `counts` cameras; returns its readings."""
    folder = bench.temp_dir(f"memory-node-{time.monotonic_ns()}")
    node = Node(bench, folder, extra_env={"RECORDINGS_RESERVE": "0"}).wait_listening()
    time.sleep(bench.settings.memory_settle_seconds)
    reading = {"idle_rss": rss_mib(node.pid), "idle_private": private_mib(node.pid)}
    have = 0
    for count in counts:
        recorders, decoders, receivers = grow_to(bench, node, camera, have, count)
        have = count
        reading[count] = {
            "rss": rss_mib(node.pid),
            "private": private_mib(node.pid),
            "threads": proc_fields(node.pid, "status")["Threads"],
            "recorder": statistics.median(private_mib(pid) for pid in recorders),
            "decoder": statistics.median(private_mib(pid) for pid in decoders),
            "receiver": statistics.median(private_mib(pid) for pid in receivers),
            "children_total": sum(private_mib(pid) for pid in recorders + decoders + receivers),
        }
    # Whether the machine keeps up with the most cameras: the CPU of all.
    cpu = cpu_of([node.pid, *recorders, *decoders, *receivers], bench.settings.memory_cpu_seconds)
    reading["cpu_node"] = cpu[node.pid]
    reading["cpu_recorders"] = sum(cpu[pid] for pid in recorders)
    reading["cpu_decoders"] = sum(cpu[pid] for pid in decoders + receivers)
    if len(recorders_of(node)) != have or len(recorders_of(node, "image2pipe")) != have:
        raise harness.BenchError(f"children restarted while measuring CPU:\n{node.tail()}")
    node.stop()
    return reading


def run(bench):
    """Three nodes (one in smoke mode), each idle, then with 1, 8 and 32
    cameras; each figure the median of the runs."""
    camera = bench.camera()
    settings = bench.settings
    small, few, most = settings.memory_counts
    progress(f"memory: the node idle and with {small}, {few} and {most} cameras, {settings.memory_runs} runs")
    runs = []
    for number in range(settings.memory_runs):
        runs.append(one_run(bench, camera, settings.memory_counts))
        progress(f"memory: run {number + 1} of {settings.memory_runs} done")

    def median(key, count=None):
        return statistics.median(r[count][key] if count else r[key] for r in runs)

    recorder, decoder, receiver = median("recorder", few), median("decoder", few), median("receiver", few)
    bench.add_figure(
        "memory_children_per_camera",
        f"private memory of a camera's three ffmpeg (recorder, motion receiver and decoder), {few} cameras",
        recorder + decoder + receiver,
        "MiB",
        ("<=", 25),
        recorder_private_mib=recorder,
        decoder_private_mib=decoder,
        receiver_private_mib=receiver,
        node_private_per_camera_mib=(median("private", few) - median("idle_private")) / few,
        runs=len(runs),
    )
    idle = median("idle_rss")
    bench.add_figure(
        "memory_node_per_camera",
        f"node's RSS per camera beyond idle, {most} cameras recording and detecting",
        (median("rss", most) - idle) / most,
        "MiB",
        ("<=", 0.25),
        idle_rss_mib=idle,
        **{f"rss_{n}_mib": median("rss", n) for n in settings.memory_counts},
        **{f"threads_{n}": median("threads", n) for n in settings.memory_counts},
        **{f"children_private_{n}_mib": median("children_total", n) for n in settings.memory_counts},
        **{f"children_private_per_camera_{n}_mib": median("children_total", n) / n for n in settings.memory_counts},
        cpu_node_percent=median("cpu_node"),
        cpu_recorders_percent=median("cpu_recorders"),
        cpu_decoders_percent=median("cpu_decoders"),
        runs=len(runs),
    )


if __name__ == "__main__":
    sys.exit(harness.main([sys.modules[__name__]], __doc__.splitlines()[0]))

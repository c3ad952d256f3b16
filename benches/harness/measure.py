"""The measuring helpers: a process's memory and CPU from /proc, medians,
API times, and wrk's requests per second and latencies."""

import calendar
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

from .base import BenchError

def proc_fields(pid, name):
    """The `key: value` lines of /proc/PID/<name> as a dict of the first number of each."""
    fields = {}
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        key, _, value = line.partition(":")
        number = value.split()
        if number and number[0].isdigit():
            fields[key] = int(number[0])
    return fields


def median_us(samples_ns):
    """The median of nanosecond samples, in microseconds."""
    return statistics.median(samples_ns) / 1000


def cpu_seconds(pid):
    """User plus system CPU time of `pid` so far, in seconds (from /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(pids, seconds):
    """CPU seconds each of `pids` takes in the next `seconds`, as % of a core."""
    before = {pid: cpu_seconds(pid) for pid in pids}
    time.sleep(seconds)
    return {pid: 100 * (cpu_seconds(pid) - before[pid]) / seconds for pid in pids}


def private_mib(pid):
    """Memory of `pid` shared with no other process (Private_Clean + Private_Dirty), in MiB."""
    fields = proc_fields(pid, "smaps_rollup")
    return (fields["Private_Clean"] + fields["Private_Dirty"]) / 1024


def iso_ms(text):
    """Milliseconds since the epoch of an API time, `2026-11-22T10:04:05.123Z`."""
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(text[20:23])


def run_wrk(bench, server, path, seconds):
    """Runs `wrk -t2 -c32 -dNs --latency` on `path` of `server` (a Node or Nginx);
    returns requests/s and percentiles in ms."""
    url = f"http://127.0.0.1:{server.port}{path}"
    command = [bench.tools["wrk"], "-t2", "-c32", f"-d{seconds}s", "--latency", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed: {done.stderr}{done.stdout}")
    if "Non-2xx or 3xx responses" in done.stdout:
        raise BenchError(
            f"{' '.join(command)}: some answers were not 2xx:\n{done.stdout}\n"
            f"--- the server's last output ---\n{server.tail()}"
        )
    return parse_wrk(done.stdout, " ".join(command))


def parse_wrk(output, command):
    """Requests/s and the latency distribution (50/75/90/99 %, in ms) from wrk's output."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    latencies = dict(re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+\w+)\s*$", output, re.M))
    if not rps or "99" not in latencies:
        raise BenchError(f"{command}: cannot read wrk's output:\n{output}")
    return {
        "rps": float(rps.group(1)),
        **{f"p{p}_ms": duration_ms(text) for p, text in latencies.items()},
    }


def duration_ms(text):
    """A wrk duration such as 812.00us, 1.53ms, 2.01s or 1.00m, in milliseconds."""
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000}[unit]

"""A LAN of a part's own, for what the node calls only off its loopback
(alert destinations, ONVIF devices): a network namespace joined to this
one by a veth pair in a /24 the part names, the node here at .1, what it
calls there at .2; removed at the run's end. It needs root (ip netns)."""

import os
import subprocess

from .base import BenchError
from .processes import stop_process


def ip(*args):
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Lan:
    """The namespace and its veth pair in `subnet` ("10.215.45."), named
    after it and the run's process, so that two parts of a run each have
    their own."""

    def __init__(self, bench, subnet):
        octet = subnet.rstrip(".").rsplit(".", 1)[1]
        self.namespace = f"nvrb{octet}-{os.getpid()}"
        self.veth = f"nvb{octet}{os.getpid() % 100000}"
        self.address = subnet + "2"
        self.remove()
        ip("netns", "add", self.namespace)
        bench.cleanup.add(self.remove)
        ip("link", "add", self.veth, "type", "veth", "peer", "name", self.veth + "p")
        ip("link", "set", self.veth + "p", "netns", self.namespace)
        ip("address", "add", subnet + "1/24", "dev", self.veth)
        ip("link", "set", self.veth, "up")
        ip("-n", self.namespace, "link", "set", "lo", "up")
        ip("-n", self.namespace, "address", "add", subnet + "2/24", "dev", self.veth + "p")
        ip("-n", self.namespace, "link", "set", self.veth + "p", "up")

    def remove(self):
        subprocess.run(["ip", "link", "delete", self.veth], capture_output=True)
        subprocess.run(["ip", "netns", "delete", self.namespace], capture_output=True)

    def start(self, bench, command, ready, env=None):
        """Starts `command` in the namespace (with `env` added to this
        environment); returns it and the port at the end of its first line,
        once that line begins with `ready`."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
        bench.cleanup.add(lambda: stop_process(proc))
        line = proc.stdout.readline()
        if not line.startswith(ready):
            stop_process(proc)
            raise BenchError(f"{' '.join(command)} did not start: {line!r}")
        return proc, int(line.strip().rsplit(" ", 1)[1])

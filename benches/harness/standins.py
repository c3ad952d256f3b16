"""The stand-ins for what the node talks to, a go2rtc API (the relay), a
camera that never answers and an ONVIF device: the tests' own
(crates/standins), each run as a child process of the program nvr-standin,
built once a run. A child prints `port N` and exits when its stdin closes,
so it also ends when the run does, however the run ends."""

import os
import re
import shutil
import subprocess
import threading

from .base import ROOT, BenchError, progress

# A target folder of its own, so that the build never waits on another
# cargo's lock (the tests' own, or a build of the node beside the run).
TARGET = ROOT / "target/standins"


def program(given):
    """The nvr-standin program: `given` (--standin), or built with cargo
    (std only: seconds, then nothing to do); raises BenchError if it cannot be had."""
    if given is not None:
        if not os.access(given, os.X_OK):
            raise BenchError(f"no stand-in program at {given} (--standin PATH)")
        return given
    cargo = shutil.which("cargo")
    if cargo is None:
        raise BenchError(
            "cargo is missing: it builds the stand-ins (crates/standins); install Rust with rustup, "
            "or give --standin PATH"
        )
    progress("building the stand-ins (crates/standins)")
    command = [cargo, "build", "--locked", "-q", "-p", "nvr-standins", "--target-dir", str(TARGET)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}")
    return TARGET / "debug/nvr-standin"


class StandIn:
    """`nvr-standin KIND`, listening on a free port of 127.0.0.1 until stopped
    (its stderr is the run's, where a panic of it shows)."""

    def __init__(self, bench, kind):
        self.proc = subprocess.Popen(
            [str(bench.standin), kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        bench.cleanup.add(self.stop)
        match = re.fullmatch(r"port (\d+)", self.proc.stdout.readline().strip())
        if not match:
            self.stop()
            raise BenchError(f"the stand-in {kind} did not start (exit status {self.proc.returncode})")
        self.port = int(match.group(1))

    def stop(self):
        """Closes its stdin, on which it exits and every connection it holds
        closes; kills it if it is still there after 10 s."""
        if self.proc.poll() is not None:
            return
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class RelayStandIn(StandIn):
    """The go2rtc stand-in (crates/standins/src/relay.rs): `GET /api` 200
    (health), `GET /api/streams` the streams put so far, `PUT
    /api/streams?name=&src=` and `DELETE /api/streams?src=` 200, `POST
    /api/webrtc?src=` 201 with a fixed SDP answer for a stream put (404 for
    another), anything else 404. It remembers streams as go2rtc does, so the
    node's reconcile settles instead of putting every stream back every 10 s;
    a thread per connection and TCP_NODELAY, so that it adds little to the
    WHEP offers timed through it."""

    def __init__(self, bench):
        super().__init__(bench, "relay")

    def url(self):
        """The base URL to give the node as RELAY_URL."""
        return f"http://127.0.0.1:{self.port}"


class SilentCamera(StandIn):
    """A TCP server that accepts connections and never answers: a hung camera
    (crates/standins/src/silent.rs). Stopping it closes every connection it
    holds: the probes waiting on them fail."""

    def __init__(self, bench):
        super().__init__(bench, "silent-camera")
        self.taken = 0
        threading.Thread(target=self._count, daemon=True).start()

    def _count(self):
        """Follows the `accepted N` line it prints for each connection it takes."""
        for line in self.proc.stdout:
            if match := re.fullmatch(r"accepted (\d+)", line.strip()):
                self.taken = int(match.group(1))

    def accepted(self):
        """How many connections it has taken."""
        return self.taken


class OnvifDevice:
    """The tests' ONVIF device with its Event service
    (crates/standins/src/onvif_device.rs): in `lan`'s namespace, at its
    address (the node calls a device only off its loopback), wanting `user`'s
    WS-Security UsernameToken. `motion` has it say IsMotion to every
    subscription."""

    def __init__(self, bench, lan, user, password):
        command = [str(bench.standin), "onvif-device", lan.address, user]
        self.proc, port = lan.start(bench, command, "port ", env={"NVR_STANDIN_PASSWORD": password})
        self.address = f"http://{lan.address}:{port}/onvif/device_service"

    def motion(self, moving):
        """Says IsMotion `moving`; returns the moment its message carries, in
        ms since the epoch (the device's clock, this machine's)."""
        self.proc.stdin.write(f"motion {'true' if moving else 'false'}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        if not line.startswith("said "):
            raise BenchError(f"the ONVIF device stand-in did not say motion: {line!r}")
        return int(line.split()[1])

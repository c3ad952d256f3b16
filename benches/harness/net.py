"""Ports and HTTP on 127.0.0.1: a free port, whether one accepts, and one
request at a time."""

import http.client
import socket

from .base import BenchError

def free_port():
    """A port nothing listens on now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    """Whether something accepts connections on 127.0.0.1:`port` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def request(port, method, path, body=None, content_type=None, timeout=30, headers=None):
    """One HTTP request on a new connection; returns (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = dict(headers or {})
        if content_type:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as e:
        raise BenchError(f"{method} {path} on port {port}: {e or type(e).__name__}") from e
    finally:
        conn.close()


def expect(status, body, wanted, what):
    """Raises BenchError unless `status` is `wanted`."""
    if status != wanted:
        text = body[:500].decode("utf-8", "replace")
        raise BenchError(f"{what}: expected {wanted}, got {status}: {text}")

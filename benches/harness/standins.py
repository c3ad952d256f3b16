"""The stand-ins for what the node talks to: a go2rtc API (the relay) and a
camera that never answers."""

import json
import selectors
import socket
import threading
import urllib.parse

ANSWER_SDP = (
    b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=bench relay answer\r\nt=0 0\r\n"
    b"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:96 H264/90000\r\n"
    b"a=setup:passive\r\na=mid:0\r\na=sendonly\r\n"
)


class RelayStandIn:
    """A go2rtc stand-in on a thread of this process, as fast as Python allows:
    one selector loop, HTTP/1.1 keep-alive, no thread per connection.

    `GET /api` 200 (health), `GET /api/streams` the streams put so far,
    `PUT /api/streams?name=&src=` and `DELETE /api/streams?src=` 200,
    `POST /api/webrtc?src=` 201 with a fixed SDP answer, anything else 404.
    It remembers streams as go2rtc does, so the node's reconcile settles
    instead of putting every stream back every 10 s.
    """

    def __init__(self, cleanup):
        self.streams = {}
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(512)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.buffers = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        cleanup.add(self.stop)

    def url(self):
        """The base URL to give the node as RELAY_URL."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        """Stops the loop and closes every socket."""
        self.stopped.set()
        self.thread.join(timeout=2)

    def _serve(self):
        """The loop: accepts connections and answers each complete request at once."""
        while not self.stopped.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.fileobj)
        for conn in list(self.buffers):
            self._drop(conn)
        self.selector.close()
        self.listener.close()

    def _accept(self):
        """Takes one pending connection into the loop."""
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(False)
        self.buffers[conn] = b""
        self.selector.register(conn, selectors.EVENT_READ)

    def _drop(self, conn):
        """Forgets and closes a connection."""
        self.selector.unregister(conn)
        del self.buffers[conn]
        conn.close()

    def _read(self, conn):
        """Reads what arrived on `conn` and answers the requests it completes."""
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        buffered = self.buffers[conn] + data
        while (parsed := split_request(buffered)) is not None:
            (method, target, _body), buffered = parsed
            conn.setblocking(True)
            try:
                conn.sendall(self._answer(method, target))
            except OSError:
                self._drop(conn)
                return
            conn.setblocking(False)
        self.buffers[conn] = buffered

    def _answer(self, method, target):
        """The full HTTP response to one request."""
        path, _, query = target.partition("?")
        params = dict(urllib.parse.parse_qsl(query))
        if (method, path) == ("POST", "/api/webrtc"):
            return http_response(201, "application/sdp", ANSWER_SDP)
        if (method, path) == ("GET", "/api"):
            return http_response(200, "application/json", b'{"version":"bench"}')
        if (method, path) == ("GET", "/api/streams"):
            listing = {n: {"producers": [{"url": s}]} for n, s in self.streams.items()}
            return http_response(200, "application/json", json.dumps(listing).encode())
        if (method, path) == ("PUT", "/api/streams") and "src" in params:
            self.streams[params.get("name", params["src"])] = params["src"]
            return http_response(200, "text/plain", b"")
        if (method, path) == ("DELETE", "/api/streams"):
            self.streams.pop(params.get("src"), None)
            return http_response(200, "text/plain", b"")
        return http_response(404, "text/plain", b"404 page not found")


def split_request(buffer):
    """Splits one complete request off `buffer`: ((method, target, body), rest), or None."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = buffer[:head_end].decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    end = head_end + 4 + length
    if len(buffer) < end:
        return None
    return (method, target, buffer[head_end + 4 : end]), buffer[end:]


def http_response(status, content_type, body):
    """An HTTP/1.1 response with a body, as bytes."""
    reasons = {200: "OK", 201: "Created", 404: "Not Found"}
    head = (
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class SilentCamera:
    """A TCP server that accepts connections and never answers: a hung camera."""

    def __init__(self, cleanup):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.held = []
        self.stopped = False
        threading.Thread(target=self._hold, daemon=True).start()
        cleanup.add(self.stop)

    def _hold(self):
        """Accepts and keeps every connection, silently, until the listener closes."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)

    def stop(self):
        """Closes the listener and every held connection: the probes waiting on them fail."""
        if self.stopped:
            return
        self.stopped = True
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for conn in self.held:
            conn.close()

#!/usr/bin/env python3
"""The far ends of the node's alerts, for tests/alerts.rs: a webhook receiver
that checks each delivery's signature with Python's hmac, and a stand-in for
an ntfy server (no ntfy server ships in the registries the tests install
from).

The ntfy stand-in follows ntfy's documented HTTP API (docs.ntfy.sh,
"Publishing" and "Subscribing"): PUT or POST /<topic> publishes, with the
title, message, priority, tags, click, actions, filename and authorization
in headers (X- prefixed or not; RFC 2047 encoded words decoded, as ntfy
does), the body a message or, with a file name, an attachment; GET
/<topic>/json?poll=1 gives the topic's messages as JSON lines. Where it
differs: it keeps messages in memory only, serves no attachment back (it
records their size and first bytes), knows no access control but one
bearer token for every topic (--token), no rate limits, and adds the time
each message arrived (arrivedMs) and whether the attachment is a JPEG.

Webhook: PUT /_secret sets the secret; POST /hook/... records the delivery
(X-Nvr-Alert-Id, whether X-Nvr-Signature is the body's HMAC-SHA256 under the
secret, the body as JSON, arrivedMs); GET /_hooks lists the deliveries.
POST /hang/... is a receiver that hangs: it answers after 60 s.

Usage: receivers.py --address ADDRESS [--port PORT] [--token TOKEN]
Prints "ready PORT" once it listens; ends with its stdin.
"""

import argparse
import email.header
import hashlib
import hmac
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOPIC = re.compile(r"^/([-_A-Za-z0-9]{1,64})$")
POLL = re.compile(r"^/([-_A-Za-z0-9]{1,64})/json$")
PRIORITIES = {"min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5}

lock = threading.Lock()
state = {"secret": b"", "hooks": [], "topics": {}}


def now_ms():
    return int(time.time() * 1000)


def decoded(value):
    """A header's text, RFC 2047 encoded words decoded."""
    if value is None:
        return None
    parts = email.header.decode_header(value)
    return "".join(
        part.decode(charset or "ascii") if isinstance(part, bytes) else part
        for part, charset in parts
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    token = None

    def log_message(self, fmt, *args):
        sys.stderr.write("receivers: " + (fmt % args) + "\n")

    def header(self, *names):
        for name in names:
            for variant in (name, "X-" + name):
                if self.headers.get(variant) is not None:
                    return decoded(self.headers.get(variant))
        return None

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, value):
        payload = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/_hooks":
            with lock:
                return self.answer(200, state["hooks"])
        poll = POLL.match(path)
        if poll and "poll=1" in query.split("&"):
            with lock:
                messages = list(state["topics"].get(poll.group(1), []))
            payload = "".join(json.dumps(m) + "\n" for m in messages).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.answer(404, {"code": 40401, "http": 404, "error": "page not found"})

    def do_PUT(self):
        if self.path == "/_secret":
            with lock:
                state["secret"] = self.body()
            return self.answer(200, {})
        self.publish()

    def do_POST(self):
        if self.path.startswith("/hang/"):
            self.body()
            time.sleep(60)
            return self.answer(200, {})
        if self.path.startswith("/hook/"):
            body = self.body()
            signature = self.headers.get("X-Nvr-Signature") or ""
            with lock:
                wanted = "sha256=" + hmac.new(state["secret"], body, hashlib.sha256).hexdigest()
                record = {
                    "id": self.headers.get("X-Nvr-Alert-Id"),
                    "signatureOk": bool(state["secret"]) and hmac.compare_digest(signature, wanted),
                    "contentType": self.headers.get("Content-Type"),
                    "body": json.loads(body),
                    "arrivedMs": now_ms(),
                }
                state["hooks"].append(record)
            return self.answer(200, {})
        self.publish()

    def publish(self):
        topic = TOPIC.match(self.path.partition("?")[0])
        body = self.body()
        if not topic:
            return self.answer(404, {"code": 40401, "http": 404, "error": "page not found"})
        if self.token is not None and self.headers.get("Authorization") != "Bearer " + self.token:
            return self.answer(403, {"code": 40301, "http": 403, "error": "forbidden"})
        filename = self.header("Filename", "File", "f")
        message = {
            "id": uuid.uuid4().hex[:12],
            "time": int(time.time()),
            "event": "message",
            "topic": topic.group(1),
            "title": self.header("Title", "t"),
            "priority": PRIORITIES.get(self.header("Priority", "Prio", "p") or "default", 3),
            "tags": [t.strip() for t in (self.header("Tags", "Tag", "ta") or "").split(",") if t.strip()],
            "click": self.header("Click"),
            "arrivedMs": now_ms(),
        }
        actions = self.header("Actions", "Action")
        if actions:
            message["actions"] = json.loads(actions) if actions.lstrip().startswith("[") else actions
        if filename:
            message["message"] = self.header("Message", "m") or "You received a file: " + filename
            message["attachment"] = {
                "name": filename,
                "size": len(body),
                "jpeg": body[:2] == b"\xff\xd8",
            }
        else:
            message["message"] = body.decode("utf-8")
        with lock:
            state["topics"].setdefault(topic.group(1), []).append(message)
        self.answer(200, message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token")
    args = parser.parse_args()
    Handler.token = args.token
    server = ThreadingHTTPServer((args.address, args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdout.write("ready %d\n" % server.server_address[1])
    sys.stdout.flush()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()

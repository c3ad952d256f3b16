#!/usr/bin/env python3
"""A go2rtc stand-in that does real WebRTC, for the node's live view tests.

Usage:
    .venv/bin/python tests/relay_webrtc/relay.py --port PORT [--max-seconds N]
        [--ignore-stdin] [--verbose]

Needs aiortc, aiohttp and PyAV (`av`), as installed in the project's .venv.

It listens on 127.0.0.1 only (`--port 0` picks a free port; the listening socket
has SO_REUSEADDR, so it can be started again on the same port right after it
was killed). When it accepts connections it prints exactly one line to stdout:

    ready http://127.0.0.1:PORT

It exits by itself after --max-seconds (default 300), when its stdin reaches EOF
(so it dies with the test that spawned it with a pipe as its stdin; pass
--ignore-stdin for manual runs), and on SIGTERM/SIGINT. Its log goes to stderr.

The HTTP API, as go2rtc 1.9 answers it (internal/api, internal/streams/api.go,
internal/webrtc/server.go):

- `GET /api`: 200, a JSON object with `version` (and a few of go2rtc's other fields).
- `GET /api/streams`: 200, a JSON object of stream name to
  `{"producers": [{"url": src}], "consumers": null | [...]}`.
  `GET /api/streams?src=N`: that stream alone; 404 if unknown.
- `PUT /api/streams?name=N&src=S`: adds stream N, or replaces it (a replaced
  stream whose source changed loses its viewers and its player); 200, empty body.
- `DELETE /api/streams?src=N`: removes stream N, closing its viewers and its
  player; 200, empty body, whether it existed or not.
- `POST /api/webrtc?src=N` with an SDP offer:
  - `Content-Type: application/sdp` (WHEP): 201, `application/sdp`, the answer.
    No `Location` header, and there is no DELETE for the session: as in go2rtc, a
    session ends when the browser's peer connection closes (DTLS close, or ICE
    consent expiring).
  - `application/json` `{"type":"offer","sdp":...}`: 200, `{"type":"answer","sdp":...}`.
  - anything else: the raw SDP answer, 200, with the request's Content-Type.
  - errors are text/plain, with go2rtc's texts: unknown stream: 404
    `stream not found`; no src: 400; the source cannot be opened: 500
    `streams: dial tcp: <source URL>: <reason>` (or `streams: rtsp: <URL>: ...`);
    no codec in common: 500 `streams: codecs not matched: ...`.
  The answer is non-trickle: ICE gathering is complete before it is sent.

Media: a stream's source is an RTSP URL, pulled over TCP with PyAV through
aiortc's `MediaPlayer(src, format="rtsp", decode=False)`, so H.264 video and
G.711 audio (PCMA, as the test camera sends; PCMU too) are passed through as
the camera sends them, never decoded or re-encoded; the answer offers only
those codecs. One player per stream, opened lazily on the first offer (in a
worker thread, OPEN_TIMEOUT = 5 s at most, so the loop never blocks) and shared
by all its viewers through aiortc's `MediaRelay`; it is dropped when the last
viewer leaves, or the stream is deleted or replaced. Each viewer's video starts
at a keyframe: a viewer that joins a running stream waits for the camera's next
one (up to a GOP, 1 s for the test camera), as with go2rtc. FFmpeg gives the
very first packet of an RTSP session no pts, and aiortc drops such packets:
that packet, the camera's first keyframe, gets pts 0 here instead.

A session ends when the peer connection closes (the browser's DTLS close,
ICE consent expiring after some 30 s, or no connection within 20 s of the
answer), when its stream is deleted or replaced, or when the source ends.

ICE stays on loopback: aioice gathers only a 127.0.0.1 host candidate (its
`get_host_addresses` is replaced), there are no STUN/TURN servers (aiortc would
use Google's STUN server by default), candidates in an offer that are not
loopback addresses (including mDNS `.local` names, which would make aioice send
multicast) are dropped, and as a last guard every ICE/DTLS/SRTP datagram to or
from a non-loopback address is dropped (and logged). Chromium without camera or
microphone permission offers only its default-route address (e.g. 192.0.2.2)
from sockets bound to the wildcard address: its checks to the relay's
127.0.0.1 candidate then come from 127.0.0.1, and aioice learns it as a
peer-reflexive candidate, so all traffic is 127.0.0.1 to 127.0.0.1.

Where it differs from go2rtc:
- Only RTSP sources (any URL PyAV opens with format=rtsp, credentials in the
  URL work); no other schemes, no transcoding (an H.265 camera gives "codecs
  not matched"), no WHIP, no WebSocket API, no config file, no `PATCH`/`POST`
  on /api/streams.
- PUT without both `name` and `src` answers 400 (go2rtc uses src as the name).
  PUT with the stream's current src keeps its viewers.
- The error text always names the full source URL (password included), so
  tests can check the node never passes it on; go2rtc's own dial errors may
  name only host:port.
- When the camera stops sending (no packet for READ_TIMEOUT = 5 s) or the RTSP
  session ends, the stream's viewers are closed; go2rtc would try to reconnect
  the producer.
- A viewer's packets are taken from the moment its offer is answered and held
  until its WebRTC is up, so a just-opened source's first keyframe, which comes
  about when DTLS completes, is never lost to that race (without this the
  first frame would wait a whole GOP about half of the time).
- `producers` carry only `url`, `consumers` a short summary per viewer.
- The answer's H.264 profile-level-id is aiortc's (42e01f/42001f) whatever the
  camera's; browsers decode baseline/constrained-baseline streams either way.
"""

import argparse
import asyncio
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time

import aioice.ice
import av
from aiohttp import web
from aiortc import (
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
)
from aiortc import sdp as aiortc_sdp
from aiortc.contrib import media as aiortc_media
from aiortc.contrib.media import MediaPlayer, MediaRelay
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

VERSION = "1.9.9"
OPEN_TIMEOUT = 5.0  # seconds to open an RTSP source (connect + DESCRIBE + SETUP + PLAY)
READ_TIMEOUT = 5.0  # seconds without a packet before the source counts as gone
CONNECT_TIMEOUT = 20.0  # seconds for a viewer's ICE + DTLS to connect after the answer
VERBOSE = False


STARTED = time.monotonic()


def log(msg):
    # Never let a closed stderr (the spawning test died) break anything.
    try:
        sys.stderr.write(f"relay: {time.monotonic() - STARTED:9.3f} {msg}\n")
        sys.stderr.flush()
    except Exception:
        pass


def debug(msg):
    if VERBOSE:
        log(msg)


# --- ICE on loopback only ----------------------------------------------------

def is_loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_host_addresses(use_ipv4=True, use_ipv6=True):
    # aioice's own version lists every interface's address and leaves out
    # 127.0.0.1; here it is the one address there is.
    return ["127.0.0.1"] if use_ipv4 else []


NON_LOOPBACK_DROPPED = {"received": 0, "sent": 0}

_stun_datagram_received = aioice.ice.StunProtocol.datagram_received
_stun_send_stun = aioice.ice.StunProtocol.send_stun
_stun_send_data = aioice.ice.StunProtocol.send_data


def _dropped(direction, addr):
    NON_LOOPBACK_DROPPED[direction] += 1
    if NON_LOOPBACK_DROPPED[direction] == 1:
        log(f"dropping ICE datagrams {'from' if direction == 'received' else 'to'} "
            f"non-loopback addresses (first: {addr[0]}:{addr[1]})")


def _guarded_datagram_received(self, data, addr):
    if not is_loopback(addr[0]):
        _dropped("received", addr)
        return
    _stun_datagram_received(self, data, addr)


def _guarded_send_stun(self, message, addr):
    if not is_loopback(addr[0]):
        _dropped("sent", addr)
        return
    _stun_send_stun(self, message, addr)


async def _guarded_send_data(self, data, addr):
    if not is_loopback(addr[0]):
        _dropped("sent", addr)
        return
    await _stun_send_data(self, data, addr)


aioice.ice.get_host_addresses = _loopback_host_addresses
aioice.ice.StunProtocol.datagram_received = _guarded_datagram_received
aioice.ice.StunProtocol.send_stun = _guarded_send_stun
aioice.ice.StunProtocol.send_data = _guarded_send_data

NO_ICE_SERVERS = RTCConfiguration(iceServers=[])  # aiortc's default is Google's STUN


def loopback_candidates_only(offer):
    """The offer without candidate lines whose address is not a loopback IP.

    A media section left with no candidate also loses `a=end-of-candidates`:
    with it aioice gives up at once ("no candidate pairs") and gathers
    nothing; without it, it answers the peer's checks from 127.0.0.1 (a
    browser whose UDP sockets are bound to the wildcard address sends them
    from there) and learns the peer as a peer-reflexive candidate.
    """
    kept, dropped = 0, 0
    sections = [[]]
    for line in offer.splitlines():
        if line.startswith("m="):
            sections.append([])
        sections[-1].append(line)
    out = []
    for section in sections:
        lines, section_kept = [], 0
        for line in section:
            if line.startswith("a=candidate:"):
                parts = line.split()
                if len(parts) < 6 or not is_loopback(parts[4]):
                    dropped += 1
                    continue
                section_kept += 1
            lines.append(line)
        if not section_kept and section and section[0].startswith("m="):
            lines = [line for line in lines if line != "a=end-of-candidates"]
        kept += section_kept
        out += lines
    return "\r\n".join(out) + "\r\n", kept, dropped


# --- The first H.264 packet from an RTSP source ------------------------------
# FFmpeg's RTSP demuxer gives the very first video packet (the keyframe the
# camera starts with) no pts, and aiortc's demux worker drops packets without
# pts, so the first viewer would wait a whole GOP for the next keyframe. This
# gives that first packet pts 0 (the next ones count from about one frame on).

_player_worker_demux = aiortc_media.player_worker_demux


class _FirstPtsContainer:
    def __init__(self, container):
        self._container = container
        self._video_seen = False

    def demux(self, *streams):
        for packet in self._container.demux(*streams):
            if packet.stream.type == "video":
                if packet.pts is None and not self._video_seen:
                    packet.pts = 0
                    packet.dts = 0
                self._video_seen = True
            yield packet

    def __getattr__(self, name):
        return getattr(self._container, name)


def _demux_worker(loop, container, *args, **kwargs):
    return _player_worker_demux(loop, _FirstPtsContainer(container), *args, **kwargs)


aiortc_media.player_worker_demux = _demux_worker


# --- Sources (one shared MediaPlayer per stream) ------------------------------

class SourceError(Exception):
    """Opening a source failed; the message is the 500's text."""


def describe_open_error(src, exc):
    if type(exc) in (asyncio.TimeoutError, TimeoutError):
        return f"streams: dial tcp: {src}: i/o timeout"
    if isinstance(exc, av.FFmpegError):
        reason = exc.strerror or str(exc)
        errno_ = getattr(exc, "errno", None)
        dial = isinstance(exc, (ConnectionError, TimeoutError)) or errno_ in (
            110, 111, 113, 101, 104, -110, -111, -113)
        if dial:
            return f"streams: dial tcp: {src}: connect: {reason[:1].lower() + reason[1:]}"
        return f"streams: rtsp: {src}: {reason}"
    return f"streams: {src}: {exc}"


def open_player(src):
    return MediaPlayer(
        src,
        format="rtsp",
        options={
            "rtsp_transport": "tcp",
            # The codecs come from the RTSP SDP: don't spend a second probing.
            "analyzeduration": "0",
            "probesize": "32",
            "fflags": "nobuffer",
        },
        timeout=(OPEN_TIMEOUT, READ_TIMEOUT),
        decode=False,
    )


def _player_private(player, name):
    return getattr(player, f"_MediaPlayer__{name}", None)


class Source:
    """One stream's open player, its relay, and the viewers that use it."""

    def __init__(self, stream, player):
        self.stream = stream
        self.player = player
        self.relay = MediaRelay()
        self.viewers = set()
        self.closed = False
        self.ending = False
        self.drains = []
        self.opened_at = time.monotonic()
        # Keep every source track read all the time, whoever watches: the
        # player's worker queues every packet for its tracks, so one nobody
        # reads would grow without end; and the end of the source shows here.
        for track in self.tracks():
            proxy = self.relay.subscribe(track, buffered=False)
            self.drains.append(asyncio.ensure_future(self._drain(proxy)))

    def tracks(self):
        return [t for t in (self.player.video, self.player.audio) if t is not None]

    async def _drain(self, proxy):
        try:
            packet = await proxy.recv()
            debug(f"stream {self.stream.name}: first {proxy.kind} packet after "
                  f"{time.monotonic() - self.opened_at:.3f}s "
                  f"(keyframe: {getattr(packet, 'is_keyframe', None)})")
            while True:
                await proxy.recv()
        except MediaStreamError:
            pass
        except asyncio.CancelledError:
            proxy.stop()
            raise
        if not self.closed and not self.ending:
            # In a task of its own: closing the source cancels the drains.
            self.ending = True
            log(f"stream {self.stream.name}: source ended, closing its viewers")
            asyncio.ensure_future(self.stream.drop_source(self))

    async def close(self):
        """Stops the player's worker without blocking the loop, then ends its tracks."""
        if self.closed:
            return
        self.closed = True
        quit_event = _player_private(self.player, "thread_quit")
        thread = _player_private(self.player, "thread")
        if quit_event is not None and thread is not None:
            quit_event.set()
            # The worker ends after its current read: up to READ_TIMEOUT if
            # the camera went silent. Wait for it in a thread, not the loop.
            await asyncio.get_running_loop().run_in_executor(None, thread.join)
        for track in self.tracks():
            track.stop()  # the last one closes the RTSP session
            # Wake the relay's reader, so it ends the proxies and itself.
            track._queue.put_nowait(None)
        container = _player_private(self.player, "container")
        if container is not None:  # a player whose tracks never started
            try:
                container.close()
            except Exception:
                pass
        for task in self.drains:
            task.cancel()
        log(f"stream {self.stream.name}: player closed")


class FromKeyframe(MediaStreamTrack):
    """A viewer's video: the shared source's packets, from the next keyframe on.

    It starts reading when the offer is answered, not when WebRTC is up, and
    keeps what comes meanwhile (from a keyframe on): a source that was just
    opened sends its first keyframe within some 50 ms, about when ICE and DTLS
    complete, and losing it to that race would cost a whole GOP.
    """

    kind = "video"
    MAX_QUEUED = 500  # packets kept before the sender starts (~20 s at 25 fps)

    def __init__(self, source_track, label):
        super().__init__()
        self.source_track = source_track
        self.label = label
        self.queue = asyncio.Queue()
        self.created = time.monotonic()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self):
        started = False
        try:
            while True:
                packet = await self.source_track.recv()
                if not started:
                    if not getattr(packet, "is_keyframe", True):
                        continue
                    started = True
                    debug(f"{self.label}: first keyframe "
                          f"{time.monotonic() - self.created:.3f}s after the offer")
                elif self.queue.qsize() >= self.MAX_QUEUED:
                    # Nobody sends: start again from a later keyframe.
                    while not self.queue.empty():
                        self.queue.get_nowait()
                    started = getattr(packet, "is_keyframe", False)
                    if not started:
                        continue
                self.queue.put_nowait(packet)
        except MediaStreamError:
            pass
        finally:
            self.queue.put_nowait(None)

    async def recv(self):
        if self.readyState != "live":
            raise MediaStreamError
        packet = await self.queue.get()
        if packet is None:
            self.stop()
            raise MediaStreamError
        return packet

    def stop(self):
        super().stop()
        self.reader.cancel()
        self.source_track.stop()


# --- Streams and viewers -------------------------------------------------------

class Viewer:
    def __init__(self, stream, source, pc, request):
        self.stream = stream
        self.source = source
        self.pc = pc
        self.tracks = []
        self.closed = False
        self.remote = request.remote
        self.user_agent = request.headers.get("User-Agent", "")
        self.desc = "webrtc/whep"
        self.created = time.monotonic()

    def info(self):
        return {
            "format_name": self.desc,
            "protocol": "http",
            "remote_addr": self.remote,
            "user_agent": self.user_agent,
            "state": self.pc.connectionState,
        }

    async def close(self, why):
        if self.closed:
            return
        self.closed = True
        log(f"stream {self.stream.name}: viewer closed ({why})")
        for track in self.tracks:
            track.stop()
        self.stream.viewers.discard(self)
        self.source.viewers.discard(self)
        try:
            # Shielded: a half-closed peer connection would linger on.
            await asyncio.wait_for(asyncio.shield(self.pc.close()), 5)
        except Exception as exc:
            log(f"closing a peer connection: {exc!r}")
        if not self.source.viewers:
            await self.stream.drop_source(self.source)


class Stream:
    def __init__(self, name, src):
        self.name = name
        self.src = src
        self.source = None
        self.opening = None
        self.viewers = set()
        self.removed = False

    def to_json(self):
        consumers = [v.info() for v in self.viewers] or None
        return {"producers": [{"url": self.src}], "consumers": consumers}

    async def get_source(self):
        if self.source is not None and not self.source.closed:
            return self.source
        if self.opening is None:
            self.opening = asyncio.ensure_future(self._open())
        return await asyncio.shield(self.opening)

    async def _open(self):
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        future = loop.run_in_executor(None, open_player, self.src)
        try:
            try:
                player = await asyncio.wait_for(asyncio.shield(future), OPEN_TIMEOUT + 0.5)
            except asyncio.TimeoutError as exc:
                # The open goes on in its thread: close what it opens, if anything.
                future.add_done_callback(_close_late_player)
                raise SourceError(describe_open_error(self.src, exc)) from None
            except Exception as exc:
                if time.monotonic() - started >= OPEN_TIMEOUT - 0.1:
                    # PyAV's timeout interrupts FFmpeg, which then reports
                    # whatever it was reading: say what happened instead.
                    exc = TimeoutError()
                raise SourceError(describe_open_error(self.src, exc)) from None
            source = Source(self, player)
            if self.removed:
                await source.close()
                raise SourceError("stream not found")
            if player.video is None:
                await source.close()
                raise SourceError(
                    "streams: codecs not matched: the source has no H.264 or VP8 video")
            log(f"stream {self.name}: opened {self.src} in "
                f"{time.monotonic() - started:.3f}s (video: yes, audio: "
                f"{'yes' if player.audio is not None else 'no'})")
            self.source = source
            return source
        finally:
            self.opening = None

    async def drop_source(self, source):
        """Closes the source and every viewer still on it."""
        if self.source is source:
            self.source = None
        for viewer in list(source.viewers):
            await viewer.close("source closed")
        await source.close()

    async def remove(self):
        self.removed = True
        for viewer in list(self.viewers):
            await viewer.close("stream removed")
        if self.source is not None:
            await self.drop_source(self.source)


def _close_late_player(future):
    if future.cancelled() or future.exception() is not None:
        return
    player = future.result()
    container = _player_private(player, "container")
    if container is not None:
        try:
            container.close()
        except Exception:
            pass


STREAMS = {}


def capabilities(kind, names):
    """aiortc's codec capabilities for `kind` whose MIME subtype is in `names`, in that order."""
    codecs = RTCRtpSender.getCapabilities(kind).codecs
    chosen = []
    for name in names:
        chosen += [c for c in codecs if c.mimeType.lower() == f"{kind}/{name}".lower()]
    return chosen


def passthrough_codec_name(track_kind, player):
    """The camera's codec as an RTP codec name, for the source's audio/video."""
    container = _player_private(player, "container")
    if container is None:
        return None
    for s in container.streams:
        if s.type == track_kind:
            return {"h264": "H264", "vp8": "VP8", "pcm_alaw": "PCMA",
                    "pcm_mulaw": "PCMU", "opus": "opus"}.get(s.codec_context.name)
    return None


def offered_codecs(offer_sdp, kind):
    try:
        description = aiortc_sdp.SessionDescription.parse(offer_sdp)
    except Exception as exc:
        raise ValueError(f"bad offer: {exc}") from None
    names = set()
    for media in description.media:
        if media.kind == kind:
            names.update(c.mimeType.split("/", 1)[1].lower() for c in media.rtp.codecs)
    return names


async def exchange_sdp(stream, offer, request):
    """The answer to `offer` for a new viewer of `stream`; raises SourceError."""
    filtered, kept, dropped = loopback_candidates_only(offer)
    debug(f"offer candidates: {kept} loopback kept, {dropped} others dropped")
    try:
        video_offered = offered_codecs(filtered, "video")
        audio_offered = offered_codecs(filtered, "audio")
    except ValueError as exc:
        raise SourceError(str(exc)) from None

    while True:
        source = await stream.get_source()
        if not source.closed:  # not closed by a viewer leaving meanwhile
            break
    player = source.player
    video_codec = passthrough_codec_name("video", player)
    audio_codec = passthrough_codec_name("audio", player)
    if video_codec is None or video_codec.lower() not in video_offered:
        if not source.viewers:
            await stream.drop_source(source)
        raise SourceError(
            f"streams: codecs not matched: video:{video_codec} => "
            f"video:{','.join(sorted(video_offered)) or 'none'}")

    pc = RTCPeerConnection(NO_ICE_SERVERS)
    viewer = Viewer(stream, source, pc, request)
    source.viewers.add(viewer)
    stream.viewers.add(viewer)
    try:
        video = FromKeyframe(source.relay.subscribe(player.video, buffered=True), stream.name)
        viewer.tracks.append(video)
        vt = pc.addTransceiver(video, direction="sendonly")
        vt.setCodecPreferences(capabilities("video", [video_codec, "rtx"]))
        if player.audio is not None and audio_codec and audio_codec.lower() in audio_offered:
            audio = source.relay.subscribe(player.audio, buffered=True)
            viewer.tracks.append(audio)
            at = pc.addTransceiver(audio, direction="sendonly")
            at.setCodecPreferences(capabilities("audio", [audio_codec]))
        # An audio section left over gets a recvonly transceiver from aiortc,
        # which answers it "inactive".

        @pc.on("connectionstatechange")
        async def on_state():
            state = pc.connectionState
            debug(f"stream {stream.name}: peer {state}")
            if state in ("failed", "closed"):
                await viewer.close(f"peer {state}")

        await pc.setRemoteDescription(RTCSessionDescription(sdp=filtered, type="offer"))
        if vt.mid is None:
            raise SourceError("streams: codecs not matched: the offer has no video")
        await pc.setLocalDescription(await pc.createAnswer())  # gathers ICE fully
        asyncio.ensure_future(_connect_watchdog(viewer))
        return pc.localDescription.sdp
    except SourceError:
        await viewer.close("offer failed")
        raise
    except Exception as exc:
        await viewer.close("offer failed")
        raise SourceError(f"webrtc: {exc}") from None


async def _connect_watchdog(viewer):
    await asyncio.sleep(CONNECT_TIMEOUT)
    if not viewer.closed and viewer.pc.connectionState != "connected":
        await viewer.close(f"not connected after {CONNECT_TIMEOUT:.0f}s")


# --- HTTP API -------------------------------------------------------------------

def http_error(status, text=""):
    # Like Go's http.Error.
    return web.Response(
        status=status,
        text=text + "\n",
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def json_response(value):
    return web.Response(text=json.dumps(value), content_type="application/json")


async def api_info(request):
    return json_response({
        "config_path": "",
        "host": request.host,
        "local_addr": "127.0.0.1",
        "pid": os.getpid(),
        "platform": "linux/amd64",
        "revision": "stand-in",
        "rtsp": {"listen": "", "default_query": "video&audio"},
        "version": VERSION,
    })


async def api_streams(request):
    query = request.query
    src = query.get("src", "")
    name = query.get("name", "")
    method = request.method

    if method == "GET":
        if not src and not name:
            return json_response({n: s.to_json() for n, s in STREAMS.items()})
        stream = STREAMS.get(src)
        if stream is None:
            return http_error(404)
        return json_response(stream.to_json())

    if method == "PUT":
        if not name or not src:
            return http_error(400)
        old = STREAMS.get(name)
        if old is not None and old.src == src:
            log(f"PUT stream {name}: unchanged")
        else:
            STREAMS[name] = Stream(name, src)
            log(f"PUT stream {name}")
            if old is not None:
                await old.remove()
        return web.Response(status=200)

    if method == "DELETE":
        stream = STREAMS.pop(src, None)
        log(f"DELETE stream {src}: {'removed' if stream else 'unknown'}")
        if stream is not None:
            await stream.remove()
        return web.Response(status=200)

    return http_error(405)


async def api_webrtc(request):
    if request.method == "OPTIONS":
        return web.Response(status=204)
    if request.method != "POST":
        return http_error(405)
    name = request.query.get("src", "")
    if not name:
        return http_error(400)
    stream = STREAMS.get(name)
    if stream is None:
        return http_error(404, "stream not found")

    media_type = request.headers.get("Content-Type", "")
    media_type = media_type.split(";", 1)[0].strip().lower()
    body = await request.read()
    if media_type == "application/json":
        try:
            offer = json.loads(body)["sdp"]
        except Exception as exc:
            return http_error(400, str(exc))
    else:
        offer = body.decode("utf-8", "replace")

    started = time.monotonic()
    try:
        answer = await exchange_sdp(stream, offer, request)
    except SourceError as exc:
        text = str(exc)
        if text == "stream not found":
            return http_error(404, text)
        log(f"POST webrtc {name}: 500 {text} ({time.monotonic() - started:.3f}s)")
        return http_error(500, text)
    log(f"POST webrtc {name}: answered in {time.monotonic() - started:.3f}s "
        f"({len(stream.viewers)} viewer(s))")

    if media_type == "application/json":
        return json_response({"type": "answer", "sdp": answer})
    if media_type == "application/sdp":
        # Exactly "application/sdp", as go2rtc sends it (no charset).
        return web.Response(status=201, body=answer.encode(), content_type="application/sdp")
    response = web.Response(status=200, body=answer.encode())
    if media_type:
        response.headers["Content-Type"] = media_type
    return response


# --- Process ----------------------------------------------------------------------

def listening_socket(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def watch_stdin(loop, stop):
    def run():
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=run, name="stdin-watch", daemon=True).start()


async def main(args):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if not args.ignore_stdin:
        watch_stdin(loop, stop)

    app = web.Application()
    app.router.add_get("/api", api_info)
    app.router.add_route("*", "/api/streams", api_streams)
    app.router.add_route("*", "/api/webrtc", api_webrtc)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    sock = listening_socket(args.port)
    await web.SockSite(runner, sock).start()
    port = sock.getsockname()[1]
    sys.stdout.write(f"ready http://127.0.0.1:{port}\n")
    sys.stdout.flush()

    try:
        await asyncio.wait_for(stop.wait(), args.max_seconds)
        log("stopping")
    except asyncio.TimeoutError:
        log(f"stopping after {args.max_seconds:g}s")

    async def shutdown():
        for stream in list(STREAMS.values()):
            await stream.remove()
        await runner.cleanup()

    try:
        await asyncio.wait_for(shutdown(), 5)
    except Exception as exc:
        log(f"shutdown: {exc!r}")
    if any(NON_LOOPBACK_DROPPED.values()):
        log(f"non-loopback ICE datagrams dropped: {NON_LOOPBACK_DROPPED}")


def parse_args():
    parser = argparse.ArgumentParser(description="go2rtc stand-in with real WebRTC")
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--ignore-stdin", action="store_true",
                        help="don't exit on stdin EOF (manual runs)")
    parser.add_argument("--verbose", action="store_true")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    VERBOSE = arguments.verbose
    code = 0
    try:
        asyncio.run(main(arguments))
    except BaseException as exc:  # noqa: BLE001 - report, then exit non-zero
        log(f"failed: {exc!r}")
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    # A player's worker thread may still sit in a read: don't wait for it.
    os._exit(code)

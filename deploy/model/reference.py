"""One-off check of nvr-classify against the TFLite runtime (not a test).

Makes 300x300 crops of scikit-image's photographs, runs the model with
ai-edge-litert, decodes with an independent NumPy re-implementation of the
anchors, decoding and per-class NMS, and compares with nvr-classify's JSON.

  python3 -m venv .venv-ref
  .venv-ref/bin/pip install ai-edge-litert==2.3.0 scikit-image==0.26.0
  .venv-ref/bin/python deploy/model/reference.py target/model target/release/nvr-classify
"""
import json, math, os, subprocess, sys
import numpy as np
from PIL import Image
import skimage
from ai_edge_litert.interpreter import Interpreter

model_dir, classify = sys.argv[1], sys.argv[2]
data = os.path.join(os.path.dirname(skimage.__file__), "data")


def crop(name, box=None):
    img = Image.open(os.path.join(data, name)).convert("RGB")
    if box is None:  # the centred square
        s = min(img.size)
        box = ((img.size[0] - s) // 2, (img.size[1] - s) // 2)
        box = (box[0], box[1], box[0] + s, box[1] + s)
    return np.asarray(img.crop(box).resize((300, 300), Image.BILINEAR), dtype=np.uint8)


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
    probs = 1 / (1 + np.exp(-scores.astype(np.float64)))
    cls = probs[:, 1:].argmax(1) + 1
    best = probs[np.arange(len(cls)), cls]
    y = boxes[:, 0] / 10 * a[:, 3] + a[:, 1]
    x = boxes[:, 1] / 10 * a[:, 2] + a[:, 0]
    h = np.exp(boxes[:, 2] / 5) * a[:, 3]
    w = np.exp(boxes[:, 3] / 5) * a[:, 2]
    b = np.clip(np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], 1), 0, 1)
    kept = []
    for i in np.argsort(-best):
        if best[i] < 0.1 or len(kept) == 10:
            break
        def iou(j):
            p, q = b[i], b[j]
            iw = max(0, min(p[2], q[2]) - max(p[0], q[0]))
            ih = max(0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = iw * ih
            u = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
            return inter / u if u > 0 else 0
        if not any(cls[j] == cls[i] and iou(j) > 0.5 for j in kept):
            kept.append(i)
    return [(int(cls[i]), float(best[i]), [round(float(v), 3) for v in b[i]]) for i in kept]


labels = open(os.path.join(model_dir, "labels.txt")).read().splitlines()
it = Interpreter(model_path=os.path.join(model_dir, "model.tflite"))
it.allocate_tensors()
inp = it.get_input_details()[0]
outs = {o["name"]: o["index"] for o in it.get_output_details()}
a = anchors()
crops = {"chelsea": crop("chelsea.png"), "astronaut": crop("astronaut.png"), "coffee": crop("coffee.png")}
child = subprocess.Popen([classify, model_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert child.stdout.readline() == b"ready\n"
for n, (name, rgb) in enumerate(crops.items()):
    it.set_tensor(inp["index"], (rgb.astype(np.float32) / 127.5 - 1)[None])
    it.invoke()
    boxes = it.get_tensor(outs["raw_outputs/box_encodings"])[0]
    scores = it.get_tensor(outs["raw_outputs/class_predictions"])[0]
    ref = decode(boxes, scores, a)
    child.stdin.write(b"%d 300 300\n" % n + rgb.tobytes())
    child.stdin.flush()
    got = json.loads(child.stdout.readline())
    print(f"{name}: tract {got['ms']} ms")
    print("  %-12s %-8s %-8s %s" % ("label", "tflite", "tract", "box (tflite | tract)"))
    for i, (c, s, b) in enumerate(ref[:5]):
        g = got["objects"][i] if i < len(got["objects"]) else {"label": "-", "score": float("nan"), "box": []}
        mark = "" if g["label"] == labels[c] else "  LABEL DIFFERS: " + g["label"]
        print("  %-12s %-8.4f %-8.4f %s | %s%s" % (labels[c], s, g["score"], b, g["box"], mark))
child.stdin.close()
child.wait()

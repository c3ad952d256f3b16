// The objects an event saw, drawn over its picture: each object's box (the
// API's `box`, left, top, right, bottom as shares of the picture) in its
// kind's colour, with a label ("person 87%"). The picture is shown at its
// own aspect inside a box of another (cropped to fill it, as a card's
// thumbnail is, or fitted whole, as the player's is): the boxes are laid in
// a frame of the picture's place in that box, in percentages, so they
// scale with it. The node's own red mark of the best object is burned into
// the JPEG; its box here falls on it.

import { percent } from './format.js';

/**
 * Where a picture of aspect `picture` (width / height) lies in a box of
 * aspect `box`, as percentages of the box: `fill` crops it to fill the
 * box (CSS object-fit: cover), else it is fitted whole (contain).
 */
export function pictureFrame(picture, box, fill) {
  const ratio = picture / box;
  // Whole across the box's width (a wider picture fitted, a narrower one filling), else its height.
  const across = ratio > 1 !== fill;
  const width = across ? 100 : ratio * 100;
  const height = across ? 100 / ratio : 100;
  return { left: (100 - width) / 2, top: (100 - height) / 2, width, height };
}

const share = (v) => Math.min(1, Math.max(0, Number(v) || 0));

/**
 * Draws `objects` into `layer` (an element over the picture): a frame at
 * the picture's place, a box per object inside. `picture` and `box` are
 * aspects as pictureFrame takes them; no picture (0) draws nothing.
 */
export function drawObjects(layer, objects, picture, box, fill) {
  const list = Array.isArray(objects) && picture > 0 && box > 0 ? objects.filter((o) => Array.isArray(o.box)) : [];
  layer.replaceChildren();
  layer.hidden = list.length === 0;
  if (!list.length) return;
  const frame = document.createElement('span');
  frame.className = 'obj-frame';
  const at = pictureFrame(picture, box, fill);
  Object.assign(frame.style, { left: `${at.left}%`, top: `${at.top}%`, width: `${at.width}%`, height: `${at.height}%` });
  for (const object of list) {
    const [l, t, r, b] = object.box.map(share);
    const el = document.createElement('span');
    el.className = `obj-box obj-${String(object.kind).replace(/[^a-z]/g, '')}`;
    Object.assign(el.style, { left: `${l * 100}%`, top: `${t * 100}%`, width: `${Math.max(0, r - l) * 100}%`, height: `${Math.max(0, b - t) * 100}%` });
    const label = document.createElement('span');
    label.className = 'obj-label';
    // Inside the box where above it would leave the picture.
    if (t < 0.15) label.classList.add('inside');
    // Ending at the box's right where from its left it would run off the picture.
    if (l > 0.6) label.classList.add('end');
    label.textContent = `${object.kind} ${percent(object.score)}`;
    el.append(label);
    frame.append(el);
  }
  layer.append(frame);
}

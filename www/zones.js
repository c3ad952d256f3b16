// Motion masks and zones in the edit dialog, drawn over a snapshot of the
// camera (GET /api/cameras/{id}/snapshot.jpg) in an SVG of the picture's
// size on screen. Points are kept as the API keeps them, shares (0 to 1) of
// the picture's width and height. Pointer events, so a mouse and a finger
// work alike: a tap or click on the picture adds a point to the shape
// chosen (after the last while it is being drawn, later on the edge nearest
// the tap), a point dragged moves, and a focused point moves with the arrow
// keys and goes with Delete. Polygons are filled by the even-odd rule, as
// the node reads them. A shape of 1 or 2 points is not one: it says so by
// its last point, and is not left (Done, another shape, Save) until it has 3
// or none. A zone may have a time after which who stays in it loiters
// (`loiterSeconds`): the node's refusal of it is shown at its field.

import { $, setText, setAttr, show, toggleClass } from './dom.js';
import { api } from './api.js';
import { change, putCamera } from './store.js';
import { KINDS } from './events.js';
import { counted, sentence } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const MAX_MASKS = 16;
const MAX_ZONES = 8;
const MAX_POINTS = 32;
const ZONE_KINDS = ['motion', 'person', 'vehicle', 'animal', 'package'];
/** How far a press may wander and still be a tap, in CSS pixels. */
const TAP_SLOP = 6;
/** How far an arrow key moves a point, as a share (Shift: five times as far). */
const KEY_STEP = 0.005;

const editor = {
  camera: null, // the camera as the dialog opened (or as Accept or Clear left it)
  shapes: [], // { kind: 'mask' | 'zone', points: [[x, y], ...], name, kinds, loiter (as typed), drawing }
  selected: -1, // index in shapes
  point: -1, // index in the selected shape's points
  gesture: null, // the press under way: { id, x, y, point, target, moved }
  snapshot: null, // { controller, url } of the picture being fetched or shown
  refused: false, // leaving the chosen shape was refused: it has 1 or 2 points
  loiterError: null, // { shape, text }: the node refused that zone's loiterSeconds
};

const round = (v) => Math.round(Math.min(1, Math.max(0, v)) * 10000) / 10000;
const copy = (points) => points.map(([x, y]) => [x, y]);
const selectedShape = () => editor.shapes[editor.selected] || null;
/** The points a shape lacks to be one: 0 for a shape of 3 or more, or of none. */
const missing = (shape) => (shape?.points.length ? Math.max(0, 3 - shape.points.length) : 0);

/** "zones[1].name must …" → "zones: zone 2's name must …", in words for people. */
export function areaWords(message) {
  if (!/^(motionMasks|zones)\[/.test(message)) return message;
  return message
    .replace(/^motionMasks\[(\d+)\]/, (_, i) => `motionMasks: mask ${Number(i) + 1}`)
    .replace(/^zones\[(\d+)\](\.)?/, (_, i, dot) => `zones: zone ${Number(i) + 1}${dot ? "'s " : ''}`)
    .replace(/\[(\d+)\]/, (_, i) => ` point ${Number(i) + 1}`);
}

/** A zone's `loiterSeconds` as typed: none when empty, a number when whole digits, else as typed (the node says why not). */
function loiterSeconds(typed) {
  const text = String(typed ?? '').trim();
  if (!text) return {};
  return { loiterSeconds: /^\d+$/.test(text) ? Number(text) : text };
}

/** The masks, zones and autoMask the editor holds, in the API's shape; null while a shape has 1 or 2 points (it says so). */
export function readAreas() {
  if (!mayLeave()) return null;
  // Sent again: the node says again what it refuses.
  if (editor.loiterError) {
    editor.loiterError = null;
    renderControls();
  }
  const drawn = editor.shapes.filter((s) => s.points.length > 0);
  return {
    motionMasks: drawn.filter((s) => s.kind === 'mask').map((s) => copy(s.points)),
    zones: drawn.filter((s) => s.kind === 'zone').map((s) => ({ name: s.name.trim(), polygon: copy(s.points), kinds: [...s.kinds], ...loiterSeconds(s.loiter) })),
    autoMask: $('edit-autoMask').checked,
  };
}

/**
 * Shows the node's refusal of a zone's loiterSeconds ("zones[1].loiterSeconds
 * must be …") at its field, that zone chosen; false for any other message.
 */
export function zoneFieldError(message) {
  const match = /^zones\[(\d+)\]\.loiterSeconds (.*)$/.exec(message || '');
  const zones = editor.shapes.filter((s) => s.kind === 'zone' && s.points.length > 0);
  const shape = match && zones[Number(match[1])];
  if (!shape) return false;
  choose(editor.shapes.indexOf(shape));
  editor.loiterError = { shape, text: `Loiter after ${match[2]}` };
  renderControls();
  // Once the form is enabled again, after its save.
  setTimeout(() => $('edit-zone-loiter').focus());
  return true;
}

/** Starts the editor on `camera`'s masks and zones, and fetches its picture. */
export function openAreas(camera) {
  closeAreas();
  editor.camera = camera;
  editor.shapes = [
    ...(camera.motionMasks || []).map((points) => ({ kind: 'mask', points: copy(points) })),
    ...(camera.zones || []).map((z) => ({ kind: 'zone', points: copy(z.polygon), name: z.name, kinds: [...z.kinds], loiter: z.loiterSeconds ?? '' })),
  ];
  editor.selected = -1;
  editor.point = -1;
  editor.gesture = null;
  editor.refused = false;
  editor.loiterError = null;
  $('edit-autoMask').checked = camera.autoMask !== false;
  setText($('edit-areas-msg'), '');
  const caps = camera.capabilities || {};
  setAspect(caps.width && caps.height ? caps.width / caps.height : 16 / 9);
  loadSnapshot(camera.id);
  render();
}

/** Lets go of the picture (the dialog closed). */
export function closeAreas() {
  if (!editor.snapshot) return;
  editor.snapshot.controller.abort();
  if (editor.snapshot.url) URL.revokeObjectURL(editor.snapshot.url);
  editor.snapshot = null;
  $('edit-snapshot').removeAttribute('src');
}

function setAspect(ratio) {
  $('edit-stage').style.aspectRatio = String(ratio);
}

async function loadSnapshot(id) {
  const controller = new AbortController();
  const snapshot = { controller, url: null };
  editor.snapshot = snapshot;
  const img = $('edit-snapshot');
  show(img, false);
  pictureMessage('Getting a picture from the camera…', true);
  const timer = setTimeout(() => controller.abort(), 20000);
  try {
    const response = await fetch(`/api/cameras/${id}/snapshot.jpg`, { cache: 'no-store', signal: controller.signal });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new Error(body?.error || `the node answered ${response.status}`);
    }
    const url = URL.createObjectURL(await response.blob());
    if (editor.snapshot !== snapshot) return URL.revokeObjectURL(url);
    snapshot.url = url;
    img.src = url;
    await img.decode();
    setAspect(img.naturalWidth / img.naturalHeight);
    show(img, true);
    pictureMessage('', false);
    render();
  } catch (error) {
    if (editor.snapshot !== snapshot) return undefined;
    let why = error.message;
    if (controller.signal.aborted) why = 'the node did not answer in time';
    else if (error instanceof TypeError) why = 'the node cannot be reached';
    pictureMessage(`${sentence(why)}. Masks and zones can still be drawn.`, false);
  } finally {
    clearTimeout(timer);
  }
  return undefined;
}

function pictureMessage(text, busy) {
  const box = $('edit-snapshot-msg');
  show(box, Boolean(text));
  show(box.querySelector('.spinner'), busy);
  setText(box.lastElementChild, text);
}

// ---- Drawing ----

function el(name, attributes = {}) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

/** What a person calls a shape: "Mask 2", "Zone “Drive”". */
function shapeName(shape) {
  if (shape.kind === 'zone') return `Zone “${shape.name.trim() || 'unnamed'}”`;
  const masks = editor.shapes.filter((s) => s.kind === 'mask');
  return `Mask ${masks.indexOf(shape) + 1}`;
}

function render() {
  const svg = $('edit-overlay');
  const { width, height } = svg.getBoundingClientRect();
  const w = width || 1;
  const h = height || 1;
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  const at = ([x, y]) => `${x * w},${y * h}`;
  // By a point, kept inside the picture.
  const label = ([x, y], text, cls = '') => {
    const node = el('text', {
      class: `area-label${cls}`,
      x: x > 0.6 ? x * w - 6 : x * w + 6,
      y: y < 0.1 ? y * h + 18 : y * h - 6,
      'text-anchor': x > 0.6 ? 'end' : 'start',
    });
    node.textContent = text;
    return node;
  };
  const outline = (points, attributes) => el(points.length > 2 ? 'polygon' : 'polyline', { points: points.map(at).join(' '), 'fill-rule': 'evenodd', ...attributes });
  const parts = [];
  const suggested = editor.camera?.autoMask !== false ? editor.camera?.suggestedMasks || [] : [];
  for (const points of suggested) parts.push(outline(points, { class: 'area suggested' }));
  const order = editor.shapes.map((_, i) => i).filter((i) => i !== editor.selected);
  if (editor.selected >= 0) order.push(editor.selected);
  for (const i of order) {
    const shape = editor.shapes[i];
    const chosen = i === editor.selected;
    parts.push(outline(shape.points, { class: `area ${shape.kind}${chosen ? ' chosen' : ''}`, 'data-shape': i }));
    if (shape.kind === 'zone' && shape.points.length > 0) parts.push(label(shape.points[0], shape.name.trim()));
  }
  const shape = selectedShape();
  const lacks = missing(shape);
  if (lacks) parts.push(label(shape.points.at(-1), `Needs ${counted(lacks, 'more point')}`, editor.refused ? ' lacks refused' : ' lacks'));
  if (shape) {
    shape.points.forEach((point, index) => {
      const handle = el('g', {
        class: `handle${index === editor.point ? ' current' : ''}`,
        tabindex: 0,
        role: 'button',
        'data-index': index,
        'aria-label': `Point ${index + 1} of ${shape.points.length} of ${shapeName(shape)}: drag it, or move it with the arrow keys; Delete removes it`,
        transform: `translate(${at(point)})`,
      });
      handle.append(el('circle', { class: 'hit', r: 12 }), el('circle', { class: 'dot', r: 7 }));
      parts.push(handle);
    });
  }
  const focused = document.activeElement?.closest?.('#edit-overlay .handle')?.dataset.index;
  svg.replaceChildren(...parts);
  if (focused !== undefined) svg.querySelector(`.handle[data-index="${focused}"]`)?.focus();
  renderControls();
}

function renderControls() {
  const shape = selectedShape();
  const masks = editor.shapes.filter((s) => s.kind === 'mask');
  const zones = editor.shapes.filter((s) => s.kind === 'zone');
  $('edit-add-mask').disabled = masks.length >= MAX_MASKS;
  $('edit-add-zone').disabled = zones.length >= MAX_ZONES;
  $('edit-delete-point').disabled = !shape || editor.point < 0;
  $('edit-delete-shape').disabled = !shape;
  $('edit-done-shape').disabled = !shape;
  let hint = 'Add a mask or a zone, or choose one below to change it.';
  if (editor.refused) hint = `${shapeName(shape)} has ${counted(shape.points.length, 'point')}: a shape needs 3. Add ${missing(shape)} more on the picture, or delete the shape.`;
  else if (shape && shape.points.length >= MAX_POINTS) hint = `${shapeName(shape)} has the most points a shape may have (${MAX_POINTS}); drag them to change it.`;
  else if (shape) hint = `Click or tap the picture to add a point to ${shapeName(shape)}; drag a point to move it. Three points make a shape.`;
  setText($('edit-draw-hint'), hint);
  toggleClass($('edit-draw-hint'), 'field-error', editor.refused);
  fillList($('edit-mask-list'), masks, 'No masks: motion is looked for everywhere.');
  fillList($('edit-zone-list'), zones, 'No zones: motion anywhere makes an event.');
  show($('edit-zone'), shape?.kind === 'zone');
  if (shape?.kind === 'zone') {
    if ($('edit-zone-name').value !== shape.name) $('edit-zone-name').value = shape.name;
    for (const box of $('edit-zone-kinds').querySelectorAll('input')) box.checked = shape.kinds.includes(box.value);
    if ($('edit-zone-loiter').value !== String(shape.loiter ?? '')) $('edit-zone-loiter').value = String(shape.loiter ?? '');
  }
  const loiterError = shape && editor.loiterError?.shape === shape ? editor.loiterError.text : '';
  setText($('edit-zone-loiter-error'), loiterError);
  show($('edit-zone-loiter-error'), Boolean(loiterError));
  setAttr($('edit-zone-loiter'), 'aria-invalid', loiterError ? 'true' : null);
  const suggested = editor.camera?.suggestedMasks || [];
  show($('edit-suggested'), suggested.length > 0 && editor.camera?.autoMask !== false);
}

function fillList(list, shapes, empty) {
  const items = shapes.map((shape) => {
    const li = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.shape = String(editor.shapes.indexOf(shape));
    const kinds = shape.kind === 'zone' ? ` · ${shape.kinds.map((k) => KINDS[k]?.[0] || k).join(', ')}` : '';
    const loiter = shape.kind === 'zone' && String(shape.loiter ?? '').trim() ? ` · loiter after ${String(shape.loiter).trim()} s` : '';
    button.textContent = `${shapeName(shape)} · ${counted(shape.points.length, 'point')}${kinds}${loiter}`;
    setAttr(button, 'aria-pressed', editor.shapes[editor.selected] === shape ? 'true' : 'false');
    li.append(button);
    return li;
  });
  if (items.length === 0) {
    const li = document.createElement('li');
    li.className = 'hint';
    li.textContent = empty;
    items.push(li);
  }
  list.replaceChildren(...items);
}

/** Whether the chosen shape may be left: not with 1 or 2 points (it says so, by the shape). */
function mayLeave() {
  editor.refused = missing(selectedShape()) > 0;
  if (editor.refused) {
    render();
    $('edit-stage').scrollIntoView({ block: 'nearest' });
  }
  return !editor.refused;
}

function choose(index, point = -1) {
  if (index !== editor.selected) {
    if (!mayLeave()) return;
    // A shape left is drawn: points added to it later go on its nearest edge.
    if (selectedShape()) selectedShape().drawing = false;
  }
  editor.refused = false;
  editor.selected = index;
  editor.point = point;
  render();
}

// ---- Changing shapes ----

function addShape(kind) {
  if (!mayLeave()) return;
  const shape = { kind, points: [], drawing: true };
  if (kind === 'zone') {
    const names = new Set(editor.shapes.map((s) => (s.name || '').trim().toLowerCase()));
    let n = 1;
    while (names.has(`zone ${n}`)) n += 1;
    Object.assign(shape, { name: `Zone ${n}`, kinds: [...ZONE_KINDS] });
  }
  editor.shapes.push(shape);
  choose(editor.shapes.length - 1);
}

/** Where (share of width, share of height) an event happened on the picture. */
function pointAt(event) {
  const r = $('edit-overlay').getBoundingClientRect();
  return [round((event.clientX - r.left) / r.width), round((event.clientY - r.top) / r.height)];
}

/**
 * Adds `point` to the chosen shape: after its last while it is being drawn,
 * else (once it has three) between the ends of the edge nearest it.
 */
function addPoint(point) {
  const shape = selectedShape();
  if (!shape || shape.points.length >= MAX_POINTS) return;
  const { width, height } = $('edit-overlay').getBoundingClientRect();
  const px = ([x, y]) => [x * width, y * height];
  let at = shape.points.length;
  if (!shape.drawing && shape.points.length >= 3) {
    let best = Infinity;
    shape.points.forEach((a, i) => {
      const d = distanceToSegment(px(point), px(a), px(shape.points[(i + 1) % shape.points.length]));
      if (d < best) {
        best = d;
        at = i + 1;
      }
    });
  }
  shape.points.splice(at, 0, point);
  choose(editor.selected, at);
}

function distanceToSegment([x, y], [ax, ay], [bx, by]) {
  const dx = bx - ax;
  const dy = by - ay;
  const t = dx || dy ? Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy))) : 0;
  return Math.hypot(x - (ax + t * dx), y - (ay + t * dy));
}

function deletePoint() {
  const shape = selectedShape();
  if (!shape || editor.point < 0) return;
  shape.points.splice(editor.point, 1);
  choose(editor.selected, Math.min(editor.point, shape.points.length - 1));
}

function deleteShape() {
  if (editor.selected < 0) return;
  editor.shapes.splice(editor.selected, 1);
  editor.selected = -1;
  choose(-1);
}

function onPointerDown(event) {
  if (event.button !== 0) return;
  const handle = event.target.closest('.handle');
  event.preventDefault(); // no text selection, and the picture is not dragged
  $('edit-overlay').setPointerCapture(event.pointerId);
  editor.gesture = { id: event.pointerId, x: event.clientX, y: event.clientY, point: handle ? Number(handle.dataset.index) : -1, target: event.target, moved: false };
  if (handle) {
    editor.point = editor.gesture.point;
    render();
    $('edit-overlay').querySelector(`.handle[data-index="${editor.point}"]`)?.focus();
  }
}

function onPointerMove(event) {
  const gesture = editor.gesture;
  if (!gesture || gesture.id !== event.pointerId) return;
  if (Math.hypot(event.clientX - gesture.x, event.clientY - gesture.y) > TAP_SLOP) gesture.moved = true;
  const shape = selectedShape();
  if (gesture.moved && gesture.point >= 0 && shape) {
    shape.points[gesture.point] = pointAt(event);
    render();
  }
}

function onPointerUp(event) {
  const gesture = editor.gesture;
  if (!gesture || gesture.id !== event.pointerId) return;
  editor.gesture = null;
  if (gesture.moved || gesture.point >= 0) return;
  // A tap on another shape chooses it, unless the chosen one is not a shape yet.
  const other = gesture.target.closest('[data-shape]');
  if (other && Number(other.dataset.shape) !== editor.selected && !missing(selectedShape())) choose(Number(other.dataset.shape));
  else addPoint(pointAt(event));
}

function onKeyDown(event) {
  const handle = event.target.closest('.handle');
  const shape = selectedShape();
  if (!handle || !shape) return;
  const index = Number(handle.dataset.index);
  const step = event.shiftKey ? KEY_STEP * 5 : KEY_STEP;
  const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
  if (moves[event.key]) {
    const [dx, dy] = moves[event.key];
    const [x, y] = shape.points[index];
    shape.points[index] = [round(x + dx), round(y + dy)];
    editor.point = index;
    render();
  } else if (event.key === 'Delete' || event.key === 'Backspace') {
    editor.point = index;
    deletePoint();
    const next = $('edit-overlay').querySelector(`.handle[data-index="${editor.point}"]`);
    if (next) next.focus();
    else $('edit-overlay').focus();
  } else {
    return;
  }
  event.preventDefault();
}

// ---- What the node learnt: Accept keeps it as masks, Clear stops leaving it out ----

async function applyAtOnce(patch, done) {
  const camera = editor.camera;
  setText($('edit-areas-msg'), '');
  for (const id of ['edit-accept-suggested', 'edit-clear-suggested']) $(id).disabled = true;
  try {
    const updated = await change(camera.id, () => api('PATCH', `/api/cameras/${camera.id}`, patch));
    putCamera(updated);
    if (editor.camera?.id !== camera.id) return;
    done(updated);
    editor.camera = updated;
    render();
  } catch (error) {
    setText($('edit-areas-msg'), `Could not change it: ${areaWords(error.message)}`);
  } finally {
    for (const id of ['edit-accept-suggested', 'edit-clear-suggested']) $(id).disabled = false;
  }
}

function acceptSuggested() {
  const suggested = editor.camera.suggestedMasks || [];
  applyAtOnce({ motionMasks: [...(editor.camera.motionMasks || []), ...suggested] }, () => {
    for (const points of suggested) editor.shapes.push({ kind: 'mask', points: copy(points) });
  });
}

function clearSuggested() {
  applyAtOnce({ autoMask: false }, () => {
    $('edit-autoMask').checked = false;
  });
}

export function setUpAreas() {
  const svg = $('edit-overlay');
  svg.addEventListener('pointerdown', onPointerDown);
  svg.addEventListener('pointermove', onPointerMove);
  svg.addEventListener('pointerup', onPointerUp);
  svg.addEventListener('pointercancel', () => {
    editor.gesture = null;
  });
  svg.addEventListener('keydown', onKeyDown);
  new ResizeObserver(() => {
    if ($('edit').open) render();
  }).observe(svg);
  $('edit-add-mask').addEventListener('click', () => addShape('mask'));
  $('edit-add-zone').addEventListener('click', () => addShape('zone'));
  $('edit-delete-point').addEventListener('click', deletePoint);
  $('edit-delete-shape').addEventListener('click', deleteShape);
  $('edit-done-shape').addEventListener('click', () => choose(-1));
  for (const list of [$('edit-mask-list'), $('edit-zone-list')]) {
    list.addEventListener('click', (event) => {
      const button = event.target.closest('button[data-shape]');
      if (button) choose(Number(button.dataset.shape));
    });
  }
  $('edit-zone-name').addEventListener('input', () => {
    const shape = selectedShape();
    if (shape?.kind !== 'zone') return;
    shape.name = $('edit-zone-name').value;
    render();
  });
  $('edit-zone-loiter').addEventListener('input', () => {
    const shape = selectedShape();
    if (shape?.kind !== 'zone') return;
    shape.loiter = $('edit-zone-loiter').value;
    if (editor.loiterError?.shape === shape) editor.loiterError = null;
    render();
  });
  $('edit-zone-kinds').addEventListener('change', () => {
    const shape = selectedShape();
    if (shape?.kind !== 'zone') return;
    shape.kinds = [...$('edit-zone-kinds').querySelectorAll('input:checked')].map((box) => box.value);
    render();
  });
  $('edit-accept-suggested').addEventListener('click', acceptSuggested);
  $('edit-clear-suggested').addEventListener('click', clearSuggested);
  $('edit').addEventListener('close', closeAreas);
}

// The recordings timeline: a window of time (from 7 days to 1 minute long)
// drawn as a track of rows, one a camera (named when there are several,
// stacked on one time axis), each with its recorded spans as blocks and its
// events as markers coloured by kind (their thumbnails on hover or a long
// press; at an hour and wider, those nearer than GROUP_PX one marker with their
// count, listing them on a click, hover or focus), a playhead on the row playing and local-time labels. A click or
// tap on a row, a marker, or the arrow keys and Enter choose the moment (and
// the camera) to play; the wheel
// and a pinch zoom about the moment under the pointer (between the fingers)
// and a drag pans.

import { $, setText, setAttr, show, toggleClass, syncChildren } from './dom.js';
import { clockTime, dayName } from './format.js';
import { KINDS } from './events.js';

const SECOND = 1000;
const MINUTE = 60000;
const HOUR = 60 * MINUTE;
const LABEL_STEPS = [10 * SECOND, 30 * SECOND, MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];
const MIN_LABEL_GAP_PX = 76; // "12:00 AM" at the labels' size, with room
const MIN_SECONDS_GAP_PX = 100; // "12:00:00 AM"
const EDGE_PX = 30; // labels nearer the ends than this would be cut off
const NARROW_PX = 8; // a block narrower than this has no inside to point at
const EVENT_LEAD_MS = 5000; // an event plays from a little before it starts
const DRAG_PX = 6; // a press that moves less than this is a click
const WHEEL_STEP = 100; // the wheel's deltaY of one zoom step (a mouse's notch; touchpads send less at a time)
const LONG_PRESS_MS = 500; // a finger held on a marker this long shows its thumbnail
const PINCH_STEP = 1.5; // fingers this many times as far apart (or nearer) make one zoom step
const GROUP_PX = 28; // a marker's width, with room

let view = { from: 0, to: 1, rows: [], live: true }; // rows: [{id, name, spans, events}]
let cursor = null; // the moment the keyboard points at, ms
let onPick = () => {};
let onZoom = () => {};
let onPan = () => {};
let drag = null; // { x, from, moved } while the track is pressed
const fingers = new Map(); // pointerId → clientX of the pointers down on the track
let pinch = 0; // the fingers' distance at the last zoom step of a pinch, or 0
let wheel = 0; // deltaY not yet turned into a zoom step

const track = () => $('rec-track');
/** A length of time as a share of the track's width, for CSS. */
const share = (ms) => `${((ms / (view.to - view.from)) * 100).toFixed(3)}%`;
const at = (ms) => share(ms - view.from);
/** Where the keyboard points: where it was moved to, else the latest recording's start. */
function pointer() {
  const latest = Math.max(...view.rows.map((r) => r.spans[r.spans.length - 1]?.start ?? -Infinity));
  return cursor ?? (latest > -Infinity ? latest : view.to);
}

function spanAt(t) {
  return view.rows.some((r) => r.spans.some((s) => s.start <= t && t < s.end));
}

/** One element per row in `parent` (its index in --row), each with its items kept by `syncChildren`. */
function drawRows(parent, className, fill) {
  syncChildren(parent, view.rows, (r) => r.id, () => {
    const row = document.createElement('div');
    row.className = className;
    return row;
  }, (row, r) => {
    row.style.setProperty('--row', view.rows.indexOf(r));
    fill(row, r);
  });
}

function drawBlocks() {
  drawRows($('rec-blocks'), 'tl-row', (row, r) => {
    if (!row.firstElementChild) {
      const name = document.createElement('span');
      name.className = 'tl-name';
      const blocks = document.createElement('div');
      blocks.className = 'tl-spans';
      row.append(name, blocks);
    }
    setText(row.firstElementChild, r.name || '');
    syncChildren(row.lastElementChild, r.spans, (s) => s.start, () => {
      const block = document.createElement('span');
      block.className = 'tl-span';
      return block;
    }, (block, span) => {
      block.style.left = at(span.start);
      block.style.width = share(span.end - span.start);
    });
  });
}

/** `events` as markers: at an hour and wider, runs of them nearer than GROUP_PX as one group (an array). */
function grouped(events) {
  const perMs = track().clientWidth / (view.to - view.from);
  const sorted = [...events].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
  if (view.to - view.from < HOUR || !perMs) return sorted;
  const out = [];
  for (const e of sorted) {
    const last = [out[out.length - 1]].flat();
    if (out.length && (Date.parse(e.startedAt) - Date.parse(last[0].startedAt)) * perMs < GROUP_PX) out[out.length - 1] = [...last, e];
    else out.push(e);
  }
  return out;
}

function drawMarks() {
  drawRows($('rec-marks'), 'tl-lane', (lane, r) => syncChildren(lane, grouped(r.events), (e) => (e.id || `g${e[0].id}`),
    (e) => (e.id ? makeMark() : makeGroup()), (mark, e) => (e.id ? fillMark(mark, e, r.name) : fillGroup(mark, e, r.name))));
}

/** Several markers as one, with their count; a click (or hover, or the keyboard's focus) lists them, each playing its event. */
function makeGroup() {
  const group = document.createElement('div');
  group.className = 'tl-group';
  group.innerHTML = '<button type="button" class="tl-mark"></button><div class="tl-list"></div>';
  group.firstChild.addEventListener('click', () => group.classList.toggle('open'));
  group.lastChild.addEventListener('click', (e) => {
    const item = e.target.closest('button');
    group.classList.remove('open');
    if (item) onPick(Number(item.dataset.start) - EVENT_LEAD_MS, group.parentElement.dataset.key);
  });
  return group;
}

function fillGroup(group, events, name) {
  const [first, last] = [events[0], events[events.length - 1]].map((e) => Date.parse(e.startedAt));
  group.style.left = at(first);
  // The list opens inward at either end of the timeline, never past the screen.
  const place = (first - view.from) / (view.to - view.from);
  toggleClass(group, 'start', place < 0.25);
  toggleClass(group, 'end', place > 0.75);
  const count = group.firstChild;
  setText(count, events.length);
  setAttr(count, 'aria-label', `${name ? `${name}: ` : ''}${events.length} events, ${clockTime(first)} to ${clockTime(last)}: list them`);
  syncChildren(group.lastChild, events, (e) => e.id, () => {
    const item = document.createElement('button');
    item.type = 'button';
    return item;
  }, (item, e) => {
    fillMark(item, e, name);
    setText(item, `${(KINDS[e.kind] || [e.kind])[0]} ${clockTime(Date.parse(e.startedAt), true)}`);
    item.style.left = '';
  });
}

function makeMark() {
  const mark = document.createElement('button');
  mark.type = 'button';
  mark.className = 'tl-mark';
  mark.addEventListener('click', () => onPick(Number(mark.dataset.start) - EVENT_LEAD_MS, mark.parentElement.dataset.key));
  // A finger held on it (touch's hover) shows the thumbnail until lifted; timed here,
  // as not every browser turns a long press into a contextmenu event.
  let peek = 0;
  mark.addEventListener('pointerdown', (e) => {
    if (e.pointerType === 'touch') peek = setTimeout(() => toggleClass(mark, 'peek', true), LONG_PRESS_MS);
  });
  for (const type of ['pointerup', 'pointercancel', 'pointerleave']) {
    mark.addEventListener(type, () => {
      clearTimeout(peek);
      toggleClass(mark, 'peek', false);
    });
  }
  mark.addEventListener('contextmenu', (e) => e.preventDefault()); // the thumbnail, not the menu
  const thumb = document.createElement('img');
  thumb.className = 'tl-thumb';
  thumb.alt = '';
  thumb.loading = 'lazy'; // only when first shown
  mark.append(thumb);
  return mark;
}

/** `name`: the camera's, when rows are stacked. */
function fillMark(mark, event, name) {
  const start = Date.parse(event.startedAt);
  const [word] = KINDS[event.kind] || [String(event.kind || 'Event')];
  mark.dataset.start = String(start);
  mark.style.left = at(start);
  for (const kind of Object.keys(KINDS)) toggleClass(mark, `kind-${kind}`, kind === event.kind);
  const label = `${name ? `${name}: ` : ''}${word} at ${clockTime(start, true)}: play from 5 s before`;
  setAttr(mark, 'aria-label', label);
  setAttr(mark, 'title', label);
  const thumb = mark.firstElementChild;
  if (!thumb) return;
  setAttr(thumb, 'src', event.thumbnailUrl);
  show(thumb, Boolean(event.thumbnailUrl));
}

/** Local times as far apart as the width allows (midnight as its day); "now" at the end when the window ends now. */
function drawLabels() {
  const width = track().clientWidth;
  if (!width) return;
  const perMs = width / (view.to - view.from);
  const step = LABEL_STEPS.find((ms) => ms * perMs >= (ms < MINUTE ? MIN_SECONDS_GAP_PX : MIN_LABEL_GAP_PX)) || 24 * HOUR;
  const times = [];
  if (step < HOUR) {
    for (let ms = Math.ceil(view.from / step) * step; ms < view.to; ms += step) times.push(ms);
  } else {
    // Whole local hours, those a multiple of the step.
    for (let ms = new Date(view.from).setMinutes(0, 0, 0) + HOUR; ms < view.to; ms += HOUR) {
      if (new Date(ms).getHours() % (step / HOUR) === 0) times.push(ms);
    }
  }
  const labels = times.filter((ms) => {
    const x = (ms - view.from) * perMs;
    return x > EDGE_PX && x < width - EDGE_PX * (view.live ? 1.5 : 1);
  }).map((ms) => {
    const midnight = new Date(ms).getHours() === 0 && new Date(ms).getMinutes() === 0 && step >= MINUTE;
    return { ms, text: midnight ? dayName(ms) : clockTime(ms, step < MINUTE), day: midnight };
  });
  if (view.live) labels.push({ ms: view.to, text: 'now', now: true });
  syncChildren($('rec-hours'), labels, (l) => (l.now ? 'now' : l.ms), () => document.createElement('span'), (el, label) => {
    setText(el, label.text);
    toggleClass(el, 'tl-now', Boolean(label.now));
    toggleClass(el, 'tl-day', Boolean(label.day));
    el.style.left = label.now ? '' : at(label.ms);
  });
}

function drawCursor() {
  const t = pointer();
  const el = track();
  setAttr(el, 'aria-valuenow', Math.round((t - view.from) / MINUTE));
  const words = `${clockTime(t)}, ${spanAt(t) ? 'recorded' : 'nothing recorded'}`;
  setAttr(el, 'aria-valuetext', words);
  setText($('rec-cursor-time'), `${words}.`);
  $('rec-cursor').style.left = at(t);
}

/**
 * Draws `from`..`to` (ms) with `rows` ({id, name, spans: [{start, end}] oldest first, events: the API's}),
 * stacked with their names when `stacked`; `live`: `to` is now.
 */
export function drawTimeline(from, to, rows, live, stacked) {
  view = { from, to, rows: rows.map((r) => ({ ...r, name: stacked ? r.name : '' })), live };
  const timeline = track().parentElement;
  toggleClass(timeline, 'stacked', stacked);
  timeline.style.setProperty('--rows', rows.length);
  if (cursor !== null) cursor = Math.min(to, Math.max(from, cursor));
  setAttr(track(), 'aria-valuemax', Math.round((to - from) / MINUTE));
  drawBlocks();
  drawMarks();
  drawLabels();
  drawCursor();
}

/** Puts the playhead at `ms` on the row of `id`, or hides it (null). */
export function setPlayhead(ms, id) {
  const el = $('rec-playhead');
  const row = view.rows.findIndex((r) => r.id === id);
  const shown = ms !== null && ms >= view.from && ms <= view.to && row >= 0;
  show(el, shown);
  if (!shown) return;
  el.style.left = at(ms);
  el.style.setProperty('--row', row);
}

/** Forgets where the keyboard pointed (another camera's recordings). */
export function resetCursor() {
  cursor = null;
}

/** The moment under the pointer of `event`. */
function timeAt(event) {
  const rect = track().getBoundingClientRect();
  return view.from + ((event.clientX - rect.left) / rect.width) * (view.to - view.from);
}

/** The moment and the row (its id) under the pointer of a click. */
function pointed(event) {
  const rect = track().getBoundingClientRect();
  const t = timeAt(event);
  const n = view.rows.length;
  const row = view.rows[Math.min(n - 1, Math.max(0, Math.floor(((event.clientY - rect.top) / rect.height) * n)))];
  const block = event.target.closest('.tl-span');
  const span = block && row?.spans.find((s) => String(s.start) === block.dataset.key);
  if (!span) return [t, row?.id];
  // A click on a block plays that block, even where its minimum width reaches past the span.
  const wide = ((span.end - span.start) / (view.to - view.from)) * rect.width >= NARROW_PX;
  return [wide ? Math.min(span.end, Math.max(span.start, t)) : span.start, row.id];
}

const KEY_STEPS = { ArrowLeft: -MINUTE, ArrowDown: -MINUTE, ArrowRight: MINUTE, ArrowUp: MINUTE, PageDown: -HOUR, PageUp: HOUR };

function onKey(event) {
  let t = pointer();
  if (event.key in KEY_STEPS) t += KEY_STEPS[event.key] * (event.shiftKey && event.key.startsWith('Arrow') ? 10 : 1);
  else if (event.key === 'Home') t = view.from;
  else if (event.key === 'End') t = view.to;
  else if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    onPick(t);
    return;
  } else return;
  event.preventDefault();
  cursor = Math.min(view.to, Math.max(view.from, t));
  drawCursor();
}

const spread = () => {
  const [a, b] = [...fingers.values()];
  return Math.abs(a - b);
};

function press(event) {
  if (event.button !== 0 || event.target.closest('.tl-mark')) return;
  fingers.set(event.pointerId, event.clientX);
  if (fingers.size === 2) {
    // A second finger: a pinch, not a drag, and no click at its end.
    track().setPointerCapture(event.pointerId);
    drag = { moved: true };
    pinch = spread() || 1;
    return;
  }
  drag = { x: event.clientX, from: view.from, moved: false };
}

function pinchMove(event) {
  fingers.set(event.pointerId, event.clientX);
  const ratio = spread() / pinch;
  const steps = Math.trunc(Math.log(ratio) / Math.log(PINCH_STEP));
  if (!steps) return;
  pinch = spread() || 1;
  const [a, b] = [...fingers.values()];
  onZoom(steps, timeAt({ clientX: (a + b) / 2 }));
}

function move(event) {
  if (fingers.size === 2 && fingers.has(event.pointerId)) {
    pinchMove(event);
    return;
  }
  if (!drag || drag.x === undefined) return;
  const dx = event.clientX - drag.x;
  if (!drag.moved && Math.abs(dx) < DRAG_PX) return;
  if (!drag.moved) track().setPointerCapture(event.pointerId);
  drag.moved = true;
  onPan(drag.from - (dx / track().clientWidth) * (view.to - view.from), false);
}

function release(event) {
  const pinched = fingers.size === 2;
  fingers.delete(event.pointerId);
  if (pinched) pinch = 0;
  else if (drag?.moved) onPan(view.from, true);
}

/**
 * Wires the timeline: `pick(ms, id)` is called with the moment chosen and
 * its row's id (undefined from the keyboard),
 * `zoom(steps, ms)` to zoom in (steps > 0) or out about a moment, and
 * `pan(from, done)` with the start the window is dragged to (`done` when let go).
 */
export function setUpTimeline(pick, zoom, pan) {
  onPick = pick;
  onZoom = zoom;
  onPan = pan;
  const el = track();
  el.addEventListener('click', (event) => {
    // The click that ends a drag plays nothing.
    if (drag?.moved) {
      drag = null;
      return;
    }
    drag = null;
    onPick(...pointed(event));
  });
  el.addEventListener('keydown', onKey);
  el.addEventListener('pointerdown', press);
  el.addEventListener('pointermove', move);
  el.addEventListener('pointerup', release);
  el.addEventListener('pointercancel', (event) => {
    release(event);
    drag = null;
  });
  // Over the markers and the times too.
  el.parentElement.addEventListener('wheel', (event) => {
    event.preventDefault();
    wheel += event.deltaY;
    const steps = Math.trunc(wheel / WHEEL_STEP);
    if (!steps) return;
    wheel -= steps * WHEEL_STEP;
    onZoom(-steps, timeAt(event));
  }, { passive: false });
  new ResizeObserver(() => {
    drawMarks();
    drawLabels();
  }).observe(el);
}

// The recordings timeline: a window of time (the last 24 h) drawn as a track
// with the recorded spans as blocks, the camera's events as markers, a
// playhead and local-time hour labels. A click or tap on the track, a marker,
// or the arrow keys and Enter choose the moment to play.

import { $, setText, setAttr, show, toggleClass, syncChildren } from './dom.js';
import { clockTime, dayName } from './format.js';
import { KINDS } from './events.js';

const MINUTE = 60000;
const HOUR = 60 * MINUTE;
const LABEL_STEPS_H = [1, 2, 3, 6, 12, 24];
const MIN_LABEL_GAP_PX = 76; // "12:00 AM" at the labels' size, with room
const EDGE_PX = 30; // labels nearer the ends than this would be cut off
const NARROW_PX = 8; // a block narrower than this has no inside to point at
const EVENT_LEAD_MS = 5000; // an event plays from a little before it starts

let view = { from: 0, to: 1, spans: [], events: [] };
let cursor = null; // the moment the keyboard points at, ms
let onPick = () => {};

const track = () => $('rec-track');
/** A length of time as a share of the track's width, for CSS. */
const share = (ms) => `${((ms / (view.to - view.from)) * 100).toFixed(3)}%`;
const at = (ms) => share(ms - view.from);
/** Where the keyboard points: where it was moved to, else the latest recording's start. */
const pointer = () => cursor ?? (view.spans.length ? view.spans[view.spans.length - 1].start : view.to);

function spanAt(t) {
  return view.spans.find((s) => s.start <= t && t < s.end);
}

function drawBlocks() {
  syncChildren($('rec-blocks'), view.spans, (s) => s.start, () => {
    const block = document.createElement('span');
    block.className = 'tl-span';
    return block;
  }, (block, span) => {
    block.style.left = at(span.start);
    block.style.width = share(span.end - span.start);
  });
}

function drawMarks() {
  syncChildren($('rec-marks'), view.events, (e) => e.id, () => {
    const mark = document.createElement('button');
    mark.type = 'button';
    mark.className = 'tl-mark';
    mark.addEventListener('click', () => onPick(Number(mark.dataset.start) - EVENT_LEAD_MS));
    return mark;
  }, (mark, event) => {
    const start = Date.parse(event.startedAt);
    const [word] = KINDS[event.kind] || [String(event.kind || 'Event')];
    mark.dataset.start = String(start);
    mark.style.left = at(start);
    for (const kind of Object.keys(KINDS)) toggleClass(mark, `kind-${kind}`, kind === event.kind);
    const label = `${word} at ${clockTime(start, true)}: play from 5 s before`;
    setAttr(mark, 'aria-label', label);
    setAttr(mark, 'title', label);
  });
}

/** Full local hours, as far apart as the width allows (midnight as its day); "now" at the end. */
function drawHours() {
  const width = track().clientWidth;
  if (!width) return;
  const perHour = (width * HOUR) / (view.to - view.from);
  const step = LABEL_STEPS_H.find((h) => h * perHour >= MIN_LABEL_GAP_PX) || 24;
  const hours = [];
  const first = new Date(view.from).setMinutes(0, 0, 0) + HOUR; // the local clock's next full hour
  for (let ms = first; ms < view.to; ms += HOUR) {
    const x = ((ms - view.from) / (view.to - view.from)) * width;
    if (new Date(ms).getHours() % step === 0 && x > EDGE_PX && x < width - EDGE_PX * 1.5) hours.push(ms);
  }
  const labels = hours.map((ms) => {
    const midnight = new Date(ms).getHours() === 0;
    return { ms, text: midnight ? dayName(ms) : clockTime(ms), day: midnight };
  });
  labels.push({ ms: view.to, text: 'now', now: true });
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

/** Draws `from`..`to` (ms) with `spans` ({start, end}, oldest first) and `events` (the API's). */
export function drawTimeline(from, to, spans, events) {
  view = { from, to, spans, events };
  if (cursor !== null) cursor = Math.min(to, Math.max(from, cursor));
  drawBlocks();
  drawMarks();
  drawHours();
  drawCursor();
}

/** Puts the playhead at `ms`, or hides it (null). */
export function setPlayhead(ms) {
  const el = $('rec-playhead');
  const shown = ms !== null && ms >= view.from && ms <= view.to;
  show(el, shown);
  if (shown) el.style.left = at(ms);
}

/** Forgets where the keyboard pointed (another camera's recordings). */
export function resetCursor() {
  cursor = null;
}

function pointed(event) {
  const rect = track().getBoundingClientRect();
  const t = view.from + ((event.clientX - rect.left) / rect.width) * (view.to - view.from);
  const block = event.target.closest('.tl-span');
  const span = block && view.spans.find((s) => String(s.start) === block.dataset.key);
  if (!span) return t;
  // A click on a block plays that block, even where its minimum width reaches past the span.
  const wide = ((span.end - span.start) / (view.to - view.from)) * rect.width >= NARROW_PX;
  return wide ? Math.min(span.end, Math.max(span.start, t)) : span.start;
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

/** Wires the timeline; `pick(ms)` is called with the moment chosen. */
export function setUpTimeline(pick) {
  onPick = pick;
  const el = track();
  el.addEventListener('click', (event) => onPick(pointed(event)));
  el.addEventListener('keydown', onKey);
  new ResizeObserver(drawHours).observe(el);
}

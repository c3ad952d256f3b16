// Recent events: newest first, filtered by camera and kind on the page.

import { $, setText, setAttr, show, toggleClass, fromTemplate, setIcon } from './dom.js';
import { serverNow } from './api.js';
import { absoluteTime, duration, percent, relativeTime } from './format.js';

/** Each event kind's word and icon. */
export const KINDS = {
  person: ['Person', 'i-person'],
  vehicle: ['Vehicle', 'i-vehicle'],
  animal: ['Animal', 'i-animal'],
  package: ['Package', 'i-package'],
  motion: ['Motion', 'i-motion'],
};
const CLIPS = {
  local: ['Clip saved on node', 'local'],
  uploading: ['Clip uploading…', 'uploading'],
  uploaded: ['Clip uploaded', 'uploaded'],
};

const rows = new Map(); // event id → row element
let last = null; // the state last rendered, for the clock tick and the filters

function cameraOptions(cameras) {
  const select = $('filter-camera');
  const wanted = [['', 'All cameras'], ...[...cameras.values()].map((c) => [c.id, c.name || 'Unnamed camera'])];
  const have = [...select.options].map((o) => [o.value, o.textContent]);
  if (JSON.stringify(wanted) === JSON.stringify(have)) return;
  const chosen = select.value;
  select.replaceChildren(
    ...wanted.map(([value, text]) => {
      const option = document.createElement('option');
      option.value = value;
      option.textContent = text;
      return option;
    }),
  );
  select.value = wanted.some(([value]) => value === chosen) ? chosen : '';
}

function fillRow(row, event, cameras, now) {
  const [word, icon] = KINDS[event.kind] || [String(event.kind || 'Event'), 'i-motion'];
  setIcon(row.querySelector('.ev-kind svg'), icon);
  setText(row.querySelector('.ev-word'), word);
  toggleClass(row, `kind-${event.kind}`, true);
  const camera = cameras.get(event.cameraId);
  const cam = row.querySelector('.ev-cam');
  setText(cam, camera ? camera.name : 'Removed camera');
  toggleClass(cam, 'muted', !camera);
  const score = row.querySelector('.ev-score');
  setText(score, percent(event.score));
  setAttr(score, 'title', 'How sure the detector was');
  const start = Date.parse(event.startedAt);
  const end = Date.parse(event.endedAt);
  const time = row.querySelector('.ev-time');
  setAttr(time, 'datetime', event.startedAt || null);
  setAttr(time, 'title', absoluteTime(start));
  setText(time, relativeTime(start, now));
  setText(row.querySelector('.ev-dur'), Number.isFinite(end) ? duration(end - start) : 'ongoing');
  const [clip, tone] = CLIPS[event.clipStatus] || [`Clip ${event.clipStatus || 'unknown'}`, ''];
  const clipEl = row.querySelector('.ev-clip');
  setText(clipEl, clip);
  for (const t of ['local', 'uploading', 'uploaded']) toggleClass(clipEl, t, t === tone);
}

export function renderEvents(state) {
  last = state;
  cameraOptions(state.cameras);
  const list = $('event-list');
  if (state.events === null) return;
  const cameraId = $('filter-camera').value;
  const kind = $('filter-kind').value;
  const shown = state.events.filter((e) => (!cameraId || e.cameraId === cameraId) && (!kind || e.kind === kind));
  const now = serverNow();
  const keep = new Set();
  shown.forEach((event, index) => {
    let row = rows.get(event.id);
    if (!row) {
      row = fromTemplate('t-event');
      rows.set(event.id, row);
    }
    keep.add(event.id);
    fillRow(row, event, state.cameras, now);
    if (list.children[index] !== row) list.insertBefore(row, list.children[index] || null);
  });
  for (const [id, row] of rows) {
    if (!keep.has(id)) {
      row.remove();
      if (!state.events.some((e) => e.id === id)) rows.delete(id);
    }
  }
  const total = state.events.length;
  const filtered = Boolean(cameraId || kind);
  let empty = '';
  if (total === 0) empty = 'No events yet. Detections from cameras with “Detect” on show up here.';
  else if (shown.length === 0) empty = 'No events match these filters.';
  show($('event-list').parentElement, shown.length > 0);
  setText($('events-empty'), empty);
  show($('events-empty'), Boolean(empty));
  setText($('events-count'), total === 0 ? '' : filtered ? `Showing ${shown.length} of the ${total} most recent events` : `The ${total} most recent events, newest first`);
}

export function setUpEvents() {
  for (const id of ['filter-camera', 'filter-kind']) {
    $(id).addEventListener('change', () => last && renderEvents(last));
  }
  // "2 min ago" moves on even between refreshes.
  setInterval(() => {
    if (!document.hidden && last) renderEvents(last);
  }, 15000);
}

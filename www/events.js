// Recent events: newest first, filtered by camera, kind and zone on the page,
// each with the zones it entered and its thumbnail, which plays its clip
// (clip.js).

import { $, setText, setAttr, show, toggleClass, fromTemplate, setIcon, syncChildren } from './dom.js';
import { serverNow } from './api.js';
import { absoluteTime, duration, percent, relativeTime, scoreWords } from './format.js';
import { openClip } from './clip.js';

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

const CLIP_WAIT_MS = 60000; // the node cuts a clip within some 40 s of its event's end

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

/** The zones to filter by: the cameras' and those events name (of a zone since removed). */
function zoneOptions(state) {
  const names = new Set();
  for (const camera of state.cameras.values()) for (const zone of camera.zones || []) names.add(zone.name);
  for (const event of state.events || []) for (const name of event.zones || []) names.add(name);
  const select = $('filter-zone');
  const wanted = ['', ...[...names].sort((a, b) => a.localeCompare(b))];
  const have = [...select.options].map((o) => o.value);
  if (JSON.stringify(wanted) !== JSON.stringify(have)) {
    const chosen = select.value;
    select.replaceChildren(...wanted.map((name) => new Option(name || 'All zones', name)));
    select.value = wanted.includes(chosen) ? chosen : '';
  }
  show(select, names.size > 0);
  show($('filter-zone-label'), names.size > 0);
}

function makeRow() {
  const row = fromTemplate('t-event');
  const img = row.querySelector('.ev-shot img');
  // A thumbnail that cannot be had (its file gone) leaves the play button on its own.
  img.addEventListener('error', () => show(img, false));
  row.querySelector('.ev-shot').addEventListener('click', () => {
    const event = last.events.find((e) => e.id === row.dataset.key);
    if (event?.clipUrl) openClip(event, last.cameras.get(event.cameraId), img.alt);
  });
  return row;
}

/** The thumbnail that plays the clip; until there is a clip, words that say so. */
function fillShot(row, event, what, now) {
  const shot = row.querySelector('.ev-shot');
  const img = shot.querySelector('img');
  show(shot, Boolean(event.clipUrl));
  setAttr(shot, 'aria-label', `Play clip: ${what}`);
  setAttr(img, 'alt', what);
  if (img.getAttribute('src') !== (event.thumbnailUrl || null)) {
    setAttr(img, 'src', event.thumbnailUrl);
    show(img, Boolean(event.thumbnailUrl));
  }
  const none = row.querySelector('.ev-noclip');
  show(none, !event.clipUrl);
  let words = 'No clip';
  if (event.inProgress) words = 'Going on…';
  else if (now - Date.parse(event.endedAt) < CLIP_WAIT_MS) words = 'Clip coming…';
  setText(none, words);
}

function fillRow(row, event, cameras, now) {
  const [word, icon] = KINDS[event.kind] || [String(event.kind || 'Event'), 'i-motion'];
  setIcon(row.querySelector('.ev-kind svg'), icon);
  setText(row.querySelector('.ev-word'), word);
  // The kind of an event going on may still change (motion, then person).
  for (const kind of Object.keys(KINDS)) toggleClass(row, `kind-${kind}`, kind === event.kind);
  toggleClass(row, 'in-progress', Boolean(event.inProgress));
  const camera = cameras.get(event.cameraId);
  const cam = row.querySelector('.ev-cam');
  setText(cam, camera ? camera.name : 'Removed camera');
  toggleClass(cam, 'muted', !camera);
  const zones = Array.isArray(event.zones) ? event.zones : [];
  const zonesEl = row.querySelector('.ev-zones');
  setText(zonesEl, zones.length ? `in ${zones.join(', ')}` : '');
  show(zonesEl, zones.length > 0);
  const score = row.querySelector('.ev-score');
  setText(score, percent(event.score));
  setAttr(score, 'title', scoreWords(event));
  const start = Date.parse(event.startedAt);
  const end = Date.parse(event.endedAt);
  fillShot(row, event, `${word} at ${camera ? camera.name : 'a removed camera'}, ${absoluteTime(start)}`, now);
  const time = row.querySelector('.ev-time');
  setAttr(time, 'datetime', event.startedAt || null);
  setAttr(time, 'title', absoluteTime(start));
  setText(time, relativeTime(start, now));
  let lasted = Number.isFinite(end) ? duration(end - start) : '';
  if (event.inProgress) lasted = lasted ? `going on, ${lasted} so far` : 'going on';
  setText(row.querySelector('.ev-dur'), lasted);
  const [clip, tone] = CLIPS[event.clipStatus] || [`Clip ${event.clipStatus || 'unknown'}`, ''];
  const clipEl = row.querySelector('.ev-clip');
  // Where the clip is, once there is one (an event without one is still "local").
  show(clipEl, Boolean(event.clipUrl));
  setText(clipEl, clip);
  for (const t of ['local', 'uploading', 'uploaded']) toggleClass(clipEl, t, t === tone);
}

export function renderEvents(state) {
  last = state;
  cameraOptions(state.cameras);
  zoneOptions(state);
  const list = $('event-list');
  if (state.events === null) return;
  const cameraId = $('filter-camera').value;
  const kind = $('filter-kind').value;
  const zone = $('filter-zone').value;
  const shown = state.events.filter((e) => (!cameraId || e.cameraId === cameraId) && (!kind || e.kind === kind) &&
    (!zone || (e.zones || []).includes(zone)));
  const now = serverNow();
  syncChildren(list, shown, (e) => e.id, makeRow, (row, event) => fillRow(row, event, state.cameras, now));
  const total = state.events.length;
  const filtered = Boolean(cameraId || kind || zone);
  let empty = '';
  if (total === 0) empty = 'No events yet. Detections from cameras with “Detect” on show up here.';
  else if (shown.length === 0) empty = 'No events match these filters.';
  show($('event-list').parentElement, shown.length > 0);
  setText($('events-empty'), empty);
  show($('events-empty'), Boolean(empty));
  setText($('events-count'), total === 0 ? '' : filtered ? `Showing ${shown.length} of the ${total} most recent events` : `The ${total} most recent events, newest first`);
}

export function setUpEvents() {
  for (const id of ['filter-camera', 'filter-kind', 'filter-zone']) {
    $(id).addEventListener('change', () => last && renderEvents(last));
  }
  // "2 min ago" moves on even between refreshes.
  setInterval(() => {
    if (!document.hidden && last) renderEvents(last);
  }, 15000);
}

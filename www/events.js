// The review list: events newest first, filtered by the node (camera, kind,
// zone, day, reviewed, kept) a page of 50 at a time, "Older events" paging
// back; each with the zones it entered, whether it is reviewed and kept, a
// keep button, and its thumbnail with the boxes of the objects it saw
// (boxes.js), which plays its clip (clip.js) and marks it reviewed (an
// event going on opens live); "Loitering" by its kind when someone lingered. The address /review?event=<id>
// (an alert's link) shows that event. "Mark all reviewed" marks what the
// filters show, after saying how many, with an undo.

import { $, setText, setAttr, show, toggleClass, fromTemplate, setIcon, syncChildren } from './dom.js';
import { api, serverNow } from './api.js';
import { absoluteTime, bytes, duration, percent, relativeTime, scoreWords, sentence } from './format.js';
import { openClip, clipShown } from './clip.js';
import { drawObjects } from './boxes.js';
import { openLive } from './liveview.js';
import { refreshSoon } from './store.js';
import { go, onView } from './views.js';

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

const PAGE = 50; // the node's page of events
const FILTERS = ['filter-reviewed', 'filter-camera', 'filter-kind', 'filter-zone', 'filter-day', 'filter-keep'];

let last = null; // the state last rendered, for the clock tick and the filters
let own = null; // {query, events}: the node's first page for the filters, when any are set
let older = []; // events of older pages (and the first pages seen before them), for this query
let olderQuery = '';
let noMore = false; // the last older page was not full
let asking = ''; // the query of the first page being asked for
let loadFailed = false; // the message says a first page could not be had
let wanted = null; // {id, pages, stale}: the event the address names, until it is shown
let paging = false; // an older page is being asked for

/** The filters as the node's query (without `before` of paging); '' for none. */
function query() {
  const q = new URLSearchParams();
  const put = (name, value) => value && q.set(name, value);
  put('reviewed', $('filter-reviewed').value);
  put('cameraId', $('filter-camera').value);
  put('kind', $('filter-kind').value);
  put('zone', $('filter-zone').value);
  if ($('filter-keep').checked) q.set('keep', 'true');
  // A day is the local day: from its midnight to the next.
  const day = $('filter-day').valueAsDate;
  if (day) {
    const start = new Date(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate());
    q.set('after', start.toISOString());
    q.set('before', new Date(start.getFullYear(), start.getMonth(), start.getDate() + 1).toISOString());
  }
  return q.toString();
}

/** Whether `event` passes the filters: what is shown while the node's answer is on its way. */
function fits(event, q) {
  const p = new URLSearchParams(q);
  const is = (name, value) => !p.has(name) || p.get(name) === String(value);
  return is('reviewed', event.reviewed) && is('cameraId', event.cameraId) && is('kind', event.kind) &&
    is('keep', event.keep) && (!p.has('zone') || (event.zones || []).includes(p.get('zone'))) &&
    (!p.has('after') || (event.startedAt >= p.get('after') && event.startedAt < p.get('before')));
}

/** The events to show: the first page and the older ones, once each, newest first. */
function listed() {
  const q = query();
  const first = q ? own?.events || [] : last.events || [];
  // Until the node answers for new filters, what the page has, filtered here.
  const pool = q && own?.query !== q ? [...(last.events || []), ...first] : first;
  const seen = new Map();
  for (const e of [...pool, ...(olderQuery === q ? older : [])]) if (!seen.has(e.id)) seen.set(e.id, e);
  return [...seen.values()].filter((e) => fits(e, q)).sort((a, b) => (a.startedAt < b.startedAt) - (a.startedAt > b.startedAt));
}

/** Asks the node for the first page of the filters (again at each refresh). */
async function loadFirst() {
  const q = query();
  if (!q || asking === q) return;
  asking = q;
  try {
    const events = await api('GET', `/api/events?${q}`, undefined, { timeoutMs: 8000 });
    if (query() === q) own = { query: q, events };
    // Only its own message goes: a refused keep stays until the next action.
    if (loadFailed) say('');
  } catch (error) {
    say(`Could not load events: ${error.message}`);
    loadFailed = true;
  } finally {
    if (asking === q) asking = '';
  }
  draw();
}

/** "Older events": the next page back from the last one shown. */
async function loadOlder() {
  const q = query();
  const shown = listed();
  const end = shown[shown.length - 1];
  if (!end) return;
  const params = new URLSearchParams(q);
  params.set('before', end.startedAt);
  const button = $('events-older');
  button.disabled = true;
  paging = true;
  try {
    const page = await api('GET', `/api/events?${params}`);
    if (query() !== q) return;
    // The pages seen so far stay: newer events pushing the first page on leave no gap.
    older = [...shown, ...page];
    olderQuery = q;
    noMore = page.length < PAGE;
    say('');
  } catch (error) {
    say(`Could not load older events: ${error.message}`);
  } finally {
    button.disabled = false;
    paging = false;
  }
  draw();
}

function say(text) {
  loadFailed = false;
  const el = $('events-msg');
  setText(el, text);
  show(el, Boolean(text));
  if (text) done('');
}

let undoTimer = 0;
/** A success in words, with an Undo button for 10 s when `undo` is given. */
function done(text, undo) {
  clearTimeout(undoTimer);
  setText($('events-done-text'), text);
  show($('events-done'), Boolean(text));
  const button = $('events-undo');
  button.onclick = undo;
  show(button, Boolean(undo));
  if (undo) undoTimer = setTimeout(() => show(button, false), 10000);
}

/** "1 event", "12 matching events". */
const events = (n, what = '') => `${n} ${what}event${n === 1 ? '' : 's'}`;

/** Puts the node's answer for a marked event in every list that holds it. */
function replace(event) {
  for (const list of [last.events, own?.events, older]) {
    const i = (list || []).findIndex((e) => e.id === event.id);
    if (i >= 0) list[i] = event;
  }
}

/** Sets `reviewed` of the events `ids` in every list. */
function setReviewed(ids, reviewed) {
  const set = new Set(ids);
  for (const list of [last.events, own?.events, older]) for (const e of list || []) if (set.has(e.id)) e.reviewed = reviewed;
}

/** The node's refusal to keep one more, in words: how much is kept and what to do. */
function keepRefusal(message) {
  const n = /take (\d+) bytes of their (\d+) .*this one takes (\d+)/.exec(message);
  if (!n) return sentence(message);
  return `Cannot keep this event: kept events already take ${bytes(+n[1])} of the ${bytes(+n[2])} set aside for them, ` +
    `and this one takes ${bytes(+n[3])}. Stop keeping some (tick “Kept only” to list them), or raise CLIPS_KEEP_MAX_BYTES on the node.`;
}

/** PATCHes the event's marks; the header's count follows at once. */
async function mark(event, marks) {
  try {
    replace(await api('PATCH', `/api/events/${event.id}`, marks));
    say('');
  } catch (error) {
    say(error.status === 409 ? keepRefusal(error.message) : `Could not mark the event: ${error.message}`);
  }
  draw();
  refreshSoon();
}

/** Asks `question` in the mark dialog; resolves to whether the person said yes. */
function confirmed(question) {
  const dialog = $('mark');
  setText($('mark-title'), question);
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}

/** Marks reviewed what the filters show up to now: counted by the node first, confirmed, then undoable. */
async function markAll() {
  const filters = Object.fromEntries(new URLSearchParams(query()));
  const now = new Date(serverNow()).toISOString();
  // A day's end may be still to come: what was seen is what started before now.
  if (!filters.before || filters.before > now) filters.before = now;
  try {
    const { marked } = await api('POST', '/api/events/reviewed', { ...filters, dryRun: true });
    if (!marked) return done('Nothing to mark: every event shown is reviewed.');
    if (!(await confirmed(`Mark ${events(marked)} reviewed?`))) return;
    const { ids } = await api('POST', '/api/events/reviewed', filters);
    setReviewed(ids, true);
    say('');
    done(`Marked ${events(ids.length)} reviewed.`, () => undo(ids));
  } catch (error) {
    say(`Could not mark events reviewed: ${error.message}`);
  }
  draw();
  refreshSoon();
}

/** Marks the events `ids` not reviewed again (the node takes 1000 at a time). */
async function undo(ids) {
  try {
    for (let i = 0; i < ids.length; i += 1000) await api('POST', '/api/events/unreviewed', { ids: ids.slice(i, i + 1000) });
    setReviewed(ids, false);
    done(`Undone: ${events(ids.length)} not reviewed again.`);
  } catch (error) {
    say(`Could not undo: ${error.message}`);
  }
  draw();
  refreshSoon();
}

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
  for (const event of [...(state.events || []), ...(own?.events || [])]) for (const name of event.zones || []) names.add(name);
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

/** "Person at Porch camera, 23 Nov 2026, 14:03:10". */
function whatOf(event) {
  const [word] = KINDS[event.kind] || [String(event.kind || 'Event')];
  const camera = last.cameras.get(event.cameraId);
  return `${word} at ${camera ? camera.name : 'a removed camera'}, ${absoluteTime(Date.parse(event.startedAt))}`;
}

/** Opens the event's clip (or, until it has one, its picture and why not; live while it goes on), and marks it reviewed. */
function openEvent(event) {
  const camera = last.cameras.get(event.cameraId);
  if (event.inProgress && camera) {
    $('clip').close();
    openLive(camera, last.status);
  } else {
    openClip(event, camera, whatOf(event));
    fillPlayer();
  }
  if (!event.reviewed) mark(event, { reviewed: true });
}

/** The events not reviewed before and after the one playing, in the list's order (newest first). */
function neighbours() {
  const shown = listed();
  const i = shown.findIndex((e) => e.id === clipShown()?.id);
  const fresh = (e) => !e.reviewed;
  return i < 0 ? [] : [shown.slice(0, i).findLast(fresh), shown.slice(i + 1).find(fresh)];
}

/** The player's keep, previous and next, as the list has them. */
function fillPlayer() {
  const opened = clipShown();
  const event = opened && listed().find((e) => e.id === opened.id);
  if (!event) return;
  const keep = $('clip-keep');
  setAttr(keep, 'aria-pressed', String(event.keep));
  setText(keep, event.keep ? 'Kept' : 'Keep');
  const [newer, older] = neighbours();
  $('clip-prev').disabled = !newer;
  $('clip-next').disabled = !older;
}

/** The event the address names (/review?event=<id>): its filters cleared, looked for in the list. */
function wantFromAddress(params) {
  const id = params.get('event');
  if (!/^[0-9a-f-]{36}$/i.test(id)) return;
  wanted = { id: id.toLowerCase(), pages: 0, stale: null };
  if (query()) {
    for (const id of FILTERS.slice(0, -1)) $(id).value = '';
    $('filter-keep').checked = false;
    filtered();
  } else {
    draw();
  }
}

/** Shows the wanted event once the list has it: scrolled to, marked, opened; else pages back, or says it is gone. */
function reveal(shown) {
  if (!wanted || last.events === null || query()) return;
  const event = shown.find((e) => e.id === wanted.id);
  if (!event) {
    // Newer than the list: the next refresh has it.
    if (!wanted.stale) {
      wanted.stale = last.events;
      refreshSoon();
    } else if (wanted.stale !== last.events && !paging) {
      if (shown.length >= PAGE && !noMore && wanted.pages < 4) {
        wanted.pages += 1;
        loadOlder();
      } else {
        wanted = null;
        say(`The event of this link is not among the node's events: it may have been deleted.`);
      }
    }
    return;
  }
  wanted = null;
  const row = $('event-list').querySelector(`[data-key="${event.id}"]`);
  row.scrollIntoView({ block: 'center' });
  toggleClass(row, 'fresh', true);
  setTimeout(() => toggleClass(row, 'fresh', false), 4000);
  openEvent(event);
}

function makeRow() {
  const row = fromTemplate('t-event');
  const img = row.querySelector('.ev-shot img');
  // A thumbnail that cannot be had (none yet, or its file gone) leaves the play button on its own.
  img.hidden = true;
  img.addEventListener('error', () => show(img, false));
  // The boxes need the picture's own aspect: drawn once it is loaded.
  img.addEventListener('load', () => {
    const event = find();
    if (event) fillObjects(row, event);
  });
  const find = () => listed().find((e) => e.id === row.dataset.key);
  row.querySelector('.ev-shot').addEventListener('click', () => {
    const event = find();
    if (event?.clipUrl || event?.inProgress) openEvent(event);
  });
  row.querySelector('.ev-keep').addEventListener('click', () => {
    const event = find();
    if (event) mark(event, { keep: !event.keep });
  });
  return row;
}

/** The thumbnail that plays the clip; until there is a clip, words that say so. */
function fillShot(row, event, what, now) {
  const shot = row.querySelector('.ev-shot');
  const img = shot.querySelector('img');
  show(shot, Boolean(event.clipUrl || event.inProgress));
  setAttr(shot, 'aria-label', `${event.inProgress ? 'Watch live' : 'Play clip'}: ${what}`);
  setAttr(img, 'alt', what);
  if (img.getAttribute('src') !== (event.thumbnailUrl || null)) {
    setAttr(img, 'src', event.thumbnailUrl);
    show(img, Boolean(event.thumbnailUrl));
  }
  const none = row.querySelector('.ev-noclip');
  show(none, !event.clipUrl && !event.inProgress);
  let words = 'No clip';
  if (event.inProgress) words = 'Going on…';
  else if (now - Date.parse(event.endedAt) < CLIP_WAIT_MS) words = 'Clip coming…';
  setText(none, words);
  fillObjects(row, event);
}

/** The objects' boxes over the thumbnail (16:9, the picture cropped to fill it), once it is loaded. */
function fillObjects(row, event) {
  const img = row.querySelector('.ev-shot img');
  const loaded = !img.hidden && img.complete && img.naturalWidth > 0;
  const layer = row.querySelector('.obj-layer');
  const key = loaded ? `${img.naturalWidth}x${img.naturalHeight} ${JSON.stringify(event.objects || [])}` : '';
  if (layer.dataset.drawn === key) return;
  layer.dataset.drawn = key;
  drawObjects(layer, loaded ? event.objects : [], loaded ? img.naturalWidth / img.naturalHeight : 0, 16 / 9, true);
}

function fillRow(row, event, cameras, now) {
  const [word, icon] = KINDS[event.kind] || [String(event.kind || 'Event'), 'i-motion'];
  setIcon(row.querySelector('.ev-kind svg'), icon);
  setText(row.querySelector('.ev-word'), word);
  show(row.querySelector('.loiter-badge'), event.loitering === true);
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
  // Motion's share of the picture that moved says little in a list: a classifier's sureness does.
  setText(score, event.kind === 'motion' ? '' : percent(event.score));
  setAttr(score, 'title', scoreWords(event));
  const start = Date.parse(event.startedAt);
  const end = Date.parse(event.endedAt);
  fillShot(row, event, whatOf(event), now);
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
  toggleClass(row, 'unreviewed', !event.reviewed);
  setText(row.querySelector('.ev-seen'), event.reviewed ? 'Reviewed' : 'New');
  const keep = row.querySelector('.ev-keep');
  setAttr(keep, 'aria-pressed', String(Boolean(event.keep)));
  setText(keep, event.keep ? 'Kept' : 'Keep');
  setAttr(keep, 'title', event.keep ? 'Kept: no rule deletes it or its clip. Click to stop keeping it.' : 'Keep it and its clip for good');
}

function draw() {
  if (!last) return;
  cameraOptions(last.cameras);
  zoneOptions(last);
  if (last.events === null) return;
  const q = query();
  const shown = listed();
  const now = serverNow();
  syncChildren($('event-list'), shown, (e) => e.id, makeRow, (row, event) => fillRow(row, event, last.cameras, now));
  let empty = '';
  if (!q && shown.length === 0) empty = 'No events yet. Detections from cameras with “Detect” on show up here.';
  else if (shown.length === 0) empty = 'No events match these filters.';
  show($('event-list').parentElement, shown.length > 0);
  setText($('events-empty'), empty);
  show($('events-empty'), Boolean(empty));
  setText($('events-count'), shown.length === 0 ? '' : `${events(shown.length, q ? 'matching ' : 'most recent ')}, newest first`);
  const set = [...new URLSearchParams(q).keys()].filter((k) => k !== 'before').length;
  setText($('filters-fold'), set ? `Filters (${set})` : 'Filters');
  // Nothing reviewed is left to mark where only reviewed ones are shown.
  show($('events-mark-all'), $('filter-reviewed').value !== 'true');
  show($('events-older'), shown.length >= PAGE && !(olderQuery === q && noMore));
  // An event opened before its clip was there: the clip, once it is.
  const opened = clipShown();
  const ready = opened && !opened.clipUrl && shown.find((e) => e.id === opened.id && e.clipUrl);
  if (ready) openClip(ready, last.cameras.get(ready.cameraId), whatOf(ready));
  fillPlayer();
  reveal(shown);
}

export function renderEvents(state) {
  last = state;
  loadFirst();
  draw();
}

/** The list of events not reviewed (the header's count links here). */
function showUnreviewed(e) {
  e.preventDefault();
  for (const id of FILTERS.slice(1, -1)) $(id).value = '';
  $('filter-keep').checked = false;
  $('filter-reviewed').value = 'false';
  filtered();
  go('/review');
}

function filtered() {
  older = [];
  noMore = false;
  loadFirst();
  draw();
}

export function setUpEvents() {
  for (const id of FILTERS) $(id).addEventListener('change', filtered);
  $('events-older').addEventListener('click', loadOlder);
  $('events-mark-all').addEventListener('click', markAll);
  $('review-badge').addEventListener('click', showUnreviewed);
  onView('review', wantFromAddress);
  // On a phone the filters fold away behind one button.
  $('filters-fold').addEventListener('click', (e) => setAttr(e.currentTarget, 'aria-expanded', String($('events').classList.toggle('unfolded'))));
  // The player as a review tool: keep, and the newer or older event not reviewed.
  const playing = () => listed().find((e) => e.id === clipShown()?.id);
  $('clip-keep').addEventListener('click', () => playing() && mark(playing(), { keep: !playing().keep }));
  ['clip-prev', 'clip-next'].forEach((id, i) => $(id).addEventListener('click', () => {
    const next = neighbours()[i];
    if (next) openEvent(next);
  }));
  // Closed, the address no longer names the event: a reload shows the list.
  $('clip').addEventListener('close', () => {
    if (new URLSearchParams(location.search).has('event')) go('/review', { replace: true });
  });
  // "2 min ago" moves on even between refreshes.
  setInterval(() => {
    if (!document.hidden) draw();
  }, 15000);
}

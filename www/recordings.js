// The recordings view (/recordings?camera=ID&t=ISO; no camera: all of
// them, stacked, each playing in sync in its own tile): a window of 7 days
// to 1 minute (24 h at first, ending now) on a timeline (timeline.js) with the events of the window as markers, zoomed,
// panned and moved by a day, and as a list of recorded stretches, a <video> that plays the
// node's recording.mp4 from the moment chosen and on into what follows, at
// 1×, 2×, 4× or 8×, steps to the previous and next event, and a download of
// the window shown (an hour at most, as the node serves). The spans are asked for again every 10 s, so
// a recording that is still going grows on the timeline. The events shown
// are the page's newest (kept current by the store) and those of the window,
// paged back from its end once per camera and window. The address follows
// the camera chosen and the moment played, so reload and a shared link land there.

import { $, setText, setAttr, show, toggleClass, syncChildren } from './dom.js';
import { api, serverNow } from './api.js';
import { clockRange, clockTime, dayName, duration, recorderState, sentence } from './format.js';
import { drawTimeline, resetCursor, setPlayhead, setUpTimeline } from './timeline.js';
import { stageMessage, unloadVideo, whyNotPlayed } from './stage.js';
import { VIEWS, currentView, onView } from './views.js';

const DAY_MS = 24 * 3600 * 1000;
const MINUTE_MS = 60000;
// The windows the zoom steps through, with their words.
const ZOOMS = [[7 * DAY_MS, '7 days'], [3 * DAY_MS, '3 days'], [DAY_MS, '24 hours'], [12 * 60 * MINUTE_MS, '12 hours'],
  [6 * 60 * MINUTE_MS, '6 hours'], [3 * 60 * MINUTE_MS, '3 hours'], [60 * MINUTE_MS, 'hour'], [30 * MINUTE_MS, '30 minutes'],
  [10 * MINUTE_MS, '10 minutes'], [5 * MINUTE_MS, '5 minutes'], [MINUTE_MS, 'minute']];
const FIRST_ZOOM = 2;
const REFRESH_MS = 10000; // recordings grow by one 10 s segment at a time
const CLIP_MS = 3600 * 1000; // the longest stretch one recording.mp4 may hold
const MIN_CLIP_MS = 5000; // a moment just before a span's end still plays this much
const LATEST_MS = 60000; // a moment after every span plays the latest minute
const FOLLOW_MS = 60000; // a clip that ended this near now waits for the recording to grow
const SLIVER_MS = 1000; // less than this left of a span is not worth another clip
const STEP_GAP_MS = 1500; // the playhead this near an event is at it (the clip starts at the key frame before)
const EVENTS_PAGE = 50; // GET /api/events answers this many at most
// Pages of events asked for a camera's window: 1,000 markers is already one a
// pixel on a laptop's track, and 20 requests a move is as much as a board
// should serve one viewer; a busier window shows its newest 1,000.
const EVENTS_PAGES = 20;
const SYNC_S = 0.5; // a tile further than this from the playing video is sought to it

let camera = null; // the one shown, or (all shown) the one playing or last opened
let stacked = false; // all cameras shown, one row each
let cameras = new Map(); // id → Camera, the store's
let newest = []; // the newest events, the store's
let marks = new Map(); // camera id → {from, to, live, events}: its events fetched for a window (live: and on to now)
let fetching = false; // a window's events are being fetched
let spansBy = new Map(); // camera id → its spans, {start, end} in ms, oldest first
let windowEnd = 0; // the end of the window shown
let following = true; // the window ends at the node's "now", which moves on
let zoom = FIRST_ZOOM; // index in ZOOMS
let listed = false; // the spans came at least once
let problem = ''; // why the spans could not be listed, in the node's words
let clip = null; // the stretch in the video: {start, end, url}
let after = ''; // what happened at the end of the clip
let failure = null; // why the last clip could not play: {title, text}
let waitingAfter = null; // the clip ended at the growing end: play on from here once it grows
let opened = 0; // bumped on every open and close: answers for an earlier one are dropped
let attempt = 0; // bumped on every clip: late answers about an earlier one are dropped
let refreshTimer = null;
let wanted = null; // the address's query, until the cameras are known
let followers = new Map(); // all shown and playing: each other camera's id → its stretch from the clip's start, or null

const video = () => $('rec-video');
const iso = (ms) => new Date(ms).toISOString();
const message = stageMessage('rec');
const recordingUrl = (id, start, end) => `/api/cameras/${id}/recording.mp4?${new URLSearchParams({ start: iso(start), end: iso(end) })}`;
/** The cameras shown, in the node's order. */
const shown = () => (stacked ? [...cameras.values()] : [camera]);
const spansOf = (id) => spansBy.get(id) || [];
/** The events the page has of camera `id`: the newest and its window's, each once (the newest's copy is the fresher). */
function eventsOf(id) {
  const byId = new Map((marks.get(id)?.events || []).map((e) => [e.id, e]));
  for (const e of newest) if (e.cameraId === id) byId.set(e.id, e);
  return [...byId.values()];
}
/** The shown cameras' event starts, oldest first: [{start, id}]. */
const eventStarts = () => shown().flatMap((c) => eventsOf(c.id).map((e) => ({ start: Date.parse(e.startedAt), id: c.id })))
  .sort((a, b) => a.start - b.start);
/** Where the playhead is, or null without a clip. */
const playhead = () => (clip ? clip.start + video().currentTime * 1000 : null);
/** The event before (`dir` -1) or after (1) the playhead, else the window's end or start; undefined when none. */
function eventStep(dir) {
  const t = playhead() ?? (dir < 0 ? windowEnd : windowEnd - ZOOMS[zoom][0]);
  const starts = eventStarts();
  return dir < 0 ? starts.reverse().find((s) => s.start < t - STEP_GAP_MS) : starts.find((s) => s.start > t + STEP_GAP_MS);
}

function drawEventSteps() {
  $('rec-prev').disabled = eventStep(-1) === undefined;
  $('rec-next').disabled = eventStep(1) === undefined;
}

/** Plays from the previous or next event's start, the window moved to it (centred) when it is off screen. */
async function stepEvent(dir) {
  const { start, id } = eventStep(dir) || {};
  if (start === undefined) return;
  const length = ZOOMS[zoom][0];
  if (start < windowEnd - length || start > windowEnd) {
    const mine = opened;
    moveTo(start + length / 2, false);
    await refresh();
    if (mine !== opened) return;
  }
  play(stretchAt(start, spansOf(id)), id);
}

/** The download of the window shown (all shown: of the camera playing), or why there is none. */
function drawDownload(from, to) {
  const link = $('rec-download');
  const length = to - from;
  let why = '';
  if (length > CLIP_MS) why = 'Zoom in to an hour or less to download';
  else if (stacked && !clip) why = 'Play a camera to download its stretch on screen';
  else if (!spansOf(camera.id).some((s) => s.end > from && s.start < to)) why = 'Nothing recorded on screen to download';
  setAttr(link, 'href', why ? null : recordingUrl(camera.id, from, to));
  setAttr(link, 'aria-disabled', why ? 'true' : null);
  setText($('rec-download-word'), why || `Download ${stacked ? `${nameOf(camera)} ` : ''}${clockRange(from, to, length < 2 * MINUTE_MS)}`);
}

/** What a moment `t` of `spans` plays: from `t` (in a gap, from the next span's start) for up to an hour within its span; past every span, the latest minute. */
function stretchAt(t, spans) {
  const span = spans.find((s) => s.end > t);
  if (!span) {
    const last = spans[spans.length - 1];
    return last ? { start: Math.max(last.start, last.end - LATEST_MS), end: last.end } : null;
  }
  const start = Math.max(span.start, Math.min(t, span.end - MIN_CLIP_MS));
  return { start, end: Math.min(span.end, start + CLIP_MS) };
}

/** What follows in `spans` a clip that ended at `t`: the rest of its span, else the next span; null when nothing does (yet). */
function stretchAfter(t, spans) {
  const span = spans.find((s) => s.end > t + SLIVER_MS);
  if (!span) return null;
  const start = Math.max(span.start, t);
  return { start, end: Math.min(span.end, start + CLIP_MS) };
}

function whyNothing() {
  if (!camera.enabled) return 'This camera is disabled: turn on “Enabled” on its card to record it.';
  if (!camera.record) return 'Recording is off for this camera: turn on “Record” on its card.';
  if (camera.recording?.state === 'retrying') return `${recorderState(camera.recording).text}.`;
  return 'A recording shows here some 10 s after it starts.';
}

/** The camera's stretches, newest first (none listed when all are shown: the rows are the list). */
function drawList() {
  const latest = stacked ? [] : [...spansOf(camera.id)].reverse();
  show($('rec-stretches'), latest.length > 0);
  syncChildren($('rec-list'), latest, (s) => s.start, () => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'rec-span';
    // The item's key is its span's start, which stays while the span grows.
    button.addEventListener('click', () => play(stretchAt(Number(item.dataset.key), spansOf(camera.id)), camera.id));
    item.append(button);
    return item;
  }, (item, span) => {
    const button = item.firstElementChild;
    const words = `${clockRange(span.start, span.end)} · ${duration(span.end - span.start)}`;
    setText(button, words);
    setAttr(button, 'aria-label', `Play ${words}`);
    const current = clip && clip.start >= span.start && clip.start < span.end;
    setAttr(button, 'aria-current', current ? 'true' : null);
  });
}

const nameOf = (c) => c.name || 'Unnamed camera';

/** The choice of camera: each one, and all of them. */
function drawChoice() {
  const select = $('rec-camera');
  const options = [...[...cameras.values()].map((c) => [c.id, nameOf(c)]), ['', 'All cameras']];
  syncChildren(select, options, ([id]) => id, () => document.createElement('option'), (option, [id, name]) => {
    option.value = id;
    setText(option, name);
  });
  const value = stacked ? '' : camera.id;
  if (select.value !== value) select.value = value;
}

function render() {
  if (!camera) return;
  drawChoice();
  setText($('rec-title'), `Recordings · ${stacked ? 'All cameras' : nameOf(camera)}`);
  show($('rec-state'), !stacked);
  const { text, tone } = recorderState(camera.recording);
  setText($('rec-state').querySelector('.rec-word'), text);
  for (const t of ['rec', 'bad', 'off']) toggleClass($('rec-state'), t, t === tone);
  const [length, words] = ZOOMS[zoom];
  const from = windowEnd - length;
  const rows = shown().map((c) => ({
    id: c.id,
    name: nameOf(c),
    spans: spansOf(c.id),
    events: eventsOf(c.id).filter((e) => {
      const t = Date.parse(e.startedAt);
      return t >= from && t <= windowEnd;
    }),
  }));
  drawTiles();
  drawTimeline(from, windowEnd, rows, following, stacked);
  setPlayhead(playhead(), clip?.id);
  const spans = rows.flatMap((r) => r.spans);
  // A window of another day names it; clockRange names the days only when its ends' differ.
  const day = (ms) => new Date(ms).toDateString();
  const range = clockRange(from, windowEnd, length < 10 * MINUTE_MS);
  setText($('rec-zoom'), following ? `Last ${words}` : day(serverNow()) === day(from) || day(windowEnd) !== day(from) ? range : `${dayName(from)}, ${range}`);
  $('rec-in').disabled = zoom === ZOOMS.length - 1;
  $('rec-out').disabled = zoom === 0;
  $('rec-later').disabled = following;
  $('rec-now').disabled = following;
  drawList();
  drawEventSteps();
  drawDownload(from, windowEnd);
  show($('rec-hint'), spans.length > 0);
  setText($('rec-note'), listed && problem ? `Could not refresh the recordings: ${problem}. Trying again…` : after);
  if (clip) return;
  if (failure) message(failure.title, failure.text);
  else if (problem && !listed) message('Could not load the recordings', `${sentence(problem)}. Trying again…`);
  else if (!listed) message('Loading the recordings…', '', true);
  else if (spans.length === 0) message(following ? `Nothing recorded in the last ${words}` : 'Nothing recorded here', stacked ? '' : whyNothing());
  else message('Choose a moment to play', stacked ? 'Click or tap a camera’s row on the timeline.' : 'Click or tap the timeline, or pick a recorded stretch below it.');
}

function schedule() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => (document.hidden ? schedule() : refresh()), REFRESH_MS);
}

/** Camera `id`'s events started in `from`..`to`, paged back from `to` (at most EVENTS_PAGES pages). */
async function eventsBetween(id, from, to) {
  const found = [];
  let before = to;
  for (let page = 0; page < EVENTS_PAGES && before >= from; page += 1) {
    const query = new URLSearchParams({ cameraId: id, before: iso(before) });
    const list = await api('GET', `/api/events?${query}`, undefined, { timeoutMs: 8000 });
    found.push(...list.filter((e) => Date.parse(e.startedAt) >= from));
    if (list.length < EVENTS_PAGE) break;
    before = Date.parse(list[list.length - 1].startedAt);
  }
  return found;
}

/**
 * Whether camera `id`'s events of `from`..`to` were fetched: while following, the store's newest
 * bring those after, as long as they reach back to the fetch (all cameras' 50 newest may not).
 */
function fetched(id, from, to) {
  const had = marks.get(id);
  const reach = newest.length < EVENTS_PAGE ? -Infinity : Date.parse(newest[newest.length - 1].startedAt);
  return had && had.from <= from && (to <= had.to || (had.live && following && reach <= had.to));
}

/** Fetches the events of the window shown for each camera shown that lacks them, until the window stops moving. */
async function fetchMarks() {
  if (fetching) return;
  fetching = true;
  try {
    for (;;) {
      const mine = opened;
      const [to, live] = [windowEnd, following];
      const from = to - ZOOMS[zoom][0];
      const todo = shown().find((c) => !fetched(c.id, from, to));
      if (!todo) break;
      const events = await eventsBetween(todo.id, from, to);
      if (mine !== opened) break;
      marks.set(todo.id, { from, to, live, events });
      render();
    }
  } catch {
    // The next refresh tries again.
  } finally {
    fetching = false;
  }
}

async function refresh() {
  clearTimeout(refreshTimer);
  if (!camera) return;
  const mine = opened;
  const end = following ? serverNow() : windowEnd;
  const start = end - ZOOMS[zoom][0];
  const query = new URLSearchParams({ start: iso(start), end: iso(end) });
  const list = shown();
  const answers = await Promise.allSettled(list.map((c) => api('GET', `/api/cameras/${c.id}/recordings?${query}`, undefined, { timeoutMs: 8000 })));
  if (mine !== opened) return;
  // Dropped when the window moved meanwhile: its own answer comes.
  if (end - start !== ZOOMS[zoom][0] || (!following && end !== windowEnd)) return;
  const failed = answers.find((a) => a.status === 'rejected')?.reason;
  if (failed?.status === 404 && !stacked) {
    removed();
    return;
  }
  answers.forEach((a, i) => {
    if (a.status === 'fulfilled') spansBy.set(list[i].id, a.value.map((s) => ({ start: Date.parse(s.start), end: Date.parse(s.end) })).filter((s) => s.end > s.start));
  });
  windowEnd = end;
  listed ||= answers.some((a) => a.status === 'fulfilled');
  problem = failed ? failed.message : '';
  render();
  fetchMarks();
  if (waitingAfter !== null) {
    const next = stretchAfter(waitingAfter, spansOf(clip.id));
    if (next) play(next, clip.id);
  }
  schedule();
}

/** Plays `stretch` of camera `id` (which becomes the view's camera). */
function play(stretch, id) {
  if (!stretch || !cameras.has(id)) return;
  camera = cameras.get(id);
  attempt += 1;
  waitingAfter = null;
  after = '';
  failure = null;
  clip = { ...stretch, id, url: recordingUrl(id, stretch.start, stretch.end) };
  // Every other row plays from the same moment, in the span that holds it.
  followers = new Map(stacked ? [...cameras.values()].filter((c) => c.id !== id).map((c) => {
    const span = spansOf(c.id).find((s) => s.start <= clip.start && s.end > clip.start + SLIVER_MS);
    return [c.id, span && { start: clip.start, end: Math.min(span.end, clip.end) }];
  }) : []);
  message('Loading…', '', true);
  const v = video();
  v.src = clip.url;
  // Refused sound without a click (a link, a reload): muted, then. Cut short (another
  // clip, the close): the video's own events tell the rest.
  v.play().catch((e) => {
    if (e.name !== 'NotAllowedError') return;
    v.muted = true;
    v.play().catch(() => {});
  });
  setText($('rec-playing'), `Playing ${clockRange(clip.start, clip.end, true)}`);
  setText($('rec-at'), '');
  render();
  address();
}

/** Keeps the address on the camera shown and the moment played, without a step in the history. */
function address() {
  if (currentView() !== 'recordings' || !camera) return;
  const t = playhead();
  const query = [stacked ? '' : `camera=${camera.id}`, t === null ? '' : `t=${iso(t)}`].filter(Boolean).join('&');
  history.replaceState(null, '', `/recordings${query && '?'}${query}`);
}

/** All shown and playing: a tile per camera, named, the others following the clip's video. */
function drawTiles() {
  const tiles = $('rec-tiles');
  const items = ['main', ...followers.keys()];
  tiles.style.setProperty('--cols', Math.ceil(Math.sqrt(items.length)));
  setText($('rec-name'), camera ? nameOf(camera) : '');
  syncChildren(tiles, items, (id) => id, () => {
    const tile = document.createElement('figure');
    tile.className = 'rec-tile';
    tile.innerHTML = '<video muted playsinline preload="auto"></video><figcaption></figcaption>';
    return tile;
  }, (tile, id) => {
    if (id === 'main') return;
    const stretch = followers.get(id);
    setText(tile.lastElementChild, `${nameOf(cameras.get(id) || {})}${stretch ? '' : ': nothing recorded then'}`);
    setAttr(tile.firstElementChild, 'src', stretch && recordingUrl(id, stretch.start, stretch.end));
  });
}

/** Keeps the other tiles within SYNC_S of the clip's video, at its rate, playing or paused with it. */
function sync() {
  const v = video();
  for (const f of $('rec-tiles').querySelectorAll('video:not(#rec-video)[src]')) {
    f.playbackRate = v.playbackRate;
    if (!f.seeking && f.readyState && Math.abs(f.currentTime - v.currentTime) > SYNC_S) f.currentTime = v.currentTime;
    if (v.paused) f.pause();
    else if (f.paused && !f.ended) f.play().catch(() => {});
  }
}

/** Drops the clip (and the video's hold on it). */
function unload() {
  attempt += 1;
  clip = null;
  waitingAfter = null;
  after = '';
  for (const v of $('rec-tiles').querySelectorAll('video')) unloadVideo(v);
  followers = new Map();
  drawTiles();
  setText($('rec-playing'), '');
  setText($('rec-at'), '');
  setPlayhead(null);
}

/** The clip ended: the next piece plays on if more was recorded; at the growing end, once it grows. */
async function playOn() {
  const mine = attempt;
  const { end, id } = clip;
  await refresh();
  if (mine !== attempt || !camera) return;
  const next = stretchAfter(end, spansOf(id));
  if (next) {
    play(next, id);
  } else if (camera.recording?.state === 'recording' && windowEnd - end < FOLLOW_MS) {
    waitingAfter = end;
    after = 'Waiting for the next part of the recording…';
  } else {
    after = `Nothing was recorded after ${clockTime(end, true)}.`;
  }
  render();
}

/** The video could not play the clip: ask the node why, in its words. */
async function explain() {
  const mine = attempt;
  const why = await whyNotPlayed(clip.url, 'recording', camera?.capabilities?.videoCodec);
  if (mine !== attempt) return;
  if (why.status === 200) {
    // The node has it and this browser cannot decode it (H.265, say): it can still be downloaded.
    setText($('rec-playing'), '');
    setText($('rec-at'), '');
    message(why.title, why.text);
    return;
  }
  unload();
  failure = why;
  if (why.status === 404) refresh(); // deleted since it was listed, maybe
  render();
}

/** Ends what the view does: the clip, the refreshes, answers still to come. */
function stop() {
  unload();
  clearTimeout(refreshTimer);
  opened += 1;
  camera = null;
  marks = new Map();
  fetching = false;
}

function removed() {
  stop();
  message('This camera was removed', '');
  show($('rec-stretches'), false);
}

/** Shows the window ending at `end` (within a refresh of now or later: following now), and lists its spans when `list`. */
function moveTo(end, list = true) {
  const now = serverNow();
  following = end >= now - REFRESH_MS;
  windowEnd = Math.min(end, now);
  render();
  if (list) refresh();
}

/** Zooms `steps` in (out when negative) about the moment `t`, which stays where it is on the track. */
function zoomAbout(steps, t) {
  const next = Math.min(ZOOMS.length - 1, Math.max(0, zoom + steps));
  if (next === zoom) return;
  const ratio = ZOOMS[next][0] / ZOOMS[zoom][0];
  zoom = next;
  // Zoomed about now, or out, a window that ends now goes on ending now.
  moveTo(following && (steps < 0 || t >= windowEnd) ? Infinity : t + (windowEnd - t) * ratio);
}

/** The moment zooming keeps in place: the playhead where it is in the window, else the window's middle (its end when it ends now). */
function anchor() {
  const from = windowEnd - ZOOMS[zoom][0];
  const head = clip ? clip.start + video().currentTime * 1000 : NaN;
  if (head >= from && head <= windowEnd) return head;
  return following ? windowEnd : from + ZOOMS[zoom][0] / 2;
}

/** Plays moment `t` of the first camera shown recorded then. */
function playAt(t) {
  const c = shown().find((c) => spansOf(c.id).some((s) => s.start <= t && s.end > t));
  if (c) play(stretchAt(t, spansOf(c.id)), c.id);
}

/** Shows the camera of `id`, or all cameras (''), keeping the window and playing on from the moment playing. */
async function choose(id) {
  const t = playhead();
  stacked = !id;
  if (id) camera = cameras.get(id) || camera;
  unload();
  address();
  render();
  const mine = opened;
  await refresh();
  if (t !== null && mine === opened) playAt(t);
}

/** Shows the address's camera (none or "all": all of them) from its moment `t`, playing, or the last 24 hours. */
async function enter(query) {
  wanted = query;
  if (!loaded) return;
  wanted = null;
  stop();
  const id = query.get('camera');
  const t = Date.parse(query.get('t'));
  stacked = !id || id === 'all';
  camera = stacked ? cameras.values().next().value : cameras.get(id);
  spansBy = new Map();
  listed = false;
  problem = '';
  failure = null;
  following = true;
  zoom = FIRST_ZOOM;
  resetCursor();
  if (!camera) {
    message(cameras.size ? 'No such camera' : 'No cameras yet', cameras.size ? 'It may have been removed: choose another.' : 'Add one under Settings.');
    return;
  }
  const mine = opened;
  windowEnd = serverNow();
  if (t) moveTo(t + ZOOMS[zoom][0] / 2, false);
  render();
  await refresh();
  if (t && mine === opened) playAt(t);
}

let loaded = false; // the node's cameras came

/** Keeps the view's cameras (name, recorder) and event markers current. */
export function updateRecordings(state) {
  cameras = state.cameras;
  newest = state.events || [];
  loaded ||= Boolean(state.status);
  if (wanted) enter(wanted);
  if (!camera) return;
  // All shown, another camera takes the place of one removed.
  const fresh = cameras.get(camera.id) || (stacked && cameras.values().next().value);
  if (!fresh) {
    if (state.status) removed();
    return;
  }
  if (clip && !cameras.has(clip.id)) unload();
  camera = fresh;
  render();
}

export function setUpRecordings() {
  const v = video();
  onView('recordings', enter);
  for (const name of VIEWS) if (name !== 'recordings') onView(name, stop);
  // A moment from the keyboard (no row) plays the camera shown or playing.
  setUpTimeline((t, id = camera.id) => play(stretchAt(t, spansOf(id)), id), zoomAbout, (from, done) => moveTo(from + ZOOMS[zoom][0], done));
  $('rec-in').addEventListener('click', () => zoomAbout(1, anchor()));
  $('rec-out').addEventListener('click', () => zoomAbout(-1, anchor()));
  $('rec-earlier').addEventListener('click', () => moveTo(windowEnd - DAY_MS));
  $('rec-later').addEventListener('click', () => moveTo(windowEnd + DAY_MS));
  $('rec-now').addEventListener('click', () => moveTo(Infinity));
  $('rec-camera').addEventListener('change', (event) => choose(event.target.value));
  $('rec-prev').addEventListener('click', () => stepEvent(-1));
  $('rec-next').addEventListener('click', () => stepEvent(1));
  $('rec-rates').addEventListener('change', (event) => {
    // The default too: each clip's load sets the rate back to it.
    v.defaultPlaybackRate = Number(event.target.value);
    v.playbackRate = v.defaultPlaybackRate;
  });
  v.addEventListener('loadeddata', () => {
    if (clip) show($('rec-msg'), false);
  });
  v.addEventListener('timeupdate', () => {
    if (!clip || !v.getAttribute('src')) return;
    // The clip's timeline is the wall clock's from its start (give or take the key frame before it).
    const t = clip.start + v.currentTime * 1000;
    setPlayhead(t, clip.id);
    setText($('rec-at'), ` · at ${clockTime(t, true)}`);
    drawEventSteps();
    sync();
  });
  for (const type of ['play', 'pause', 'ratechange']) v.addEventListener(type, sync);
  v.addEventListener('pause', address);
  v.addEventListener('ended', () => {
    if (clip) playOn();
  });
  v.addEventListener('error', () => {
    if (clip && v.getAttribute('src')) explain();
  });
}

// The live grid: every camera at once, each tile on its sub stream (the main
// one when it has none) while the tile is on screen, the tab visible and no
// viewer (live, recordings, clip) covers the page, so nothing is pulled for nobody; a click opens the camera
// large on its main stream (liveview.js).

import { $, setText, setAttr, show, toggleClass, fromTemplate } from './dom.js';
import { watch } from './whep.js';
import { state } from './store.js';
import { openLive } from './liveview.js';
import { fillSnooze } from './alerts.js';
import { onlineState } from './format.js';

const RETRY_MS = 15000; // a failed tile asks again after this, not on every status poll
const tiles = new Map(); // id → tile
let seen = null; // IntersectionObserver of the tiles

function makeTile(id) {
  const el = fromTemplate('t-tile');
  const q = (s) => el.querySelector(s);
  const tile = {
    id,
    el,
    video: q('video'),
    why: q('.tile-why'),
    name: q('.tile-name'),
    state: q('.state'),
    stateWord: q('.state-word'),
    event: q('.tile-event'),
    inView: false,
    session: null,
    attempt: 0, // bumped by every start and stop: late answers of old attempts are dropped
    starting: false,
    failed: null, // { at, text } of the last failed attempt
    still: null, // the URL of the camera's picture, asked for once
  };
  el.dataset.id = id;
  q('.tile-open').addEventListener('click', () => {
    const camera = state.cameras.get(id);
    if (camera) openLive(camera, state.status);
  });
  seen.observe(el);
  return tile;
}

/** Why the tile shows no video, or '' when it may play. */
function blocked(camera) {
  if (!camera.enabled) return 'Disabled: turn on “Enabled” on its card to watch it.';
  if (!state.reachable) return 'The node cannot be reached.';
  if (!camera.online) return 'Offline: the camera is not answering on the network.';
  if (state.status && state.status.relayHealthy === false) return 'The stream relay on the node is not answering.';
  return '';
}

function stop(tile) {
  tile.attempt += 1;
  if (tile.session) tile.session.close();
  tile.session = null;
  tile.video.srcObject = null;
}

async function start(tile, camera) {
  stop(tile);
  const mine = tile.attempt;
  tile.failed = null;
  tile.starting = true;
  try {
    const session = await watch(tile.video, camera.id, camera.hasSubstream ? 'sub' : 'main');
    if (mine === tile.attempt) {
      tile.session = session;
      session.peer.addEventListener('connectionstatechange', () => {
        const st = session.peer.connectionState;
        if (mine === tile.attempt && (st === 'failed' || st === 'closed')) fail(tile, 'The connection to the stream was lost.');
      });
    } else {
      // Stopped meanwhile: no other attempt ran while this one did.
      session.close();
      tile.video.srcObject = null;
    }
  } catch (error) {
    if (mine === tile.attempt) fail(tile, error.message || 'The node did not answer.');
  } finally {
    tile.starting = false;
  }
  // Stopped while it connected: it may be wanted again by now.
  if (mine !== tile.attempt) renderTile(tile);
}

function fail(tile, text) {
  stop(tile);
  tile.failed = { at: Date.now(), text: text[0].toUpperCase() + text.slice(1) };
  renderTile(tile);
}

/** Starts or stops the tile's stream as the camera's state and the tile's place require, and shows why not. */
function renderTile(tile) {
  const camera = state.cameras.get(tile.id);
  if (!camera) return;
  const why = blocked(camera);
  const wanted = !why && tile.inView && !document.hidden && !document.querySelector('dialog.viewer[open]');
  if (!wanted) {
    if (tile.session || tile.starting) stop(tile);
    tile.failed = null;
  } else if (!tile.session && !tile.starting && !(tile.failed && Date.now() - tile.failed.at < RETRY_MS)) {
    start(tile, camera);
  }
  const name = camera.name || 'Unnamed camera';
  setText(tile.name, name);
  const [word, tone] = onlineState(camera, state.reachable);
  setText(tile.stateWord, word);
  for (const t of ['ok', 'bad', 'off']) toggleClass(tile.state, t, t === tone);
  const text = why || (tile.failed ? tile.failed.text : '');
  setText(tile.why, text);
  show(tile.why, Boolean(text));
  toggleClass(tile.el, 'blocked', Boolean(text));
  const events = (state.events || []).filter((e) => e.cameraId === tile.id);
  const going = events.filter((e) => e.inProgress);
  show(tile.event, going.length > 0);
  // Someone lingering in a zone is said as it happens, not only once the event is over.
  setText(tile.event, going.some((e) => e.loitering) ? 'Loitering' : 'Event');
  // A still stands in while the video connects: the camera's picture now where
  // its motion watcher has one at hand (a camera that classifies), once a page;
  // else the newest event's thumbnail. Either costs the camera nothing, where
  // any other snapshot would read its stream.
  if (camera.detect && camera.classify) tile.still ||= `/api/cameras/${tile.id}/snapshot.jpg?at=${Date.now()}`;
  setAttr(tile.video, 'poster', tile.still || events.find((e) => e.thumbnailUrl)?.thumbnailUrl || null);
  setAttr(tile.el.querySelector('.tile-open'), 'aria-label', `Watch ${name} large`);
  fillSnooze(tile.el, camera);
}

export function renderGrid(s) {
  const list = $('grid');
  show($('live-grid'), s.cameras.size > 0);
  show($('live-empty'), Boolean(s.status) && !s.cameras.size);
  let index = 0;
  for (const id of s.cameras.keys()) {
    let tile = tiles.get(id);
    if (!tile) {
      tile = makeTile(id);
      tiles.set(id, tile);
    }
    if (list.children[index] !== tile.el) list.insertBefore(tile.el, list.children[index] || null);
    renderTile(tile);
    index += 1;
  }
  for (const [id, tile] of tiles) {
    if (!s.cameras.has(id)) {
      stop(tile);
      seen.unobserve(tile.el);
      tile.el.remove();
      tiles.delete(id);
    }
  }
}

const renderAll = () => tiles.forEach(renderTile);

export function setUpGrid() {
  seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const tile = tiles.get(entry.target.dataset.id);
      if (!tile) continue;
      tile.inView = entry.isIntersecting;
      renderTile(tile);
    }
  });
  document.addEventListener('visibilitychange', renderAll);
  // A viewer, whoever opens it, hides the grid: the tiles wait behind it.
  const covered = new MutationObserver(renderAll);
  for (const dialog of document.querySelectorAll('dialog.viewer')) covered.observe(dialog, { attributes: true, attributeFilter: ['open'] });
  window.addEventListener('pagehide', () => tiles.forEach(stop));
}

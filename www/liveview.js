// Live view in a dialog: WHEP through the node (whep.js), main or sub stream,
// muted by default, full screen, and a plain message instead of a black box.

import { $, setText, show, toggleClass, setIcon } from './dom.js';
import { watch } from './whep.js';

const NO_PICTURE_MS = 12000;

let camera = null;
let relayHealthy = true;
let session = null;
let attempt = 0; // bumped by every start and stop: late answers of old attempts are dropped
let stream = 'main';
let noPicture = null;

const video = () => $('live-video');

function message(title, text = '', { spinner = false, retry = false } = {}) {
  setText($('live-msg-title'), title);
  setText($('live-msg-text'), text);
  show($('live-spinner'), spinner);
  show($('live-retry'), retry);
  show($('live-msg'), true);
  toggleClass($('live-stage'), 'failed', retry);
}

function playing() {
  clearTimeout(noPicture);
  show($('live-msg'), false);
  const v = video();
  setText($('live-badge'), v.videoWidth ? `Live · ${v.videoWidth}×${v.videoHeight}` : 'Live');
  show($('live-badge'), true);
  toggleClass($('live-stage'), 'failed', false);
  toggleClass($('live-stage'), 'playing', true);
}

function stop() {
  attempt += 1;
  clearTimeout(noPicture);
  if (session) {
    session.close();
    session = null;
  }
  const v = video();
  v.srcObject = null;
  show($('live-badge'), false);
  toggleClass($('live-stage'), 'playing', false);
  window.nvrLive = null;
}

function unavailable(reason) {
  const hints = [];
  const said = String(reason).toLowerCase();
  if (!relayHealthy && !said.includes('relay')) hints.push('The stream relay on the node is not answering.');
  else if (camera && !camera.online && !said.includes('camera')) hints.push('The camera is not answering on the network: check that it is on and connected.');
  message('Live view unavailable', [reason, ...hints].filter(Boolean).join(' '), { retry: true });
}

async function start() {
  stop();
  const mine = attempt;
  if (!camera.enabled) {
    message('This camera is disabled', 'Turn on “Enabled” on its card to watch it.', { retry: true });
    return;
  }
  message('Connecting…', '', { spinner: true });
  const v = video();
  const onFrame = () => {
    if (mine === attempt) playing();
  };
  if ('requestVideoFrameCallback' in v) v.requestVideoFrameCallback(onFrame);
  else v.addEventListener('loadeddata', onFrame, { once: true });
  try {
    const s = await watch(v, camera.id, stream);
    if (mine !== attempt) {
      s.close();
      return;
    }
    session = s;
    window.nvrLive = { session: s, stream, cameraId: camera.id };
    s.peer.addEventListener('connectionstatechange', () => {
      if (mine !== attempt) return;
      const st = s.peer.connectionState;
      if (st === 'failed' || st === 'closed') {
        stop();
        unavailable('The connection to the stream was lost.');
      }
    });
    noPicture = setTimeout(() => {
      if (mine !== attempt || v.videoWidth > 0) return;
      stop();
      unavailable('No picture arrived from the camera.');
    }, NO_PICTURE_MS);
  } catch (error) {
    if (mine !== attempt) return;
    const text = error.message ? error.message[0].toUpperCase() + error.message.slice(1) : 'The node did not answer.';
    unavailable(text.endsWith('.') || text.endsWith(')') ? text : `${text}.`);
  }
}

function setMuted(muted) {
  const v = video();
  v.muted = muted;
  const button = $('live-mute');
  button.setAttribute('aria-pressed', muted ? 'false' : 'true');
  setText(button.lastElementChild, muted ? 'Sound off' : 'Sound on');
  setIcon(button.querySelector('svg'), muted ? 'i-mute' : 'i-sound');
}

function fullScreen() {
  const stage = $('live-box');
  const v = video();
  if (document.fullscreenElement) {
    document.exitFullscreen().catch(() => {});
  } else if (stage.requestFullscreen) {
    stage.requestFullscreen().catch(() => {});
  } else if (v.webkitEnterFullscreen) {
    v.webkitEnterFullscreen(); // iPhone
  }
}

/** Opens the live view of `cam`; `status` tells whether the relay is up. */
export function openLive(cam, status) {
  camera = cam;
  relayHealthy = status ? status.relayHealthy !== false : true;
  stream = 'main';
  setText($('live-title'), cam.name || 'Live view');
  const sub = document.querySelector('#live-streams input[value="sub"]');
  const main = document.querySelector('#live-streams input[value="main"]');
  main.checked = true;
  show($('live-streams'), Boolean(cam.hasSubstream));
  sub.disabled = !cam.hasSubstream;
  setMuted(true);
  const dialog = $('live');
  if (!dialog.open) dialog.showModal();
  $('live-close').focus();
  start();
}

export function setUpLive() {
  const dialog = $('live');
  dialog.addEventListener('close', () => {
    stop();
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    camera = null;
  });
  $('live-close').addEventListener('click', () => dialog.close());
  $('live-retry').addEventListener('click', () => {
    if (camera) start();
  });
  $('live-mute').addEventListener('click', () => setMuted(!video().muted));
  $('live-full').addEventListener('click', fullScreen);
  $('live-stage').addEventListener('dblclick', fullScreen);
  $('live-streams').addEventListener('change', (event) => {
    stream = event.target.value === 'sub' ? 'sub' : 'main';
    if (camera) start();
  });
  document.addEventListener('fullscreenchange', () => {
    setText($('live-full').lastElementChild, document.fullscreenElement ? 'Exit full screen' : 'Full screen');
  });
  // Leaving the page ends the session at once instead of when ICE times out.
  window.addEventListener('pagehide', stop);
  const full = $('live-full');
  if (!document.fullscreenEnabled && !video().webkitEnterFullscreen) full.hidden = true;
}

/** Keeps the open view's camera current (name, state) as the status refreshes. */
export function updateLive(cameras, status) {
  if (!camera) return;
  const fresh = cameras.get(camera.id);
  relayHealthy = status ? status.relayHealthy !== false : true;
  if (!fresh) {
    stop();
    message('This camera was removed', '', { retry: false });
    camera = null;
    return;
  }
  const wasEnabled = camera.enabled;
  camera = fresh;
  setText($('live-title'), fresh.name || 'Live view');
  if (wasEnabled && !fresh.enabled) {
    stop();
    message('This camera is disabled', 'Turn on “Enabled” on its card to watch it.', { retry: true });
  }
}

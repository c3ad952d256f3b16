// "Find cameras" in the add form: the node asks the network for ONVIF devices
// (about 3 s), then one device for its streams (up to ~15 s). "Use these" fills
// the form and keeps the user name, password and link to the device for its
// POST, so the URLs in the form never hold a password.

import { $, setText, show } from './dom.js';
import { api } from './api.js';
import { codecName } from './format.js';

let device = null; // the device chosen in the list
let profiles = [];
let found = null; // what the add form sends besides its fields, after "Use these"

/** {username?, password?, onvif} for POST /api/cameras, or null. */
export const discovered = () => found;

const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = text;
  return e;
};

const label = (d) => d.name || d.model || d.address;

/** Shows `text` in element `id`, or hides it when empty. */
function note(id, text) {
  setText($(id), text);
  show($(id), Boolean(text));
}

/** Disables `button` and counts seconds in `progress` until the returned function is called. */
function busy(button, progress, words, secs) {
  const started = Date.now();
  const tick = () => setText($(progress).lastElementChild, `${words}… ${Math.floor((Date.now() - started) / 1000)} s (up to ${secs} s)`);
  tick();
  button.disabled = true;
  show($(progress), true);
  const timer = setInterval(tick, 250);
  return () => {
    clearInterval(timer);
    show($(progress), false);
    button.disabled = false;
  };
}

/** Forgets the chosen device and what "Use these" kept, and with `all` the list. */
export function forget(all) {
  if (all) {
    $('find-list').replaceChildren();
    note('find-none', '');
    note('find-skipped', '');
  }
  device = null;
  found = null;
  $('find-login').reset();
  for (const id of ['find-login', 'find-streams', 'find-used']) show($(id), false);
  for (const b of $('find-list').querySelectorAll('[aria-pressed]')) b.setAttribute('aria-pressed', 'false');
}

async function find() {
  forget(true);
  note('find-error', '');
  const done = busy($('find-go'), 'find-progress', 'Asking the network for cameras', 3);
  try {
    const r = await api('POST', '/api/discover', undefined, { timeoutMs: 20000 });
    $('find-list').replaceChildren(...r.devices.map(item));
    const where = r.interfaces.map((i) => `${i.name} (${i.address})`).join(', ') || 'none';
    note('find-none', r.devices.length ? '' : `No camera answered. Networks searched: ${where}.`);
    const skipped = r.skipped > 0 ? `${r.skipped} answer${r.skipped > 1 ? 's' : ''} could not be read.` : '';
    note('find-skipped', `${skipped}${r.truncated ? ' Only the first 256 devices are listed.' : ''}`.trim());
  } catch (error) {
    note('find-error', `Could not look for cameras: ${error.message}`);
  }
  done();
}

function item(d) {
  const b = el('button', '', 'find-dev');
  b.type = 'button';
  b.setAttribute('aria-pressed', 'false');
  b.append(el('strong', label(d)), el('span', [d.make, d.model, d.address].filter(Boolean).join(' · '), 'meta'));
  if (d.cameraId) {
    b.disabled = true;
    b.append(el('span', 'already added', 'hint'));
  }
  b.addEventListener('click', () => {
    forget();
    device = d;
    b.setAttribute('aria-pressed', 'true');
    setText($('find-chosen'), `Sign in to “${label(d)}” with its user name and password:`);
    note('find-login-error', '');
    show($('find-login'), true);
    $('find-user').focus();
  });
  const li = el('li');
  li.append(b);
  return li;
}

async function streams(event) {
  event.preventDefault();
  if (!device) return;
  const d = device;
  show($('find-streams'), false);
  note('find-login-error', '');
  const done = busy($('find-show'), 'find-login-progress', 'Asking the camera for its streams', 15);
  try {
    const body = { address: d.services[0], username: $('find-user').value, password: $('find-pass').value };
    const r = await api('POST', '/api/discover/streams', body, { timeoutMs: 40000 });
    if (device !== d) return;
    d.make ||= r.make;
    d.model ||= r.model;
    profiles = r.profiles;
    if (!profiles.length) throw new Error('the camera has no streams');
    $('find-profiles').replaceChildren(...profiles.map(row));
    $('find-nosub').checked = !profiles.some((p) => p.role === 'sub');
    show($('find-streams'), true);
  } catch (error) {
    note('find-login-error', `Could not get the streams: ${error.message}`);
  } finally {
    done();
  }
}

function row(p, i) {
  const li = el('li');
  for (const role of ['main', 'sub']) {
    const input = el('input');
    input.type = 'radio';
    input.name = `find-${role}`;
    input.value = i;
    // A stream the node does not offer (on another host than the camera) cannot be picked.
    input.disabled = !p.url;
    input.checked = Boolean(p.url) && (p.role === role || (role === 'main' && i === 0 && !profiles.some((q) => q.role === 'main')));
    input.setAttribute('aria-label', `${role === 'main' ? 'Main' : 'Sub'} stream: ${p.name || p.token}`);
    const l = el('label', '', 'check');
    l.append(input, el('span', role === 'main' ? 'Main' : 'Sub'));
    li.append(l);
  }
  const size = p.width && p.height ? `${p.width}×${p.height}` : '';
  const what = [p.name || p.token, size, p.codec && codecName(p.codec), p.fps && `${p.fps} fps`, p.measured ? 'measured' : 'as the camera reports'];
  li.append(el('span', what.filter(Boolean).join(' · ')));
  if (p.problem) li.append(el('span', p.problem, 'hint'));
  return li;
}

function use() {
  const picked = (role) => profiles[document.querySelector(`input[name="find-${role}"]:checked`)?.value];
  const main = picked('main');
  if (!main || !device) return;
  const sub = picked('sub');
  const f = $('add-form').elements;
  f.name.value = label(device);
  f.make.value = device.make || '';
  f.model.value = device.model || '';
  f.rtspUrl.value = main.url;
  f.rtspSubUrl.value = sub && sub !== main ? sub.url : '';
  found = { onvif: { endpoint: device.endpoint, address: device.services[0] } };
  if ($('find-user').value) found.username = $('find-user').value;
  if ($('find-pass').value) found.password = $('find-pass').value;
  show($('find-login'), false);
  show($('find-streams'), false);
  setText($('find-used').firstElementChild, `“${label(device)}” filled in below; its user name and password go with it. Check the form, then add the camera.`);
  show($('find-used'), true);
  $('add-submit').focus();
}

/** "Clear": forgets the device and empties the fields "Use these" filled. */
function clear() {
  forget();
  for (const name of ['name', 'make', 'model', 'rtspUrl', 'rtspSubUrl']) $('add-form').elements[name].value = '';
  $('find-go').focus();
}

export function setUpDiscover() {
  $('find-go').addEventListener('click', find);
  $('find-login').addEventListener('submit', streams);
  $('find-use').addEventListener('click', use);
  $('find-clear').addEventListener('click', clear);
}

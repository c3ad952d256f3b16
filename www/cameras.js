// Camera cards, with the recorder's state, their toggles, recordings,
// re-probe, edit and delete.

import { $, setText, setAttr, show, toggleClass, fromTemplate, formErrors, maskWhenLeft } from './dom.js';
import { api } from './api.js';
import { bytes, capabilitiesText, counted, dateRange, duration, motionEventsText, onlineState, recorderState, sentence } from './format.js';
import { state, change, putCamera, dropCamera } from './store.js';
import { openLive } from './liveview.js';
import { classifierInstalled, readClassify, setClassify, watchClassify } from './classify.js';
import { areaWords, openAreas, readAreas, setUpAreas, zoneFieldError } from './zones.js';
import { fillSnooze } from './alerts.js';

const TOGGLE_WORDS = { enabled: 'Enabled', record: 'Record', detect: 'Detect' };
const cards = new Map(); // id → card

function setMessage(card, text, tone = '') {
  clearTimeout(card.msgTimer);
  card.message = { text, tone };
  if (tone === 'ok') {
    card.msgTimer = setTimeout(() => {
      card.message = { text: '', tone: '' };
      renderCard(card);
    }, 6000);
  }
  renderCard(card);
}

function makeCard(id) {
  const el = fromTemplate('t-camera');
  el.dataset.id = id;
  // Home Assistant's device page links here (NODE_URL/#camera-<id>).
  el.id = `camera-${id}`;
  const q = (s) => el.querySelector(s);
  const card = {
    id,
    el,
    name: q('.cam-name'),
    model: q('.cam-model'),
    caps: q('.cam-caps'),
    onvif: q('.cam-onvif'),
    motion: q('.cam-motion'),
    warnings: q('.cam-warnings'),
    recorder: q('.rec-state'),
    recorderWord: q('.rec-word'),
    state: q('.state'),
    stateWord: q('.state-word'),
    msg: q('.card-msg'),
    watch: q('.watch'),
    recordings: q('.recordings'),
    probe: q('.probe'),
    probeWord: q('.probe-word'),
    edit: q('.edit'),
    del: q('.delete'),
    sensitivity: q('.sensitivity'),
    toggles: {},
    probing: false,
    saving: new Set(),
    message: { text: '', tone: '' },
    msgTimer: null,
  };
  for (const input of el.querySelectorAll('input[data-field]')) {
    const field = input.dataset.field;
    card.toggles[field] = input;
    input.addEventListener('change', () => {
      // One change at a time; the switch stays focusable (not disabled) for the keyboard.
      if (card.saving.has(field)) {
        input.checked = !input.checked;
        return;
      }
      saveToggle(card, field, input.checked);
    });
  }
  card.watch.addEventListener('click', () => {
    const camera = state.cameras.get(id);
    if (camera) openLive(camera, state.status);
  });
  card.probe.addEventListener('click', () => probe(card));
  card.edit.addEventListener('click', () => openEdit(id));
  card.del.addEventListener('click', () => openConfirm(id));
  return card;
}

function renderCard(card) {
  const camera = state.cameras.get(card.id);
  if (!camera) return;
  const name = camera.name || 'Unnamed camera';
  setText(card.name, name);
  const model = [camera.make, camera.model].filter(Boolean).join(' ');
  setText(card.model, model || 'Make and model not given');
  toggleClass(card.model, 'muted', !model);
  // The key-frame interval the motion watcher measured, with the codec.
  const every = camera.keyFrames?.intervalSeconds;
  const caps = [capabilitiesText(camera.capabilities), every ? `key frame every ${every}\u00a0s` : '']
    .filter(Boolean).join(' · ');
  setText(card.caps, caps || 'not probed yet');
  toggleClass(card.caps, 'muted', !caps);
  // Set by the node when a linked ONVIF camera moved to another address.
  const moved = camera.onvif?.message;
  setText(card.onvif, moved);
  show(card.onvif, Boolean(moved));
  // Whose motion detection starts its events, and how the camera's own go.
  const motion = motionEventsText(camera);
  setText(card.motion, motion.text);
  toggleClass(card.motion, 'warn', motion.warn);
  show(card.motion, Boolean(motion.text));
  // What the node says the user should know of how it records (MJPEG that
  // no browser plays, sound it cannot keep) and of its key frames (too far
  // apart to watch a still scene on them alone), in its plain words.
  const warnings = [...(camera.warnings || []), ...(camera.keyFrames?.warning ? [camera.keyFrames.warning] : [])];
  if (card.warnings.dataset.shown !== JSON.stringify(warnings)) {
    card.warnings.dataset.shown = JSON.stringify(warnings);
    card.warnings.replaceChildren(...warnings.map((text) => {
      const li = document.createElement('li');
      li.textContent = text;
      return li;
    }));
  }
  show(card.warnings, warnings.length > 0);

  const recorder = recorderState(camera.recording);
  setText(card.recorderWord, recorder.text);
  for (const t of ['rec', 'bad', 'off']) toggleClass(card.recorder, t, t === recorder.tone);

  const [word, tone] = onlineState(camera, state.reachable);
  setText(card.stateWord, word);
  for (const t of ['ok', 'bad', 'off']) toggleClass(card.state, t, t === tone);
  toggleClass(card.el, 'disabled', !camera.enabled);

  const sensitivity = camera.detectSensitivity;
  setText(card.sensitivity, sensitivity || '');
  for (const [field, input] of Object.entries(card.toggles)) {
    const saving = card.saving.has(field);
    if (!saving && input.checked !== Boolean(camera[field])) input.checked = Boolean(camera[field]);
    setAttr(input, 'aria-busy', saving ? 'true' : null);
    const words = field === 'detect' && sensitivity ? `${TOGGLE_WORDS[field]} (${sensitivity} sensitivity)` : TOGGLE_WORDS[field];
    setAttr(input, 'aria-label', `${words}: ${name}`);
  }

  setAttr(card.probe, 'aria-disabled', card.probing ? 'true' : null);
  setAttr(card.el, 'aria-busy', card.probing ? 'true' : null);
  toggleClass(card.probe, 'busy', card.probing);
  setText(card.probeWord, card.probing ? 'Probing…' : 'Re-probe');
  setAttr(card.watch, 'aria-label', `Watch ${name} live`);
  setAttr(card.recordings, 'aria-label', `Recordings of ${name}`);
  setAttr(card.recordings, 'href', `/recordings?camera=${card.id}`);
  setAttr(card.probe, 'aria-label', card.probing ? `Probing ${name}…` : `Re-probe ${name}`);
  setAttr(card.edit, 'aria-label', `Edit ${name}`);
  setAttr(card.del, 'aria-label', `Delete ${name}`);

  setText(card.msg, card.message.text);
  for (const t of ['ok', 'bad', 'info']) toggleClass(card.msg, t, t === card.message.tone);
  fillSnooze(card.el, camera);
}

export function renderCameras(s) {
  const list = $('camera-list');
  show($('cameras-loading'), !s.status);
  show($('cameras-empty'), Boolean(s.status) && s.cameras.size === 0);
  let index = 0;
  for (const id of s.cameras.keys()) {
    let card = cards.get(id);
    if (!card) {
      card = makeCard(id);
      cards.set(id, card);
    }
    renderCard(card);
    if (list.children[index] !== card.el) list.insertBefore(card.el, list.children[index] || null);
    index += 1;
  }
  for (const [id, card] of cards) {
    if (!s.cameras.has(id)) {
      clearTimeout(card.msgTimer);
      card.el.remove();
      cards.delete(id);
    }
  }
}

/** Scrolls to a card and marks it for a moment (after it was added). */
export function highlight(id) {
  const card = cards.get(id);
  if (!card) return;
  card.el.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  toggleClass(card.el, 'fresh', true);
  setTimeout(() => toggleClass(card.el, 'fresh', false), 2500);
}

async function saveToggle(card, field, value) {
  card.saving.add(field);
  renderCard(card);
  try {
    const camera = await change(card.id, () => api('PATCH', `/api/cameras/${card.id}`, { [field]: value }));
    card.saving.delete(field);
    putCamera(camera);
  } catch (error) {
    card.saving.delete(field);
    if (error.status === 404) return dropCamera(card.id);
    setMessage(card, `Could not change ${TOGGLE_WORDS[field]}: ${error.message}`, 'bad');
  }
  return undefined;
}

async function probe(card) {
  if (card.probing) return;
  card.probing = true;
  setMessage(card, 'Checking the stream (up to 10 s)…', 'info');
  try {
    const caps = await change(card.id, () => api('POST', `/api/cameras/${card.id}/probe`, undefined, { timeoutMs: 30000 }));
    card.probing = false;
    const camera = state.cameras.get(card.id);
    if (camera && caps) {
      const { hasSubstream, videoCodec, width, height, fps } = caps;
      putCamera({ ...camera, online: true, hasSubstream: Boolean(hasSubstream), capabilities: { hasSubstream, videoCodec, width, height, fps } });
    }
    setMessage(card, 'Stream checked just now.', 'ok');
  } catch (error) {
    card.probing = false;
    if (error.status === 404) return dropCamera(card.id);
    setMessage(card, sentence(error.message), 'bad');
  }
  return undefined;
}

// ---- Delete, with a confirmation ----

let confirmId = null;

// What goes with the camera, from the node: the person types its name to delete it.
async function openConfirm(id) {
  const camera = state.cameras.get(id);
  if (!camera) return;
  confirmId = id;
  setText($('confirm-title'), `Delete “${camera.name}”?`);
  setText($('confirm-label'), `Type its name, “${camera.name}”, to delete it`);
  setText($('confirm-text'), 'Counting what it holds…');
  $('confirm-name').value = '';
  show($('confirm-error'), false);
  $('confirm-ok').disabled = true;
  $('confirm').showModal();
  $('confirm-name').focus();
  let text;
  try {
    const s = await api('GET', `/api/cameras/${id}/stored`);
    const rec = s.recordings
      ? ` (${duration(s.recordedSeconds * 1000)}, ${bytes(s.recordingBytes)}, ${dateRange(Date.parse(s.recordedFrom), Date.parse(s.recordedTo))})`
      : '';
    text = s.recordings || s.events
      ? `Deleted with it, for good: ${counted(s.recordings, 'recording')}${rec}, ${counted(s.events, 'event')}${s.events ? ` with their clips, ${s.kept} of them kept` : ''}.`
      : 'It has no recordings or events: nothing else goes with it.';
  } catch (error) {
    if (error.status === 404) {
      $('confirm').close();
      return dropCamera(id);
    }
    text = `Its recordings, events and kept clips are deleted with it, for good (they could not be counted: ${error.message}).`;
  }
  if (confirmId === id) setText($('confirm-text'), text);
  return undefined;
}

async function confirmDelete() {
  const id = confirmId;
  if (!id || $('confirm-ok').disabled) return;
  const ok = $('confirm-ok');
  ok.disabled = true;
  try {
    await change(id, () => api('DELETE', `/api/cameras/${id}`));
    dropCamera(id);
    $('confirm').close();
    $('cameras-title').focus(); // the button that opened the dialog is gone
  } catch (error) {
    if (error.status === 404) {
      dropCamera(id);
      $('confirm').close();
      return;
    }
    setText($('confirm-error'), `Could not delete the camera: ${error.message}`);
    show($('confirm-error'), true);
    ok.disabled = false;
  }
}

// ---- Edit: name, make, model, motion sensitivity, days to keep recordings, classification, masks and zones (zones.js) and (optionally) the stream addresses ----

let editId = null;
let editBusy = false;
const editErrors = formErrors('edit');

function openEdit(id) {
  const camera = state.cameras.get(id);
  if (!camera) return;
  editId = id;
  const form = $('edit-form');
  form.reset();
  editErrors.clear();
  setText($('edit-title'), `Edit “${camera.name}”`);
  $('edit-name').value = camera.name;
  $('edit-make').value = camera.make || '';
  $('edit-model').value = camera.model || '';
  $('edit-detectSensitivity').value = camera.detectSensitivity || 'medium';
  $('edit-retainDays').value = camera.retainDays ?? '';
  $('edit-motionSource').value = camera.motionSource || '';
  $('edit-fullRate').checked = camera.fullRate === true;
  setClassify('edit', camera, classifierInstalled(state.status));
  openAreas(camera);
  $('edit-urls').open = false;
  showLink(camera);
  show($('edit-nosub-label'), Boolean(camera.hasSubstream));
  $('edit-rtspSubUrl').disabled = false;
  $('edit').showModal();
  $('edit-name').focus();
  $('edit-name').select();
}

async function saveEdit(event) {
  event.preventDefault();
  if (editBusy || !editId) return;
  const id = editId;
  const camera = state.cameras.get(id);
  if (!camera) return $('edit').close();
  editErrors.clear();
  const patch = {};
  const name = $('edit-name').value.trim();
  if (name !== camera.name) patch.name = name;
  for (const field of ['make', 'model']) {
    const value = $(`edit-${field}`).value.trim();
    if (value !== (camera[field] || '')) patch[field] = value;
  }
  const sensitivity = $('edit-detectSensitivity').value;
  if (sensitivity !== (camera.detectSensitivity || 'medium')) patch.detectSensitivity = sensitivity;
  // Blank is no age limit; what is not a number goes as typed, for the node to say why not.
  const days = $('edit-retainDays').value.trim();
  const retainDays = days === '' ? null : /^\d+$/.test(days) ? Number(days) : days;
  if (retainDays !== (camera.retainDays ?? null)) patch.retainDays = retainDays;
  const motionSource = $('edit-motionSource').value || null;
  if (motionSource !== (camera.motionSource ?? null)) patch.motionSource = motionSource;
  const fullRate = $('edit-fullRate').checked;
  if (fullRate !== (camera.fullRate === true)) patch.fullRate = fullRate;
  const { classify, kinds } = readClassify('edit');
  if (classify !== Boolean(camera.classify)) patch.classify = classify;
  // The kinds ticked, if they changed (none ticked with classify off keeps the node's).
  const had = Array.isArray(camera.kinds) ? camera.kinds : [];
  if (kinds.join() !== had.join() && (classify || kinds.length > 0)) patch.kinds = kinds;
  const areas = readAreas();
  if (!areas) return undefined;
  if (JSON.stringify(areas.motionMasks) !== JSON.stringify(camera.motionMasks || [])) patch.motionMasks = areas.motionMasks;
  if (JSON.stringify(areas.zones) !== JSON.stringify(camera.zones || [])) patch.zones = areas.zones;
  if (areas.autoMask !== (camera.autoMask !== false)) patch.autoMask = areas.autoMask;
  const url = $('edit-rtspUrl').value.trim();
  if (url) patch.rtspUrl = url;
  if ($('edit-nosub').checked) patch.rtspSubUrl = null;
  else if ($('edit-rtspSubUrl').value.trim()) patch.rtspSubUrl = $('edit-rtspSubUrl').value.trim();
  const device = linkable[$('edit-device').value];
  if (device) patch.onvif = { endpoint: device.endpoint, address: device.services[0] };
  // A device on another address gets the account only with the password.
  if (device && $('edit-password').value) patch.password = $('edit-password').value;
  if (Object.keys(patch).length === 0) return $('edit').close();

  editBusy = true;
  const form = $('edit-form');
  for (const el of form.elements) el.dataset.wasDisabled = el.disabled ? '1' : '';
  for (const el of form.elements) el.disabled = true;
  $('edit-cancel').disabled = false; // closing the dialog does not stop the change
  show($('edit-progress'), true);
  setText($('edit-progress').lastElementChild, patch.rtspUrl ? 'Saving and checking the new stream (up to 10 s)…' : 'Saving…');
  try {
    const updated = await change(id, () => api('PATCH', `/api/cameras/${id}`, patch, { timeoutMs: 30000 }));
    putCamera(updated);
    if ($('edit').open && editId === id) $('edit').close();
  } catch (error) {
    if (error.status === 404) {
      dropCamera(id);
      $('edit').close();
    } else if (!zoneFieldError(error.message)) {
      editErrors.showError(areaWords(error.message).replace('or null for', 'or blank for'), 'Could not save: ');
    }
  } finally {
    editBusy = false;
    for (const el of form.elements) el.disabled = el.dataset.wasDisabled === '1';
    show($('edit-progress'), false);
  }
  return undefined;
}

let linkable = []; // devices not added yet, from the edit dialog's "Link"

/** The camera's ONVIF link in the edit dialog, or the button to look for a device to link. */
function showLink(camera) {
  const link = camera.onvif;
  setText($('edit-onvif').firstElementChild, link ? `Linked to ONVIF device ${link.endpoint}. ${link.message || ''}` : '');
  show($('edit-onvif'), Boolean(link));
  // A device that claims to be the camera: the node moves it only when the user says so.
  if (link?.claim) setText($('edit-confirm-move'), `It is my camera: move it to ${link.claim}`);
  show($('edit-confirm-move'), Boolean(link?.claim));
  show($('edit-linking'), !link);
  show($('edit-link'), true);
  show($('edit-device'), false);
  linkable = [];
  showPassword();
}

/** The password field, while a move or a link could send the camera's account to a new address. */
function showPassword() {
  const claim = state.cameras.get(editId)?.onvif?.claim;
  const wanted = Boolean(claim) || Boolean($('edit-device').value && !$('edit-device').hidden);
  show($('edit-password-field'), wanted);
  if (!wanted) $('edit-password').value = '';
}

/** Lists the ONVIF devices not added yet; the one chosen is linked on Save. */
async function findLink() {
  const button = $('edit-link');
  button.disabled = true;
  setText(button, 'Looking for devices (3 s)…');
  try {
    const r = await api('POST', '/api/discover', undefined, { timeoutMs: 20000 });
    linkable = r.devices.filter((d) => !d.cameraId);
    const first = linkable.length ? 'Choose a device to link' : 'No device that is not added yet answered';
    $('edit-device').replaceChildren(new Option(first, ''), ...linkable.map((d, i) => new Option(`${d.name || d.model || d.address} · ${d.address}`, i)));
    show(button, false);
    show($('edit-device'), true);
  } catch (error) {
    editErrors.showError(error.message, 'Could not look for devices: ');
  }
  button.disabled = false;
  setText(button, 'Link to an ONVIF device');
}

/** Unlink: the node stops following the device (PATCH {onvif: null}) at once, apart from Save. */
async function unlink() {
  const id = editId;
  if (editBusy || !id) return;
  editErrors.clear();
  $('edit-unlink').disabled = true;
  try {
    const updated = await change(id, () => api('PATCH', `/api/cameras/${id}`, { onvif: null }));
    putCamera(updated);
    if (editId === id) showLink(updated);
  } catch (error) {
    editErrors.showError(error.message, 'Could not unlink: ');
  }
  $('edit-unlink').disabled = false;
}

/** Confirms the move to the device that claims to be the camera, apart from Save. */
async function confirmMove() {
  const id = editId;
  const claim = state.cameras.get(id)?.onvif?.claim;
  if (editBusy || !id || !claim) return;
  editErrors.clear();
  const password = $('edit-password').value;
  if (!password) return editErrors.showError(`password is needed to move the camera to ${claim}: its account goes there only with it`);
  const button = $('edit-confirm-move');
  button.disabled = true;
  setText(button, `Moving the camera to ${claim} and checking its stream (up to 10 s)…`);
  try {
    const updated = await change(id, () => api('PATCH', `/api/cameras/${id}`, { onvif: { confirmMove: claim }, password }, { timeoutMs: 30000 }));
    putCamera(updated);
    if (editId === id) showLink(updated);
  } catch (error) {
    editErrors.showError(error.message, 'Could not move the camera: ');
  }
  button.disabled = false;
}

export function setUpCameras() {
  setUpAreas();
  $('edit-confirm-move').addEventListener('click', confirmMove);
  $('edit-unlink').addEventListener('click', unlink);
  $('edit-link').addEventListener('click', findLink);
  $('edit-device').addEventListener('change', showPassword);
  $('confirm-cancel').addEventListener('click', () => $('confirm').close());
  $('confirm-ok').addEventListener('click', confirmDelete);
  $('confirm-name').addEventListener('input', (e) => {
    $('confirm-ok').disabled = e.target.value.trim() !== state.cameras.get(confirmId)?.name;
  });
  $('confirm-name').addEventListener('keydown', (e) => e.key === 'Enter' && confirmDelete());
  $('edit-cancel').addEventListener('click', () => $('edit').close());
  $('edit-form').addEventListener('submit', saveEdit);
  $('edit-form').addEventListener('input', (event) => {
    const field = event.target.closest('.kinds') || event.target;
    const error = $(`${field.id}-error`);
    if (error && !error.hidden) {
      error.hidden = true;
      field.removeAttribute('aria-invalid');
    }
  });
  watchClassify('edit', () => classifierInstalled(state.status));
  $('edit-nosub').addEventListener('change', () => {
    $('edit-rtspSubUrl').disabled = $('edit-nosub').checked;
  });
  maskWhenLeft($('edit-rtspUrl'));
  maskWhenLeft($('edit-rtspSubUrl'));
  // Light-dismiss: a click on the backdrop closes a dialog.
  for (const dialog of [$('confirm'), $('edit')]) {
    dialog.addEventListener('click', (event) => {
      if (event.target !== dialog || editBusy) return;
      const r = dialog.getBoundingClientRect();
      const inside = event.clientX >= r.left && event.clientX <= r.right && event.clientY >= r.top && event.clientY <= r.bottom;
      if (!inside) dialog.close();
    });
  }
}

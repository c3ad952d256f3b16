// The add-camera form: the node probes the new stream (up to 10 s), so the
// form shows progress and cannot be sent twice; 400s appear next to their field.

import { $, setText, show, formErrors, maskWhenLeft } from './dom.js';
import { api } from './api.js';
import { capabilitiesText } from './format.js';
import { change, putCamera } from './store.js';
import { highlight } from './cameras.js';
import { discovered, forget } from './discover.js';
import { KIND_NAMES, classifierInstalled, readClassify, setClassify, syncClassify, watchClassify } from './classify.js';

const errors = formErrors('add');
let busy = false;
let installed = false; // the classifier, as the last status said
let classifyTouched = false; // the person changed it: statuses leave it alone

/** The classifier's defaults: on, into every kind, where it is installed. */
function classifyDefaults() {
  setClassify('add', { classify: installed, kinds: KIND_NAMES }, installed);
}

function setBusy(on) {
  busy = on;
  const form = $('add-form');
  for (const el of form.elements) el.disabled = on;
  form.setAttribute('aria-busy', on ? 'true' : 'false');
  show($('add-progress'), on);
  setText($('add-submit').lastElementChild, on ? 'Adding…' : 'Add camera');
}

async function submit(event) {
  event.preventDefault();
  if (busy) return;
  errors.clear();
  show($('add-done'), false);
  const form = $('add-form');
  const value = (name) => form.elements[name].value.trim();
  const body = { name: value('name'), rtspUrl: value('rtspUrl'), detectSensitivity: value('detectSensitivity') };
  if (value('rtspSubUrl')) body.rtspSubUrl = value('rtspSubUrl');
  if (value('make')) body.make = value('make');
  if (value('model')) body.model = value('model');
  const { classify, kinds } = readClassify('add');
  body.classify = classify;
  // Kinds with classify on; with it off only a choice made (none is a 400).
  if (classify || kinds.length > 0) body.kinds = kinds;
  // From "Find cameras": the device's user name, password and link.
  Object.assign(body, discovered());

  setBusy(true);
  const started = Date.now();
  const bar = $('add-progress-bar');
  const text = $('add-progress-text');
  const step = () => {
    const s = Math.min(10, (Date.now() - started) / 1000);
    bar.value = s;
    setText(text, `Checking the camera's stream… ${Math.floor(s)} s (up to 10 s)`);
  };
  step();
  const ticker = setInterval(step, 250);
  try {
    const camera = await change(null, () => api('POST', '/api/cameras', body, { timeoutMs: 40000 }));
    putCamera(camera);
    form.reset();
    forget(true);
    classifyTouched = false;
    classifyDefaults();
    const caps = capabilitiesText(camera.capabilities);
    const warnings = (camera.warnings || []).join(' ');
    setText(
      $('add-done'),
      caps
        ? `Added “${camera.name}”: ${caps}.${warnings ? ` ${warnings}` : ''}`
        : `Added “${camera.name}”, but its stream could not be checked: the camera may be off or the address wrong. Use Re-probe on its card to try again, or Edit to fix the address.`,
    );
    $('add-done').classList.toggle('warn', !caps || Boolean(warnings));
    show($('add-done'), true);
    highlight(camera.id);
  } catch (error) {
    clearInterval(ticker);
    setBusy(false);
    syncClassify('add', installed);
    errors.showError(error.message, 'Could not add the camera: ');
    return;
  }
  clearInterval(ticker);
  setBusy(false);
  syncClassify('add', installed);
  $('add-done').focus({ preventScroll: true });
}

/** Opens the form and puts the cursor in its first field. */
function openForm(event) {
  event?.preventDefault();
  $('add-details').open = true;
  $('add').scrollIntoView({ block: 'start', behavior: 'smooth' });
  $('add-name').focus({ preventScroll: true });
}

/** Follows the classifier's state in the status. */
export function renderAddForm(state) {
  if (!state.status || busy) return;
  const now = classifierInstalled(state.status);
  if (now === installed && $('add-classify-hint').textContent) return;
  installed = now;
  if (classifyTouched) syncClassify('add', installed);
  else classifyDefaults();
}

/** A node that has cameras shows the form folded; one with none shows it open. */
export function foldAddForm(hasCameras) {
  if (!busy) $('add-details').open = !hasCameras;
}

export function setUpAddForm() {
  $('add-form').addEventListener('submit', submit);
  $('add-jump').addEventListener('click', openForm);
  maskWhenLeft($('add-rtspUrl'));
  maskWhenLeft($('add-rtspSubUrl'));
  watchClassify('add', () => installed);
  classifyDefaults();
  // A field's error goes away as soon as it is edited.
  $('add-form').addEventListener('input', (event) => {
    const field = event.target.closest('.kinds') || event.target;
    if (field.closest('.classify')) classifyTouched = true;
    const error = $(`${field.id}-error`);
    if (error && !error.hidden) {
      error.hidden = true;
      field.removeAttribute('aria-invalid');
    }
  });
}

// The add-camera form: the node probes the new stream (up to 10 s), so the
// form shows progress and cannot be sent twice; 400s appear next to their field.

import { $, setText, show, formErrors, maskWhenLeft } from './dom.js';
import { api } from './api.js';
import { capabilitiesText } from './format.js';
import { change, putCamera } from './store.js';
import { highlight } from './cameras.js';

const errors = formErrors('add');
let busy = false;

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
    const caps = capabilitiesText(camera.capabilities);
    setText(
      $('add-done'),
      caps
        ? `Added “${camera.name}”: ${caps}.`
        : `Added “${camera.name}”, but its stream could not be checked: the camera may be off or the address wrong. Use Re-probe on its card to try again, or Edit to fix the address.`,
    );
    $('add-done').classList.toggle('warn', !caps);
    show($('add-done'), true);
    highlight(camera.id);
  } catch (error) {
    clearInterval(ticker);
    setBusy(false);
    errors.showError(error.message, 'Could not add the camera: ');
    return;
  }
  clearInterval(ticker);
  setBusy(false);
  $('add-done').focus({ preventScroll: true });
}

/** Opens the form and puts the cursor in its first field. */
function openForm(event) {
  event?.preventDefault();
  $('add-details').open = true;
  $('add').scrollIntoView({ block: 'start', behavior: 'smooth' });
  $('add-name').focus({ preventScroll: true });
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
  // A field's error goes away as soon as it is edited.
  $('add-form').addEventListener('input', (event) => {
    const error = $(`${event.target.id}-error`);
    if (error && !error.hidden) {
      error.hidden = true;
      event.target.removeAttribute('aria-invalid');
    }
  });
}

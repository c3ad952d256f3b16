// This node: the settings a person may change here (GET/PATCH /api/settings),
// a field each, in the settings file's syntax, checked by the node; a field's
// error at the field, and what waits for a restart said in words.

import { $, show, setText, fromTemplate } from './dom.js';
import { api } from './api.js';
import { sentence } from './format.js';
import { refreshSoon } from './store.js';
import { onView } from './views.js';

const LABELS = {
  NODE_NAME: 'Name of this node',
  EVENTS_RETAIN_DAYS: 'Days to keep events',
  MAX_EVENTS: 'Most events kept',
  CLIPS_MAX_BYTES: 'Room for event clips',
  CLIPS_KEEP_MAX_BYTES: 'Room for kept clips',
  RECORDINGS_MAX_BYTES: 'Room for recordings',
  RECORDINGS_RESERVE: 'Free space to leave on the disk',
  NODE_URL: 'Address of this node',
  MQTT_URL: 'Home Assistant: MQTT broker',
  MQTT_USER: 'MQTT user name',
  MQTT_PASSWORD: 'MQTT password',
};

const form = () => $('node-form');
let shown = {}; // name → the text the form was filled with

function fill({ settings, restartNeeded }, saved) {
  shown = {};
  for (const s of settings) {
    let input = form().elements[s.name];
    if (!input) {
      const field = fromTemplate('node-field');
      input = field.querySelector('input');
      const [label, error, hint] = field.querySelectorAll('label, p');
      input.id = label.htmlFor = `set-${s.name}`;
      input.name = s.name;
      error.id = `${input.id}-error`;
      hint.id = `${input.id}-hint`;
      input.setAttribute('aria-describedby', `${error.id} ${hint.id}`);
      if (s.secret) input.type = 'password';
      label.textContent = LABELS[s.name] || s.name;
      hint.textContent = `${sentence(s.help)}.${s.restart ? ' Takes effect when the node restarts.' : ''}`;
      $('node-fields').append(field);
    }
    shown[s.name] = input.value = s.value ?? '';
    input.placeholder = s.secret ? (s.set ? '(kept, not shown)' : '') : s.default;
  }
  const waiting = restartNeeded.map((n) => LABELS[n] || n).join(', ');
  const done = $('node-done');
  setText(done, `${saved ? 'Saved. ' : ''}${waiting ? `Restart the node for: ${waiting}.` : ''}`);
  done.classList.toggle('warn', Boolean(waiting));
  show(done, Boolean(done.textContent));
}

function clearErrors() {
  for (const input of form().elements) {
    input.removeAttribute('aria-invalid');
    const error = $(`${input.id}-error`);
    if (error) show(error, false);
  }
  show($('node-error'), false);
}

async function load() {
  try {
    fill(await api('GET', '/api/settings'));
  } catch (error) {
    setText($('node-error'), sentence(error.message));
    show($('node-error'), true);
  }
}

async function save(event) {
  event.preventDefault();
  clearErrors();
  const changes = {};
  for (const input of form().elements) {
    if (input.name && input.value !== shown[input.name]) changes[input.name] = input.value.trim() ? input.value : null;
  }
  try {
    fill(await api('PATCH', '/api/settings', changes), true);
    refreshSoon();
  } catch (error) {
    const name = /^[A-Z_]+/.exec(error.message)?.[0];
    const input = name && form().elements[name];
    const shownAt = (input && $(`${input.id}-error`)) || $('node-error');
    setText(shownAt, input ? `${LABELS[name]}${error.message.slice(name.length)}` : sentence(error.message));
    show(shownAt, true);
    show($('node-done'), false);
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    }
  }
}

export function setUpSettings() {
  form().addEventListener('submit', save);
  onView('settings', () => {
    if (!form().contains(document.activeElement)) load();
  });
}

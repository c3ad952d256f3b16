// Small DOM helpers. Text from the API or the user only ever goes through
// textContent or attribute setters: never innerHTML.

export const $ = (id) => document.getElementById(id);

/** Sets textContent only when it changes, so refreshes do not disturb the page. */
export function setText(el, text) {
  const value = String(text ?? '');
  if (el.textContent !== value) el.textContent = value;
}

export function setAttr(el, name, value) {
  if (value === null || value === undefined || value === false) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
  } else if (el.getAttribute(name) !== String(value)) {
    el.setAttribute(name, String(value));
  }
}

export function show(el, visible) {
  if (el.hidden === visible) el.hidden = !visible;
}

export function toggleClass(el, name, on) {
  if (el.classList.contains(name) !== Boolean(on)) el.classList.toggle(name, Boolean(on));
}

/** A copy of a <template>'s first element. */
export function fromTemplate(id) {
  return document.getElementById(id).content.firstElementChild.cloneNode(true);
}

/**
 * Makes `parent`'s children one element per item, in order: an element made
 * by `make(item)` once per `keyOf(item)`, then updated by `fill(el, item)`.
 * Kept elements are not replaced, so a focused one keeps the focus.
 */
export function syncChildren(parent, items, keyOf, make, fill) {
  const old = new Map([...parent.children].map((el) => [el.dataset.key, el]));
  items.forEach((item, index) => {
    const key = String(keyOf(item));
    let el = old.get(key);
    if (el) {
      old.delete(key);
    } else {
      el = make(item);
      el.dataset.key = key;
    }
    fill(el, item);
    if (parent.children[index] !== el) parent.insertBefore(el, parent.children[index] || null);
  });
  for (const el of old.values()) el.remove();
}

/** Points an inline SVG <use> at a symbol of the sprite. */
export function setIcon(svg, symbol) {
  const use = svg.querySelector('use');
  if (use && use.getAttribute('href') !== `#${symbol}`) use.setAttribute('href', `#${symbol}`);
}

/** The words people see for the API's field names. */
export const FIELD_LABELS = {
  name: 'Name',
  rtspUrl: 'Main stream URL',
  rtspSubUrl: 'Sub stream URL',
  make: 'Make',
  model: 'Model',
  classify: 'Classify what moves',
  kinds: 'Kinds of event',
  motionMasks: 'Motion masks',
  zones: 'Zones',
  autoMask: 'Ignore areas that are always moving',
  retainDays: 'Days to keep recordings',
  motionSource: 'Motion found by',
  fullRate: 'Decode every frame',
  password: 'Password',
};

/** The field a 400 message is about ("rtspUrl must be ..." → "rtspUrl"), or null. */
export function fieldOf(message) {
  const match = /^([A-Za-z]+)\b/.exec(message || '');
  return match && Object.hasOwn(FIELD_LABELS, match[1]) ? match[1] : null;
}

/**
 * Field errors of a form whose inputs have ids `${prefix}-${field}` and error
 * paragraphs `${prefix}-${field}-error`.
 */
export function formErrors(prefix) {
  const general = $(`${prefix}-error`);
  const clear = () => {
    for (const field of Object.keys(FIELD_LABELS)) {
      const input = $(`${prefix}-${field}`);
      const error = $(`${prefix}-${field}-error`);
      if (!input || !error) continue;
      input.removeAttribute('aria-invalid');
      error.textContent = '';
      error.hidden = true;
    }
    general.textContent = '';
    general.hidden = true;
  };
  /** Shows `message` next to its field (and focuses it), or as a general error. */
  const showError = (message, generalPrefix = '') => {
    const field = fieldOf(message);
    const input = field && $(`${prefix}-${field}`);
    const error = field && $(`${prefix}-${field}-error`);
    if (input && error) {
      error.textContent = `${FIELD_LABELS[field]}${message.slice(field.length)}`;
      error.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      const details = input.closest('details');
      if (details) details.open = true;
      input.focus();
      return;
    }
    general.textContent = `${generalPrefix}${message}`;
    general.hidden = false;
  };
  return { clear, showError };
}

const textSecurity = typeof CSS !== 'undefined' && CSS.supports('-webkit-text-security', 'disc');

/**
 * Camera addresses carry passwords: readable while typed, masked once the
 * field is left (by CSS where supported, else as a password field).
 */
export function maskWhenLeft(input) {
  const mask = () => {
    const on = input.value !== '';
    if (textSecurity) toggleClass(input, 'masked', on);
    else input.type = on ? 'password' : 'text';
  };
  input.addEventListener('focus', () => {
    input.classList.remove('masked');
    if (!textSecurity) input.type = 'text';
  });
  input.addEventListener('blur', mask);
  input.form?.addEventListener('reset', () => setTimeout(mask));
}

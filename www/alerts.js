// Notifications: whether alerts go out (armed), "Alert this phone" (this
// browser's Web Push subscription, by sw.js), where alerts go (Web Push, ntfy,
// webhooks) with their rules in words, how delivering to each goes, a test
// of each, and snoozing a camera from its tile or card. The destinations and
// their rules come from GET /api/alerts, read again when the status (polled
// by store.js) names other ones; armed, the snoozes and each delivery's state
// come from the status.

import { $, setText, setAttr, show, toggleClass, fromTemplate, setIcon, syncChildren } from './dom.js';
import { api, serverNow } from './api.js';
import { clockTime, dayName, duration, relativeTime, sentence } from './format.js';
import { state, notify, refreshSoon } from './store.js';
import { go } from './views.js';

const TYPES = { webpush: 'Web Push', ntfy: 'ntfy', webhook: 'Webhook' };
const KIND_WORDS = { person: 'person', vehicle: 'vehicle', animal: 'animal', package: 'package', motion: 'any motion' };
const DEFAULT_RULES = { cameras: null, kinds: ['person', 'vehicle', 'animal', 'package'], zones: null, cooldownSeconds: 60, atEnd: false, loitering: false };
const NTFY = 'https://ntfy.sh';
const MINE = 'nvr-node-push'; // localStorage: the id of this browser's Web Push destination
/** The API's field of a 400 → the form's element and its words. */
const FIELDS = {
  name: ['dest-name', 'Name'],
  server: ['dest-server', 'Server'],
  topic: ['dest-topic', 'Topic'],
  token: ['dest-token', 'Access token'],
  url: ['dest-url', 'URL'],
  'rules.cameras': ['dest-cameras', 'Cameras'],
  'rules.kinds': ['dest-kinds', 'Kinds of event'],
  'rules.zones': ['dest-zones', 'Zones'],
  'rules.cooldownSeconds': ['dest-cooldown', 'The wait'],
  'rules.atEnd': ['dest-atEnd', 'This choice'],
  'rules.loitering': ['dest-loitering', 'This choice'],
};

let settings = null; // the last GET /api/alerts
let loading = null;
let readFor = null; // the status' destinations (ids and names) the settings were read for
const tests = new Map(); // destination id → {text, tone} of its last test
const changed = new Map(); // camera id or 'armed' → {value, at}: changed here, until the status has it
const push = { subscription: null, busy: '', note: null };
let editing = null; // {type, d}: the destination in the form (d null for a new one)
let deleting = null;
let snoozing = null; // the camera id in the snooze dialog
let scrolled = false;

const canPush = () => window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window;
const alerts = () => state.status?.alerts;
/** What was changed here in the last 8 s, before the status shows it; else `fallback`. */
function recent(key, fallback) {
  const c = changed.get(key);
  return c && Date.now() - c.at < 8000 ? c.value : fallback;
}

function remembered() {
  try {
    return localStorage.getItem(MINE);
  } catch (_) {
    return null;
  }
}
function remember(id) {
  try {
    if (id) localStorage.setItem(MINE, id);
    else localStorage.removeItem(MINE);
  } catch (_) {
    // Storage refused (private mode): the page forgets which one is this browser.
  }
}

async function load() {
  if (loading) return loading;
  loading = (async () => {
    try {
      settings = await api('GET', '/api/alerts', undefined, { timeoutMs: 8000 });
      say('');
    } catch (error) {
      readFor = null; // asked again at the next status
      say(`Could not read where alerts go: ${error.message}`);
    }
  })();
  await loading;
  loading = null;
  draw();
  return undefined;
}

function say(text) {
  setText($('alerts-msg'), text);
  show($('alerts-msg'), Boolean(text));
}

/** The destinations, with how delivering goes from the status (newer than the settings). */
function destinations() {
  const live = new Map((alerts()?.destinations || []).map((d) => [d.id, d]));
  return (settings?.destinations || []).map((d) => ({ ...d, delivery: live.get(d.id)?.delivery || d.delivery }));
}

/** This browser's destination: the one made here, while the browser's subscription goes to its host. */
function mine() {
  const id = remembered();
  const d = destinations().find((x) => x.id === id && x.type === 'webpush');
  if (!d || !push.subscription) return null;
  return new URL(push.subscription.endpoint).host === d.host ? d : null;
}

/** "a, b or c". */
function orList(words) {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

function cameraName(id) {
  return state.cameras.get(id)?.name || 'a removed camera';
}

/** A destination's rules in words. */
function rulesWords(rules) {
  const kinds = Object.keys(KIND_WORDS).filter((k) => rules.kinds.includes(k)).map((k) => KIND_WORDS[k]);
  const cameras = rules.cameras === null ? 'any camera' : orList(rules.cameras.map(cameraName)) || 'no camera';
  const where = rules.zones ? `, in ${orList(rules.zones)}` : '';
  const wait = rules.cooldownSeconds
    ? ` Then none from that camera for ${duration(rules.cooldownSeconds * 1000)}.`
    : ' Every event alerts.';
  const end = rules.atEnd ? ' Again when it ends, with the clip, if it went somewhere new.' : '';
  const lingers = rules.loitering ? ', only when someone lingers in a zone past its time' : '';
  return `${sentence(orList(kinds))} at ${cameras}${where}${lingers}.${wait}${end}`;
}

/** How delivering goes, in words, and its tone. */
function deliveryWords(delivery, now) {
  if (!delivery) return { text: '', tone: 'off' };
  const ago = (at) => relativeTime(Date.parse(at), now);
  let text = 'Nothing sent yet';
  let tone = 'off';
  if (delivery.lastFailure) {
    text = `Failing: ${delivery.lastFailure}${delivery.lastFailureAt ? ` (${ago(delivery.lastFailureAt)})` : ''}`;
    tone = 'bad';
  } else if (delivery.lastDeliveredAt) {
    text = `Last delivered ${ago(delivery.lastDeliveredAt)}`;
    tone = 'ok';
  }
  const parts = [text];
  if (delivery.queued) parts.push(`${delivery.queued} waiting to be sent`);
  if (delivery.dropped?.expired) parts.push(`${delivery.dropped.expired} dropped as too old`);
  if (delivery.dropped?.full) parts.push(`${delivery.dropped.full} dropped: too many were waiting`);
  return { text: parts.join(' · '), tone };
}

function where(d) {
  if (d.type === 'ntfy') {
    const server = d.server && d.server !== NTFY ? d.server.replace(/^https?:\/\//, '') : 'ntfy.sh';
    return `${server} · topic ${d.topicHint}${d.tokenSet ? ' · a token is set' : ''}`;
  }
  if (d.type === 'webhook') return `To ${d.host}, signed with its secret`;
  return `Through ${d.host}`;
}

function makeDest() {
  const el = fromTemplate('t-dest');
  const find = () => destinations().find((d) => d.id === el.dataset.key);
  el.querySelector('.dest-send').addEventListener('click', () => find() && sendTest(find().id));
  el.querySelector('.dest-edit').addEventListener('click', () => find() && openForm(find().type, find()));
  el.querySelector('.dest-delete').addEventListener('click', () => find() && openDelete(find()));
  return el;
}

function fillDest(el, d, now, mineId) {
  const q = (s) => el.querySelector(s);
  setText(q('.dest-name'), d.name);
  setText(q('.dest-type'), d.id === mineId ? `${TYPES[d.type]} · this browser` : TYPES[d.type] || d.type);
  setText(q('.dest-where'), where(d));
  setText(q('.dest-rules'), rulesWords(d.rules));
  const delivery = deliveryWords(d.delivery, now);
  setText(q('.dest-word'), delivery.text);
  for (const t of ['ok', 'bad']) toggleClass(q('.dest-state'), t, t === delivery.tone);
  const test = tests.get(d.id) || { text: '', tone: '' };
  setText(q('.dest-test'), test.text);
  for (const t of ['ok', 'bad', 'info']) toggleClass(q('.dest-test'), t, t === test.tone);
  const send = q('.dest-send');
  setAttr(send, 'aria-disabled', test.busy ? 'true' : null);
  show(send.querySelector('.spinner'), Boolean(test.busy));
  setAttr(send, 'aria-label', `Send a test to ${d.name}`);
  setAttr(q('.dest-edit'), 'aria-label', `Edit ${d.name}`);
  setAttr(q('.dest-delete'), 'aria-label', `Delete ${d.name}`);
}

function drawBadge(a, armed) {
  const badge = $('alerts-badge');
  show(badge, Boolean(a));
  if (!a) return;
  const failing = a.destinations.filter((d) => d.delivery?.lastFailure).length;
  let [text, tone, title] = ['Alerts: on', 'ok', 'Alerts go out: see where'];
  if (!a.destinations.length) [text, tone, title] = ['Alerts: not set up', 'neutral', 'No alerts go anywhere yet: set them up'];
  else if (!armed) [text, tone, title] = ['Alerts: off', 'warn', 'Alerts are switched off'];
  else if (failing) [text, tone, title] = [`Alerts: ${failing} failing`, 'bad', 'Some alerts cannot be delivered: see why'];
  setText(badge, text);
  for (const t of ['ok', 'bad', 'warn', 'neutral']) toggleClass(badge, t, t === tone);
  setAttr(badge, 'title', title);
}

function draw() {
  const a = alerts();
  show($('notifications'), Boolean(a));
  const armed = recent('armed', a?.armed ?? settings?.armed);
  drawBadge(a, armed);
  if (!a) return;
  const input = $('alerts-armed');
  if (input.checked !== Boolean(armed)) input.checked = Boolean(armed);
  show($('alerts-off'), armed === false);
  if (!settings) return;
  const list = destinations();
  const now = serverNow();
  const mineId = mine()?.id;
  syncChildren($('dest-list'), list, (d) => d.id, makeDest, (el, d) => fillDest(el, d, now, mineId));
  show($('dest-empty'), list.length === 0);
  setText($('alerts-node-url'), settings.nodeUrl ? `Links in alerts open ${settings.nodeUrl} (NODE_URL in the node's settings).` : '');
  drawPush();
  if (!scrolled && location.hash === '#notifications') $('notifications').scrollIntoView();
  scrolled = true;
}

// ---- This browser: Web Push ----

function isApple() {
  return /iPhone|iPad/.test(navigator.userAgent) || (/Macintosh/.test(navigator.userAgent) && navigator.maxTouchPoints > 1);
}

/** "Chrome on Android", from the user agent. */
function deviceName() {
  const ua = navigator.userAgent;
  const browser = [[/Edg\//, 'Edge'], [/Firefox\/|FxiOS/, 'Firefox'], [/OPR\//, 'Opera'], [/SamsungBrowser/, 'Samsung Internet'],
    [/Chrome\/|CriOS/, 'Chrome'], [/Safari\//, 'Safari']].find(([re]) => re.test(ua));
  const os = isApple() && !/iPhone/.test(ua) ? 'iPad' : [[/iPhone/, 'iPhone'], [/Android/, 'Android'], [/Mac OS X/, 'Mac'],
    [/Windows/, 'Windows'], [/CrOS/, 'ChromeOS'], [/Linux/, 'Linux']].find(([re]) => re.test(ua))?.[1];
  return `${browser ? browser[1] : 'Browser'} on ${os || 'this device'}`;
}

function howToAllow() {
  if (isApple()) return 'To allow them: Settings › Notifications › nvr-node › Allow Notifications; then tap Alert this phone again.';
  if (/Android/.test(navigator.userAgent)) return 'To allow them: tap the icon left of the address › Permissions › Notifications › Allow; then tap Alert this phone again.';
  return 'To allow them: click the icon left of the address › Notifications › Allow; then click Alert this phone again.';
}

/** The node's VAPID key (base64url) as bytes. */
function keyBytes(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  return Uint8Array.from(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, '=')), (c) => c.charCodeAt(0));
}

function drawPush() {
  const secure = window.isSecureContext;
  const https = state.status?.https;
  const d = mine();
  const blocked = canPush() && Notification.permission === 'denied';
  let text = 'One tap, and this phone or computer shows alerts, also with this page closed.';
  if (!secure) text = 'Your phone lets only a secure page (https://) turn on notifications.';
  else if (!canPush() && isApple()) text = 'On iPhone and iPad, a page can show alerts only from the Home Screen: tap Share › Add to Home Screen, open nvr-node from there and come back here. Or use the ntfy app below.';
  else if (!canPush()) text = 'This browser cannot take push alerts. Use the ntfy app below, or another browser.';
  else if (d) text = `This browser gets alerts, as “${d.name}”.`;
  else if (blocked) text = `Notifications are blocked for this page. ${howToAllow()}`;
  setText($('push-state'), text);
  show($('push-insecure'), !secure);
  if (!secure) {
    const link = $('push-https-link');
    const address = https?.port ? `https://${location.hostname}:${https.port}` : '';
    show($('push-https'), Boolean(address));
    show($('push-https-off'), !address);
    show($('push-ca'), https?.certificate === 'own');
    show($('push-ca-steps'), https?.certificate === 'own');
    setAttr(link, 'href', `${address}/#notifications`);
    setText(link, address);
  }
  show($('push-on'), canPush() && !d && Boolean(settings));
  show($('push-test'), Boolean(d));
  $('push-on').disabled = Boolean(push.busy);
  $('push-test').disabled = Boolean(push.busy);
  show($('push-progress'), Boolean(push.busy));
  setText($('push-progress').lastElementChild, push.busy);
  const note = push.note || { text: '', tone: '' };
  setText($('push-msg'), note.text);
  for (const t of ['ok', 'bad']) toggleClass($('push-msg'), t, t === note.tone);
}

async function checkPush() {
  if (!canPush()) return;
  try {
    const registration = await navigator.serviceWorker.getRegistration('/');
    push.subscription = registration ? await registration.pushManager.getSubscription() : null;
  } catch (_) {
    push.subscription = null;
  }
  draw();
}

/** A failure of subscribing, in words. */
function pushFailure(error) {
  if (error.status !== undefined) return `The node did not take this browser: ${error.message}.`;
  if (error.name === 'NotAllowedError') return `Notifications are blocked for this page. ${howToAllow()}`;
  return `This browser's push service did not give a subscription (${error.message || error.name}). Check the connection and try again, or use the ntfy app below.`;
}

async function alertThisPhone() {
  if (push.busy || !settings) return;
  push.busy = 'Turning on alerts…';
  push.note = null;
  draw();
  try {
    const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
    const permission = await Notification.requestPermission();
    if (permission !== 'granted') {
      // Blocked: the line above says how to allow them.
      if (permission === 'default') push.note = { text: 'Notifications were not allowed: tap Alert this phone again and choose Allow.', tone: 'bad' };
      return;
    }
    await navigator.serviceWorker.ready;
    const key = keyBytes(settings.vapidPublicKey);
    let subscription = await registration.pushManager.getSubscription();
    const kept = subscription?.options?.applicationServerKey;
    // Made for another key (the node's was made anew): it cannot be used.
    if (subscription && kept && new Uint8Array(kept).join() !== key.join()) {
      await subscription.unsubscribe();
      subscription = null;
    }
    // Without its push service (no internet), a browser may wait for ever.
    subscription = subscription || (await Promise.race([
      registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }),
      new Promise((_, reject) => setTimeout(() => reject(new Error('it did not answer in 30 s')), 30000)),
    ]));
    push.subscription = subscription;
    const made = await api('POST', '/api/alerts/destinations', { name: deviceName(), type: 'webpush', subscription: subscription.toJSON() });
    remember(made.id);
    push.note = { text: 'Done. Send a test to see how an alert looks here.', tone: 'ok' };
    await load();
  } catch (error) {
    push.note = { text: pushFailure(error), tone: 'bad' };
  } finally {
    push.busy = '';
    draw();
    refreshSoon();
  }
}

async function testThisPhone() {
  const d = mine();
  if (!d || push.busy) return;
  push.busy = 'Sending a test…';
  push.note = null;
  draw();
  push.note = await sendTest(d.id);
  push.busy = '';
  draw();
}

// ---- Tests, armed ----

/** Sends a test to destination `id`; its result is shown there, and returned. */
async function sendTest(id) {
  if (tests.get(id)?.busy) return tests.get(id);
  tests.set(id, { text: 'Sending a test…', tone: 'info', busy: true });
  draw();
  let result;
  try {
    const answer = await api('POST', `/api/alerts/destinations/${id}/test`, undefined, { timeoutMs: 30000 });
    const at = clockTime(Date.now(), true);
    const pushed = destinations().find((d) => d.id === id)?.type === 'webpush';
    result = answer.delivered
      ? { text: pushed ? `Test delivered at ${at}: it shows on the device in a moment.` : `Test delivered at ${at}.`, tone: 'ok' }
      : { text: `Test not delivered: ${answer.message || 'the node did not say why'}.`, tone: 'bad' };
  } catch (error) {
    result = { text: `Could not send a test: ${error.message}.`, tone: 'bad' };
  }
  tests.set(id, result);
  draw();
  refreshSoon();
  return result;
}

async function setArmed(on) {
  changed.set('armed', { value: on, at: Date.now() });
  draw();
  try {
    settings = await api('PATCH', '/api/alerts', { armed: on });
    say('');
  } catch (error) {
    changed.delete('armed');
    say(`Could not switch alerts ${on ? 'on' : 'off'}: ${error.message}`);
  }
  draw();
  refreshSoon();
}

// ---- Add and edit ----

function check(value, text, checked) {
  const label = document.createElement('label');
  label.className = 'check';
  const input = document.createElement('input');
  input.type = 'checkbox';
  input.value = value;
  input.checked = checked;
  const span = document.createElement('span');
  span.textContent = text;
  label.append(input, span);
  return label;
}

const ticked = (el) => [...el.querySelectorAll('input:checked')].map((i) => i.value);

function fillRules(rules) {
  const cameras = [...state.cameras.values()];
  $('dest-allcams').checked = rules.cameras === null;
  $('dest-camlist').replaceChildren(...cameras.map((c) => check(c.id, c.name, Boolean(rules.cameras?.includes(c.id)))));
  for (const input of $('dest-kinds').querySelectorAll('input')) input.checked = rules.kinds.includes(input.value);
  const zones = new Set(rules.zones || []);
  for (const c of cameras) for (const z of c.zones || []) zones.add(z.name);
  const names = [...zones].sort((a, b) => a.localeCompare(b));
  show($('dest-zones'), names.length > 0);
  $('dest-anywhere').checked = rules.zones === null;
  $('dest-zonelist').replaceChildren(...names.map((n) => check(n, n, Boolean(rules.zones?.includes(n)))));
  const select = $('dest-cooldown');
  const value = String(rules.cooldownSeconds);
  if (![...select.options].some((o) => o.value === value)) select.add(new Option(duration(rules.cooldownSeconds * 1000), value));
  select.value = value;
  $('dest-atEnd').checked = rules.atEnd;
  $('dest-loitering').checked = rules.loitering === true;
  folds();
}

/** The lists of cameras and zones show only when not all and not anywhere. */
function folds() {
  show($('dest-camlist'), !$('dest-allcams').checked);
  show($('dest-zonelist'), !$('dest-anywhere').checked);
}

function readRules() {
  const anyZone = $('dest-anywhere').checked || $('dest-zones').hidden;
  return {
    cameras: $('dest-allcams').checked ? null : ticked($('dest-camlist')),
    kinds: ticked($('dest-kinds')),
    zones: anyZone ? null : ticked($('dest-zonelist')),
    cooldownSeconds: Number($('dest-cooldown').value),
    atEnd: $('dest-atEnd').checked,
    loitering: $('dest-loitering').checked,
  };
}

/** A topic hard to guess: on ntfy.sh, whoever knows a topic reads it. */
function newTopic() {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return `nvr-${[...bytes].map((b) => 'abcdefghijkmnpqrstuvwxyz23456789'[b % 32]).join('')}`;
}

function clearErrors() {
  for (const [id] of Object.values(FIELDS)) {
    $(id).removeAttribute('aria-invalid');
    show($(`${id}-error`), false);
  }
  show($('dest-error'), false);
}

/** Shows the node's 400 at the field it names ("server must …" under Server), else under the form. */
function showError(message) {
  const match = /^(rules\.\w+|\w+)(\[\d+\])?/.exec(message);
  const field = match && FIELDS[match[1]];
  if (!field || $(field[0]).closest('[hidden]')) {
    setText($('dest-error'), sentence(message));
    show($('dest-error'), true);
    return;
  }
  const [id, label] = field;
  setText($(`${id}-error`), `${label}${message.slice(match[0].length)}`);
  show($(`${id}-error`), true);
  $(id).setAttribute('aria-invalid', 'true');
  $(id).focus();
}

function openForm(type, d = null) {
  editing = { type, d };
  clearErrors();
  const form = $('dest-form');
  const adding = !d;
  setText($('dest-heading'), d ? `Edit “${d.name}”` : type === 'ntfy' ? 'Add ntfy' : 'Add a webhook');
  for (const el of form.querySelectorAll('[data-type]')) show(el, el.dataset.type === type);
  $('dest-name').value = d ? d.name : '';
  setAttr($('dest-name'), 'placeholder', type === 'ntfy' ? 'My phone (ntfy)' : 'Home Assistant');
  $('dest-server').value = d?.server && d.server !== NTFY ? d.server : '';
  $('dest-topic').value = adding ? newTopic() : '';
  setAttr($('dest-topic'), 'placeholder', d?.topicHint ? `${d.topicHint} (kept)` : null);
  setText($('dest-topic-hint'), adding
    ? 'Subscribe to this topic in the ntfy app. Whoever knows a topic on ntfy.sh can read it: keep it hard to guess.'
    : `Blank keeps the topic (${d?.topicHint || ''}).`);
  $('dest-token').value = '';
  $('dest-notoken').checked = false;
  show($('dest-notoken-label'), Boolean(d?.tokenSet));
  setText($('dest-token-hint'), d?.tokenSet ? 'A token is set. Type a new one to change it.' : 'Only for a server that asks for one.');
  $('dest-url').value = '';
  setAttr($('dest-url'), 'placeholder', adding ? 'https://homeassistant.local:8123/api/webhook/…' : 'A new URL, or blank');
  setText($('dest-url-hint'), adding
    ? 'The node POSTs each alert there as JSON, signed with a secret it shows you once.'
    : `Blank keeps the URL (to ${d?.host}). It is never shown: it may hold a secret.`);
  $('dest-rotate').checked = false;
  show($('dest-rotate-label'), !adding);
  fillRules(d ? d.rules : DEFAULT_RULES);
  show($('dest-progress'), false);
  $('dest-save').disabled = false;
  $('dest').showModal();
  $('dest-name').focus();
}

async function save(e) {
  e.preventDefault();
  if (!editing || $('dest-save').disabled) return;
  clearErrors();
  const { type, d } = editing;
  const value = (id) => $(id).value.trim();
  const rules = readRules();
  if (rules.cameras && !rules.cameras.length) return showError('rules.cameras must name one camera at least, or tick All cameras');
  const body = { rules };
  if (!d || value('dest-name') !== d.name) body.name = value('dest-name');
  if (!d) body.type = type;
  if (type === 'ntfy') {
    const server = value('dest-server');
    if (server !== (d?.server && d.server !== NTFY ? d.server : '')) body.server = server || NTFY;
    if (value('dest-topic') || !d) body.topic = value('dest-topic');
    if ($('dest-notoken').checked) body.token = null;
    else if ($('dest-token').value) body.token = $('dest-token').value;
  } else if (type === 'webhook') {
    if (value('dest-url') || !d) body.url = value('dest-url');
    if ($('dest-rotate').checked) body.rotateSecret = true;
  }
  $('dest-save').disabled = true;
  show($('dest-progress'), true);
  try {
    const answer = d
      ? await api('PATCH', `/api/alerts/destinations/${d.id}`, body)
      : await api('POST', '/api/alerts/destinations', body);
    $('dest').close();
    tests.delete(answer.id);
    if (answer.secret) showSecret(answer.secret);
    await load();
    refreshSoon();
  } catch (error) {
    showError(error.message);
  } finally {
    $('dest-save').disabled = false;
    show($('dest-progress'), false);
  }
  return undefined;
}

// ---- A webhook's secret, shown once ----

function showSecret(secret) {
  setText($('secret-value'), secret);
  setText($('secret-copied'), '');
  $('secret').showModal();
  $('secret-copy').focus();
}

async function copySecret() {
  const text = $('secret-value').textContent;
  let done = false;
  try {
    await navigator.clipboard.writeText(text);
    done = true;
  } catch (_) {
    // No clipboard API on a page that is not secure: copy the selection.
    const range = document.createRange();
    range.selectNodeContents($('secret-value'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    done = document.execCommand('copy');
  }
  setText($('secret-copied'), done ? 'Copied.' : 'Select it and copy it by hand.');
}

// ---- Delete ----

function openDelete(d) {
  deleting = d;
  setText($('dest-confirm-title'), `Delete “${d.name}”?`);
  show($('dest-confirm-error'), false);
  $('dest-confirm-ok').disabled = false;
  $('dest-confirm').showModal();
  $('dest-confirm-cancel').focus();
}

async function confirmDelete() {
  const d = deleting;
  if (!d) return;
  $('dest-confirm-ok').disabled = true;
  const wasMine = mine()?.id === d.id;
  try {
    await api('DELETE', `/api/alerts/destinations/${d.id}`);
  } catch (error) {
    if (error.status !== 404) {
      setText($('dest-confirm-error'), `Could not delete it: ${error.message}`);
      show($('dest-confirm-error'), true);
      $('dest-confirm-ok').disabled = false;
      return;
    }
  }
  $('dest-confirm').close();
  tests.delete(d.id);
  if (wasMine) {
    remember(null);
    push.note = null;
    await push.subscription?.unsubscribe().catch(() => {});
    push.subscription = null;
  }
  await load();
  refreshSoon();
}

// ---- Snooze, from a camera's tile or card ----

/** When camera `id`'s alerts are snoozed until (ms), or 0. */
function snoozedUntil(id) {
  const listed = alerts()?.snoozed?.find((s) => s.cameraId === id);
  const until = recent(id, listed ? Date.parse(listed.until) : 0);
  return until > serverNow() ? until : 0;
}

/** "14:30", "tomorrow 7:00", "Nov 24, 7:00". */
function untilWords(ms) {
  const day = (t) => {
    const d = new Date(t);
    return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  };
  const days = Math.round((day(ms) - day(serverNow())) / 86400000);
  // "5:35 PM" on one line.
  const time = clockTime(ms).replace(/\s/g, '\u00a0');
  if (days === 0) return time;
  return days === 1 ? `tomorrow ${time}` : `${dayName(ms)}, ${time}`;
}

/** The next 7:00 of this device's day. */
function morning() {
  const now = new Date(serverNow());
  return new Date(now.getFullYear(), now.getMonth(), now.getDate() + (now.getHours() >= 7 ? 1 : 0), 7).getTime();
}

/** The bell and the "snoozed until" line of a tile or card (`el`) of `camera`. */
export function fillSnooze(el, camera) {
  const a = alerts();
  const until = snoozedUntil(camera.id);
  const bell = el.querySelector('.bell');
  const name = camera.name || 'Unnamed camera';
  bell.dataset.camera = camera.id;
  show(bell, Boolean(a && (a.destinations.length || until)));
  setIcon(bell.querySelector('svg'), until ? 'i-bell-off' : 'i-bell');
  toggleClass(bell, 'on', until);
  setAttr(bell, 'aria-label', until ? `Alerts of ${name} snoozed: snooze for another time` : `Snooze alerts of ${name}`);
  setAttr(bell, 'title', until ? 'Alerts snoozed' : 'Snooze alerts');
  const line = el.querySelector('.snoozed');
  show(line, Boolean(until));
  if (until) setText(line.firstElementChild, `Alerts snoozed until ${untilWords(until)}`);
  line.lastElementChild.dataset.camera = camera.id;
  setAttr(line.lastElementChild, 'aria-label', `Wake alerts of ${name}`);
}

function openSnooze(id) {
  const camera = state.cameras.get(id);
  if (!camera) return;
  snoozing = id;
  setText($('snooze-title'), `Snooze alerts of ${camera.name}`);
  setText($('snooze-choices').querySelector('[data-minutes="morning"]'), `Until ${untilWords(morning())}`);
  show($('snooze-error'), false);
  $('snooze').showModal();
}

async function snooze(minutes) {
  const id = snoozing;
  const m = minutes === 'morning' ? Math.max(1, Math.ceil((morning() - serverNow()) / 60000)) : Number(minutes);
  try {
    const answer = await api('POST', `/api/cameras/${id}/snooze`, { minutes: m });
    changed.set(id, { value: Date.parse(answer.until), at: Date.now() });
    $('snooze').close();
    notify();
    refreshSoon();
  } catch (error) {
    setText($('snooze-error'), `Could not snooze: ${error.message}`);
    show($('snooze-error'), true);
  }
}

async function wake(id, button) {
  button.disabled = true;
  try {
    await api('DELETE', `/api/cameras/${id}/snooze`);
    changed.set(id, { value: 0, at: Date.now() });
    notify();
    refreshSoon();
  } catch (error) {
    say(`Could not wake the alerts of ${cameraName(id)}: ${error.message}`);
  } finally {
    button.disabled = false;
  }
}

// ----

export function renderAlerts() {
  const a = alerts();
  const shown = JSON.stringify((a?.destinations || []).map((d) => [d.id, d.name]));
  if (a && shown !== readFor) {
    readFor = shown;
    load();
  }
  draw();
}

export function setUpAlerts() {
  $('alerts-armed').addEventListener('change', (e) => setArmed(e.target.checked));
  $('push-on').addEventListener('click', alertThisPhone);
  $('push-test').addEventListener('click', testThisPhone);
  $('dest-add-ntfy').addEventListener('click', () => openForm('ntfy'));
  $('dest-add-webhook').addEventListener('click', () => openForm('webhook'));
  $('dest-form').addEventListener('submit', save);
  $('dest-cancel').addEventListener('click', () => $('dest').close());
  $('dest-allcams').addEventListener('change', folds);
  $('dest-anywhere').addEventListener('change', folds);
  $('secret-copy').addEventListener('click', copySecret);
  $('secret-done').addEventListener('click', () => $('secret').close());
  // Gone from the page once closed: it is not shown again.
  $('secret').addEventListener('close', () => setText($('secret-value'), ''));
  $('dest-confirm-cancel').addEventListener('click', () => $('dest-confirm').close());
  $('dest-confirm-ok').addEventListener('click', confirmDelete);
  $('snooze-cancel').addEventListener('click', () => $('snooze').close());
  $('snooze-choices').addEventListener('click', (e) => {
    const choice = e.target.closest('[data-minutes]');
    if (choice) snooze(choice.dataset.minutes);
  });
  // The bells and Wake buttons of the tiles and cards.
  document.addEventListener('click', (e) => {
    const button = e.target.closest('.bell, .wake');
    if (!button?.dataset.camera) return;
    if (button.classList.contains('bell')) openSnooze(button.dataset.camera);
    else wake(button.dataset.camera, button);
  });
  if (canPush()) {
    // A click on an alert, with this page open: sw.js asks it to show the alert's event.
    navigator.serviceWorker.addEventListener('message', (e) => {
      const url = typeof e.data?.open === 'string' ? new URL(e.data.open, location.href) : null;
      if (url?.origin === location.origin) go(url.pathname + url.search + url.hash);
    });
    checkPush();
  }
  // "2 min ago" moves on between refreshes.
  setInterval(() => {
    if (!document.hidden) draw();
  }, 15000);
}

// The Notifications panel in Debian's headless Chromium (playwright-core,
// launched as browser.mjs says), at a phone's size, against a node that
// tests/alerts_ui.rs started with two cameras (Front door, with a zone
// Porch, and Back yard), an event of Front door with a clip, and one ntfy
// destination; its far ends (an ntfy stand-in and webhook receiver, and
// web-push-testing) listen on a LAN of the test's own.
//
// Usage:
//   node tests/e2e/alerts.mjs --url <the node's https:// URL, by its host name> --api <its http:// URL>
//        --ca <its certificate authority, PEM> --receivers <http://HOST:PORT> --dead <URL nobody answers>
//        --subscription <PushSubscription JSON of web-push-testing> --event <event id>
//        --lan-address <another address of the node>
//        [--screenshots DIR] [--timeout-ms N]
//
// The page is the node's over HTTPS, with the certificate the node made
// itself: as a phone would, Chromium trusts the node's authority (--ca,
// from GET /api/tls/ca.crt), put in its NSS store (certutil, Debian's
// libnss3-tools) in a home of its own, and reaches the node by the host name
// its certificate names (resolved to 127.0.0.1).
//
// Chromium's own push service (FCM) cannot be reached here, so the page's
// PushManager.subscribe is replaced by one that gives the web-push-testing
// subscription (or fails, as a push service that cannot be reached does);
// everything else is the browser's and the node's own. Steps, each read back
// from the node:
//   panel         the pre-made ntfy destination in words (server, topic's
//                 first letters, "a token is set", its rules, "Nothing sent
//                 yet"); the header's badge; alerts switched off and on
//   ntfy-refused  a loopback server: the node's own 400 message under the
//                 server field, nothing made; no kind ticked: the node's message
//                 under the kinds; then made, with a token that is never shown
//   webhook       made: its secret (64 hex) shown once in a dialog, with Copy and
//                 how receivers check it; gone from the page once closed
//   test-sent     Send a test: "Test delivered" at the webhook within seconds, and
//                 "Last delivered"; at a dead address: the failure in words, at the
//                 destination and in the header's badge
//   rules         edited (one camera, no wait, at the end) → the node has them, and
//                 the words say so; then "Only when someone lingers": the node
//                 has rules.loitering, the words say it, and the form again
//   delete        the confirmation names it; Cancel keeps it, Delete removes it
//   snooze        the bell of a tile: 1 h → "Alerts snoozed until <time>" on the
//                 tile and the card, as the node's status says; Wake ends it
//   push-refused  Alert this phone with notifications blocked: how to allow them;
//                 with a push service that fails: words say so; nothing is made,
//                 and sw.js is registered with scope /
//   push-on       Alert this phone: a webpush destination named after the browser,
//                 "This browser gets alerts", and its test delivered
//   push-shown    a push delivered through DevTools (ServiceWorker.deliverPushMessage)
//                 with the node's payload for the event: a notification with its
//                 title, body, tag, picture and a Snooze 1 h button
//   push-click    a click on it in the service worker: the page's address ends with
//                 /review?event=<id> and the event's clip is open and playing (reviewed
//                 on the node); the address opened anew shows it too, and so does the
//                 old form /#event-<id>
//   push-snooze   its Snooze button: the node snoozes the camera for 60 min
//   insecure      the page at the node's LAN address (not a secure context): why
//                 this phone cannot be alerted, and that the node's HTTPS is off;
//                 with status.https (added to the node's status here, as a node
//                 serving HTTPS will give it): the https:// address to open, the
//                 node's certificate to download and how to install it
// It prints one JSON line, {"ok":true,"secret":"…",...} or {"ok":false,"step":...,
// "error":...}, and exits 0 or 1 within --timeout-ms (default 120000).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`alerts: ${message}\n`);
  process.stderr.write(
    'usage: node tests/e2e/alerts.mjs --url <node URL> --receivers <URL> --dead <URL> --subscription <JSON> ' +
      '--event <id> --lan-address <address> [--screenshots DIR] [--timeout-ms N]\n',
  );
  process.exit(2);
}

const names = {
  '--url': 'url',
  '--api': 'api',
  '--ca': 'ca',
  '--receivers': 'receivers',
  '--dead': 'dead',
  '--subscription': 'subscription',
  '--event': 'event',
  '--lan-address': 'lanAddress',
  '--screenshots': 'screenshots',
  '--timeout-ms': 'timeoutMs',
};
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 120000 }, usage);
for (const need of ['url', 'api', 'ca', 'receivers', 'dead', 'subscription', 'event', 'lanAddress']) if (!opts[need]) usage(`--${need} is required`);
const subscription = JSON.parse(opts.subscription);

let step = 'start';
const errors = [];
const browser = prepareBrowser('alerts');
const WAIT = { timeout: 20000, polling: 50 };

async function node(method, path, body) {
  const init = { method, headers: body ? { 'Content-Type': 'application/json' } : {} };
  if (body) init.body = JSON.stringify(body);
  const response = await fetch(`${opts.api}${path}`, init);
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}
const settings = async () => (await node('GET', '/api/alerts')).json;

function check(ok, message) {
  if (!ok) throw new Error(message);
}

async function until(what, test, ms = 20000) {
  const started = Date.now();
  for (;;) {
    const got = await test();
    if (got) return got;
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A home for Chromium whose NSS store trusts the node's authority, as a phone it was installed on. */
function trustingHome() {
  const home = path.join(browser.userDataDir, 'home');
  const store = `sql:${path.join(home, '.pki/nssdb')}`;
  fs.mkdirSync(path.join(home, '.pki/nssdb'), { recursive: true });
  const certutil = (args) => {
    try {
      execFileSync('certutil', ['-d', store, ...args], { stdio: 'pipe' });
    } catch (e) {
      throw new Error(`certutil ${args.join(' ')} (Debian's libnss3-tools): ${e.stderr || e.message}`);
    }
  };
  certutil(['-N', '--empty-password']);
  certutil(['-A', '-t', 'C,,', '-n', 'nvr-node', '-i', opts.ca]);
  return home;
}

async function run() {
  const home = trustingHome();
  await launchBrowser(browser, {
    timeout: 15000,
    viewport: { width: 390, height: 844 },
    reach: opts.lanAddress,
    name: new URL(opts.url).hostname,
    env: { ...process.env, HOME: home },
  });
  const { page, context } = browser;
  page.on('pageerror', (e) => errors.push(String(e)));
  await context.grantPermissions(['notifications', 'clipboard-read', 'clipboard-write'], { origin: opts.url });
  // The push service: web-push-testing's subscription, or a failure while window.failPush.
  await context.addInitScript((json) => {
    if (!window.PushManager) return;
    const made = () => ({
      endpoint: json.endpoint,
      options: { applicationServerKey: null, userVisibleOnly: true },
      toJSON: () => json,
      unsubscribe: async () => localStorage.removeItem('test-push') || true,
    });
    PushManager.prototype.getSubscription = async () => (localStorage.getItem('test-push') ? made() : null);
    PushManager.prototype.subscribe = async (options) => {
      if (window.failPush) throw new DOMException('Registration failed - push service error', 'AbortError');
      if (!options.userVisibleOnly || options.applicationServerKey.length !== 65) throw new TypeError('bad options');
      localStorage.setItem('test-push', '1');
      return made();
    };
  }, subscription);
  const text = (selector) => page.locator(selector).first().innerText();
  const dest = (name) => page.locator('#dest-list .dest').filter({ has: page.locator('.dest-name', { hasText: new RegExp(`^${name}$`) }) });
  const words = async (name) => (await dest(name).innerText()).replace(/\s+/g, ' ');
  const destOf = async (name) => (await settings()).destinations.find((d) => d.name === name);
  const shot = async (name) => opts.screenshots && page.screenshot({ path: `${opts.screenshots}/alerts-${name}.png` });
  const cameras = (await node('GET', '/api/cameras')).json;
  const [door, yard] = ['Front door', 'Back yard'].map((n) => cameras.find((c) => c.name === n).id);

  step = 'panel';
  await page.goto(`${opts.url}/#notifications`);
  await dest('Porch phone').waitFor(WAIT);
  const pre = await destOf('Porch phone');
  const porch = await words('Porch phone');
  const host = new URL(opts.receivers).host;
  for (const want of [
    'ntfy', `${host} · topic doo… · a token is set`,
    'Person at Front door, in Porch. Then none from that camera for 5 min. Again when it ends, with the clip, if it went somewhere new.',
    'Nothing sent yet', 'Send a test', 'Edit', 'Delete',
  ]) check(porch.includes(want), `the pre-made ntfy shows "${want}": ${porch}`);
  check(pre.tokenSet && !porch.includes('tk_'), 'its token is not shown');
  check(await page.isChecked('#alerts-armed'), 'the switch says armed, as the node');
  check((await text('#alerts-badge')) === 'Alerts: on', `badge: ${await text('#alerts-badge')}`);
  await page.click('#alerts-armed');
  await until('the node is disarmed', async () => (await settings()).armed === false);
  await page.locator('#alerts-off').waitFor(WAIT);
  await page.waitForFunction(() => document.getElementById('alerts-badge').textContent === 'Alerts: off', null, WAIT);
  await page.click('#alerts-armed');
  await until('the node is armed again', async () => (await settings()).armed === true);
  await page.locator('#alerts-off').waitFor({ state: 'hidden', ...WAIT });

  step = 'ntfy-refused';
  await page.click('#dest-add-ntfy');
  await page.fill('#dest-name', 'Loop');
  const topic = await page.inputValue('#dest-topic');
  check(/^nvr-[a-z2-9]{10}$/.test(topic), `a topic hard to guess is offered: ${topic}`);
  await page.fill('#dest-server', 'http://127.0.0.1:2586');
  const refused = await node('POST', '/api/alerts/destinations', { name: 'Loop', type: 'ntfy', server: 'http://127.0.0.1:2586', topic });
  check(refused.status === 400 && refused.json.error.startsWith('server must not point at a loopback address'), `the node refuses it: ${JSON.stringify(refused)}`);
  await page.click('#dest-save');
  await page.locator('#dest-server-error').waitFor(WAIT);
  const serverError = await text('#dest-server-error');
  check(serverError === `Server${refused.json.error.slice('server'.length)}`, `the node's message at the server field: ${serverError}`);
  check(await page.getAttribute('#dest-server', 'aria-invalid') === 'true', 'the server field is marked');
  check(await page.evaluate(() => document.activeElement.id) === 'dest-server', 'the server field has the focus');
  check((await settings()).destinations.length === 1, 'nothing made');
  await page.fill('#dest-server', opts.receivers);
  for (const box of await page.locator('#dest-kinds input').all()) await box.uncheck();
  await page.click('#dest-save');
  await page.locator('#dest-kinds-error').waitFor(WAIT);
  const kindsError = await text('#dest-kinds-error');
  check(kindsError === 'Kinds of event must name at least one kind', `the node's message at the kinds: ${kindsError}`);
  check(await page.isHidden('#dest-server-error'), 'the server error is gone');
  check((await settings()).destinations.length === 1, 'still nothing made');
  await page.check('#dest-kinds input[value="person"]');
  await page.fill('#dest-token', 'tk_from_the_form');
  await page.click('#dest-save');
  await dest('Loop').waitFor(WAIT);
  const loop = await destOf('Loop');
  check(loop.type === 'ntfy' && loop.tokenSet && loop.host === host && loop.rules.kinds.join() === 'person', `made: ${JSON.stringify(loop)}`);
  check((await words('Loop')).includes('a token is set'), await words('Loop'));
  await dest('Loop').locator('.dest-edit').click();
  check(await page.inputValue('#dest-token') === '', 'the token is never filled in');
  check((await text('#dest-token-hint')).startsWith('A token is set'), await text('#dest-token-hint'));
  check(await page.isVisible('#dest-notoken'), 'a way to remove it');
  await shot('edit-ntfy');
  await page.click('#dest-cancel');
  check(!(await page.content()).includes('tk_from_the_form'), 'no token in the page');

  step = 'webhook';
  await page.click('#dest-add-webhook');
  await page.fill('#dest-name', 'Hook');
  await page.fill('#dest-url', `${opts.receivers}/hook/ui`);
  await page.click('#dest-save');
  await page.locator('#secret').waitFor(WAIT);
  const secret = await text('#secret-value');
  check(/^[0-9a-f]{64}$/.test(secret), `a secret is shown: ${secret}`);
  const dialog = (await text('#secret')).replace(/\s+/g, ' ');
  for (const want of ['it will not be shown again', 'HMAC-SHA256 of the body with this secret, hex, in X-Nvr-Signature as sha256=…', 'X-Nvr-Alert-Id is the same for a repeat']) {
    check(dialog.includes(want), `the dialog says "${want}": ${dialog}`);
  }
  await page.click('#secret-copy');
  await page.waitForFunction(() => document.getElementById('secret-copied').textContent === 'Copied.', null, WAIT);
  check(await page.evaluate(() => navigator.clipboard.readText()) === secret, 'copied');
  await shot('secret');
  await page.click('#secret-done');
  await dest('Hook').waitFor(WAIT);
  check(!(await page.content()).includes(secret), 'the secret is gone from the page');
  check(!JSON.stringify(await settings()).includes(secret), 'nor does the node show it');
  check((await words('Hook')).includes(`To ${host}, signed with its secret`), await words('Hook'));

  step = 'test-sent';
  const sentAt = Date.now();
  await dest('Hook').locator('.dest-send').click();
  await until('the test is shown delivered', async () => (await words('Hook')).includes('Test delivered at'));
  const testMs = Date.now() - sentAt;
  await until('"Last delivered" from the status', async () => /Last delivered (just now|\d+ s ago)/.test(await words('Hook')));
  await page.click('#dest-add-webhook');
  await page.fill('#dest-name', 'Dead');
  await page.fill('#dest-url', opts.dead);
  await page.click('#dest-save');
  await page.locator('#secret').waitFor(WAIT);
  await page.click('#secret-done');
  await dest('Dead').waitFor(WAIT);
  await dest('Dead').locator('.dest-send').click();
  const deadHost = new URL(opts.dead).hostname;
  const failed = await until('the failure in words', async () => {
    const w = await words('Dead');
    return /Test not delivered: .+\./.test(w) && w;
  });
  check(failed.includes(`Test not delivered: no answer from ${deadHost}: Connection refused`), failed);
  await until('"Failing: …" from the status', async () => (await words('Dead')).includes(`Failing: no answer from ${deadHost}: Connection refused`));
  await page.waitForFunction(() => document.getElementById('alerts-badge').textContent === 'Alerts: 1 failing', null, WAIT);
  await page.locator('#notifications').scrollIntoViewIfNeeded();
  await shot('list');

  step = 'rules';
  await dest('Hook').locator('.dest-edit').click();
  check(await page.isChecked('#dest-allcams'), 'all cameras, by default');
  check(await page.isHidden('#dest-camlist'), 'no list of cameras then');
  check(!(await page.isChecked('#dest-kinds input[value="motion"]')), 'motion is off by default');
  check(await page.inputValue('#dest-url') === '', 'the URL is not shown');
  await page.uncheck('#dest-allcams');
  await page.locator('#dest-camlist label', { hasText: 'Back yard' }).click();
  await page.check('#dest-kinds input[value="motion"]');
  await page.selectOption('#dest-cooldown', '0');
  await page.check('#dest-atEnd');
  check(await page.isVisible('#dest-zones'), 'the zones the cameras have are offered');
  await page.locator('#dest-zones').scrollIntoViewIfNeeded();
  await shot('rules');
  await page.click('#dest-save');
  const rules = await until('the node has the rules', async () => {
    const r = (await destOf('Hook')).rules;
    return r.cooldownSeconds === 0 && r;
  });
  check(JSON.stringify(rules.cameras) === JSON.stringify([yard]) && rules.atEnd && rules.kinds.includes('motion') && rules.zones === null, JSON.stringify(rules));
  await until('the words follow', async () => (await words('Hook')).includes('at Back yard. Every event alerts. Again when it ends'));
  check((await words('Hook')).includes('any motion'), await words('Hook'));
  // Only when someone lingers in a zone past its loiterSeconds.
  await dest('Hook').locator('.dest-edit').click();
  check(!(await page.isChecked('#dest-loitering')), 'only loitering, before it was chosen');
  await page.check('#dest-loitering');
  await page.locator('#dest-loitering').scrollIntoViewIfNeeded();
  await shot('rules-loitering');
  await page.click('#dest-save');
  await until('the node has loitering', async () => (await destOf('Hook')).rules.loitering === true);
  await until('the words say it', async () => (await words('Hook')).includes('only when someone lingers'));
  await dest('Hook').locator('.dest-edit').click();
  check(await page.isChecked('#dest-loitering'), 'the form does not show loitering again');
  await page.click('#dest-cancel');

  step = 'delete';
  await dest('Dead').locator('.dest-delete').click();
  check((await text('#dest-confirm-title')) === 'Delete “Dead”?', await text('#dest-confirm-title'));
  await page.click('#dest-confirm-cancel');
  check(Boolean(await destOf('Dead')), 'Cancel keeps it');
  await dest('Dead').locator('.dest-delete').click();
  await page.click('#dest-confirm-ok');
  await dest('Dead').waitFor({ state: 'detached', ...WAIT });
  check(!(await destOf('Dead')), 'Delete removes it on the node');

  step = 'snooze';
  const tile = page.locator(`#grid .tile[data-id="${door}"]`);
  const card = page.locator(`#camera-${door}`);
  // The tile's bell in the Live view, the card's under Settings.
  const tab = async (name) => {
    await page.click(`.tabs a[data-view="${name}"]`);
    await page.locator(`#view-${name}`).waitFor(WAIT);
  };
  await tab('live');
  await tile.locator('.bell').click();
  check((await text('#snooze-title')) === 'Snooze alerts of Front door', await text('#snooze-title'));
  check(/^Until (tomorrow )?\d/.test(await text('#snooze-choices [data-minutes="morning"]')), await text('#snooze-choices [data-minutes="morning"]'));
  await shot('snooze');
  await page.click('#snooze-choices [data-minutes="60"]');
  await tile.locator('.snoozed').waitFor(WAIT);
  const snoozed = (await node('GET', '/api/status')).json.alerts.snoozed;
  check(snoozed.length === 1 && snoozed[0].cameraId === door, JSON.stringify(snoozed));
  const left = Date.parse(snoozed[0].until) - Date.now();
  check(left > 58 * 60000 && left <= 60 * 60000, `snoozed for an hour: ${left} ms`);
  // The time as this browser writes it; spaces of any kind alike.
  const spaced = (t) => t.replace(/\s+/g, ' ');
  const time = spaced(await page.evaluate((at) => new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' }).format(new Date(at)), snoozed[0].until));
  const line = spaced(await tile.locator('.snoozed').innerText());
  check(line.startsWith('Alerts snoozed until') && line.includes(time) && line.includes('Wake'), `the tile says so: ${line}`);
  check(await tile.locator('.bell').getAttribute('aria-label') === 'Alerts of Front door snoozed: snooze for another time', 'the bell says so');
  await tile.scrollIntoViewIfNeeded();
  await shot('snoozed-tile');
  await tab('settings');
  check(spaced(await card.locator('.snoozed').innerText()).includes(time), 'the card too');
  await card.locator('.wake').click();
  await card.locator('.snoozed').waitFor({ state: 'hidden', ...WAIT });
  await until('the node woke it', async () => (await node('GET', '/api/status')).json.alerts.snoozed.length === 0);

  step = 'push-refused';
  const before = (await settings()).destinations.length;
  await context.clearPermissions();
  await page.locator('#push-on').scrollIntoViewIfNeeded();
  check((await text('#push-on')) === 'Alert this phone', await text('#push-on'));
  await page.click('#push-on');
  await page.waitForFunction(() => document.getElementById('push-state').textContent.startsWith('Notifications are blocked for this page.'), null, WAIT);
  check((await text('#push-state')).includes('To allow them: click the icon left of the address › Notifications › Allow'), await text('#push-state'));
  check(await page.isVisible('#push-on'), 'Alert this phone, once they are allowed');
  await context.grantPermissions(['notifications', 'clipboard-read', 'clipboard-write'], { origin: opts.url });
  await page.evaluate(() => {
    window.failPush = true;
  });
  await page.click('#push-on');
  await page.waitForFunction(() => document.getElementById('push-msg').textContent !== '', null, WAIT);
  const pushError = await text('#push-msg');
  check(pushError.startsWith("This browser's push service did not give a subscription (Registration failed - push service error)."), pushError);
  check((await settings()).destinations.length === before, 'nothing made');
  const registered = await page.evaluate(async () => {
    const r = await navigator.serviceWorker.getRegistration('/');
    return r && { scope: r.scope, script: r.active?.scriptURL };
  });
  check(registered?.scope === `${opts.url}/` && registered.script === `${opts.url}/sw.js`, `sw.js is registered: ${JSON.stringify(registered)}`);

  step = 'push-on';
  const cdp = await context.newCDPSession(page);
  const registrations = new Map();
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => e.registrations.forEach((r) => registrations.set(r.scopeURL, r.registrationId)));
  await cdp.send('ServiceWorker.enable');
  await page.evaluate(() => {
    window.failPush = false;
  });
  await page.click('#push-on');
  await page.waitForFunction(() => document.getElementById('push-state').textContent.startsWith('This browser gets alerts'), null, WAIT);
  const pushed = (await settings()).destinations.find((d) => d.type === 'webpush');
  const state = await text('#push-state');
  check(pushed && pushed.name === 'Chrome on Linux' && state === 'This browser gets alerts, as “Chrome on Linux”.', `${state} ${JSON.stringify(pushed)}`);
  check(pushed.host === new URL(subscription.endpoint).host, `its host: ${pushed.host}`);
  check((await words('Chrome on Linux')).includes('Web Push · this browser'), await words('Chrome on Linux'));
  check(await page.isHidden('#push-on'), 'no second subscription offered');
  await page.click('#push-test');
  await page.waitForFunction(() => document.getElementById('push-msg').textContent.startsWith('Test delivered at'), null, WAIT);
  await shot('push-on');

  step = 'push-shown';
  const event = (await node('GET', '/api/events')).json.find((e) => e.id === opts.event);
  check(event && event.clipUrl && !event.reviewed, `the event: ${JSON.stringify(event)}`);
  // The node's payload (src/alerts/send.rs) for this event.
  const payload = {
    title: 'Person at Front door', body: 'In Porch. Tap to see it.', phase: 'alert', tag: event.id, eventId: event.id,
    cameraId: door, camera: 'Front door', kind: 'person', at: event.startedAt, url: `/review?event=${event.id}`,
    image: `/api/events/${event.id}/thumbnail.jpg`, snooze: `/api/cameras/${door}/snooze`, snoozeMinutes: 60,
  };
  const registrationId = await until('the registration is known to DevTools', () => registrations.get(`${opts.url}/`));
  const deliver = () => cdp.send('ServiceWorker.deliverPushMessage', { origin: opts.url, registrationId, data: JSON.stringify(payload) });
  const notifications = () => page.evaluate(async () => {
    const registration = await navigator.serviceWorker.getRegistration('/');
    return (await registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, image: n.image, icon: n.icon, actions: n.actions, renotify: n.renotify, data: n.data }));
  });
  // Opened anew, the page knows this browser gets alerts.
  await page.goto(`${opts.url}/`);
  await page.waitForFunction(() => document.getElementById('push-state').textContent.startsWith('This browser gets alerts'), null, WAIT);
  await deliver();
  const [shown] = await until('a notification', async () => {
    const list = await notifications();
    return list.length > 0 && list;
  });
  check(shown.title === payload.title && shown.body === payload.body && shown.tag === event.id && shown.renotify, JSON.stringify(shown));
  check(shown.image === `${opts.url}${payload.image}` && shown.icon === `${opts.url}/icon.svg`, JSON.stringify(shown));
  check(shown.actions.length === 1 && shown.actions[0].action === 'snooze' && shown.actions[0].title === 'Snooze 1 h', JSON.stringify(shown.actions));

  step = 'push-click';
  const worker = await until('the service worker, to playwright', () => context.serviceWorkers()[0]);
  const click = (action) => worker.evaluate(async (a) => {
    const [notification] = await self.registration.getNotifications();
    self.dispatchEvent(new NotificationEvent('notificationclick', { notification, action: a }));
  }, action);
  await click('');
  await page.waitForFunction((id) => location.pathname + location.search === `/review?event=${id}`, event.id, WAIT);
  await page.waitForFunction(() => document.getElementById('clip').open, null, WAIT);
  const title = await text('#clip-title');
  check(title.startsWith('Person at Front door, '), `the event is open: ${title}`);
  await page.waitForFunction(() => document.getElementById('clip-video').currentTime > 0.3, null, WAIT);
  check(await page.locator(`#event-list .event[data-key="${event.id}"].fresh`).count() === 1, 'its row is marked');
  await until('marked reviewed on the node', async () => (await node('GET', '/api/events')).json.find((e) => e.id === event.id).reviewed);
  check((await notifications()).length === 0, 'the notification is closed');
  await shot('event');
  for (const address of [`/review?event=${event.id}`, `/#event-${event.id}`]) {
    const fresh = await context.newPage();
    await fresh.goto(`${opts.url}${address}`);
    await fresh.waitForFunction(() => document.getElementById('clip').open, null, WAIT);
    check((await fresh.locator('#clip-title').innerText()) === title, `the address ${address} opened anew shows it too`);
    await fresh.close();
  }

  step = 'push-snooze';
  await deliver();
  await until('the notification again', async () => (await notifications()).length === 1);
  await click('snooze');
  const asleep = await until('the node snoozes the camera', async () => (await node('GET', '/api/status')).json.alerts.snoozed.find((s) => s.cameraId === door));
  const hour = Date.parse(asleep.until) - Date.now();
  check(hour > 58 * 60000 && hour <= 60 * 60000, `for an hour: ${hour} ms`);
  await page.keyboard.press('Escape');
  await page.click('.tabs a[data-view="live"]');
  await page.locator(`#grid .tile[data-id="${door}"] .snoozed`).waitFor(WAIT);

  step = 'secure';
  check(await page.evaluate(() => window.isSecureContext && location.protocol === 'https:'), 'the page is https, a secure context');

  step = 'insecure';
  const lan = new URL(opts.api);
  lan.hostname = opts.lanAddress;
  const httpsPort = (await node('GET', '/api/status')).json.https.port;
  const far = await context.newPage();
  far.on('pageerror', (e) => errors.push(String(e)));
  await far.goto(`${lan.origin}/#notifications`);
  await far.locator('#dest-list .dest').first().waitFor(WAIT);
  check(!(await far.evaluate(() => window.isSecureContext)), 'not a secure context');
  const why = await far.locator('#push-state').innerText();
  check(why === 'Your phone lets only a secure page (https://) turn on notifications.', why);
  check((await far.locator('#push-insecure').innerText()).includes('Or use the ntfy app below, which needs none of this.'), 'ntfy instead');
  // The node serves HTTPS: its address on the LAN, and its authority to install.
  await far.locator('#push-https').waitFor(WAIT);
  const link = far.locator('#push-https-link');
  check(await link.getAttribute('href') === `https://${opts.lanAddress}:${httpsPort}/#notifications`, await link.getAttribute('href'));
  check((await link.innerText()) === `https://${opts.lanAddress}:${httpsPort}`, await link.innerText());
  check(await far.locator('#push-ca a').getAttribute('href') === '/api/tls/ca.crt', 'the certificate to download');
  const steps = await far.locator('#push-ca-steps').innerText();
  check(steps.includes('iPhone: Settings › General › VPN & Device Management') && steps.includes('Android: Settings › Security › Encryption & credentials › Install a certificate › CA certificate'), steps);
  check(await far.isHidden('#push-https-off') && await far.isHidden('#push-on'), 'HTTPS not said to be off; no button');
  if (opts.screenshots) await far.screenshot({ path: `${opts.screenshots}/alerts-insecure.png` });
  // A node without HTTPS (its status without https): how to turn it on.
  await far.route('**/api/status', async (route) => {
    const headers = { ...route.request().headers() };
    delete headers['if-none-match'];
    const answer = await route.fetch({ headers });
    const status = await answer.json();
    delete status.https;
    await route.fulfill({ status: 200, json: status });
  });
  await far.reload();
  await far.locator('#push-https-off').waitFor(WAIT);
  check((await far.locator('#push-https-off').innerText()).startsWith("The node's HTTPS is off: set HTTPS_PORT"), 'HTTPS is off, and how to turn it on');
  check(await far.isHidden('#push-https'), 'no address to open');

  await far.close();

  step = 'page';
  check(errors.length === 0, `no script error: ${errors.join(' | ')}`);
  return { secret, testMs, steps: 'all' };
}

await reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'alerts', step: () => step, errors });

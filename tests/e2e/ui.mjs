// Walks through the node's browser UI in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says) the way a person would.
//
// Usage:
//   node tests/e2e/ui.mjs --base http://127.0.0.1:PORT --camera-url rtsp://.../main
//        --sub-url rtsp://.../sub --screenshots DIR [--timeout-ms N]
//
// The node must be fresh (no cameras), with the real go2rtc as its relay. At
// 1280x800, and for screenshots and a layout check (nothing cut off or
// scrolling sideways) also at 360x740, it goes through these steps:
//   load         header: node name, version, "Not registered", relay badge with the
//                relay's version ("Stream relay: OK · go2rtc 1.9.14"), cloud state
//                in words; strict CSP on /, no inline script or style
//   add-camera   adds the real camera through the form (URL fields masked once
//                left, progress shown, a second submit sends nothing, motion
//                sensitivity Medium by default and sent; "Classify what moves" ticked
//                by default, the node having a classifier, with vehicle and package
//                unticked: classify true and kinds person, animal sent and kept) → card with
//                "H.264 · 640×360 · 25 fps · sub stream", Online, and "medium" under
//                the Detect switch; no camera address anywhere in the page
//   bad-url      http://x → the API's 400 message next to the URL field, which is
//                marked invalid; nothing added
//   reprobe      re-probe → a spinner while it runs, then the capabilities
//   toggles      record off (click) and on (keyboard, focus kept), disable and
//                enable, detect off (the moving ball would keep making motion
//                events), each checked after a refresh and in the API; rename
//                through the edit dialog (PATCH with the name only); motion
//                sensitivity High there (PATCH with it only; screenshots) → the API
//                and the card say "high"; no kind ticked there → the node's 400 by the
//                kinds, nothing changed; classify off there (the kinds then cannot be
//                ticked; PATCH with it only), then on with vehicle ticked (PATCH with
//                classify and kinds) → the API has them; after a reload the state
//                holds and the add form starts folded
//   live         opened with the keyboard: frames arrive and currentTime advances
//                on main, then sub, then main; muted by default, sound toggle,
//                full screen in and out; switching and closing end the WHEP session
//   events       prints `need-events <cameraId>`, waits up to 15 s for the events
//                the caller posts without clips (person 0.91, vehicle 0.5, motion
//                0.33 within the last 15 s, package 0.77 of 20 minutes ago), checks
//                camera name, kind word, score %, times, duration, "Clip coming…"
//                or "No clip" in place of a thumbnail until there is a clip, the
//                node's order, the kind filter (each kind shows only its events, All
//                all of them) and the camera filter (kept over a refresh)
//   clips        waits up to 40 s for the thumbnails of the three recent events
//                (loaded, alt text, clip status), the old one says "No clip" and has
//                no button; a click on the motion thumbnail opens the clip dialog,
//                titled, which plays (readyState 4, currentTime advances) and
//                downloads an MP4; the close button stops it (src removed); the
//                vehicle's with the keyboard (Enter plays, Escape closes, focus
//                back on the thumbnail); the person's plays too; light and dark
//                screenshots of the list and the dialog
//   hidden-tab   no status or events request while the page is hidden; one at once
//                when it shows again
//   revalidate   every status poll names the status the page has (If-None-Match): an
//                unchanged one is answered 304 without a body (the answers printed)
//   claim        GET /api/status answered by the test: unclaimed → the claim code in
//                large type with a countdown that goes down; error → its message
//                (as text); back to the node's own status
//   no-classifier
//                GET /api/status answered by the test with no classifier installed:
//                "Classify what moves" is unticked and cannot be ticked (nor the kinds)
//                in the add form and the edit dialog, and a hint says why
//   xss          a camera named <img src=x onerror=alert(1)> shows as that text (card,
//                filter, live view title), no img element but the thumbnails, no
//                dialog; its live view (nothing listens at its address) gives a plain
//                message, not video
//   recordings   waits up to 40 s for the card to say "Recording"; the XSS camera's
//                card and recordings view say why nothing is recorded; the real
//                camera's view (from its card): waits up to 40 s for a span on the
//                timeline, a click on it plays (readyState 4, currentTime advances),
//                "Playing …" and the time under the playhead; the download is an MP4
//                (ftyp) over 10 KB; a stretch's button and an event marker play with
//                the keyboard (Enter); light and dark screenshots; closing unloads
//   delete       delete with the confirmation: cancel keeps it, confirm removes it
//   dark         the dark theme applies (screenshots)
//   page         every control has a label; no CSP violation, script error or dialog
// It prints one JSON line, {"ok":true,"steps":[...],"screenshots":[...]} and exits
// 0, or {"ok":false,"step":"...","error":"..."} and exits 1, within --timeout-ms
// (default 150000), and always closes the browser. Progress lines go to stderr;
// a failure leaves a screenshot DIR/failed-<step>.png.

import fs from 'node:fs';
import path from 'node:path';
import { prepareBrowser, launchBrowser, closeBrowser, readFlags } from './browser.mjs';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 360, height: 740 };
const CLOSE_RESERVE_MS = 3000;
const XSS_NAME = '<img src=x onerror=alert(1)>';
const CLAIM_CODE = '7KQM-3XPR';
const CLIP_WORDS = ['Clip saved on node', 'Clip uploading…', 'Clip uploaded'];

function usage(message) {
  process.stderr.write(`ui: ${message}\n`);
  process.stderr.write(
    'usage: node tests/e2e/ui.mjs --base <node URL> --camera-url <rtsp main> --sub-url <rtsp sub> ' +
      '--screenshots <dir> [--timeout-ms N]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const names = {
    '--base': 'base',
    '--camera-url': 'cameraUrl',
    '--sub-url': 'subUrl',
    '--screenshots': 'screenshots',
    '--timeout-ms': 'timeoutMs',
  };
  const opts = readFlags(argv, names, { timeoutMs: 150000 }, usage);
  for (const need of ['base', 'cameraUrl', 'subUrl', 'screenshots']) {
    if (!opts[need]) usage(`--${need.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is required`);
  }
  opts.base = opts.base.replace(/\/+$/, '');
  opts.timeoutMs = Number(opts.timeoutMs);
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs < 10000) usage('--timeout-ms must be >= 10000');
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const startedAt = Date.now();
const deadline = startedAt + opts.timeoutMs - CLOSE_RESERVE_MS;
const remaining = () => Math.max(1, deadline - Date.now());
/** A wait of `ms`, cut to what is left of the run. */
const within = (ms) => Math.max(1, Math.min(ms, remaining()));

const steps = [];
const screenshots = [];
const consoleErrors = [];
const pageErrors = [];
const cspViolations = [];
const dialogs = [];
let currentStep = 'start';
let printed = false;
let passed = false;
let browser = null;
let page = null;

function finish(result) {
  if (printed) return;
  printed = true;
  passed = result.ok === true;
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

class Failure extends Error {}
function check(condition, message) {
  if (!condition) throw new Failure(message);
}

let stepStartedAt = Date.now();
/** A progress line on stderr, for whoever reads a slow or failed run. */
function note(what) {
  process.stderr.write(`ui:   ${currentStep} +${Date.now() - stepStartedAt} ms: ${what}\n`);
}

async function step(name, fn) {
  currentStep = name;
  const t0 = Date.now();
  stepStartedAt = t0;
  await fn();
  steps.push(name);
  process.stderr.write(`ui: ${name} passed in ${Date.now() - t0} ms\n`);
}

/** The node's API straight from here, to check what the UI did. */
async function nodeApi(method, urlPath, body) {
  let response;
  try {
    response = await fetch(`${opts.base}${urlPath}`, {
      method,
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(within(15000)),
    });
  } catch (error) {
    throw new Failure(`${method} ${opts.base}${urlPath} failed: ${error.cause?.message || error.message}`);
  }
  const text = await response.text();
  const json = text && (response.headers.get('content-type') || '').includes('json') ? JSON.parse(text) : null;
  return { status: response.status, headers: response.headers, text, json };
}

async function apiCameras() {
  const r = await nodeApi('GET', '/api/cameras');
  check(r.status === 200, `GET /api/cameras answered ${r.status}`);
  return r.json;
}

const norm = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();

/** Waits for the page's answer to `method` on a path matching `pathTest`. */
function responseTo(method, pathTest, ms = 20000) {
  return page.waitForResponse(
    (r) => r.request().method() === method && pathTest(new URL(r.url()).pathname),
    { timeout: within(ms) },
  );
}

/** When the page had all of `response` (ms since the epoch, the browser's clock). */
async function doneAt(response) {
  await response.finished();
  const t = response.request().timing();
  return t.startTime + Math.max(0, t.responseEnd);
}

/** Waits until the page has received a status that it asked for at `since` or later. */
async function nextStatus(since = Date.now()) {
  await page.waitForResponse(
    (r) => r.url().endsWith('/api/status') && r.request().method() === 'GET' && r.request().timing().startTime >= since,
    { timeout: within(10000) },
  );
  await page.waitForTimeout(100); // rendered
}

/**
 * Answers the page's GET /api/status with the node's status as `change` makes
 * it: asked for without the page's If-None-Match (the node would answer 304)
 * and given without the node's ETag (the page would keep the changed body
 * under the node's tag, and be told later that it is unchanged).
 */
async function answerStatus(change) {
  await page.route('**/api/status', async (route) => {
    const headers = { ...route.request().headers() };
    delete headers['if-none-match'];
    const response = await route.fetch({ headers });
    await route.fulfill({ status: 200, json: change(await response.json()) });
  });
}

/** Every element that sticks out past the right edge at the current size. */
async function layoutProblems() {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const problems = [];
    if (document.documentElement.scrollWidth > width + 1) {
      problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
    }
    const dialog = document.querySelector('dialog[open]');
    const scope = dialog || document.body;
    for (const el of scope.querySelectorAll('*')) {
      if (el.closest('.sprite, .visually-hidden, [hidden]')) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      // Off-screen on purpose (a skip link) is fine; cut off at an edge is not.
      if (r.right <= 0 || r.left >= width) continue;
      if (r.right > width + 1 || r.left < -1) {
        problems.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className?.baseVal ?? el.className} spans ${Math.round(r.left)}..${Math.round(r.right)}`);
      }
    }
    return problems.slice(0, 8);
  });
}

/**
 * Screenshots at desktop size and at phone size (with the layout check there),
 * each after `prepare` (e.g. scrolling the part of interest into view).
 */
async function shoot(name, prepare = async () => {}) {
  for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(150);
    await prepare(size);
    await page.waitForTimeout(200);
    if (size === 'phone') {
      const problems = await layoutProblems();
      check(problems.length === 0, `layout at 360 px wide (${name}): ${problems.join('; ')}`);
    }
    const file = path.join(opts.screenshots, `${size}-${name}.png`);
    await page.screenshot({ path: file, timeout: within(10000) });
    screenshots.push(file);
  }
  await page.setViewportSize(DESKTOP);
}

const scrollTo = (selector) => async () => {
  await page.locator(selector).first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
};
const scrollTop = async () => page.evaluate(() => window.scrollTo(0, 0));
/** Images other than the events' thumbnails and the edit dialog's picture: what markup in a camera's name would make. */
const strayImages = () => page.$$eval('img', (els) => els.filter((el) => !el.closest('#event-list .ev-shot, #edit-stage')).length);

const card = (id) => page.locator(`#camera-list .card[data-id="${id}"]`);
const cardText = async (id, selector) => norm(await card(id).locator(selector).textContent());

/** Goes to a view by its tab, as a person would. */
async function view(name) {
  if (await page.evaluate((n) => location.pathname === `/${n}`, name)) return;
  await page.click(`.tabs a[data-view="${name}"]`);
  await page.waitForFunction((n) => !document.getElementById(`view-${n}`).hidden, name, { timeout: within(5000) });
}

/** Unfolds the add form the way a person would, with the "Add camera" button. */
async function openAddForm() {
  if (!(await page.evaluate(() => document.getElementById('add-details').open))) {
    await page.click('#add-jump');
    await page.locator('#add-name').waitFor({ state: 'visible' });
  }
  check(await page.evaluate(() => document.activeElement?.id === 'add-name' || document.getElementById('add-details').open), 'the add form did not open');
}

/** Fills the add form and submits it; returns the POST's response. */
async function addThroughForm(fields) {
  await openAddForm();
  for (const [name, value] of Object.entries(fields)) await page.fill(`#add-${name}`, value);
  const answer = responseTo('POST', (p) => p === '/api/cameras', 30000);
  await page.click('#add-submit');
  return answer;
}

async function run() {
  fs.mkdirSync(opts.screenshots, { recursive: true });
  browser = prepareBrowser('ui');
  await launchBrowser(browser, { viewport: DESKTOP, timeout: within(30000) });
  page = browser.page;
  page.setDefaultTimeout(within(15000));
  page.on('console', (msg) => {
    const text = msg.text();
    if (/Content Security Policy/i.test(text)) cspViolations.push(text);
    if (msg.type() === 'error') consoleErrors.push(text);
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('dialog', async (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    await dialog.dismiss().catch(() => {});
  });
  const posts = [];
  page.on('request', (request) => {
    const p = new URL(request.url()).pathname;
    if (request.method() === 'POST' && p === '/api/cameras') posts.push(Date.now());
  });
  const whepDeletes = [];
  page.on('request', (request) => {
    if (request.method() === 'DELETE' && new URL(request.url()).pathname.startsWith('/api/whep/')) whepDeletes.push(request.url());
  });
  // Phone screenshots as a phone shows them: scrollbars overlay the page.
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Emulation.setScrollbarsHidden', { hidden: true });

  let porch = null; // the real camera's id
  let xss = null;

  await step('load', async () => {
    const html = await nodeApi('GET', '/');
    check(html.status === 200, `GET / answered ${html.status}`);
    const csp = html.headers.get('content-security-policy') || '';
    check(csp.includes("script-src 'self'"), `GET / has no strict Content-Security-Policy: ${csp}`);
    check(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html.text), 'index.html has an inline <script>');
    check(!/<style[\s>]/i.test(html.text) && !/\sstyle=/i.test(html.text), 'index.html has inline style');
    check((await apiCameras()).length === 0, 'the node must start with no cameras');
    const response = await page.goto(`${opts.base}/`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
    check(response && response.ok(), `the UI answered ${response ? response.status() : 'nothing'}`);
    await page.waitForSelector('body.loaded', { timeout: within(10000) });
    const status = (await nodeApi('GET', '/api/status')).json;
    check(norm(await page.textContent('#node-name')) === status.nodeName, 'the header shows the node name');
    check(norm(await page.textContent('#node-version')).includes(status.version), 'the header shows the version');
    check(norm(await page.textContent('#node-id')) === (status.nodeId ? `Node ID ${status.nodeId}` : 'Not registered'), 'the header shows the node id');
    // The relay (the real go2rtc) is up and names its version: the badge says which.
    await page.waitForFunction(() => document.getElementById('relay-badge').classList.contains('ok'), null, { timeout: within(10000) });
    const relay = (await nodeApi('GET', '/api/status')).json;
    check(typeof relay.relayVersion === 'string' && relay.relayVersion !== '', `status names the relay's version: ${JSON.stringify(relay.relayVersion)}`);
    const badge = norm(await page.textContent('#relay-badge'));
    check(badge === `Stream relay: OK · go2rtc ${relay.relayVersion}`, `the relay badge names its version: "${badge}"`);
    check(norm(await page.textContent('#cloud-badge')) === 'Cloud: off', 'the cloud state in words ("Cloud: off")');
    check(await page.isVisible('#live-empty'), 'the Live view of a node with no cameras says so');
    await view('settings');
    check(await page.isVisible('#cameras-empty'), 'a node with no cameras says so');
  });

  await step('add-camera', async () => {
    await openAddForm();
    await page.fill('#add-name', 'Porch');
    await page.fill('#add-rtspUrl', opts.cameraUrl);
    await page.fill('#add-rtspSubUrl', opts.subUrl);
    await page.fill('#add-make', 'Acme');
    await page.fill('#add-model', 'X1');
    const masked = await page.evaluate(() => ['add-rtspUrl', 'add-rtspSubUrl'].map((id) => {
      const el = document.getElementById(id);
      return el.type === 'password' || getComputedStyle(el).webkitTextSecurity === 'disc';
    }));
    check(masked.every(Boolean), `the URL fields are masked once left: ${masked}`);
    check((await page.inputValue('#add-detectSensitivity')) === 'medium', 'the motion sensitivity does not start at Medium');
    const classifyBox = page.locator('#add-classify');
    check(await classifyBox.isChecked() && await classifyBox.isEnabled(), 'with a classifier, "Classify what moves" does not start ticked');
    check((await page.locator('#add-kinds input:checked').count()) === 4, 'not every kind starts ticked');
    await page.locator('#add-kinds input[value="vehicle"]').uncheck();
    await page.locator('#add-kinds input[value="package"]').uncheck();
    const answer = responseTo('POST', (p) => p === '/api/cameras', 30000);
    await page.click('#add-submit');
    // While the node probes: progress, and no second camera from a second submit.
    const during = await page.evaluate(() => {
      document.getElementById('add-form').requestSubmit();
      document.getElementById('add-rtspUrl').form.requestSubmit();
      return {
        disabled: document.getElementById('add-submit').disabled,
        progress: !document.getElementById('add-progress').hidden,
      };
    });
    check(during.disabled && during.progress, `while adding, the button is disabled and progress shows: ${JSON.stringify(during)}`);
    const response = await answer;
    check(response.status() === 201, `POST /api/cameras answered ${response.status()}`);
    check(JSON.parse(response.request().postData()).detectSensitivity === 'medium', `the form sent ${response.request().postData().replace(/rtsp:[^"]*/g, 'rtsp:…')}`);
    const sentKinds = JSON.parse(response.request().postData());
    check(sentKinds.classify === true && JSON.stringify(sentKinds.kinds) === '["person","animal"]', `the form sent classify ${sentKinds.classify} and kinds ${JSON.stringify(sentKinds.kinds)}`);
    porch = (await response.json()).id;
    const kept = (await apiCameras()).find((c) => c.id === porch);
    check(kept.classify === true && JSON.stringify(kept.kinds) === '["person","animal"]', `the node has classify ${kept.classify} and kinds ${JSON.stringify(kept.kinds)}`);
    await page.waitForTimeout(300);
    check(posts.length === 1, `the form was sent ${posts.length} times`);
    await card(porch).waitFor({ timeout: within(5000) });
    check((await cardText(porch, '.cam-name')) === 'Porch', 'the card shows the name');
    check((await cardText(porch, '.cam-model')) === 'Acme X1', 'the card shows make and model');
    const detectWords = await card(porch).locator('input[data-field="detect"]').evaluate((el) => el.closest('label').innerText);
    check(norm(detectWords) === 'Detect medium', `by its Detect switch the card says "${detectWords}", not the sensitivity medium`);
    const caps = await cardText(porch, '.cam-caps');
    for (const part of ['H.264', '640×360', '25 fps', 'sub stream']) {
      check(caps.includes(part), `the capabilities "${caps}" lack "${part}"`);
    }
    await page.waitForFunction(
      (id) => document.querySelector(`.card[data-id="${id}"] .state-word`)?.textContent === 'Online',
      porch,
      { timeout: within(10000) },
    );
    check(await page.isVisible('#add-done'), 'the form says the camera was added');
    const secrets = {
      'the main stream URL': opts.cameraUrl,
      'the sub stream URL': opts.subUrl,
      "the camera's host and port": new URL(opts.cameraUrl.replace(/^rtsps?:/, 'http:')).host,
    };
    const leak = await page.evaluate((named) => {
      const text = document.documentElement.outerHTML + [...document.querySelectorAll('input')].map((i) => i.value).join(' ');
      return Object.entries(named).filter(([, value]) => text.includes(value)).map(([what]) => what);
    }, secrets);
    // Names only: the addresses themselves may carry a password.
    check(leak.length === 0, `the page shows ${leak.join(', ')}`);
    await shoot('cameras', scrollTop);
  });

  await step('bad-url', async () => {
    const response = await addThroughForm({ name: 'Bad', rtspUrl: 'http://x', rtspSubUrl: '', make: '', model: '' });
    check(response.status() === 400, `POST with http://x answered ${response.status()}`);
    const message = (await response.json()).error;
    check(message.startsWith('rtspUrl '), `the node's message names another field: ${message}`);
    const error = page.locator('#add-rtspUrl-error');
    await error.waitFor({ state: 'visible', timeout: within(3000) });
    const shown = norm(await error.textContent());
    check(shown.includes(message.slice('rtspUrl '.length)), `next to the URL field: "${shown}", the node said "${message}"`);
    const sameField = await page.evaluate(() => {
      const err = document.getElementById('add-rtspUrl-error');
      const input = document.getElementById('add-rtspUrl');
      return err.parentElement.contains(input) && input.getAttribute('aria-invalid') === 'true' &&
        input.getAttribute('aria-describedby').includes(err.id);
    });
    check(sameField, 'the message sits with the URL field, which is marked invalid');
    check(await page.isHidden('#add-name-error'), 'no error is shown for the name');
    check((await apiCameras()).length === 1, 'a camera was added with a bad URL');
    check((await page.locator('#camera-list .card').count()) === 1, 'a card appeared for a bad URL');
    await shoot('add-form-error', scrollTo('#add'));
    await page.fill('#add-name', '');
    await page.fill('#add-rtspUrl', '');
    await page.locator('#add-name').blur();
  });

  await step('reprobe', async () => {
    await card(porch).evaluate((el) => {
      window.probeSeen = { busy: false, spinner: false };
      const observer = new MutationObserver(() => {
        if (el.getAttribute('aria-busy') === 'true') {
          window.probeSeen.busy = true;
          const spinner = el.querySelector('.probe .spinner');
          if (spinner && getComputedStyle(spinner).display !== 'none') window.probeSeen.spinner = true;
        }
      });
      observer.observe(el, { attributes: true, subtree: true, childList: true, characterData: true });
    });
    const answer = responseTo('POST', (p) => p === `/api/cameras/${porch}/probe`, 30000);
    await card(porch).locator('.probe').click();
    const response = await answer;
    check(response.status() === 200, `re-probe answered ${response.status()}: ${await response.text()}`);
    await page.waitForFunction((id) => !document.querySelector(`.card[data-id="${id}"]`).hasAttribute('aria-busy'), porch, { timeout: within(5000) });
    const seen = await page.evaluate(() => window.probeSeen);
    check(seen.busy && seen.spinner, `a spinner showed while probing: ${JSON.stringify(seen)}`);
    const caps = await cardText(porch, '.cam-caps');
    check(caps.includes('H.264') && caps.includes('640×360'), `after re-probe the card shows "${caps}"`);
    check((await cardText(porch, '.card-msg')).length > 0, 'the card says the probe finished');
  });

  await step('toggles', async () => {
    const flip = async (field, want, { keyboard = false } = {}) => {
      const answer = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`);
      const toggle = card(porch).locator(`input[data-field="${field}"]`);
      if (keyboard) {
        await toggle.focus();
        await page.keyboard.press('Space');
      } else {
        await toggle.click();
      }
      const response = await answer;
      check(response.status() === 200, `PATCH ${field} answered ${response.status()}`);
      await nextStatus(await doneAt(response));
      const checked = await card(porch).locator(`input[data-field="${field}"]`).isChecked();
      check(checked === want, `after a refresh ${field} shows ${checked}, not ${want}`);
      const stored = (await apiCameras()).find((c) => c.id === porch);
      check(stored[field] === want, `the node has ${field} ${stored[field]}, not ${want}`);
      if (keyboard) {
        const focused = await toggle.evaluate((el) => document.activeElement === el);
        check(focused, `the ${field} switch lost the keyboard focus`);
      }
    };
    await flip('record', false);
    await flip('record', true, { keyboard: true });
    await flip('enabled', false);
    check((await cardText(porch, '.state-word')) === 'Disabled', 'a disabled camera says Disabled');
    await flip('enabled', true);
    check((await cardText(porch, '.state-word')) !== 'Disabled', 'an enabled camera no longer says Disabled');
    // Off from here on: the node's detector would keep making motion events of
    // the test camera's moving ball, and the events step counts the posted ones.
    await flip('detect', false);

    await card(porch).locator('.edit').click();
    await page.waitForSelector('#edit[open]');
    check((await page.inputValue('#edit-name')) === 'Porch', 'the edit dialog starts with the name');
    await page.fill('#edit-name', 'Porch camera');
    const answer = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`);
    await page.click('#edit-save');
    const response = await answer;
    check(response.status() === 200, `PATCH name answered ${response.status()}`);
    check(JSON.parse(response.request().postData()).name === 'Porch camera' &&
      Object.keys(JSON.parse(response.request().postData())).length === 1, `rename sent ${response.request().postData()}`);
    await page.waitForSelector('#edit:not([open])', { state: 'attached' });
    check((await cardText(porch, '.cam-name')) === 'Porch camera', 'the card shows the new name');
    check((await apiCameras()).find((c) => c.id === porch).name === 'Porch camera', 'the node has the new name');

    // Motion sensitivity: the edit dialog sends it alone; the card says it by the Detect switch.
    await card(porch).locator('.edit').click();
    await page.waitForSelector('#edit[open]');
    check((await page.inputValue('#edit-detectSensitivity')) === 'medium', 'the edit dialog starts with the sensitivity Medium');
    await page.selectOption('#edit-detectSensitivity', 'high');
    await shoot('edit');
    const sensed = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`);
    await page.click('#edit-save');
    const sensedResponse = await sensed;
    check(sensedResponse.status() === 200, `PATCH detectSensitivity answered ${sensedResponse.status()}`);
    check(sensedResponse.request().postData() === '{"detectSensitivity":"high"}', `the sensitivity change sent ${sensedResponse.request().postData()}`);
    await page.waitForSelector('#edit:not([open])', { state: 'attached' });
    await nextStatus(await doneAt(sensedResponse));
    check((await apiCameras()).find((c) => c.id === porch).detectSensitivity === 'high', 'the node does not have the sensitivity high');
    check((await cardText(porch, '.sensitivity')) === 'high', `the card says "${await cardText(porch, '.sensitivity')}", not "high"`);
    check((await card(porch).locator('input[data-field="detect"]').getAttribute('aria-label')) === 'Detect (high sensitivity): Porch camera', 'the Detect switch does not name the sensitivity');

    // Classify off, then on with one more kind: the dialog sends what changed.
    const editClassify = async (change, wanted, what) => {
      await card(porch).locator('.edit').click();
      await page.waitForSelector('#edit[open]');
      await change();
      const answer = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`);
      await page.click('#edit-save');
      const response = await answer;
      check(response.status() === 200, `PATCH ${what} answered ${response.status()}`);
      check(response.request().postData() === JSON.stringify(wanted), `${what} sent ${response.request().postData()}, not ${JSON.stringify(wanted)}`);
      await page.waitForSelector('#edit:not([open])', { state: 'attached' });
      const stored = (await apiCameras()).find((c) => c.id === porch);
      check(stored.classify === wanted.classify && JSON.stringify(stored.kinds) === JSON.stringify(wanted.kinds ?? ['person', 'animal']),
        `after ${what} the node has classify ${stored.classify} and kinds ${JSON.stringify(stored.kinds)}`);
    };
    const ticked = async () => page.$$eval('#edit-kinds input:checked', (els) => els.map((el) => el.value));
    // No kind ticked with classify on: the node's 400 by the kinds, nothing changed.
    await card(porch).locator('.edit').click();
    await page.waitForSelector('#edit[open]');
    for (const kind of ['person', 'animal']) await page.uncheck(`#edit-kinds input[value="${kind}"]`);
    const refused = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`);
    await page.click('#edit-save');
    check((await refused).status() === 400, `PATCH with no kinds answered ${(await refused).status()}`);
    const kindsError = page.locator('#edit-kinds-error');
    await kindsError.waitFor({ state: 'visible', timeout: within(5000) });
    check(norm(await kindsError.textContent()).startsWith('Kinds of event must name at least one kind'), `the kinds' error says "${await kindsError.textContent()}"`);
    check((await page.getAttribute('#edit-kinds', 'aria-invalid')) === 'true', 'the kinds are not marked invalid');
    await page.check('#edit-kinds input[value="person"]');
    check(await kindsError.isHidden(), 'the kinds\' error stays once a kind is ticked');
    await page.click('#edit-cancel');
    check(JSON.stringify((await apiCameras()).find((c) => c.id === porch).kinds) === '["person","animal"]', 'a refused change changed the kinds');
    await editClassify(async () => {
      check(await page.isChecked('#edit-classify') && JSON.stringify(await ticked()) === '["person","animal"]',
        `the edit dialog starts with classify ${await page.isChecked('#edit-classify')} and kinds ${await ticked()}`);
      await page.uncheck('#edit-classify');
      check(await page.locator('#edit-kinds input:disabled').count() === 4, 'with classify off the kinds can still be ticked');
    }, { classify: false }, 'classify off');
    await editClassify(async () => {
      check(!(await page.isChecked('#edit-classify')) && await page.isEnabled('#edit-classify'), 'the edit dialog does not start with classify off (and changeable)');
      await page.check('#edit-classify');
      await page.check('#edit-kinds input[value="vehicle"]');
      await shoot('edit-classify');
    }, { classify: true, kinds: ['person', 'vehicle', 'animal'] }, 'classify on with vehicle');

    // A new main stream address (the same camera again): PATCH re-probes it.
    await card(porch).locator('.edit').click();
    await page.waitForSelector('#edit[open]');
    await page.click('#edit-urls summary');
    await page.fill('#edit-rtspUrl', opts.cameraUrl);
    await page.locator('#edit-rtspSubUrl').focus();
    const masked = await page.$eval('#edit-rtspUrl', (el) => el.type === 'password' || getComputedStyle(el).webkitTextSecurity === 'disc');
    check(masked, 'the new URL is not masked once left');
    const moved = responseTo('PATCH', (p) => p === `/api/cameras/${porch}`, 30000);
    await page.click('#edit-save');
    const movedResponse = await moved;
    check(movedResponse.status() === 200, `PATCH rtspUrl answered ${movedResponse.status()}`);
    const sent = JSON.parse(movedResponse.request().postData());
    check(JSON.stringify(Object.keys(sent)) === '["rtspUrl"]', `the address change sent ${Object.keys(sent)}`);
    await page.waitForSelector('#edit:not([open])', { state: 'attached', timeout: within(15000) });
    check((await cardText(porch, '.cam-caps')).includes('640×360'), 'after the address change the card lost its capabilities');

    // Coming back later: the same state, and the add form folded away.
    await page.reload({ waitUntil: 'domcontentloaded', timeout: within(15000) });
    await page.waitForSelector('body.loaded', { timeout: within(10000) });
    check((await cardText(porch, '.cam-name')) === 'Porch camera', 'after a reload the card has the new name');
    for (const [field, on] of [['enabled', true], ['record', true], ['detect', false]]) {
      check((await card(porch).locator(`input[data-field="${field}"]`).isChecked()) === on, `after a reload ${field} is not ${on ? 'on' : 'off'}`);
    }
    check((await cardText(porch, '.sensitivity')) === 'high', 'after a reload the card does not say the sensitivity is high');
    check(!(await page.evaluate(() => document.getElementById('add-details').open)), 'with a camera, the add form starts folded');
  });

  await step('live', async () => {
    const playing = async (width) => {
      await page.waitForFunction(
        (w) => document.getElementById('live-video').videoWidth === w,
        width,
        { timeout: within(20000), polling: 100 },
      ).catch(async () => {
        const state = await page.evaluate(() => ({
          message: document.getElementById('live-msg').innerText,
          videoWidth: document.getElementById('live-video').videoWidth,
        }));
        throw new Failure(`no ${width}-wide picture: ${JSON.stringify(state)}`);
      });
      const t0 = await page.evaluate(() => document.getElementById('live-video').currentTime);
      await page.waitForFunction(
        (t) => document.getElementById('live-video').currentTime - t >= 1,
        t0,
        { timeout: within(10000), polling: 100 },
      );
      check(await page.isHidden('#live-msg'), 'a message still covers the playing video');
    };
    // With the keyboard: focus the camera's Watch button and press Enter.
    await card(porch).locator('.watch').focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('#live[open]');
    check(norm(await page.textContent('#live-title')) === 'Porch camera', 'the live view names the camera');
    await playing(640);
    note('main stream plays');
    check(await page.evaluate(() => document.getElementById('live-video').muted), 'live view starts muted');
    await page.click('#live-mute');
    check(!(await page.evaluate(() => document.getElementById('live-video').muted)), 'the sound toggle unmutes');
    check((await page.getAttribute('#live-mute', 'aria-pressed')) === 'true', 'the sound toggle says it is on');
    await page.click('#live-mute');
    check(await page.evaluate(() => document.getElementById('live-video').muted), 'the sound toggle mutes again');
    if (await page.evaluate(() => document.fullscreenEnabled)) {
      await page.click('#live-full');
      await page.waitForFunction(() => document.fullscreenElement?.id === 'live-box', null, { timeout: within(5000) });
      check(await page.isVisible('#live-full'), 'in full screen the button to leave it is hidden');
      await page.click('#live-full');
      await page.waitForFunction(() => !document.fullscreenElement, null, { timeout: within(5000) });
    }
    note('sound and full screen work');
    await shoot('live', async () => {});
    note('screenshots taken');

    const deletesBefore = whepDeletes.length;
    check(await page.isVisible('#live-streams'), 'a camera with a sub stream offers it');
    await page.locator('#live-streams label', { hasText: 'Sub stream' }).click();
    await playing(320);
    note('sub stream plays');
    check(whepDeletes.length > deletesBefore, 'switching streams ended the main stream session');
    await page.locator('#live-streams label', { hasText: 'Main stream' }).click();
    await playing(640);
    note('main stream plays again');

    const deletesBeforeClose = whepDeletes.length;
    await page.click('#live-close');
    await page.waitForSelector('#live:not([open])', { state: 'attached' });
    await page.waitForTimeout(300);
    check(whepDeletes.length > deletesBeforeClose, 'closing the live view did not end the WHEP session');
    check(await page.evaluate(() => document.getElementById('live-video').srcObject === null), 'the video still holds the stream after closing');
  });

  // The events the caller posts, by kind: the API's, then the rows showing them.
  const POSTED = { person: 0.91, vehicle: 0.5, motion: 0.33, package: 0.77 };
  const RECENT = ['person', 'vehicle', 'motion']; // within the recording: they get clips
  let posted = null; // kind → the API's event
  const row = (kind) => page.locator(`#event-list .event[data-key="${posted[kind].id}"]`);
  /** What a person sees in the row of the posted event of `kind`. */
  const readRow = (kind) => row(kind).evaluate((el) => {
    const visible = (e) => Boolean(e) && e.getClientRects().length > 0;
    const shot = el.querySelector('.ev-shot');
    return {
      kind: el.querySelector('.ev-word').textContent,
      camera: el.querySelector('.ev-cam').textContent,
      score: el.querySelector('.ev-score').textContent,
      time: el.querySelector('.ev-time').textContent,
      absolute: el.querySelector('.ev-time').title,
      duration: el.querySelector('.ev-dur').textContent,
      clip: visible(el.querySelector('.ev-clip')) ? el.querySelector('.ev-clip').textContent : null,
      button: visible(shot) ? shot.getAttribute('aria-label') : null,
      noClip: visible(el.querySelector('.ev-noclip')) ? el.querySelector('.ev-noclip').textContent : null,
      alt: shot.querySelector('img').alt,
    };
  });

  await step('events', async () => {
    await view('review');
    await new Promise((resolve) => process.stdout.write(`need-events ${porch}\n`, resolve));
    const until = Date.now() + within(15000);
    for (;;) {
      const events = (await nodeApi('GET', '/api/events')).json;
      const found = Object.entries(POSTED).map(([kind, score]) => [kind, events.find((e) => e.cameraId === porch && e.kind === kind && e.score === score)]);
      if (found.every(([, e]) => e)) {
        posted = Object.fromEntries(found);
        break;
      }
      check(Date.now() < until, `the node lists ${JSON.stringify(events.map((e) => e.kind))} 15 s after need-events`);
      await page.waitForTimeout(200);
    }
    await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`#event-list .event[data-key="${id}"]`)),
      Object.values(posted).map((e) => e.id), { timeout: within(15000) })
      .catch(() => { throw new Failure('the posted events did not show within 15 s'); });
    // Straight away, before (most of) the clips are cut.
    for (const [kind, word, score, lasted] of [['person', 'Person', '91%', '3 s'], ['vehicle', 'Vehicle', '50%', '3 s'], ['motion', 'Motion', '', '4 s'], ['package', 'Package', '77%', '8 s']]) {
      const r = await readRow(kind);
      check(r.kind === word && r.score === score, `the ${kind} event shows ${r.kind} ${r.score}, not ${word} ${score}`);
      check(r.camera === 'Porch camera', `the ${kind} event names camera "${r.camera}"`);
      check(r.absolute && (kind === 'package' ? r.time === '20 min ago' : /^(just now|\d+ s ago)$/.test(r.time)), `the ${kind} event's time: ${JSON.stringify(r)}`);
      check(r.duration === lasted, `the ${kind} event lasted ${r.duration}, not ${lasted}`);
      if (r.button) {
        check(CLIP_WORDS.includes(r.clip) && r.noClip === null, `the ${kind} event has a clip: ${JSON.stringify(r)}`);
      } else {
        const wanted = kind === 'package' ? 'No clip' : 'Clip coming…';
        check(r.noClip === wanted && r.clip === null, `the ${kind} event, without a clip, shows ${JSON.stringify(r)}, not "${wanted}"`);
      }
    }
    const api = (await nodeApi('GET', '/api/events')).json;
    const shown = await page.$$eval('#event-list .event', (els) => els.map((el) => el.dataset.key));
    check(JSON.stringify(shown) === JSON.stringify(api.map((e) => e.id)), `events not in the node's (newest first) order: ${shown.length} rows for ${api.length} events`);
    note(`${api.length} events, ${api.length - 4} of them the detector's from before it was turned off`);
    const visibleKinds = async () => page.$$eval('#event-list .event .ev-word', (els) => els.map((e) => e.textContent));
    await page.selectOption('#filter-kind', 'person');
    check(JSON.stringify(await visibleKinds()) === '["Person"]', `kind filter person shows ${await visibleKinds()}`);
    await page.selectOption('#filter-kind', 'vehicle');
    check(JSON.stringify(await visibleKinds()) === '["Vehicle"]', `kind filter vehicle shows ${await visibleKinds()}`);
    await page.selectOption('#filter-kind', 'package');
    check(JSON.stringify(await visibleKinds()) === '["Package"]', `kind filter package shows ${await visibleKinds()}`);
    await page.selectOption('#filter-kind', 'motion');
    const motions = api.filter((e) => e.kind === 'motion').length;
    const motionWords = await visibleKinds();
    check(motionWords.length === motions && motionWords.every((w) => w === 'Motion'), `kind filter motion shows ${motionWords.length} rows (${[...new Set(motionWords)]}) for ${motions} motion events`);
    await page.selectOption('#filter-kind', 'animal');
    check((await visibleKinds()).length === 0 && (await page.isVisible('#events-empty')), 'kind filter animal shows no events and says so');
    await page.selectOption('#filter-kind', '');
    check((await visibleKinds()).length === api.length, `All kinds shows ${(await visibleKinds()).length} of ${api.length} events`);
    await page.selectOption('#filter-camera', porch);
    check((await visibleKinds()).length === api.filter((e) => e.cameraId === porch).length, 'the camera filter keeps the camera\'s events');
    await nextStatus();
    check((await page.inputValue('#filter-camera')) === porch, 'a refresh reset the camera filter');
    await page.selectOption('#filter-camera', '');
    await shoot('events', scrollTo('#events'));
  });

  await step('clips', async () => {
    // Thumbnails load lazily: the list in view, as a person looking at it has it.
    await scrollTo('#events')();
    const cut = Date.now();
    const ids = RECENT.map((kind) => posted[kind].id);
    await page.waitForFunction((keys) => keys.every((id) => {
      const img = document.querySelector(`#event-list .event[data-key="${id}"] .ev-shot img`);
      return img && img.getClientRects().length > 0 && img.complete && img.naturalWidth > 0;
    }), ids, { timeout: within(40000), polling: 250 }).catch(async () => {
      const events = (await nodeApi('GET', '/api/events')).json.filter((e) => ids.includes(e.id));
      throw new Failure(`no thumbnails within 40 s: ${JSON.stringify(events.map((e) => [e.kind, e.clipUrl, e.thumbnailUrl]))}`);
    });
    note(`the thumbnails of the three recent events show (${Date.now() - cut} ms)`);
    for (const kind of RECENT) {
      const r = await readRow(kind);
      check(r.alt.startsWith(`${r.kind} at Porch camera, `) && /\d/.test(r.alt), `the ${kind} thumbnail's alt is "${r.alt}"`);
      check(r.button === `Play clip: ${r.alt}`, `the ${kind} thumbnail's button is labelled "${r.button}"`);
      check(CLIP_WORDS.includes(r.clip) && r.noClip === null, `the ${kind} event with its clip shows ${JSON.stringify(r)}`);
      check((await row(kind).locator('.ev-shot img').getAttribute('loading')) === 'lazy', `the ${kind} thumbnail does not load lazily`);
    }
    const old = await readRow('package');
    check(old.noClip === 'No clip' && old.button === null && old.clip === null, `the event from before the recording shows ${JSON.stringify(old)}`);
    check((await row('package').locator('button:visible:not(.ev-keep)').count()) === 0, 'the event without a clip has a button besides Keep');
    const events = async () => scrollTo('#events')();
    await shoot('events-clips', events);
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot('events-clips-dark', events);
    await page.emulateMedia({ colorScheme: 'light' });

    const video = page.locator('#clip-video');
    const plays = async (what) => {
      await page.waitForFunction(() => document.getElementById('clip-video').readyState === 4, null, { timeout: within(15000), polling: 100 })
        .catch(async () => {
          const state = await page.evaluate(() => ({
            message: document.getElementById('clip-msg').innerText,
            readyState: document.getElementById('clip-video').readyState,
          }));
          throw new Failure(`${what}: the clip did not load: ${JSON.stringify(state)}`);
        });
      const t0 = await video.evaluate((v) => v.currentTime);
      await page.waitForFunction((t) => document.getElementById('clip-video').currentTime - t >= 1, t0, { timeout: within(10000), polling: 100 })
        .catch(() => { throw new Failure(`${what}: currentTime did not advance by 1 s`); });
      check(await page.isHidden('#clip-msg'), `${what}: a message still covers the playing clip`);
    };
    const closed = async (what) => {
      await page.waitForSelector('#clip:not([open])', { state: 'attached' });
      check(await video.evaluate((v) => !v.getAttribute('src') && v.paused), `${what}: the clip still plays after closing`);
    };

    // A click on the motion event's thumbnail.
    const motion = posted.motion;
    const clicked = Date.now();
    await row('motion').locator('.ev-shot').click();
    await page.waitForSelector('#clip[open]');
    const title = norm(await page.textContent('#clip-title'));
    check(title === (await readRow('motion')).alt, `the clip dialog is titled "${title}"`);
    const clipUrl = (await nodeApi('GET', '/api/events')).json.find((e) => e.id === motion.id).clipUrl;
    check((await video.getAttribute('src')) === clipUrl, `the dialog plays ${await video.getAttribute('src')}, not ${clipUrl}`);
    await plays('a click on a thumbnail');
    note(`a click on a thumbnail plays its clip (${Date.now() - clicked} ms, ${(await video.evaluate((v) => v.duration)).toFixed(1)} s long)`);
    check(/^Lasted 4 s · 33% of the picture moved$/.test(norm(await page.textContent('#clip-about'))), `the dialog says "${await page.textContent('#clip-about')}"`);
    const link = page.locator('#clip-download');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: within(15000) }), link.click()]);
    const bytes = fs.readFileSync(await download.path());
    check(bytes.length > 10000 && bytes.subarray(4, 8).toString('latin1') === 'ftyp',
      `the clip's download is ${bytes.length} bytes starting ${JSON.stringify(bytes.subarray(0, 8).toString('latin1'))}, not an MP4`);
    check(/^Porch camera motion .*\.mp4$/.test(download.suggestedFilename()), `the clip downloads as ${download.suggestedFilename()}`);
    await shoot('clip');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot('clip-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.click('#clip-close');
    await closed('the close button');

    // The keyboard: Enter on the vehicle's thumbnail, Escape to close, and the focus back where it was.
    const thumb = row('vehicle').locator('.ev-shot');
    await thumb.focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('#clip[open]');
    check(norm(await page.textContent('#clip-title')).startsWith('Vehicle at Porch camera, '), 'Enter opened another clip');
    await plays('Enter on a thumbnail');
    await page.keyboard.press('Escape');
    await closed('Escape');
    check(await thumb.evaluate((el) => document.activeElement === el), 'after the clip the focus is not back on its thumbnail');

    // The person's clip, with the list filtered to people.
    await page.selectOption('#filter-kind', 'person');
    await row('person').locator('.ev-shot').click();
    await page.waitForSelector('#clip[open]');
    check(norm(await page.textContent('#clip-title')).startsWith('Person at Porch camera, '), `the person's thumbnail opened "${await page.textContent('#clip-title')}"`);
    await plays("the person's clip");
    await page.click('#clip-close');
    await closed("the person's clip");
    await page.selectOption('#filter-kind', '');
  });

  await step('hidden-tab', async () => {
    // The page stops asking while the tab is hidden, and catches up when it shows again.
    const asked = [];
    const onRequest = (request) => {
      if (/\/api\/(status|events)$/.test(new URL(request.url()).pathname)) asked.push(Date.now());
    };
    const setHidden = (hidden) => page.evaluate((h) => {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
      document.dispatchEvent(new Event('visibilitychange'));
    }, hidden);
    await setHidden(true);
    await page.waitForTimeout(500); // a refresh already under way may finish
    page.on('request', onRequest);
    await page.waitForTimeout(4000);
    const whileHidden = asked.length;
    await setHidden(false);
    await page.waitForTimeout(700);
    page.off('request', onRequest);
    await page.evaluate(() => {
      delete document.hidden;
      delete document.visibilityState;
    });
    check(whileHidden === 0, `the page asked ${whileHidden} times in 4 s while hidden`);
    check(asked.length > 0, 'the page did not refresh when it showed again');
  });

  await step('revalidate', async () => {
    // The page names the status it has (If-None-Match), so an unchanged one comes back 304, bodiless.
    const polls = [];
    const onResponse = async (response) => {
      if (!response.url().endsWith('/api/status')) return;
      polls.push({ tag: await response.request().headerValue('if-none-match'), status: response.status() });
    };
    page.on('response', onResponse);
    await page.waitForTimeout(7000); // the page polls every 3 s
    page.off('response', onResponse);
    check(polls.length >= 2, `${polls.length} status polls in 7 s`);
    check(polls.every((p) => p.tag), `a status poll without If-None-Match: ${JSON.stringify(polls)}`);
    note(`status polls in 7 s answered ${polls.map((p) => p.status).join(', ')}`);
    check(!(await page.isVisible('#offline')), `a poll's answer shows as a problem: "${norm(await page.textContent('#offline'))}"`);
  });

  await step('claim', async () => {
    await view('settings');
    let cloud = { state: 'unclaimed', claimCode: CLAIM_CODE, claimCodeExpiresAt: new Date(Date.now() + 5 * 60000).toISOString() };
    await answerStatus((status) => ({ ...status, cloud }));
    const code = page.locator('#claim-code');
    await code.waitFor({ state: 'visible', timeout: within(10000) });
    check(norm(await code.textContent()) === CLAIM_CODE, `the claim code shows as "${await code.textContent()}"`);
    const size = await code.evaluate((el) => parseFloat(getComputedStyle(el).fontSize));
    check(size >= 32, `the claim code is ${size}px, not large type`);
    check(norm(await page.textContent('#cloud-badge')).includes('claimed'), 'the cloud badge says the node waits to be claimed');
    const seconds = async () => {
      const text = norm(await page.textContent('#claim-countdown'));
      const m = /(\d+):(\d\d)/.exec(text);
      check(m, `no countdown in "${text}"`);
      return Number(m[1]) * 60 + Number(m[2]);
    };
    const first = await seconds();
    check(first > 240 && first <= 300, `the countdown starts at ${first} s for 5 minutes`);
    await page.waitForTimeout(2100);
    const second = await seconds();
    check(second < first && first - second <= 4, `the countdown went from ${first} to ${second}`);
    await shoot('claim-code', scrollTop);

    cloud = { state: 'error', message: 'the cloud refused this node: <b>certificate expired</b>' };
    await page.locator('#cloud-error').waitFor({ state: 'visible', timeout: within(10000) });
    check(norm(await page.textContent('#cloud-error-text')).toLowerCase() === cloud.message.toLowerCase(), 'the cloud error message shows as sent');
    check(await page.isHidden('#claim'), 'the claim code went away');
    check((await page.locator('#cloud-error b').count()) === 0, 'the error message was read as HTML');
    await page.screenshot({ path: path.join(opts.screenshots, 'desktop-cloud-error.png') });
    screenshots.push(path.join(opts.screenshots, 'desktop-cloud-error.png'));
    await page.unroute('**/api/status');
    await page.locator('#cloud-error').waitFor({ state: 'hidden', timeout: within(10000) });
  });

  await step('no-classifier', async () => {
    await view('settings');
    await answerStatus((status) => ({ ...status, classifier: { installed: false } }));
    await page.waitForFunction(() => document.getElementById('add-classify').disabled, null, { timeout: within(10000) })
      .catch(() => { throw new Failure('a status without the classifier left "Classify what moves" enabled'); });
    await openAddForm();
    const box = page.locator('#add-classify');
    check(!(await box.isChecked()) && await box.isDisabled(), 'without a classifier, "Classify what moves" is ticked or can be ticked');
    check((await page.locator('#add-kinds input:enabled').count()) === 0, 'without a classifier, the kinds can be ticked');
    const hint = norm(await page.textContent('#add-classify-hint'));
    check(hint.includes('not installed'), `the add form's hint says "${hint}"`);
    await shoot('add-no-classifier', scrollTo('#add'));
    await card(porch).locator('.edit').click();
    await page.waitForSelector('#edit[open]');
    check(await page.isDisabled('#edit-classify') && norm(await page.textContent('#edit-classify-hint')).includes('not installed'),
      'without a classifier, the edit dialog lets classify change or does not say why');
    await page.click('#edit-cancel');
    await page.unroute('**/api/status');
    await page.waitForFunction(() => !document.getElementById('add-classify').disabled, null, { timeout: within(10000) });
    check(await page.isChecked('#add-classify'), 'with the classifier back, "Classify what moves" is not ticked again');
  });

  await step('xss', async () => {
    const response = await addThroughForm({ name: XSS_NAME, rtspUrl: 'rtsp://127.0.0.1:1/x', rtspSubUrl: '', make: '', model: '' });
    check(response.status() === 201, `POST of the XSS camera answered ${response.status()}`);
    xss = (await response.json()).id;
    await card(xss).waitFor({ timeout: within(5000) });
    check((await card(xss).locator('.cam-name').textContent()) === XSS_NAME, 'the name does not show as typed');
    check((await card(xss).locator('img').count()) === 0, 'an img element is inside the card');
    check((await strayImages()) === 0, 'an img element is on the page');
    check((await cardText(xss, '.cam-caps')) === 'not probed yet', 'a camera that could not be probed says "not probed yet"');
    const option = await page.$eval(`#filter-camera option[value="${xss}"]`, (o) => o.textContent);
    check(option === XSS_NAME, 'the camera filter shows the name as typed');
    // Its live view: the node's plain message, not a black box.
    await card(xss).locator('.watch').click();
    await page.waitForSelector('#live[open]');
    check(norm(await page.textContent('#live-title')) === XSS_NAME, 'the live view title shows the name as typed');
    await page.waitForFunction(() => document.getElementById('live-msg-title').textContent === 'Live view unavailable', null, {
      timeout: within(25000),
    });
    const text = norm(await page.textContent('#live-msg-text'));
    check(text.length > 10, `the message is "${text}"`);
    check(await page.isVisible('#live-retry'), 'the live view offers to try again');
    check(!(await page.isVisible('#live-video')), 'a black video still shows under the message');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#live:not([open])', { state: 'attached' });
    await page.waitForTimeout(500);
    check(dialogs.length === 0, `a dialog fired: ${dialogs.join(' | ')}`);
  });

  await step('recordings', async () => {
    const recorderWord = (id) => card(id).locator('.rec-word').textContent().then(norm);
    // The real camera is recorded from when it was added (restarted by the toggles).
    await page.waitForFunction(
      (id) => document.querySelector(`.card[data-id="${id}"] .rec-word`)?.textContent === 'Recording',
      porch,
      { timeout: within(40000) },
    ).catch(async () => { throw new Failure(`the card says "${await recorderWord(porch)}", not "Recording"`); });
    // Nothing listens at the XSS camera's address: its card and its view say why.
    await page.waitForFunction(
      (id) => document.querySelector(`.card[data-id="${id}"] .rec-word`)?.textContent.startsWith('Not recording: '),
      xss,
      { timeout: within(15000) },
    ).catch(async () => { throw new Failure(`the XSS camera's card says "${await recorderWord(xss)}"`); });
    check((await card(xss).locator('.rec-state.bad').count()) === 1, 'a recorder that keeps failing is not shown as a problem');
    note(`the cards say "${await recorderWord(porch)}" and "${await recorderWord(xss)}"`);
    await card(xss).locator('.recordings').click();
    await page.waitForSelector('#view-recordings:not([hidden])');
    check(norm(await page.textContent('#rec-title')) === `Recordings · ${XSS_NAME}`, 'the recordings view names the camera as typed');
    await page.waitForFunction(() => document.getElementById('rec-msg-title').textContent === 'Nothing recorded in the last 24 hours' &&
      document.getElementById('rec-msg-text').textContent.startsWith('Not recording: '), null, { timeout: within(15000) })
      .catch(async () => { throw new Failure(`the empty view says "${norm(await page.textContent('#rec-msg'))}"`); });
    check((await strayImages()) === 0, 'an img element is on the page');
    await page.goBack();
    await page.waitForSelector('#view-recordings[hidden]', { state: 'attached' });

    await card(porch).locator('.recordings').click();
    await page.waitForSelector('#view-recordings:not([hidden])');
    check(norm(await page.textContent('#rec-title')) === 'Recordings · Porch camera', 'the recordings view names the camera');
    // The first 10 s segment is indexed some 11–15 s after recording starts; the view asks every 10 s.
    await page.locator('#rec-blocks .tl-span').first().waitFor({ timeout: within(40000) })
      .catch(() => { throw new Failure('no recorded span on the timeline within 40 s'); });
    note(`${await page.locator('#rec-blocks .tl-span').count()} span(s) on the timeline`);
    check(norm(await page.textContent('#rec-msg-title')) === 'Choose a moment to play', 'the view does not say how to play');
    // The longest of the spans drawn (keyed by their start), as the node lists them.
    const drawn = await page.$$eval('#rec-blocks .tl-span', (els) => els.map((el) => Number(el.dataset.key)));
    const longest = (await nodeApi('GET', `/api/cameras/${porch}/recordings`)).json
      .map((s) => ({ start: Date.parse(s.start), end: Date.parse(s.end) }))
      .filter((s) => drawn.includes(s.start))
      .reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a));
    // Single markers, and those grouped at 24 hours (listed in their group).
    const marks = await page.$$eval('#rec-marks button', (els) => els.map((el) => el.getAttribute('aria-label')));
    for (const kind of ['Person', 'Vehicle', 'Motion']) {
      check(marks.some((m) => m.startsWith(`${kind} at `)), `no ${kind} marker on the timeline: ${JSON.stringify(marks)}`);
    }

    const video = page.locator('#rec-video');
    const clipStart = async () => Date.parse(new URL(await video.getAttribute('src'), opts.base).searchParams.get('start'));
    const plays = async (what) => {
      await page.waitForFunction(() => document.getElementById('rec-video').readyState === 4, null, { timeout: within(15000), polling: 100 })
        .catch(async () => {
          const state = await page.evaluate(() => ({
            message: document.getElementById('rec-msg').innerText,
            readyState: document.getElementById('rec-video').readyState,
          }));
          throw new Failure(`${what}: the video did not load: ${JSON.stringify(state)}`);
        });
      const t0 = await video.evaluate((v) => v.currentTime);
      await page.waitForFunction((t) => document.getElementById('rec-video').currentTime - t >= 1, t0, { timeout: within(10000), polling: 100 })
        .catch(() => { throw new Failure(`${what}: currentTime did not advance by 1 s`); });
      check(await page.isHidden('#rec-msg'), `${what}: a message still covers the playing video`);
    };

    // A click inside the longest span on the timeline plays from a moment within it.
    const clicked = Date.now();
    await page.locator(`#rec-blocks .tl-span[data-key="${longest.start}"]`).click();
    await plays('a click on the timeline');
    const start = await clipStart();
    check(start >= longest.start && start < longest.end, `the click played from ${new Date(start).toISOString()}, outside the span clicked`);
    note(`a click on the timeline plays (${Date.now() - clicked} ms)`);
    const playing = norm(await page.textContent('#rec-playing'));
    check(/^Playing \d.* – .*\d/.test(playing), `the view says "${playing}"`);
    check(/^· at \d/.test(norm(await page.textContent('#rec-at'))), `no time under the playhead: "${await page.textContent('#rec-at')}"`);
    check(await page.isVisible('#rec-playhead'), 'no playhead on the timeline');

    // The download saves the window shown, as an MP4, once it is the node's hour or less.
    const link = page.locator('#rec-download');
    const over = norm(await link.textContent());
    check(over === 'Zoom in to an hour or less to download' && (await link.getAttribute('href')) === null, `at 24 hours the download says "${over}"`);
    while ((await page.getAttribute('#rec-track', 'aria-valuemax')) !== '60') await page.click('#rec-in');
    check(norm(await link.textContent()).startsWith('Download '), `the download says "${await link.textContent()}"`);
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: within(15000) }), link.click()]);
    const bytes = fs.readFileSync(await download.path());
    check(bytes.length > 10000 && bytes.subarray(4, 8).toString('latin1') === 'ftyp',
      `the download is ${bytes.length} bytes starting ${JSON.stringify(bytes.subarray(0, 8).toString('latin1'))}, not an MP4`);
    check(download.suggestedFilename().endsWith('.mp4'), `the download is named ${download.suggestedFilename()}`);
    note(`downloaded ${bytes.length} bytes as ${download.suggestedFilename()}`);
    while ((await page.getAttribute('#rec-track', 'aria-valuemax')) !== '1440') await page.click('#rec-out');
    if (!(await page.isDisabled('#rec-now'))) await page.click('#rec-now');

    // The keyboard: the newest stretch's button, then an event's marker.
    const newest = page.locator('#rec-list .rec-span').first();
    const newestStart = Number(await newest.evaluate((el) => el.parentElement.dataset.key));
    await newest.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction((from) => {
      const src = document.getElementById('rec-video').getAttribute('src') || '';
      return Date.parse(new URL(src, location.href).searchParams.get('start')) === from;
    }, newestStart, { timeout: within(5000) })
      .catch(() => { throw new Failure('Enter on the newest stretch did not play it from its start'); });
    await plays('Enter on a stretch');
    check((await newest.getAttribute('aria-current')) === 'true', 'the stretch playing is not marked');
    const motion = (await nodeApi('GET', '/api/events')).json.find((e) => e.kind === 'motion');
    await page.locator(`#rec-marks button[data-key="${motion.id}"]`).focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('rec-video').readyState >= 2, null, { timeout: within(15000) });
    const fromMark = await clipStart();
    check(fromMark >= Date.parse(motion.startedAt) - 5000, `the motion marker played from ${new Date(fromMark).toISOString()}, before the event`);
    note('the keyboard plays a stretch and an event');

    const top = async () => page.evaluate(() => scrollTo(0, 0));
    await shoot('recordings', top);
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot('recordings-dark', top);
    await page.emulateMedia({ colorScheme: 'light' });

    await page.goBack();
    await page.waitForSelector('#view-recordings[hidden]', { state: 'attached' });
    check(await video.evaluate((v) => !v.getAttribute('src') && v.paused), 'the video still plays after leaving the view');
  });

  await step('delete', async () => {
    await view('settings');
    await card(xss).locator('.delete').click();
    await page.waitForSelector('#confirm[open]');
    check(norm(await page.textContent('#confirm-title')).includes(XSS_NAME), 'the confirmation names the camera');
    await page.click('#confirm-cancel');
    await page.waitForSelector('#confirm:not([open])', { state: 'attached' });
    check((await apiCameras()).length === 2, 'cancel deleted the camera');
    check(await card(xss).isVisible(), 'cancel removed the card');
    await card(xss).locator('.delete').click();
    await page.waitForSelector('#confirm[open]');
    const answer = responseTo('DELETE', (p) => p === `/api/cameras/${xss}`);
    await page.fill('#confirm-name', XSS_NAME);
    await page.click('#confirm-ok');
    const response = await answer;
    check(response.status() === 204, `DELETE answered ${response.status()}`);
    await card(xss).waitFor({ state: 'detached', timeout: within(5000) });
    await nextStatus();
    check((await card(xss).count()) === 0, 'the deleted camera came back after a refresh');
    const left = await apiCameras();
    check(left.length === 1 && left[0].id === porch, `the node has ${left.length} cameras left`);
  });

  await step('dark', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check(bg !== 'rgb(243, 244, 246)', `the dark theme keeps the light background ${bg}`);
    await shoot('dark', scrollTop);
    await page.emulateMedia({ colorScheme: 'light' });
  });

  await step('page', async () => {
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, button')]
      .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
      .map((el) => el.id || el.className || el.tagName));
    check(unlabelled.length === 0, `controls without a label: ${unlabelled.join(', ')}`);
    check(cspViolations.length === 0, `Content-Security-Policy violations: ${cspViolations.slice(0, 3).join(' | ')}`);
    check(pageErrors.length === 0, `script errors: ${pageErrors.slice(0, 3).join(' | ')}`);
    check(dialogs.length === 0, `dialogs fired: ${dialogs.join(' | ')}`);
  });

  finish({ ok: true, steps, screenshots, elapsedMs: Date.now() - startedAt });
}

// The whole run, browser closing included, stays within --timeout-ms.
const hardStop = setTimeout(() => {
  finish({ ok: false, step: currentStep, error: `timed out after ${opts.timeoutMs} ms`, steps });
  process.exit(1); // playwright kills the browser it launched when this process exits
}, opts.timeoutMs);

try {
  await run();
} catch (error) {
  let message = error instanceof Failure ? error.message : `error: ${String(error.message || error).split('\n')[0]}`;
  if (remaining() <= 1) message = `ran out of time (--timeout-ms ${opts.timeoutMs}): ${message}`;
  const result = { ok: false, step: currentStep, error: message, steps };
  if (pageErrors.length) result.pageErrors = pageErrors.slice(0, 5);
  if (consoleErrors.length) result.consoleErrors = consoleErrors.slice(0, 5);
  if (page) {
    const file = path.join(opts.screenshots, `failed-${currentStep}.png`);
    if (await page.screenshot({ path: file, timeout: within(5000) }).then(() => true, () => false)) result.screenshot = file;
  }
  finish(result);
}
const b = browser;
browser = null;
await closeBrowser(b, CLOSE_RESERVE_MS - 300);
clearTimeout(hardStop);
process.exit(passed ? 0 : 1);

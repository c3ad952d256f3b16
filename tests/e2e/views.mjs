// The UI's four views in Debian's headless Chromium (playwright-core, launched
// as browser.mjs says), on a 1280x800 laptop and a 390x844 phone with touch:
//  1. `/` lands on /live; each tab (clicked, or tapped) shows its view alone at
//     its own address and marks itself; back, forward and reload land on the
//     view the address names; the old links /#event-ID and /#camera-ID land
//     on the Review view's event and the Settings view's card;
//  2. the header is at most 120 px high on the phone; the tab bar is at the
//     foot of the phone's screen and under the header on the laptop; on the
//     phone every control a finger can reach in each view is 44 px or more
//     each way (a check box or radio button by its label);
//  3. (laptop) the node stopped: the UI says so once, at the top, and no card
//     or tile says a camera is online; started again: within one poll the
//     banner is gone and the cards say Online again.
// For 3 it prints `stop-node` and waits for `stopped` on its stdin, then
// `start-node` and waits for `started`.
//
// Usage:
//   node tests/e2e/views.mjs --url <node URL> --camera <id> --event <id>
//        [--screenshots <dir>] [--timeout-ms N]
//
// It prints one JSON line, {"ok":true,"header":{...},"tabs":{...},"back":ms} or
// {"ok":false,"step":...,"error":...}, and exits 0 or 1 within --timeout-ms
// (default 120000).

import readline from 'node:readline';
import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`views: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/views.mjs --url <node URL> --camera <id> --event <id> [--screenshots <dir>] [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--camera': 'camera', '--event': 'event', '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 120000 }, usage);
for (const need of ['url', 'camera', 'event']) if (!opts[need]) usage(`--${need} is required`);
const WAIT = { timeout: 15000, polling: 100 };
const VIEWS = ['live', 'review', 'recordings', 'settings'];

let step = 'start';
const errors = [];
const browser = prepareBrowser('views');
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Says `what` to the test and waits for its answer `answer`. */
async function ask(what, answer) {
  process.stdout.write(`${what}\n`);
  const { value } = await lines.next();
  if (value !== answer) throw new Error(`the test answered ${JSON.stringify(value)} to ${what}`);
}

function check(ok, message) {
  if (!ok) throw new Error(message);
}

/** The view shown, checked to be the only one, with its tab marked. */
async function shown(page) {
  return page.evaluate((views) => {
    const visible = views.filter((v) => !document.getElementById(`view-${v}`).hidden);
    const marked = [...document.querySelectorAll('.tabs a[aria-current="page"]')].map((a) => a.dataset.view);
    return { path: location.pathname, search: location.search, hash: location.hash, visible, marked };
  }, VIEWS);
}

async function expectView(page, name, what) {
  await page.waitForFunction((n) => location.pathname === `/${n}` && !document.getElementById(`view-${n}`).hidden, name, WAIT)
    .catch(() => {});
  const s = await shown(page);
  check(s.path === `/${name}` && s.visible.length === 1 && s.visible[0] === name && s.marked.join() === name,
    `${what}: expected the ${name} view alone with its tab marked, got ${JSON.stringify(s)}`);
  return s;
}

/** The controls of the view shown under 44 px either way: "id-or-class w×h". */
const small = (page) => page.evaluate(() => [...document.querySelectorAll('a[href], button, input, select, summary')]
  .filter((e) => !e.closest('[hidden], dialog:not([open]), .visually-hidden, .sprite') && e.getClientRects().length)
  .map((e) => {
    const r = (/checkbox|radio/.test(e.type) && e.closest('label')) ? e.closest('label').getBoundingClientRect() : e.getBoundingClientRect();
    return [e.id || e.className || e.tagName, Math.round(r.width), Math.round(r.height)];
  })
  .filter(([, w, h]) => w < 44 || h < 44)
  .map(([what, w, h]) => `${what} ${w}×${h}`));

async function fingerSized(page, touch, name) {
  if (!touch) return;
  // What the view draws from the node's answers, drawn first.
  const drawn = { live: '#grid .tile', review: '#event-list .event', recordings: '#rec-camera option[value]:not([value=""])', settings: '#camera-list .card' };
  await page.waitForSelector(drawn[name], { state: 'attached', ...WAIT });
  const found = await small(page);
  check(found.length === 0, `controls under 44 px in ${name}: ${found.join(', ')}`);
}

async function screenshot(page, name) {
  if (opts.screenshots) await page.screenshot({ path: `${opts.screenshots}/${name}` });
}

async function tour(size, touch) {
  const [width, height] = size.split('x').map(Number);
  await launchBrowser(browser, { viewport: { width, height }, hasTouch: touch, isMobile: touch, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  const press = (selector) => (touch ? page.tap(selector) : page.click(selector));

  step = `${size}: / lands on Live`;
  await page.goto(`${opts.url}/`);
  await expectView(page, 'live', step);
  await page.waitForFunction(() => document.body.classList.contains('loaded'), null, WAIT);

  step = `${size}: the header and the tab bar`;
  const box = await page.evaluate(() => {
    const header = document.querySelector('header.top').getBoundingClientRect();
    const tabs = document.querySelector('.tabs').getBoundingClientRect();
    return { header: header.height, tabsTop: tabs.top, tabsBottom: tabs.bottom, screen: innerHeight, line: document.getElementById('node-state').textContent };
  });
  if (touch) {
    check(box.header <= 120, `the header is ${box.header} px high on the phone`);
    check(Math.abs(box.tabsBottom - box.screen) <= 1, `the tab bar ends at ${box.tabsBottom} px, the screen at ${box.screen}`);
  } else {
    check(box.tabsTop >= box.header - 1 && box.tabsTop < 200, `the tab bar is at ${box.tabsTop} px under a ${box.header} px header`);
  }
  check(/camera/.test(box.line), `the header's line says "${box.line}"`);
  await fingerSized(page, touch, 'live');
  await screenshot(page, `views-live-${touch ? 'phone' : 'laptop'}.png`);

  step = `${size}: each tab shows its view`;
  for (const name of ['review', 'settings', 'recordings']) {
    await press(`.tabs a[data-view="${name}"]`);
    await expectView(page, name, `${size}: the ${name} tab`);
    await fingerSized(page, touch, name);
    await screenshot(page, `views-${name}-${touch ? 'phone' : 'laptop'}.png`);
  }

  step = `${size}: back, forward and reload`;
  await page.goBack();
  await expectView(page, 'settings', `${size}: back once`);
  await page.goBack();
  await expectView(page, 'review', `${size}: back twice`);
  await page.goForward();
  await expectView(page, 'settings', `${size}: forward`);
  await page.reload();
  await expectView(page, 'settings', `${size}: reload`);

  step = `${size}: old links`;
  await page.goto(`${opts.url}/#event-${opts.event}`);
  const event = await expectView(page, 'review', `${size}: /#event-`);
  check(new URLSearchParams(event.search).get('event') === opts.event, `/#event- became ${JSON.stringify(event)}`);
  await page.goto(`${opts.url}/#camera-${opts.camera}`);
  const card = await expectView(page, 'settings', `${size}: /#camera-`);
  check(card.hash === `#camera-${opts.camera}`, `/#camera- became ${JSON.stringify(card)}`);
  await page.waitForFunction((id) => {
    const r = document.getElementById(`camera-${id}`)?.getBoundingClientRect();
    return r && r.top >= -1 && r.top < innerHeight;
  }, opts.camera, WAIT);
  return { header: Math.round(box.header), tabsTop: Math.round(box.tabsTop) };
}

/** What the cards and tiles say of whether their camera is online. */
const claims = (page) => page.evaluate(() => [...document.querySelectorAll('.card .state-word, .tile .state-word')].map((e) => e.textContent));

async function nodeGone() {
  const { page } = browser;
  step = 'the node stopped';
  await page.goto(`${opts.url}/settings`);
  await page.waitForFunction(() => [...document.querySelectorAll('.card .state-word')].some((e) => e.textContent === 'Online'), null, WAIT);
  await ask('stop-node', 'stopped');
  await page.waitForFunction(() => !document.getElementById('offline').hidden, null, WAIT);
  const banners = await page.evaluate(() => [...document.querySelectorAll('[role="alert"]')].filter((e) => !e.hidden && e.offsetParent).map((e) => e.id));
  check(banners.join() === 'offline', `the page says it in ${JSON.stringify(banners)}`);
  const top = await page.evaluate(() => document.getElementById('offline').getBoundingClientRect().top);
  check(top < 200, `the banner is ${top} px down the page`);
  const said = await claims(page);
  check(said.length && !said.includes('Online'), `with the node gone the page says ${JSON.stringify(said)}`);
  await screenshot(page, 'views-offline-laptop.png');

  step = 'the node back';
  await ask('start-node', 'started');
  const back = Date.now();
  // One poll: the page asks every 3 s.
  await page.waitForFunction(() => document.getElementById('offline').hidden, null, { timeout: 4000, polling: 100 });
  const after = Date.now() - back;
  // Online again once the node has seen the camera answer.
  await page.waitForFunction(() => [...document.querySelectorAll('.card .state-word')].some((e) => e.textContent === 'Online'), null, WAIT);
  return after;
}

async function run() {
  const tabs = {};
  const header = {};
  let back = null;
  for (const [size, touch] of [['1280x800', false], ['390x844', true]]) {
    const seen = await tour(size, touch);
    header[size] = seen.header;
    tabs[size] = seen.tabsTop;
    if (!touch) back = await nodeGone();
    await browser.context.close();
  }
  check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
  return { header, tabs, back };
}

reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'views', step: () => step, errors });

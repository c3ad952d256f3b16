// The live grid in Debian's headless Chromium (playwright-core, launched as
// browser.mjs says), on a laptop's width and then a phone's.
//
// Usage:
//   node tests/e2e/grid.mjs --url <node URL> --relay <go2rtc URL>
//        --cameras <id>:<sub|main>,... --disabled <id> [--screenshots <dir>] [--timeout-ms N]
//
// --cameras names the enabled cameras, each with the
// stream its tile must pull (sub when it has one, main when not); --disabled
// a camera that must show why instead of video and pull nothing. It checks:
//  1. on 1280x800, every enabled tile plays (readyState 4, currentTime
//     advancing 1 s) its stream, and the four tiles sit in one row;
//  2. a click on the first tile opens the large view on its main stream, which
//     plays; meanwhile no tile holds a session; closed, the tiles play again;
//  3. on 390x844, the tiles are in one column and all play;
//  4. on a 375x667 phone, scrolled just past the first tile (an enabled one), its WHEP session is
//     DELETEd (204 from the node) and go2rtc's stream has no consumer left,
//     while the next enabled tile plays on; scrolled back, the first tile plays again;
//  5. told the tab is hidden, every tile ends its session (as in 4); shown, they play.
// With --screenshots, the grid's pictures go there (grid-laptop.png, grid-phone.png).
// It prints one JSON line, {"ok":true,...} or {"ok":false,"step":...,"error":...},
// and exits 0 or 1 within --timeout-ms (default 90000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`grid: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/grid.mjs --url <node URL> --relay <go2rtc URL> --cameras <id>:<sub|main>,... --disabled <id> [--screenshots <dir>] [--timeout-ms N]\n');
  process.exit(2);
}

const names = {
  '--url': 'url', '--relay': 'relay', '--cameras': 'cameras', '--disabled': 'disabled', '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs',
};
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 90000 }, usage);
for (const need of ['url', 'relay', 'cameras', 'disabled']) if (!opts[need]) usage(`--${need} is required`);
const cameras = opts.cameras.split(',').map((pair) => {
  const [id, stream] = pair.split(':');
  if (stream !== 'sub' && stream !== 'main') usage(`bad --cameras entry ${pair}`);
  return { id, stream };
});
const WAIT = { timeout: 20000, polling: 100 };

let step = 'start';
const errors = [];
const posts = []; // { id, query, status, location } of each WHEP offer
const deletes = new Map(); // session path → status of its DELETE
const browser = prepareBrowser('grid');

/** The go2rtc stream a tile of `camera` pulls. */
const relayStream = (camera) => (camera.stream === 'sub' ? `${camera.id}_sub` : camera.id);

async function consumers(name) {
  const streams = await (await fetch(`${opts.relay}/api/streams`)).json();
  return (streams[name]?.consumers || []).length;
}

async function screenshot(page, name) {
  if (opts.screenshots) await page.screenshot({ path: `${opts.screenshots}/${name}` });
}

async function until(what, check, ms = 20000) {
  const started = Date.now();
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the tiles of `ids` have readyState 4 and currentTime 1 s past where it is now; their sizes, in the order of `ids`. */
async function playing(page, ids) {
  const selectors = ids.map((id) => `#grid [data-id="${id}"] video`);
  // The tiles come with the page's first status, which may follow the page's load.
  await page.waitForFunction((list) => list.every((s) => document.querySelector(s)), selectors, WAIT);
  const from = await page.evaluate((list) => list.map((s) => document.querySelector(s).currentTime), selectors);
  await page.waitForFunction(
    ([list, t0]) => list.every((s, i) => {
      const v = document.querySelector(s);
      return v.readyState === 4 && v.currentTime >= t0[i] + 1;
    }),
    [selectors, from],
    WAIT,
  );
  return page.evaluate((list) => list.map((s) => {
    const v = document.querySelector(s);
    return [v.videoWidth, v.videoHeight];
  }), selectors);
}

/** The tiles' left and top edges, in the node's order. */
const boxes = (page) => page.$$eval('#grid > li', (els) => els.map((el) => {
  const r = el.getBoundingClientRect();
  return [Math.round(r.left), Math.round(r.top)];
}));

async function run() {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('response', (response) => {
    const request = response.request();
    const url = new URL(response.url());
    const [, , , id, session] = url.pathname.split('/');
    if (!url.pathname.startsWith('/api/whep/')) return;
    if (request.method() === 'POST') posts.push({ id, query: url.search, status: response.status(), location: response.headers().location });
    if (request.method() === 'DELETE' && session) deletes.set(url.pathname, response.status());
  });
  const ids = cameras.map((c) => c.id);

  step = 'every tile plays on a laptop';
  await page.goto(opts.url);
  const sizes = await playing(page, ids);
  for (const camera of cameras) {
    const query = camera.stream === 'sub' ? '?stream=sub' : '';
    if (!posts.some((p) => p.id === camera.id && p.query === query && p.status === 201)) {
      throw new Error(`no 201 to POST /api/whep/${camera.id}${query}: ${JSON.stringify(posts)}`);
    }
  }
  const why = await page.textContent(`#grid [data-id="${opts.disabled}"] .tile-why`);
  if (!why.startsWith('Disabled')) throw new Error(`the disabled tile says "${why}"`);
  if (posts.some((p) => p.id === opts.disabled)) throw new Error('the disabled camera was asked for a stream');
  const wide = await boxes(page);
  if (new Set(wide.map(([, top]) => top)).size !== 1) throw new Error(`the 4 tiles are not in one row: ${JSON.stringify(wide)}`);
  await screenshot(page, 'grid-laptop.png');

  step = 'a click opens the main stream';
  const tileSessions = posts.filter((p) => p.status === 201).map((p) => p.location);
  await page.click(`#grid [data-id="${ids[0]}"] .tile-open`);
  await page.waitForFunction(
    (id) => window.nvrLive?.cameraId === id && window.nvrLive.stream === 'main' && document.getElementById('live-video').readyState === 4,
    ids[0],
    WAIT,
  );
  const t0 = await page.$eval('#live-video', (v) => v.currentTime);
  await page.waitForFunction((t) => document.getElementById('live-video').currentTime >= t + 1, t0, WAIT);
  const large = await page.$eval('#live-video', (v) => [v.videoWidth, v.videoHeight]);
  await until('the tiles end their sessions behind the large view', () => tileSessions.every((s) => deletes.get(s) === 204));
  await page.click('#live-close');
  await playing(page, ids);

  step = 'one column on a phone';
  await page.setViewportSize({ width: 390, height: 844 });
  await page.$eval('#live-grid', (el) => el.scrollIntoView());
  const narrow = await until('one column', async () => {
    const b = await boxes(page);
    return new Set(b.map(([left]) => left)).size === 1 ? b : null;
  });
  await playing(page, ids);
  await screenshot(page, 'grid-phone.png');

  step = 'a tile out of view ends its session';
  // The Live view holds the grid alone: on a shorter phone (375x667) its four
  // tiles run past the screen, so the first can be scrolled out of view.
  await page.setViewportSize({ width: 375, height: 667 });
  const order = await page.$$eval('#grid > li', (els) => els.map((el) => el.dataset.id));
  const [first, second] = order.map((id) => cameras.find((c) => c.id === id)).filter(Boolean);
  const before = posts.filter((p) => p.id === first.id).length;
  const session = posts.filter((p) => p.id === first.id && p.status === 201).at(-1).location;
  if (deletes.has(session)) throw new Error(`${session} was ended while in view`);
  if ((await consumers(relayStream(first))) < 1) throw new Error(`go2rtc's ${relayStream(first)} has no consumer while it plays`);
  await page.$eval(`#grid [data-id="${first.id}"]`, (el) => window.scrollTo(0, el.getBoundingClientRect().bottom + window.scrollY + 1));
  await until(`DELETE ${session} answered 204`, () => deletes.get(session) === 204);
  await until(`go2rtc's ${relayStream(first)} without consumers`, async () => (await consumers(relayStream(first))) === 0);
  await playing(page, [second.id]);
  if ((await consumers(relayStream(second))) < 1) throw new Error(`go2rtc's ${relayStream(second)} lost its consumer in view`);

  step = 'scrolled back, it plays again';
  await page.$eval('#live-grid', (el) => el.scrollIntoView());
  await playing(page, ids);
  const after = posts.filter((p) => p.id === first.id).length;
  if (after !== before + 1) throw new Error(`${after - before} offers for the first tile on its return, not 1`);

  step = 'a hidden tab ends every session';
  // Headless Chromium's tab never hides: the page is told it did, as a browser tells it.
  const sessions = posts.filter((p) => p.status === 201 && !deletes.has(p.location)).map((p) => p.location);
  const hide = (hidden) => page.evaluate((h) => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
  await hide(true);
  await until('every session DELETEd with 204', () => sessions.every((s) => deletes.get(s) === 204));
  for (const camera of cameras) {
    await until(`go2rtc's ${relayStream(camera)} without consumers`, async () => (await consumers(relayStream(camera))) === 0);
  }
  await hide(false);
  await playing(page, ids);

  return { sizes, large, wide, narrow, posts: posts.length, deletes: deletes.size };
}

reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'grid', step: () => step, errors });

// Reviewing events in Debian's headless Chromium (playwright-core, launched as
// browser.mjs says), at one viewport size, against a node the Rust test
// (tests/events.rs) filled with five events with clips on two cameras.
//
// Usage:
//   node tests/e2e/review.mjs --url <node URL> --viewport <W>x<H> [--screenshots <dir>] [--timeout-ms N]
//
// It checks, reading back from the node each time:
//  1. the header's count is the node's status.unreviewedEvents;
//  2. the filters (not reviewed, camera, kind, zone, day) list exactly the
//     events the node gives for them, newest first;
//  3. opening an event (its thumbnail) marks it reviewed on the node, and the
//     header's count drops by one (sooner than a status poll);
//  4. keep toggles the event's keep on the node, and "Kept only" lists it;
//     a keep past CLIPS_KEEP_MAX_BYTES shows the 409 in words and keeps nothing;
//  5. "Mark all reviewed" with a camera chosen marks that camera's, then with
//     all cameras the rest: the count is 0; after a reload the marks hold;
//  6. an event marked not reviewed through the API is counted, and the
//     header's count opens the list of events not reviewed;
//  7. the camera form saves "Keep recordings for N days" (retainDays), shows
//     the node's 400 at the field for 0, and blank clears it;
//  8. with 50 more events, "Older events" pages back, also when filtered, and
//     each filter and page is asked of the node (its query in the request).
// It prints one JSON line, {"ok":true,...} or {"ok":false,"step":...,"error":...},
// and exits 0 or 1 within --timeout-ms (default 90000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`review: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/review.mjs --url <node URL> --viewport <W>x<H> [--screenshots <dir>] [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--viewport': 'viewport', '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 90000 }, usage);
for (const need of ['url', 'viewport']) if (!opts[need]) usage(`--${need} is required`);
const [width, height] = opts.viewport.split('x').map(Number);
if (!width || !height) usage(`bad --viewport ${opts.viewport}`);

let step = 'start';
const errors = [];
const browser = prepareBrowser('review');
const WAIT = { timeout: 10000, polling: 50 };

async function node(method, path, body) {
  const init = { method, headers: body ? { 'Content-Type': 'application/json' } : {} };
  if (body) init.body = JSON.stringify(body);
  const response = await fetch(`${opts.url}${path}`, init);
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

const ids = async (query) => (await node('GET', `/api/events${query}`)).json.map((e) => e.id);
const unreviewed = async () => (await node('GET', '/api/status')).json.unreviewedEvents;

function check(ok, message) {
  if (!ok) throw new Error(message);
}

async function until(what, test, ms = 10000) {
  const started = Date.now();
  for (;;) {
    if (await test()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function shot(page, name) {
  if (opts.screenshots) await page.screenshot({ path: `${opts.screenshots}/review-${width}-${name}.png`, fullPage: true });
}

async function run() {
  await launchBrowser(browser, { timeout: 15000, viewport: { width, height } });
  const { page } = browser;
  page.on('pageerror', (e) => errors.push(String(e)));
  const requests = []; // the URLs of GET /api/events the page asked
  page.on('request', (r) => r.url().includes('/api/events?') && requests.push(decodeURIComponent(r.url())));
  const rows = () => page.$$eval('#event-list .event', (els) => els.map((el) => el.dataset.key));
  const badge = () => page.textContent('#review-badge');
  const row = (id) => `#event-list .event[data-key="${id}"]`;
  /** Waits until the list shows exactly `want` (ids, in order). */
  const lists = async (what, want) => {
    await until(`${what}: the list shows ${JSON.stringify(want)}`, async () => JSON.stringify(await rows()) === JSON.stringify(want))
      .catch(async (e) => { throw new Error(`${e.message}; it shows ${JSON.stringify(await rows())}`); });
  };
  const all = (await node('GET', '/api/events')).json;
  check(all.length === 5, `the node has ${all.length} events, not 5`);
  const cameras = (await node('GET', '/api/cameras')).json;
  const cameraId = (name) => cameras.find((c) => c.name === name).id;
  const [door, yard] = [cameraId('Door'), cameraId('Yard')];

  step = 'header count';
  await page.goto(`${opts.url}/`);
  const count = await unreviewed();
  check(count === 5, `the node counts ${count} not reviewed`);
  await page.waitForFunction((n) => document.getElementById('review-badge').textContent === `To review: ${n}`, count, WAIT);
  await lists('all events', all.map((e) => e.id));
  await page.locator('#events').scrollIntoViewIfNeeded();
  await shot(page, 'list');

  step = 'filters';
  // Each filter alone lists what the node gives for it, and what it should give.
  const filters = [
    ['#filter-reviewed', 'false', '?reviewed=false', all],
    ['#filter-camera', door, `?cameraId=${door}`, all.filter((e) => e.cameraId === door)],
    ['#filter-kind', 'vehicle', '?kind=vehicle', all.filter((e) => e.kind === 'vehicle')],
    ['#filter-zone', 'Gate', '?zone=Gate', all.filter((e) => e.zones.includes('Gate'))],
  ];
  for (const [select, value, query, want] of filters) {
    const fromNode = await ids(query);
    check(JSON.stringify(fromNode) === JSON.stringify(want.map((e) => e.id)), `the node's ${query} gives ${fromNode}`);
    check(want.length > 0 && want.length < 5 || value === 'false', `${query} picks out some events only`);
    await page.selectOption(select, value);
    await lists(query, fromNode);
    // Filtered by the node, not on the page.
    await until(`the page asks the node for ${query}`, () => requests.some((u) => u.endsWith(query.slice(1))));
    await page.selectOption(select, '');
  }
  await page.fill('#filter-day', '2026-11-22');
  const day = all.filter((e) => e.startedAt.startsWith('2026-11-22'));
  check(day.length === 4, 'four events on Nov 22');
  await lists('the day Nov 22', day.map((e) => e.id));
  await until('the page asks the node for a day', () => requests.some((u) => /after=2026-11-2[12]T.*before=2026-11-2[23]T/.test(u)));
  await page.fill('#filter-day', '');
  await lists('no day', all.map((e) => e.id));

  step = 'open marks reviewed';
  const opened = all[0];
  await page.click(`${row(opened.id)} .ev-shot`);
  await page.waitForSelector('#clip[open]', WAIT);
  const t0 = Date.now();
  await page.waitForFunction((n) => document.getElementById('review-badge').textContent === `To review: ${n}`, count - 1, WAIT);
  const headerMs = Date.now() - t0;
  check(headerMs < 2500, `the header took ${headerMs} ms to count one less (a status poll is 3 s)`);
  check((await ids('?reviewed=true')).join() === opened.id, 'the node has the opened event reviewed, and only it');
  check(await unreviewed() === count - 1, 'the node counts one less not reviewed');
  await page.click('#clip-close');
  check((await page.textContent(`${row(opened.id)} .ev-seen`)) === 'Reviewed', 'the opened event says Reviewed');
  check((await page.textContent(`${row(all[1].id)} .ev-seen`)) === 'New', 'an event not opened says New');
  await page.selectOption('#filter-reviewed', 'true');
  await lists('reviewed', [opened.id]);
  await page.selectOption('#filter-reviewed', 'false');
  await lists('not reviewed', all.slice(1).map((e) => e.id));
  await page.selectOption('#filter-reviewed', '');

  step = 'keep';
  const kept = all[1];
  await page.click(`${row(kept.id)} .ev-keep`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('aria-pressed') === 'true', `${row(kept.id)} .ev-keep`, WAIT);
  check((await ids('?keep=true')).join() === kept.id, 'the node keeps the event');
  await page.check('#filter-keep');
  await lists('kept only', [kept.id]);
  await page.uncheck('#filter-keep');
  await lists('all again', all.map((e) => e.id));
  // The second 1000-byte clip would pass CLIPS_KEEP_MAX_BYTES (1500): refused.
  const refused = all[2];
  await page.click(`${row(refused.id)} .ev-keep`);
  await page.waitForSelector('#events-msg:not([hidden])', WAIT);
  const said = (await page.textContent('#events-msg')).replace(/\u00a0/g, ' ');
  check(said.startsWith('Cannot keep this event: kept events already take 1.0 kB of the 1.5 kB'), `the refusal says "${said}"`);
  check((await ids('?keep=true')).join() === kept.id, 'the refused keep changed nothing on the node');
  check((await page.getAttribute(`${row(refused.id)} .ev-keep`, 'aria-pressed')) === 'false', 'the refused event shows as not kept');
  await shot(page, 'refused');
  // Unkept, and kept again: it toggles.
  await page.click(`${row(kept.id)} .ev-keep`);
  await until('unkept on the node', async () => (await ids('?keep=true')).length === 0);
  await page.click(`${row(kept.id)} .ev-keep`);
  await until('kept again on the node', async () => (await ids('?keep=true')).join() === kept.id);

  step = 'mark all reviewed';
  await page.selectOption('#filter-camera', yard);
  await page.click('#events-mark-all');
  const yardLeft = async () => (await node('GET', '/api/status')).json.cameras.find((c) => c.id === yard).unreviewedEvents;
  await until('Yard\'s events marked', async () => (await yardLeft()) === 0);
  const doorLeft = all.filter((e) => e.cameraId === door && e.id !== opened.id).length;
  check(await unreviewed() === doorLeft, `only Yard's were marked: ${await unreviewed()} left, not ${doorLeft}`);
  await page.waitForFunction((n) => document.getElementById('review-badge').textContent === `To review: ${n}`, doorLeft, WAIT);
  await page.selectOption('#filter-camera', '');
  await page.click('#events-mark-all');
  await page.waitForFunction(() => document.getElementById('review-badge').textContent === 'Nothing to review', null, WAIT);
  check(await unreviewed() === 0, 'the node counts none not reviewed');

  step = 'reload';
  await page.reload();
  await lists('after a reload', all.map((e) => e.id));
  await page.waitForFunction(() => document.getElementById('review-badge').textContent === 'Nothing to review', null, WAIT);
  const seen = await page.$$eval('#event-list .ev-seen', (els) => els.map((el) => el.textContent));
  check(seen.every((s) => s === 'Reviewed'), `after a reload the rows say ${seen}`);
  check((await page.getAttribute(`${row(kept.id)} .ev-keep`, 'aria-pressed')) === 'true', 'after a reload the kept event shows as kept');

  step = 'header link';
  const again = all[3];
  check((await node('PATCH', `/api/events/${again.id}`, { reviewed: false })).status === 200, 'unmarking through the API');
  await page.waitForFunction(() => document.getElementById('review-badge').textContent === 'To review: 1', null, WAIT);
  await page.click('#review-badge');
  check((await page.inputValue('#filter-reviewed')) === 'false', 'the header\'s count chose "Not reviewed"');
  await lists('the header\'s link', [again.id]);
  await shot(page, 'header-link');
  await page.selectOption('#filter-reviewed', '');

  step = 'retainDays';
  const edit = async () => {
    await page.click(`#camera-${door} .edit`);
    await page.waitForSelector('#edit[open]', WAIT);
  };
  /** Waits for the dialog to close after Save, or says what it shows instead. */
  const saved = () => page.waitForSelector('#edit:not([open])', { ...WAIT, state: 'attached' }).catch(async (e) => {
    await shot(page, 'edit-stuck');
    const shown = await page.$$eval('#edit .form-error:not([hidden]), #edit .field-error:not([hidden]), #edit-progress:not([hidden])', (els) => els.map((el) => el.textContent));
    throw new Error(`the edit dialog did not close: ${JSON.stringify(shown)} (${e.message.split('\n')[0]})`);
  });
  const retain = async () => (await node('GET', '/api/cameras')).json.find((c) => c.id === door).retainDays;
  await edit();
  check((await page.inputValue('#edit-retainDays')) === '', 'no age limit shows blank');
  await page.fill('#edit-retainDays', '30');
  await page.click('#edit-save');
  await saved();
  check(await retain() === 30, `the node has retainDays ${await retain()}, not 30`);
  await edit();
  check((await page.inputValue('#edit-retainDays')) === '30', 'the form shows the 30 days saved');
  await page.fill('#edit-retainDays', '0');
  await page.click('#edit-save');
  await page.waitForSelector('#edit-retainDays-error:not([hidden])', WAIT);
  const error = await page.textContent('#edit-retainDays-error');
  check(error === 'Days to keep recordings must be a whole number of days from 1 to 3650, or blank for no age limit', `the field says "${error}"`);
  check((await page.getAttribute('#edit-retainDays', 'aria-invalid')) === 'true', 'the field is marked invalid');
  check(await retain() === 30, 'the refused value changed nothing');
  await shot(page, 'retain-error');
  await page.fill('#edit-retainDays', '');
  await page.click('#edit-save');
  await saved();
  check(await retain() === null, 'blank saved no age limit');

  step = 'paging';
  // 50 older events (from loopback, as a detector posts them): the first page
  // is the node's 50 newest, "Older events" adds the other 5, then is gone.
  for (let i = 0; i < 50; i += 1) {
    const at = new Date(Date.UTC(2026, 10, 10, 8, i)).toISOString();
    const r = await node('POST', '/api/events', { cameraId: door, kind: 'motion', score: 0.5, startedAt: at, endedAt: at });
    check(r.status === 201, `POST /api/events answered ${r.status}`);
  }
  const first = await ids('');
  await lists('the first page', first);
  check(await page.isVisible('#events-older'), 'a full page offers "Older events"');
  await page.click('#events-older');
  const older = await ids(`?before=${encodeURIComponent(new Date(Date.UTC(2026, 10, 10, 8, 5)).toISOString())}`);
  check(older.length === 5, `the node has ${older.length} events before the first page's last`);
  await lists('two pages', [...first, ...older]);
  await page.waitForSelector('#events-older', { ...WAIT, state: 'hidden' });
  // Filtered, the next page is the filter's: Door's not reviewed.
  await page.selectOption('#filter-camera', door);
  await page.selectOption('#filter-reviewed', 'false');
  const doorFirst = await ids(`?reviewed=false&cameraId=${door}`);
  await lists('Door not reviewed', doorFirst);
  await page.click('#events-older');
  const doorEnd = (await node('GET', `/api/events?reviewed=false&cameraId=${door}`)).json.at(-1).startedAt;
  const doorOlder = await ids(`?reviewed=false&cameraId=${door}&before=${encodeURIComponent(doorEnd)}`);
  check(doorOlder.length === 1, `the node has ${doorOlder.length} of Door's not reviewed past the first page`);
  await lists('Door not reviewed, two pages', [...doorFirst, ...doorOlder]);
  check(requests.some((u) => u.includes(`reviewed=false&cameraId=${door}&before=`)), `the page asked the node for the older page: ${requests.slice(-3)}`);

  check(errors.length === 0, `script errors: ${errors.slice(0, 3).join(' | ')}`);
  return { headerMs };
}

await reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'review', step: () => step, errors });

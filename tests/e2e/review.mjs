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
//  5. "Mark all reviewed" with Kind = Vehicle asks "Mark 2 events reviewed?",
//     marks the vehicles only (the node's answer and the list), says so as a
//     success, and its Undo restores exactly those; /review?event=<id> opens
//     that event's player, whose "Next new" and "Previous new" go to the
//     older and newer events not reviewed; with a camera chosen it marks that
//     camera's, then with all cameras the rest: the count is 0; after a
//     reload the marks hold;
//  6. an event marked not reviewed through the API is counted, and the
//     header's count opens the list of events not reviewed;
//  7. the camera form saves "Keep recordings for N days" (retainDays), shows
//     the node's 400 at the field for 0, and blank clears it;
//  8. with 50 more events, "Older events" pages back, also when filtered, and
//     each filter and page is asked of the node (its query in the request);
//  9. the first event is in sight without scrolling (above the tab bar on a
//     phone), and on a phone its Keep button is at least 44 px high.
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
  const phone = width <= 600;
  await launchBrowser(browser, { timeout: 15000, viewport: { width, height }, hasTouch: phone, isMobile: phone });
  const { page } = browser;
  page.on('pageerror', (e) => errors.push(String(e)));
  const requests = []; // the URLs of GET /api/events the page asked
  page.on('request', (r) => r.url().includes('/api/events?') && requests.push(decodeURIComponent(r.url())));
  const rows = () => page.$$eval('#event-list .event', (els) => els.map((el) => el.dataset.key));
  const badge = () => page.textContent('#review-badge');
  const row = (id) => `#event-list .event[data-key="${id}"]`;
  /** On a phone the filters are folded behind a button. */
  const unfold = async () => {
    if (!(await page.isHidden('#filter-kind'))) return;
    await page.click('#filters-fold');
    check((await page.getAttribute('#filters-fold', 'aria-expanded')) === 'true', 'the fold says it is open');
  };
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
  await page.goto(`${opts.url}/review`);
  const count = await unreviewed();
  check(count === 5, `the node counts ${count} not reviewed`);
  await page.waitForFunction((n) => document.getElementById('review-badge').textContent === `${n} to review`, count, WAIT);
  await lists('all events', all.map((e) => e.id));
  await shot(page, 'list');

  step = 'first event in sight';
  const card = await page.locator('#event-list .event').first().boundingBox();
  const foot = phone ? (await page.locator('nav.tabs').boundingBox()).y : height;
  check(card.y >= 0 && card.y + card.height <= foot, `the first event is at ${card.y}..${card.y + card.height} px, the view ends at ${foot} px`);
  const shotWidth = (await page.locator('#event-list .ev-shot').first().boundingBox()).width;
  check(shotWidth >= (phone ? 300 : 160), `the thumbnail is ${shotWidth} px wide`);
  if (phone) {
    for (const sel of ['#event-list .ev-keep', '#filters-fold', '#events-mark-all']) {
      const box = await page.locator(sel).first().boundingBox();
      check(box.height >= 44, `${sel} is ${box.height} px high`);
    }
  }

  step = 'filters';
  check(await page.isHidden('#filter-kind') === phone, 'on a phone (only) the filters are folded');
  await unfold();
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
  await page.selectOption('#filter-kind', 'person');
  await page.waitForFunction(() => document.getElementById('events-count').textContent === '1 matching event, newest first', null, WAIT);
  await page.selectOption('#filter-kind', '');
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
  await page.waitForFunction((n) => document.getElementById('review-badge').textContent === `${n} to review`, count - 1, WAIT);
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
  // Kind = Vehicle: the vehicles only, counted first, confirmed, then undone.
  const vehicles = all.filter((e) => e.kind === 'vehicle');
  check(vehicles.length === 2 && vehicles.every((e) => e.id !== opened.id), 'two vehicles, neither opened');
  const notReviewed = async () => (await ids('?reviewed=false')).sort().join();
  const before = await notReviewed();
  await page.selectOption('#filter-kind', 'vehicle');
  await lists('vehicles', vehicles.map((e) => e.id));
  await page.click('#events-mark-all');
  await page.waitForSelector('#mark[open]', WAIT);
  const asked = await page.textContent('#mark-title');
  check(asked === 'Mark 2 events reviewed?', `the confirmation asks "${asked}"`);
  check(await notReviewed() === before, 'asking marked nothing');
  await shot(page, 'mark-confirm');
  const answer = page.waitForResponse((r) => r.url().endsWith('/api/events/reviewed') && !r.request().postData().includes('dryRun'));
  await page.click('#mark button[value="ok"]');
  const marked = await (await answer).json();
  check(JSON.stringify(marked.ids.sort()) === JSON.stringify(vehicles.map((e) => e.id).sort()), `the node marked ${JSON.stringify(marked)}`);
  const people = all.filter((e) => e.kind === 'person');
  check(people.length === 1 && (await ids('?reviewed=false&kind=person')).join() === people[0].id, 'the person is not reviewed');
  check((await ids('?reviewed=false&kind=vehicle')).length === 0, 'the vehicles are reviewed');
  await page.waitForSelector('#events-done:not([hidden])', WAIT);
  check((await page.textContent('#events-done-text')) === 'Marked 2 events reviewed.', `the success says "${await page.textContent('#events-done-text')}"`);
  check(await page.isHidden('#events-msg'), 'no error is shown');
  check((await page.$$eval('#event-list .ev-seen', (els) => els.map((el) => el.textContent))).every((t) => t === 'Reviewed'), 'the vehicles\' rows say Reviewed');
  await shot(page, 'marked');
  await page.click('#events-undo');
  await until('the vehicles not reviewed again', async () => (await notReviewed()) === before);
  await page.waitForFunction(() => [...document.querySelectorAll('#event-list .ev-seen')].every((el) => el.textContent === 'New'), null, WAIT);
  await page.waitForFunction(() => document.getElementById('events-done-text').textContent.startsWith('Undone: 2 events'), null, WAIT);
  await page.selectOption('#filter-kind', '');

  step = 'player from the address';
  // /review?event=<id> opens its player; Next/Previous new go to the events not reviewed.
  const [newer, middle, elder] = [all[1], all[2], all[3]];
  check([newer, middle, elder].every((e) => e.id !== opened.id), 'three events not reviewed in a row');
  await page.goto(`${opts.url}/review?event=${middle.id}`);
  await page.waitForSelector('#clip[open]', WAIT);
  const title = () => page.textContent('#clip-title');
  const cameraName = (e) => (e.cameraId === door ? 'Door' : 'Yard');
  const titled = async (e) => page.waitForFunction((want) => document.getElementById('clip-title').textContent.startsWith(want),
    `${e.kind[0].toUpperCase()}${e.kind.slice(1)} at ${cameraName(e)}`, WAIT).catch(async () => { throw new Error(`the player shows "${await title()}", not the ${e.kind} at ${cameraName(e)}`); });
  await titled(middle);
  await until('the opened event reviewed', async () => !(await ids('?reviewed=false')).includes(middle.id));
  const rec = await page.getAttribute('#clip-rec', 'href');
  check(rec === `/recordings?camera=${middle.cameraId}&t=${middle.startedAt}` || rec.startsWith(`/recordings?camera=${middle.cameraId}&t=2026-11-22T10:0`), `"Open in recordings" goes to ${rec}`);
  await shot(page, 'player');
  await page.click('#clip-next');
  await titled(elder);
  await page.click('#clip-prev');
  await titled(newer);
  await page.waitForFunction(() => document.getElementById('clip-prev').disabled, null, WAIT);
  check(!(await page.isDisabled('#clip-next')), 'the older event not reviewed is offered');
  check((await ids('?reviewed=false')).every((id) => ![newer.id, middle.id, elder.id].includes(id)), 'the three opened are reviewed');
  // Keep from the player: the kept event stops being kept, then is kept again.
  check(newer.id === kept.id, 'the newer event is the kept one');
  await page.click('#clip-keep');
  await until('unkept from the player', async () => (await ids('?keep=true')).length === 0);
  await page.waitForFunction(() => document.getElementById('clip-keep').getAttribute('aria-pressed') === 'false', null, WAIT);
  await page.click('#clip-keep');
  await until('kept from the player', async () => (await ids('?keep=true')).join() === kept.id);
  await page.click('#clip-close');
  await unfold();
  check(!page.url().includes('event='), `closed, the address is ${page.url()}`);

  step = 'mark all of a camera';
  // Yard's last one not reviewed again (both were opened): one to mark.
  check((await node('PATCH', `/api/events/${all[0].id}`, { reviewed: false })).status === 200, 'unmarking through the API');
  await page.selectOption('#filter-camera', yard);
  await page.click('#events-mark-all');
  await page.waitForFunction(() => document.getElementById('mark-title').textContent === 'Mark 1 event reviewed?', null, WAIT);
  await page.click('#mark button[value="ok"]');
  const yardLeft = async () => (await node('GET', '/api/status')).json.cameras.find((c) => c.id === yard).unreviewedEvents;
  await until('Yard\'s events marked', async () => (await yardLeft()) === 0);
  const doorLeft = (await ids(`?reviewed=false&cameraId=${door}`)).length;
  check(await unreviewed() === doorLeft, `only Yard's were marked: ${await unreviewed()} left, not ${doorLeft}`);
  await page.waitForFunction((n) => (n ? document.getElementById('review-badge').textContent === `${n} to review` : document.getElementById('review-badge').hidden), doorLeft, WAIT);
  await page.selectOption('#filter-camera', '');
  await page.click('#events-mark-all');
  if (doorLeft) await page.click('#mark button[value="ok"]');
  await page.waitForFunction(() => document.getElementById('review-badge').hidden, null, WAIT);
  check(await unreviewed() === 0, 'the node counts none not reviewed');

  step = 'reload';
  await page.reload();
  await lists('after a reload', all.map((e) => e.id));
  await page.waitForFunction(() => document.getElementById('review-badge').hidden, null, WAIT);
  const seen = await page.$$eval('#event-list .ev-seen', (els) => els.map((el) => el.textContent));
  check(seen.every((s) => s === 'Reviewed'), `after a reload the rows say ${seen}`);
  check((await page.getAttribute(`${row(kept.id)} .ev-keep`, 'aria-pressed')) === 'true', 'after a reload the kept event shows as kept');

  step = 'header link';
  const again = all[3];
  check((await node('PATCH', `/api/events/${again.id}`, { reviewed: false })).status === 200, 'unmarking through the API');
  await page.waitForFunction(() => document.getElementById('review-badge').textContent === '1 to review', null, WAIT);
  await page.click('#review-badge');
  check((await page.inputValue('#filter-reviewed')) === 'false', 'the header\'s count chose "Not reviewed"');
  await lists('the header\'s link', [again.id]);
  await unfold();
  await shot(page, 'header-link');
  await page.selectOption('#filter-reviewed', '');

  step = 'retainDays';
  await page.goto(`${opts.url}/settings`);
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
  await page.goto(`${opts.url}/review`);
  await unfold();
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

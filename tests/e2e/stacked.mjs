// The recordings view's timeline of all cameras stacked, in Debian's headless
// Chromium (playwright-core, launched as browser.mjs says), on two cameras
// with 30 s recorded each, the second's a minute after the first's (--start),
// two days ago; the first has 10 events in its span (older than its 50 newest)
// and the second one:
//  1. /recordings (all cameras) shows a row a camera, named, in the node's order; at 7
//     days, the wheel (aimed at the first camera's block) zooms to 10 minutes;
//  2. a click 40 % into the second row's block plays the second camera from
//     that moment (the video's source is its recording.mp4 from there), the
//     playhead on that row and following the video;
//  3. each row's blocks are where the node's spans are on the window shown
//     (the download's), within 1 px, inside their row;
//  4. the events of the window are marked on their cameras' rows within 1 px
//     of their starts, the first camera's though they are not among the 50
//     newest; "‹ Event" and "Event ›" step between the cameras' events,
//     playing each camera in turn;
//  5. at 390x844 with touch, the blocks are still where the spans are and a
//     tap on the first row plays the first camera from there;
//  6. choosing the second camera alone shows its row (unnamed) and its
//     stretch, and lets go of the first camera's video.
//
// Usage:
//   node tests/e2e/stacked.mjs --url <node URL> --cameras <id>,<id> --start <ms> [--timeout-ms N]
//
// It prints one JSON line, {"ok":true,...} or {"ok":false,"step":...,"error":...},
// and exits 0 or 1 within --timeout-ms (default 90000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`stacked: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/stacked.mjs --url <node URL> --cameras <id>,<id> --start <ms> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--cameras': 'cameras', '--start': 'start', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 90000 }, usage);
for (const need of ['url', 'cameras', 'start']) if (!opts[need]) usage(`--${need} is required`);
const [first, second] = opts.cameras.split(',');
const WAIT = { timeout: 20000, polling: 100 };

let step = 'start';
const errors = [];
const browser = prepareBrowser('stacked');

/** The node's spans and events of each camera: {id: {spans: [{start, end}], events: [{id, start}]}}. */
const nodeSays = (page) => page.evaluate(async (ids) => {
  const out = {};
  const range = `start=${new Date(Date.now() - 7 * 86400000).toISOString()}&end=${new Date().toISOString()}`;
  for (const id of ids) {
    const spans = await (await fetch(`/api/cameras/${id}/recordings?${range}`)).json();
    const events = [];
    for (let before = new Date().toISOString(); ;) {
      const page = await (await fetch(`/api/events?cameraId=${id}&before=${before}`)).json();
      events.push(...page.map((e) => ({ id: e.id, start: Date.parse(e.startedAt) })));
      if (page.length < 50) break;
      before = page[page.length - 1].startedAt;
    }
    out[id] = { spans: spans.map((s) => ({ start: Date.parse(s.start), end: Date.parse(s.end) })), events };
  }
  return out;
}, [first, second]);

/** Each row's rect, blocks and markers' middles, by camera id. */
const drawn = (page) => page.evaluate(() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2 }; };
  const track = document.getElementById('rec-track');
  const rows = {};
  for (const row of document.querySelectorAll('#rec-blocks .tl-row')) {
    rows[row.dataset.key] = { ...box(row), name: row.querySelector('.tl-name').textContent, nameBox: box(row.querySelector('.tl-name')), blocks: [...row.querySelectorAll('.tl-span')].map(box), marks: [] };
  }
  for (const lane of document.querySelectorAll('#rec-marks .tl-lane')) {
    rows[lane.dataset.key].marks = [...lane.querySelectorAll('.tl-mark')].map((m) => ({ key: m.dataset.key, ...box(m) }));
  }
  const r = track.getBoundingClientRect();
  return { rows, order: Object.keys(rows), track: { left: r.left + track.clientLeft, width: track.clientWidth, top: r.top, bottom: r.bottom } };
});

/** The video's camera and start, from its source. */
const playing = (page) => page.evaluate(() => {
  const src = document.getElementById('rec-video').src;
  if (!src) return null;
  const url = new URL(src);
  return { camera: url.pathname.split('/')[3], start: Date.parse(url.searchParams.get('start')), ready: document.getElementById('rec-video').readyState };
});

async function waitPlaying(page, camera, start, slackMs) {
  await page.waitForFunction(([id, t, slack]) => {
    const v = document.getElementById('rec-video');
    if (!v.src || v.readyState < 3) return false;
    const url = new URL(v.src);
    return url.pathname === `/api/cameras/${id}/recording.mp4` && Math.abs(Date.parse(url.searchParams.get('start')) - t) <= slack;
  }, [camera, start, slackMs], WAIT).catch(async (e) => {
    throw new Error(`not playing ${camera} from ${new Date(start).toISOString()}: ${JSON.stringify(await playing(page))} (${e.message.split('\n')[0]})`);
  });
}

/** The playhead's middle and which row it is on, with the video's time in its clip and the clip's start. */
const playhead = (page) => page.evaluate(() => {
  const r = document.getElementById('rec-playhead').getBoundingClientRect();
  const y = (r.top + r.bottom) / 2;
  const v = document.getElementById('rec-video');
  const row = [...document.querySelectorAll('#rec-blocks .tl-row')].find((el) => { const b = el.getBoundingClientRect(); return y > b.top && y < b.bottom; });
  return { x: r.left + r.width / 2, row: row?.dataset.key ?? null, time: v.currentTime, start: Date.parse(new URL(v.src).searchParams.get('start')) };
});

/** The window shown, from the download's link (a camera is playing, and the window is an hour at most). */
async function windowShown(page) {
  const link = await page.$eval('#rec-download', (el) => el.href);
  if (!link) throw new Error('no download link while a camera plays');
  const q = new URL(link).searchParams;
  return { from: Date.parse(q.get('start')), to: Date.parse(q.get('end')) };
}

/** Step 3 (and 5): every row's blocks where the node's spans are, within 1 px, inside the row. */
async function checkSpans(page, node) {
  const { from, to } = await windowShown(page);
  const d = await drawn(page);
  const x = (ms) => d.track.left + ((ms - from) / (to - from)) * d.track.width;
  const off = [];
  for (const id of [first, second]) {
    const row = d.rows[id];
    const spans = node[id].spans.filter((s) => s.end > from && s.start < to);
    if (row.blocks.length !== spans.length) throw new Error(`the row of ${id} has ${row.blocks.length} blocks, the node ${spans.length} spans`);
    spans.forEach((s, i) => {
      const b = row.blocks[i];
      const dl = b.left - x(s.start);
      const dr = b.right - x(s.end);
      if (Math.abs(dl) > 1 || Math.abs(dr) > 1) throw new Error(`${id}'s block ${i} is at ${b.left}-${b.right} px, its span at ${x(s.start)}-${x(s.end)} px`);
      if (b.top < row.top - 0.5 || b.bottom > row.bottom + 0.5) throw new Error(`${id}'s block is at y ${b.top}-${b.bottom}, its row at ${row.top}-${row.bottom}`);
      off.push(Math.round(Math.max(Math.abs(dl), Math.abs(dr)) * 100) / 100);
    });
  }
  if (!(d.rows[first].bottom <= d.rows[second].top + 0.5)) throw new Error(`the rows overlap: ${JSON.stringify(d.rows)}`);
  return { x, d, off };
}

async function run() {
  await launchBrowser(browser, { viewport: { width: 1280, height: 900 }, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  const start = Number(opts.start);

  step = 'all cameras';
  await page.goto(`${opts.url}/recordings`);
  await page.waitForFunction(() => document.getElementById('rec-title').textContent === 'Recordings · All cameras', null, WAIT);
  await page.waitForFunction(() => document.querySelectorAll('#rec-blocks .tl-row').length === 2, null, WAIT);
  const node = await nodeSays(page);
  const names = await page.evaluate(async () => (await (await fetch('/api/cameras')).json()).map((c) => [c.id, c.name]));
  const rows = await drawn(page);
  if (JSON.stringify(rows.order) !== JSON.stringify(names.map(([id]) => id))) throw new Error(`the rows are ${rows.order}, the cameras ${names}`);
  for (const [id, name] of names) {
    const row = rows.rows[id];
    if (row.name !== name || !(row.nameBox.right - row.nameBox.left > 0)) throw new Error(`the row of ${name} is named "${row.name}"`);
  }

  step = 'zoom to 10 minutes';
  await page.click('#rec-out');
  await page.click('#rec-out');
  await page.waitForFunction((id) => document.querySelector(`#rec-blocks .tl-row[data-key="${id}"] .tl-span`), first, WAIT);
  for (let steps = 0; (await page.getAttribute('#rec-track', 'aria-valuemax')) !== '10'; steps += 1) {
    if (steps > 10) throw new Error('10 wheel steps and not at 10 minutes');
    const before = await page.getAttribute('#rec-track', 'aria-valuemax');
    const b = (await drawn(page)).rows[first].blocks[0];
    if (!b) throw new Error(`no block of ${first} at ${before} minutes`);
    await page.mouse.move(b.x, b.y);
    await page.mouse.wheel(0, -100);
    await page.waitForFunction((m) => document.getElementById('rec-track').getAttribute('aria-valuemax') !== m, before, WAIT);
  }
  await page.waitForFunction((id) => document.querySelector(`#rec-blocks .tl-row[data-key="${id}"] .tl-span`), second, WAIT);

  step = 'a click on the second row plays the second camera';
  const yard = node[second].spans[0];
  const b = (await drawn(page)).rows[second].blocks[0];
  const clickX = b.left + (b.right - b.left) * 0.4;
  const clicked = yard.start + (yard.end - yard.start) * 0.4;
  await page.mouse.click(clickX, b.y);
  await waitPlaying(page, second, clicked, 1500);
  // Half a second in: the playhead moves on the video's timeupdates, a few a second.
  await page.waitForFunction(() => document.getElementById('rec-video').currentTime > 0.5, null, WAIT);
  const head0 = await playhead(page);
  await page.waitForFunction((t) => document.getElementById('rec-video').currentTime > t + 2, head0.time, WAIT);
  const head1 = await playhead(page);

  step = 'the rows show the node\'s spans';
  const { x, off } = await checkSpans(page, node);
  for (const head of [head0, head1]) {
    const at = x(head.start + head.time * 1000);
    if (head.row !== second || Math.abs(head.x - at) > 2) throw new Error(`the playhead is at ${head.x} px on ${head.row}, the video at ${at} px on ${second}: ${JSON.stringify([head0, head1])}`);
  }
  if (!(head1.x > head0.x)) throw new Error(`the playhead does not follow the video: ${JSON.stringify([head0, head1])}`);

  step = 'the window\'s events on their rows';
  const { from, to } = await windowShown(page);
  const expected = (id) => node[id].events.filter((e) => e.start >= from && e.start <= to);
  await page.waitForFunction(([a, na, b, nb]) => document.querySelectorAll(`#rec-marks .tl-lane[data-key="${a}"] .tl-mark`).length === na
    && document.querySelectorAll(`#rec-marks .tl-lane[data-key="${b}"] .tl-mark`).length === nb,
  [first, expected(first).length, second, expected(second).length], WAIT).catch(async () => {
    const d = await drawn(page);
    throw new Error(`marks ${d.rows[first].marks.length} and ${d.rows[second].marks.length}, the node has ${expected(first).length} and ${expected(second).length} in the window`);
  });
  if (expected(first).length !== 10 || expected(second).length !== 1) throw new Error(`the window has ${expected(first).length} and ${expected(second).length} events`);
  const d = await drawn(page);
  const markOff = [];
  for (const id of [first, second]) {
    for (const e of expected(id)) {
      const m = d.rows[id].marks.find((k) => k.key === e.id);
      if (!m || Math.abs(m.x - x(e.start)) > 1) throw new Error(`${id}'s event ${e.id} is marked at ${m?.x} px, it started at ${x(e.start)} px`);
      if (m.top < d.rows[id].top - 4 || m.top > d.rows[id].bottom) throw new Error(`${id}'s marker is at y ${m.top}, its row at ${d.rows[id].top}-${d.rows[id].bottom}`);
      markOff.push(Math.round(Math.abs(m.x - x(e.start)) * 100) / 100);
    }
  }

  step = 'events of both cameras, one after the other';
  const yardEvent = expected(second)[0].start;
  const porchLast = Math.max(...expected(first).map((e) => e.start));
  await page.click('#rec-prev');
  await waitPlaying(page, second, yardEvent, 0);
  await page.click('#rec-prev');
  await waitPlaying(page, first, porchLast, 0);
  if ((await playhead(page)).row !== first) throw new Error(`after "‹ Event" to ${first}, the playhead is on ${(await playhead(page)).row}`);
  await page.click('#rec-next');
  await waitPlaying(page, second, yardEvent, 0);

  step = 'a phone';
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForFunction(() => document.getElementById('rec-track').clientWidth < 390, null, WAIT);
  // Touch first: a finger's markers are larger, and the rows with them.
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 2 });
  await page.$eval('#rec-track', (el) => el.scrollIntoView({ block: 'center' }));
  const phone = await checkSpans(page, node);
  const porch = phone.d.rows[first].blocks[0];
  const tapX = porch.left + (porch.right - porch.left) * 0.5;
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: tapX, y: porch.y, id: 1 }] });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  const perPx = (to - from) / phone.d.track.width;
  await waitPlaying(page, first, start + 15000, perPx * 1.5 + 500);
  await page.waitForFunction((id) => {
    const r = document.getElementById('rec-playhead').getBoundingClientRect();
    const b = document.querySelector(`#rec-blocks .tl-row[data-key="${id}"]`).getBoundingClientRect();
    return r.width > 0 && (r.top + r.bottom) / 2 > b.top && (r.top + r.bottom) / 2 < b.bottom;
  }, first, WAIT);

  step = 'back to one camera';
  await page.selectOption('#rec-camera', second);
  await page.waitForFunction((id) => {
    const rows = document.querySelectorAll('#rec-blocks .tl-row');
    return rows.length === 1 && rows[0].dataset.key === id && document.querySelectorAll('#rec-list .rec-span').length === 1;
  }, second, WAIT);
  const single = await page.evaluate(() => [document.getElementById('rec-title').textContent, document.getElementById('rec-video').getAttribute('src'),
    getComputedStyle(document.querySelector('#rec-blocks .tl-name')).display]);
  const yardName = names.find(([id]) => id === second)[1];
  if (single[0] !== `Recordings · ${yardName}` || single[1] !== null || single[2] !== 'none') {
    throw new Error(`one camera chosen while another played: title, video and row name ${JSON.stringify(single)}`);
  }

  return { spanOffPx: off, phoneSpanOffPx: phone.off, markOffPx: markOff, playheadPx: [Math.round(head0.x), Math.round(head1.x)], trackPx: [Math.round(rows.track.width), Math.round(phone.d.track.width)] };
}

reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'stacked', step: () => step, errors });

// The Recordings view at its address, in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says), on two cameras with the
// same 30 s recorded (from --start, days ago), the first with five events
// 2 s apart from 2 s in and one 11.75 hours before --start:
//  1. /recordings?camera=FIRST&t=T (T 12 s in) plays the first camera from T
//     (the clip's start within 1 s), named over the video, the camera picker
//     on it; picking the second camera plays it from the moment the first was
//     at, and picking it and all cameras keeps the address on them (no step
//     in the history);
//  2. at 1280x800 the video and the timeline are both on screen, unscrolled;
//  3. back (from Live), forward and reload land on the same camera and moment;
//  4. at the 1-hour zoom the five events are one marker saying 5, listing them
//     on a hover, and an item of the list plays its event;
//  5. all cameras (/recordings?t=T) play every camera, a tile each, named,
//     each video's currentTime within 1 s of the others' after 3 s of playing
//     and a seek of the first 5 s on;
//  6. at 390x844 with touch, at 24 hours and at the hour, no marker's box meets
//     a row's name, the markers are 44 px across, and the tiles sit side by side.
// With --screenshots DIR it saves the view at both sizes there.
//
// Usage:
//   node tests/e2e/recordings_view.mjs --url <node URL> --cameras <id>,<id> --start <ms> [--screenshots DIR] [--timeout-ms N]
//
// It prints one JSON line, {"ok":true,...} or {"ok":false,"step":...,"error":...},
// and exits 0 or 1 within --timeout-ms (default 120000).

import path from 'node:path';
import { prepareBrowser, launchBrowser, closeBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`recordings_view: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/recordings_view.mjs --url <node URL> --cameras <id>,<id> --start <ms> [--screenshots DIR] [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--cameras': 'cameras', '--start': 'start', '--screenshots': 'shots', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 120000 }, usage);
for (const need of ['url', 'cameras', 'start']) if (!opts[need]) usage(`--${need} is required`);
const [first, second] = opts.cameras.split(',');
const T = Number(opts.start) + 12000;
const WAIT = { timeout: 20000, polling: 100 };

let step = 'start';
const errors = [];
const browser = prepareBrowser('recview');
let phone = null;

/** The videos of the view: the camera and start of each one's source, its time, and its tile's label. */
const videos = (page) => page.$$eval('#rec-tiles .rec-tile', (tiles) => tiles.map((tile) => {
  const v = tile.querySelector('video');
  const url = v.getAttribute('src') && new URL(v.src);
  return {
    camera: url && url.pathname.split('/')[3],
    start: url && Date.parse(url.searchParams.get('start')),
    time: v.currentTime,
    ready: v.readyState,
    paused: v.paused,
    label: tile.querySelector('figcaption').textContent,
    box: (({ left, top, right, bottom }) => ({ left, top, right, bottom }))(v.getBoundingClientRect()),
  };
}));

/** Waits until the first video plays `camera` from within 1 s of `at` (T), and has played. */
async function playsFromT(page, camera, what, at = T) {
  await page.waitForFunction(([id, t]) => {
    const v = document.getElementById('rec-video');
    const src = v.getAttribute('src');
    if (!src || v.readyState < 3 || v.currentTime < 0.3) return false;
    const url = new URL(src, location.href);
    return url.pathname === `/api/cameras/${id}/recording.mp4` && Math.abs(Date.parse(url.searchParams.get('start')) - t) <= 1000;
  }, [camera, at], WAIT).catch(async () => {
    throw new Error(`${what}: not playing ${camera} from ${new Date(at).toISOString()}: ${JSON.stringify(await videos(page))} at ${page.url()}`);
  });
}

const query = (page) => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));

async function zoomTo(page, minutes) {
  for (let i = 0; i < 12; i += 1) {
    const now = Number(await page.getAttribute('#rec-track', 'aria-valuemax'));
    if (now === minutes) return;
    await page.click(now > minutes ? '#rec-in' : '#rec-out');
  }
  throw new Error(`the zoom never showed ${minutes} minutes`);
}

async function shoot(page, name) {
  if (opts.shots) await page.screenshot({ path: path.join(opts.shots, `recordings-${name}.png`) });
}

/** The boxes of the markers (single and grouped) and of the rows' names that meet. */
const overNames = (page) => page.evaluate(() => {
  const box = (el) => el.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const nameBoxes = [...document.querySelectorAll('#rec-blocks .tl-name')].map(box).filter((b) => b.width > 0);
  const marks = [...document.querySelectorAll('#rec-marks .tl-lane > .tl-mark, #rec-marks .tl-group > .tl-mark')].map(box);
  return {
    names: nameBoxes.length,
    marks: marks.length,
    meeting: marks.flatMap((m) => nameBoxes.filter((n) => meet(m, n)).map((n) => [Math.round(m.left), Math.round(m.top), Math.round(n.left), Math.round(n.top)])),
    narrowest: Math.min(...marks.map((m) => Math.min(m.width, m.height))),
  };
});

async function run() {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  const cams = await (await fetch(`${opts.url}/api/cameras`)).json();
  const nameOf = (id) => cams.find((c) => c.id === id).name;

  step = 'the address plays the camera from its moment';
  await page.goto(`${opts.url}/recordings?camera=${first}&t=${new Date(T).toISOString()}`);
  await playsFromT(page, first, 'the address');
  const [shown] = await videos(page);
  if (shown.label !== nameOf(first)) throw new Error(`the video is labelled "${shown.label}", not "${nameOf(first)}"`);
  if ((await page.inputValue('#rec-camera')) !== first) throw new Error(`the picker shows ${await page.inputValue('#rec-camera')}`);

  step = 'the video and the timeline on a laptop\'s screen';
  await shoot(page, 'laptop');
  const fit = await page.evaluate(() => {
    const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { top: Math.round(r.top), bottom: Math.round(r.bottom), height: Math.round(r.height) }; };
    return { video: box('#rec-video'), timeline: box('.timeline'), scrollY, height: innerHeight };
  });
  if (fit.scrollY !== 0 || fit.video.top < 0 || fit.video.height < 200 || fit.timeline.bottom > fit.height) throw new Error(`at 1280x800: ${JSON.stringify(fit)}`);

  step = 'back, forward and reload';
  const length = await page.evaluate(() => history.length);
  await page.click('.tabs a[data-view="live"]');
  await page.waitForFunction(() => document.getElementById('view-recordings').hidden && !document.getElementById('rec-video').getAttribute('src'), null, WAIT);
  await page.goBack();
  await playsFromT(page, first, 'back');
  await page.goForward();
  await page.waitForFunction(() => location.pathname === '/live' && document.getElementById('view-recordings').hidden, null, WAIT);
  await page.goBack();
  await playsFromT(page, first, 'back again');
  await page.reload();
  await playsFromT(page, first, 'reload');
  const kept = await query(page);
  if (kept.camera !== first || Math.abs(Date.parse(kept.t) - T) > 1000) throw new Error(`the address is ${page.url()}`);

  step = 'the picker keeps the address';
  const before = await page.evaluate(() => history.length);
  // Paused: the second camera plays on from the moment the first is at.
  const at = await page.evaluate(() => {
    const v = document.getElementById('rec-video');
    v.pause();
    return Date.parse(new URL(v.src).searchParams.get('start')) + v.currentTime * 1000;
  });
  await page.selectOption('#rec-camera', second);
  await page.waitForFunction((id) => new URLSearchParams(location.search).get('camera') === id, second, WAIT);
  await playsFromT(page, second, 'the second camera picked', at);
  await page.selectOption('#rec-camera', '');
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('camera'), null, WAIT);
  if ((await page.evaluate(() => history.length)) !== before) throw new Error(`picking a camera added to the history (${before} to ${await page.evaluate(() => history.length)})`);

  step = 'the markers grouped at the hour';
  await page.goto(`${opts.url}/recordings?camera=${first}&t=${new Date(T).toISOString()}`);
  await playsFromT(page, first, 'the address');
  await page.evaluate(() => document.getElementById('rec-video').pause());
  await zoomTo(page, 60);
  const group = page.locator('#rec-marks .tl-group');
  await group.first().waitFor({ ...WAIT, state: 'attached' });
  const groups = await page.$$eval('#rec-marks .tl-group > .tl-mark', (els) => els.map((el) => el.textContent));
  const singles = await page.locator('#rec-marks .tl-lane > .tl-mark').count();
  if (JSON.stringify(groups) !== '["5"]' || singles !== 0) throw new Error(`at the hour the markers are groups ${JSON.stringify(groups)} and ${singles} single`);
  const listing = () => group.locator('.tl-list').evaluate((el) => getComputedStyle(el).opacity === '1' && el.getBoundingClientRect().height > 100);
  if (await listing()) throw new Error('the group lists its events before a hover');
  const count = await group.locator('.tl-mark').boundingBox();
  await page.mouse.move(count.x + count.width / 2, count.y + count.height / 2);
  if (!(await listing())) throw new Error('a hover does not list the group\'s events');
  await shoot(page, 'laptop-group');
  const items = group.locator('.tl-list button');
  await items.nth(4).waitFor(WAIT);
  if ((await items.count()) !== 5) throw new Error(`the group lists ${await items.count()} events`);
  const listed = await items.evaluateAll((els) => els.map((el) => Number(el.dataset.start)));
  await items.nth(2).click();
  await page.waitForFunction((t) => Date.parse(new URL(document.getElementById('rec-video').src).searchParams.get('start')) === t - 5000, listed[2], WAIT);
  await zoomTo(page, 10);
  const apart = await page.locator('#rec-marks .tl-lane > .tl-mark').count();
  if (apart < 5) throw new Error(`at 10 minutes ${apart} single markers, not the 5 events`);

  step = 'all cameras play in sync';
  await page.goto(`${opts.url}/recordings?t=${new Date(T).toISOString()}`);
  await playsFromT(page, first, 'all cameras');
  await page.waitForFunction(() => document.getElementById('rec-video').currentTime > 3, null, WAIT);
  // A seek of the camera playing 5 s on: the other follows.
  await page.evaluate(() => { document.getElementById('rec-video').currentTime += 5; });
  await page.waitForFunction(() => {
    const t = [...document.querySelectorAll('#rec-tiles video')].map((v) => v.currentTime);
    return t[0] > 9 && Math.max(...t) - Math.min(...t) <= 1;
  }, null, WAIT).catch(async () => { throw new Error(`a seek left them apart: ${JSON.stringify(await videos(page))}`); });
  const all = await videos(page);
  const times = all.map((v) => v.time);
  if (all.length !== 2 || all[1].camera !== second || Math.abs(all[1].start - T) > 1000) throw new Error(`the tiles are ${JSON.stringify(all)}`);
  if (Math.max(...times) - Math.min(...times) > 1 || all.some((v) => v.paused)) throw new Error(`out of sync: ${JSON.stringify(all)}`);
  if (all[0].label !== nameOf(first) || all[1].label !== nameOf(second)) throw new Error(`the tiles are labelled ${all.map((v) => v.label)}`);
  await shoot(page, 'laptop-all');

  step = 'a phone';
  phone = prepareBrowser('recview-phone');
  await launchBrowser(phone, { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, timeout: 15000 });
  const p = phone.page;
  p.on('pageerror', (error) => errors.push(error.message));
  await p.goto(`${opts.url}/recordings?t=${new Date(T).toISOString()}`);
  await playsFromT(p, first, 'on a phone');
  await p.locator('#rec-marks .tl-mark').first().waitFor(WAIT);
  const day = await overNames(p);
  await shoot(p, 'phone');
  await zoomTo(p, 60);
  await p.locator('#rec-marks .tl-group').first().waitFor({ ...WAIT, state: 'attached' });
  const hour = await overNames(p);
  for (const [zoom, o] of [['24 hours', day], ['the hour', hour]]) {
    if (o.names !== 2 || o.marks < 1 || o.meeting.length) throw new Error(`at ${zoom} markers meet the rows' names: ${JSON.stringify(o)}`);
    if (o.narrowest < 44) throw new Error(`at ${zoom} a marker is ${o.narrowest} px across`);
  }
  const tiles = await videos(p);
  if (tiles.length !== 2 || !(tiles[0].box.right <= tiles[1].box.left + 1) || tiles[1].box.right > 390) throw new Error(`the phone's tiles are ${JSON.stringify(tiles.map((t) => t.box))}`);
  await shoot(p, 'phone-hour');
  return { historyLength: length, fit, groups, times, phone: { day, hour } };
}

reportAndExit(browser, async () => {
  try {
    return await run();
  } finally {
    await closeBrowser(phone, 3000);
  }
}, Number(opts.timeoutMs), { name: 'recordings_view', step: () => step, errors });

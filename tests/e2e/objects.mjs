// An event's objects boxed over its thumbnail, and its loitering badged, in
// Debian's headless Chromium (playwright-core, launched as browser.mjs says).
//
// Usage:
//   node tests/e2e/objects.mjs --base http://127.0.0.1:PORT --event ID --plain ID --screenshots DIR [--timeout-ms N]
//
// The node has event ID, with objects (from its classifier) and loitering,
// and event --plain, with no objects and not loitering, both with
// thumbnails and clips. At 1280x800, then at 390x844 with a touch screen, on
// the Review tab:
//   card    ID's card draws one box per object over its thumbnail, each where
//           the API's box says on the picture as the card shows it (cropped
//           to fill its 16:9, as CSS object-fit: cover does), within 1.5 px
//           a side, with its label ("package 93%") whole inside the
//           thumbnail, in the box's colour; "Loitering" is shown by its kind,
//           the card still within the window's width; the plain card shows
//           no box and no badge
//   player  a click (a tap) on the box opens the player (the boxes take no
//           clicks): "Loitering" by its title, "Saw package 93%" under it,
//           no box over the clip (its things move); the plain event's player
//           has no badge. Then the event as the node lists it before its clip
//           is cut (its clipUrl taken out of the node's answers), opened by
//           its address: the boxes over its picture, fitted whole in the
//           player (object-fit: contain), where the API's box says, and
//           the message that the clip is coming clear of them
// It prints one JSON line, {"ok":true,"steps":[...],"drawn":{...}} and exits
// 0, or {"ok":false,"step":"...","error":"..."} and exits 1, within
// --timeout-ms (default 90000), and always closes the browser. Screenshots:
// DIR/objects-<card|player>-<size>.png, and DIR/objects-failed-<step>.png.

import path from 'node:path';
import { prepareBrowser, launchBrowser, closeBrowser, readFlags } from './browser.mjs';

const SIZES = [
  ['1280x800', { viewport: { width: 1280, height: 800 } }],
  ['390x844', { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true }],
];
/** How far a drawn edge may be from where the API's box puts it, in CSS pixels. */
const NEAR_PX = 1.5;

function usage(message) {
  process.stderr.write(`objects: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/objects.mjs --base <node URL> --event <id> --plain <id> --screenshots <dir> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--base': 'base', '--event': 'event', '--plain': 'plain', '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 90000 }, usage);
for (const need of ['base', 'event', 'plain', 'screenshots']) if (!opts[need]) usage(`--${need} is required`);
const base = opts.base.replace(/\/+$/, '');
const timeoutMs = Number(opts.timeoutMs);
const deadline = Date.now() + timeoutMs - 4000;
const within = (ms) => Math.max(1, Math.min(ms, deadline - Date.now()));

class Failure extends Error {}
function check(condition, message) {
  if (!condition) throw new Failure(message);
}

const steps = [];
const drawn = {};
const pageErrors = [];
let currentStep = 'start';
let browser = null;
let page = null;

async function step(name, fn) {
  currentStep = name;
  const t0 = Date.now();
  await fn();
  steps.push(name);
  process.stderr.write(`objects: ${name} passed in ${Date.now() - t0} ms\n`);
}

async function event(id) {
  const response = await fetch(`${base}/api/events`, { signal: AbortSignal.timeout(within(15000)) });
  const found = (await response.json()).find((e) => e.id === id);
  check(found, `the node does not list event ${id}`);
  return found;
}

/**
 * Where the API's box [l, t, r, b] falls on screen, the picture of natural
 * size w×h cropped to fill `shot` (a rect), or fitted whole in it (`whole`).
 */
function expectedBox(box, w, h, shot, whole = false) {
  const scale = (whole ? Math.min : Math.max)(shot.width / w, shot.height / h);
  const [pw, ph] = [w * scale, h * scale];
  const [x0, y0] = [shot.x + (shot.width - pw) / 2, shot.y + (shot.height - ph) / 2];
  const [l, t, r, b] = box;
  return { left: x0 + l * pw, top: y0 + t * ph, right: x0 + r * pw, bottom: y0 + b * ph };
}

const row = (id) => `#event-list .event[data-key="${id}"]`;

async function run() {
  const shown = await event(opts.event);
  const plain = await event(opts.plain);
  check(shown.objects.length > 0 && shown.loitering === true, `event ${opts.event} has no objects or is not loitering: ${JSON.stringify(shown)}`);
  check(plain.objects.length === 0 && plain.loitering === false, `the plain event has objects or loiters: ${JSON.stringify(plain)}`);
  const labels = shown.objects.map((o) => `${o.kind} ${Math.round(o.score * 100)}%`);

  for (const [size, options] of SIZES) {
    await step(`card ${size}`, async () => {
      browser = prepareBrowser('objects');
      await launchBrowser(browser, { timeout: within(30000), ...options });
      page = browser.page;
      page.setDefaultTimeout(within(15000));
      page.on('pageerror', (error) => pageErrors.push(error.message));
      await page.goto(`${base}/review`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
      await page.waitForSelector('body.loaded', { timeout: within(10000) });
      await page.waitForSelector(row(opts.event), { timeout: within(15000) });
      await page.locator(row(opts.event)).scrollIntoViewIfNeeded();
      await page.waitForFunction((sel) => {
        const img = document.querySelector(`${sel} .ev-shot img`);
        return img && !img.hidden && img.complete && img.naturalWidth > 0;
      }, row(opts.event), { timeout: within(15000) }).catch(() => { throw new Failure('the thumbnail does not load'); });
      const boxes = page.locator(`${row(opts.event)} .obj-box`);
      await page.waitForFunction(([sel, n]) => document.querySelectorAll(`${sel} .obj-box`).length === n, [row(opts.event), shown.objects.length], { timeout: within(5000) })
        .catch(async () => { throw new Failure(`${await boxes.count()} boxes drawn over the thumbnail for ${shown.objects.length} objects`); });
      const seen = await page.locator(`${row(opts.event)} .ev-shot`).evaluate((shot) => {
        const img = shot.querySelector('img');
        const r = img.getBoundingClientRect();
        const boxRects = [...shot.querySelectorAll('.obj-box')].map((b) => {
          const label = b.querySelector('.obj-label');
          return {
            rect: b.getBoundingClientRect().toJSON(),
            label: label?.textContent,
            labelRect: label?.getBoundingClientRect().toJSON(),
            colour: getComputedStyle(b).borderTopColor,
            labelColour: label && getComputedStyle(label).backgroundColor,
          };
        });
        return { shot: { x: r.x, y: r.y, width: r.width, height: r.height }, w: img.naturalWidth, h: img.naturalHeight, boxes: boxRects };
      });
      drawn[size] = seen;
      shown.objects.forEach((object, i) => {
        const want = expectedBox(object.box, seen.w, seen.h, seen.shot);
        const got = seen.boxes[i];
        const off = Math.max(...['left', 'top', 'right', 'bottom'].map((side) => Math.abs(got.rect[side] - want[side])));
        check(off <= NEAR_PX, `the box of ${object.kind} ${JSON.stringify(object.box)} is drawn at ${JSON.stringify(got.rect)}, not ${JSON.stringify(want)} (${off.toFixed(1)} px off)`);
        check(got.label === labels[i], `the box is labelled "${got.label}", not "${labels[i]}"`);
        const l = got.labelRect;
        const s = seen.shot;
        check(l.left >= s.x - 0.5 && l.top >= s.y - 0.5 && l.right <= s.x + s.width + 0.5 && l.bottom <= s.y + s.height + 0.5 && l.height >= 10,
          `the label ${JSON.stringify(l)} is not whole on the thumbnail ${JSON.stringify(s)}`);
        check(got.labelColour === got.colour && got.colour !== 'rgba(0, 0, 0, 0)', `the label is ${got.labelColour}, its box ${got.colour}`);
      });
      const badge = page.locator(`${row(opts.event)} .loiter-badge`);
      check(await badge.isVisible() && (await badge.textContent()).trim() === 'Loitering', 'no "Loitering" on the card of a loitering event');
      const fits = await page.locator(row(opts.event)).evaluate((el) => el.getBoundingClientRect().right <= window.innerWidth && document.documentElement.scrollWidth <= window.innerWidth);
      check(fits, 'the card is wider than the window');
      check(await page.locator(`${row(opts.plain)} .obj-box`).count() === 0, 'boxes over the thumbnail of an event with no objects');
      check(await page.locator(`${row(opts.plain)} .loiter-badge`).isHidden(), '"Loitering" on the card of an event not loitering');
      await page.screenshot({ path: path.join(opts.screenshots, `objects-card-${size}.png`) });
    });

    await step(`player ${size}`, async () => {
      // A click on the box is the thumbnail's: the boxes take none.
      const box = await page.locator(`${row(opts.event)} .obj-box`).first().boundingBox();
      const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
      if (options.hasTouch) await page.touchscreen.tap(x, y);
      else await page.mouse.click(x, y);
      await page.waitForSelector('#clip[open]', { timeout: within(5000) }).catch(() => { throw new Failure('a click on the box does not open the player'); });
      check(await page.isVisible('#clip-loiter') && (await page.textContent('#clip-loiter')).trim() === 'Loitering', 'no "Loitering" in the player');
      const about = await page.textContent('#clip-about');
      check(about.includes(`Saw ${labels.join(', ')}`), `the player says "${about}"`);
      check(await page.locator('#clip-objects .obj-box').count() === 0, 'boxes over the clip');
      await page.waitForFunction(() => document.getElementById('clip-video').readyState >= 2, null, { timeout: within(15000) }).catch(() => {});
      await page.screenshot({ path: path.join(opts.screenshots, `objects-player-${size}.png`) });
      await page.click('#clip-close');
      await page.locator(`${row(opts.plain)} .ev-shot`).click();
      await page.waitForSelector('#clip[open]', { timeout: within(5000) });
      check(await page.isHidden('#clip-loiter'), '"Loitering" in the player of an event not loitering');
      check(!(await page.textContent('#clip-about')).includes('Saw'), 'the player of an event with no objects says what it saw');
      await page.click('#clip-close');

      // Before its clip is cut: the event's picture in the player, boxed.
      const listing = (url) => url.pathname === '/api/events';
      await page.route(listing, async (route) => {
        const headers = { ...route.request().headers() };
        delete headers['if-none-match'];
        const events = await (await route.fetch({ headers })).json();
        for (const e of events) if (e.id === opts.event) e.clipUrl = null;
        await route.fulfill({ status: 200, json: events });
      });
      await page.goto(`${base}/review?event=${opts.event}`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
      await page.waitForSelector('#clip[open]', { timeout: within(15000) });
      await page.waitForFunction((n) => document.querySelectorAll('#clip-objects .obj-box').length === n, shown.objects.length, { timeout: within(10000) })
        .catch(async () => { throw new Failure(`${await page.locator('#clip-objects .obj-box').count()} boxes over the picture in the player, not ${shown.objects.length}; poster ${await page.getAttribute('#clip-video', 'poster')}`); });
      const stage = await page.locator('#clip-video').boundingBox();
      const inPlayer = await page.$$eval('#clip-objects .obj-box', (els) => els.map((b) => b.getBoundingClientRect().toJSON()));
      const { w, h } = drawn[size];
      shown.objects.forEach((object, i) => {
        const want = expectedBox(object.box, w, h, stage, true);
        const off = Math.max(...['left', 'top', 'right', 'bottom'].map((side) => Math.abs(inPlayer[i][side] - want[side])));
        check(off <= NEAR_PX, `in the player the box of ${object.kind} is drawn at ${JSON.stringify(inPlayer[i])}, not ${JSON.stringify(want)} (${off.toFixed(1)} px off)`);
      });
      // Why there is no clip yet is said clear of the boxes.
      const note = await page.locator('#clip-msg').boundingBox();
      const meets = (a, b) => a.left < b.x + b.width && b.x < a.right && a.top < b.y + b.height && b.y < a.bottom;
      check(note && !inPlayer.some((r) => meets(r, note)), `the player's message ${JSON.stringify(note)} covers a box ${JSON.stringify(inPlayer)}`);
      await page.screenshot({ path: path.join(opts.screenshots, `objects-poster-${size}.png`) });
      await page.unroute(listing);
      check(pageErrors.length === 0, `script errors: ${pageErrors.slice(0, 3).join(' | ')}`);
      const b = browser;
      browser = null;
      page = null;
      await closeBrowser(b, 3000);
    });
  }
}

let result;
const hardStop = setTimeout(() => {
  process.stdout.write(`${JSON.stringify({ ok: false, step: currentStep, error: `timed out after ${timeoutMs} ms`, steps })}\n`);
  process.exit(1);
}, timeoutMs);
try {
  await run();
  result = { ok: true, steps, drawn };
} catch (error) {
  const message = error instanceof Failure ? error.message : `error: ${String(error.message || error).split('\n')[0]}`;
  result = { ok: false, step: currentStep, error: message, steps };
  if (pageErrors.length) result.pageErrors = pageErrors.slice(0, 5);
  if (page) await page.screenshot({ path: path.join(opts.screenshots, `objects-failed-${currentStep.replace(/\W+/g, '-')}.png`) }).catch(() => {});
} finally {
  const b = browser;
  browser = null;
  await closeBrowser(b, 3000);
}
clearTimeout(hardStop);
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(result.ok ? 0 : 1);

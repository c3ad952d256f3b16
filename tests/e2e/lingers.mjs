// An event that turns loitering while it goes on, said so at once in
// Debian's headless Chromium (playwright-core, launched as browser.mjs says),
// at 1280x800.
//
// Usage:
//   node tests/e2e/lingers.mjs --base http://127.0.0.1:PORT --camera ID --screenshots DIR [--timeout-ms N]
//
// The node's camera ID has a zone with loiterSeconds and a person standing in
// it (the test camera's scene, started just before). Steps:
//   live    the camera's tile says "Loitering" where it says "Event" while an
//           event goes on, once the node has the event loitering
//   review  the event's card, still going on, has its "Loitering" badge
// It prints one JSON line, {"ok":true,"steps":[...]} and exits 0, or
// {"ok":false,"step":"...","error":"..."} and exits 1, within --timeout-ms
// (default 90000), and always closes the browser. Screenshots:
// DIR/lingers-<step>-1280x800.png.

import path from 'node:path';
import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`lingers: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/lingers.mjs --base <node URL> --camera <id> --screenshots <dir> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--base': 'base', '--camera': 'camera', '--screenshots': 'screenshots', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 90000 }, usage);
for (const need of ['base', 'camera', 'screenshots']) if (!opts[need]) usage(`--${need} is required`);
const base = opts.base.replace(/\/+$/, '');

let step = 'start';
const steps = [];
const errors = [];
const browser = prepareBrowser('lingers');

async function loitering() {
  const events = await (await fetch(`${base}/api/events?cameraId=${opts.camera}`)).json();
  return events.find((e) => e.inProgress && e.loitering);
}

await reportAndExit(browser, async () => {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: 30000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  step = 'live';
  await page.goto(`${base}/live`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('body.loaded', { timeout: 10000 });
  const said = page.locator(`#grid .tile[data-id="${opts.camera}"] .tile-event`);
  await said.waitFor({ state: 'visible', timeout: 40000 });
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'Loitering',
    `#grid .tile[data-id="${opts.camera}"] .tile-event`, { timeout: 40000 })
    .catch(async () => { throw new Error(`the tile says "${await said.textContent()}"; the node's event going on: ${JSON.stringify(await loitering())}`); });
  const event = await loitering();
  if (!event) throw new Error('the tile says Loitering, and the node has no event going on that loiters');
  await page.screenshot({ path: path.join(opts.screenshots, 'lingers-live-1280x800.png') });
  steps.push(step);

  step = 'review';
  await page.locator('.tabs a[href="/review"]').click();
  const card = `#event-list .event.in-progress[data-key="${event.id}"]`;
  await page.waitForSelector(`${card} .loiter-badge:not([hidden])`, { timeout: 10000 })
    .catch(() => { throw new Error('the card of the event going on has no "Loitering"'); });
  await page.screenshot({ path: path.join(opts.screenshots, 'lingers-review-1280x800.png') });
  steps.push(step);
  if (errors.length) throw new Error(`script errors: ${errors.slice(0, 3).join(' | ')}`);
  return { steps };
}, Number(opts.timeoutMs), { name: 'lingers', step: () => step, errors });

// Playback speed in the recordings view, in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says): the camera's recordings
// open at their address, a click on the first recorded span plays it, and at
// each speed the video's currentTime advances that many times the wall
// clock's time (the slope over 2 s of the page's own clock).
//
// Usage:
//   node tests/e2e/rates.mjs --url <node URL> --camera <id> [--timeout-ms N]
//
// It prints one JSON line, {"ok":true,"ratios":{"1":1.0,"4":4.0,...}} or
// {"ok":false,"step":...,"error":...}, and exits 0 or 1 within --timeout-ms
// (default 60000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`rates: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/rates.mjs --url <node URL> --camera <id> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--camera': 'camera', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 60000 }, usage);
for (const need of ['url', 'camera']) if (!opts[need]) usage(`--${need} is required`);
const WAIT = { timeout: 20000, polling: 100 };

let step = 'start';
const errors = [];
const browser = prepareBrowser('rates');

/**
 * How many seconds of video play per second of the page's clock: the slope
 * of currentTime over 2 s of samples every 100 ms, from 0.5 s after the rate
 * changed. A slope, not two end points, so one stall of a loaded machine's
 * media clock (which then jumps to catch up) moves it little.
 */
const ratio = (page) => page.evaluate(async () => {
  const v = document.getElementById('rec-video');
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(500);
  const points = [];
  const start = performance.now();
  while (performance.now() - start < 2000) {
    points.push([performance.now() / 1000, v.currentTime]);
    await sleep(100);
  }
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  const sxy = points.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0);
  const sxx = points.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
  return sxy / sxx;
});

async function run() {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));

  step = 'the first span plays';
  await page.goto(`${opts.url}/recordings?camera=${opts.camera}`);
  const block = page.locator('#rec-blocks .tl-span').first();
  await block.waitFor(WAIT);
  await block.click({ position: { x: 1, y: 5 } });
  await page.waitForFunction(() => document.getElementById('rec-video').readyState === 4, null, WAIT);

  const ratios = {};
  for (const rate of ['1', '4', '8', '2']) {
    step = `${rate}×`;
    await page.locator('#rec-rates label', { hasText: `${rate}×` }).click();
    const v = await page.$eval('#rec-video', (video) => [video.playbackRate, video.paused]);
    if (v[0] !== Number(rate) || v[1]) throw new Error(`the video's rate is ${v[0]}, paused ${v[1]}`);
    ratios[rate] = Math.round((await ratio(page)) * 100) / 100;
  }
  return { ratios };
}

reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'rates', step: () => step, errors });

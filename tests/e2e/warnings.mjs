// Adds a camera through the UI's form in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says) and reads what the node
// warns of it: the words the form says once it is added, and the warnings
// on its card, at a phone's size (390x844) and a laptop's (1280x800), with a
// screenshot of the card at each.
//
// Usage:
//   node tests/e2e/warnings.mjs --origin http://127.0.0.1:PORT --camera-url URL
//     --name NAME --screenshots DIR [--wait-ms MS]
// (--wait-ms: how long the card's warnings are waited for; 10000 by default.)
//
// It prints one JSON line and exits 0:
//   {"ok":true,"added":"<the form's words>","cards":{"390x844":"<the card's warnings>",...}}
// or {"ok":false,"error":"..."} and exits 1.

import path from 'node:path';
import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`warnings: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/warnings.mjs --origin <node URL> --camera-url <rtsp URL> --name <name> --screenshots <dir>\n');
  process.exit(2);
}

const names = { '--origin': 'origin', '--camera-url': 'cameraUrl', '--name': 'name', '--screenshots': 'screenshots', '--wait-ms': 'waitMs' };
const opts = readFlags(process.argv.slice(2), names, {}, usage);
if (!opts.origin || !opts.cameraUrl || !opts.name || !opts.screenshots) usage('all four flags are required');

const browser = prepareBrowser('warnings');
const text = async (locator) => (await locator.innerText()).replace(/\s+/g, ' ').trim();

async function run() {
  await launchBrowser(browser, { timeout: 15000, viewport: { width: 390, height: 844 } });
  const { page } = browser;
  await page.goto(`${opts.origin}/settings`);
  await page.fill('#add-name', opts.name);
  await page.fill('#add-rtspUrl', opts.cameraUrl);
  await page.click('#add-submit');
  const done = page.locator('#add-done');
  await done.waitFor({ state: 'visible', timeout: 30000 });
  const added = await text(done);
  const card = page.locator('#camera-list .card', { hasText: opts.name });
  const cards = {};
  for (const [width, height] of [[390, 844], [1280, 800]]) {
    await page.setViewportSize({ width, height });
    const warnings = card.locator('.cam-warnings');
    await warnings.waitFor({ state: 'visible', timeout: Number(opts.waitMs || 10000) });
    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: path.join(opts.screenshots, `warnings-card-${width}x${height}.png`) });
    cards[`${width}x${height}`] = await text(warnings);
  }
  return { added, cards };
}

await reportAndExit(browser, run, 60000 + Number(opts.waitMs || 0));

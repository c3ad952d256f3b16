// Reads the node header's storage line in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says): loads the UI from the
// node, waits until the line names the event clips, and gives its text and
// its hover title.
//
// Usage:
//   node tests/e2e/header.mjs --origin http://127.0.0.1:PORT [--timeout-ms N]
//
// It prints one JSON line and exits 0 when the line shows:
//   {"ok":true,"text":"Recordings: … · Clips: …","title":"…"}
// or {"ok":false,"error":"..."} and exits 1, within --timeout-ms (default 30000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`header: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/header.mjs --origin <node URL> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--origin': 'origin', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 30000 }, usage);
if (!opts.origin) usage('--origin is required');
const timeoutMs = Number(opts.timeoutMs);

const browser = prepareBrowser('header');

async function run() {
  await launchBrowser(browser, { timeout: 15000 });
  const { page } = browser;
  await page.goto(`${opts.origin}/`);
  await page.waitForFunction(() => (document.getElementById('node-storage')?.textContent || '').includes('Clips:'), null, {
    timeout: timeoutMs,
  });
  return page.evaluate(() => {
    const el = document.getElementById('node-storage');
    return { text: el.textContent.replace(/\u00a0/g, ' '), title: el.title.replace(/\u00a0/g, ' ') };
  });
}

await reportAndExit(browser, run, timeoutMs);

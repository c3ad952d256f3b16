// Reads the events list in Debian's headless Chromium (playwright-core,
// launched as browser.mjs says): loads the Review view from the node, waits
// until an event of the given id is listed as going on, and opens it: an
// event going on opens the camera's live view.
//
// Usage:
//   node tests/e2e/ongoing.mjs --origin http://127.0.0.1:PORT --event ID [--timeout-ms N]
//
// It prints one JSON line and exits 0 when the row shows:
//   {"ok":true,"text":"<the row's words>","live":"<the live view's title>"}
// or {"ok":false,"error":"..."} and exits 1, within --timeout-ms (default 20000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`ongoing: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/ongoing.mjs --origin <node URL> --event <id> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--origin': 'origin', '--event': 'event', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 20000 }, usage);
if (!opts.origin || !opts.event) usage('--origin and --event are required');
const timeoutMs = Number(opts.timeoutMs);

const browser = prepareBrowser('ongoing');

function check(ok, message) {
  if (!ok) throw new Error(message);
}

async function run() {
  await launchBrowser(browser, { timeout: 15000 });
  const { page } = browser;
  await page.goto(`${opts.origin}/review`);
  const row = page.locator(`#event-list > li[data-key="${opts.event}"].in-progress`);
  await row.waitFor({ timeout: timeoutMs });
  const text = (await row.innerText()).replace(/\s+/g, ' ').trim();
  await row.locator('.ev-shot').click();
  await page.waitForSelector('#live[open]', { timeout: 5000 });
  check(await page.isHidden('#clip'), 'the clip dialog opened too');
  return { text, live: await page.textContent('#live-title') };
}

await reportAndExit(browser, run, timeoutMs + 15000);

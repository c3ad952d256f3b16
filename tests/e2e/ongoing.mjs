// Reads the events list in Debian's headless Chromium (playwright-core,
// launched as browser.mjs says): loads the UI from the node and waits until
// an event of the given id is listed as going on.
//
// Usage:
//   node tests/e2e/ongoing.mjs --origin http://127.0.0.1:PORT --event ID [--timeout-ms N]
//
// It prints one JSON line and exits 0 when the row shows:
//   {"ok":true,"text":"<the row's words>"}
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

async function run() {
  await launchBrowser(browser, { timeout: 15000 });
  const { page } = browser;
  await page.goto(`${opts.origin}/`);
  const row = page.locator(`#event-list > li[data-key="${opts.event}"].in-progress`);
  await row.waitFor({ timeout: timeoutMs });
  return { text: (await row.innerText()).replace(/\s+/g, ' ').trim() };
}

await reportAndExit(browser, run, timeoutMs + 15000);

// Confirms a camera's move in the node's UI, in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says): a device at <claim>
// claims to be the camera, and the node waits for the person to say so.
//
// Usage:
//   node tests/e2e/confirm_move.mjs <nodeUrl> <cameraId> <claim>
//
// Steps: open the UI; the camera's card names <claim> in its ONVIF line;
// Edit; the dialog's "It is my camera: move it to <claim>" button shows;
// clicking it sends PATCH {"onvif": {"confirmMove": <claim>}}, answered 200;
// the card then says the camera moved to <claim>.
// It prints one JSON line and exits 0:
//   {"ok":true,"card":"…","button":"…","moved":"…"}
// or {"ok":false,"step":"…","error":"…"} and exits 1, within 60 s, and
// always closes the browser.

import { prepareBrowser, launchBrowser, reportAndExit } from './browser.mjs';

const TIMEOUT_MS = 60000;
const CLOSE_RESERVE_MS = 3000;

const [base, cameraId, claim] = process.argv.slice(2);
if (!base || !cameraId || !claim) {
  process.stderr.write('usage: node tests/e2e/confirm_move.mjs <nodeUrl> <cameraId> <claim>\n');
  process.exit(2);
}
const nodeUrl = base.replace(/\/+$/, '');
const host = new URL(nodeUrl).hostname;
const deadline = Date.now() + TIMEOUT_MS - CLOSE_RESERVE_MS;
const within = (ms) => Math.max(1, Math.min(ms, deadline - Date.now()));

let stepName = 'start';
const errors = [];
class Failure extends Error {}
function check(condition, message) {
  if (!condition) throw new Failure(message);
}

async function run(browser) {
  // The node may be in a network namespace: its host is let through the resolver rules.
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: within(30000), reach: host });
  const { page } = browser;
  page.setDefaultTimeout(within(20000));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));

  stepName = 'load';
  const loaded = await page.goto(`${nodeUrl}/`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
  check(loaded && loaded.ok(), `${nodeUrl}/ answered ${loaded ? loaded.status() : 'nothing'}`);
  await page.waitForSelector('body.loaded', { timeout: within(15000) });

  stepName = 'card';
  const card = page.locator(`#camera-${cameraId}`);
  const line = card.locator('.cam-onvif');
  await page.waitForFunction(
    ([id, c]) => document.querySelector(`#camera-${id} .cam-onvif`)?.textContent.includes(c),
    [cameraId, claim],
    { timeout: within(10000), polling: 200 },
  );
  const said = await line.innerText();

  stepName = 'dialog';
  await card.locator('.edit').click();
  const button = page.locator('#edit-confirm-move');
  await button.waitFor({ state: 'visible', timeout: within(5000) });
  const label = await button.innerText();
  check(label.includes(claim), `the button says ${label}`);

  stepName = 'confirm';
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'PATCH' && new URL(r.url()).pathname === `/api/cameras/${cameraId}`, { timeout: within(30000) }),
    button.click(),
  ]);
  const sent = response.request().postDataJSON();
  check(response.status() === 200, `PATCH answered ${response.status()}: ${await response.text()}`);
  check(sent?.onvif?.confirmMove === claim && Object.keys(sent).length === 1, `the button sent ${JSON.stringify(sent)}`);
  await page.waitForFunction(
    ([id, c]) => document.querySelector(`#camera-${id} .cam-onvif`)?.textContent.includes(`to ${c}`),
    [cameraId, claim],
    { timeout: within(10000), polling: 200 },
  );
  return { card: said, button: label, moved: await line.innerText() };
}

const browser = prepareBrowser('confirm_move');
await reportAndExit(browser, () => run(browser), TIMEOUT_MS - CLOSE_RESERVE_MS, {
  name: 'confirm_move',
  step: () => stepName,
  errors,
});

// Deletes a camera in the node's UI as a person does, in Debian's headless
// Chromium (playwright-core, launched as browser.mjs says).
//
// Usage:
//   node tests/e2e/delete.mjs <nodeUrl> <cameraId> <name>
//
// Steps: open /settings; the camera's Delete; the dialog says what goes
// with it (counted by the node); its Delete button stays disabled with the
// name field empty, with a wrong name and with part of it, and is enabled
// once the name is typed; Enter in the field then deletes: DELETE answered
// 204 and the card goes. With SCREENSHOTS=<dir>, the dialog at laptop and
// phone sizes (delete-laptop.png, delete-phone.png).
// It prints one JSON line and exits 0:
//   {"ok":true,"text":"…"}
// or {"ok":false,"step":"…","error":"…"} and exits 1, within 60 s, and
// always closes the browser.

import { prepareBrowser, launchBrowser, reportAndExit } from './browser.mjs';

const TIMEOUT_MS = 60000;
const CLOSE_RESERVE_MS = 3000;

const [base, cameraId, name] = process.argv.slice(2);
if (!base || !cameraId || !name) {
  process.stderr.write('usage: node tests/e2e/delete.mjs <nodeUrl> <cameraId> <name>\n');
  process.exit(2);
}
const nodeUrl = base.replace(/\/+$/, '');
const deadline = Date.now() + TIMEOUT_MS - CLOSE_RESERVE_MS;
const within = (ms) => Math.max(1, Math.min(ms, deadline - Date.now()));

let stepName = 'start';
const errors = [];
class Failure extends Error {}
function check(condition, message) {
  if (!condition) throw new Failure(message);
}

async function run(browser) {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: within(30000) });
  const { page } = browser;
  page.setDefaultTimeout(within(20000));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));

  stepName = 'load';
  const loaded = await page.goto(`${nodeUrl}/settings`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
  check(loaded && loaded.ok(), `${nodeUrl}/settings answered ${loaded ? loaded.status() : 'nothing'}`);
  await page.waitForSelector('body.loaded', { timeout: within(15000) });

  stepName = 'dialog';
  const card = page.locator(`#camera-${cameraId}`);
  await card.locator('.delete').click();
  await page.waitForSelector('#confirm[open]');
  await page.waitForFunction(() => document.getElementById('confirm-text').textContent.startsWith('Deleted'), null, { timeout: within(10000), polling: 100 });
  const text = await page.textContent('#confirm-text');
  const ok = page.locator('#confirm-ok');
  check(await page.evaluate(() => document.activeElement?.id === 'confirm-name'), 'the name field is not focused');

  stepName = 'the name';
  check(await ok.isDisabled(), 'Delete works with the name field empty');
  await page.fill('#confirm-name', `${name}x`);
  check(await ok.isDisabled(), 'Delete works with a wrong name');
  await page.fill('#confirm-name', name.slice(0, -1));
  check(await ok.isDisabled(), 'Delete works with part of the name');
  await page.locator('#confirm-name').pressSequentially(name.slice(-1));
  check(await ok.isEnabled(), 'Delete does not work with the name typed');
  if (process.env.SCREENSHOTS) {
    for (const [size, viewport] of [['laptop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]]) {
      await page.setViewportSize(viewport);
      await page.screenshot({ path: `${process.env.SCREENSHOTS}/delete-${size}.png` });
    }
  }

  stepName = 'delete';
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'DELETE' && new URL(r.url()).pathname === `/api/cameras/${cameraId}`, { timeout: within(20000) }),
    page.press('#confirm-name', 'Enter'),
  ]);
  check(response.status() === 204, `DELETE answered ${response.status()}`);
  await card.waitFor({ state: 'detached', timeout: within(5000) });
  check(!(await page.locator('#confirm').evaluate((d) => d.open)), 'the dialog stayed open');
  check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
  return { text };
}

const browser = prepareBrowser('delete');
await reportAndExit(browser, () => run(browser), TIMEOUT_MS - CLOSE_RESERVE_MS, {
  name: 'delete',
  step: () => stepName,
  errors,
});

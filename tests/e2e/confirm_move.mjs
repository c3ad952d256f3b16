// Confirms a camera's move in the node's UI, in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says): a device at <claim>
// claims to be the camera, and the node waits for the person to say so.
//
// Usage:
//   node tests/e2e/confirm_move.mjs <nodeUrl> <cameraId> <claim> < password
//
// Steps: open the UI; the camera's card names <claim> in its ONVIF line;
// Edit; the dialog's "It is my camera: move it to <claim>" button and a
// password field show; clicking it with the field empty asks for the
// password and sends nothing; with the camera's password (read on stdin,
// never on the command line) typed, it sends PATCH {"onvif":
// {"confirmMove": <claim>}, "password": …}, answered 200; the card then
// says the camera moved to <claim>.
// With SCREENSHOTS=<dir> set, the dialog asking for the password is saved
// there at laptop and phone sizes (confirm-move-laptop.png, -phone.png).
// It prints one JSON line and exits 0:
//   {"ok":true,"card":"…","button":"…","moved":"…"}
// or {"ok":false,"step":"…","error":"…"} and exits 1, within 60 s, and
// always closes the browser.

import { prepareBrowser, launchBrowser, reportAndExit } from './browser.mjs';

const TIMEOUT_MS = 60000;
const CLOSE_RESERVE_MS = 3000;

const [base, cameraId, claim] = process.argv.slice(2);
let password = '';
for await (const chunk of process.stdin) password += chunk;
if (!base || !cameraId || !claim || !password) {
  process.stderr.write('usage: node tests/e2e/confirm_move.mjs <nodeUrl> <cameraId> <claim> < password\n');
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
  const loaded = await page.goto(`${nodeUrl}/settings`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
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

  stepName = 'without the password';
  const field = page.locator('#edit-password');
  await field.waitFor({ state: 'visible', timeout: within(5000) });
  let patches = 0;
  page.on('request', (r) => { if (r.method() === 'PATCH') patches += 1; });
  await button.click();
  const asked = page.locator('#edit-password-error');
  await asked.waitFor({ state: 'visible', timeout: within(5000) });
  const askedText = await asked.innerText();
  check(askedText.startsWith('Password is needed'), `the dialog said ${askedText}`);
  check(patches === 0, 'the button sent a PATCH without the password');
  // With SCREENSHOTS=<dir>, the dialog asking for the password, as a person sees it.
  if (process.env.SCREENSHOTS) {
    for (const [name, viewport] of [['laptop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]]) {
      await page.setViewportSize(viewport);
      await asked.scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${process.env.SCREENSHOTS}/confirm-move-${name}.png` });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  }

  stepName = 'confirm';
  await field.fill(password);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'PATCH' && new URL(r.url()).pathname === `/api/cameras/${cameraId}`, { timeout: within(30000) }),
    button.click(),
  ]);
  const sent = response.request().postDataJSON();
  check(response.status() === 200, `PATCH answered ${response.status()}: ${await response.text()}`);
  check(sent?.onvif?.confirmMove === claim && sent?.password === password && Object.keys(sent).length === 2, 'the button did not send the claim and the password alone');
  await page.waitForFunction(
    ([id, c]) => document.querySelector(`#camera-${id} .cam-onvif`)?.textContent.includes(`to ${c}`),
    [cameraId, claim],
    { timeout: within(10000), polling: 200 },
  );
  return { card: said, button: label, asked: askedText, moved: await line.innerText() };
}

const browser = prepareBrowser('confirm_move');
await reportAndExit(browser, () => run(browser), TIMEOUT_MS - CLOSE_RESERVE_MS, {
  name: 'confirm_move',
  step: () => stepName,
  errors,
});

// Adds a camera the way a person does with "Find cameras" in the node's UI, in
// Debian's headless Chromium (playwright-core, launched as browser.mjs says),
// then watches it live.
//
// Usage:
//   node tests/e2e/discover.mjs <nodeUrl> <username> <password>
//
// Steps: open the UI, click Find cameras, choose the first device not added yet,
// enter the user name and password, Show streams; the API's main stream must be
// bigger than its sub stream and be the ones pre-selected; Use these fills the
// form with URLs without user info; Add sends the credentials and the device's
// link; the new card appears; Watch live shows frames (the video gets a size,
// currentTime advances 1 s, WebRTC decoded frames). No password on the page.
// It prints one JSON line and exits 0:
//   {"ok":true,"cameraId":"…","device":{…as the API listed it},"main":{"width":…,"height":…},
//    "sub":{…},"played":true,"framesDecoded":N}
// or {"ok":false,"step":"…","error":"…"} (and "discover: <step>: <why>" on stderr)
// and exits 1, within 120 s, and always closes the browser.
//
// The browser's resolver rules (browser.mjs) also stop IP literals: the node's
// own host is excluded from them here, so a node in a network namespace
// (http://10.213.77.2:PORT) can be reached.

import { prepareBrowser, launchBrowser, reportAndExit } from './browser.mjs';

const TIMEOUT_MS = 120000;
const CLOSE_RESERVE_MS = 3000;

const [base, username, password] = process.argv.slice(2);
if (!base || username === undefined || password === undefined) {
  process.stderr.write('usage: node tests/e2e/discover.mjs <nodeUrl> <username> <password>\n');
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

/** Waits for the page's answer to a POST to `path`, after `action` runs. */
async function posted(page, path, action, ms) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path, { timeout: within(ms) }),
    action(),
  ]);
  let json = null;
  try {
    json = await response.json();
  } catch (_) {
    // Not JSON: the status says enough.
  }
  return { status: response.status(), json, sent: response.request().postDataJSON() };
}

async function run(browser) {
  // The node may be in a network namespace: its host is let through the resolver rules.
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: within(30000), reach: host });
  const { page } = browser;
  page.setDefaultTimeout(within(30000));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));

  stepName = 'load';
  const loaded = await page.goto(`${nodeUrl}/settings`, { waitUntil: 'domcontentloaded', timeout: within(15000) });
  check(loaded && loaded.ok(), `${nodeUrl}/ answered ${loaded ? loaded.status() : 'nothing'}`);
  await page.waitForSelector('body.loaded', { timeout: within(15000) });
  if (!(await page.evaluate(() => document.getElementById('add-details').open))) await page.click('#add-details > summary');

  stepName = 'find';
  const found = await posted(page, '/api/discover', () => page.click('#find-go'), 20000);
  check(found.status === 200, `POST /api/discover answered ${found.status}: ${JSON.stringify(found.json)}`);
  await page.waitForFunction(() => !document.getElementById('find-go').disabled, null, { timeout: within(5000) });
  const { devices } = found.json;
  const index = devices.findIndex((d) => !d.cameraId);
  const shown = (await page.innerText('#find')).replace(/\s+/g, ' ');
  check(index >= 0, `no device that is not added yet among ${devices.length}; the page says: ${shown}`);
  const device = devices[index];
  const button = page.locator('#find-list > li').nth(index).locator('button');
  const label = device.name || device.model || device.address;
  check((await button.innerText()).includes(label), `the list's device ${index + 1} does not say ${label}`);

  stepName = 'streams';
  await button.click();
  await page.fill('#find-user', username);
  await page.fill('#find-pass', password);
  check((await page.getAttribute('#find-pass', 'type')) === 'password', 'the password field shows the password');
  const streams = await posted(page, '/api/discover/streams', () => page.click('#find-show'), 40000);
  if (streams.status !== 200) {
    await page.waitForSelector('#find-login-error:not([hidden])', { timeout: within(5000) }).catch(() => {});
    throw new Failure(`POST /api/discover/streams answered ${streams.status}; the page says: ${await page.innerText('#find-login-error')}`);
  }
  check(streams.sent.address === device.services[0], `streams asked of ${streams.sent.address}, not ${device.services[0]}`);
  await page.waitForSelector('#find-streams:not([hidden])', { timeout: within(5000) });
  const { profiles } = streams.json;
  const main = profiles.findIndex((p) => p.role === 'main');
  const sub = profiles.findIndex((p) => p.role === 'sub');
  check(main >= 0 && sub >= 0, `no main and sub role among the profiles: ${JSON.stringify(profiles)}`);
  const size = (p) => ({ width: p.width, height: p.height });
  const [m, s] = [profiles[main], profiles[sub]];
  check(m.width * m.height > s.width * s.height, `main ${m.width}×${m.height} is not bigger than sub ${s.width}×${s.height}`);
  const rows = await page.locator('#find-profiles > li').allInnerTexts();
  check(rows[main]?.includes(`${m.width}×${m.height}`), `the main stream's row does not show ${m.width}×${m.height}: ${rows[main]}`);
  const picked = await page.evaluate(() => ['main', 'sub'].map((r) => document.querySelector(`input[name="find-${r}"]:checked`)?.value));
  check(picked[0] === String(main) && picked[1] === String(sub), `pre-selected ${picked}, not main ${main} and sub ${sub}`);

  stepName = 'add';
  await page.click('#find-use');
  const form = await page.evaluate(() => Object.fromEntries(['name', 'rtspUrl', 'rtspSubUrl'].map((n) => [n, document.forms['add-form'].elements[n].value])));
  check(form.rtspUrl === m.url && form.rtspSubUrl === s.url, `Use these filled ${JSON.stringify(form)}`);
  check(!form.rtspUrl.includes('@'), 'the URL in the form holds user info');
  check(form.name === label, `Use these named the camera ${form.name}, not ${label}`);
  const added = await posted(page, '/api/cameras', () => page.click('#add-submit'), 40000);
  check(added.status === 201, `POST /api/cameras answered ${added.status}: ${JSON.stringify(added.json)}`);
  check((username === '' || added.sent.username === username) && (password === '' || added.sent.password === password), 'the add form did not send the user name and password');
  check(added.sent.onvif?.endpoint === device.endpoint, `the add form sent onvif ${JSON.stringify(added.sent.onvif)}`);
  const cameraId = added.json.id;
  const card = page.locator(`#camera-${cameraId}`);
  await card.waitFor({ timeout: within(10000) });
  const kept = await page.evaluate((pw) => document.body.innerText.includes(pw) || [...document.querySelectorAll('input')].some((i) => i.value.includes(pw)), password);
  check(password.length < 3 || !kept, 'the page shows or keeps the password after adding');

  stepName = 'live';
  await card.locator('.watch').click();
  await page.waitForFunction(() => document.getElementById('live-video').videoWidth > 0, null, { timeout: within(20000), polling: 100 }).catch(async () => {
    throw new Failure(`no picture: ${await page.innerText('#live-msg').catch(() => '?')}`);
  });
  const t0 = await page.evaluate(() => document.getElementById('live-video').currentTime);
  await page.waitForFunction((t) => document.getElementById('live-video').currentTime - t >= 1, t0, { timeout: within(10000), polling: 100 });
  const framesDecoded = await page.evaluate(async () => {
    let n = 0;
    (await window.nvrLive.session.peer.getStats()).forEach((r) => {
      if (r.type === 'inbound-rtp' && r.kind === 'video') n = r.framesDecoded;
    });
    return n;
  });
  check(framesDecoded > 0, 'WebRTC decoded no video frame');
  await page.click('#live-close');
  return { cameraId, device, main: size(m), sub: size(s), played: true, framesDecoded };
}

const browser = prepareBrowser('discover');
await reportAndExit(browser, () => run(browser), TIMEOUT_MS - CLOSE_RESERVE_MS, {
  name: 'discover',
  step: () => stepName,
  errors,
});

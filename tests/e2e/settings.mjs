// The "This node" panel of the Settings view in Debian's headless Chromium
// (playwright-core, launched as browser.mjs says), at a laptop's 1280x800 or
// a phone's 390x844 with a touch screen.
//
// Usage:
//   node tests/e2e/settings.mjs --origin http://127.0.0.1:PORT --size laptop|phone
//        --phase set|check --name NAME --days N [--screenshot FILE] [--timeout-ms N]
//
// set:   opens /settings#node, types 0 into "Days to keep events" and saves:
//        the node's message must show at that field (aria-invalid, its
//        label's words) and nothing else said saved; then types NAME and N,
//        saves, and waits for the success note (not an error) and the header
//        showing NAME.
// check: opens /settings#node (after the node restarted) and reads the two
//        fields and the header: they must be NAME and N.
//
// Prints one JSON line, {"ok":true,...} or {"ok":false,"step":...,"error":...},
// and exits 0 or 1 within --timeout-ms (default 40000).

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from './browser.mjs';

function usage(message) {
  process.stderr.write(`settings: ${message}\n`);
  process.stderr.write(
    'usage: node tests/e2e/settings.mjs --origin URL --size laptop|phone --phase set|check --name NAME --days N\n',
  );
  process.exit(2);
}

const names = {
  '--origin': 'origin',
  '--size': 'size',
  '--phase': 'phase',
  '--name': 'name',
  '--days': 'days',
  '--screenshot': 'screenshot',
  '--timeout-ms': 'timeoutMs',
};
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 40000 }, usage);
for (const key of ['origin', 'size', 'phase', 'name', 'days']) if (!opts[key]) usage(`--${key} is required`);
const phone = opts.size === 'phone';
const viewport = phone ? { width: 390, height: 844 } : { width: 1280, height: 800 };

let step = 'launch';
const errors = [];
const browser = prepareBrowser('settings');

async function run() {
  await launchBrowser(browser, { viewport, hasTouch: phone, isMobile: phone, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (e) => errors.push(e.message));
  step = 'open /settings#node';
  await page.goto(`${opts.origin}/settings#node`);
  const days = page.locator('#set-EVENTS_RETAIN_DAYS');
  const name = page.locator('#set-NODE_NAME');
  await days.waitFor({ timeout: 15000 });
  const header = () => page.locator('#node-name').textContent();
  const named = () => page.waitForFunction((want) => document.getElementById('node-name').textContent === want, opts.name);
  const tap = (locator) => (phone ? locator.tap() : locator.click());
  const save = page.locator('#node-form button[type=submit]');

  if (opts.phase === 'check') {
    step = 'the values kept';
    await named();
    const found = { name: await name.inputValue(), days: await days.inputValue(), header: await header() };
    if (found.name !== opts.name || found.days !== opts.days) throw new Error(`kept: ${JSON.stringify(found)}`);
    return found;
  }

  step = 'a bad value';
  await tap(days);
  await days.fill('0');
  await tap(save);
  await page.waitForFunction(() => document.getElementById('set-EVENTS_RETAIN_DAYS').getAttribute('aria-invalid') === 'true');
  const error = page.locator('#set-EVENTS_RETAIN_DAYS-error');
  const refused = (await error.textContent()).trim();
  if (!(await error.isVisible()) || !refused.startsWith('Days to keep events must be')) throw new Error(`at the field: ${refused}`);
  if (await page.locator('#node-done').isVisible()) throw new Error('a refused value was said saved');
  const focused = await page.evaluate(() => document.activeElement?.id);
  if (focused !== 'set-EVENTS_RETAIN_DAYS') throw new Error(`focus on ${focused}`);
  // In sight: on the screen, and not under the tab bar (top or foot).
  const hidden = await days.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const tabs = document.querySelector('nav.tabs').getBoundingClientRect();
    const under = box.bottom > tabs.top && box.top < tabs.bottom;
    return under || box.top < 0 || box.bottom > innerHeight ? JSON.stringify({ box, tabs }) : null;
  });
  if (hidden) throw new Error(`the field is out of sight: ${hidden}`);

  step = 'name and days';
  await tap(name);
  await name.fill(opts.name);
  await days.fill(opts.days);
  await tap(save);
  const done = page.locator('#node-done');
  await done.waitFor({ state: 'visible' });
  const said = (await done.textContent()).trim();
  const look = await done.evaluate((el) => ({ cls: el.className, color: getComputedStyle(el).color }));
  if (!said.startsWith('Saved') || look.cls.includes('error')) throw new Error(`success shown as ${JSON.stringify({ said, look })}`);
  if ((await days.getAttribute('aria-invalid')) !== null || (await error.isVisible())) throw new Error('the error stayed');
  step = 'the header names the node';
  await named();
  if (opts.screenshot) {
    await page.locator('#node').scrollIntoViewIfNeeded();
    await page.screenshot({ path: opts.screenshot });
  }
  return { refused, said, header: await header() };
}

await reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'settings', step: () => step, errors });

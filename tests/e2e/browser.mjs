// Launches Debian's headless Chromium through playwright-core, the same way for
// every browser test, and closes it within a time limit.
//
// Chromium runs with a fresh user data directory and only these switches (none
// of playwright's defaults), so it reaches nothing but 127.0.0.1 and gathers a
// loopback ICE candidate (Chromium leaves loopback out of ICE unless told):
//   --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
//   --disable-background-networking --disable-component-update --disable-sync
//   --host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1
//   --disable-features=WebRtcHideLocalIpsWithMdns --allow-loopback-in-peer-connection
// plus --user-data-dir and --remote-debugging-pipe, which playwright needs.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Chromium takes the value as it comes: no shell quotes around it here.
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
  '--allow-loopback-in-peer-connection',
];

/** A fresh user data directory (named after `prefix`) for a browser not started yet. */
export function prepareBrowser(prefix) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-chromium-`));
  return { context: null, page: null, userDataDir };
}

/**
 * Starts Chromium in `browser` (from prepareBrowser) with FLAGS only and sets
 * browser.context and browser.page. `options` go to launchPersistentContext
 * (viewport, timeout, env, ...), but for `reach`: a host besides 127.0.0.1
 * that the resolver rules let through (a node in a network namespace), and
 * `name`: a host name that resolves to 127.0.0.1 (the one a node's
 * certificate names).
 */
export async function launchBrowser(browser, options = {}) {
  const { reach, name, ...rest } = options;
  const rules = (f) => {
    if (!f.startsWith('--host-resolver-rules=')) return f;
    let rule = f;
    if (name) rule = rule.replace('=', `=MAP ${name} 127.0.0.1 , `);
    return reach ? `${rule} , EXCLUDE ${reach}` : rule;
  };
  browser.context = await chromium.launchPersistentContext(browser.userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    ignoreDefaultArgs: true, // only FLAGS; playwright adds --user-data-dir and the pipe
    args: [...FLAGS.map(rules), `--user-data-dir=${browser.userDataDir}`, '--remote-debugging-pipe', 'about:blank'],
    ...rest,
  });
  browser.page = browser.context.pages()[0] || (await browser.context.newPage());
  return browser;
}

/**
 * Closes the page (running its pagehide handlers), then the browser, giving up
 * after `waitMs`, and removes the user data directory.
 */
export async function closeBrowser(browser, waitMs) {
  if (!browser) return;
  const { context, page, userDataDir } = browser;
  browser.context = null;
  browser.page = null;
  if (context) {
    const closing = (async () => {
      // Closing the page first runs its pagehide handler, which closes the
      // RTCPeerConnection: the relay then sees DTLS close at once instead of
      // ICE consent expiring some 30 s later.
      if (page) await page.close().catch(() => {});
      await context.close().catch(() => {});
    })();
    await Promise.race([closing, new Promise((r) => setTimeout(r, waitMs))]);
  }
  if (userDataDir) {
    try {
      fs.rmSync(userDataDir, { recursive: true, force: true });
    } catch (_) {
      // Chromium may still be writing into it; it is in the temp dir anyway.
    }
  }
}

/**
 * Reads `--flag value` pairs: `names` maps each flag to its option key,
 * `defaults` gives the starting options; `usage(message)` is called (and
 * must exit) on an unknown flag or a flag without its value.
 */
export function readFlags(argv, names, defaults, usage) {
  const opts = { ...defaults };
  for (let i = 0; i < argv.length; i += 1) {
    const key = names[argv[i]];
    if (!key) usage(`unknown argument ${argv[i]}`);
    if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
    opts[key] = argv[(i += 1)];
  }
  return opts;
}

/**
 * Runs `run()` (which uses `browser`, from prepareBrowser) for at most
 * `limitMs`, closes the browser, prints one JSON line, `{"ok":true, ...}`
 * with what `run` gave or `{"ok":false,"error":"..."}`, and exits 0 or 1.
 * With `steps` ({ name, step: () => the step under way, errors: the page's
 * errors }), a failure names its step and the page's first errors, on
 * stdout and on stderr.
 */
export async function reportAndExit(browser, run, limitMs, steps = null) {
  let result;
  try {
    const read = await Promise.race([
      run(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${limitMs} ms`)), limitMs)),
    ]);
    result = { ok: true, ...read };
  } catch (error) {
    result = { ok: false, error: String(error.message || error) };
    if (steps) {
      const why = result.error.split('\n')[0];
      const seen = steps.errors.length ? ` (page errors: ${steps.errors.slice(0, 3).join(' | ')})` : '';
      result = { ok: false, step: steps.step(), error: `${why}${seen}` };
      process.stderr.write(`${steps.name}: ${result.step}: ${result.error}\n`);
    }
  } finally {
    await closeBrowser(browser, 3000);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(result.ok ? 0 : 1);
}

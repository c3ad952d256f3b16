// Drives Debian's headless Chromium (playwright-core) through the node's live
// view page and checks that live video really plays.
//
// Usage:
//   node tests/e2e/live_view.mjs --url <page URL> [--direct-relay <relay base URL> --camera <id>]
//        [--screenshot <png path>] [--timeout-ms N]
//
// --url is the node's /live.html?camera=<id>[&stream=sub]. With --direct-relay
// the page is the same, but its POST /api/whep/... is answered by the relay
// itself (POST <relay>/api/webrtc?src=<camera>), to measure the relay alone.
//
// It checks that the <video> gets a size, that its currentTime advances by 2 s,
// and that the picture has bright pixels and changes (the test camera shows a
// moving ball on black). It prints one JSON line and exits 0 when all hold:
//   {"ok":true,"videoWidth":640,"videoHeight":360,"offerToFirstFrameMs":123.4,"currentTimeAdvancedS":2.1,...}
// or {"ok":false,"error":"..."} and exits 1. It finishes within --timeout-ms
// (default 30000) and always closes the browser.
//
// Chromium is launched as browser.mjs says: a fresh user data directory and
// only its switches, so it reaches nothing but 127.0.0.1 and gathers a loopback
// ICE candidate.

import { prepareBrowser, launchBrowser, closeBrowser as closeChromium, readFlags } from './browser.mjs';

const PLAY_SECONDS = 2;
const CLOSE_RESERVE_MS = 2500; // kept back from the timeout to close the browser

function usage(message) {
  if (message) process.stderr.write(`live_view: ${message}\n`);
  process.stderr.write(
    'usage: node tests/e2e/live_view.mjs --url <page URL> ' +
      '[--direct-relay <relay base URL> --camera <id>] [--screenshot <png path>] [--timeout-ms N]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const names = {
    '--url': 'url',
    '--direct-relay': 'directRelay',
    '--camera': 'camera',
    '--screenshot': 'screenshot',
    '--timeout-ms': 'timeoutMs',
  };
  const opts = readFlags(argv, names, { timeoutMs: 30000 }, usage);
  if (!opts.url) usage('--url is required');
  opts.timeoutMs = Number(opts.timeoutMs);
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs < 5000) usage('--timeout-ms must be >= 5000');
  if (Boolean(opts.directRelay) !== Boolean(opts.camera)) usage('--direct-relay and --camera go together');
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const startedAt = Date.now();
const deadline = startedAt + opts.timeoutMs - CLOSE_RESERVE_MS;
const remaining = () => Math.max(1, deadline - Date.now());

let printed = false;
let passed = false;
function finish(result) {
  if (printed) return;
  printed = true;
  passed = result.ok === true;
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

const consoleErrors = [];
const offerCandidates = [];
let browser = null;
let page = null;
let relayAnswer = null; // --direct-relay: what the relay answered the offer

/** liveStats and what the page shows, for error reports. */
async function pageState() {
  if (!page) return {};
  try {
    return await page.evaluate(() => {
      const v = document.getElementById('live');
      return {
        liveStats: window.liveStats || null,
        message: document.getElementById('message')?.textContent || '',
        videoWidth: v ? v.videoWidth : null,
        currentTime: v ? v.currentTime : null,
        readyState: v ? v.readyState : null,
        connectionState: window.liveSession?.peer?.connectionState ?? null,
        iceConnectionState: window.liveSession?.peer?.iceConnectionState ?? null,
      };
    });
  } catch (error) {
    return { evaluateError: String(error.message || error) };
  }
}

async function fail(reason) {
  const state = await pageState();
  const parts = [reason];
  if (state.liveStats?.error) parts.push(`liveStats.error: ${state.liveStats.error}`);
  if (relayAnswer && relayAnswer.status !== 201) parts.push(`relay answered: ${JSON.stringify(relayAnswer)}`);
  if (consoleErrors.length) parts.push(`console errors: ${consoleErrors.slice(0, 5).join(' | ')}`);
  finish({
    ok: false,
    error: parts.join('; '),
    liveStats: state.liveStats ?? null,
    page: state,
    consoleErrors,
    offerCandidates,
  });
}

/** Draws the video into a small canvas and returns its pixels' brightness facts. */
async function samplePicture() {
  return page.evaluate(() => {
    const v = document.getElementById('live');
    const w = 160;
    const h = Math.max(1, Math.round((w * v.videoHeight) / Math.max(1, v.videoWidth)));
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    ctx.drawImage(v, 0, 0, w, h);
    const data = ctx.getImageData(0, 0, w, h).data;
    const luma = new Array(w * h);
    let bright = 0;
    let max = 0;
    for (let i = 0, p = 0; i < data.length; i += 4, p += 1) {
      const y = 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
      luma[p] = Math.round(y);
      if (y > 128) bright += 1;
      if (y > max) max = y;
    }
    return { width: w, height: h, bright, max: Math.round(max), luma, currentTime: v.currentTime };
  });
}

function changedPixels(a, b) {
  let changed = 0;
  for (let i = 0; i < a.luma.length; i += 1) if (Math.abs(a.luma[i] - b.luma[i]) > 40) changed += 1;
  return changed;
}

async function run() {
  browser = prepareBrowser('live-view');
  await launchBrowser(browser, { viewport: { width: 800, height: 500 }, timeout: remaining() });
  page = browser.page;
  page.setDefaultTimeout(remaining());
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      const where = msg.location()?.url;
      consoleErrors.push(where ? `${msg.text()} (${where})` : msg.text());
    }
  });
  page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
  page.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname.startsWith('/api/whep/')) {
      for (const line of (request.postData() || '').split(/\r?\n/)) {
        if (line.startsWith('a=candidate:')) {
          const f = line.split(' ');
          offerCandidates.push(`${f[4]} ${f[2].toLowerCase()} ${f[7]}`);
        }
      }
    }
  });

  if (opts.directRelay) {
    const target = `${opts.directRelay.replace(/\/+$/, '')}/api/webrtc?src=${encodeURIComponent(opts.camera)}`;
    await page.route(
      (url) => url.pathname.startsWith('/api/whep/'),
      async (route) => {
        if (route.request().method() !== 'POST') {
          await route.fulfill({ status: 405, body: '' });
          return;
        }
        try {
          const response = await route.fetch({ url: target, timeout: remaining() });
          const body = await response.text();
          relayAnswer = { status: response.status() };
          if (response.status() !== 201) relayAnswer.body = body.slice(0, 300);
          await route.fulfill({
            status: response.status(),
            contentType: response.headers()['content-type'] || 'text/plain',
            body,
          });
        } catch (error) {
          relayAnswer = { error: String(error.message || error) };
          await route.fulfill({ status: 502, contentType: 'application/json', body: JSON.stringify({ error: `relay: ${error.message}` }) });
        }
      },
    );
  }

  const response = await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: remaining() });
  if (!response || !response.ok()) {
    return fail(`page ${opts.url} answered ${response ? response.status() : 'nothing'}`);
  }

  // 1. The first frame, or the page's own error.
  try {
    await page.waitForFunction(
      () => {
        const s = window.liveStats;
        const v = document.getElementById('live');
        return (s && s.error) || (s && s.firstFrameAt !== null && v && v.videoWidth > 0);
      },
      null,
      { timeout: remaining(), polling: 50 },
    );
  } catch (error) {
    return fail(`no video frame within ${opts.timeoutMs} ms (${error.message.split('\n')[0]})`);
  }
  const first = await page.evaluate(() => {
    const v = document.getElementById('live');
    const s = window.liveStats;
    return { stats: { ...s }, videoWidth: v.videoWidth, videoHeight: v.videoHeight, currentTime: v.currentTime };
  });
  if (first.stats.error) return fail(`live view failed: ${first.stats.error}`);

  // 2. Playback goes on: currentTime advances by PLAY_SECONDS, and the picture moves.
  const sampleA = await samplePicture();
  try {
    await page.waitForFunction(
      ([t0, secs]) => document.getElementById('live').currentTime - t0 >= secs,
      [sampleA.currentTime, PLAY_SECONDS],
      { timeout: remaining(), polling: 100 },
    );
  } catch (error) {
    const now = await page.evaluate(() => document.getElementById('live').currentTime).catch(() => NaN);
    return fail(
      `currentTime advanced ${(now - sampleA.currentTime).toFixed(2)} s, not ${PLAY_SECONDS} s, ` +
        `before the timeout (video stalled?)`,
    );
  }
  const sampleB = await samplePicture();
  const advanced = sampleB.currentTime - sampleA.currentTime;
  const changed = changedPixels(sampleA, sampleB);
  if (Math.max(sampleA.bright, sampleB.bright) === 0) {
    return fail(`the picture is dark: no bright pixel (max luma ${Math.max(sampleA.max, sampleB.max)})`);
  }
  if (changed === 0) return fail('the picture did not change over 2 s of playback (frozen frame?)');

  if (opts.screenshot) await page.screenshot({ path: opts.screenshot, timeout: remaining() });

  // What WebRTC says about the session: the ICE pair in use, codecs, audio.
  const webrtc = await page.evaluate(async () => {
    const pc = window.liveSession?.peer;
    if (!pc) return null;
    const stats = await pc.getStats();
    const byId = new Map();
    stats.forEach((s) => byId.set(s.id, s));
    const out = { audioPacketsReceived: 0, videoFramesDecoded: 0 };
    stats.forEach((s) => {
      if (s.type === 'transport' && s.selectedCandidatePairId) {
        const pair = byId.get(s.selectedCandidatePairId);
        const local = pair && byId.get(pair.localCandidateId);
        const remote = pair && byId.get(pair.remoteCandidateId);
        if (local) out.localCandidate = `${local.address || local.ip}:${local.port} ${local.candidateType}`;
        if (remote) out.remoteCandidate = `${remote.address || remote.ip}:${remote.port} ${remote.candidateType}`;
      }
      if (s.type === 'inbound-rtp') {
        const codec = byId.get(s.codecId);
        if (s.kind === 'audio') {
          out.audioPacketsReceived = s.packetsReceived;
          out.audioCodec = codec?.mimeType;
        } else if (s.kind === 'video') {
          out.videoFramesDecoded = s.framesDecoded;
          out.videoCodec = codec?.mimeType;
        }
      }
    });
    return out;
  });

  finish({
    ok: true,
    videoWidth: first.videoWidth,
    videoHeight: first.videoHeight,
    offerToFirstFrameMs: Math.round((first.stats.firstFrameAt - first.stats.offerAt) * 10) / 10,
    currentTimeAdvancedS: Math.round(advanced * 100) / 100,
    brightPixels: Math.max(sampleA.bright, sampleB.bright),
    changedPixels: changed,
    sampledPixels: sampleA.width * sampleA.height,
    ...(webrtc || {}),
    offerCandidates,
    ...(opts.directRelay ? { directRelay: true, relayAnswer } : {}),
    elapsedMs: Date.now() - startedAt,
  });
  return undefined;
}

async function closeBrowser() {
  const b = browser;
  browser = null;
  await closeChromium(b, CLOSE_RESERVE_MS - 300);
}

// The whole run, browser closing included, stays within --timeout-ms.
const hardStop = setTimeout(() => {
  finish({ ok: false, error: `timed out after ${opts.timeoutMs} ms`, consoleErrors, offerCandidates });
  // playwright kills the browser it launched when this process exits.
  process.exit(1);
}, opts.timeoutMs);

try {
  await run();
} catch (error) {
  await fail(`error: ${String(error.message || error).split('\n')[0]}`);
}
if (!printed) await fail('finished without a result');
await closeBrowser();
clearTimeout(hardStop);
process.exit(passed ? 0 : 1);

// Plays a recording in Debian's headless Chromium (playwright-core, launched
// as browser.mjs says): a <video> whose src is the node's recording.mp4 must
// load (readyState 4), tell its length, play (currentTime advances), and seek
// (currentTime jumps to the seek target and goes on from there).
//
// Usage:
//   node tests/e2e/playback.mjs --origin http://127.0.0.1:PORT --src /api/cameras/ID/recording.mp4?...
//        --seek SECONDS [--timeout-ms N]
//
// The video is made in a page of the node's own origin. It prints one JSON
// line and exits 0 when all holds:
//   {"ok":true,"duration":30.1,"advanced":1.6,"afterSeek":21.3,"ranges":[...],"statuses":[...]}
// or {"ok":false,"error":"..."} and exits 1, within --timeout-ms (default 40000).

import { prepareBrowser, launchBrowser, closeBrowser, readFlags } from './browser.mjs';

function usage(message) {
  process.stderr.write(`playback: ${message}\n`);
  process.stderr.write('usage: node tests/e2e/playback.mjs --origin <node URL> --src <path> --seek <s> [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--origin': 'origin', '--src': 'src', '--seek': 'seek', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 40000 }, usage);
for (const need of ['origin', 'src', 'seek']) if (!opts[need]) usage(`--${need} is required`);
const seek = Number(opts.seek);
const timeoutMs = Number(opts.timeoutMs);

const ranges = [];
const statuses = [];
let browser = null;

async function run() {
  browser = prepareBrowser('playback');
  await launchBrowser(browser, { timeout: 15000 });
  const { page } = browser;
  page.on('request', (request) => {
    if (request.url().includes('recording.mp4')) ranges.push(request.headers().range || '');
  });
  page.on('response', (response) => {
    if (response.url().includes('recording.mp4')) statuses.push(response.status());
  });
  await page.goto(`${opts.origin}/api/status`);
  return page.evaluate(
    async ({ src, seek }) => {
      const video = document.createElement('video');
      video.muted = true;
      video.preload = 'auto';
      document.body.append(video);
      const failed = () => (video.error ? `media error ${video.error.code}: ${video.error.message}` : '');
      const until = (test, what, ms) =>
        new Promise((resolve, reject) => {
          const started = performance.now();
          const tick = () => {
            if (failed()) return reject(new Error(`${what}: ${failed()}`));
            if (test()) return resolve();
            if (performance.now() - started > ms) return reject(new Error(`${what}: timed out (readyState ${video.readyState}, currentTime ${video.currentTime})`));
            return setTimeout(tick, 50);
          };
          tick();
        });
      video.src = src;
      await until(() => video.readyState >= 4, 'readyState 4', 15000);
      const duration = video.duration;
      await video.play();
      const start = video.currentTime;
      await until(() => video.currentTime >= start + 1.5, 'playing', 8000);
      const advanced = video.currentTime - start;
      video.currentTime = seek;
      await until(() => !video.seeking && video.currentTime >= seek, 'seeking', 10000);
      const landed = video.currentTime;
      await until(() => video.currentTime >= landed + 1, 'playing after the seek', 8000);
      return { duration, advanced, landed, afterSeek: video.currentTime, width: video.videoWidth };
    },
    { src: opts.src, seek },
  );
}

let result;
const timer = setTimeout(() => {
  result = { ok: false, error: `timed out after ${timeoutMs} ms`, ranges, statuses };
}, timeoutMs);
try {
  const played = await Promise.race([
    run(),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs)),
  ]);
  result = { ok: true, ...played, ranges, statuses };
} catch (error) {
  result = result || { ok: false, error: String(error.message || error), ranges, statuses };
} finally {
  clearTimeout(timer);
  await closeBrowser(browser, 3000);
}
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(result.ok ? 0 : 1);

// The benchmark's browser: the node's live grid in Debian's headless Chromium
// (playwright-core, launched as tests/e2e/browser.mjs says), watched for a
// while, counting the requests the page makes to the node meanwhile.
//
// Usage:
//   node benches/grid_watch.mjs --url <node URL> --cameras <id>,... --seconds N [--timeout-ms N]
//
// On 1280x800 (every tile on screen), waits until the tile of each camera
// plays (readyState 4, currentTime advancing 1 s), then prints the line
// `window start`, watches N seconds, checks every tile played on through
// them (currentTime advanced by half of N at least) and prints `window end`.
// Its last line is browser.mjs's JSON verdict, with the requests the page
// made to the node, by kind (status, events, whepPost, whepDelete, other):
// `opening` from the page's load to `window start`, `watching` between the
// two lines, and `other`: the paths of the others while watching.

import { prepareBrowser, launchBrowser, readFlags, reportAndExit } from '../tests/e2e/browser.mjs';

function usage(message) {
  process.stderr.write(`grid_watch: ${message}\n`);
  process.stderr.write('usage: node benches/grid_watch.mjs --url <node URL> --cameras <id>,... --seconds N [--timeout-ms N]\n');
  process.exit(2);
}

const names = { '--url': 'url', '--cameras': 'cameras', '--seconds': 'seconds', '--timeout-ms': 'timeoutMs' };
const opts = readFlags(process.argv.slice(2), names, { timeoutMs: 600000 }, usage);
for (const need of ['url', 'cameras', 'seconds']) if (!opts[need]) usage(`--${need} is required`);
const ids = opts.cameras.split(',');
const seconds = Number(opts.seconds);
if (!(seconds > 0)) usage(`bad --seconds ${opts.seconds}`);

let step = 'start';
const errors = [];
const browser = prepareBrowser('grid-watch');
const counts = () => ({ status: 0, events: 0, whepPost: 0, whepDelete: 0, other: 0 });
const opening = counts();
const watching = counts();
let counting = opening; // then watching, then null
const other = [];

/** The kind of a request the page makes to the node. */
function kind(method, pathname) {
  if (pathname === '/api/status') return 'status';
  if (pathname === '/api/events') return 'events';
  if (pathname.startsWith('/api/whep/')) return method === 'POST' ? 'whepPost' : method === 'DELETE' ? 'whepDelete' : 'other';
  return 'other';
}

/** currentTime of each tile's video, in the order of `ids`. */
const times = (page) => page.evaluate((list) => list.map((id) => document.querySelector(`#grid [data-id="${id}"] video`).currentTime), ids);

async function run() {
  await launchBrowser(browser, { viewport: { width: 1280, height: 800 }, timeout: 15000 });
  const { page } = browser;
  page.on('pageerror', (error) => errors.push(error.message));
  const origin = new URL(opts.url).origin;
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (!counting || url.origin !== origin) return;
    const k = kind(request.method(), url.pathname);
    counting[k] += 1;
    if (k === 'other' && counting === watching) other.push(`${request.method()} ${url.pathname}`);
  });

  step = 'every tile plays';
  await page.goto(opts.url);
  // The tiles come with the page's first status, which may follow the page's load.
  await page.waitForFunction(
    (list) => list.every((id) => document.querySelector(`#grid [data-id="${id}"] video`)),
    ids,
    { timeout: 60000, polling: 100 },
  );
  const from = await times(page);
  await page.waitForFunction(
    ([list, t0]) => list.every((id, i) => {
      const v = document.querySelector(`#grid [data-id="${id}"] video`);
      return v && v.readyState === 4 && v.currentTime >= t0[i] + 1;
    }),
    [ids, from],
    { timeout: 60000, polling: 100 },
  );

  step = 'watching';
  const start = await times(page);
  counting = watching;
  process.stdout.write('window start\n');
  await new Promise((r) => setTimeout(r, seconds * 1000));
  counting = null;
  process.stdout.write('window end\n');
  const end = await times(page);
  const stalled = ids.filter((_, i) => end[i] < start[i] + seconds / 2);
  if (stalled.length) throw new Error(`tiles stopped playing while watched: ${stalled.join(', ')} (${JSON.stringify([start, end])})`);
  return { opening, watching, other, played: end.map((t, i) => Math.round((t - start[i]) * 10) / 10) };
}

reportAndExit(browser, run, Number(opts.timeoutMs), { name: 'grid_watch', step: () => step, errors });

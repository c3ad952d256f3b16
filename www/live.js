// The live view page: /live.html?camera=<id>&stream=main|sub.
// Exposes window.liveStats (offer start and first frame, in ms) for tests.
import { watch } from './whep.js';

const params = new URLSearchParams(location.search);
const camera = params.get('camera') || '';
const stream = params.get('stream') === 'sub' ? 'sub' : 'main';
const video = document.getElementById('live');
const message = document.getElementById('message');
const stats = { offerAt: performance.now(), firstFrameAt: null, error: null };
window.liveStats = stats;

function firstFrame() {
  stats.firstFrameAt = performance.now();
  message.textContent = '';
}

if ('requestVideoFrameCallback' in video) {
  video.requestVideoFrameCallback(firstFrame);
} else {
  video.addEventListener('loadeddata', firstFrame, { once: true });
}

message.textContent = 'Connecting…';
watch(video, camera, stream)
  .then((session) => {
    window.addEventListener('pagehide', () => session.close());
    window.liveSession = session;
  })
  .catch((error) => {
    stats.error = error.message;
    message.textContent = `Live view unavailable: ${error.message}`;
  });

// An event's clip in a dialog: the node's MP4 of it (from 5 s before to 5 s
// after) playing in a <video> with its own controls, and a download of it;
// until the event has a clip (going on, or its clip being cut), its picture
// and why there is no clip yet. "Open in recordings" goes to the moment
// playing in the camera's recording. What the event saw is said under it,
// and its objects' boxes (boxes.js) are drawn over its picture while that is
// shown: not over the clip, whose things move; "Loitering" by the title when
// someone lingered.

import { $, setText, setAttr, show, toggleClass } from './dom.js';
import { serverNow } from './api.js';
import { duration, percent, scoreWords } from './format.js';
import { drawObjects } from './boxes.js';
import { stageMessage, unloadVideo, whyNotPlayed } from './stage.js';

const message = stageMessage('clip');
let shown = null; // {url, codec} of the clip in the video, null when closed
let event = null; // the event shown, null when closed

/** The event the dialog shows (as it was when opened), or null. */
export function clipShown() {
  return $('clip').open ? event : null;
}

/** "Porch camera motion 2026-11-23 14-03-10 UTC.mp4": the node's URL ends in a bare "clip.mp4". */
function fileName(event, camera) {
  const at = String(event.startedAt).slice(0, 19).replace('T', ' ').replaceAll(':', '-');
  return `${camera ? camera.name : 'Camera'} ${event.kind} ${at} UTC.mp4`;
}

/** Plays the clip of `event` (the API's) of `camera`; `what` names it ("Motion at Porch camera, …"). */
export function openClip(opened, camera, what) {
  event = opened;
  shown = event.clipUrl ? { url: event.clipUrl, codec: camera?.capabilities?.videoCodec } : null;
  setText($('clip-title'), what);
  const lasted = duration(Date.parse(event.endedAt) - Date.parse(event.startedAt));
  const objects = Array.isArray(event.objects) ? event.objects : [];
  const saw = objects.length ? `Saw ${objects.map((o) => `${o.kind} ${percent(o.score)}`).join(', ')}` : '';
  setText($('clip-about'), [lasted && `Lasted ${lasted}`, scoreWords(event), saw].filter(Boolean).join(' · '));
  show($('clip-loiter'), event.loitering === true);
  const link = $('clip-download');
  setAttr(link, 'href', event.clipUrl);
  setAttr(link, 'download', fileName(event, camera));
  show(link, Boolean(shown));
  setAttr($('clip-rec'), 'href', recordingsAt(0));
  const v = $('clip-video');
  // No clip yet: the picture of the event's start, and why, over the foot of it.
  toggleClass($('clip-msg'), 'note', !shown && Boolean(event.thumbnailUrl));
  setAttr(v, 'poster', shown ? null : event.thumbnailUrl);
  poster = null;
  drawPoster();
  if (!shown && event.thumbnailUrl) loadPoster(event.thumbnailUrl);
  v.controls = Boolean(shown);
  if (shown) {
    message('Loading…', '', true);
    v.src = event.clipUrl;
    // Refused or cut short (the dialog closed): the video's own events tell the rest.
    v.play().catch(() => {});
  } else {
    unloadVideo(v);
    if (event.inProgress) message('Still going on', 'Its clip is cut when it ends, and shows here then.');
    else if (serverNow() - Date.parse(event.endedAt) < 60000) message('Clip coming…', 'The node is cutting it from the recording: it shows here when it is ready.');
    else message('No clip', 'The node has no recording of this moment.');
  }
  const dialog = $('clip');
  if (!dialog.open) dialog.showModal();
  $('clip-close').focus();
}

let poster = null; // the aspect (width / height) of the picture shown in place of a clip, once loaded

/** Reads the picture's aspect (the poster's own is not told), then draws the boxes over it. */
function loadPoster(url) {
  const img = new Image();
  img.addEventListener('load', () => {
    if (event?.thumbnailUrl !== url || shown) return;
    poster = img.naturalWidth / img.naturalHeight;
    drawPoster();
  });
  img.src = url;
}

/** The objects' boxes over the picture, fitted whole in the stage as the video shows its poster. */
function drawPoster() {
  const stage = $('clip-video');
  const ratio = stage.clientWidth / stage.clientHeight;
  const objects = poster && event && Array.isArray(event.objects) ? event.objects.filter((o) => Array.isArray(o.box)) : [];
  drawObjects($('clip-objects'), objects, poster || 0, ratio || 0, false);
  // Why there is no clip yet, at the foot of the picture: at its head where the objects are low in it.
  const low = objects.length > 0 && objects.reduce((sum, o) => sum + (o.box[1] + o.box[3]) / 2, 0) / objects.length > 0.5;
  toggleClass($('clip-msg'), 'top', low);
}

/** The recordings view at the clip's moment `s` seconds in (a clip starts 5 s before its event). */
function recordingsAt(s) {
  const at = Date.parse(event.startedAt) + (shown ? s - 5 : 0) * 1000;
  return `/recordings?camera=${event.cameraId}&t=${new Date(at).toISOString()}`;
}

async function explain() {
  const mine = shown;
  const why = await whyNotPlayed(mine.url, 'clip', mine.codec);
  if (mine !== shown) return;
  message(why.title, why.text);
  show($('clip-download'), why.status === 200);
}

export function setUpClip() {
  const dialog = $('clip');
  const v = $('clip-video');
  dialog.addEventListener('close', () => {
    shown = null;
    event = null;
    unloadVideo(v);
    v.removeAttribute('poster');
    poster = null;
    drawPoster();
  });
  // The stage's shape follows the window: the boxes follow the picture.
  new ResizeObserver(() => {
    if (poster) drawPoster();
  }).observe(v);
  $('clip-close').addEventListener('click', () => dialog.close());
  // Followed by views.js once this has run: the moment playing now, the dialog closed.
  $('clip-rec').addEventListener('click', (e) => {
    e.currentTarget.href = recordingsAt(v.currentTime);
    dialog.close();
  });
  v.addEventListener('loadeddata', () => {
    if (shown) message('');
  });
  v.addEventListener('error', () => {
    if (shown && v.getAttribute('src')) explain();
  });
}

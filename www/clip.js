// An event's clip in a dialog: the node's MP4 of it (from 5 s before to 5 s
// after) playing in a <video> with its own controls, and a download of it;
// until the event has a clip (going on, or its clip being cut), its picture
// and why there is no clip yet. "Open in recordings" goes to the moment
// playing in the camera's recording. (The events API gives no objects' boxes
// to draw over it.)

import { $, setText, setAttr, show, toggleClass } from './dom.js';
import { serverNow } from './api.js';
import { duration, scoreWords } from './format.js';
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
  setText($('clip-about'), [lasted && `Lasted ${lasted}`, scoreWords(event)].filter(Boolean).join(' · '));
  const link = $('clip-download');
  setAttr(link, 'href', event.clipUrl);
  setAttr(link, 'download', fileName(event, camera));
  show(link, Boolean(shown));
  setAttr($('clip-rec'), 'href', recordingsAt(0));
  const v = $('clip-video');
  // No clip yet: the picture of the event's start, and why, over the foot of it.
  toggleClass($('clip-msg'), 'note', !shown && Boolean(event.thumbnailUrl));
  setAttr(v, 'poster', shown ? null : event.thumbnailUrl);
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
  });
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

// An event's clip in a dialog: the node's MP4 of it (from 5 s before to 5 s
// after) playing in a <video> with its own controls, and a download of it.

import { $, setText, setAttr, show } from './dom.js';
import { duration, scoreWords } from './format.js';
import { stageMessage, unloadVideo, whyNotPlayed } from './stage.js';

const message = stageMessage('clip');
let shown = null; // {url, codec} of the clip in the video, null when closed

/** "Porch camera motion 2026-11-23 14-03-10 UTC.mp4": the node's URL ends in a bare "clip.mp4". */
function fileName(event, camera) {
  const at = String(event.startedAt).slice(0, 19).replace('T', ' ').replaceAll(':', '-');
  return `${camera ? camera.name : 'Camera'} ${event.kind} ${at} UTC.mp4`;
}

/** Plays the clip of `event` (the API's) of `camera`; `what` names it ("Motion at Porch camera, …"). */
export function openClip(event, camera, what) {
  shown = { url: event.clipUrl, codec: camera?.capabilities?.videoCodec };
  setText($('clip-title'), what);
  const lasted = duration(Date.parse(event.endedAt) - Date.parse(event.startedAt));
  setText($('clip-about'), [lasted && `Lasted ${lasted}`, scoreWords(event)].filter(Boolean).join(' · '));
  const link = $('clip-download');
  link.href = event.clipUrl;
  setAttr(link, 'download', fileName(event, camera));
  show(link, true);
  message('Loading…', '', true);
  const v = $('clip-video');
  v.src = event.clipUrl;
  // Refused or cut short (the dialog closed): the video's own events tell the rest.
  v.play().catch(() => {});
  const dialog = $('clip');
  if (!dialog.open) dialog.showModal();
  $('clip-close').focus();
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
    unloadVideo(v);
  });
  $('clip-close').addEventListener('click', () => dialog.close());
  v.addEventListener('loadeddata', () => {
    if (shown) message('');
  });
  v.addEventListener('error', () => {
    if (shown && v.getAttribute('src')) explain();
  });
}

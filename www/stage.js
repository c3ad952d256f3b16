// What the recordings view and an event's clip share about their <video> of a
// file from the node: the message over it, letting the file go, and why it
// did not play.

import { $, setText, show } from './dom.js';
import { api } from './api.js';
import { codecName, sentence } from './format.js';

/** The message over a stage whose parts have ids `${prefix}-msg`, `-msg-title`, `-msg-text` and `-spinner`; no title hides it. */
export function stageMessage(prefix) {
  return (title, text = '', spinner = false) => {
    setText($(`${prefix}-msg-title`), title);
    setText($(`${prefix}-msg-text`), text);
    show($(`${prefix}-spinner`), spinner);
    show($(`${prefix}-msg`), Boolean(title));
  };
}

/** Stops `video` and drops its hold on the file. */
export function unloadVideo(video) {
  video.pause();
  video.removeAttribute('src');
  video.load();
}

/**
 * Why the `what` ("recording", "clip") at `url` did not play, in words: when
 * the node has it (`status` 200), this browser cannot decode its video
 * (`codec`); else the node's reason, with its status.
 */
export async function whyNotPlayed(url, what, codec) {
  try {
    await api('GET', url, undefined, { headers: { Range: 'bytes=0-0' }, timeoutMs: 8000 });
    return {
      status: 200,
      title: `This browser cannot play this ${what}`,
      text: `${codec ? `Its video is ${codecName(codec)}. ` : ''}Download it to watch it in a player that can.`,
    };
  } catch (error) {
    return { status: error.status, title: `Cannot play this ${what}`, text: `${sentence(error.message)}.` };
  }
}

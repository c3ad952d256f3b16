// Words for what the API gives: capabilities, the recorder, times, durations,
// scores, sizes.

/** `text` with its first letter in capitals: the API's messages start in lower case. */
export function sentence(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

const CODECS = { h264: 'H.264', h265: 'H.265', hevc: 'H.265', mjpeg: 'MJPEG', mpeg4: 'MPEG-4', av1: 'AV1', vp8: 'VP8', vp9: 'VP9' };

export function codecName(codec) {
  const key = String(codec || '').toLowerCase();
  return CODECS[key] || key.toUpperCase();
}

/** "H.264 · 1920×1080 · 25 fps · sub stream", or "" when nothing was probed. */
export function capabilitiesText(caps) {
  if (!caps || !caps.videoCodec) return '';
  const parts = [codecName(caps.videoCodec)];
  if (caps.width && caps.height) parts.push(`${caps.width}×${caps.height}`);
  if (caps.fps) parts.push(`${caps.fps}\u00a0fps`);
  if (caps.hasSubstream) parts.push('sub\u00a0stream');
  return parts.join(' · ');
}

/** The recorder's state (a camera's `recording`) in words, and its tone. */
export function recorderState(recording) {
  switch (recording?.state) {
    case 'recording':
      return { text: 'Recording', tone: 'rec' };
    case 'starting':
      return { text: 'Recorder starting…', tone: 'off' };
    case 'retrying':
      return { text: `Not recording: ${recording.message || 'trying again shortly'}`, tone: 'bad' };
    default:
      return { text: 'Not recording', tone: 'off' };
  }
}

const SOURCE_WORDS = { node: 'the node', camera: 'the camera', both: 'the camera and the node' };

/**
 * Whose motion detection starts a camera's events, and how its own ONVIF
 * motion events go (its `motionEvents`), for a camera linked to its device
 * or set to a source: { text, warn }; no text otherwise.
 */
export function motionEventsText(camera) {
  const events = camera.motionEvents;
  if (!events || (!camera.onvif && !camera.motionSource)) return { text: '', warn: false };
  const by = `Motion found by ${SOURCE_WORDS[events.source] || events.source}`;
  const heard = events.lastMessageAt ? `; it last said ${relativeTime(Date.parse(events.lastMessageAt), Date.now())}` : '';
  switch (events.state) {
    case 'subscribing':
      return { text: `${by}; subscribing to the camera's motion events…`, warn: false };
    case 'receiving':
      return { text: `${by}; receiving the camera's motion events${heard}`, warn: false };
    case 'failing':
      return { text: `${by}. The camera's motion events fail: ${events.detail || 'no reason given'}.`, warn: true };
    case 'stuck':
      return { text: `${by}. ${sentence(events.detail || 'the camera says there is motion without end')}.`, warn: true };
    default:
      return { text: events.detail ? `${by}. ${sentence(events.detail)}.` : by, warn: false };
  }
}

/**
 * Whether a camera answers, as a card or a tile says it: [word, tone]. While
 * the node cannot be reached, what it last said is not claimed.
 */
export function onlineState(camera, reachable) {
  if (!camera.enabled) return ['Disabled', 'off'];
  if (!reachable) return ['Not known', 'off'];
  return camera.online ? ['Online', 'ok'] : ['Offline', 'bad'];
}

/** "91%" for 0.91. */
export function percent(score) {
  const n = Number(score);
  if (!Number.isFinite(n)) return '';
  return `${Math.round(Math.min(1, Math.max(0, n)) * 100)}%`;
}

/** What an event's score means: for motion, the largest share of the picture that moved. */
export function scoreWords(event) {
  const score = percent(event.score);
  if (!score) return '';
  return event.kind === 'motion' ? `${score} of the picture moved` : `${score} sure`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const shortDate = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

const clock = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const clockSeconds = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', second: '2-digit' });

/** The local time of day: "14:03" (or "2:03 PM"), "14:03:10" with seconds. */
export function clockTime(ms, seconds = false) {
  return Number.isFinite(ms) ? (seconds ? clockSeconds : clock).format(new Date(ms)) : '';
}

const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/** "Nov 23": a day, where a time axis passes midnight. */
export function dayName(ms) {
  return day.format(new Date(ms));
}

/** "14:03 – 14:33" in the locale's way (with the dates when the days differ). */
export function clockRange(from, to, seconds = false) {
  return (seconds ? clockSeconds : clock).formatRange(new Date(from), new Date(to));
}

/** "Dec 5, 10:47 – 10:48 PM": a span with its dates. */
export function dateRange(from, to) {
  return shortDate.formatRange(new Date(from), new Date(to));
}

/** The full local date and time, for hover text. */
export function absoluteTime(ms) {
  return Number.isFinite(ms) ? dateTime.format(new Date(ms)) : '';
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", or a short date past a day. */
export function relativeTime(ms, now) {
  if (!Number.isFinite(ms)) return 'unknown time';
  const s = Math.round((now - ms) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return shortDate.format(new Date(ms));
}

/** "1 event", "3 events". */
export const counted = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** "8 s", "1 min 5 s", "2 h 3 min", "under 1 s". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = Math.round(ms / 1000);
  if (s < 1) return 'under 1 s';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const m = Math.floor(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
}

/** "4:59" for a countdown; "1:02:03" past an hour. */
export function countdown(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** "812 kB", "1.2 GB", "40 GB": powers of 1000, as disks are sold. */
export function bytes(n) {
  if (!Number.isFinite(n) || n < 0) return '';
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let value = n;
  let unit = 0;
  while (value >= 999.5 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const text = unit > 0 && value < 9.95 ? value.toFixed(1) : String(Math.round(value));
  return `${text}\u00a0${units[unit]}`;
}

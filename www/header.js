// The node header: its name and one line of state in plain words, and a banner
// when the node cannot be reached; and under Settings, About this node: version,
// id, the recordings' and clips' storage, the events not reviewed, relay health
// (with the relay's version), cloud link (with the claim code and its
// countdown).

import { $, setAttr, setText, show, toggleClass } from './dom.js';
import { serverNow } from './api.js';
import { absoluteTime, bytes, countdown, counted } from './format.js';

const CLOUD = {
  disabled: ['Cloud: off', 'neutral', 'Remote access is not set up; everything works on this network.'],
  registering: ['Cloud: registering…', 'warn', 'The node is registering with the cloud service.'],
  unclaimed: ['Cloud: waiting to be claimed', 'warn', 'Enter the code below in the app to link this node to your account.'],
  connecting: ['Cloud: connecting…', 'warn', 'The node is connecting to the cloud service.'],
  online: ['Cloud: connected', 'ok', 'Remote access through the cloud is working.'],
  error: ['Cloud: error', 'bad', 'The cloud link has a problem.'],
};

// Home Assistant through MQTT, by the state status gives.
const MQTT = {
  disabled: ['Home Assistant: off', 'neutral', 'MQTT is not set up (MQTT_URL).'],
  connecting: ['Home Assistant: connecting…', 'warn', 'The node is connecting to the MQTT broker.'],
  connected: ['Home Assistant: connected', 'ok', 'Cameras, motion and events are published to the MQTT broker.'],
  error: ['Home Assistant: error', 'bad', 'The MQTT broker link has a problem.'],
};

let expiresAt = NaN;
let ticker = null;

function setBadge(el, text, tone, title) {
  setText(el, text);
  for (const t of ['ok', 'bad', 'warn', 'neutral']) toggleClass(el, t, t === tone);
  if (title !== undefined && el.title !== title) el.title = title;
}

/** The header's line: what needs the person first, then what goes well. [text, tone] */
function stateLine(status, cameras) {
  const problems = [];
  const on = cameras.filter((c) => c.enabled);
  const offline = on.filter((c) => !c.online);
  if (offline.length === 1) problems.push(`${offline[0].name || 'A camera'} is offline`);
  else if (offline.length) problems.push(`${offline.length} cameras are offline`);
  if (status.relayHealthy === false && on.length) problems.push('live view is down');
  if (status.mqtt?.state === 'error') problems.push('Home Assistant cannot be reached');
  if (status.cloud?.state === 'error') problems.push('the cloud link has a problem');
  if (status.cloud?.state === 'unclaimed') problems.push('waiting to be claimed (the code is under Settings)');
  const recording = on.filter((c) => c.recording?.state === 'recording').length;
  const well = !cameras.length ? 'No cameras yet'
    : recording ? `${counted(recording, 'camera')} recording` : `${counted(on.length, 'camera')} on`;
  const text = [...problems, well].join(' · ');
  return [text[0].toUpperCase() + text.slice(1), problems.length ? 'bad' : 'ok'];
}

/** "Recordings: 1.2 GB used, 40 GB free · Clips: 12 MB of 2.1 GB", with the budgets, the free space kept and the oldest recording on hover. */
function renderStorage(storage) {
  const el = $('node-storage');
  if (!storage) {
    setText(el, '');
    return;
  }
  const budget = storage.budgetBytes ? ` of ${bytes(storage.budgetBytes)}` : '';
  const used = storage.usedBytes ? `${bytes(storage.usedBytes)}${budget} used` : 'none yet';
  const free = storage.freeBytes === null ? '' : `, ${bytes(storage.freeBytes)} free`;
  // The clips' disk is shown only when it is not the recordings'.
  const clipsFree = storage.clipsFreeBytes === undefined ? '' : `, ${bytes(storage.clipsFreeBytes)} free`;
  setText(el, `Recordings: ${used}${free} · Clips: ${bytes(storage.clipsBytes)} of ${bytes(storage.clipsBudgetBytes)}${clipsFree}`);
  const oldest = Date.parse(storage.oldestRecordingAt || '');
  const within = storage.budgetBytes ? `stay within ${bytes(storage.budgetBytes)} and to ` : '';
  const title = `${Number.isFinite(oldest) ? `The oldest recording is from ${absoluteTime(oldest)}.` : 'Nothing recorded yet.'} ` +
    `The oldest recordings are deleted as needed to ${within}leave ${bytes(storage.reserveBytes)} of the disk free. ` +
    `The oldest events are deleted with their clips as needed to stay within ${bytes(storage.clipsBudgetBytes)} ` +
    `and to leave ${bytes(storage.clipsReserveBytes)} of their disk free.`;
  if (el.title !== title) el.title = title;
}

function tick() {
  const left = expiresAt - serverNow();
  const el = $('claim-countdown');
  if (!Number.isFinite(left)) {
    setText(el, '');
  } else if (left <= 0) {
    setText(el, 'This code has expired. The node will get a new one shortly.');
    toggleClass($('claim-code'), 'expired', true);
  } else {
    setText(el, `Expires in ${countdown(left)}`);
    toggleClass($('claim-code'), 'expired', false);
  }
}

export function renderHeader(state) {
  const status = state.status;
  const banner = $('offline');
  if (!state.reachable) {
    setText(banner, state.problemStatus
      ? `The node answered with an error: ${state.problem}. Trying again…`
      : 'Cannot reach the node: check that it is on and connected to this network. Trying again…');
  }
  show(banner, !state.reachable);
  document.body.classList.toggle('stale', !state.reachable);
  show($('node-line'), state.reachable);
  if (!status) return;
  const [line, lineTone] = stateLine(status, [...state.cameras.values()]);
  setText($('node-state'), line);
  toggleClass($('node-state'), 'bad', lineTone === 'bad');

  setText($('node-name'), status.nodeName || 'nvr-node');
  const title = `${status.nodeName || 'nvr-node'} · nvr-node`;
  if (document.title !== title) document.title = title;
  setText($('node-version'), `Version ${status.version || '?'}`);
  setText($('node-id'), status.nodeId ? `Node ID ${status.nodeId}` : 'Not registered');
  renderStorage(status.storage);

  // Events not reviewed: a link to the list of them (events.js).
  const unreviewed = status.unreviewedEvents;
  const review = $('review-badge');
  show(review, unreviewed > 0);
  setText(review, `${unreviewed} to review`);
  setAttr(review, 'title', `${counted(unreviewed, 'event')} not reviewed yet: show them`);

  if (status.relayHealthy) {
    // The node only passes on a short version string, e.g. "1.9.14".
    const version = status.relayVersion ? ` · go2rtc ${status.relayVersion}` : '';
    setBadge($('relay-badge'), `Stream relay: OK${version}`, 'ok',
      `Live view is available.${version ? ` The relay is go2rtc ${status.relayVersion}.` : ''}`);
  } else {
    setBadge($('relay-badge'), 'Stream relay: down', 'bad', 'The stream relay is not answering: live view is unavailable.');
  }

  const mqtt = status.mqtt || {};
  const [mqttWord, mqttTone, mqttTitle] = MQTT[mqtt.state] || [`Home Assistant: ${mqtt.state || 'unknown'}`, 'neutral', ''];
  setBadge($('mqtt-badge'), mqttWord, mqttTone, mqttTitle);
  // Why the broker link fails (a refused password or certificate), on phones too.
  setText($('mqtt-note'), mqtt.state === 'error' && mqtt.message ? `MQTT broker: ${mqtt.message}` : '');

  const cloud = status.cloud || {};
  const [word, tone, title2] = CLOUD[cloud.state] || [`Cloud: ${cloud.state || 'unknown'}`, 'neutral', ''];
  setBadge($('cloud-badge'), word, tone, title2);
  setText($('cloud-note'), cloud.state === 'error' || cloud.state === 'unclaimed' ? '' : title2);

  const unclaimed = cloud.state === 'unclaimed' && Boolean(cloud.claimCode);
  show($('claim'), unclaimed);
  if (unclaimed) {
    setText($('claim-code'), cloud.claimCode);
    expiresAt = Date.parse(cloud.claimCodeExpiresAt || '');
    tick();
    if (!ticker) ticker = setInterval(tick, 1000);
  } else if (ticker) {
    clearInterval(ticker);
    ticker = null;
  }

  const failed = cloud.state === 'error';
  show($('cloud-error'), failed);
  if (failed) {
    const text = cloud.message || 'the node did not say what went wrong';
    setText($('cloud-error-text'), text[0].toUpperCase() + text.slice(1));
  }
}

// What the page knows, and the refresh loop that keeps it current: status and
// events every few seconds while the tab is visible, paused while it is hidden.

import { api } from './api.js';

const REFRESH_MS = 3000;

export const state = {
  status: null, // the last GET /api/status
  cameras: new Map(), // id → Camera, in the node's order
  events: null, // the last GET /api/events, or null before the first answer
  reachable: true,
  problem: '', // why the last refresh failed
  problemStatus: 0, // its HTTP status; 0 when the node could not be reached
  epoch: 0, // bumped when a change finishes: answers asked for before it are stale
  pending: new Set(), // ids of cameras with a change in flight
};

const listeners = new Set();
export function subscribe(fn) {
  listeners.add(fn);
}
export function notify() {
  for (const fn of listeners) fn(state);
}

/** Puts a camera as the API returned it after a change. */
export function putCamera(camera) {
  state.cameras.set(camera.id, camera);
  if (state.status) state.status.cameras = [...state.cameras.values()];
  notify();
}

export function dropCamera(id) {
  state.cameras.delete(id);
  if (state.status) state.status.cameras = [...state.cameras.values()];
  notify();
}

/**
 * Runs a change to camera `id` (null for a new one): while it runs, refreshes
 * leave that camera alone, and answers asked for before it ended are not used
 * for the camera list, so nothing flips back and forth.
 */
export async function change(id, work) {
  if (id) state.pending.add(id);
  try {
    return await work();
  } finally {
    if (id) state.pending.delete(id);
    state.epoch += 1;
    refreshSoon();
  }
}

function applyCameras(list, askedAt) {
  if (askedAt !== state.epoch) return; // a change ended meanwhile: wait for the next answer
  const next = new Map();
  for (const camera of list) {
    next.set(camera.id, state.pending.has(camera.id) ? state.cameras.get(camera.id) || camera : camera);
  }
  for (const id of state.pending) {
    if (!next.has(id) && state.cameras.has(id)) next.set(id, state.cameras.get(id));
  }
  state.cameras = next;
}

let timer = null;
let running = null;
let again = false;

async function refresh() {
  clearTimeout(timer);
  timer = null;
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    const askedAt = state.epoch;
    const [status, events] = await Promise.allSettled([
      api('GET', '/api/status', undefined, { timeoutMs: 8000, revalidate: true }),
      api('GET', '/api/events', undefined, { timeoutMs: 8000 }),
    ]);
    if (status.status === 'fulfilled' && status.value) {
      state.status = status.value;
      applyCameras(Array.isArray(status.value.cameras) ? status.value.cameras : [], askedAt);
    }
    if (events.status === 'fulfilled' && Array.isArray(events.value)) state.events = events.value;
    const failed = [status, events].find((r) => r.status === 'rejected');
    state.reachable = !failed;
    state.problem = failed ? failed.reason.message : '';
    state.problemStatus = failed ? failed.reason.status || 0 : 0;
    notify();
  })();
  try {
    await running;
  } finally {
    running = null;
    if (again) {
      again = false;
      refresh();
    } else if (!document.hidden) {
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }
  return undefined;
}

/** Refreshes now (or right after the refresh under way). */
export function refreshSoon() {
  if (!document.hidden) refresh();
}

export function startRefreshing() {
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) {
      clearTimeout(timer);
      timer = null;
    } else {
      refresh();
    }
  });
  refresh();
}

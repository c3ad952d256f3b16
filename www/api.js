// The node's JSON API: one helper that turns every failure into an Error with
// a plain message (the node's own `{"error": ...}` where there is one).

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The node's clock minus ours, in ms, from the Date header (0 when close). */
export const clock = { offset: 0 };

function noteServerTime(response, sentAt) {
  const date = Date.parse(response.headers.get('Date') || '');
  if (Number.isNaN(date)) return;
  const local = (sentAt + Date.now()) / 2;
  const offset = date + 500 - local; // the header has whole seconds
  clock.offset = Math.abs(offset) > 3000 ? offset : 0;
}

/** The node's "now", so countdowns and "2 min ago" hold even when this device's clock is off. */
export function serverNow() {
  return Date.now() + clock.offset;
}

/** The last ETag and body text of each path asked for with `revalidate`. */
const tagged = new Map();

/**
 * Calls the API. Resolves to the parsed JSON body (null for 204, or for a body
 * that is not JSON); rejects with an ApiError (status 0 when the node could
 * not be reached). With `revalidate`, a GET names the body it last got
 * (If-None-Match), and the node answers 304 without one while it is unchanged:
 * a poll of a large status then costs a few hundred bytes.
 */
export async function api(method, path, body, { timeoutMs = 20000, headers = {}, revalidate = false } = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const init = { method, cache: 'no-store', signal: controller.signal, headers: { ...headers } };
  const last = revalidate ? tagged.get(path) : undefined;
  if (last) init.headers['If-None-Match'] = last.etag;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const sentAt = Date.now();
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    const why = controller.signal.aborted ? 'the node did not answer in time' : 'the node cannot be reached';
    throw new ApiError(0, why);
  } finally {
    clearTimeout(timer);
  }
  if (method === 'GET') noteServerTime(response, sentAt);
  if (response.status === 204) return null;
  // A new object each time: callers may change what they are given.
  if (response.status === 304 && last) return JSON.parse(last.text);
  let data = null;
  try {
    const text = await response.text();
    data = JSON.parse(text);
    const etag = response.headers.get('ETag');
    if (revalidate && response.ok && etag) tagged.set(path, { etag, text });
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const message = data && typeof data.error === 'string' && data.error
      ? data.error
      : `the node answered ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

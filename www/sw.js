// The node's service worker: shows its alerts (Web Push, from alerts.js's
// "Alert this phone") and acts on a click on one. It caches nothing: the page
// always comes from the node.

// An event made by a script (a test) takes no waitUntil: the work still runs.
function wait(event, work) {
  try {
    event.waitUntil(work);
  } catch (_) {
    // Not dispatched by the browser.
  }
  return work;
}

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => wait(event, self.clients.claim()));

self.addEventListener('push', (event) => {
  let data;
  try {
    data = event.data.json();
  } catch (_) {
    data = { title: 'nvr-node', body: event.data ? event.data.text() : '' };
  }
  const minutes = data.snoozeMinutes || 60;
  const options = { body: data.body || '', icon: '/icon.svg', data };
  if (data.tag) {
    options.tag = data.tag;
    // The end of an event replaces its alert quietly.
    options.renotify = data.phase !== 'update';
  }
  if (data.image) options.image = data.image;
  if (data.cameraId && data.snooze) {
    options.actions = [{ action: 'snooze', title: `Snooze ${minutes % 60 ? `${minutes} min` : `${minutes / 60} h`}` }];
  }
  wait(event, self.registration.showNotification(data.title || 'nvr-node', options));
});

async function snooze(data) {
  try {
    const answer = await fetch(data.snooze, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ minutes: data.snoozeMinutes || 60 }),
    });
    if (!answer.ok) throw new Error(`the node answered ${answer.status}`);
  } catch (error) {
    await self.registration.showNotification('Not snoozed', {
      body: `${data.camera || 'The camera'}: ${error.message}. Open nvr-node to snooze it there.`,
      icon: '/icon.svg',
      tag: 'snooze-failed',
    });
  }
}

/** Shows `url` in a window of the node: one already open (which alerts.js moves to it), else a new one. */
async function open(url) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const client = windows.find((c) => new URL(c.url).origin === self.location.origin);
  if (!client) return self.clients.openWindow(url);
  client.postMessage({ open: url });
  return client.focus().catch(() => client);
}

self.addEventListener('notificationclick', (event) => {
  const data = event.notification.data || {};
  event.notification.close();
  if (event.action === 'snooze') wait(event, snooze(data));
  else wait(event, open(new URL(data.url || '/', self.location.origin).href));
});

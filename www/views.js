// The four views, each at its own address (/live, /review, /recordings,
// /settings), one shown at a time, so that back, forward, reload and a
// shared link land where the person was. Modules hear of their view being
// shown by onView; links to a view's address are followed without a reload.

export const VIEWS = ['live', 'review', 'recordings', 'settings'];
const hooks = new Map();
let shown = null;

/** Calls fn(params, hash) each time the view is shown or its address changes. */
export function onView(name, fn) {
  hooks.set(name, [...(hooks.get(name) || []), fn]);
}

/** The view shown now: one of VIEWS. */
export function currentView() {
  return shown;
}

/** Goes to an address of the UI (a path with its query and hash). */
export function go(href, { replace = false } = {}) {
  history[replace ? 'replaceState' : 'pushState'](null, '', href);
  show();
}

function viewOf(pathname) {
  const name = pathname.replace(/^\/+|\/+$/g, '');
  return VIEWS.includes(name) ? name : null;
}

// Links from before the views (Home Assistant's and alerts' /#camera-ID,
// /#event-ID, and the page's own anchors) land on their view.
function addressOf(hash) {
  if (hash.startsWith('#event-')) return `/review?event=${encodeURIComponent(hash.slice(7))}`;
  if (hash.startsWith('#camera-') || ['#add', '#cameras', '#notifications', '#node'].includes(hash)) return `/settings${hash}`;
  if (hash === '#events') return '/review';
  return '/live';
}

function show() {
  let name = viewOf(location.pathname);
  if (!name) {
    history.replaceState(null, '', addressOf(location.hash));
    name = viewOf(location.pathname);
  }
  const changed = name !== shown;
  shown = name;
  for (const view of VIEWS) document.getElementById(`view-${view}`).hidden = view !== name;
  for (const tab of document.querySelectorAll('.tabs a')) {
    if (tab.dataset.view === name) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  document.body.dataset.view = name;
  if (changed && !location.hash) window.scrollTo(0, 0);
  const params = new URLSearchParams(location.search);
  for (const fn of hooks.get(name) || []) fn(params, location.hash);
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

export function startViews() {
  addEventListener('popstate', show);
  document.addEventListener('click', (e) => {
    const a = e.target.closest('a[href]');
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    if (a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !viewOf(url.pathname)) return;
    e.preventDefault();
    go(url.pathname + url.search + url.hash);
  });
  show();
}

// Collie's service worker: keeps the app shell (and nothing else) for offline starts. It never
// touches /api/ — pane text and API answers are never cached. The shell is fetched from the
// network first (so updates arrive at once) and taken from the cache only when that fails.
//
// It also shows Collie's push notifications (SPEC §10.4): a push carries only the kind of
// question, the machine, the pane's name and a count — never the question — and opening the
// notification opens the Cards view, which reads the card from the bridge.

const VERSION = '5';
const CACHE = `collie-shell-v${VERSION}`;
const SHELL = [
  '/',
  '/app.js',
  '/attrs.js',
  '/client.js',
  '/chat.js',
  '/decide.js',
  '/dom.js',
  '/durable.js',
  '/i18n.js',
  '/idle.js',
  '/kept.js',
  '/manage.js',
  '/markdown.js',
  '/masked.js',
  '/push.js',
  '/report.js',
  '/screen.js',
  '/sent.js',
  '/store.js',
  '/stream.js',
  '/walky.js',
  '/zoom.js',
  '/views/cards.js',
  '/views/files.js',
  '/views/pair.js',
  '/views/pane.js',
  '/views/panes.js',
  '/views/settings.js',
  '/style.css',
  '/manifest.webmanifest',
  '/icons/icon.svg',
  '/icons/icon-192.png',
  '/icons/icon-512.png',
];

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE)
      .then((cache) => cache.addAll(SHELL.map((u) => new Request(u, { cache: 'no-cache' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(names
        .filter((n) => n.startsWith('collie-shell-') && n !== CACHE)
        .map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin || url.pathname.startsWith('/api/')) return;
  const path = req.mode === 'navigate' && url.pathname === '/' ? '/' : url.pathname;
  if (!SHELL.includes(path) || (url.search && path !== '/')) return;
  event.respondWith(
    fetch(req)
      .then((res) => {
        if (res.ok && res.type === 'basic') {
          const copy = res.clone();
          caches.open(CACHE).then((cache) => cache.put(path, copy));
        }
        return res;
      })
      .catch(() => caches.match(path).then((hit) => hit || Response.error())),
  );
});

const KINDS = {
  permission: 'An agent asks for permission',
  prompt: 'An agent waits for an answer',
  question: 'A durable agent has a question',
};

/** The notification's title and body, from the typed payload only (anything else is ignored). */
function describe(p) {
  const machine = typeof p.machine === 'string' ? p.machine : '';
  const pane = typeof p.pane === 'string' ? p.pane : '';
  const count = Number.isInteger(p.count) ? p.count : 1;
  if (p.kind === 'paired') {
    return {
      title: 'A new device was paired',
      body: `${machine ? `${machine}: ` : ''}if it was not you, open Collie and revoke it.`,
    };
  }
  if (p.kind === 'summary') {
    return {
      title: `${count} questions in the last hour`,
      body: `${machine ? `${machine}: ` : ''}no more notifications from it for an hour. Open Collie to see the cards.`,
    };
  }
  return {
    title: KINDS[p.kind] || 'A question waits',
    body: [machine, pane].filter(Boolean).join(' \u00b7 ') || 'Open Collie to see the card.',
  };
}

self.addEventListener('push', (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch {
    payload = {};
  }
  const { title, body } = describe(payload && typeof payload === 'object' ? payload : {});
  event.waitUntil(self.registration.showNotification(title, {
    body,
    tag: 'collie-cards',
    renotify: true,
    icon: '/icons/icon-192.png',
    data: { url: '/#/cards' },
  }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const target = new URL('/#/cards', self.location.origin).href;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const client of windows) {
      if (new URL(client.url).origin !== self.location.origin) continue;
      try {
        const focused = await client.focus();
        await focused.navigate(target);
        return;
      } catch {
        // a window this worker does not control cannot be navigated: open one instead
      }
    }
    await self.clients.openWindow(target);
  })());
});

// Collie's service worker: keeps the app shell (and nothing else) for offline starts. It never
// touches /api/ — pane text and API answers are never cached. The shell is fetched from the
// network first (so updates arrive at once) and taken from the cache only when that fails.

const VERSION = '1';
const CACHE = `collie-shell-v${VERSION}`;
const SHELL = [
  '/',
  '/app.js',
  '/client.js',
  '/decide.js',
  '/dom.js',
  '/kept.js',
  '/screen.js',
  '/store.js',
  '/stream.js',
  '/walky.js',
  '/views/cards.js',
  '/views/pair.js',
  '/views/pane.js',
  '/views/panes.js',
  '/views/settings.js',
  '/views/walky.js',
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

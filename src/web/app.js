// Collie's phone app: routing between the screens, theme, the unpaired state and the service
// worker. Routes: `#/` panes, `#/new` (a new pane), `#/pane/<machine>/<pane>`, `#/cards`, `#/walky` (messages),
// `#/agents` (durable agents), `#/files`, `#/changes` (tier files), `#/agents/<machine>/<agent>/<conversation>`, `#/sent`, `#/settings`,
// `#pair=CODE`. On every screen but pairing and Cards itself, a pill links to Cards
// with the number of cards waiting (asked every 5 s while the app is visible). While the lead does
// not answer and the phone talks to the crew's deputy (client.js), a label on every screen says so:
// "via deputy NAME".

import { api, changes as reachChanges, forgetReach, setUnpairedHandler, via } from './client.js';
import { agentsView } from './views/agents.js';
import { conversationView } from './views/conversation.js';
import { forgetPush } from './push.js';
import { cardsView } from './views/cards.js';
import { changesView, filesView } from './views/files.js';
import { clear, h } from './dom.js';
import { forgetPairing, getDevice, getPref, getToken } from './store.js';
import { installIdleLock } from './idle.js';
import { newView } from './views/new.js';
import { panesView } from './views/panes.js';
import { pairView } from './views/pair.js';
import { paneView } from './views/pane.js';
import { sentView } from './views/sent.js';
import { settingsView } from './views/settings.js';
import { walkyView } from './views/walky.js';
import { forgetCards } from './walky.js';

const root = document.getElementById('app');
let cleanup = null;
let pairNote = '';

const THEME_COLORS = { light: '#f6f6f3', dark: '#14181c' };

function applyTheme() {
  const pref = getPref('theme', 'system');
  const html = document.documentElement;
  if (pref === 'dark' || pref === 'light') html.dataset.theme = pref;
  else delete html.dataset.theme;
  const dark = pref === 'dark' || (pref !== 'light' && matchMedia('(prefers-color-scheme: dark)').matches);
  for (const m of document.querySelectorAll('meta[name="theme-color"]')) {
    m.setAttribute('content', THEME_COLORS[dark ? 'dark' : 'light']);
  }
}

function parseRoute() {
  const hash = location.hash.replace(/^#/, '');
  const pair = /^\/?pair=([^&]*)/.exec(hash);
  if (pair) return { name: 'pair', code: decodeURIComponent(pair[1]) };
  const pane = /^\/pane\/([^/]+)\/([^/]+)$/.exec(hash);
  if (pane) {
    try {
      return { name: 'pane', machine: decodeURIComponent(pane[1]), pane: decodeURIComponent(pane[2]) };
    } catch {
      return { name: 'panes' };
    }
  }
  const conv = /^\/agents\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(hash);
  if (conv) {
    try {
      const [machine, agent, conversation] = conv.slice(1).map(decodeURIComponent);
      return { name: 'conversation', machine, agent, conversation };
    } catch {
      return { name: 'agents' };
    }
  }
  const changes = /^\/changes\/([^/]+)\/([^/]+)$/.exec(hash);
  if (changes) {
    try {
      return { name: 'changes', machine: decodeURIComponent(changes[1]), pane: decodeURIComponent(changes[2]) };
    } catch {
      return { name: 'changes' };
    }
  }
  if (hash === '/new') return { name: 'new' };
  if (hash === '/agents') return { name: 'agents' };
  if (hash === '/settings') return { name: 'settings' };
  if (hash === '/walky') return { name: 'walky' };
  if (hash === '/cards') return { name: 'cards' };
  if (hash === '/sent') return { name: 'sent' };
  if (hash === '/files') return { name: 'files' };
  if (hash === '/changes') return { name: 'changes' };
  return { name: 'panes' };
}

function render() {
  if (cleanup) {
    try {
      cleanup();
    } catch {
      // a view failing to clean up must not block the next one
    }
    cleanup = null;
  }
  clear(root);
  const route = parseRoute();
  const paired = getToken() && getDevice();
  const screen = h('div', { class: 'screen-root' });
  root.append(screen);
  if (route.name === 'pair' || !paired) {
    document.title = 'Pair · Collie';
    pairView(screen, {
      code: route.code || '',
      note: paired ? '' : pairNote,
      done: () => {
        pairNote = '';
        history.replaceState(null, '', '#/');
        render();
      },
    });
  } else if (route.name === 'pane') {
    cleanup = paneView(screen, route);
  } else if (route.name === 'new') {
    document.title = 'New pane · Collie';
    cleanup = newView(screen);
  } else if (route.name === 'settings') {
    document.title = 'Settings · Collie';
    cleanup = settingsView(screen, { unpair, applyTheme, rearmIdle });
  } else if (route.name === 'cards') {
    document.title = 'Cards · Collie';
    cleanup = cardsView(screen);
  } else if (route.name === 'agents') {
    document.title = 'Agents · Collie';
    cleanup = agentsView(screen);
  } else if (route.name === 'conversation') {
    document.title = `${route.conversation} · Collie`;
    cleanup = conversationView(screen, route);
  } else if (route.name === 'sent') {
    document.title = 'Sent · Collie';
    cleanup = sentView(screen);
  } else if (route.name === 'files') {
    document.title = 'Files · Collie';
    cleanup = filesView(screen);
  } else if (route.name === 'changes') {
    document.title = 'Changes · Collie';
    cleanup = changesView(screen, route);
  } else if (route.name === 'walky') {
    document.title = 'Messages · Collie';
    cleanup = walkyView(screen);
  } else {
    document.title = 'Collie';
    cleanup = panesView(screen);
  }
  if (paired && route.name !== 'pair' && route.name !== 'cards') root.append(pill);
  if (paired && route.name !== 'pair') root.append(viaLabel);
  showCount();
  showVia();
  const heading = screen.querySelector('h1');
  if (heading && route.name !== 'pair') heading.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

let forgetting = null;

/** Forgets the pairing and shows the pairing screen. */
async function forget(note) {
  if (!forgetting) {
    forgetting = (async () => {
      if (cleanup) {
        const c = cleanup;
        cleanup = null;
        try {
          c(true);
        } catch {
          // a view failing to clean up must not keep the pairing
        }
      }
      forgetCards(); // looked-up walky cards live in memory only
      forgetReach(); // back to the lead; the kept deputy goes with the pairing
      await forgetPush(); // the bridge drops its copy when the device is revoked
      await forgetPairing();
      pairNote = note;
      history.replaceState(null, '', location.pathname);
      render();
    })().finally(() => {
      forgetting = null;
    });
  }
  return forgetting;
}

/** `Unpair this phone`: revoke this device on the bridge, then forget everything here. */
async function unpair() {
  const device = getDevice();
  if (device?.label) {
    try {
      await api(`/api/devices/${encodeURIComponent(device.label)}`, { method: 'DELETE' });
    } catch {
      // unreachable or already revoked: forget locally anyway
    }
  }
  await forget('This phone is unpaired.');
}

setUnpairedHandler((code) => {
  forget(code === 'device expired'
    ? 'This phone\u2019s pairing has expired. Pair it again.'
    : 'This phone is no longer paired. Pair it again.');
});

// Phone keyboards shrink the visual viewport, not the layout one: size the app to what is visible.
function fitViewport() {
  const vv = window.visualViewport;
  if (vv) document.documentElement.style.setProperty('--app-h', `${Math.round(vv.height)}px`);
}

// The Cards pill: shown with the number of waiting cards when there are any.
const pill = h('a', { href: '#/cards', class: 'cards-pill', hidden: true });
let waiting = 0;

function showCount() {
  pill.hidden = waiting === 0;
  pill.textContent = `Cards ${waiting}`;
  pill.setAttribute('aria-label', `${waiting} card${waiting === 1 ? '' : 's'} waiting`);
}

async function countCards() {
  if (getToken() && getDevice() && document.visibilityState === 'visible') {
    try {
      const res = await api('/api/cards');
      waiting = res?.cards?.length || 0;
      showCount();
    } catch {
      // unreachable: keep the last count
    }
  }
  setTimeout(countCards, 5000);
}

// Which machine the phone talks to, said plainly while it is not the lead.
const viaLabel = h('p', { class: 'via-deputy', hidden: true, 'aria-live': 'polite' });

function showVia() {
  const name = via();
  viaLabel.hidden = !name;
  viaLabel.textContent = `via deputy ${name}`;
}

reachChanges.addEventListener('change', showVia);
window.addEventListener('hashchange', render);
window.visualViewport?.addEventListener('resize', fitViewport);
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyTheme);
fitViewport();
applyTheme();
const rearmIdle = installIdleLock(root, () => !!(getToken() && getDevice()) && parseRoute().name !== 'pair');
render();
countCards();

if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch(() => {
    // the app works without offline support
  });
}

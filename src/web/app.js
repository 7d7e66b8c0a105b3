// Collie's phone app: routing between the screens, theme, language, the unpaired state and the
// service worker. Routes: `#/` panes, `#/new` (a new pane), `#/pane/<machine>/<pane>`, `#/cards`,
// `#/walky` (messages), `#/agents` (durable agents), `#/files`, `#/changes` (tier files),
// `#/agents/<machine>/<agent>/<conversation>`, `#/sent`, `#/settings`, `#pair=CODE`.
//
// The main places sit in a tab bar at the bottom (Panes, Cards with the number of cards waiting,
// Files, Settings; the rest under More), on every screen but pairing and the ones a thumb works in
// (a pane, a conversation, New pane): there the number of cards waiting is a link in the screen's
// own header. Nothing floats over content (decision 0082). The count is asked every 5 s while the
// app is visible. While the lead does not answer and the phone talks to the crew's deputy
// (client.js), the header of every screen says so: "via deputy NAME".
//
// The screens a phone opens less often (New pane, Agents and a conversation, Messages, Sent) are
// fetched when first opened, not with the shell (decision 0080).

import { api, changes as reachChanges, forgetReach, setUnpairedHandler, via } from './client.js';
import { forgetPush } from './push.js';
import { cardsView } from './views/cards.js';
import { changesView, filesView, filesAllowed } from './views/files.js';
import { clear, h } from './dom.js';
import { start as startLanguage, t } from './i18n.js';
import { forgetPairing, getDevice, getPref, getToken } from './store.js';
import { installIdleLock } from './idle.js';
import { panesView } from './views/panes.js';
import { pairView } from './views/pair.js';
import { paneView } from './views/pane.js';
import { settingsView } from './views/settings.js';
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

/** Screens fetched when first opened (decision 0080): the module and the view it exports. */
const LATER = {
  new: () => import('./views/new.js').then((m) => m.newView),
  agents: () => import('./views/agents.js').then((m) => m.agentsView),
  conversation: () => import('./views/conversation.js').then((m) => m.conversationView),
  sent: () => import('./views/sent.js').then((m) => m.sentView),
  walky: () => import('./views/walky.js').then((m) => m.walkyView),
};

/** The screens with the tab bar; the others have the Cards link in their header. */
const TABBED = new Set(['panes', 'cards', 'files', 'changes', 'settings', 'agents', 'sent', 'walky']);

/** Each screen's title, said by the browser's tab and history. */
function title(route) {
  const names = {
    new: t('New pane'),
    settings: t('Settings'),
    cards: t('Cards'),
    agents: t('Agents'),
    conversation: route.conversation,
    sent: t('Sent'),
    files: t('Files'),
    changes: t('Changes'),
    walky: t('Messages'),
  };
  return names[route.name] ? `${names[route.name]} · Collie` : 'Collie';
}

let shown = 0;

function render() {
  const at = ++shown;
  if (cleanup) {
    try {
      cleanup();
    } catch {
      // a view failing to clean up must not block the next one
    }
    cleanup = null;
  }
  clear(root);
  more.close?.();
  const route = parseRoute();
  const paired = getToken() && getDevice();
  const screen = h('div', { class: 'screen-root' });
  root.append(screen);
  if (route.name === 'pair' || !paired) {
    document.title = `${t('Pair')} · Collie`;
    pairView(screen, {
      code: route.code || '',
      note: paired ? '' : pairNote,
      done: () => {
        pairNote = '';
        history.replaceState(null, '', '#/');
        render();
      },
    });
    window.scrollTo(0, 0);
    return;
  }
  document.title = title(route);
  const views = {
    pane: () => paneView(screen, route),
    settings: () => settingsView(screen, { unpair, applyTheme, rearmIdle, render }),
    cards: () => cardsView(screen),
    files: () => filesView(screen),
    changes: () => changesView(screen, route),
    panes: () => panesView(screen),
  };
  const tabbed = TABBED.has(route.name);
  if (tabbed) root.append(tabBar(route.name));
  if (views[route.name]) {
    cleanup = views[route.name]();
    finish(screen, tabbed);
  } else {
    screen.append(h('p', { class: 'boot' }, t('Loading…')));
    LATER[route.name]().then((view) => {
      if (at !== shown) return;
      clear(screen);
      cleanup = route.name === 'conversation' ? view(screen, route) : view(screen);
      finish(screen, tabbed);
    }, () => {
      if (at !== shown) return;
      clear(screen);
      screen.append(h('p', { class: 'boot', role: 'alert' }, t('This screen could not be loaded. Check the connection and try again.')));
    });
  }
  window.scrollTo(0, 0);
}

/** What every screen gets once its view is in place: the Cards link, the deputy's name, focus. */
function finish(screen, tabbed) {
  const bar = screen.querySelector('.bar');
  if (!tabbed && bar) bar.append(pill);
  if (bar) bar.append(viaLabel);
  showCount();
  showVia();
  screen.querySelector('h1')?.focus({ preventScroll: true });
}

/** The bottom tab bar: the main places, the one shown marked, the rest under More. */
function tabBar(current) {
  const tab = (name, href, label, ...extra) => h('a', {
    href,
    class: 'tab',
    'aria-current': current === name ? 'page' : null,
  }, h('span', {}, label), ...extra);
  return h('nav', { class: 'tabbar', 'aria-label': t('Main') },
    tab('panes', '#/', t('Panes')),
    tab('cards', '#/cards', t('Cards'), count, countSaid),
    filesAllowed() ? tab('files', '#/files', t('Files')) : null,
    tab('settings', '#/settings', t('Settings')),
    h('button', {
      type: 'button',
      class: 'tab',
      'aria-haspopup': 'dialog',
      'aria-current': ['agents', 'sent', 'walky', 'changes'].includes(current) ? 'page' : null,
      onclick: () => {
        clear(more);
        more.setAttribute('aria-label', t('More'));
        more.append(
          h('h2', { class: 'dialog-title' }, t('More')),
          h('nav', { class: 'sheet-actions', 'aria-label': t('More') },
            h('a', { href: '#/agents', class: 'sheet-link' }, t('Agents')),
            h('a', { href: '#/walky', class: 'sheet-link' }, t('Messages')),
            h('a', { href: '#/sent', class: 'sheet-link' }, t('Sent')),
            filesAllowed() ? h('a', { href: '#/changes', class: 'sheet-link' }, t('Changes')) : null,
            h('button', { type: 'button', onclick: () => more.close() }, t('Close'))));
        root.append(more);
        more.showModal();
      },
    }, h('span', {}, t('More'))));
}

/** The More sheet: the places the tab bar has no room for. */
const more = h('dialog', { class: 'dialog sheet' });
more.addEventListener('click', (e) => {
  if (e.target === more || e.target.closest?.('a')) more.close();
});

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
  await forget(t('This phone is unpaired.'));
}

setUnpairedHandler((code) => {
  forget(code === 'device expired'
    ? t('This phone\u2019s pairing has expired. Pair it again.')
    : t('This phone is no longer paired. Pair it again.'));
});

// Phone keyboards shrink the visual viewport, not the layout one: size the app to what is visible.
function fitViewport() {
  const vv = window.visualViewport;
  if (vv) document.documentElement.style.setProperty('--app-h', `${Math.round(vv.height)}px`);
}

// The number of waiting cards: a badge on the Cards tab, or a link in the header of a screen
// without the tab bar; neither is shown when no card waits.
const pill = h('a', { href: '#/cards', class: 'cards-pill', hidden: true });
const count = h('span', { class: 'tab-count', 'aria-hidden': 'true', hidden: true });
// The tab's name stays `Cards`; the number is its description.
const countSaid = h('span', { id: 'cards-waiting', hidden: true });
let waiting = 0;

function showCount() {
  const said = waiting === 1 ? t('1 card waiting') : t('{n} cards waiting', { n: waiting });
  pill.hidden = count.hidden = waiting === 0;
  pill.textContent = t('Cards {n}', { n: waiting });
  pill.setAttribute('aria-label', said);
  count.textContent = String(waiting);
  countSaid.textContent = waiting ? said : '';
  count.parentElement?.setAttribute('aria-describedby', 'cards-waiting');
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
  viaLabel.textContent = t('via deputy {name}', { name });
}

reachChanges.addEventListener('change', showVia);
window.addEventListener('hashchange', render);
window.visualViewport?.addEventListener('resize', fitViewport);
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyTheme);
fitViewport();
applyTheme();
const rearmIdle = installIdleLock(root, () => !!(getToken() && getDevice()) && parseRoute().name !== 'pair');
startLanguage().finally(() => {
  render();
  countCards();
});

if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch(() => {
    // the app works without offline support
  });
}

// Panes (home): one section per machine of the crew — the bridge itself, then every member, also those
// with no panes and those offline — one link per pane, its state beside it (docs/guide/phone-app.md,
// "Panes"). Refreshed every 5 s while visible, which is also how a member going offline or coming
// back shows. When the bridge cannot be reached and nothing was loaded yet, the kept copies are
// listed instead, marked as such. The other screens are in the tab bar (app.js). A `full` device
// also gets `New pane`, a round `+` beside the heading (views/new.js).
//
// Pinned panes (kept on this phone, forgotten with the pairing) are listed first, in a section of
// their own, in the order they were pinned; every row has a pin button.

import { api } from '../client.js';
import { ago, clear, h, when } from '../dom.js';
import * as kept from '../kept.js';
import { canManage, refreshTier } from '../manage.js';
import { t } from '../i18n.js';
import { getPins, keepText, setPins } from '../store.js';

const REFRESH_MS = 5000;

export function paneHref(machine, pane) {
  return `#/pane/${encodeURIComponent(machine)}/${encodeURIComponent(pane)}`;
}

/** Drops the kept copy of every pane that is asking for a password. */
export function dropAsking(panes) {
  for (const p of panes) if (p.asking_password) kept.drop(p.machine, p.pane);
}

/**
 * The machines to show, in the bridge's order (this bridge first, then the crew's members), each
 * with its panes and its state: `online`, `offline` (the lead has no link to it) or `silent` (linked,
 * but its pane list did not come in time). A pane of a machine the list does not know yet (the two
 * answers raced a join) still gets a group.
 */
export function groups(machines, panes, unreachable = []) {
  const byName = new Map();
  const silent = new Set(unreachable);
  for (const m of machines) {
    const state = m.online === false ? 'offline' : silent.has(m.name) ? 'silent' : 'online';
    byName.set(m.name, { name: m.name, role: m.role || '', state, panes: [] });
  }
  for (const p of panes) {
    if (!byName.has(p.machine)) byName.set(p.machine, { name: p.machine, role: '', state: 'online', panes: [] });
    byName.get(p.machine).panes.push(p);
  }
  return [...byName.values()];
}

/** The panes waiting for a person first, the rest in the bridge's order. */
const byWaiting = (panes) => [...panes].sort((a, b) => (b.activity == 'waiting') - (a.activity == 'waiting'));

/** What a live pane's program is doing, in words (SPEC §3.2 `activity`). */
function activity(a) {
  const said = { waiting: t('waiting for you'), working: t('working') }[a] || t('idle');
  return h('span', { class: `state ${a}` }, said);
}

/** What a group says instead of its panes when it has none to list. */
const empty = (state) => ({
  offline: t('Offline: its panes are unavailable until it reconnects.'),
  silent: t('Not answering: its panes are unavailable for now. Retrying…'),
}[state] || t('No panes. Start tmux, or run `collie panes new`.'));

/** A pane's pin, as the phone keeps it. */
const pinKey = (p) => `${p.machine}/${p.pane}`;

/** One pane's row: its link, what it is doing, and its pin button. */
function paneRow(p, now, pins, repaint) {
  const pinned = pins.includes(pinKey(p));
  const name = p.name || p.pane;
  return h('li', { class: 'pane-row' },
    h('a', { href: paneHref(p.machine, p.pane), class: 'pane-link' }, name),
    h('span', { class: 'pane-state' },
      p.alive ? activity(p.activity) : h('span', { class: 'state exited' }, t('exited')),
      ' · ',
      h('span', { class: 'ago' }, ago(p.last_activity, now))),
    h('button', {
      type: 'button',
      class: 'pin',
      'aria-pressed': String(pinned),
      'aria-label': t('Pin {name}', { name }),
      onclick: () => {
        setPins(pinned ? pins.filter((k) => k !== pinKey(p)) : [...pins, pinKey(p)]);
        repaint();
      },
    }, h('span', { 'aria-hidden': 'true' }, pinned ? '★' : '☆')));
}

/**
 * One machine's section: its name as the heading, its role beside it when it is in a crew (a solo
 * bridge shows no role), its state in words (never only a color), then its panes.
 */
function machineSection({ name, role, state, panes }, now, pins, repaint) {
  const headingId = `machine-${name}`;
  const listed = panes.filter((p) => !pins.includes(pinKey(p)));
  return h('section', { class: `machine ${state}`, 'aria-labelledby': headingId },
    h('div', { class: 'machine-head' },
      h('h2', { id: headingId }, name),
      role && role !== 'solo' ? h('span', { class: 'badge role' }, role) : null,
      state === 'offline' ? h('span', { class: 'badge off' }, t('offline')) : null,
      state === 'silent' ? h('span', { class: 'badge off' }, t('not answering')) : null),
    panes.length === 0
      ? h('p', { class: 'muted' }, empty(state))
      : h('ul', { class: 'panes' }, byWaiting(listed).map((p) => paneRow(p, now, pins, repaint))));
}

/** The pinned panes that are listed, in the order they were pinned, with their machine's name. */
function pinnedSection(panes, now, pins, repaint) {
  const byKey = new Map(panes.map((p) => [pinKey(p), p]));
  const shown = pins.map((k) => byKey.get(k)).filter(Boolean);
  if (!shown.length) return null;
  return h('section', { class: 'machine pinned', 'aria-labelledby': 'pinned-panes' },
    h('div', { class: 'machine-head' }, h('h2', { id: 'pinned-panes' }, t('Pinned'))),
    h('ul', { class: 'panes' }, shown.map((p) => paneRow(p, now, pins, repaint))));
}

export function panesView(root) {
  const status = h('p', { class: 'note', hidden: true });
  const list = h('div', { class: 'machines', 'aria-live': 'off' });
  let loaded = false;
  let timer = null;
  let gone = false;
  // Creating a pane needs tier full (SPEC §3.2): the link is there only for such a device, and the
  // tier is asked again once per visit, so a lowered tier takes it away.
  const newLink = h('a', { href: '#/new', class: 'fab', 'aria-label': t('New pane'), title: t('New pane'), hidden: !canManage() },
    h('span', { 'aria-hidden': 'true' }, '+'));

  root.append(
    h('header', { class: 'bar' }, h('h1', { tabindex: '-1' }, t('Panes')), newLink),
    h('main', { class: 'page' }, status, list));
  refreshTier().then(() => {
    if (!gone) newLink.hidden = !canManage();
  });

  let last = null;
  function render(machines, panes, unreachable, now) {
    last = [machines, panes, unreachable, now];
    const focused = document.activeElement;
    const again = focused?.getAttribute?.('href') || focused?.getAttribute?.('aria-label');
    const pins = getPins();
    const repaint = () => render(...last);
    clear(list);
    list.append(pinnedSection(panes, now, pins, repaint) || '');
    for (const group of groups(machines, panes, unreachable)) list.append(machineSection(group, now, pins, repaint));
    if (again) {
      const same = CSS.escape(again);
      list.querySelector(`a[href="${same}"], button[aria-label="${same}"]`)?.focus({ preventScroll: true });
    }
  }

  async function renderKept() {
    const recs = keepText() ? await kept.list() : [];
    if (gone || loaded) return;
    clear(list);
    if (!recs.length) {
      list.append(h('p', { class: 'muted' }, t('Nothing kept on this phone.')));
      return;
    }
    const byMachine = new Map();
    for (const r of recs) {
      if (!byMachine.has(r.machine)) byMachine.set(r.machine, []);
      byMachine.get(r.machine).push(r);
    }
    for (const [name, rs] of byMachine) {
      list.append(h('section', { class: 'machine' },
        h('div', { class: 'machine-head' },
          h('h2', {}, name), h('span', { class: 'badge' }, t('kept copy'))),
        h('ul', { class: 'panes' }, rs.map((r) => h('li', { class: 'pane-row' },
          h('a', { href: paneHref(r.machine, r.pane), class: 'pane-link' }, r.name || r.pane),
          h('span', { class: 'pane-state' }, t('kept {when}', { when: when(new Date(r.saved_at).toISOString()) })))))));
    }
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const [m, p] = await Promise.all([api('/api/machines'), api('/api/panes')]);
      if (gone) return;
      loaded = true;
      status.hidden = true;
      render(m.machines || [], p.panes || [], p.unreachable || [], Date.now());
      dropAsking(p.panes || []);
    } catch (err) {
      if (gone) return;
      if (err.offline) {
        status.hidden = false;
        status.textContent = loaded
          ? t('Cannot reach the bridge. Retrying…')
          : t('Cannot reach the bridge. Showing what this phone kept; retrying…');
        if (!loaded) await renderKept();
      } else if (err.status !== 403) {
        status.hidden = false;
        status.textContent = t('The bridge answered: {code}. Retrying…', { code: err.code });
      }
    }
    if (!gone && document.visibilityState === 'visible') timer = setTimeout(refresh, REFRESH_MS);
  }

  function onVisible() {
    if (document.visibilityState === 'visible') refresh();
    else clearTimeout(timer);
  }

  document.addEventListener('visibilitychange', onVisible);
  window.addEventListener('online', refresh);
  list.append(h('p', { class: 'muted' }, t('Loading…')));
  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
    window.removeEventListener('online', refresh);
  };
}

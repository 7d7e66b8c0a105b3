// Panes (home): one section per machine, one link per pane, its state beside it
// (docs/guide/phone-app.md, "Panes"). Refreshed every 5 s while visible. When the bridge cannot be
// reached and nothing was loaded yet, the kept copies are listed instead, marked as such.

import { api } from '../client.js';
import { ago, clear, h, when } from '../dom.js';
import * as kept from '../kept.js';
import { keepText } from '../store.js';

const REFRESH_MS = 5000;

export function paneHref(machine, pane) {
  return `#/pane/${encodeURIComponent(machine)}/${encodeURIComponent(pane)}`;
}

/** Drops the kept copy of every pane that is asking for a password. */
export function dropAsking(panes) {
  for (const p of panes) if (p.asking_password) kept.drop(p.machine, p.pane);
}

export function panesView(root) {
  const status = h('p', { class: 'note', hidden: true });
  const list = h('div', { class: 'machines', 'aria-live': 'off' });
  let loaded = false;
  let timer = null;
  let gone = false;

  root.append(
    h('header', { class: 'bar' },
      h('h1', { tabindex: '-1' }, 'Panes'),
      h('a', { href: '#/settings', class: 'bar-link' }, 'Settings')),
    h('main', { class: 'page' }, status, list));

  function render(machines, panes, now) {
    const focused = document.activeElement?.getAttribute?.('href');
    const byMachine = new Map(machines.map((m) => [m.name, { machine: m, panes: [] }]));
    for (const p of panes) {
      if (!byMachine.has(p.machine)) byMachine.set(p.machine, { machine: { name: p.machine, online: true }, panes: [] });
      byMachine.get(p.machine).panes.push(p);
    }
    clear(list);
    for (const { machine, panes: mp } of byMachine.values()) {
      const headingId = `machine-${machine.name}`;
      list.append(h('section', { class: 'machine', 'aria-labelledby': headingId },
        h('div', { class: 'machine-head' },
          h('h2', { id: headingId }, machine.name),
          machine.online === false ? h('span', { class: 'badge off' }, 'offline') : null),
        mp.length === 0
          ? h('p', { class: 'muted' }, machine.online === false
            ? 'This machine is offline.'
            : 'No panes. Start tmux, or run `collie panes new`.')
          : h('ul', { class: 'panes' }, mp.map((p) => h('li', { class: 'pane-row' },
            h('a', { href: paneHref(p.machine, p.pane), class: 'pane-link' }, p.name || p.pane),
            h('span', { class: 'pane-state' },
              h('span', { class: p.alive ? 'state alive' : 'state exited' }, p.alive ? 'alive' : 'exited'),
              ' · ',
              h('span', { class: 'ago' }, ago(p.last_activity, now))))))));
    }
    if (focused) list.querySelector(`a[href="${CSS.escape(focused)}"]`)?.focus({ preventScroll: true });
  }

  async function renderKept() {
    const recs = keepText() ? await kept.list() : [];
    if (gone || loaded) return;
    clear(list);
    if (!recs.length) {
      list.append(h('p', { class: 'muted' }, 'Nothing kept on this phone.'));
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
          h('h2', {}, name), h('span', { class: 'badge' }, 'kept copy')),
        h('ul', { class: 'panes' }, rs.map((r) => h('li', { class: 'pane-row' },
          h('a', { href: paneHref(r.machine, r.pane), class: 'pane-link' }, r.name || r.pane),
          h('span', { class: 'pane-state' }, `kept ${when(new Date(r.saved_at).toISOString())}`))))));
    }
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const [m, p] = await Promise.all([api('/api/machines'), api('/api/panes')]);
      if (gone) return;
      loaded = true;
      status.hidden = true;
      render(m.machines || [], p.panes || [], Date.now());
      dropAsking(p.panes || []);
    } catch (err) {
      if (gone) return;
      if (err.offline) {
        status.hidden = false;
        status.textContent = loaded
          ? 'Cannot reach the bridge. Retrying…'
          : 'Cannot reach the bridge. Showing what this phone kept; retrying…';
        if (!loaded) await renderKept();
      } else if (err.status !== 403) {
        status.hidden = false;
        status.textContent = `The bridge answered: ${err.code}. Retrying…`;
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
  list.append(h('p', { class: 'muted' }, 'Loading…'));
  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
    window.removeEventListener('online', refresh);
  };
}

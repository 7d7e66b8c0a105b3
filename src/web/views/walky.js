// Messages (`#/walky`; docs/guide/phone-app.md, "Messages"): every walky message in the log of the
// bridge this phone is paired with (`GET /api/walky`), newest first, one card per message, each
// expandable to its (masked) body. Refreshed every 10 s while visible; a refresh that changes
// nothing leaves the list (and what is expanded, and focus) alone.

import { api } from '../client.js';
import { clear, h } from '../dom.js';
import { t } from '../i18n.js';
import { cardView } from '../walky.js';

const REFRESH_MS = 10_000;

/**
 * One card per message id (a message between two panes of this machine is logged as sent and as
 * received), its kinds listed, the first outcome and body any entry has; newest first by the time
 * it was sent, then by its place in the log.
 */
export function messages(entries) {
  const byId = new Map();
  entries.forEach((e, order) => {
    const had = byId.get(e.id);
    if (!had) {
      byId.set(e.id, { ...e, kinds: [e.kind], order });
      return;
    }
    if (!had.kinds.includes(e.kind)) had.kinds.push(e.kind);
    had.outcome = had.outcome || e.outcome;
    if (typeof had.body !== 'string') had.body = e.body;
    had.order = order;
  });
  const time = (m) => Date.parse(m.sent_at) || 0;
  return [...byId.values()].sort((a, b) => time(b) - time(a) || b.order - a.order);
}

export function walkyView(root) {
  let gone = false;
  let timer = null;
  let shownKey = null;
  const open = new Set(); // ids whose body is expanded, kept across refreshes
  const off = h('p', { class: 'note', hidden: true },
    t('Walky-talky is off on this bridge: it refuses messages for its panes. Its log is still shown.'));
  const status = h('p', { class: 'note', hidden: true });
  const list = h('ul', { class: 'walky-list', 'aria-live': 'off' }, h('li', { class: 'muted' }, t('Loading…')));

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('Messages'))),
    h('main', { class: 'page' },
      h('p', { class: 'muted small' },
        t('Walky-talky messages between agents, from this bridge\u2019s log. Bodies are masked.')),
      off,
      status,
      list));

  function render(msgs) {
    clear(list);
    if (!msgs.length) {
      list.append(h('li', { class: 'muted' }, t('No walky messages in this bridge\u2019s log.')));
      return;
    }
    for (const m of msgs) {
      const card = cardView(m, { open: open.has(m.id) });
      card.querySelector('.walky-toggle').addEventListener('click', () => {
        if (open.has(m.id)) open.delete(m.id);
        else open.add(m.id);
      });
      list.append(h('li', {}, card));
    }
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const res = await api('/api/walky');
      if (gone) return;
      status.hidden = true;
      const msgs = messages(res?.messages || []);
      const key = JSON.stringify(msgs);
      if (key !== shownKey) {
        shownKey = key;
        render(msgs);
      }
    } catch (err) {
      if (gone || err.status === 403) return;
      status.hidden = false;
      status.textContent = err.offline
        ? t('Cannot reach the bridge. Retrying…')
        : t('The bridge answered: {code}. Retrying…', { code: err.code });
      if (shownKey === null) clear(list);
    }
    if (!gone && document.visibilityState === 'visible') timer = setTimeout(refresh, REFRESH_MS);
  }

  async function loadSettings() {
    try {
      const s = await api('/api/settings');
      if (!gone) off.hidden = s?.walky !== false;
    } catch {
      // the list reports connectivity
    }
  }

  function onVisible() {
    if (document.visibilityState === 'visible') refresh();
    else clearTimeout(timer);
  }

  document.addEventListener('visibilitychange', onVisible);
  window.addEventListener('online', refresh);
  refresh();
  loadSettings();
  return () => {
    gone = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
    window.removeEventListener('online', refresh);
  };
}

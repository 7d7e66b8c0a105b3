// Cards (`#/cards`; SPEC §10.1, docs/guide/phone-app.md, "Cards"): the questions waiting for a tap
// on every machine of the crew — a held permission shows the tool and the whole command, path or
// URL, the pane's name and machine — with one button per option. "Always allow" takes a second
// tap. The list follows `GET /api/cards/stream` (every change reloads it), and the last answers
// are listed below. A card answered at the machine, or past its deadline, leaves the list and is
// shown as such among the answers.

import { api, authHeaders, failure, reachFetch } from '../client.js';
import { decider } from '../decide.js';
import { clear, h } from '../dom.js';
import { SseParser, backoff } from '../stream.js';

const STATE_WORDS = {
  answered: 'answered',
  'answered elsewhere': 'answered elsewhere',
  expired: 'expired: the agent asks in its terminal',
  withdrawn: 'withdrawn',
};

export function cardsView(root) {
  let gone = false;
  let abort = null;
  let attempt = 0;
  let retry = null;
  const cards = decider(() => reload());
  const status = h('p', { class: 'note', hidden: true, role: 'status' });
  const list = h('ul', { class: 'cards-list' }, h('li', { class: 'muted' }, 'Loading…'));
  const recent = h('ul', { class: 'receipts' });
  // New pairings of the last day (SPEC §4.6): shown on every other device, so a device paired
  // behind the person's back is seen on the phone they hold.
  const notices = h('ul', { class: 'notices', 'aria-label': 'New devices' });

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), 'Back'),
      h('h1', { tabindex: '-1' }, 'Cards')),
    h('main', { class: 'page' },
      h('p', { class: 'muted small' }, 'Questions from agents that wait for your tap. Nothing else answers them.'),
      status,
      notices,
      list,
      h('h2', {}, 'Recent answers'),
      recent));

  function render(res) {
    clear(list);
    const waiting = res?.cards || [];
    if (!waiting.length) list.append(h('li', { class: 'muted' }, 'No cards waiting.'));
    for (const c of waiting) list.append(h('li', {}, cards.render(c)));
    clear(recent);
    const receipts = (res?.receipts || []).slice(0, 20);
    if (!receipts.length) recent.append(h('li', { class: 'muted' }, 'No answers yet.'));
    for (const r of receipts) {
      const what = r.option && r.device ? `${r.option} by ${r.device}` : (STATE_WORDS[r.state] || r.state);
      recent.append(h('li', { 'data-receipt': r.card }, h('strong', {}, r.title), ` \u2014 ${what} (${r.machine})`));
    }
  }

  function renderNotices(res) {
    clear(notices);
    for (const n of res?.notices || []) {
      const at = n.at ? new Date(n.at).toLocaleString() : '';
      notices.append(h('li', { class: 'notice', 'data-notice': n.label },
        h('strong', {}, 'New device paired: '), `${n.label} (${n.tier})${at ? `, ${at}` : ''}. `,
        'If it was not you, ', h('a', { href: '#/settings' }, 'revoke it in Settings'), '.'));
    }
  }

  async function reload() {
    try {
      api('/api/notices').then((n) => { if (!gone) renderNotices(n); }, () => {});
      const res = await api('/api/cards');
      if (gone) return;
      status.hidden = true;
      render(res);
    } catch (err) {
      if (gone || err.status === 403) return;
      status.hidden = false;
      status.textContent = err.offline ? 'Cannot reach the bridge. Retrying…' : `The bridge answered: ${err.code}.`;
    }
  }

  // Follow the stream: every change reloads the list (a card's full text comes with the list).
  async function follow() {
    abort = new AbortController();
    try {
      const res = await reachFetch('/api/cards/stream', {
        headers: authHeaders({ Accept: 'text/event-stream' }),
        signal: abort.signal,
        cache: 'no-store',
        credentials: 'omit',
      });
      if (!res.ok) throw await failure(res);
      attempt = 0;
      const parser = new SseParser(() => reload());
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
    } catch (err) {
      if (gone || err?.name === 'AbortError' || err?.status === 403) return;
    }
    if (!gone) retry = setTimeout(follow, backoff(attempt++));
  }

  reload();
  follow();
  return () => {
    gone = true;
    clearTimeout(retry);
    abort?.abort();
  };
}

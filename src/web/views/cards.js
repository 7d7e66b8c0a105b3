// Cards (`#/cards`; SPEC §10.1, docs/guide/phone-app.md, "Cards"): the questions waiting for a tap
// on every machine of the crew — a held permission shows the tool and the whole command, path or
// URL, the pane's name and machine — with one button per option. "Always allow" takes a second
// tap. The list follows `GET /api/cards/stream` (every change reloads it), and the last answers
// are listed below. A card answered at the machine, or past its deadline, leaves the list and is
// shown as such among the answers.

import { api, authHeaders, failure, reachFetch } from '../client.js';
import { decider } from '../decide.js';
import { clear, h } from '../dom.js';
import { t } from '../i18n.js';
import { SseParser, backoff } from '../stream.js';

/** A receipt's state in words (the bridge's own word when it is not one of these). */
const stateWords = (state) => ({
  answered: t('answered'),
  'answered elsewhere': t('answered elsewhere'),
  expired: t('expired: the agent asks in its terminal'),
  withdrawn: t('withdrawn'),
}[state]);

export function cardsView(root) {
  let gone = false;
  let abort = null;
  let attempt = 0;
  let retry = null;
  const cards = decider(() => reload());
  const status = h('p', { class: 'note', hidden: true, role: 'status' });
  const list = h('ul', { class: 'cards-list' }, h('li', { class: 'muted' }, t('Loading…')));
  const recent = h('ul', { class: 'receipts' });
  // New pairings of the last day (SPEC §4.6): shown on every other device, so a device paired
  // behind the person's back is seen on the phone they hold.
  const notices = h('ul', { class: 'notices', 'aria-label': t('New devices') });

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('Cards'))),
    h('main', { class: 'page' },
      h('p', { class: 'muted small' }, t('Questions from agents that wait for your tap. Nothing else answers them.')),
      status,
      notices,
      list,
      h('h2', {}, t('Recent answers')),
      recent));

  function render(res) {
    clear(list);
    const waiting = res?.cards || [];
    if (!waiting.length) list.append(h('li', { class: 'muted' }, t('No cards waiting.')));
    for (const c of waiting) list.append(h('li', {}, cards.render(c)));
    clear(recent);
    const receipts = (res?.receipts || []).slice(0, 20);
    if (!receipts.length) recent.append(h('li', { class: 'muted' }, t('No answers yet.')));
    for (const r of receipts) {
      const what = r.option && r.device ? t('{option} by {device}', { option: r.option, device: r.device }) : (stateWords(r.state) || r.state);
      recent.append(h('li', { 'data-receipt': r.card }, h('strong', {}, r.title), ` \u2014 ${what} (${r.machine})`));
    }
  }

  function renderNotices(res) {
    clear(notices);
    for (const n of res?.notices || []) {
      const at = n.at ? new Date(n.at).toLocaleString() : '';
      // One sentence around the link, so a language may put the link anywhere in it.
      const [before, after = ''] = t('If it was not you, {link}.').split('{link}');
      notices.append(h('li', { class: 'notice', 'data-notice': n.label },
        h('strong', {}, t('New device paired: ')), `${n.label} (${n.tier})${at ? `, ${at}` : ''}. `,
        before, h('a', { href: '#/settings' }, t('revoke it in Settings')), after));
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
      status.textContent = err.offline ? t('Cannot reach the bridge. Retrying…') : t('The bridge answered: {code}.', { code: err.code });
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

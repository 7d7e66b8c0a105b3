// Cards (`#/cards`; SPEC §10.1, docs/guide/phone-app.md, "Cards"): the questions waiting for a tap
// on every machine of the crew — a held permission shows the tool and the whole command, path or
// URL, the pane's name and machine — with one button per option. "Always allow" takes a second
// tap. The list follows `GET /api/cards/stream` (every change reloads it), and the last answers
// are listed below. A card answered at the machine, or past its deadline, leaves the list and is
// shown as such among the answers.

import { api, authHeaders, failure } from '../client.js';
import { clear, h } from '../dom.js';
import { SseParser, backoff } from '../stream.js';

const STATE_WORDS = {
  answered: 'answered',
  'answered elsewhere': 'answered elsewhere',
  expired: 'expired: the agent asks in its terminal',
  withdrawn: 'withdrawn',
};

/** One body item, as text: never parsed as markup. */
function item(it) {
  if (it.kind === 'code' || it.kind === 'diff') return h('pre', { class: `card-${it.kind}` }, it.text);
  if (it.kind === 'link') return h('p', { class: 'card-link' }, it.url);
  return h('p', {}, it.text);
}

export function cardsView(root) {
  let gone = false;
  let abort = null;
  let attempt = 0;
  let retry = null;
  const confirming = new Map(); // card id → confirm token of a first "Always allow" tap
  const said = new Map(); // card id → what the last tap on it said
  const status = h('p', { class: 'note', hidden: true, role: 'status' });
  const list = h('ul', { class: 'cards-list' }, h('li', { class: 'muted' }, 'Loading…'));
  const recent = h('ul', { class: 'receipts' });

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), 'Back'),
      h('h1', { tabindex: '-1' }, 'Cards')),
    h('main', { class: 'page' },
      h('p', { class: 'muted small' }, 'Questions from agents that wait for your tap. Nothing else answers them.'),
      status,
      list,
      h('h2', {}, 'Recent answers'),
      recent));

  async function tap(card, option) {
    const body = { option: option.id, shown: card.shown, machine: card.machine };
    const token = confirming.get(card.id);
    if (option.id === 'always' && token) body.confirm = token;
    try {
      const res = await api(`/api/cards/${encodeURIComponent(card.id)}/answer`, { method: 'POST', body });
      if (res && res.confirm) {
        confirming.set(card.id, res.confirm);
        said.set(card.id, 'Tap \u201cAlways allow\u201d again to confirm.');
      } else {
        confirming.delete(card.id);
        said.set(card.id, `${option.label}: sent.`);
      }
    } catch (err) {
      confirming.delete(card.id);
      said.set(card.id, err.status === 410
        ? 'Already answered elsewhere, or closed.'
        : err.status === 409 ? 'This card changed: look again before you tap.' : `Not sent: ${err.code}.`);
    }
    await reload();
  }

  function cardItem(card) {
    const where = [card.pane_name, card.machine].filter(Boolean).join(' on ');
    const buttons = card.options.map((o) => h('button', {
      type: 'button',
      class: o.id === 'deny' ? 'ghost' : 'primary',
      onclick: () => tap(card, o),
    }, o.id === 'always' && confirming.has(card.id) ? 'Confirm always allow' : o.label));
    return h('li', {},
      h('article', { class: 'card decision', 'data-card': card.id },
        h('h2', {}, card.title),
        where ? h('p', { class: 'muted small' }, where) : null,
        card.items.map(item),
        h('div', { class: 'actions' }, buttons),
        said.has(card.id) ? h('p', { class: 'note', role: 'status' }, said.get(card.id)) : null));
  }

  function render(res) {
    clear(list);
    const cards = res?.cards || [];
    if (!cards.length) list.append(h('li', { class: 'muted' }, 'No cards waiting.'));
    for (const c of cards) list.append(cardItem(c));
    clear(recent);
    const receipts = (res?.receipts || []).slice(0, 20);
    if (!receipts.length) recent.append(h('li', { class: 'muted' }, 'No answers yet.'));
    for (const r of receipts) {
      const what = r.option && r.device ? `${r.option} by ${r.device}` : (STATE_WORDS[r.state] || r.state);
      recent.append(h('li', { 'data-receipt': r.card }, h('strong', {}, r.title), ` \u2014 ${what} (${r.machine})`));
    }
  }

  async function reload() {
    try {
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
      const res = await fetch('/api/cards/stream', {
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

// A durable agent's conversation (`#/agents/<machine>/<agent>/<conversation>`; SPEC §10.3,
// docs/guide/phone-app.md, "Conversation"): its items as text, its open questions as cards (drawn
// and answered by decide.js, as in Cards), and — for a `full` device — a composer, Stop while a
// turn runs, the agent's action buttons, Rename, Close or Reopen; the composer has a microphone
// when the bridge has a transcriber (client.js `dictate`), which fills it and sends nothing.
// Below, the receipts of this conversation ("Sent by phone 2 min ago", never the text). A `read`
// device sees everything but no write button. Read every 2 s while visible (`GET /api/durable` and `GET /api/cards`); each
// part is redrawn only when it changed, so a draft, focus and an expanded tool call stay put.

import { api, dictate } from '../client.js';
import { decider } from '../decide.js';
import { agoMs, itemView, receiptWords, statusWords, watch, write } from '../durable.js';
import { clear, h } from '../dom.js';
import { t } from '../i18n.js';
import { getDevice } from '../store.js';

export function conversationView(root, { machine, agent, conversation }) {
  let poller = null;
  const gone = () => poller?.gone() ?? false;
  let conv = null;
  const keys = {};
  const open = new Set(); // tool items shown expanded
  const full = getDevice()?.tier === 'full';
  let taps = 0; // a tap changes what its card says: redraw the cards
  const decide = decider(() => {
    taps++;
    return refresh();
  });
  let shownCards = [];

  const title = h('h1', { tabindex: '-1' }, conversation);
  const meta = h('p', { class: 'muted small conv-meta' }, t('{name} on {machine}', { name: agent, machine }));
  const conn = h('p', { class: 'note', hidden: true });
  const said = h('p', { class: 'note', hidden: true, role: 'status' });
  const questions = h('section', { class: 'conv-questions', hidden: true, 'aria-label': t('Waiting for your answer') });
  const items = h('ol', { class: 'items', 'aria-label': t('Conversation') });
  const buttons = h('div', { class: 'actions conv-actions' });
  const receipts = h('ul', { class: 'receipts' });

  const text = h('textarea', { id: 'conv-text', rows: 3, 'aria-label': t('Message to the agent'), maxlength: '65536' });
  const send = h('button', { type: 'submit', class: 'primary' }, t('Send'));
  const composer = h('form', {
    class: 'composer',
    onsubmit: (e) => {
      e.preventDefault();
      if (text.value.trim()) run('send', { text: text.value }, () => {
        text.value = '';
      });
    },
  }, text, send);

  const newTitle = h('input', { type: 'text', 'aria-label': t('New title'), maxlength: '256' });
  const renaming = h('form', {
    class: 'row rename',
    hidden: true,
    onsubmit: (e) => {
      e.preventDefault();
      if (newTitle.value.trim()) run('rename', { title: newTitle.value }, () => {
        renaming.hidden = true;
      });
    },
  }, newTitle,
  h('button', { type: 'submit', class: 'primary' }, t('Save')),
  h('button', { type: 'button', class: 'ghost', onclick: () => (renaming.hidden = true) }, t('Cancel')));

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/agents', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Agents')),
      title),
    h('main', { class: 'page conversation' },
      meta, conn, said, questions, items,
      full ? [buttons, renaming, composer] : null,
      h('h2', {}, t('From phones')),
      receipts));

  /** One write; `done` runs when the agent took it. */
  async function run(verb, fields = {}, done = () => {}) {
    for (const b of root.querySelectorAll('.conv-actions button, .composer button, .rename button')) b.disabled = true;
    try {
      await write(machine, agent, conversation, verb, fields);
      if (gone()) return;
      done();
      say(null);
    } catch (err) {
      if (!gone()) say(t('Not sent: {code}.', { code: err.code }));
    } finally {
      for (const b of root.querySelectorAll('.conv-actions button, .composer button, .rename button')) b.disabled = false;
    }
    if (!gone()) refresh();
  }

  function say(words) {
    said.hidden = !words;
    said.textContent = words || '';
  }

  /** Runs `draw(value)` only when `value` changed since part `name` was last drawn. */
  function part(name, value, draw) {
    const key = JSON.stringify(value);
    if (keys[name] === key) return;
    keys[name] = key;
    draw(value);
  }

  function drawButtons(c) {
    clear(buttons);
    if (c.state === 'working') buttons.append(h('button', { type: 'button', class: 'danger', onclick: () => run('abort') }, t('Stop')));
    for (const a of c.actions || []) {
      buttons.append(h('button', { type: 'button', onclick: () => run('action', { action: a.id }) }, a.label));
    }
    buttons.append(h('button', {
      type: 'button',
      class: 'ghost',
      onclick: () => {
        newTitle.value = conv?.title || '';
        renaming.hidden = false;
        newTitle.focus();
      },
    }, t('Rename')));
    buttons.append(c.state === 'closed'
      ? h('button', { type: 'button', class: 'ghost', onclick: () => run('reopen') }, t('Reopen'))
      : h('button', { type: 'button', class: 'ghost', onclick: () => run('close') }, t('Close')));
    send.hidden = c.state === 'closed';
    text.disabled = c.state === 'closed';
    text.placeholder = c.state === 'closed' ? t('Closed: reopen it to send.') : '';
  }

  function render(agentState, cards, allReceipts) {
    const c = (agentState?.conversations || []).find((x) => x.id === conversation) || null;
    conv = c;
    const head = c ? c.title || c.id : conversation;
    if (title.textContent !== head) {
      title.textContent = head;
      document.title = `${head} · Collie`;
    }
    part('meta', [agentState && statusWords(agentState), c?.state, Math.floor(Date.now() / 30_000)], () => {
      meta.textContent = [
        t('{name} on {machine}', { name: agent, machine }),
        agentState ? t('agent {status}', { status: statusWords(agentState) }) : t('agent not attached'),
        c ? c.state : t('no such conversation'),
        c?.updated ? t('updated {when}', { when: agoMs(c.updated) }) : null,
      ].filter(Boolean).join(' · ');
    });
    part('items', c?.items || [], (list) => {
      clear(items);
      if (!list.length) items.append(h('li', { class: 'muted' }, c ? t('Nothing said yet.') : t('This conversation is not (or no longer) there.')));
      for (const it of list) items.append(itemView(it, open));
    });
    if (full && c) part('buttons', [c.state, c.actions, c.title], () => drawButtons(c));
    buttons.hidden = !c;
    composer.hidden = !c;

    // Open questions: the cards that ask them (with "Text shortened" when the sanitizer
    // changed one). What the last tap on a card that left got is said above.
    const mine = cards.filter((x) => x.source === `durable:${agent}` && x.conversation === conversation && x.machine === machine);
    for (const id of shownCards) {
      if (!mine.some((x) => x.id === id)) {
        const last = decide.last(id);
        if (last) say(last);
      }
    }
    shownCards = mine.map((x) => x.id);
    part('cards', [mine, taps], () => {
      clear(questions);
      questions.hidden = !mine.length;
      if (mine.length) questions.append(h('h2', {}, t('Waiting for your answer')));
      for (const card of mine) questions.append(decide.render(card, { where: false }));
    });

    part('receipts', [allReceipts.filter((r) => r.machine === machine && r.agent === agent && r.conversation === conversation).slice(0, 20),
      Math.floor(Date.now() / 30_000)], ([rs]) => {
      clear(receipts);
      if (!rs.length) receipts.append(h('li', { class: 'muted' }, t('Nothing sent from a phone yet.')));
      for (const r of rs) receipts.append(h('li', { 'data-receipt': r.request_id }, receiptWords(r)));
    });
  }

  async function load() {
    const [d, c] = await Promise.all([api('/api/durable'), api('/api/cards')]);
    if (gone()) return;
    const a = (d?.agents || []).find((x) => x.machine === machine && x.name === agent) || null;
    render(a, c?.cards || [], d?.receipts || []);
  }

  function refresh() {
    return poller.refresh();
  }

  poller = watch(conn, load);
  refresh();
  if (full) dictate(machine, text);
  return () => poller.stop();
}

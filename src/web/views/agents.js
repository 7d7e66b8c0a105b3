// Agents (`#/agents`; SPEC §10.3, docs/guide/phone-app.md, "Agents"): every durable agent of the
// crew — its machine, its status in words, its conversations newest first (each a link to the
// conversation view) and, for a `full` device, its starters as buttons. Read every 2 s while
// visible (which is also what makes the bridge read the agents every 2 s).

import { api } from '../client.js';
import { conversationHref, agoMs, newestFirst, statusWords, watch, write } from '../durable.js';
import { clear, h } from '../dom.js';
import { t } from '../i18n.js';
import { getDevice } from '../store.js';

function agentSection(agent, full, start) {
  const up = agent.status === 'up';
  const conversations = newestFirst(agent.conversations);
  const id = `agent-${agent.machine}-${agent.name}`;
  return h('section', { class: 'machine agent', 'aria-labelledby': id, 'data-agent': agent.name },
    h('div', { class: 'machine-head' },
      h('h2', { id }, agent.name),
      h('span', { class: 'badge' }, agent.machine)),
    h('p', { class: up ? 'agent-status' : 'agent-status off' }, t('Status: {status}', { status: statusWords(agent) })),
    full && agent.starters?.length
      ? h('div', { class: 'actions' }, agent.starters.map((s) => h('button', {
        type: 'button',
        onclick: (e) => start(agent, s, e.currentTarget),
      }, s.label)))
      : null,
    conversations.length
      ? h('ul', { class: 'panes' }, conversations.map((c) => h('li', { class: 'pane-row' },
        h('a', { href: conversationHref(agent.machine, agent.name, c.id), class: 'pane-link' }, c.title || c.id),
        h('span', { class: 'pane-state' },
          h('span', { class: `state ${c.state}` }, c.state),
          c.questions?.length
            ? ` · ${c.questions.length === 1 ? t('1 question') : t('{n} questions', { n: c.questions.length })}`
            : '',
          ' · ',
          agoMs(c.updated)))))
      : h('p', { class: 'muted' }, t('No conversations.')));
}

export function agentsView(root) {
  let poller = null;
  const gone = () => poller?.gone() ?? false;
  let shownKey = null;
  const full = getDevice()?.tier === 'full';
  const status = h('p', { class: 'note', hidden: true, role: 'status' }); // what a starter got
  const conn = h('p', { class: 'note', hidden: true }); // the bridge cannot be read
  const list = h('div', { class: 'machines' }, h('p', { class: 'muted' }, t('Loading…')));

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('Agents'))),
    h('main', { class: 'page' },
      h('p', { class: 'muted small' }, t('Durable agents attached to the machines of this crew. What they say is shown as text.')),
      conn,
      status,
      list));

  async function start(agent, starter, button) {
    button.disabled = true;
    try {
      const res = await write(agent.machine, agent.name, '-', 'starter', { starter: starter.id });
      if (gone()) return;
      if (res?.conversation) {
        location.hash = conversationHref(agent.machine, agent.name, res.conversation);
        return;
      }
      status.hidden = false;
      status.textContent = t('{label}: started.', { label: starter.label });
      refresh();
    } catch (err) {
      if (gone()) return;
      status.hidden = false;
      status.textContent = t('Not started: {code}.', { code: err.code });
    } finally {
      button.disabled = false;
    }
  }

  function render(agents) {
    clear(list);
    if (!agents.length) {
      list.append(h('p', { class: 'muted empty' },
        t('No durable agents attached \u2014 '), h('code', {}, 'collie durable attach NAME --socket PATH')));
      return;
    }
    for (const a of agents) list.append(agentSection(a, full, start));
  }

  async function load() {
    const res = await api('/api/durable');
    if (gone()) return;
    const agents = res?.agents || [];
    // Redraw only on a change (a refresh that changes nothing keeps focus and scroll), but
    // at least every 30 s so the relative times move on.
    const key = JSON.stringify(agents) + Math.floor(Date.now() / 30_000);
    if (key !== shownKey) {
      shownKey = key;
      render(agents);
    }
  }

  function refresh() {
    return poller.refresh();
  }

  poller = watch(conn, load);
  refresh();
  return () => poller.stop();
}

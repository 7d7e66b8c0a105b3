// Durable agents on the phone (SPEC §10.3, docs/guide/phone-app.md, "Agents"): what the Agents and
// conversation views share — the list's reading and its cadence, an agent's status in words, the
// writes, the receipts in words, and a conversation's items drawn as text.
//
// Reading `GET /api/durable` also tells the bridge a phone is watching (it then reads the agents
// every 2 s), so the views read it every 2 s while one of them is open and visible, and not
// otherwise.

import { api } from './client.js';
import { ago, h } from './dom.js';
import { t } from './i18n.js';
import { markdown, outLink, safeUrl } from './markdown.js';

export const POLL_MS = 2000;

/**
 * Reads with `load` now and every POLL_MS while the page is visible (never while hidden), and
 * says in `conn` when the bridge cannot be read — a 403 is left to the app, which unpairs.
 * `load()` reads and draws; `stop()` ends it when the view goes. Both views use it.
 */
export function watch(conn, load) {
  let gone = false;
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      await load();
      if (gone) return;
      conn.hidden = true;
    } catch (err) {
      if (gone || err.status === 403) return;
      conn.hidden = false;
      conn.textContent = err.offline
        ? t('Cannot reach the bridge. Retrying…')
        : t('The bridge answered: {code}. Retrying…', { code: err.code });
    }
    clearTimeout(timer);
    if (!gone && document.visibilityState === 'visible') timer = setTimeout(refresh, POLL_MS);
  }
  function onVisible() {
    if (document.visibilityState === 'visible') refresh();
    else clearTimeout(timer);
  }
  document.addEventListener('visibilitychange', onVisible);
  return {
    refresh,
    gone: () => gone,
    stop() {
      gone = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}

/** `#/agents/<machine>/<agent>/<conversation>`, each part URL-encoded. */
export function conversationHref(machine, agent, conversation) {
  return `#/agents/${[machine, agent, conversation].map(encodeURIComponent).join('/')}`;
}

/** A Unix-ms time as "5 min ago" (0: the agent did not say). */
export function agoMs(ms, never = t('no time given')) {
  return ms ? ago(new Date(ms).toISOString()) : never;
}

/** An agent's status in plain words (its error is the bridge's, never the agent's text). */
export function statusWords(agent) {
  const e = agent.error || '';
  switch (agent.status) {
    case 'up': return t('up');
    case 'new': return t('not read yet');
    case 'refused': return t('refuses the token');
    case 'private': return t('not private: {error}', { error: e });
    case 'missing': return e || t('no socket');
    default: return e ? t('down: {error}', { error: e }) : t('down');
  }
}

/** Newest first by `updated`. */
export function newestFirst(conversations) {
  return [...(conversations || [])].sort((a, b) => (b.updated || 0) - (a.updated || 0));
}

/** A device's write to a conversation (`-` for a starter); rejects with an ApiError. */
export function write(machine, agent, conversation, verb, fields = {}) {
  const path = `/api/durable/${encodeURIComponent(agent)}/${encodeURIComponent(conversation)}/${verb}`;
  return api(path, { method: 'POST', body: { machine, ...fields } });
}

/** A receipt's verb in words (the bridge's own word when it is not one of these). */
const verbWords = (verb) => ({
  send: t('Sent'),
  abort: t('Stopped'),
  action: t('Tapped'),
  rename: t('Renamed'),
  close: t('Closed'),
  reopen: t('Reopened'),
  starter: t('Started'),
  answer: t('Answered'),
}[verb]);

/** "Sent by phone 2 min ago", "Tapped retry by phone just now": never what was typed. */
export function receiptWords(r) {
  const vars = { verb: verbWords(r.verb) || r.verb, choice: r.choice, device: r.device, when: agoMs(r.at) };
  return r.choice ? t('{verb} {choice} by {device} {when}', vars) : t('{verb} by {device} {when}', vars);
}

/** Who said an item, in words. */
const roleWords = (role) => ({ user: t('You'), agent: t('Agent'), tool: t('Tool') }[role]);

/** A unified diff, one line each, marked added, removed or a header. */
function diff(text) {
  return h('pre', { class: 'item-diff' }, String(text).split('\n').map((line, i) => {
    const cls = /^(\+\+\+|---|@@)/.test(line) ? 'meta' : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : null;
    return [i ? '\n' : '', h('span', { class: cls }, line)];
  }));
}

/**
 * One item as text. `open` holds the ids of tool items shown expanded (kept across redraws).
 */
export function itemView(it, open) {
  let body;
  if (it.kind === 'markdown') body = h('div', { class: 'md' }, markdown(it.text || ''));
  else if (it.kind === 'code') body = h('pre', { class: 'item-code' }, it.text || '');
  else if (it.kind === 'diff') body = diff(it.text || '');
  else if (it.kind === 'link') {
    const href = safeUrl(it.url);
    body = href
      ? h('p', {}, outLink(href, it.text || it.url))
      : h('p', { class: 'item-link-off' }, it.url || it.text || '', h('span', { class: 'muted small' }, t(' (not opened: not an https:// address)')));
  } else if (it.kind === 'tool') {
    body = h('details', {
      open: open.has(it.id),
      ontoggle: (e) => (e.target.open ? open.add(it.id) : open.delete(it.id)),
    },
    h('summary', {}, it.summary || t('Tool call')),
    h('pre', { class: 'item-code' }, it.output || t('(no output)')));
  } else body = h('p', { class: 'item-text' }, it.text || '');
  const who = roleWords(it.role);
  return h('li', { class: `item role-${who ? it.role : 'agent'}`, 'data-item': it.id },
    h('span', { class: 'item-who muted small' }, `${who || t('Agent')}${it.at ? ` · ${agoMs(it.at)}` : ''}`),
    body);
}

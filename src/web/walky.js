// Walky-talky on the phone (SPEC §9; docs/guide/phone-app.md, "Walky cards"). A pane that received
// a message shows one header line, `[walky <id> from <machine>/<pane>#<token> "<name>"] read it: …`.
// The phone asks the log of the machine that pane belongs to whether it holds that id
// (`GET /api/walky/{id}?machine=`): only then is the line a message, shown with a card. Anyone can
// print such a line, so a header without a log entry stays plain text, marked as such. Cards are
// masked by the bridge (SPEC §6) and only ever become text nodes here.

import { api } from './client.js';
import { h, when } from './dom.js';
import { t } from './i18n.js';

/**
 * The start of a header: enough to find the id, and all a terminal program is likely to keep on one
 * row (agents' TUIs re-wrap and indent typed lines, so the whole header is not required).
 */
const HEADER = /\[walky ([0-9a-f]{32}) from\b/g;
/** Rows a header is looked for across when the terminal wrapped them (a full row continues). */
const JOIN_MAX = 4;
/** `[walky ` + the id + ` `: the columns a mark covers (the id is noise to a person). */
const MARK_COLS = 40;
/** Looked-up ids kept in memory, across pane views; the oldest are dropped first. */
const CACHE_MAX = 256;
/** A lookup that failed (bridge or member unreachable) is asked again after this long. */
const RETRY_MS = 15_000;
/** The bridge's answer for an id the machine's log does not hold. */
export const NO_LOG_ENTRY = 'no log entry on this machine';

/**
 * The headers on a screen: `[{row, col, id}]`, `row` and `col` where `[walky` starts. Rows that fill
 * the whole width (`cols`) are joined with the next, since the terminal wrapped the line there.
 */
export function findHeaders(rows, cols = 0) {
  const found = [];
  for (let i = 0; i < rows.length;) {
    let end = i;
    while (cols > 0 && end + 1 < rows.length && end - i + 1 < JOIN_MAX && rows[end].length >= cols) end++;
    const parts = rows.slice(i, end + 1);
    const line = parts.join('');
    if (line.includes('[walky ')) {
      for (const m of line.matchAll(HEADER)) {
        let row = i;
        let col = m.index;
        while (row < end && col >= parts[row - i].length) {
          col -= parts[row - i].length;
          row++;
        }
        found.push({ row, col, id: m[1] });
      }
    }
    i = end + 1;
  }
  return found;
}

// ---- looking ids up: one request per machine and id, kept while the app runs ----

/** `key → {state: 'pending'|'found'|'none'|'error', card, at, settled}` in least-recently-used order. */
const cache = new Map();
/** Bumped by `forgetCards`, so an answer to a request made before cannot come back in. */
let generation = 0;

/**
 * What is known about message `id` in the log of `machine`. Asks the bridge only when nothing is
 * known yet, or an earlier request failed more than `RETRY_MS` ago; `settled` resolves when the
 * answer is in.
 */
export function lookup(machine, id, now = Date.now()) {
  const key = `${machine}\n${id}`;
  let entry = cache.get(key);
  if (entry && !(entry.state === 'error' && now - entry.at > RETRY_MS)) {
    cache.delete(key); // most recently used last
    cache.set(key, entry);
    return entry;
  }
  const gen = generation;
  entry = { state: 'pending', card: null, at: now, settled: null };
  entry.settled = api(`/api/walky/${encodeURIComponent(id)}?machine=${encodeURIComponent(machine)}`)
    .then((card) => {
      entry.state = card && typeof card === 'object' ? 'found' : 'error';
      entry.card = entry.state === 'found' ? card : null;
    }, (err) => {
      entry.state = err.status === 404 && err.code === NO_LOG_ENTRY ? 'none' : 'error';
    })
    .finally(() => {
      entry.at = Date.now();
      if (gen !== generation) cache.delete(key);
    });
  cache.set(key, entry);
  while (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value);
  return entry;
}

/** Drops every looked-up card (unpairing: the phone keeps nothing of the bridge's). */
export function forgetCards() {
  generation++;
  cache.clear();
}

// ---- cards ----

let serial = 0;

/** "14:05" today, "12 Mar" otherwise. */
export function shortWhen(iso, now = new Date()) {
  const at = new Date(iso);
  if (!iso || Number.isNaN(at.getTime())) return '';
  return at.toDateString() === now.toDateString()
    ? at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : at.toLocaleDateString(undefined, { day: 'numeric', month: 'short' });
}

/** The sending pane as a person reads it: its name, else its address. */
export function sender(card) {
  return card.name || card.from || t('an unknown pane');
}

const kind = (k) => ({ sent: t('sent from here'), received: t('received here'), forwarded: t('relayed by this machine') }[k]);

/**
 * One message as a card: who sent it to whom, when, how it went, and the body behind a button
 * `Show message` (open at once with `open`). `card.kinds`, when given, lists every way this
 * machine's log holds it (a message between two panes of one machine is both sent and received).
 */
export function cardView(card, { open = false } = {}) {
  const id = `walky-body-${++serial}`;
  const kinds = (card.kinds || [card.kind]).map((k) => kind(k) || k).join(', ');
  const body = h('div', { class: 'walky-body', id, hidden: !open },
    h('p', { class: 'muted small' }, t('A peer agent\u2019s words: data, not instructions from you.')),
    typeof card.body === 'string'
      ? h('pre', { class: 'walky-text' }, card.body)
      : h('p', { class: 'muted' }, t('This machine did not keep the text of this message.')));
  const toggle = h('button', {
    type: 'button',
    class: 'ghost walky-toggle',
    'aria-expanded': open ? 'true' : 'false',
    'aria-controls': id,
    onclick: () => {
      body.hidden = !body.hidden;
      toggle.setAttribute('aria-expanded', body.hidden ? 'false' : 'true');
      toggle.textContent = body.hidden ? t('Show message') : t('Hide message');
    },
  }, open ? t('Hide message') : t('Show message'));
  return h('article', { class: 'walky-card', 'aria-label': t('Message from {sender}', { sender: sender(card) }) },
    h('p', { class: 'walky-who' },
      h('strong', {}, sender(card)), ' ',
      h('span', { class: 'muted small walky-addr' }, card.from || '')),
    h('p', { class: 'small walky-facts' },
      `${card.outcome || t('no result in this log')} \u00b7 ${when(card.sent_at, t('time unknown'))}`),
    h('p', { class: 'muted small walky-facts' }, t('to {to} \u00b7 {kinds}', { to: card.to || t('unknown'), kinds })),
    toggle,
    body);
}

/** Shows a card in a modal dialog (a stable place: the header's row moves while the pane runs). */
export function openCard(card) {
  const title = h('p', { id: 'walky-dialog-title', class: 'dialog-title' }, t('Walky message'));
  const dialog = h('dialog', { class: 'dialog walky-dialog', 'aria-labelledby': 'walky-dialog-title' },
    title,
    cardView(card, { open: true }),
    h('div', { class: 'row end' },
      h('button', { type: 'button', onclick: close }, t('Close'))));
  dialog.setAttribute('role', 'dialog');
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    close();
  });
  // A tap on the backdrop (outside the dialog's box) closes it too.
  dialog.addEventListener('click', (e) => {
    if (e.target === dialog) close();
  });
  function close() {
    dialog.close();
    dialog.remove();
  }
  closeCards();
  document.body.append(dialog);
  dialog.showModal();
}

/** Closes any open card dialog (the view showing it goes away). */
export function closeCards() {
  document.querySelectorAll('dialog.walky-dialog').forEach((d) => d.remove());
}

// ---- marks on the live screen ----

/**
 * The marks over the header rows of a pane's screen, in `layer` (an overlay of the screen's grid,
 * sharing its font): a button with the compact card for a header whose id `machine`'s log holds,
 * the words "no log entry on this machine" for one it does not, nothing while it is being looked
 * up. A mark covers the header's `[walky <id> ` columns on its row; the screen's text is untouched,
 * so rows keep their places and copying still gets the whole line.
 */
export class HeaderMarks {
  constructor(layer, machine) {
    this.layer = layer;
    this.machine = machine;
    this.rows = [];
    this.cols = 0;
    this.shown = new Map(); // key → element
    this.waiting = new Set(); // lookups a render follows
    this.retry = null;
    this.stopped = false;
  }

  /** The screen changed: mark its headers (cheap when there are none). */
  update(rows, cols) {
    this.rows = rows;
    if (Number.isInteger(cols) && cols > 0) this.cols = cols;
    this.render();
  }

  render() {
    if (this.stopped) return;
    const want = new Map();
    let failed = false;
    for (const { row, col, id } of findHeaders(this.rows, this.cols)) {
      const entry = lookup(this.machine, id);
      if (entry.state === 'pending') {
        if (!this.waiting.has(entry)) {
          this.waiting.add(entry);
          entry.settled.then(() => {
            this.waiting.delete(entry);
            this.render();
          });
        }
        continue;
      }
      if (entry.state === 'error') {
        failed = true;
        continue;
      }
      want.set(`${row}:${col}:${id}:${entry.state}`, { row, col, entry });
    }
    for (const [key, el] of this.shown) {
      if (!want.has(key)) {
        el.remove();
        this.shown.delete(key);
      }
    }
    for (const [key, { row, col, entry }] of want) {
      if (this.shown.has(key)) continue;
      const el = entry.state === 'found' ? this.chip(entry.card) : this.none();
      el.style.setProperty('--cx', String(col));
      el.style.setProperty('--cy', String(row));
      const room = this.cols > col ? this.cols - col : MARK_COLS;
      el.style.setProperty('--cw', String(Math.max(12, Math.min(MARK_COLS, room))));
      this.layer.append(el);
      this.shown.set(key, el);
    }
    clearTimeout(this.retry);
    if (failed) this.retry = setTimeout(() => this.render(), RETRY_MS + 100);
  }

  chip(card) {
    const outcome = card.outcome || t('no result yet');
    const time = shortWhen(card.sent_at);
    return h('button', {
      type: 'button',
      class: 'walky-mark walky-chip',
      'aria-label': time
        ? t('Walky message from {sender}: {outcome}, {time}', { sender: sender(card), outcome, time })
        : t('Walky message from {sender}: {outcome}', { sender: sender(card), outcome }),
      title: t('From {from}: tap to read', { from: card.from || sender(card) }),
      onclick: () => openCard(card),
    }, h('span', { class: 'walky-mark-text' }, `\u2709 ${sender(card)} \u00b7 ${outcome}${time ? ` \u00b7 ${time}` : ''}`));
  }

  none() {
    return h('span', {
      class: 'walky-mark walky-none',
      title: t('This line looks like a walky header, but the walky log of this pane\u2019s machine has no message with that id: it was printed, not delivered.'),
    }, h('span', { class: 'walky-mark-text' }, t('no log entry on this machine')));
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    closeCards();
  }
}

// The sent lines on the phone (SPEC §11; docs/guide/phone-app.md, "Sent"): the shell lines this
// crew's machines kept, grouped per machine, newest first — shown by the Sent screen and by the
// pane view's Sent sheet. A tap on a line only re-fills an input (it never sends); "Discard" and
// "Clear sent" (after a confirmation) need tier `files`, and are not shown below it. Lines are
// masked by the bridge and shown as text nodes.

import { api } from './client.js';
import { clear, confirmDialog, h, when } from './dom.js';
import { t } from './i18n.js';
import { getDevice } from './store.js';

/** Whether this device may discard lines (tier `files` or `full`). */
export function canDiscard() {
  const tier = getDevice()?.tier;
  return tier === 'files' || tier === 'full';
}

/** Asks "Clear sent lines of <machine>?" in a modal dialog; resolves true on Clear. */
export function confirmClear(machine) {
  return confirmDialog(
    t('Clear sent lines of {machine}?', { machine }),
    t('Every line this machine kept goes. The audit log records how many, never the lines.'),
    t('Clear'),
  );
}

/**
 * Fills `box` with the lines of `list` (`GET /api/sent`), per machine — only machine `only` when
 * given. `pick(line)`: what a tap on a line does (no tap target without it). `changed()`: called
 * after a discard or a clear. `say(text)`: where a failure is told.
 */
export function renderSent(box, list, { only = null, pick = null, changed = () => {}, say = () => {} } = {}) {
  clear(box);
  const byMachine = new Map();
  for (const l of list?.lines || []) {
    if (only && l.machine !== only) continue;
    if (!byMachine.has(l.machine)) byMachine.set(l.machine, []);
    byMachine.get(l.machine).push(l);
  }
  if (!list?.recording && (!only || byMachine.size === 0)) {
    box.append(h('p', { class: 'muted' }, t('This bridge keeps no sent lines (COLLIE_SENT=off).')));
  }
  if (byMachine.size === 0) {
    box.append(h('p', { class: 'muted' }, t('No sent lines.')));
  }
  const discard = canDiscard();
  for (const [machine, lines] of byMachine) {
    const headingId = `sent-${machine}`;
    box.append(h('section', { class: 'machine sent', 'aria-labelledby': headingId },
      h('div', { class: 'machine-head' },
        h('h2', { id: headingId }, machine),
        discard ? h('button', {
          type: 'button',
          class: 'ghost small',
          onclick: async () => {
            if (!(await confirmClear(machine))) return;
            try {
              await api(`/api/sent/${encodeURIComponent(machine)}`, { method: 'DELETE' });
              changed();
            } catch (err) {
              say(err.offline ? t('Not cleared: cannot reach the bridge.') : t('Not cleared: {code}.', { code: err.code }));
            }
          },
        }, t('Clear sent')) : null),
      h('ul', { class: 'sent-lines' }, lines.map((l) => h('li', { class: 'sent-row' },
        pick
          ? h('button', { type: 'button', class: 'sent-line', title: t('Put this line in the input'), onclick: () => pick(l.line) }, l.line)
          : h('code', { class: 'sent-line' }, l.line),
        h('span', { class: 'sent-meta muted small' }, `${l.pane === 'command' ? t('command') : l.pane} · ${when(l.ts)}`),
        discard ? h('button', {
          type: 'button',
          class: 'ghost small',
          onclick: async () => {
            try {
              await api(`/api/sent/${encodeURIComponent(l.machine)}/${l.id}`, { method: 'DELETE' });
              changed();
            } catch (err) {
              say(err.offline ? t('Not discarded: cannot reach the bridge.') : t('Not discarded: {code}.', { code: err.code }));
            }
          },
        }, t('Discard')) : null)))));
  }
  for (const m of list?.unavailable || []) {
    if (!only || only === m) box.append(h('p', { class: 'muted small' }, t('{machine}: its sent lines cannot be read now (offline, or an older Collie).', { machine: m })));
  }
}

/** The sheet the pane view opens: machine `machine`'s lines; a tap puts a line in the input. */
export function openSentSheet(machine, pick) {
  const box = h('div', { class: 'sent-box' });
  const note = h('p', { role: 'alert', class: 'alert small' });
  const dialog = h('dialog', { 'aria-labelledby': 'sent-sheet-title', class: 'dialog sent-sheet' },
    h('p', { id: 'sent-sheet-title', class: 'dialog-title' }, t('Sent')),
    note,
    box,
    h('div', { class: 'row end' },
      h('button', { type: 'button', class: 'ghost', onclick: () => close() }, t('Close'))));
  dialog.setAttribute('role', 'dialog');
  function close() {
    dialog.close();
    dialog.remove();
  }
  async function load() {
    try {
      const list = await api('/api/sent');
      renderSent(box, list, {
        only: machine,
        pick: (line) => {
          close();
          pick(line);
        },
        changed: load,
        say: (words) => { note.textContent = words; },
      });
    } catch (err) {
      note.textContent = err.offline ? t('Cannot reach the bridge.') : t('The bridge answered: {code}.', { code: err.code });
    }
  }
  box.append(h('p', { class: 'muted' }, t('Loading…')));
  document.body.append(dialog);
  dialog.showModal();
  load();
  return close;
}

// Sent (docs/guide/phone-app.md, "Sent"): the shell lines the crew's machines kept, per machine,
// and — for a `full` device, when `[phone] run` is on here or a member is online — a one-shot
// command field, with a machine picker when the crew has members, and the recent commands. A tap on a sent or recent line puts it in the command field (it
// never runs it); Run opens the new pane the command runs in.

import { api } from '../client.js';
import { h } from '../dom.js';
import { t } from '../i18n.js';
import { renderSent } from '../sent.js';
import { getDevice } from '../store.js';
import { paneHref } from './panes.js';

export function sentView(root) {
  let gone = false;
  const note = h('p', { role: 'alert', class: 'alert small' });
  const box = h('div', { class: 'machines sent-box' }, h('p', { class: 'muted' }, t('Loading…')));
  const runBox = h('section', { class: 'run', 'aria-label': t('Run a command'), hidden: true });
  let field = null;

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('Sent'))),
    h('main', { class: 'page' }, runBox, note, box));

  function fill(line) {
    if (!field) return;
    field.value = line;
    field.focus({ preventScroll: true });
  }

  async function loadLines() {
    try {
      const list = await api('/api/sent');
      if (gone) return;
      renderSent(box, list, {
        pick: field ? fill : null,
        changed: loadLines,
        say: (words) => { note.textContent = words; },
      });
    } catch (err) {
      if (gone || (err.status === 403 && err.code !== 'insufficient tier')) return;
      note.textContent = err.offline ? t('Cannot reach the bridge.') : t('The bridge answered: {code}.', { code: err.code });
    }
  }

  async function loadRecent(list) {
    try {
      const { commands } = await api('/api/commands/recent');
      if (gone) return;
      list.replaceChildren(...(commands || []).map((c) => h('li', {},
        h('button', { type: 'button', class: 'sent-line', title: t('Put this command in the field'), onclick: () => fill(c) }, c))));
    } catch {
      // the field works without the list
    }
  }

  async function buildRun() {
    if (getDevice()?.tier !== 'full') return;
    let settings;
    try {
      settings = await api('/api/settings');
    } catch {
      return;
    }
    if (gone) return;
    // Where a command may run: this machine when its `[phone] run` is on, and each online
    // member (its own `[phone] run` decides there, and its refusal is shown as said).
    let members = [];
    try {
      members = ((await api('/api/machines'))?.machines || [])
        .filter((m) => m.role === 'member' && m.online)
        .map((m) => m.name);
    } catch {
      // this machine only
    }
    if (gone || (!settings?.run && members.length === 0)) return;
    const machine = h('select', { id: 'command-machine', 'aria-label': t('Machine') },
      settings?.run ? h('option', { value: 'local' }, t('this machine')) : null,
      members.map((m) => h('option', { value: m }, m)));
    const runNote = h('p', { role: 'status', class: 'note small', hidden: true });
    field = h('input', {
      id: 'command-input',
      type: 'text',
      class: 'type',
      autocomplete: 'off',
      autocorrect: 'off',
      autocapitalize: 'off',
      spellcheck: false,
      enterkeyhint: 'go',
      placeholder: t('A command for a fresh shell'),
    });
    const recent = h('ul', { class: 'sent-lines recent', 'aria-label': t('Recent commands') });
    async function run() {
      const command = field.value;
      if (!command.trim()) return;
      runNote.hidden = true;
      try {
        const body = machine.value === 'local' ? { command } : { command, machine: machine.value };
        const res = await api('/api/commands', { method: 'POST', body });
        if (gone) return;
        location.hash = paneHref(res.machine, res.pane.pane).slice(1);
      } catch (err) {
        runNote.hidden = false;
        runNote.textContent = err.offline ? t('Not run: cannot reach the bridge.') : t('Not run: {code}.', { code: err.code });
      }
    }
    field.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.isComposing) {
        e.preventDefault();
        run();
      }
    });
    runBox.append(
      h('h2', {}, t('Run a command')),
      h('div', { class: 'input-row' },
        h('label', { for: 'command-input', class: 'visually-hidden' }, t('Command')),
        members.length ? machine : null,
        field,
        h('button', { type: 'button', class: 'primary', onclick: run }, t('Run'))),
      runNote,
      h('p', { class: 'muted small' }, members.length
        ? t('It runs in a new pane on the machine chosen; a tap on a line below puts it here.')
        : t('It runs in a new pane on this bridge\u2019s machine; a tap on a line below puts it here.')),
      recent);
    runBox.hidden = false;
    loadRecent(recent);
  }

  buildRun().then(loadLines);
  return () => {
    gone = true;
  };
}

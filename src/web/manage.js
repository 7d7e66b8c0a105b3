// Creating, renaming and closing panes from the phone (SPEC §3.2, §3.3; docs/guide/phone-app.md,
// "New pane" and "Pane actions"). The three writes need tier `full`, so their controls are shown
// only to such a device; the bridge decides anyway, and a `403 insufficient tier` (the tier was
// lowered since the phone last looked) refreshes the stored tier so the controls go away. A name is
// checked here by the bridge's own rule, with the bridge's own words, so a person reads the same
// message whichever side refused; every other refusal is the bridge's error, shown as it is.
// Names come from panes and machines and are only ever set as text.

import { api, panePath } from './client.js';
import { confirmDialog, h, openModal } from './dom.js';
import { t } from './i18n.js';
import { getDevice, getToken, setDevice } from './store.js';

/** Whether this phone's tier may create, rename and close panes (tier `full`, SPEC §3.2). */
export function canManage(device = getDevice()) {
  return device?.tier === 'full';
}

/** The bridge's message for a bad pane name (`validate_pane_name` in src/app/panes.rs). */
export const NAME_RULE = 'invalid name: 1-64 characters, no control characters';

/**
 * Null when `name` is a name the bridge takes, else the bridge's message (NAME_RULE, in the phone's
 * language). Characters are counted as the bridge counts them (code points, not UTF-16 units), and
 * "control" is Unicode's Cc, as Rust's `char::is_control`.
 */
export function nameProblem(name) {
  const chars = [...name];
  if (chars.length === 0 || chars.length > 64 || /\p{Cc}/u.test(name)) {
    return t('invalid name: 1-64 characters, no control characters');
  }
  return null;
}

/**
 * Asks the bridge for this phone's device record and stores its tier; resolves with the tier, or
 * null when it could not be asked (the stored tier stays).
 */
export async function refreshTier() {
  try {
    const { devices } = await api('/api/devices');
    const me = (devices || []).find((d) => d.current);
    // Forgotten meanwhile (unpaired): write nothing back.
    if (!me || !getToken()) return null;
    setDevice(me);
    return me.tier;
  } catch {
    return null;
  }
}

/**
 * What to tell a person about a refused write (`what`: "Not created", "Not renamed"…, already in the
 * phone's language).
 */
export function refusal(what, err) {
  if (err.offline) return t('{what}: cannot reach the bridge.', { what });
  // The bridge's own words first, then what they mean here.
  if (err.code === 'insufficient tier') return t('{what}: insufficient tier. This phone\'s tier is now below full.', { what });
  return t('{what}: {code}.', { what, code: err.code });
}

/** An unpaired or expired device: app.js forgets the pairing, there is nothing to say here. */
export function unpaired(err) {
  return err.status === 403 && err.code !== 'insufficient tier';
}

/**
 * `POST /api/panes {machine, name?, folder?, session?}`: a new shell, hosted by the bridge, or a new
 * window of the tmux session `session` (as `listSessions` names it); resolves with the pane's record.
 */
export function createShell(machine, name, folder = null, session = null) {
  return createWith(machine, {}, name, false, folder, session);
}

/** `POST /api/panes` starting `what` (`{}`, `{starter}` or `{row}`) with the optional fields. */
function createWith(machine, what, name, confirmNoPrompts, folder, session = null) {
  const body = { machine, ...what };
  if (name) body.name = name;
  if (folder) body.folder = folder;
  if (session) body.session = session;
  if (confirmNoPrompts) body.confirm_no_prompts = true;
  return api('/api/panes', { method: 'POST', body });
}

/**
 * Opens a pane on `machine` running its starter `starter` (SPEC §12), hosted or as a new window of
 * the tmux session `session`. `confirmNoPrompts` gives this device's one-time confirmation of a
 * starter that skips the agent's permission prompts.
 */
export function createStarter(machine, starter, name, confirmNoPrompts = false, folder = null, session = null) {
  return createWith(machine, { starter }, name, confirmNoPrompts, folder, session);
}

/** Opens a pane on `machine` running its added starter row `id` (decision 0041). */
export function createRow(machine, id, name, confirmNoPrompts = false, folder = null) {
  return createWith(machine, { row: id }, name, confirmNoPrompts, folder);
}

/** The folder names under `path` (the home folder when null) of `machine` (SPEC §11, browse). */
export function browseFolders(machine, path = null) {
  const q = path ? `?path=${encodeURIComponent(path)}` : '';
  return api(`/api/browse/${encodeURIComponent(machine)}${q}`);
}

/** The tmux sessions `machine` mirrors, where a new window can open (decision 0042). */
export function listSessions(machine) {
  return api(`/api/sessions/${encodeURIComponent(machine)}`);
}

/** The applied starters of `machine`, with this device's "No prompts" confirmations. */
export function listStarters(machine) {
  return api(`/api/starters/${encodeURIComponent(machine)}`);
}

/**
 * Opens the rename dialog for `pane` of `machine`, its field filled with `current`. Resolves with
 * the new name once the bridge took it, or null on Cancel. A refusal is said inside the dialog, which
 * stays open; `onTier()` is also called after a `403 insufficient tier`.
 */
export function renameDialog(machine, pane, current, onTier = () => {}) {
  return new Promise((resolve) => {
    const field = h('input', {
      id: 'rename-field',
      type: 'text',
      value: current,
      autocomplete: 'off',
      autocapitalize: 'off',
      spellcheck: false,
      enterkeyhint: 'done',
    });
    const error = h('p', { role: 'alert', class: 'alert small', id: 'rename-error' });
    const save = h('button', { type: 'submit', class: 'primary' }, t('Save'));
    const form = h('form', { class: 'stack', method: 'dialog' },
      h('label', { for: 'rename-field' }, t('Name')),
      field,
      error,
      h('div', { class: 'row end' },
        h('button', { type: 'button', class: 'ghost', onclick: () => close(null) }, t('Cancel')),
        save));
    const dialog = h('dialog', { 'aria-labelledby': 'rename-title', class: 'dialog' },
      h('p', { id: 'rename-title', class: 'dialog-title' }, t('Rename pane')),
      form);
    dialog.setAttribute('role', 'dialog');
    field.setAttribute('aria-describedby', 'rename-error');
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(null);
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const name = field.value;
      const problem = nameProblem(name);
      if (problem) {
        error.textContent = problem;
        field.setAttribute('aria-invalid', 'true');
        field.focus();
        return;
      }
      field.removeAttribute('aria-invalid');
      error.textContent = '';
      save.disabled = true;
      try {
        await api(panePath(machine, pane, '/rename'), { method: 'POST', body: { name } });
        close(name);
      } catch (err) {
        save.disabled = false;
        if (unpaired(err)) {
          close(null);
          return;
        }
        error.textContent = refusal(t('Not renamed'), err);
        if (err.code === 'insufficient tier') {
          onTier();
        }
      }
    });
    const close = openModal(dialog, resolve);
    field.select();
  });
}

/** Asks before closing: the program in the pane is ended. Resolves true on `Close pane`. */
export function confirmClose(name, machine) {
  return confirmDialog(
    t('Close {name}?', { name }),
    t('The program running in it on {machine} is ended, and the pane is gone for every phone. This cannot be undone.', { machine }),
    t('Close pane'),
  );
}

/** `DELETE /api/panes/{m}/{p}`. */
export function closePane(machine, pane) {
  return api(panePath(machine, pane), { method: 'DELETE' });
}

/**
 * The pane view's actions sheet for the pane called `name`: a link `Changes` to `changes` (when
 * given: tier files), and `Rename` and `Close pane` when `manage` (tier full). Resolves with the
 * action picked (`'rename'`, `'close'`; `'changes'` once the link is followed) or null.
 */
export function actionsSheet(name, { changes = null, manage = false } = {}) {
  return new Promise((resolve) => {
    const dialog = h('dialog', { 'aria-labelledby': 'actions-title', class: 'dialog sheet' },
      h('p', { id: 'actions-title', class: 'dialog-title' }, name),
      h('div', { class: 'sheet-actions' },
        // A link (it goes somewhere). The sheet goes first, and a removed link no longer navigates,
        // so the hash is set here.
        changes ? h('a', {
          href: changes,
          class: 'sheet-link',
          onclick: (e) => {
            e.preventDefault();
            close('changes');
            location.hash = changes;
          },
        }, t('Changes')) : null,
        manage ? h('button', { type: 'button', class: 'wide', onclick: () => close('rename') }, t('Rename')) : null,
        manage ? h('button', { type: 'button', class: 'wide danger-text', onclick: () => close('close') }, t('Close pane')) : null,
        h('button', { type: 'button', class: 'wide ghost', onclick: () => close(null) }, t('Cancel'))));
    dialog.setAttribute('role', 'dialog');
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(null);
    });
    // A tap on the backdrop (outside the sheet) dismisses it, as phones' sheets do.
    dialog.addEventListener('click', (e) => {
      if (e.target !== dialog) return;
      const r = dialog.getBoundingClientRect();
      const inside = e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom;
      if (!inside) close(null);
    });
    const close = openModal(dialog, resolve);
  });
}

// New pane (`#/new`, from the `New pane` button of the Panes screen; docs/guide/phone-app.md, "New
// pane"): pick a machine of the crew, optionally name the pane, tap what to start: one of the
// machine's applied starters (SPEC §12, `GET /api/starters/{machine}`) or a shell hosted by its
// bridge (`POST /api/panes {machine, name?, starter?}`). A starter that skips the agent's permission
// prompts carries a "No prompts" badge and is confirmed once per device. `Choose folder` browses the
// machine's home for the folder the pane starts in (`GET /api/browse/{machine}`; the bridge checks
// it against the machine's workspaces when the pane is opened). A created pane opens at once. Tier
// `full` only: other devices are told so and get no controls. `Open in` picks where it opens: a
// new pane hosted by Collie (the default) or a new window of one of the machine's tmux sessions
// (`GET /api/sessions/{machine}`; decision 0042). Rows a phone added are listed with the starters,
// and `Add starter` adds one (`views/rows.js`, decision 0041); a row opens as a hosted pane.

import { api } from '../client.js';
import { clear, confirmDialog, h } from '../dom.js';
import { browseFolders, canManage, createRow, createShell, createStarter, listSessions, listStarters, nameProblem, refreshTier, refusal, unpaired } from '../manage.js';
import { t } from '../i18n.js';
import { getDevice, getFolders, setFolders } from '../store.js';
import { parentOf } from './files.js';
import { paneHref } from './panes.js';
import { addForm, addedRows, removeRow } from './rows.js';

/**
 * The rows above `Shell`, one per starter of the chosen machine: a button with its name, the agent
 * it runs and, for one that skips the agent's permission prompts, the "No prompts" badge. Names
 * come from the machine's configuration: set as text.
 */
function starterRows(starters, start) {
  return starters.map((s, i) => {
    const detailId = `start-starter-${i}-detail`;
    const button = h('button', { type: 'button', class: 'start start-starter', onclick: () => start(button, s) },
      h('span', { class: 'start-name' }, s.name),
      s.no_prompts ? h('span', { class: 'badge off no-prompts' }, t('No prompts')) : null);
    button.setAttribute('aria-describedby', detailId);
    const detail = h('span', { class: 'start-detail', id: detailId },
      s.agent ? t('Runs {agent}', { agent: s.agent }) : t('Runs its configured program'));
    return h('li', { class: 'starter-row' }, button, detail);
  });
}

/**
 * The `Open in` options: a new Collie pane (value ''), then one per tmux session of the machine.
 * Session names come from the machine's tmux: set as text.
 */
function whereOptions(sessions) {
  return [
    h('option', { value: '' }, t('A new Collie pane')),
    ...sessions.map((s) => h('option', { value: s.session }, s.socket
      ? t('tmux session {name} (tmux server {socket})', { name: s.name, socket: s.socket })
      : t('tmux session {name}', { name: s.name }))),
  ];
}

/** One option per machine, this bridge first; an offline member is listed but cannot be picked. */
function machineOptions(machines) {
  return machines.map((m) => {
    const off = m.online === false;
    const role = m.role && m.role !== 'solo' ? m.role : '';
    const said = role
      ? off ? t('{name} ({role}, offline)', { name: m.name, role }) : t('{name} ({role})', { name: m.name, role })
      : off ? t('{name} (offline)', { name: m.name }) : m.name;
    return h('option', { value: m.name, disabled: off }, said);
  });
}

/** How many favourite and recent folders the phone keeps, over all machines. */
const FAVOURITES_MAX = 20;
const RECENT_MAX = 8;

/** Puts `path` of `machine` first among the recent folders. */
function remember(machine, path) {
  const f = getFolders();
  f.recent = [{ machine, path }, ...f.recent.filter((e) => e.machine !== machine || e.path !== path)].slice(0, RECENT_MAX);
  setFolders(f);
}

export function newView(root) {
  let gone = false;
  const body = h('div', { class: 'new-body' });
  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('New pane'))),
    h('main', { class: 'page' }, body));

  function notAllowed() {
    clear(body);
    const tier = getDevice()?.tier || t('unknown');
    body.append(h('p', { class: 'note' },
      t('Opening a pane needs a device of tier full; this phone is {tier}. Run collie devices set-tier on the computer to change it.', { tier })));
  }

  async function load() {
    clear(body);
    body.append(h('p', { class: 'muted' }, t('Loading…')));
    let machines;
    try {
      machines = (await api('/api/machines')).machines || [];
    } catch (err) {
      if (gone || unpaired(err)) return;
      clear(body);
      body.append(
        h('p', { role: 'alert', class: 'alert' }, err.offline ? t('Cannot reach the bridge.') : t('The bridge answered: {code}.', { code: err.code })),
        h('button', { type: 'button', onclick: load }, t('Try again')));
      return;
    }
    if (gone) return;
    build(machines);
  }

  function build(machines) {
    clear(body);
    const machine = h('select', { id: 'new-machine' }, machineOptions(machines));
    const first = machines.find((m) => m.online !== false);
    if (first) machine.value = first.name;
    const name = h('input', {
      id: 'new-name',
      type: 'text',
      autocomplete: 'off',
      autocapitalize: 'off',
      spellcheck: false,
      enterkeyhint: 'done',
    });
    name.setAttribute('aria-describedby', 'new-name-hint');
    const alert = h('p', { role: 'alert', class: 'alert', id: 'new-alert' });
    const progress = h('p', { role: 'status', class: 'muted small' });
    const shellWhere = h('span', { class: 'start-detail', id: 'start-shell-detail' });
    const shell = h('button', { type: 'button', class: 'start', onclick: () => start(shell) },
      h('span', { class: 'start-name' }, t('Shell')));
    shell.setAttribute('aria-describedby', 'start-shell-detail');

    // The folder the pane starts in: null is the machine's home folder (its default).
    let folder = null;
    let home = null;
    const folderShown = h('span', { class: 'folder-shown mono', id: 'new-folder' }, t('Home folder'));
    const picker = h('div', { class: 'folder-picker', hidden: true });
    const chooseBtn = h('button', { type: 'button', class: 'ghost', onclick: () => browse(folder) }, t('Choose folder'));
    chooseBtn.setAttribute('aria-describedby', 'new-folder');

    async function browse(path) {
      const on = machine.value;
      if (!on) return;
      clear(picker);
      picker.hidden = false;
      picker.append(h('p', { class: 'muted' }, t('Loading…')));
      let res;
      try {
        res = await browseFolders(on, path);
      } catch (err) {
        if (gone || unpaired(err) || machine.value !== on) return;
        clear(picker);
        picker.append(h('p', { role: 'alert', class: 'alert' }, refusal(t('Folders not listed'), err)),
          h('button', { type: 'button', class: 'ghost', onclick: closePicker }, t('Cancel')));
        return;
      }
      if (gone || machine.value !== on) return;
      if (!path) home = res.path;
      clear(picker);
      const rows = res.folders.map((name) => h('li', {},
        h('button', { type: 'button', class: 'file-entry dir', onclick: () => browse(`${res.path.replace(/\/$/, '')}/${name}`) }, name)));
      if (home && res.path !== home) {
        rows.unshift(h('li', {}, h('button', { type: 'button', class: 'file-entry dir', 'aria-label': t('Up one folder'), onclick: () => browse(parentOf(res.path)) }, '..')));
      }
      picker.append(
        h('p', { class: 'mono picker-path', role: 'status' }, res.path),
        h('ul', { class: 'file-list', 'aria-label': t('Folders') }, rows),
        res.truncated ? h('p', { class: 'note' }, t('Only the first 200 folders are listed.')) : null,
        h('div', { class: 'row end' },
          h('button', { type: 'button', class: 'ghost', onclick: closePicker }, t('Cancel')),
          h('button', { type: 'button', onclick: () => { setFolder(res.path === home ? null : res.path); closePicker(); } }, t('Use this folder'))));
    }
    function closePicker() {
      clear(picker);
      picker.hidden = true;
    }
    function setFolder(path) {
      folder = path;
      folderShown.textContent = path || t('Home folder');
      showFolders();
    }

    // Favourite and recent folders of the chosen machine (kept on this phone, forgotten with the
    // pairing): one tap sets the folder; the star keeps or drops the folder shown.
    const folderChoices = h('div', { class: 'folder-choices' });
    const star = h('button', {
      type: 'button',
      class: 'ghost pin',
      hidden: true,
      onclick: () => {
        const f = getFolders();
        const mine = (e) => e.machine === machine.value && e.path === folder;
        f.favourites = f.favourites.some(mine)
          ? f.favourites.filter((e) => !mine(e))
          : [...f.favourites, { machine: machine.value, path: folder }].slice(-FAVOURITES_MAX);
        setFolders(f);
        showFolders();
      },
    });
    function showFolders() {
      const f = getFolders();
      const on = (e) => e.machine === machine.value;
      const favourites = f.favourites.filter(on).map((e) => e.path);
      const recent = f.recent.filter(on).map((e) => e.path).filter((p) => !favourites.includes(p));
      const favourite = folder !== null && favourites.includes(folder);
      star.hidden = folder === null;
      star.setAttribute('aria-pressed', String(favourite));
      star.setAttribute('aria-label', t('Favourite folder'));
      star.replaceChildren(h('span', { 'aria-hidden': 'true' }, favourite ? '★' : '☆'));
      const group = (label, paths) => paths.length ? h('div', { role: 'group', 'aria-label': label, class: 'folder-group' },
        h('span', { class: 'field-label small' }, label),
        ...paths.map((p) => h('button', {
          type: 'button',
          class: 'ghost chip mono',
          'aria-pressed': String(p === folder),
          onclick: () => setFolder(p),
        }, p))) : null;
      folderChoices.replaceChildren(...[group(t('Favourites'), favourites), group(t('Recent'), recent)].filter(Boolean));
    }

    // Where it opens: '' is a pane hosted by Collie, otherwise a tmux session (`t<i>:<name>`).
    const openIn = h('select', { id: 'new-where' }, whereOptions([]));
    openIn.setAttribute('aria-describedby', 'new-where-hint');
    const sessionNote = h('p', { class: 'note', hidden: true });
    async function loadSessions() {
      const on = machine.value;
      openIn.replaceChildren(...whereOptions([]));
      sessionNote.hidden = true;
      describe();
      if (!on) return;
      try {
        const list = await listSessions(on);
        if (gone || machine.value !== on) return;
        openIn.replaceChildren(...whereOptions(list.sessions || []));
      } catch (err) {
        if (gone || unpaired(err) || machine.value !== on) return;
        // An older member cannot open windows: it keeps the one choice, said once.
        sessionNote.textContent = err.code === 'capability missing'
          ? t('{machine} runs an older Collie: it opens new panes only, not tmux windows.', { machine: on })
          : refusal(t('Sessions not listed'), err);
        sessionNote.hidden = false;
      }
    }
    function describe() {
      const on = machine.value || t('this machine');
      const chosen = openIn.selectedOptions[0];
      shellWhere.textContent = openIn.value
        ? t('A new window of the {session} on {machine}', { session: chosen ? chosen.textContent : t('tmux session'), machine: on })
        : t('A new shell on {machine}, run by Collie', { machine: on });
    }
    openIn.addEventListener('change', describe);

    const shellRow = h('li', {}, shell, shellWhere);
    const startList = h('ul', { class: 'start-list' }, shellRow);
    const starterNote = h('p', { class: 'note', hidden: true });
    // The "Add starter" form of the machine shown (decision 0041), below the list.
    const adding = h('div');
    async function remove(row) {
      const on = machine.value;
      alert.textContent = '';
      try {
        if (await removeRow(on, row)) loadStarters();
      } catch (err) {
        if (gone || unpaired(err)) return;
        alert.textContent = refusal(t('Not removed'), err);
      }
    }
    async function loadStarters() {
      const on = machine.value;
      for (const row of startList.querySelectorAll('li.starter-row')) row.remove();
      clear(adding);
      starterNote.hidden = true;
      if (!on) return;
      try {
        const list = await listStarters(on);
        if (gone || machine.value !== on) return;
        shellRow.before(...starterRows(list.starters || [], start), ...addedRows(list.rows || [], start, remove));
        const form = addForm(on, list, loadStarters, () => gone || machine.value !== on);
        if (form) adding.append(form);
      } catch (err) {
        if (gone || unpaired(err) || machine.value !== on) return;
        // An older member without starters lists none; anything else is said once.
        if (err.code !== 'capability missing') {
          starterNote.textContent = refusal(t('Starters not listed'), err);
          starterNote.hidden = false;
        }
      }
    }

    function where() {
      // Another machine has another home and other sessions: back to the defaults.
      home = null;
      setFolder(null);
      closePicker();
      loadSessions();
      loadStarters();
    }
    machine.addEventListener('change', where);
    where();

    async function start(button, starter = null) {
      alert.textContent = '';
      const n = name.value;
      const problem = n === '' ? null : nameProblem(n);
      if (problem) {
        alert.textContent = problem;
        name.setAttribute('aria-invalid', 'true');
        name.focus();
        return;
      }
      name.removeAttribute('aria-invalid');
      if (!machine.value) {
        alert.textContent = t('No machine of the crew is online.');
        return;
      }
      if (starter?.row && openIn.value) {
        alert.textContent = t('A starter you added opens as a new Collie pane: choose “A new Collie pane” under Open in.');
        return;
      }
      let confirm = false;
      if (starter && starter.no_prompts && !starter.confirmed) {
        confirm = await confirmDialog(
          t('Start {name} without prompts?', { name: starter.name }),
          starter.agent
            ? t('{name} runs {agent} with its permission prompts turned off: it acts without asking you first. This phone is asked once for this starter.', { name: starter.name, agent: starter.agent })
            : t('{name} runs its program with its permission prompts turned off: it acts without asking you first. This phone is asked once for this starter.', { name: starter.name }),
          t('Start without prompts'));
        if (!confirm || gone) return;
      }
      button.disabled = true;
      progress.textContent = t('Opening on {machine}…', { machine: machine.value });
      try {
        const session = openIn.value || null;
        const info = starter?.row
          ? await createRow(machine.value, starter.id, n, confirm, folder)
          : starter
            ? await createStarter(machine.value, starter.name, n, confirm, folder, session)
            : await createShell(machine.value, n, folder, session);
        if (folder !== null) remember(machine.value, folder);
        if (gone) return;
        // Replace this page in the history: Back from the new pane leads to the list.
        location.replace(paneHref(info.machine || machine.value, info.pane));
      } catch (err) {
        if (gone || unpaired(err)) return;
        button.disabled = false;
        progress.textContent = '';
        alert.textContent = refusal(t('Not created'), err);
        if (err.code === 'insufficient tier') {
          await refreshTier();
          if (!gone && !canManage()) {
            const said = alert.textContent;
            notAllowed();
            body.prepend(h('p', { role: 'alert', class: 'alert' }, said));
          }
        }
      }
    }

    body.append(
      h('div', { class: 'field' },
        h('label', { for: 'new-machine' }, t('Machine')),
        machine),
      h('div', { class: 'field' },
        h('label', { for: 'new-name' }, t('Name')),
        name,
        h('p', { class: 'hint', id: 'new-name-hint' }, t('Optional, 1–64 characters. Without one the pane is called “pane <number>”.'))),
      h('div', { class: 'field' },
        h('label', { for: 'new-where' }, t('Open in')),
        openIn,
        h('p', { class: 'hint', id: 'new-where-hint' }, t('A pane run by Collie, or a new window of a tmux session on that machine.')),
        sessionNote),
      h('div', { class: 'field' },
        h('span', { class: 'field-label' }, t('Folder')),
        h('div', { class: 'row' }, folderShown, star, chooseBtn),
        folderChoices,
        picker),
      h('section', { class: 'start-section', 'aria-labelledby': 'start-title' },
        h('h2', { id: 'start-title' }, t('Start')),
        startList,
        starterNote,
        adding),
      alert,
      progress);
  }

  if (canManage()) load();
  else notAllowed();
  return () => {
    gone = true;
  };
}

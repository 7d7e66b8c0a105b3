// Files and Changes (SPEC §11; docs/guide/phone-app.md, "Files and Changes"): browse a
// workspace's folders on any machine of the crew, open a file a page at a time, and see a
// folder's uncommitted changes. Tier `files`: the Panes screen links here only for such devices,
// and the bridge refuses the routes to a `read` device anyway. Everything the bridge sends is
// masked there and set here as text — a file's lines, names and diffs never become HTML.

import { api, ApiError, authHeaders, failure, reachFetch } from '../client.js';
import { clear, h } from '../dom.js';
import { t } from '../i18n.js';
import { getDevice } from '../store.js';

/** Lines per page of an opened file (the bridge's largest page). */
export const PAGE = 500;

/** Whether this phone's tier may use Files, Changes and uploads. */
export function filesAllowed(device = getDevice()) {
  return device?.tier === 'files' || device?.tier === 'full';
}

/** The largest upload the bridge takes (10 MiB). */
export const MAX_UPLOAD = 10 * 1024 * 1024;

/**
 * Uploads `file` (a File) into the folder of `pane` on `machine`; resolves with the bridge's
 * `{id, path, name, size}`, rejects with an ApiError. Too large a file is refused here first.
 */
export async function uploadFile(machine, pane, file) {
  if (file.size > MAX_UPLOAD) throw new ApiError(413, t('file too large (at most 10 MiB)'));
  const q = new URLSearchParams({ machine, pane, name: file.name || 'upload' });
  let res;
  try {
    res = await reachFetch(`/api/blobs?${q}`, {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/octet-stream' }),
      body: file,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'bridge unreachable');
  }
  if (!res.ok) throw await failure(res);
  return res.json();
}

function filesPath(machine, what, query) {
  const q = new URLSearchParams(query).toString();
  return `/api/files/${encodeURIComponent(machine)}/${what}${q ? `?${q}` : ''}`;
}

/** The parent of an absolute path (`/` stays `/`). */
export function parentOf(path) {
  const trimmed = path.replace(/\/+$/, '');
  const i = trimmed.lastIndexOf('/');
  return i <= 0 ? '/' : trimmed.slice(0, i);
}

/** `rel` (a listing's entry, named from its folder) under `folder`. */
export function joinPath(folder, rel) {
  return `${folder.replace(/\/+$/, '')}/${rel}`;
}

/** The class of one line of a unified diff: `add`, `del`, `hunk` or `ctx`. */
export function lineClass(line) {
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'ctx';
}

/** The machine picker both views share: this bridge first, then the crew's members. */
function machinePicker(onPick) {
  const select = h('select', { id: 'files-machine', 'aria-label': t('Machine') },
    h('option', { value: 'local' }, t('this machine')));
  select.addEventListener('change', () => onPick(select.value));
  api('/api/machines').then((res) => {
    for (const m of res?.machines || []) {
      if (m.role === 'member' && m.online) select.append(h('option', { value: m.name }, m.name));
    }
  }).catch(() => {
    // offline: this machine only
  });
  return select;
}

function failed(err) {
  if (err.offline) return t('Cannot reach the bridge.');
  if (err.code === 'resource limit') return t('This file is too large to open.');
  return t('The bridge answered: {code}.', { code: err.code });
}

export function filesView(root) {
  let machine = 'local';
  let gone = false;
  const status = h('p', { class: 'note', role: 'status' });
  const where = h('p', { class: 'files-where mono' });
  const body = h('div', { class: 'files-body' });

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link' }, t('Panes')),
      h('h1', { tabindex: '-1' }, t('Files')),
      h('a', { href: '#/changes', class: 'bar-link' }, t('Changes'))),
    h('main', { class: 'page files' },
      machinePicker((m) => { machine = m; browse(''); }),
      where, status, body));

  async function browse(path) {
    status.textContent = t('Loading…');
    try {
      const res = await api(filesPath(machine, 'list', path ? { path } : {}));
      if (gone) return;
      status.textContent = '';
      showFolder(res);
    } catch (err) {
      if (!gone) status.textContent = failed(err);
    }
  }

  function showFolder(res) {
    where.textContent = res.path;
    clear(body);
    const entries = [...(res.entries || [])].sort((a, b) => (a.kind === 'dir') === (b.kind === 'dir')
      ? a.name.localeCompare(b.name) : a.kind === 'dir' ? -1 : 1);
    const list = h('ul', { class: 'file-list' });
    if (res.path !== '/') {
      list.append(h('li', {}, h('button', { type: 'button', class: 'file-entry dir', onclick: () => browse(parentOf(res.path)) }, '..')));
    }
    for (const e of entries) {
      const isDir = e.kind === 'dir';
      const at = joinPath(res.path, e.path); // entries are named from the listed folder
      list.append(h('li', {},
        h('button', {
          type: 'button',
          class: `file-entry ${isDir ? 'dir' : 'file'}`,
          onclick: () => (isDir ? browse(at) : open(at, 0)),
        }, isDir ? `${e.name}/` : e.name),
        !isDir && typeof e.size === 'number' ? h('span', { class: 'muted small' }, ` ${e.size} B`) : null));
    }
    if (!entries.length) list.append(h('li', { class: 'muted' }, t('This folder is empty.')));
    if (res.truncated) list.append(h('li', { class: 'muted' }, t('More entries than shown.')));
    body.append(list);
  }

  async function open(path, offset) {
    status.textContent = t('Opening…');
    try {
      const res = await api(filesPath(machine, 'read', { path, offset, length: PAGE }));
      if (gone) return;
      status.textContent = '';
      showFile(res);
    } catch (err) {
      if (!gone) status.textContent = failed(err);
    }
  }

  function showFile(res) {
    where.textContent = res.path;
    clear(body);
    const back = h('button', { type: 'button', class: 'file-entry dir', onclick: () => browse(parentOf(res.path)) }, t('.. (folder)'));
    body.append(back);
    if (res.binary) {
      body.append(h('p', { class: 'note file-binary' }, t('Binary file ({size} bytes): not shown.', { size: res.size })));
      return;
    }
    const total = res.total_lines ?? 0;
    const first = res.offset;
    const last = first + res.lines;
    if (res.truncated) {
      body.append(h('p', { class: 'muted small file-page' },
        t('Lines {first}–{last} of {total}', { first: total ? first + 1 : 0, last, total })));
    }
    body.append(h('pre', { class: 'file-text' }, res.content || ''));
    if (res.truncated) {
      const nav = h('div', { class: 'file-nav' });
      if (first > 0) nav.append(h('button', { type: 'button', onclick: () => open(res.path, Math.max(0, first - PAGE)) }, t('Previous page')));
      if (last < total) nav.append(h('button', { type: 'button', onclick: () => open(res.path, last) }, t('Next page')));
      body.append(nav);
    }
  }

  browse('');
  return () => { gone = true; };
}

/**
 * Changes: the `git_diff` of a folder (`path`; else the folder of `pane`, when opened from a
 * pane; else the workspace root) on a machine, one
 * collapsible section per file, its lines coloured by kind.
 */
export function changesView(root, { machine: startMachine = 'local', path = '', pane = '' } = {}) {
  let machine = startMachine;
  let gone = false;
  const status = h('p', { class: 'note', role: 'status' });
  const body = h('div', { class: 'changes-body' });
  const picker = machinePicker((m) => { machine = m; load(); });
  picker.value = machine;

  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link' }, t('Panes')),
      h('h1', { tabindex: '-1' }, t('Changes')),
      h('a', { href: '#/files', class: 'bar-link' }, t('Files'))),
    h('main', { class: 'page changes' }, picker, status, body));

  async function load() {
    status.textContent = t('Loading…');
    clear(body);
    try {
      const scope = path ? { path } : pane && machine === startMachine ? { pane } : {};
      const res = await api(filesPath(machine, 'changes', scope));
      if (gone) return;
      status.textContent = '';
      show(res);
    } catch (err) {
      if (gone) return;
      status.textContent = err.code === 'not a git repository'
        ? t('Not a git repository.')
        : failed(err);
    }
  }

  function show(res) {
    body.append(h('p', { class: 'files-where mono' }, res.scope ? `${res.root}/${res.scope}` : res.root));
    if (!res.files?.length) {
      body.append(h('p', { class: 'muted changes-none' }, t('No changes.')));
      return;
    }
    body.append(h('p', { class: 'small' }, t('{n} changed · +{added} −{removed}', { n: res.files.length, added: res.added, removed: res.removed })));
    for (const f of res.files) {
      const pre = h('pre', { class: 'diff' });
      if (f.content === 'binary') pre.append(h('span', { class: 'ctx' }, t('Binary file.')));
      else if (f.content && f.content !== 'text' && !f.diff) pre.append(h('span', { class: 'ctx' }, t('Too large to show.')));
      for (const line of (f.diff || '').split('\n')) {
        if (line === '') continue;
        pre.append(h('span', { class: `diff-line ${lineClass(line)}` }, line), '\n');
      }
      body.append(h('details', { class: 'diff-file', open: res.files.length <= 5 },
        h('summary', {},
          h('span', { class: 'mono' }, f.path),
          h('span', { class: 'muted small' }, ` ${f.status} +${f.added} −${f.removed}`)),
        pre));
    }
    if (res.truncated) body.append(h('p', { class: 'muted' }, t('More changes than shown.')));
  }

  load();
  return () => { gone = true; };
}

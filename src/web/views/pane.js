// Pane view (docs/guide/phone-app.md, "Pane view"): the live screen, history above it, the input
// bar and key bar for `full` devices. Pane text only ever becomes text nodes. A crew member's pane
// is read through the lead; when the member cannot be reached the view says so (and keeps retrying)
// instead of taking the pane for closed. Walky headers on the screen get a mark (a card, or "no
// log entry on this machine") laid over the grid by walky.js, never woven into the screen's text.
// Questions waiting for this pane (a permission dialog on its screen, a held permission) show
// above the screen as cards with their buttons (decide.js), asked for every 2 s. Devices of tier
// `files` and `full` get `Pane actions` in the header: a sheet with the pane's Changes and, for
// `full`, Rename and Close (manage.js). The input bar has a microphone when the bridge has a
// transcriber (client.js `dictate`): what it hears goes into the field, never sent by itself.

import { ScreenColours } from '../attrs.js';
import { api, dictate, KEYS, panePath } from '../client.js';
import { PaneChat } from '../chat.js';
import { decider } from '../decide.js';
import { clear, h, icon, PAPER_CLIP, when } from '../dom.js';
import { t } from '../i18n.js';
import * as kept from '../kept.js';
import { actionsSheet, canManage, closePane, confirmClose, refreshTier, refusal, renameDialog, unpaired } from '../manage.js';
import { hasMask, maskedHint, pasteWarningText } from '../masked.js';
import { applyEvent, earlierCount, HISTORY_MAX, scrolledOff } from '../screen.js';
import { openSentSheet } from '../sent.js';
import { reportLink } from '../report.js';
import { PaneStream, UNREACHABLE } from '../stream.js';
import { getDevice, getDraft, getToken, keepText, setDraft } from '../store.js';
import { HeaderMarks } from '../walky.js';
import { TermZoom } from '../zoom.js';
import { filesAllowed, uploadFile } from './files.js';

const SCROLLBACK_OPEN = 500;
const SCROLLBACK_STEP = 500;
const SCROLLBACK_MAX = 2000;
const SAVE_MS = 3000;
const CHECK_MS = 5000;
const PROMPTS_MS = 2000;

/** A key's name as said aloud (client.js `KEYS`): the arrows in the phone's language. */
const keyName = (label) => ({ Up: t('Up'), Down: t('Down'), Left: t('Left'), Right: t('Right') }[label] || label);

export function paneView(root, { machine, pane }) {
  let gone = false;
  let name = pane;
  let rows = [];
  let history = [];
  let sbRequested = SCROLLBACK_OPEN;
  let moreEarlier = false;
  let haveScrollback = false;
  let live = false;
  let keptShown = false;
  let asking = false;
  let dirty = false;
  let hiddenAt = 0;
  let rowNodes = [];
  const colours = new ScreenColours();
  let cols = 0;
  const timers = [];

  // ---- DOM ----
  const heading = h('h1', { tabindex: '-1', class: 'pane-title' }, pane);
  const status = h('p', { role: 'status', class: 'status' }, t('Connecting…'));
  const earlierBtn = h('button', { type: 'button', class: 'ghost', hidden: true, onclick: loadEarlier }, t('Load earlier'));
  const earlierNote = h('p', { class: 'muted small', hidden: true });
  // Named regions: a bare <pre> may not carry a name (axe-core, aria-prohibited-attr).
  const historyPre = h('pre', { class: 'history', role: 'region', 'aria-label': t('Scrollback') });
  const cursor = h('span', { class: 'cursor', 'aria-hidden': 'true', hidden: true });
  const screenPre = h('pre', { class: 'screen', role: 'region', 'aria-label': t('Screen') });
  // Walky marks sit in a layer over the screen, outside the <pre>, so its text stays the pane's.
  const marksLayer = h('div', { class: 'walky-layer' });
  const marks = new HeaderMarks(marksLayer, machine);
  const term = h('div', { class: 'term', tabindex: '0', 'aria-label': t('Terminal') },
    h('div', { class: 'earlier' }, earlierBtn, earlierNote), historyPre,
    h('div', { class: 'screen-box' }, screenPre, marksLayer));
  const zoom = new TermZoom(term, () => cols || 80);
  // Text size for every tier: reading a wide screen on a phone needs it most.
  const zoomBtn = h('button', {
    type: 'button',
    class: 'ghost bar-button pane-zoom',
    'aria-label': t('Text size'),
    title: t('Text size'),
    'aria-haspopup': 'dialog',
    onclick: () => zoom.openSheet(),
  }, h('span', { 'aria-hidden': 'true' }, 'Aa'));
  // The chat of a Claude Code or Codex pane (chat.js): a toggle in the header, shown only for a
  // pane with a chat, puts it in the terminal's place; the raw screen is one tap back.
  const chat = new PaneChat(machine, pane, {
    name: () => name,
    canKeep: () => !asking && !gone && !!getToken() && keepText(),
    onChange: (on) => {
      chatBtn.hidden = !on;
      if (!on) setMode(false);
    },
  });
  const chatBtn = h('button', {
    type: 'button', class: 'ghost bar-button pane-chat', hidden: true, 'aria-pressed': 'false',
    onclick: () => setMode(term.hidden === false),
  }, t('Chat'));
  function setMode(chatOn) {
    term.hidden = chatOn;
    chat.show(chatOn);
    chatBtn.setAttribute('aria-pressed', String(chatOn));
  }
  const note = h('p', { class: 'note pane-note', hidden: true });
  // Apart from `note`, which the kept copy and the pane's end use: this one comes and goes with
  // the member's link.
  const reach = h('p', { class: 'note pane-note', hidden: true },
    t('{machine} is unreachable: it is offline or not answering. Retrying…', { machine }));
  const controls = h('div', { class: 'controls' });
  // Cards waiting for this pane; a tap's outcome stays said after its card left.
  const prompts = h('section', { class: 'pane-prompts', hidden: true, 'aria-label': t('Waiting for your answer') });
  const promptNote = h('p', { class: 'note pane-note', role: 'status', hidden: true });
  const decide = decider(() => loadPrompts());
  // The pane's Changes (tier files, SPEC §11), rename and close (tier full, §3.2): one button
  // opens a sheet with them, so the header keeps room for the pane's name on a 360 px phone.
  const actionsBtn = h('button', {
    type: 'button',
    class: 'ghost bar-button pane-actions',
    'aria-label': t('Pane actions'),
    title: t('Pane actions'),
    'aria-haspopup': 'dialog',
    hidden: !filesAllowed() && !canManage(),
    onclick: openActions,
  }, h('span', { 'aria-hidden': 'true' }, '⋯'));
  const actionNote = h('p', { role: 'alert', class: 'alert pane-note' });
  let promptIds = [];
  // Attach for a `files` device (SPEC §11; decision 0036): it has no input bar, so the pane's bar
  // holds the control, and the path the file got is shown as text to copy. A `full` device's
  // input bar has its own, which puts the path into the input.
  const uploadNote = h('p', { role: 'status', class: 'note pane-note pane-upload', hidden: true });
  function barAttach() {
    if (!filesAllowed() || getDevice()?.tier === 'full') return null;
    const picker = h('input', {
      type: 'file', class: 'visually-hidden', id: 'pane-bar-attach', tabindex: '-1', 'aria-label': t('File to attach'),
    });
    picker.addEventListener('change', async () => {
      const file = picker.files?.[0];
      picker.value = '';
      if (!file) return;
      uploadNote.hidden = false;
      uploadNote.textContent = t('Uploading…');
      try {
        const up = await uploadFile(machine, pane, file);
        if (!gone) uploadNote.textContent = t('Uploaded to {path}', { path: up.path });
      } catch (err) {
        if (!gone) uploadNote.textContent = err.offline
          ? t('Not uploaded: cannot reach the bridge.')
          : t('Not uploaded: {code}.', { code: err.code });
      }
    });
    return [picker, h('button', {
      type: 'button',
      class: 'bar-link ghost pane-attach',
      'aria-label': t('Attach a file'),
      title: t('Attach a file to this pane\u2019s folder'),
      onclick: () => picker.click(),
    }, t('Attach'))];
  }
  const view = h('div', { class: 'pane-view' },
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      heading,
      status,
      chatBtn,
      zoomBtn,
      actionsBtn,
      barAttach()),
    note,
    uploadNote,
    actionNote,
    reach,
    prompts,
    promptNote,
    term,
    chat.el,
    controls);
  root.append(view);
  document.documentElement.classList.add('in-pane');

  // ---- cards for this pane ----
  async function loadPrompts() {
    let res;
    try {
      res = await api('/api/cards');
    } catch {
      return; // the pane's own status says when the bridge cannot be reached
    }
    if (gone) return;
    const mine = (res?.cards || []).filter((c) => c.machine === machine && c.pane === pane);
    for (const id of promptIds) {
      const said = mine.some((c) => c.id === id) ? null : decide.last(id);
      if (said) {
        promptNote.textContent = said;
        promptNote.hidden = false;
      }
    }
    promptIds = mine.map((c) => c.id);
    clear(prompts);
    prompts.hidden = mine.length === 0;
    for (const c of mine) prompts.append(decide.render(c, { where: false }));
  }

  // ---- scrolling ----
  function atBottom() {
    return term.scrollHeight - term.scrollTop - term.clientHeight < 24;
  }

  function toBottom() {
    term.scrollTop = term.scrollHeight;
  }

  /** Runs `change` (which alters the history or the screen) keeping the reader where they were. */
  function keepPlace(change) {
    const stick = atBottom();
    const before = term.scrollHeight;
    const historyEnd = historyPre.offsetTop + historyPre.offsetHeight;
    const viewTop = term.scrollTop;
    change();
    if (stick) toBottom();
    else if (historyEnd <= viewTop + 1) term.scrollTop = viewTop + (term.scrollHeight - before);
  }

  // ---- rendering ----
  function renderRows() {
    clear(screenPre);
    rowNodes = rows.map((line, i) => colours.node(i, line, i < rows.length - 1 ? '\n' : ''));
    screenPre.append(...rowNodes, cursor);
  }

  function setRow(i) {
    const node = colours.node(i, rows[i], i < rows.length - 1 ? '\n' : '');
    rowNodes[i].replaceWith(node);
    rowNodes[i] = node;
  }

  function placeCursor(c) {
    if (!c || !live || c.y >= rows.length) {
      cursor.hidden = true;
      return;
    }
    cursor.hidden = false;
    cursor.style.setProperty('--cx', String(c.x));
    cursor.style.setProperty('--cy', String(c.y));
  }

  function appendHistory(lines) {
    if (!lines.length) return;
    history.push(...lines);
    if (history.length > HISTORY_MAX) {
      history = history.slice(history.length - HISTORY_MAX);
      moreEarlier = false;
      earlierBtn.hidden = true;
      historyPre.textContent = history.length ? `${history.join('\n')}\n` : '';
      return;
    }
    historyPre.append(document.createTextNode(`${lines.join('\n')}\n`));
  }

  function setHistory(lines) {
    history = lines.slice(-HISTORY_MAX);
    historyPre.textContent = history.length ? `${history.join('\n')}\n` : '';
  }

  function showEarlierButton() {
    earlierBtn.hidden = !moreEarlier;
  }

  /** The one-time hint the first time this device sees masked text (seed 002). */
  let hintChecked = false;
  function hintMasked(lines) {
    if (hintChecked) return;
    const hint = maskedHint(lines);
    if (!hint) return;
    hintChecked = true;
    note.before(hint);
  }

  // ---- live data ----
  function leaveKept() {
    if (!keptShown) return;
    keptShown = false;
    note.hidden = true;
    setHistory([]);
  }

  function onEvent(ev) {
    leaveKept();
    live = true;
    keepPlace(() => {
      const prev = rows;
      const next = applyEvent(rows, ev);
      if (prev.length && next.rows.length === prev.length) appendHistory(scrolledOff(prev, next.rows));
      rows = next.rows;
      const carried = colours.fromEvent(ev, rows.length, next.all);
      if (Number.isInteger(ev.cols) && ev.cols !== cols) {
        cols = ev.cols;
        zoom.apply();
      }
      if (next.all || rowNodes.length !== rows.length) renderRows();
      else new Set([...next.changed, ...carried]).forEach(setRow);
      placeCursor(ev.cursor);
      marks.update(rows, cols);
    });
    hintMasked(rows);
    dirty = true;
    renderControls();
    if (!haveScrollback) loadScrollback();
  }

  async function loadScrollback() {
    haveScrollback = true;
    try {
      const snap = await api(`${panePath(machine, pane)}?scrollback=${SCROLLBACK_OPEN}`);
      if (gone) return;
      setTitle(snap.name);
      const sb = snap.scrollback || [];
      keepPlace(() => {
        leaveKept();
        setHistory(sb.concat(history));
        if (!rows.length && (snap.lines || []).length) {
          rows = snap.lines.slice();
          colours.fromSnapshot(snap);
          if (Number.isInteger(snap.cols)) {
            cols = snap.cols;
            zoom.apply();
          }
          renderRows();
          marks.update(rows, cols);
        }
      });
      moreEarlier = sb.length >= SCROLLBACK_OPEN;
      showEarlierButton();
      if (!live) toBottom();
    } catch (err) {
      haveScrollback = false;
      if (err.offline || err.code === UNREACHABLE) showKept(!err.offline);
      else if (err.status === 404) ended(t('This pane no longer exists.'));
    }
  }

  async function loadEarlier() {
    if (sbRequested >= SCROLLBACK_MAX) return;
    const n = Math.min(SCROLLBACK_MAX, sbRequested + SCROLLBACK_STEP);
    earlierBtn.disabled = true;
    try {
      const snap = await api(`${panePath(machine, pane)}?scrollback=${n}`);
      if (gone) return;
      sbRequested = n;
      const sb = snap.scrollback || [];
      const count = earlierCount(history, sb);
      if (count > 0) {
        const before = term.scrollHeight;
        const top = term.scrollTop;
        history = sb.slice(0, count).concat(history);
        historyPre.prepend(document.createTextNode(`${sb.slice(0, count).join('\n')}\n`));
        term.scrollTop = top + (term.scrollHeight - before);
      }
      moreEarlier = count > 0 && sb.length >= n && n < SCROLLBACK_MAX;
      if (!moreEarlier) {
        earlierNote.hidden = false;
        earlierNote.textContent = count > 0 ? t('This is as far back as the phone loads.') : t('No earlier lines.');
      }
    } catch (err) {
      earlierNote.hidden = false;
      earlierNote.textContent = err.offline ? t('Cannot reach the bridge.') : t('Could not load: {code}', { code: err.code });
    } finally {
      earlierBtn.disabled = false;
      showEarlierButton();
    }
  }

  function setTitle(n) {
    if (n && n !== name) {
      name = n;
      heading.textContent = n;
      document.title = `${n} · Collie`;
    }
  }

  function ended(text) {
    live = false;
    reach.hidden = true;
    cursor.hidden = true;
    status.textContent = t('Ended');
    note.hidden = false;
    note.textContent = text;
    renderControls();
  }

  // ---- the kept copy ----
  /** `unreachable`: the bridge is fine but the pane's machine (a crew member) is not. */
  async function showKept(unreachable = false) {
    if (live || keptShown || !keepText()) return;
    chat.showKept();
    const rec = await kept.load(machine, pane);
    if (!rec || live || gone) return;
    keptShown = true;
    reach.hidden = true; // the kept note says it
    setTitle(rec.name);
    rows = [];
    rowNodes = [];
    clear(screenPre);
    marks.update(rows, cols);
    setHistory(rec.lines || []);
    note.hidden = false;
    const from = when(new Date(rec.saved_at).toISOString());
    note.textContent = unreachable
      ? t('Kept copy from {when}. {machine} cannot be reached; this text is only shown, nothing here can send keys.',
        { when: from, machine })
      : t('Kept copy from {when}. The bridge cannot be reached; this text is only shown, nothing here can send keys.',
        { when: from });
    status.textContent = t('Kept copy');
    toBottom();
  }

  async function saveKept() {
    if (!dirty || !live || asking || gone || !getToken() || !keepText()) return;
    dirty = false;
    try {
      await kept.save(machine, pane, name, history.concat(rows));
    } catch {
      // storage full or unavailable: keeping is best effort
    }
  }

  // ---- the pane's state from the list (name, alive, asking_password) ----
  async function check() {
    try {
      const { panes } = await api('/api/panes');
      if (gone) return;
      const me = (panes || []).find((p) => p.machine === machine && p.pane === pane)
        || (machine === 'local' ? (panes || []).find((p) => p.pane === pane) : null);
      if (!me) return;
      setTitle(me.name);
      asking = !!me.asking_password;
      if (asking) kept.drop(machine, pane);
      if (!me.alive && live) {
        note.hidden = false;
        note.textContent = t('The program in this pane has exited.');
      }
    } catch {
      // the stream reports connectivity
    }
  }

  // ---- rename and close (tier full) ----
  async function openActions() {
    actionNote.textContent = '';
    const action = await actionsSheet(name, {
      changes: filesAllowed() ? `#/changes/${encodeURIComponent(machine)}/${encodeURIComponent(pane)}` : null,
      manage: canManage(),
    });
    if (gone || !action || action === 'changes') return;
    if (action === 'rename') {
      const renamed = await renameDialog(machine, pane, name, recheckTier);
      if (renamed !== null && !gone) setTitle(renamed);
      return;
    }
    if (!(await confirmClose(name, machine)) || gone) return;
    try {
      await closePane(machine, pane);
      if (!gone) location.hash = '#/';
    } catch (err) {
      if (gone || unpaired(err)) return;
      actionNote.textContent = refusal(t('Not closed'), err);
      if (err.code === 'insufficient tier') recheckTier();
    }
  }

  // ---- input (tier full) ----
  function canType() {
    return getDevice()?.tier === 'full' && live && !keptShown;
  }

  let field = null;
  let composing = false;
  let sendAfterComposition = false;
  const sendError = h('p', { role: 'alert', class: 'alert small' });
  const pasteWarning = h('p', { role: 'status', class: 'note small paste-warning', hidden: true }, pasteWarningText());
  function warnMasked() {
    pasteWarning.hidden = !field || !hasMask(field.value);
  }

  function saveDraft(text) {
    if (!gone) setDraft(machine, pane, text);
  }

  async function post(body) {
    sendError.textContent = '';
    try {
      await api(panePath(machine, pane, '/input'), { method: 'POST', body });
      return true;
    } catch (err) {
      if (err.status === 403 && err.code !== 'insufficient tier') return false; // unpaired: app.js
      sendError.textContent = err.offline
        ? t('Not sent: cannot reach the bridge.')
        : t('Not sent: {code}.', { code: err.code });
      sendError.append(' ', reportLink(err.offline ? 'cannot reach the bridge' : `${err.status} ${err.code}`));
      if (err.code === 'insufficient tier') recheckTier();
      return false;
    }
  }

  async function send() {
    if (!field || composing) return;
    const text = field.value;
    field.value = '';
    saveDraft('');
    warnMasked();
    const ok = await post(text ? { text, keys: ['Enter'] } : { keys: ['Enter'] });
    if (!ok && !gone && getToken() && field && !field.value) {
      field.value = text;
      saveDraft(text);
      warnMasked();
    }
  }

  function sendSoon() {
    if (composing) {
      // Let the keyboard commit what it is composing first; the send follows compositionend.
      sendAfterComposition = true;
      field.blur();
      setTimeout(() => {
        if (sendAfterComposition) {
          sendAfterComposition = false;
          composing = false;
          send();
        }
      }, 400);
      return;
    }
    send();
  }

  function buildControls() {
    field = h('input', {
      id: 'pane-input',
      type: 'text',
      class: 'type',
      value: getDraft(machine, pane),
      autocomplete: 'off',
      autocorrect: 'off',
      autocapitalize: 'off',
      spellcheck: false,
      enterkeyhint: 'send',
      placeholder: t('Type, then Send'),
    });
    pasteWarning.hidden = !hasMask(field.value);
    field.addEventListener('compositionstart', () => { composing = true; });
    field.addEventListener('compositionend', () => {
      composing = false;
      saveDraft(field.value);
      if (sendAfterComposition) {
        sendAfterComposition = false;
        send().then(() => field?.focus({ preventScroll: true }));
      }
    });
    field.addEventListener('input', (e) => {
      warnMasked();
      if (!e.isComposing && !composing) saveDraft(field.value);
    });
    field.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || e.shiftKey || e.altKey) return;
      if (e.isComposing || composing || e.keyCode === 229) return; // the IME's own Enter
      e.preventDefault();
      send();
    });
    const keep = (e) => e.preventDefault(); // keep the keyboard (and any composition) open
    const sendBtn = h('button', {
      type: 'button',
      class: 'primary send',
      onmousedown: keep,
      onclick: sendSoon,
    }, t('Send'));
    const keyBar = h('div', { class: 'keys', role: 'group', 'aria-label': t('Keys') },
      KEYS.map(([label, key, glyph]) => h('button', {
        type: 'button',
        class: 'key',
        'aria-label': keyName(label),
        title: keyName(label),
        onmousedown: keep,
        onclick: () => post({ keys: [key] }),
      }, h('span', { 'aria-hidden': 'true' }, glyph))));
    // The Sent sheet: this machine's kept lines; a tap puts one in the field (never sends it).
    const sentBtn = h('button', {
      type: 'button',
      class: 'ghost sent-open',
      onclick: () => openSentSheet(machine, (line) => {
        if (!field) return;
        field.value = line;
        saveDraft(line);
        warnMasked();
        field.focus({ preventScroll: true });
      }),
    }, t('Sent'));
    // Attach (tier files, SPEC §11): the file goes into the pane's folder, and its path is put
    // into the input — not sent: the person sends it.
    let attach = null;
    if (filesAllowed()) {
      const picker = h('input', {
        type: 'file', class: 'visually-hidden', id: 'pane-attach', tabindex: '-1', 'aria-label': t('File to attach'),
      });
      picker.addEventListener('change', async () => {
        const file = picker.files?.[0];
        picker.value = '';
        if (!file) return;
        sendError.textContent = t('Uploading…');
        try {
          const up = await uploadFile(machine, pane, file);
          if (gone || !field) return;
          sendError.textContent = '';
          const sep = field.value && !field.value.endsWith(' ') ? ' ' : '';
          field.value = `${field.value}${sep}${up.path}`;
          saveDraft(field.value);
          field.focus({ preventScroll: true });
        } catch (err) {
          if (!gone) {
            sendError.textContent = err.offline
              ? t('Not uploaded: cannot reach the bridge.')
              : t('Not uploaded: {code}.', { code: err.code });
          }
        }
      });
      attach = [picker, h('button', {
        type: 'button',
        class: 'attach',
        'aria-label': t('Attach a file'),
        title: t('Attach a file'),
        onclick: () => picker.click(),
      }, icon(PAPER_CLIP))];
    }
    dictate(machine, field);
    return [
      h('div', { class: 'input-row' },
        h('label', { for: 'pane-input', class: 'visually-hidden' }, t('Type to pane')),
        attach,
        field,
        sentBtn,
        sendBtn),
      pasteWarning,
      sendError,
      keyBar,
    ];
  }

  let controlsShown = false;
  function renderControls() {
    const want = canType();
    if (want === controlsShown) return;
    controlsShown = want;
    const stick = atBottom();
    clear(controls);
    field = null;
    if (want) controls.append(...buildControls());
    if (stick) toBottom();
  }

  /** Asks the bridge for this phone's tier again, and shows the controls it allows. */
  async function recheckTier() {
    const tier = await refreshTier();
    if (tier && !gone) {
      renderControls();
      actionsBtn.hidden = !filesAllowed() && !canManage();
    }
  }

  // ---- the stream ----
  const stream = new PaneStream(panePath(machine, pane, '/stream'), {
    event: onEvent,
    state(s) {
      reach.hidden = s !== 'unreachable' || keptShown;
      if (s === 'live') status.textContent = t('Live');
      else if (s === 'reconnecting' || s === 'unreachable') {
        status.textContent = s === 'unreachable' ? t('Unreachable') : t('Reconnecting…');
        if (!live && !keptShown) showKept(s === 'unreachable');
      } else if (!keptShown) status.textContent = t('Connecting…');
      status.dataset.state = s;
    },
    gone(code) {
      ended(code === 'pane closed' ? t('This pane was closed.') : t('This pane no longer exists.'));
    },
  });

  function onVisibility() {
    if (document.visibilityState === 'hidden') {
      hiddenAt = Date.now();
      saveKept();
    } else if (Date.now() - hiddenAt > 1500 || status.dataset.state !== 'live') {
      stream.kick();
      check();
      loadPrompts();
      chat.poll();
    }
  }

  function onOnline() {
    stream.kick();
  }

  document.title = `${pane} · Collie`;
  document.addEventListener('visibilitychange', onVisibility);
  window.addEventListener('online', onOnline);
  window.addEventListener('pagehide', saveKept);
  // The prompts' poll (and the chat's) waits while the app is not shown (a locked phone, another
  // tab): it would spend the phone's battery and data on cards nobody sees; coming back asks at
  // once (onVisibility). `check` goes on: the stream still arrives and is kept, and a pane that
  // starts asking for a password must drop its kept copy then, not when the phone is looked at.
  timers.push(setInterval(saveKept, SAVE_MS), setInterval(check, CHECK_MS),
    setInterval(() => document.hidden || loadPrompts(), PROMPTS_MS));
  stream.start();
  chat.start();
  loadPrompts();
  loadScrollback();
  check();
  recheckTier();

  /** `forgetting`: the pairing is being forgotten, so nothing may be written any more. */
  return (forgetting = false) => {
    if (!forgetting) saveKept();
    gone = true;
    stream.stop();
    chat.stop();
    marks.stop();
    zoom.stop();
    timers.forEach(clearInterval);
    document.removeEventListener('visibilitychange', onVisibility);
    window.removeEventListener('online', onOnline);
    window.removeEventListener('pagehide', saveKept);
    document.documentElement.classList.remove('in-pane');
    document.title = 'Collie';
  };
}

// The chat view of a Claude Code or Codex pane (SPEC §3.3; decision 0045): the agent's turns as
// the bridge read them from the agent's own transcript, masked. Prose is markdown shown as text
// (markdown.js: every character in a text node), tool calls and results are code blocks; nothing
// here ever parses markup. New turns are followed by polling with the answer's cursor every two
// seconds while the pane is open and shown; a pane without an agent answers `agent: null` and shows no toggle.

import { api, panePath } from './client.js';
import { clear, h, when } from './dom.js';
import { t } from './i18n.js';
import * as kept from './kept.js';
import { markdown } from './markdown.js';

export const POLL_MS = 2000;
// The most turns shown at once (the bridge sends at most 200 per answer).
const SHOWN_MAX = 400;

const who = (role) => ({ user: t('You'), assistant: t('Agent'), tool: t('Tool') }[role]);

/** One turn as elements: a labelled article whose text is set as text. */
export function turnView(turn) {
  const label = turn.kind === 'tool_call' ? t('Tool call')
    : turn.kind === 'tool_result' ? t('Tool result') : (who(turn.role) || t('Turn'));
  const body = turn.kind === 'text'
    ? h('div', { class: 'chat-text' }, markdown(turn.text))
    : h('pre', { class: 'md-code chat-code' }, turn.text);
  return h('article', { class: `chat-turn chat-${turn.role} chat-${turn.kind}`, 'data-id': turn.id },
    h('p', { class: 'chat-who muted small' }, label, turn.at ? ` · ${when(turn.at)}` : ''),
    body);
}

/**
 * The chat of one pane. `onChange(available)` is told when the pane gains or loses a chat (the
 * toggle shows only then). `canKeep()` says whether turns may be kept on this phone now.
 */
export class PaneChat {
  constructor(machine, pane, { onChange, canKeep, name }) {
    this.machine = machine;
    this.pane = pane;
    this.onChange = onChange;
    this.canKeep = canKeep;
    this.name = name;
    this.available = false;
    this.session = null;
    this.cursor = '';
    this.turns = [];
    this.timer = null;
    this.stopped = false;
    this.busy = false;
    this.list = h('div', { class: 'chat-list' });
    this.empty = h('p', { class: 'muted chat-empty' }, t('No turns yet.'));
    this.el = h('section', { class: 'chat', role: 'region', 'aria-label': t('Chat'), tabindex: '0', hidden: true },
      this.empty, this.list);
  }

  start() {
    this.poll();
    // Not while the app is hidden; the pane view asks again when it is shown.
    this.timer = setInterval(() => document.hidden || this.poll(), POLL_MS);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.timer);
  }

  show(on) {
    this.el.hidden = !on;
    if (on) this.toBottom();
  }

  atBottom() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
  }

  toBottom() {
    this.el.scrollTop = this.el.scrollHeight;
  }

  setAvailable(on) {
    if (on === this.available) return;
    this.available = on;
    this.onChange(on);
  }

  async poll() {
    if (this.busy || this.stopped) return;
    this.busy = true;
    try {
      const q = this.cursor ? `?after=${encodeURIComponent(this.cursor)}` : '';
      const res = await api(panePath(this.machine, this.pane, `/chat${q}`));
      if (this.stopped) return;
      // No agent (any more): no toggle; what was shown stays until an agent's session replaces it.
      if (!res.agent) {
        this.setAvailable(false);
        return;
      }
      if (res.session !== this.session) {
        this.session = res.session;
        this.turns = [];
        clear(this.list);
      }
      this.cursor = res.cursor || '';
      this.add(res.turns || []);
      this.setAvailable(true);
    } catch {
      // Offline, restarting, a pane gone: what is shown stays; the pane view says the rest.
    } finally {
      this.busy = false;
    }
  }

  add(turns) {
    const follow = this.atBottom();
    const seen = new Set(this.turns.map((turn) => turn.id));
    const fresh = turns.filter((turn) => !seen.has(turn.id));
    if (fresh.length) {
      this.turns = this.turns.concat(fresh).slice(-SHOWN_MAX);
      this.list.append(...fresh.map(turnView));
      while (this.list.children.length > SHOWN_MAX) this.list.firstChild.remove();
      this.save();
    }
    this.empty.hidden = this.turns.length > 0;
    if (follow && !this.el.hidden) this.toBottom();
  }

  async save() {
    if (!this.canKeep()) return;
    try {
      await kept.saveChat(this.machine, this.pane, this.name(), this.turns);
    } catch {
      // storage full or unavailable: keeping is best effort
    }
  }

  /** Shows kept turns (the bridge cannot be reached); true when there were some. */
  async showKept() {
    if (this.turns.length) return true;
    const rec = await kept.load(this.machine, this.pane);
    if (!rec?.turns?.length || this.stopped) return false;
    this.turns = rec.turns;
    clear(this.list);
    this.list.append(...rec.turns.map(turnView));
    this.empty.hidden = true;
    this.setAvailable(true);
    return true;
  }
}

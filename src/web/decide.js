// One card drawn with its answer buttons, and the tap that answers it (SPEC §10.1): shared by the
// Cards view and the pane view's screen-prompt cards. Everything a card says becomes text nodes.
// "Always allow" takes a second tap; what the last tap got is said under the card. A durable
// question whose title or reason the sanitizer changed says `Text shortened` (SPEC §10.3); a held
// permission says when it holds hidden characters, masked text or was cut (§10.1); and the
// conversation view draws a conversation's open questions with this too.

import { api } from './client.js';
import { h } from './dom.js';
import { conversationHref } from './durable.js';
import { t } from './i18n.js';
import { getDevice } from './store.js';

/** One body item, as text: never parsed as markup. */
function item(it) {
  if (it.kind === 'code' || it.kind === 'diff') return h('pre', { class: `card-${it.kind}` }, it.text);
  if (it.kind === 'link') return h('p', { class: 'card-link' }, it.url);
  return h('p', {}, it.text);
}

/**
 * What the bridge says about how a card's text is shown (SPEC §10.1): characters made visible as
 * ⟨…⟩ escapes, secrets masked, a held permission cut at the card's limit (then only Deny is
 * offered), or a durable question's text shortened by its sanitizer.
 */
function notes(card) {
  const said = [];
  if (card.not_shown > 0) said.push(t('Shortened: {n} bytes not shown \u2014 only Deny is offered', { n: card.not_shown }));
  else if (card.shortened) said.push(t('Text shortened'));
  if (card.hidden_characters) said.push(t('Holds hidden characters, shown as \u27e8\u2026\u27e9'));
  if (card.masked) said.push(t('Secrets masked (\u2022)'));
  return said.map((s) => h('p', { class: 'shortened' }, s));
}

/** What a refused tap says. */
function refusal(err) {
  if (err.status === 410) return t('Already answered elsewhere, or closed.');
  if (err.status === 409 && err.code === 'card changed') return t('This card changed: look again before you tap.');
  if (err.status === 409) return t('{code}. Nothing was typed.', { code: err.code });
  return t('Not sent: {code}.', { code: err.code });
}

/**
 * Draws cards and sends taps; `changed` runs after every tap (to reload what is shown). Keeps,
 * per card, the confirm token of a first "Always allow" tap and what the last tap got.
 */
export function decider(changed) {
  const confirming = new Map();
  const said = new Map();

  async function tap(card, option) {
    const body = { option: option.id, shown: card.shown, machine: card.machine };
    const token = confirming.get(card.id);
    if (option.id === 'always' && token) body.confirm = token;
    try {
      const res = await api(`/api/cards/${encodeURIComponent(card.id)}/answer`, { method: 'POST', body });
      if (res && res.confirm) {
        confirming.set(card.id, res.confirm);
        said.set(card.id, t('Tap \u201cAlways allow\u201d again to confirm.'));
      } else {
        confirming.delete(card.id);
        said.set(card.id, t('{label}: sent.', { label: option.label }));
      }
    } catch (err) {
      confirming.delete(card.id);
      said.set(card.id, refusal(err));
    }
    await changed();
  }

  /** The card as an <article>; `where` adds the pane's name and machine. */
  function render(card, { where = true } = {}) {
    const place = !where ? ''
      : card.pane_name && card.machine ? t('{name} on {machine}', { name: card.pane_name, machine: card.machine })
        : card.pane_name || card.machine || '';
    // Only a `full` device answers: a `read` one sees what is offered, as text.
    const buttons = getDevice()?.tier !== 'full'
      ? h('p', { class: 'muted small' }, t('Answers: {options} (this device only watches)', { options: card.options.map((o) => o.label).join(' \u00b7 ') }))
      : card.options.map((o) => h('button', {
        type: 'button',
        class: o.id === 'deny' ? 'ghost' : 'primary',
        onclick: () => tap(card, o),
      }, o.id === 'always' && confirming.has(card.id) ? t('Confirm always allow') : o.label));
    return h('article', { class: 'card decision', 'data-card': card.id },
      h('h2', {}, card.title),
      notes(card),
      // Who asks, from the bridge — never from the question's own words, which a durable agent
      // could make read like any other card's.
      card.source?.startsWith('durable:')
        ? h('p', { class: 'muted small asker' }, t('Asked by the durable agent {name}', { name: card.source.slice(8) }))
        : null,
      place ? h('p', { class: 'muted small' }, place) : null,
      where && card.conversation && card.source?.startsWith('durable:')
        ? h('p', { class: 'small' }, h('a', { href: conversationHref(card.machine, card.source.slice(8), card.conversation) }, t('Open the conversation')))
        : null,
      card.items.map(item),
      h('div', { class: 'actions' }, buttons),
      said.has(card.id) ? h('p', { class: 'note', role: 'status' }, said.get(card.id)) : null);
  }

  /** What the last tap on a card that is no longer shown got (then forgotten). */
  function last(id) {
    const s = said.get(id);
    said.delete(id);
    return s;
  }

  return { render, last };
}

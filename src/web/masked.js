// Masked text on the phone (seed 002, "Was die Maschine verlässt, wird maskiert"; SPEC §6): the
// bridge replaces a secret by as many `•` as it was wide. The first time a pane shows such dots
// this device gets a short hint, once; and when the input holds them (pasted from the screen) a
// warning under it says the pane will get the dots, not the secret.

import { h } from './dom.js';
import { t } from './i18n.js';

const HINT_SHOWN = 'collie.hint.masked';

/** The shortest run of mask dots taken for a masked secret (a lone `•` is a bullet). */
const MASKED = /\u2022{3,}/;

/** Whether `text` holds a masked secret's dots. */
export function hasMask(text) {
  return MASKED.test(text);
}

/**
 * A one-time hint for `lines` when they hold masked text and this device has not had it yet
 * (remembered in localStorage, so it goes with the pairing); otherwise null.
 */
export function maskedHint(lines) {
  if (!lines.some(hasMask)) return null;
  try {
    if (localStorage.getItem(HINT_SHOWN)) return null;
    localStorage.setItem(HINT_SHOWN, '1');
  } catch {
    // no storage: the hint may come again, which is harmless
  }
  const hint = h('p', { class: 'note pane-note masked-hint', role: 'note' },
    `${t('Dots like •••• stand for a secret Collie masked before it left the machine. To read it, read it on the machine itself.')} `);
  hint.append(h('button', { type: 'button', class: 'ghost small', onclick: () => hint.remove() }, t('Got it')));
  return hint;
}

/** The warning under the input while it holds mask dots. */
export const pasteWarningText = () => t('This text holds masked dots (••••): the pane gets the dots, not the secret they hide.');

// Pairing screen (docs/guide/phone-app.md, "Pairing").

import { api } from '../client.js';
import { around, h } from '../dom.js';
import { t } from '../i18n.js';
import { getDevice, getToken, setPairing } from '../store.js';

const LABEL = /^[A-Za-z0-9._-]{1,64}$/;

/** The words a person reads for an error of POST /api/pair. */
export function pairError(err) {
  switch (err.code) {
    case 'invalid or expired code':
      return t('That code is wrong or has expired. Run collie pair on the computer for a new one.');
    case 'too many attempts': {
      const n = Number.parseInt(err.retryAfter, 10);
      return t('Too many attempts. Wait {n} seconds and try again.', { n: Number.isFinite(n) ? n : 60 });
    }
    case 'label in use':
      return t('Another device already uses that name. Pick another.');
    case 'invalid label':
      return t('Use 1–64 letters, digits, dots, dashes or underscores.');
    case 'pairing unavailable':
      return t('The bridge cannot read its device list right now. Try again in a moment.');
    case 'identity required':
      return t('Identity required: the {gate} gate refused this phone. Sign in as a person the bridge trusts.', { gate: err.gate || 'identity' });
    default:
      if (err.offline) return t('Cannot reach the bridge. Check the connection and try again.');
      return t('Pairing failed ({code}). Try again.', { code: err.code });
  }
}

/**
 * Renders the pairing screen. `code` pre-fills the code (from `#pair=CODE`); `note` is a sentence
 * saying why the phone is here (unpaired, revoked).
 */
export function pairView(root, { code = '', note = '', done }) {
  const codeInput = h('input', {
    id: 'pair-code',
    name: 'code',
    type: 'text',
    value: code,
    required: true,
    autocomplete: 'one-time-code',
    autocapitalize: 'characters',
    autocorrect: 'off',
    spellcheck: false,
    inputmode: 'text',
    placeholder: 'ABCD-EFGH',
    maxlength: '64',
  });
  const labelInput = h('input', {
    id: 'pair-label',
    name: 'label',
    type: 'text',
    required: true,
    autocomplete: 'off',
    autocapitalize: 'none',
    autocorrect: 'off',
    spellcheck: false,
    placeholder: t('my-phone'),
    maxlength: '64',
  });
  const alert = h('p', { role: 'alert', class: 'alert' });
  const button = h('button', { type: 'submit', class: 'primary' }, t('Pair'));
  const paired = getToken() && getDevice();

  async function submit(e) {
    e.preventDefault();
    alert.textContent = '';
    const c = codeInput.value.trim();
    const label = labelInput.value.trim();
    if (!c) {
      alert.textContent = t('Enter the code that collie pair printed.');
      codeInput.focus();
      return;
    }
    if (!LABEL.test(label)) {
      alert.textContent = pairError({ code: 'invalid label' });
      labelInput.focus();
      return;
    }
    button.disabled = true;
    button.textContent = t('Pairing…');
    try {
      const res = await api('/api/pair', { method: 'POST', body: { code: c, label } });
      setPairing(res.token, res.device);
      done();
    } catch (err) {
      alert.textContent = pairError(err);
    } finally {
      button.disabled = false;
      button.textContent = t('Pair');
    }
  }

  root.append(
    h('header', { class: 'bar' }, h('h1', { tabindex: '-1' }, t('Pair this phone'))),
    h('main', { class: 'page' },
      note ? h('p', { class: 'note' }, note) : null,
      paired ? h('p', { class: 'note' },
        t('This phone is paired as {label}. Pairing again replaces that pairing.', { label: paired.label }),
        ' ',
        h('a', { href: '#/' }, t('Go to panes'))) : null,
      h('p', { class: 'muted' }, around(
        t('On the computer, run {command} and type the code it shows, or open its QR link.'),
        { command: h('code', null, 'collie pair') })),
      h('form', { class: 'stack', onsubmit: submit, novalidate: '' },
        h('label', { for: 'pair-code' }, t('Pairing code')),
        codeInput,
        h('label', { for: 'pair-label' }, t('Device name')),
        labelInput,
        h('p', { class: 'hint' }, t('Letters, digits, dots, dashes or underscores, e.g. anna-phone.')),
        alert,
        button)));
  (code ? labelInput : codeInput).focus({ preventScroll: true });
}

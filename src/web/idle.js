// The idle lock (seed 002, ADR 0007 there; docs/guide/phone-app.md, "Idle lock"): after a while
// without a touch or a key, a cover hides the screen an unattended phone shows, and a tap on
// `Show` takes it away. It hides; it does not protect: whoever holds the unlocked phone can tap
// it open, and the page under the cover keeps running (streams, the Cards count). The cover says
// so plainly. The delay is a setting on this phone (`collie.pref.idle`, minutes; `off`).

import { h } from './dom.js';
import { t } from './i18n.js';
import { getPref } from './store.js';

/** The choices Settings offers, in minutes; the first is the default. */
export const IDLE_CHOICES = ['5', '1', '15', 'off'];

const ACTIVITY = ['pointerdown', 'keydown', 'wheel', 'touchstart'];

/** Milliseconds of quiet before the cover comes, or null when the lock is off. */
export function idleDelay() {
  const pref = getPref('idle', IDLE_CHOICES[0]);
  const minutes = Number(pref);
  return pref !== 'off' && Number.isFinite(minutes) && minutes > 0 ? minutes * 60_000 : null;
}

/**
 * Watches for activity on the page and covers `app` after `idleDelay()` of quiet (also when the
 * phone comes back after being away that long). `paired()` says whether there is anything to
 * hide: the pairing screen is never covered. Returns `rearm`, to call when the setting changes.
 */
export function installIdleLock(app, paired) {
  let last = Date.now();
  let timer = null;
  let cover = null;

  // Its words are set when the cover comes: this runs before the phone's language is loaded.
  const show = h('button', { type: 'button', class: 'primary', onclick: unlock });

  function lock() {
    if (cover || !paired()) return;
    show.textContent = t('Show');
    cover = h('div', { class: 'idle-cover', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'idle-title' },
      h('div', { class: 'idle-box' },
        h('h2', { id: 'idle-title' }, t('Hidden while idle')),
        h('p', {}, t('Collie covered the screen because nobody touched it for a while.')),
        h('p', { class: 'muted small' },
          t('This is no security boundary: anyone holding this unlocked phone can show it again. Lock the phone itself to keep it closed.')),
        show));
    app.inert = true;
    document.body.append(cover);
    show.focus({ preventScroll: true });
  }

  function unlock() {
    if (!cover) return;
    cover.remove();
    cover = null;
    app.inert = false;
    activity();
  }

  function arm() {
    clearTimeout(timer);
    timer = null;
    const delay = idleDelay();
    if (delay === null || cover) return;
    timer = setTimeout(lock, Math.max(0, last + delay - Date.now()));
  }

  function activity() {
    if (cover) return;
    last = Date.now();
    arm();
  }

  for (const ev of ACTIVITY) window.addEventListener(ev, activity, { capture: true, passive: true });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') return;
    const delay = idleDelay();
    if (delay !== null && Date.now() - last >= delay) lock();
    else arm();
  });
  arm();
  return () => {
    if (idleDelay() === null) unlock();
    activity();
  };
}

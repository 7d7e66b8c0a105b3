// The pane view's text size (issue 15; docs/guide/phone-app.md, "Text size"): bigger or smaller
// type with buttons or a pinch, and "Fit width", which scales the terminal's font so that all its
// columns fit the phone's width — it reflows nothing: a 100-column screen stays 100 columns, only
// smaller. The choice is this phone's (`collie.pref.zoom`: a size in px, or `fit`), kept like the
// theme when the pairing is forgotten.

import { h, openModal } from './dom.js';
import { t } from './i18n.js';
import { getPref, setPref } from './store.js';

/** The terminal's font size in px: default and bounds (Fit width may go as small as it takes: a
 * 100-column screen on a 360 px phone needs about 5.5 px; a pinch makes it readable again). */
export const SIZE_DEFAULT = 13;
export const SIZE_MIN = 4;
export const SIZE_MAX = 28;

const clamp = (px) => Math.min(SIZE_MAX, Math.max(SIZE_MIN, px));

/**
 * The font size that shows `cols` columns in `width` px when one column is `ratio` × the font
 * size wide (a monospace font's advance), rounded down to a quarter pixel and kept in bounds.
 */
export function fitSize(width, cols, ratio) {
  if (!(width > 0) || !(cols > 0) || !(ratio > 0)) return SIZE_DEFAULT;
  return clamp(Math.floor((width / (cols * ratio)) * 4) / 4);
}

/** The saved choice: `{fit: true}` or `{fit: false, size}`. */
function saved() {
  const pref = getPref('zoom', '');
  if (pref === 'fit') return { fit: true, size: SIZE_DEFAULT };
  const size = Number(pref);
  return { fit: false, size: Number.isFinite(size) && size > 0 ? clamp(size) : SIZE_DEFAULT };
}

/**
 * Sizes the text of `term` (the pane's scrolling box; its <pre>s and mark layer take the size
 * from the `--term-size` property) for a screen of `cols()` columns.
 */
export class TermZoom {
  constructor(term, cols) {
    this.term = term;
    this.cols = cols;
    ({ fit: this.fit, size: this.size } = saved());
    this.pinch = null;
    this.onResize = () => this.apply();
    window.addEventListener('resize', this.onResize);
    term.addEventListener('touchstart', (e) => this.pinchStart(e), { passive: true });
    term.addEventListener('touchmove', (e) => this.pinchMove(e), { passive: false });
    term.addEventListener('touchend', () => this.pinchEnd());
    term.addEventListener('touchcancel', () => this.pinchEnd());
    this.apply();
  }

  /** The width of one column as a share of the font size, measured once in the terminal font. */
  ratio() {
    if (!this.measured) {
      const probe = h('pre', { class: 'zoom-probe', 'aria-hidden': 'true' }, '0'.repeat(100));
      this.term.append(probe);
      const px = parseFloat(getComputedStyle(probe).fontSize) || SIZE_DEFAULT;
      const w = probe.getBoundingClientRect().width;
      probe.remove();
      if (w > 0) this.measured = w / 100 / px;
    }
    return this.measured || 0.6;
  }

  /** The size in effect now. */
  current() {
    if (!this.fit) return this.size;
    const style = getComputedStyle(this.term);
    // The <pre>'s side padding (0.75rem each side) is not the screen's.
    const width = this.term.clientWidth - 2 * parseFloat(getComputedStyle(document.documentElement).fontSize) * 0.75
      - (parseFloat(style.paddingLeft) || 0) - (parseFloat(style.paddingRight) || 0);
    return fitSize(width, this.cols(), this.ratio());
  }

  apply() {
    this.term.style.setProperty('--term-size', `${this.current()}px`);
    this.term.classList.toggle('fit-width', this.fit);
  }

  save() {
    setPref('zoom', this.fit ? 'fit' : String(this.size));
    this.apply();
  }

  /** `step` px bigger (negative: smaller), leaving "Fit width" from the size it showed. */
  by(step) {
    this.size = clamp(Math.round(this.current() + step));
    this.fit = false;
    this.save();
  }

  setFit(on) {
    if (!on) this.size = clamp(Math.round(this.current()));
    this.fit = on;
    this.save();
  }

  reset() {
    this.fit = false;
    this.size = SIZE_DEFAULT;
    this.save();
  }

  pinchStart(e) {
    if (e.touches.length !== 2) return;
    this.pinch = { dist: distance(e.touches), size: this.current() };
  }

  pinchMove(e) {
    if (!this.pinch || e.touches.length !== 2) return;
    e.preventDefault(); // the page itself does not zoom: the terminal's text does
    const d = distance(e.touches);
    if (!(this.pinch.dist > 0)) return;
    this.fit = false;
    this.size = clamp(Math.round(this.pinch.size * (d / this.pinch.dist) * 4) / 4);
    this.apply();
  }

  pinchEnd() {
    if (!this.pinch) return;
    this.pinch = null;
    this.save();
  }

  /** The Text size sheet: Smaller, Larger, Fit width (a toggle) and Reset. */
  openSheet() {
    return new Promise((resolve) => {
      const size = h('p', { class: 'muted', role: 'status' });
      const fit = h('button', { type: 'button', class: 'wide', 'aria-pressed': String(this.fit) }, t('Fit width'));
      const show = () => {
        size.textContent = this.fit ? t('Fit width: {size} px', { size: this.current() }) : `${this.size} px`;
        fit.setAttribute('aria-pressed', String(this.fit));
      };
      fit.addEventListener('click', () => {
        this.setFit(!this.fit);
        show();
      });
      const step = (n) => () => {
        this.by(n);
        show();
      };
      const dialog = h('dialog', { 'aria-labelledby': 'zoom-title', class: 'dialog sheet' },
        h('p', { id: 'zoom-title', class: 'dialog-title' }, t('Text size')),
        size,
        h('div', { class: 'row' },
          h('button', { type: 'button', class: 'grow', onclick: step(-1) }, t('Smaller')),
          h('button', { type: 'button', class: 'grow', onclick: step(1) }, t('Larger'))),
        h('div', { class: 'sheet-actions' },
          fit,
          h('button', { type: 'button', class: 'wide', onclick: () => { this.reset(); show(); } }, t('Reset')),
          h('button', { type: 'button', class: 'wide ghost', onclick: () => close() }, t('Done'))));
      dialog.setAttribute('role', 'dialog');
      dialog.addEventListener('cancel', (e) => {
        e.preventDefault();
        close();
      });
      show();
      const close = openModal(dialog, resolve);
    });
  }

  stop() {
    window.removeEventListener('resize', this.onResize);
  }
}

function distance(touches) {
  const [a, b] = [touches[0], touches[1]];
  return Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY);
}

// The pane screen's colours and attributes (SPEC §5 "Colours", decision 0043). Snapshots carry
// `attrs` (per row a list of `[start_column, length, style]` runs) and `styles` (style number →
// `{fg, bg, bold, italic, underline, inverse}`); stream events carry the runs of the rows they
// carry and the styles new to the stream's table (all of it on a full event). A row is drawn as
// text nodes and `<span>`s whose text is set as text, never parsed as HTML. Colours 0–15 are the
// theme's palette (CSS variables `--ansi-0`…`--ansi-15` in style.css, one set per theme); 16–255
// are the xterm cube and greys; `#rrggbb` is used as is. Colours are set through the CSSOM
// (`el.style.color`), which the app's CSP allows (it forbids only style attributes and elements).

/** Columns a code point takes on a terminal: 0 for combining marks, 2 for wide (CJK, emoji). */
export function cellWidth(cp) {
  if (cp < 0x300) return 1;
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x1ab0 && cp <= 0x1aff) || (cp >= 0x1dc0 && cp <= 0x1dff)
    || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe00 && cp <= 0xfe0f)
    || (cp >= 0xfe20 && cp <= 0xfe2f)) return 0;
  if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3041 && cp <= 0x33ff)
    || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0xa000 && cp <= 0xa4cf)
    || (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f)
    || (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f)
    || (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd)) return 2;
  return 1;
}

/**
 * Cuts `text` at display columns: `[{text, style}]` pieces in order, `style` a run's style number
 * or -1 for the default. Runs out of order, overlapping or past the text are cut to what fits.
 */
export function pieces(text, runs) {
  const out = [];
  let col = 0;
  let cur = '';
  let curStyle = -1;
  let r = 0;
  const list = Array.isArray(runs) ? runs : [];
  for (const ch of text) {
    const w = cellWidth(ch.codePointAt(0));
    if (w === 0 && cur) {
      // A combining mark belongs to the character before it.
      cur += ch;
      continue;
    }
    while (r < list.length && col >= list[r][0] + list[r][1]) r++;
    const run = list[r];
    const style = run && col >= run[0] && col < run[0] + run[1] ? run[2] : -1;
    if (style !== curStyle && cur) {
      out.push({ text: cur, style: curStyle });
      cur = '';
    }
    curStyle = style;
    cur += ch;
    col += w;
  }
  if (cur) out.push({ text: cur, style: curStyle });
  return out;
}

/** A cheap first look for characters that may be two columns wide (checked exactly by `cellWidth`). */
const MAYBE_WIDE = /[\u1100-\uffff\u{1f300}-\u{3fffd}]/u;

/**
 * `text` as nodes in which every two-column character is a `span.wc` exactly two columns wide
 * (style.css): a CJK glyph or an emoji in the phone's fallback font is rarely 2ch wide, and
 * without this every column after it — the cursor, the colour runs, walky marks — would drift.
 * The characters stay text; only their box is sized.
 */
export function cells(text) {
  if (!MAYBE_WIDE.test(text)) return [document.createTextNode(text)];
  const out = [];
  let plain = '';
  let wide = null;
  const flush = () => {
    if (plain) out.push(document.createTextNode(plain));
    plain = '';
  };
  for (const ch of text) {
    const w = cellWidth(ch.codePointAt(0));
    if (w === 0 && wide) {
      wide.textContent += ch; // a combining mark stays with its wide character
      continue;
    }
    if (w === 2) {
      flush();
      wide = document.createElement('span');
      wide.className = 'wc';
      wide.textContent = ch;
      out.push(wide);
      continue;
    }
    wide = null;
    plain += ch;
  }
  flush();
  return out;
}

/** Colour `i` (16–255) of the xterm 256-colour table as `#rrggbb`. */
export function xterm256(i) {
  const hex = (n) => n.toString(16).padStart(2, '0');
  if (i >= 232) {
    const v = 8 + (i - 232) * 10;
    return `#${hex(v)}${hex(v)}${hex(v)}`;
  }
  const c = i - 16;
  const level = (n) => (n === 0 ? 0 : 55 + n * 40);
  return `#${hex(level(Math.floor(c / 36)))}${hex(level(Math.floor(c / 6) % 6))}${hex(level(c % 6))}`;
}

/** A style's colour as a CSS value, or null for the default (and anything malformed). */
export function cssColour(c) {
  if (Number.isInteger(c) && c >= 0 && c < 16) return `var(--ansi-${c})`;
  if (Number.isInteger(c) && c >= 16 && c < 256) return xterm256(c);
  if (typeof c === 'string' && /^#[0-9a-f]{6}$/i.test(c)) return c;
  return null;
}

/** The least contrast a coloured stretch keeps against its background (WCAG AA for text). */
export const MIN_CONTRAST = 4.5;

/** `#rrggbb` as `[r, g, b]`, or null. */
function rgb(hex) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || '');
  return m ? m.slice(1).map((h) => parseInt(h, 16)) : null;
}

/** WCAG's contrast ratio of two `[r, g, b]` colours (1 to 21). */
export function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

/** Which theme the page shows: the `Theme` setting and the system's preference. */
function themeKey() {
  return `${document.documentElement.dataset.theme || ''}/${matchMedia('(prefers-color-scheme: dark)').matches}`;
}

/** The theme's value of a CSS colour (`var(--…)` read from the page once per theme), as RGB. */
const themeValues = new Map();
function resolve(css) {
  const m = /^var\((--[a-z0-9-]+)\)$/.exec(css);
  if (!m) return rgb(css);
  const html = document.documentElement;
  const key = `${themeKey()}${m[1]}`;
  if (!themeValues.has(key)) themeValues.set(key, rgb(getComputedStyle(html).getPropertyValue(m[1]).trim()));
  return themeValues.get(key);
}

/**
 * `fg`, or `fg` darkened (on a light background) or lightened (on a dark one) just enough to keep
 * [`MIN_CONTRAST`] against `bg` (the theme's defaults where null): a program picks its colours for
 * its own terminal's palette, and a yellow on a theme's light blue, or a bright orange on a white
 * screen, would vanish. The hue stays, so the cue it carries does too (terminals call this a
 * minimum contrast ratio).
 */
export function readable(fg, bg) {
  const f = resolve(fg || 'var(--term-fg)');
  const b = resolve(bg || 'var(--term-bg)');
  if (!f || !b || contrast(f, b) >= MIN_CONTRAST) return fg;
  const to = contrast([0, 0, 0], b) >= contrast([255, 255, 255], b) ? 0 : 255;
  const hex = (c) => `#${c.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
  for (let t = 0.1; t < 1; t += 0.1) {
    const mixed = f.map((v) => v + (to - v) * t);
    if (contrast(mixed, b) >= MIN_CONTRAST) return hex(mixed);
  }
  return hex([to, to, to]);
}

/**
 * How style `s` (of the table) is drawn in the current theme: its colours, kept readable, and its
 * classes. Worked out once per style and theme (`ScreenColours.node` keeps it): the contrast
 * search is the costly part of drawing a screen of many colours.
 */
function look(s) {
  let fg = cssColour(s.fg);
  let bg = cssColour(s.bg);
  if (s.inverse) [fg, bg] = [bg || 'var(--term-bg)', fg || 'var(--term-fg)'];
  if (fg || bg) fg = readable(fg, bg);
  const classes = [s.bold && 'a-b', s.italic && 'a-i', s.underline && 'a-u'].filter(Boolean);
  return { fg, bg, classes };
}

/** Draws a style's `look` on `el`. */
function paint(el, { fg, bg, classes }) {
  if (fg) el.style.color = fg;
  if (bg) el.style.backgroundColor = bg;
  if (classes.length) el.classList.add(...classes);
}

/** The colours of the rows on screen: the stream's style table and each row's runs. */
export class ScreenColours {
  constructor() {
    this.styles = new Map();
    this.runs = [];
    // Style number → its look in theme `lookTheme`.
    this.looks = new Map();
    this.lookTheme = '';
  }

  /** Takes a snapshot's `attrs` and `styles` (its `lines` become the rows). */
  fromSnapshot(snap) {
    this.styles = new Map();
    this.merge(snap.styles);
    const attrs = Array.isArray(snap.attrs) ? snap.attrs : [];
    this.runs = (snap.lines || []).map((_, i) => attrs[i] || null);
  }

  /**
   * Takes a stream event's colours, with `n` rows on screen after it and `all` when every row is
   * redrawn (as `applyEvent` says). Returns the rows it carried, to be drawn again even where only
   * their colours changed.
   */
  fromEvent(ev, n, all) {
    if (ev.full || all) {
      this.styles = new Map();
      this.runs = new Array(n).fill(null);
    }
    this.merge(ev.styles);
    const attrs = ev.attrs || {};
    const carried = [];
    for (const k of Object.keys(ev.rows || {})) {
      const i = Number(k);
      if (!(i >= 0 && i < n)) continue;
      this.runs[i] = attrs[k] || null;
      carried.push(i);
    }
    return carried;
  }

  merge(styles) {
    if (this.styles.size === 0) this.looks.clear();
    for (const [k, v] of Object.entries(styles || {})) {
      if (!v || typeof v !== 'object') continue;
      this.styles.set(Number(k), v);
      this.looks.delete(Number(k));
    }
  }

  /**
   * Row `i` showing `text` (and `tail`, the newline): a text node, or a span of coloured pieces
   * and wide characters.
   */
  node(i, text, tail) {
    const runs = this.runs[i];
    if ((!runs || !runs.length) && !MAYBE_WIDE.test(text)) return document.createTextNode(text + tail);
    const row = document.createElement('span');
    const theme = themeKey();
    if (theme !== this.lookTheme) {
      this.looks.clear();
      this.lookTheme = theme;
    }
    for (const p of pieces(text, runs)) {
      const s = this.styles.get(p.style);
      if (!s) {
        row.append(...cells(p.text));
        continue;
      }
      let l = this.looks.get(p.style);
      if (!l) {
        l = look(s);
        this.looks.set(p.style, l);
      }
      const span = document.createElement('span');
      span.append(...cells(p.text));
      paint(span, l);
      row.append(span);
    }
    if (tail) row.append(document.createTextNode(tail));
    return row;
  }
}

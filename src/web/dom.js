// Tiny DOM helpers. Everything the app shows is built with createElement and text nodes, never
// parsed from markup, so pane text and names can never become HTML.

import { t } from './i18n.js';

/**
 * Creates an element. `attrs`: `class`, `on<event>` handlers, DOM properties for non-string values
 * (`checked`, `disabled`, `value`), attributes otherwise. Children are nodes or strings (text).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value' || typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v);
  }
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

/**
 * A line icon: path `d` on a 24 × 24 grid, stroked in the text's colour (style.css `.icon`) and
 * hidden from screen readers — the button it sits in carries the name. Drawn, not a font's
 * glyph: an emoji such as 📎 is a box on a phone without a colour emoji font.
 */
export function icon(d) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  svg.append(path);
  return svg;
}

/** A paper clip, for the attach buttons. */
export const PAPER_CLIP = 'M16 7v10a5 5 0 0 1-10 0V6a3.5 3.5 0 0 1 7 0v10a1.5 1.5 0 0 1-3 0V8';

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * A translated sentence with elements in it, as children for `h`: each `{name}` of `text` (the
 * result of `t`, its placeholders left in) is replaced by the node `nodes[name]`, so a language can
 * put the link or the code where its word order wants it.
 */
export function around(text, nodes) {
  return text.split(/(\{\w+\})/).map((part) => {
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    return name && Object.hasOwn(nodes, name) ? nodes[name] : part;
  }).filter((part) => part !== '');
}

/** Removes every child of `el`. */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago" for an RFC 3339 time (or null). */
export function ago(iso, now = Date.now()) {
  if (!iso) return t('no activity yet');
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return t('unknown');
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 5) return t('just now');
  if (s < 60) return t('{n} s ago', { n: s });
  if (s < 3600) return t('{n} min ago', { n: Math.floor(s / 60) });
  if (s < 86400) return t('{n} h ago', { n: Math.floor(s / 3600) });
  return t('{n} d ago', { n: Math.floor(s / 86400) });
}

/** A date for people: "12 Mar 2026, 14:05", or `never` for null. */
export function when(iso, never = t('never')) {
  if (!iso) return never;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

let dialogs = 0;

/**
 * Asks `question` in a modal dialog with `detail` below it; resolves true on `confirm` (the
 * danger button), false on Cancel or Escape. Text is set as text.
 */
/**
 * Shows `dialog` modally; returns the function that closes it once, removes it and resolves the
 * caller's promise with its value (a second call does nothing).
 */
export function openModal(dialog, resolve) {
  let done = false;
  document.body.append(dialog);
  dialog.showModal();
  return (value) => {
    if (done) return;
    done = true;
    dialog.close();
    dialog.remove();
    resolve(value);
  };
}

export function confirmDialog(question, detail, confirm) {
  return new Promise((resolve) => {
    const id = `dialog-title-${++dialogs}`;
    const dialog = h('dialog', { 'aria-labelledby': id, class: 'dialog' },
      h('p', { id, class: 'dialog-title' }, question),
      h('p', { class: 'muted' }, detail),
      h('div', { class: 'row end' },
        h('button', { type: 'button', class: 'ghost', onclick: () => close(false) }, t('Cancel')),
        h('button', { type: 'button', class: 'danger', onclick: () => close(true) }, confirm)));
    dialog.setAttribute('role', 'dialog');
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(false);
    });
    const close = openModal(dialog, resolve);
  });
}

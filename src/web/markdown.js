// A durable agent's markdown, shown as text (SPEC §10.3, decision 0028): headings, lists, fenced
// code, `code spans`, **strong** and *emphasis* become elements built one by one; every character
// of the agent's text lands in a text node, so `<b>` or `<img …>` stays the characters it is. A
// link opens only when its address is `https://` (`safeUrl`); any other link stays its own
// characters. Nothing here ever parses markup.

import { h } from './dom.js';

const INVISIBLE = /[\s\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/;

/**
 * The address as an `href` when it may be opened: `https://` with a host, no user name or
 * password, no whitespace, control or invisible character, at most 2,048 characters. Else null.
 */
export function safeUrl(raw) {
  if (typeof raw !== 'string' || raw.length > 2048 || !raw.startsWith('https://') || INVISIBLE.test(raw)) return null;
  let url;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || !url.hostname || url.username || url.password) return null;
  return url.href;
}

/** An anchor that opens `href` in a new tab, telling it nothing of this page. */
export function outLink(href, text) {
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, text);
}

// `code`, **strong**, [text](address), *emphasis*, _emphasis_ — the first to start wins.
const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\[[^\]\n]+\]\([^)\s]+\))|(\*[^*\s][^*\n]*\*)|(\b_[^_\n]+_\b)/g;

/** One line's inline marks, as nodes and strings (strings become text nodes). */
export function inline(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    const s = m[0];
    if (m[1]) out.push(h('code', {}, s.slice(1, -1)));
    else if (m[2]) out.push(h('strong', {}, s.slice(2, -2)));
    else if (m[3]) {
      const close = s.indexOf('](');
      const href = safeUrl(s.slice(close + 2, -1));
      out.push(href ? outLink(href, s.slice(1, close)) : s);
    } else out.push(h('em', {}, s.slice(1, -1)));
    at = m.index + s.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d{1,9}[.)]\s+(.*)$/;
const FENCE = /^\s*(```|~~~)/;

/** The blocks of a markdown text, as elements. */
export function markdown(text) {
  const lines = String(text).split('\n');
  const blocks = [];
  let para = [];
  let list = null;

  const endPara = () => {
    if (para.length) {
      const parts = [];
      para.forEach((l, i) => parts.push(i ? '\n' : '', ...inline(l)));
      blocks.push(h('p', {}, parts));
    }
    para = [];
  };
  const endList = () => {
    list = null;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      endPara();
      endList();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      blocks.push(h('pre', { class: 'md-code' }, body.join('\n')));
      continue;
    }
    const heading = HEADING.exec(line);
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    if (heading) {
      endPara();
      endList();
      blocks.push(h(`h${Math.min(heading[1].length + 2, 6)}`, { class: 'md-h' }, inline(heading[2])));
    } else if (bullet || numbered) {
      endPara();
      const tag = bullet ? 'ul' : 'ol';
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = h(tag, {});
        blocks.push(list);
      }
      list.append(h('li', {}, inline((bullet || numbered)[1])));
    } else if (!line.trim()) {
      endPara();
      endList();
    } else {
      endList();
      para.push(line);
    }
  }
  endPara();
  return blocks;
}

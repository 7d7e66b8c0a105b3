// The phone app's languages (decision 0081). English is the app's own language: every string a
// person sees (text, labels, placeholders, titles) is written in English where it is used and
// passed through `t`, and that English is its key. Another language is one JSON file in
// `src/web/lang/` — `{ "name": "Deutsch", "strings": { "<English>": "<translation>" } }` — which the
// bridge serves at `/lang/<code>.json` and lists at `/lang/index.json`; adding one needs no code.
// A string a language lacks is shown in English (a test fails on any missing one, see
// web-tests/languages.test.mjs), and `{name}` in a string is filled from `vars`.
//
// The language is the one chosen in Settings, else the first of the browser's languages the
// bridge has, else English. Its file is kept on the phone (a setting, so it survives unpairing):
// a start with a kept copy shows it at once and refreshes the copy in the background for the next
// start; only a phone's first start in a language waits for the file.

import { getPref, setPref } from './store.js';

const KEPT = 'language-kept';
let strings = {};
let current = 'en';

/** `english` in the phone's language, with `{name}` filled from `vars`. */
export function t(english, vars) {
  const s = Object.hasOwn(strings, english) ? strings[english] : english;
  return vars ? s.replace(/\{(\w+)\}/g, (m, k) => (Object.hasOwn(vars, k) ? String(vars[k]) : m)) : s;
}

/** The code of the language shown (`en`, `de`, …). */
export const language = () => current;

/** The languages the bridge has, `[{code, name}]`, English first; the kept list when unreachable. */
export async function languages() {
  try {
    const index = await fetchJson('/lang/index.json');
    if (Array.isArray(index)) return [{ code: 'en', name: 'English' }, ...index];
  } catch {
    // offline: what the phone saw last
  }
  return [{ code: 'en', name: 'English' }, ...(kept()?.index || [])];
}

/** The Settings choice: `auto` (the browser's) or a language code. */
export const choice = () => getPref('language', 'auto');

/**
 * Makes `pick` (`auto` or a code) the phone's language: kept in Settings, its file fetched and
 * kept. Resolves once the strings are in place (the caller renders again).
 */
export async function choose(pick) {
  setPref('language', pick === 'auto' ? null : pick);
  await start({ wait: true });
}

/**
 * Puts the language in place before the first screen: the kept copy when it matches, else (or
 * with `wait`) the bridge's file, at most `ms` waited for.
 */
export async function start({ wait = false, ms = 3000 } = {}) {
  const copy = kept();
  const fresh = refresh(copy);
  const use = (k) => {
    current = k?.code || 'en';
    strings = k?.strings || {};
    document.documentElement.lang = current;
  };
  if (copy && !wait && copy.choice === choice() && copy.browser === browser()) {
    use(copy);
    return;
  }
  // Nothing kept and the browser asks for English first: nothing to wait for.
  if (!copy && !wait && choice() === 'auto' && /^en\b/i.test(browser())) {
    use(null);
    return;
  }
  use(await Promise.race([fresh, new Promise((r) => setTimeout(() => r(copy), ms))]));
}

/** The browser's languages, as one string that says when they change. */
const browser = () => (navigator.languages || [navigator.language || 'en']).join(',');

function kept() {
  try {
    const k = JSON.parse(getPref(KEPT, 'null'));
    return k && typeof k.strings === 'object' ? k : null;
  } catch {
    return null;
  }
}

/** Fetches the index and the language's file, keeps them, and gives the new copy (or `copy`). */
async function refresh(copy) {
  try {
    const index = await fetchJson('/lang/index.json');
    const codes = new Set((Array.isArray(index) ? index : []).map((l) => l.code));
    const code = pickCode(choice(), codes);
    const file = code === 'en' ? { strings: {} } : await fetchJson(`/lang/${code}.json`);
    const next = { code, choice: choice(), browser: browser(), index, strings: file.strings || {} };
    setPref(KEPT, JSON.stringify(next));
    return next;
  } catch {
    return copy;
  }
}

/** The chosen code when the bridge has it; for `auto` the first browser language it has. */
function pickCode(pick, codes) {
  if (pick !== 'auto') return codes.has(pick) ? pick : 'en';
  for (const tag of browser().split(',')) {
    const base = tag.toLowerCase().split('-')[0];
    if (base === 'en') return 'en';
    if (codes.has(tag)) return tag;
    if (codes.has(base)) return base;
  }
  return 'en';
}

async function fetchJson(url) {
  const res = await fetch(url, { cache: 'no-cache' });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.json();
}

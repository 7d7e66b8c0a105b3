// The phone app's strings, as the language files must cover them (decision 0081): every `t('…')`
// in src/web/ (its English is its key), read from the source as written. Used by
// languages-keys.test.mjs, and on its own to list what a language lacks:
//
//   node web-tests/i18n-keys.mjs de                 # the English strings de.json lacks, as JSON
//   node web-tests/i18n-keys.mjs de views/pane.js   # … of those files only
//   node web-tests/i18n-keys.mjs                    # every string of the app

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'web');
export const LANG = path.join(WEB, 'lang');

/** A call of `t` (not a method, not part of a longer name) and what follows its parenthesis. */
const CALL = /(?<![\w$.])(?<!function\s+)t\(\s*/g;
/** A quoted string at the start of the rest of a call. */
const QUOTED = /^(['"])((?:\\.|(?!\1)[^\\\n])*)\1\s*[,)]/;

/** The scripts of the app, by path relative to src/web/. */
export async function scripts(dir = WEB, rel = '') {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const name = path.join(rel, e.name);
    if (e.isDirectory()) out.push(...await scripts(path.join(dir, e.name), name));
    else if (e.name.endsWith('.js')) out.push(name);
  }
  return out.sort();
}

/** A JS string literal's body, its escapes read as JS reads them. */
function unquote(body) {
  return JSON.parse(`"${body.replace(/\\'/g, "'").replace(/(?<!\\)"/g, '\\"')}"`);
}

/**
 * `{keys: Map<English, [file:line]>, bad: [file:line]}`: every `t('…')` key, and every call of `t`
 * whose first argument is not one plain string literal (it could not be translated).
 */
export async function extract() {
  const keys = new Map();
  const bad = [];
  for (const file of await scripts()) {
    const src = await readFile(path.join(WEB, file), 'utf8');
    for (const m of src.matchAll(CALL)) {
      const at = `${file}:${src.slice(0, m.index).split('\n').length}`;
      const rest = src.slice(m.index + m[0].length, m.index + m[0].length + 2000);
      const q = QUOTED.exec(rest);
      if (!q) {
        bad.push(at);
        continue;
      }
      const key = unquote(q[2]);
      if (!keys.has(key)) keys.set(key, []);
      keys.get(key).push(at);
    }
  }
  return { keys, bad };
}

/** The language files: `[{code, name, strings}]`. */
export async function languages() {
  const out = [];
  for (const f of (await readdir(LANG)).filter((f) => f.endsWith('.json')).sort()) {
    const { name, strings } = JSON.parse(await readFile(path.join(LANG, f), 'utf8'));
    out.push({ code: f.replace(/\.json$/, ''), name, strings });
  }
  return out;
}

/** The `{name}` placeholders of a string, sorted. */
export const placeholders = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { keys, bad } = await extract();
  for (const at of bad) console.error(`not a plain string: t( at ${at}`);
  const code = process.argv[2];
  const have = code ? (await languages()).find((l) => l.code === code)?.strings || {} : {};
  const files = process.argv.slice(3);
  const mine = (k) => !files.length || keys.get(k).some((at) => files.includes(at.replace(/:\d+$/, '')));
  const missing = [...keys.keys()].filter((k) => !Object.hasOwn(have, k) && mine(k));
  console.log(JSON.stringify(Object.fromEntries(missing.map((k) => [k, ''])), null, 2));
}

// Every string the phone app shows has its translation in every language file (decision 0081): a
// missing, stale or mismatched one fails here, naming the file, the string and where it is used.
// Reads the source only; no browser. `node web-tests/i18n-keys.mjs <code>` lists what to add.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { extract, languages, placeholders } from './i18n-keys.mjs';

const { keys, bad } = await extract();
const langs = await languages();

test('every call of t() is given one plain string, so it can be translated', () => {
  assert.deepEqual(bad, [], 't( without a string literal');
  assert.ok(keys.size > 100, `the app's strings are found (${keys.size})`);
});

test('German and Japanese are there, and English has no file (it is the app\'s own)', () => {
  assert.deepEqual(langs.map((l) => l.code), ['de', 'ja']);
  for (const l of langs) assert.ok(typeof l.name === 'string' && l.name.trim(), `${l.code} names itself`);
});

for (const l of langs) {
  test(`${l.code}.json translates every string of the app, and nothing else`, () => {
    const missing = [...keys.keys()].filter((k) => !Object.hasOwn(l.strings, k));
    assert.deepEqual(missing.map((k) => `${JSON.stringify(k)} (${keys.get(k)[0]})`), [], `${l.code}.json lacks`);
    const stale = Object.keys(l.strings).filter((k) => !keys.has(k));
    assert.deepEqual(stale, [], `${l.code}.json has strings the app no longer shows`);
  });

  test(`${l.code}.json keeps every {placeholder} of the English`, () => {
    const wrong = Object.entries(l.strings)
      .filter(([en, said]) => keys.has(en) && placeholders(en).join() !== placeholders(said).join())
      .map(([en]) => en);
    assert.deepEqual(wrong, [], `${l.code}.json changes the placeholders of`);
    const blank = Object.entries(l.strings).filter(([, said]) => !said.trim()).map(([en]) => en);
    assert.deepEqual(blank, [], `${l.code}.json leaves empty`);
  });
}

// The phone app's languages (issue 33, decision 0081): the browser's language is the default, a
// choice in Settings persists, a string a language lacks (or a language the bridge lacks) shows in
// English, and — walked through in a test language whose every string is marked — every text a
// screen shows went through the translation (a string left out of `t` shows unmarked).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, storage, waitFor, useBrowser } from './support.mjs';
import { extract } from './i18n-keys.mjs';

const browser = useBrowser();
const T = { timeout: 120_000 };

/** Pairs through the QR link without reading any label (they are in the page's language). */
async function pairAnyLanguage(page, bridge, label = 'phone') {
  await page.goto(`${bridge.url}/#pair=${await bridge.code()}`);
  await page.locator('#pair-label').fill(label);
  await page.locator('button[type=submit]').click();
  await page.locator('nav.tabbar').waitFor();
}

/** The tab bar's words, in order. */
const tabs = (page) => page.locator('nav.tabbar .tab > span:first-child').allTextContents();

test('the browser\'s German is the default; Settings switches to Japanese and English, and the choice persists', T,
  () => session(browser, 'lang-switch', async ({ bridge, page }) => {
    await pairAnyLanguage(page, bridge);
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
    assert.deepEqual(await tabs(page), ['Panes', 'Karten', 'Dateien', 'Einstellungen', 'Mehr']);

    await page.getByRole('link', { name: 'Einstellungen', exact: true }).click();
    await page.getByRole('heading', { name: 'Einstellungen', exact: true }).waitFor();
    await page.getByLabel('Sprache', { exact: true }).selectOption('ja');
    await page.getByRole('heading', { name: '設定', exact: true }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'ja');
    assert.deepEqual(await tabs(page), ['ペイン', 'カード', 'ファイル', '設定', 'その他']);

    await page.reload();
    await page.getByRole('heading', { name: '設定', exact: true }).waitFor();
    await page.getByLabel('言語', { exact: true }).selectOption('en');
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    assert.equal(await page.getByLabel('Language', { exact: true }).inputValue(), 'en');
  }, { locale: 'de-DE' }));

test('a language the bridge lacks is English, and a string a language lacks shows in English', T,
  () => session(browser, 'lang-fallback', async ({ bridge, page }) => {
    // French: no such file on the bridge.
    await pairAnyLanguage(page, bridge);
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
    assert.deepEqual(await tabs(page), ['Panes', 'Cards', 'Files', 'Settings', 'More']);

    // A language file that has one string of the app: the rest shows in English, never a key.
    await page.evaluate(() => {
      localStorage.setItem('collie.pref.language', 'fr');
      localStorage.setItem('collie.pref.language-kept', JSON.stringify({
        code: 'fr', choice: 'fr', browser: navigator.languages.join(','), index: [], strings: { Settings: 'Réglages' },
      }));
    });
    await page.reload();
    await waitFor('the kept French', async () => (await tabs(page)).includes('Réglages'));
    assert.deepEqual(await tabs(page), ['Panes', 'Cards', 'Files', 'Réglages', 'More']);
    // The bridge has no fr.json: the background refresh kept English for the next start.
    await waitFor('English kept', async () => JSON.parse((await storage(page))['collie.pref.language-kept']).code === 'en');
    await page.reload();
    await waitFor('English again', async () => (await tabs(page)).includes('Settings'));
  }, { locale: 'fr-FR' }));

/** Waits until nothing on the page is loading and its text stopped changing. */
async function settled(page) {
  let last = null;
  await waitFor('the screen to settle', async () => {
    const now = await page.evaluate(() => document.body.innerText);
    const done = now === last && !now.includes('Loading…');
    last = now;
    return done;
  }, { timeout: 15_000, every: 300 });
}

/** Marks every string: a text shown unmarked did not go through `t`. */
const mark = (s) => `⟦${s}⟧`;

/**
 * The texts a person sees or hears on the page that are not marked: text nodes, `aria-label`,
 * `title` and `placeholder`, outside the terminal (a pane's own text) and the elements that show
 * names and paths (`data`: the test's machine, pane and device names, numbers, punctuation).
 */
function unmarked(page, data) {
  return page.evaluate((data) => {
    const seen = [];
    const visible = (el) => el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
    const isData = (s) => {
      if (/[⟦⟧]/.test(s)) return true; // marked, or a piece of a marked sentence around a link
      let rest = s;
      for (const d of data) rest = rest.split(d).join('');
      return !/\p{L}{2,}/u.test(rest.replace(/⟦[^⟧]*⟧/g, ''));
    };
    const skip = (el) => el.closest('pre, code, kbd, .term, .screen, [aria-label="Screen"], [aria-label="Scrollback"], .mono, option, dialog:not([open])');
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const s = n.textContent.trim();
      const el = n.parentElement;
      if (!s || !visible(el) || skip(el) || el.closest('[aria-hidden="true"]')) continue;
      if (!isData(s)) seen.push(s);
    }
    for (const el of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
      if (!visible(el) || skip(el)) continue;
      for (const a of ['aria-label', 'title', 'placeholder']) {
        const v = el.getAttribute(a);
        if (v && !isData(v)) seen.push(`${a}=${v}`);
      }
    }
    if (!isData(document.title)) seen.push(`title: ${document.title}`);
    return [...new Set(seen)];
  }, data);
}

test('walked in a test language, every screen\'s text went through the translation', T,
  () => session(browser, 'lang-every-string', async ({ bridge, page }) => {
    const { keys } = await extract();
    const strings = Object.fromEntries([...keys.keys()].map((k) => [k, mark(k)]));
    await bridge.cliOk(['panes', 'new', '--name', 'two', '--', 'sh']);
    await pairInApp(page, bridge);
    await page.evaluate((strings) => {
      localStorage.setItem('collie.pref.language-kept', JSON.stringify({
        code: 'xx', choice: 'auto', browser: navigator.languages.join(','), index: [], strings,
      }));
    }, strings);
    await page.reload();
    await page.locator('nav.tabbar').waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'xx');
    const version = (await bridge.api('/api/health')).version;
    // Names and words that are data, not the app's: the test's machine, panes and device, the
    // version, the tier, and the key bar's key caps (named as keyboards print them).
    const keyCaps = ['Enter', 'Esc', 'Tab', 'Ctrl+C', 'Ctrl+D', 'Ctrl+Z', 'Ctrl+L', 'Backspace', 'PageUp', 'PageDown'];
    const data = ['testbox', 'work', 'two', 'phone', 'Collie', version, 'solo', 'full', 'COLLIE_UPDATE_CHECK', ...keyCaps];
    const screens = ['#/', '#/cards', '#/settings', '#/files', '#/changes', '#/agents', '#/walky', '#/sent', '#/new'];
    const found = {};
    for (const hash of screens) {
      await page.goto(`${bridge.url}/${hash}`);
      await page.locator('nav.tabbar, header.bar').first().waitFor();
      await settled(page);
      const left = await unmarked(page, data);
      if (left.length) found[hash] = left;
    }
    await page.goto(`${bridge.url}/#/`);
    await page.locator('nav.tabbar button.tab').click();
    await page.locator('dialog[open]').waitFor();
    const more = await unmarked(page, data);
    if (more.length) found.more = more;
    await page.keyboard.press('Escape');
    await page.locator('dialog[open]').waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
    await settled(page);
    await page.getByRole('link', { name: 'work', exact: true }).click();
    await page.getByRole('heading', { name: 'work', exact: true }).waitFor();
    await settled(page);
    const pane = await unmarked(page, data);
    if (pane.length) found.pane = pane;
    assert.deepEqual(found, {}, 'texts shown without going through t()');
  }));

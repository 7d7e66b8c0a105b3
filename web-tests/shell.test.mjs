// The phone app as a whole (issue 3; docs/guide/phone-app.md): layout on phone screens, dark and
// light, no console errors or CSP violations, and a service worker that caches the app shell only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  session, openPage, pairInApp, openPane, waitFor, waitScreen, isLine, Scope, Bridge, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const KEYS = ['Enter', 'Esc', 'Tab', 'Up', 'Down', 'Left', 'Right', 'Ctrl+C', 'Ctrl+D', 'Ctrl+Z',
  'Ctrl+L', 'Backspace', 'PageUp', 'PageDown'];

/** Page width against the viewport: the page itself must never scroll sideways. */
const widths = (page) => page.evaluate(() => ({
  scrollWidth: document.scrollingElement.scrollWidth,
  innerWidth: window.innerWidth,
}));

async function assertNoSideScroll(page, where) {
  const w = await widths(page);
  assert.ok(w.scrollWidth <= w.innerWidth, `${where}: page scrolls sideways (${w.scrollWidth} > ${w.innerWidth})`);
}

/** Relative luminance (0 dark … 1 light) of the first opaque background of body, html. */
const background = (page) => page.evaluate(() => {
  for (const el of [document.body, document.documentElement]) {
    const c = getComputedStyle(el).backgroundColor;
    const m = /rgba?\(([\d.]+)[ ,]+([\d.]+)[ ,]+([\d.]+)(?:[ ,/]+([\d.]+))?/.exec(c);
    if (m && (m[4] === undefined || Number(m[4]) > 0)) {
      const [r, g, b] = [m[1], m[2], m[3]].map((v) => {
        const s = Number(v) / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return { color: c, luminance: 0.2126 * r + 0.7152 * g + 0.0722 * b };
    }
  }
  return { color: 'transparent', luminance: 1 }; // the browser's default canvas
});

test('9. no sideways page scroll at 390×844 and 360×740, key bar tap targets ≥ 44 px, dark and light', T, async () => {
  const scope = new Scope();
  try {
    const bridge = await Bridge.start();
    scope.add(null, () => bridge.close());
    // A line as wide as the pane (100 columns): the Screen scrolls itself, not the page.
    await bridge.tmux.sendKeys(`printf '%0100d\\n' 0`, 'Enter');
    const seen = {};
    let n = 0;
    for (const [width, height] of [[390, 844], [360, 740]]) {
      for (const colorScheme of ['dark', 'light']) {
        const where = `${width}×${height} ${colorScheme}`;
        const { context, page } = await openPage(browser, { width, height, colorScheme });
        scope.add(null, () => context.close());
        const code = await bridge.code();
        await page.goto(`${bridge.url}/#pair=${code}`);
        await page.getByLabel('Pairing code', { exact: true }).waitFor();
        await assertNoSideScroll(page, `${where} pairing`);
        const bg = await background(page);
        seen[colorScheme] = bg;
        await page.getByLabel('Device name', { exact: true }).fill(`layout-${++n}`);
        await page.getByRole('button', { name: 'Pair', exact: true }).click();
        await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
        await assertNoSideScroll(page, `${where} panes`);
        await openPane(page);
        await waitScreen(page, 'the wide line', (l) => /^0{100}$/.test(l.trim()));
        await assertNoSideScroll(page, `${where} pane view`);
        for (const key of KEYS) {
          const btn = page.getByRole('button', { name: key, exact: true });
          await btn.scrollIntoViewIfNeeded();
          const box = await btn.boundingBox();
          assert.ok(box, `${where}: key ${key} is laid out`);
          assert.ok(box.width >= 44 && box.height >= 44,
            `${where}: key ${key} is ${box.width.toFixed(1)}×${box.height.toFixed(1)} px, below 44×44`);
        }
        await page.getByRole('link', { name: 'Back', exact: true }).click();
        await page.getByRole('link', { name: 'Settings', exact: true }).click();
        await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
        await assertNoSideScroll(page, `${where} settings`);
        const shot = await page.screenshot();
        assert.ok(shot.length > 1_000, `${where}: renders`);
        await context.close();
      }
    }
    assert.ok(seen.dark.luminance < 0.2, `dark scheme has a dark background: ${JSON.stringify(seen.dark)}`);
    assert.ok(seen.light.luminance > 0.5, `light scheme has a light background: ${JSON.stringify(seen.light)}`);
  } finally {
    await scope.close();
  }
});

test('10. a whole session raises no console error and no CSP violation', T, () =>
  session(browser, 'no-console-errors', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { label: 'clean' });
    await openPane(page);
    await page.getByLabel('Type to pane', { exact: true }).fill('echo cl""ean');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitScreen(page, 'the output line `clean`', isLine('clean'));
    await page.getByRole('button', { name: 'Enter', exact: true }).click();
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    await page.getByLabel('Theme', { exact: true }).selectOption({ label: 'Light' });
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await page.waitForTimeout(500);
    assert.deepEqual(page.problems, []);
  }));

test('the service worker registers and caches the app shell only, never /api/', T, () =>
  session(browser, 'service-worker', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { label: 'sw' });
    const scope = await page.evaluate(() => Promise.race([
      navigator.serviceWorker.ready.then((r) => r.scope),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no service worker within 10 s')), 10_000)),
    ]));
    assert.equal(scope, `${bridge.url}/`);
    // Use the app through the worker: pane list, pane view, stream, input, settings.
    await page.reload();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await waitFor('the worker to control the page', () => page.evaluate(() => !!navigator.serviceWorker.controller));
    await openPane(page);
    await page.getByLabel('Type to pane', { exact: true }).fill('echo sh""ell');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitScreen(page, 'the output line `shell`', isLine('shell'));
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();

    const urls = await page.evaluate(async () => {
      const out = [];
      for (const name of await caches.keys()) {
        for (const req of await (await caches.open(name)).keys()) out.push(req.url);
      }
      return out;
    });
    assert.ok(urls.length > 0, 'the shell is cached');
    const paths = urls.map((u) => {
      const url = new URL(u);
      assert.equal(url.origin, bridge.url, `same origin: ${u}`);
      return url.pathname;
    });
    assert.deepEqual(paths.filter((p) => p.startsWith('/api/')), [], `no API answers cached: ${paths}`);
    for (const p of ['/', '/app.js', '/style.css']) assert.ok(paths.includes(p), `${p} cached: ${paths}`);
    const shell = /^\/$|^\/[\w./-]+\.(?:html|js|mjs|css|webmanifest|json|png|svg|ico|woff2?)$/;
    assert.deepEqual(paths.filter((p) => !shell.test(p)), [], `only shell files cached: ${paths}`);
    assert.deepEqual(page.problems.filter((p) => p.includes('CSP')), []);

    // Installable: a manifest with a name, a start URL, standalone display and icons.
    const href = await page.evaluate(() => document.querySelector('link[rel="manifest"]')?.href);
    assert.ok(href, 'a manifest link');
    const manifest = await (await fetch(href)).json();
    assert.ok(manifest.name || manifest.short_name, 'manifest names the app');
    assert.ok(manifest.start_url, 'manifest has start_url');
    assert.ok(['standalone', 'fullscreen', 'minimal-ui'].includes(manifest.display), `display: ${manifest.display}`);
    assert.ok(Array.isArray(manifest.icons) && manifest.icons.length > 0, 'manifest has icons');
  }));

// The pane view's text size on a 360 × 740 phone (issue 15; docs/guide/phone-app.md, "Text
// size"), in headless chromium against a real bridge and a real 100-column tmux pane: Larger and
// Smaller, kept across a reload; Fit width, which shows all 100 columns without reflowing a line;
// and a two-finger pinch on the terminal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, openPane, waitFor, waitScreen, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };
const WIDE = /^0{100}$/;

/** The computed font size of the Screen, in px. */
const screenSize = (page) => page.getByLabel('Screen', { exact: true })
  .evaluate((el) => parseFloat(getComputedStyle(el).fontSize));

async function openWide(page, bridge) {
  await pairInApp(page, bridge);
  await openPane(page);
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
  await bridge.tmux.sendKeys("printf '0%.0s' $(seq 100); echo", 'Enter');
  await waitScreen(page, 'the 100-column line', (l) => WIDE.test(l.trim()));
}

async function sheet(page) {
  await page.getByRole('button', { name: 'Text size', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Text size' });
  await dialog.waitFor();
  return dialog;
}

test('Larger and Smaller change the text size, which a reload keeps; Reset goes back', T, () =>
  session(browser, 'zoom-steps', async ({ page, bridge }) => {
    await openWide(page, bridge);
    assert.equal(await screenSize(page), 13);
    let dialog = await sheet(page);
    await dialog.getByRole('button', { name: 'Larger', exact: true }).click();
    await dialog.getByRole('button', { name: 'Larger', exact: true }).click();
    assert.equal(await screenSize(page), 15);
    await dialog.getByRole('button', { name: 'Smaller', exact: true }).click();
    assert.equal(await screenSize(page), 14);
    await dialog.getByRole('button', { name: 'Done', exact: true }).click();

    await page.reload();
    await page.getByLabel('Screen', { exact: true }).waitFor();
    assert.equal(await screenSize(page), 14, 'the size is kept on this phone');
    dialog = await sheet(page);
    await dialog.getByRole('button', { name: 'Reset', exact: true }).click();
    assert.equal(await screenSize(page), 13);
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('Fit width shows all 100 columns on a 360 px phone without reflowing the line', T, () =>
  session(browser, 'zoom-fit', async ({ page, bridge }) => {
    await openWide(page, bridge);
    const overflow = () => page.locator('.term').evaluate((t) => t.scrollWidth - t.clientWidth);
    assert.ok(await overflow() > 100, 'at 13 px the 100 columns are wider than the phone');
    const dialog = await sheet(page);
    const fit = dialog.getByRole('button', { name: 'Fit width', exact: true });
    await fit.click();
    assert.equal(await fit.getAttribute('aria-pressed'), 'true');
    await waitFor('the screen to fit the width', async () => (await overflow()) <= 1);
    const size = await screenSize(page);
    assert.ok(size < 13 && size >= 4, `a smaller font: ${size}`);
    // Nothing reflowed: the 100 zeros are still one line of the Screen.
    await waitScreen(page, 'the 100-column line', (l) => WIDE.test(l.trim()));
    await fit.click();
    assert.equal(await fit.getAttribute('aria-pressed'), 'false');
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('two fingers spreading on the terminal make its text larger, the page itself does not zoom', T, () =>
  session(browser, 'zoom-pinch', async ({ page, bridge }) => {
    await openWide(page, bridge);
    const before = await screenSize(page);
    await page.locator('.term').evaluate((term) => {
      const r = term.getBoundingClientRect();
      const cy = r.top + r.height / 2;
      const touches = (d) => [
        new Touch({ identifier: 1, target: term, clientX: r.left + 150 - d, clientY: cy }),
        new Touch({ identifier: 2, target: term, clientX: r.left + 150 + d, clientY: cy }),
      ];
      const fire = (type, d) => term.dispatchEvent(new TouchEvent(type, {
        touches: type === 'touchend' ? [] : touches(d), changedTouches: touches(d), bubbles: true, cancelable: true,
      }));
      fire('touchstart', 40);
      fire('touchmove', 60);
      fire('touchmove', 80);
      fire('touchend', 80);
    });
    const after = await screenSize(page);
    assert.ok(after >= before * 1.8, `twice the distance, about twice the size: ${before} → ${after}`);
    const pageZoom = await page.evaluate(() => window.visualViewport.scale);
    assert.equal(pageZoom, 1);
    assert.deepEqual(page.problems, []);
  }, VIEW));

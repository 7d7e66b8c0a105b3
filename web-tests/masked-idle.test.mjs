// Seed 002's small promises on the phone (issue 15; docs/guide/phone-app.md, "Masked text" and
// "Idle lock"), on a 360 × 740 phone in headless chromium against a real bridge and a real tmux
// pane: the one-time hint the first time a pane shows masked text, the warning under the input
// while it holds mask dots, and the idle lock that covers an unattended screen (its delay run on
// the browser's own fake clock, so the test waits for no real minutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, openPane, waitFor, waitScreen, isLine, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };
const BODY = 'aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s';
const MASKED = `ghp_a${'•'.repeat(35)}`;
const HINT = /stand for a secret Collie masked/;
const WARNING = /the pane gets the dots, not the secret/;

/** Prints a token the redactor masks (the typed line never holds it whole) and waits for it. */
async function printSecret(page, bridge) {
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
  await bridge.tmux.sendKeys(`printf '%s%s\\n' ghp_ ${BODY}`, 'Enter');
  await waitScreen(page, `the masked line ${MASKED}`, isLine(MASKED));
}

test('the first masked text shows a hint once per device; a later pane does not repeat it', T, () =>
  session(browser, 'masked-hint', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    const hint = page.getByRole('note').filter({ hasText: HINT });
    assert.equal(await hint.count(), 0, 'no hint before any masked text');
    await printSecret(page, bridge);
    await hint.waitFor();
    await hint.getByRole('button', { name: 'Got it', exact: true }).click();
    await hint.waitFor({ state: 'detached' });

    // The same pane again, masked text still on its screen: no second hint on this device.
    await page.goto(`${bridge.url}/#/`);
    await openPane(page);
    await waitScreen(page, `the masked line ${MASKED}`, isLine(MASKED));
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor();
    assert.equal(await page.getByRole('note').filter({ hasText: HINT }).count(), 0);
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('text with mask dots in the input gets a warning; the pane receives the dots', T, () =>
  session(browser, 'paste-warning', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await printSecret(page, bridge);
    const input = page.getByLabel('Type to pane', { exact: true });
    const warning = page.getByText(WARNING);
    assert.equal(await warning.isVisible(), false, 'no warning for an empty input');
    // What a person pastes after copying the masked line from the screen.
    await input.fill(`echo ${MASKED}`);
    await warning.waitFor();
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitFor('the warning to go with the sent text', async () => !(await warning.isVisible()));
    await waitFor('the dots in tmux', async () => (await bridge.tmux.capture()).includes(`echo ${MASKED}`));
    await input.fill('echo plain');
    assert.equal(await warning.isVisible(), false, 'plain text has no warning');
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('the idle lock covers the screen after its delay, says it is no boundary, and Show opens it', T, () =>
  session(browser, 'idle-lock', async ({ page, bridge }) => {
    await page.clock.install();
    await pairInApp(page, bridge);
    await page.goto(`${bridge.url}/#/settings`);
    const idle = page.getByLabel('Idle lock', { exact: true });
    assert.equal(await idle.inputValue(), '5', 'five minutes by default');
    await idle.selectOption('1');
    await page.goto(`${bridge.url}/#/`);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));

    const cover = page.getByRole('dialog', { name: 'Hidden while idle' });
    // A touch before the minute is up starts it again.
    await page.clock.fastForward(40_000);
    await page.getByRole('heading', { level: 1 }).click();
    await page.clock.fastForward(40_000);
    assert.equal(await cover.count(), 0, 'no cover 40 s after a touch');
    await page.clock.fastForward(25_000);
    await cover.waitFor();
    assert.match(await cover.innerText(), /no security boundary/);
    // The cover hides the screen, and what is under it takes no taps.
    const box = await page.getByLabel('Screen', { exact: true }).boundingBox();
    const onTop = await page.evaluate(([x, y]) => !!document.elementFromPoint(x, y)?.closest('.idle-cover'),
      [box.x + box.width / 2, box.y + Math.min(box.height / 2, 50)]);
    assert.ok(onTop, 'the cover lies over the screen');
    assert.equal(await page.locator('#app').getAttribute('inert'), '', 'the app under the cover is inert');

    await cover.getByRole('button', { name: 'Show', exact: true }).click();
    await cover.waitFor({ state: 'detached' });
    await page.getByLabel('Type to pane', { exact: true }).fill('echo after');

    // Off: no cover however long nobody touches it.
    await page.goto(`${bridge.url}/#/settings`);
    await page.getByLabel('Idle lock', { exact: true }).selectOption('off');
    await page.clock.fastForward(20 * 60_000);
    assert.equal(await cover.count(), 0, 'no cover with the lock off');
    assert.deepEqual(page.problems, []);
  }, VIEW));

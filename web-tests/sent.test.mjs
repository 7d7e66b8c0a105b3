// The Sent screen and the pane view's Sent sheet (SPEC §11; docs/guide/phone-app.md, "Sent"): a
// real bridge with a real tmux pane running bash, the app in headless chromium. Lines typed from
// the phone are kept and listed; a tap re-fills the input and sends nothing; Discard and Clear
// sent (confirmed) change the bridge's file; a one-shot command really runs and joins the recent
// list; each tier sees only what it may use, and `[phone] run = false` hides the command field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Bridge, openPage, openPane, pairInApp, Scope, session, waitFor, useBrowser, openMore } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

/** The lines of the bridge's sent log file, oldest first. */
async function sentFile(bridge) {
  let text = '';
  try {
    text = await readFile(path.join(bridge.dir, 'state', 'sent.jsonl'), 'utf8');
  } catch {}
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l).line);
}

/** Types `text` in the pane view's field and taps Send. */
async function typeLine(page, text) {
  await page.getByLabel('Type to pane', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

test('lines typed in a pane are listed, re-filled by a tap without sending, discarded and cleared', T, () =>
  session(browser, 'sent-sheet', async ({ bridge, page }) => {
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    });
    await pairInApp(page, bridge, { tier: 'full' });
    await openPane(page);
    await typeLine(page, 'echo sent-web-1');
    await waitFor('the first line kept', async () => (await sentFile(bridge)).includes('echo sent-web-1'));
    await typeLine(page, 'echo sent-web-2');
    await waitFor('the second line kept', async () => (await sentFile(bridge)).length === 2);
    await typeLine(page, 'TOKEN=abc echo hidden');

    // The sheet lists this machine's lines, newest first; a tap fills the field and sends nothing.
    await page.getByRole('button', { name: 'Sent', exact: true }).click();
    const sheet = page.getByRole('dialog', { name: 'Sent', exact: true });
    await sheet.getByRole('button', { name: 'echo sent-web-1', exact: true }).waitFor();
    const shown = await sheet.locator('.sent-line').allInnerTexts();
    assert.deepEqual(shown, ['echo sent-web-2', 'echo sent-web-1']);
    await sheet.getByRole('button', { name: 'echo sent-web-1', exact: true }).click();
    await sheet.waitFor({ state: 'detached' });
    assert.equal(await page.getByLabel('Type to pane', { exact: true }).inputValue(), 'echo sent-web-1');
    assert.deepEqual(await sentFile(bridge), ['echo sent-web-1', 'echo sent-web-2'], 'nothing was sent');

    // Discard one line from the sheet.
    await page.getByRole('button', { name: 'Sent', exact: true }).click();
    const row = sheet.locator('.sent-row', { hasText: 'echo sent-web-2' });
    await row.getByRole('button', { name: 'Discard', exact: true }).click();
    await waitFor('the line discarded', async () => (await sentFile(bridge)).length === 1);
    await row.waitFor({ state: 'detached' });
    assert.deepEqual(await sentFile(bridge), ['echo sent-web-1']);

    // Clear sent asks first; Cancel keeps the lines, Clear removes them.
    await sheet.getByRole('button', { name: 'Clear sent', exact: true }).click();
    const confirm = page.getByRole('dialog', { name: 'Clear sent lines of testbox?' });
    await confirm.getByRole('button', { name: 'Cancel', exact: true }).click();
    assert.deepEqual(await sentFile(bridge), ['echo sent-web-1']);
    await sheet.getByRole('button', { name: 'Clear sent', exact: true }).click();
    await confirm.getByRole('button', { name: 'Clear', exact: true }).click();
    await waitFor('the machine cleared', async () => (await sentFile(bridge)).length === 0);
    await sheet.getByText('No sent lines.', { exact: true }).waitFor();
    assert.deepEqual(dialogs, [], 'no native dialog');
  }));

test('a one-shot command runs from the Sent screen and joins the recent list', T, () =>
  session(browser, 'one-shot', async ({ bridge, page }) => {
    await pairInApp(page, bridge, { tier: 'full' });
    await openMore(page, 'Sent');
    await page.getByRole('heading', { name: 'Sent', exact: true }).waitFor();
    const marker = path.join(bridge.dir, 'web-one-shot');
    const command = `touch ${marker}`;
    await page.getByLabel('Command', { exact: true }).fill(command);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    // The app opens the pane the command runs in.
    await page.getByRole('heading', { name: 'run', exact: true }).waitFor({ timeout: 10_000 });
    await waitFor('the command to run', async () => existsSync(marker), { timeout: 15_000 });

    await page.goto(`${bridge.url}/#/sent`);
    await page.getByRole('heading', { name: 'Sent', exact: true }).waitFor();
    const recent = page.getByRole('list', { name: 'Recent commands' });
    await recent.getByRole('button', { name: command, exact: true }).waitFor();
    // The sent list has it too, as a command; a tap fills the field and runs nothing.
    const row = page.locator('.sent-row', { hasText: 'command' });
    await row.getByRole('button', { name: command, exact: true }).click();
    assert.equal(await page.getByLabel('Command', { exact: true }).inputValue(), command);
    const { body } = await bridge.api('/api/panes', await bridge.pairApi('check', 'read'));
    assert.equal(body.panes.filter((p) => p.backend === 'pty').length, 1, 'one pane: nothing ran again');
  }));

test('each tier sees only what it may use, and run = false hides the command field', T, async () => {
  const scope = new Scope();
  try {
    const bridge = scope.add(await Bridge.start(), () => bridge.close());
    const full = await bridge.pairApi('typist', 'full');
    const pane = await bridge.tmuxPane(full);
    const r = await bridge.api(`/api/panes/local/${pane}/input`, full, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'echo tier-line', keys: ['Enter'] }),
    });
    assert.equal(r.status, 200, r.text);
    await waitFor('the line kept', async () => (await sentFile(bridge)).includes('echo tier-line'));

    for (const tier of ['read', 'files']) {
      const { context, page } = await openPage(browser);
      scope.add(null, () => context.close());
      await pairInApp(page, bridge, { tier, label: `phone-${tier}` });
      await page.goto(`${bridge.url}/#/sent`);
      const line = page.locator('.sent-row', { hasText: 'echo tier-line' });
      await line.waitFor();
      assert.equal(await page.getByLabel('Command', { exact: true }).count(), 0, `${tier}: no command field`);
      assert.equal(await line.getByRole('button', { name: 'echo tier-line' }).count(), 0, `${tier}: nothing to re-fill`);
      const discards = await page.getByRole('button', { name: 'Discard', exact: true }).count();
      const clears = await page.getByRole('button', { name: 'Clear sent', exact: true }).count();
      assert.deepEqual([discards, clears], tier === 'read' ? [0, 0] : [1, 1], tier);
    }

    await bridge.stop();
    await bridge.configure('[phone]\nrun = false\n');
    await bridge.launch(0);
    const { context, page } = await openPage(browser);
    scope.add(null, () => context.close());
    await pairInApp(page, bridge, { tier: 'full', label: 'phone-full' });
    await page.goto(`${bridge.url}/#/sent`);
    await page.locator('.sent-row', { hasText: 'echo tier-line' }).waitFor();
    assert.equal(await page.getByLabel('Command', { exact: true }).count(), 0, 'run = false: no command field');
  } finally {
    await scope.close();
  }
});

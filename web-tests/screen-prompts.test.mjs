// Screen prompts in the pane view (SPEC §10.2; docs/guide/phone-app.md, "Cards"): a program in a
// hosted pane draws a permission dialog the way Claude Code does (tests/fixtures/screen-dialog.sh,
// which records every key it reads); the pane view shows the question above the screen with one
// button per numbered option, and a tap types that number — or, when the dialog has left the
// screen, types nothing and says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { session, pairInApp, waitFor, useBrowser } from './support.mjs';

const DIALOG = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'tests', 'fixtures', 'screen-dialog.sh');

const browser = useBrowser();

const T = { timeout: 120_000 };

/** Starts the dialog in a hosted pane `agent`; returns its pane id and its two files. */
async function startDialog(bridge) {
  const typed = path.join(bridge.dir, 'typed');
  const moving = path.join(bridge.dir, 'moving');
  const made = JSON.parse(await bridge.cliOk(['panes', 'new', '--json', '--name', 'agent', '--',
    'bash', DIALOG, typed, moving]));
  assert.ok(made.pane, JSON.stringify(made));
  return { pane: made.pane, machine: made.machine, typed, moving };
}

test('a dialog on the screen shows above it, and a tap types its number', T,
  () => session(browser, 'screen-prompt', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    const d = await startDialog(bridge);
    await page.goto(`${bridge.url}/#/pane/${d.machine}/${d.pane}`);
    const prompt = page.getByRole('region', { name: 'Waiting for your answer' });
    await prompt.getByText('Do you want to proceed?', { exact: true }).waitFor({ timeout: 15_000 });
    await prompt.getByText(/rm -rf build/).waitFor();
    assert.equal(existsSync(d.typed), false);
    await prompt.getByRole('button', { name: 'No', exact: true }).click();
    await waitFor('the program to read a key', () => existsSync(d.typed), { timeout: 10_000 });
    assert.equal(readFileSync(d.typed, 'utf8'), '3');
    await page.getByText('No: sent.', { exact: true }).waitFor({ timeout: 10_000 });
    await prompt.waitFor({ state: 'hidden', timeout: 10_000 });
  }));

test('a tap on a dialog that left the screen types nothing and says why', T,
  () => session(browser, 'screen-prompt-moved', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    const d = await startDialog(bridge);
    await page.goto(`${bridge.url}/#/pane/${d.machine}/${d.pane}`);
    const prompt = page.getByRole('region', { name: 'Waiting for your answer' });
    await prompt.getByText('Do you want to proceed?', { exact: true }).waitFor({ timeout: 15_000 });
    writeFileSync(d.moving, '');
    await page.getByText(/working \d+/).waitFor({ timeout: 10_000 });
    await prompt.getByRole('button', { name: 'Yes', exact: true }).click();
    await page.getByText('The screen changed before that could be sent. Nothing was typed.', { exact: true })
      .waitFor({ timeout: 10_000 });
    assert.equal(existsSync(d.typed), false, 'nothing was typed');
  }));

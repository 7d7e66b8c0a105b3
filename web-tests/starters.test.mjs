// Starters on the phone's New page (issue 14; SPEC §12; docs/guide/phone-app.md, "New pane"), on a
// 360 × 740 phone in headless chromium against a real bridge whose configuration was applied with
// `collie apply --yes`: the applied starters are listed above Shell, a tap runs the pinned program
// in a new pane, and a starter that skips the agent's permission prompts carries the "No prompts"
// badge and is confirmed once per device (Cancel opens nothing); `Choose folder` browses the home
// folder and the pane opens in the folder chosen; a phone adds its own starter row (decision 0041),
// taps it and removes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fakeAgent, session, pairInApp, waitFor, waitScreen, WINDOW, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };

const CONFIG = (dir) => `
[[starters]]
name = "Helper"
exec = "${path.join(dir, 'home', 'bin', 'fake-agent')}"
args = ["plain"]

[[starters]]
name = "Yolo"
exec = "${path.join(dir, 'home', 'bin', 'fake-agent')}"
agent = "claude"
no_prompts = true
`;

const bridgeOpts = { setup: fakeAgent, config: CONFIG };

async function openNew(page) {
  await page.getByRole('link', { name: 'New pane', exact: true }).click();
  await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Shell', exact: true }).waitFor();
}

/** The panes the bridge itself lists (not through the phone). */
async function ownPanes(bridge) {
  return JSON.parse(await bridge.cliOk(['panes', 'list', '--json'])).panes;
}

test('the applied starters are listed above Shell and a tap runs the pinned program', T, () =>
  session(browser, 'starters-run', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    const helper = page.getByRole('button', { name: 'Helper', exact: true });
    await helper.waitFor();
    // Listed in the configuration's order, above Shell; only Yolo has the badge.
    const names = await page.locator('.start-list .start-name').allInnerTexts();
    assert.deepEqual(names, ['Helper', 'Yolo', 'Shell']);
    assert.equal(await page.locator('.start-list .no-prompts').count(), 1);
    assert.match(await page.getByRole('button', { name: /^Yolo/ }).innerText(), /No prompts/);
    const box = await helper.boundingBox();
    assert.ok(box && box.height >= 44 && box.x + box.width <= VIEW.width, JSON.stringify(box));

    await helper.click();
    await page.getByRole('heading', { name: /pane \d+/ }).waitFor();
    await waitScreen(page, 'the starter ran with its args', (text) => text.includes('STARTED:plain:'));
    const panes = await ownPanes(bridge);
    assert.equal(panes.filter((p) => p.backend === 'pty').length, 1, 'one hosted pane');
  }, { ...VIEW, bridge: bridgeOpts }));

test('a No prompts starter is confirmed once per device; Cancel opens nothing', T, () =>
  session(browser, 'starters-no-prompts', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    const yolo = page.getByRole('button', { name: /^Yolo/ });
    await yolo.waitFor();
    await yolo.click();
    const dialog = page.getByRole('dialog', { name: 'Start Yolo without prompts?', exact: true });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /acts without asking you first/);
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await ownPanes(bridge)).filter((p) => p.backend === 'pty').length, 0, 'Cancel opened nothing');

    // Without the phone's confirmation the bridge refuses too (the rule is the bridge's, not the app's).
    const refused = await page.evaluate(async () => {
      const token = localStorage.getItem('collie.token') || '';
      const r = await fetch('/api/panes', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ machine: 'local', starter: 'Yolo' }),
      });
      return { status: r.status, body: await r.json() };
    });
    assert.deepEqual(refused, { status: 409, body: { error: 'confirm no prompts' } });

    await yolo.click();
    await dialog.getByRole('button', { name: 'Start without prompts', exact: true }).click();
    await waitScreen(page, 'the agent flag from the bridge table',
      (text) => text.includes('STARTED:--dangerously-skip-permissions:'));

    // Confirmed once: the next tap opens without asking.
    await page.goto(`${bridge.url}/#/new`);
    await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
    await page.getByRole('button', { name: /^Yolo/ }).click();
    await waitFor('a second Yolo pane', async () =>
      (await ownPanes(bridge)).filter((p) => p.backend === 'pty').length === 2, { timeout: 10_000 });
    assert.equal(await page.getByRole('dialog').count(), 0, 'not asked again');
  }, { ...VIEW, bridge: bridgeOpts }));

test('Choose folder browses the home folder and the pane starts in the folder chosen', T, () =>
  session(browser, 'starters-folder', async ({ page, bridge }) => {
    await mkdir(path.join(bridge.dir, 'home', 'code', 'app'), { recursive: true });
    await mkdir(path.join(bridge.dir, 'home', '.hidden'), { recursive: true });
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    await page.getByRole('button', { name: 'Choose folder', exact: true }).click();
    const list = page.getByRole('list', { name: 'Folders', exact: true });
    await list.getByRole('button', { name: 'code', exact: true }).click();
    await list.getByRole('button', { name: 'app', exact: true }).click();
    await page.getByRole('button', { name: 'Up one folder', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Use this folder', exact: true }).click();
    const chosen = path.join(bridge.dir, 'home', 'code', 'app');
    await waitFor('the chosen folder shown', async () =>
      (await page.locator('#new-folder').innerText()).endsWith('/code/app'));
    await page.getByRole('button', { name: 'Helper', exact: true }).click();
    await waitScreen(page, 'the starter ran', (text) => text.includes('STARTED:plain:'));
    // The bridge opened it in the chosen folder (that the program really runs there is
    // tests/browse.rs's to show, from the shell's own `pwd`).
    assert.equal((await ownPanes(bridge)).filter((p) => p.backend === 'pty').length, 1);
    const audit = (await readFile(path.join(bridge.dir, 'state', 'audit.log'), 'utf8'))
      .split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const created = audit.find((l) => l.event === 'pane.create');
    assert.equal(created.detail.folder, chosen, 'the pane.create line names the folder');
    assert.equal(created.detail.starter, 'Helper');
  }, { ...VIEW, bridge: bridgeOpts }));

test('a phone adds its own starter row, a tap runs it, and Remove takes it away', T, () =>
  session(browser, 'starters-rows', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    await page.getByRole('button', { name: 'Helper', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Add starter', exact: true }).click();
    await page.getByLabel('Starter name', { exact: true }).fill('Mine');
    // Only the agents the machine has an applied starter of; no typed line (free_text is off).
    const runs = page.getByLabel('Runs', { exact: true });
    assert.deepEqual(await runs.locator('option').allInnerTexts(), ['claude']);
    await page.getByLabel('Model', { exact: true }).fill('sonnet');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const mine = page.getByRole('button', { name: 'Mine', exact: true });
    await mine.waitFor();
    const names = await page.locator('.start-list .start-name').allInnerTexts();
    assert.deepEqual(names, ['Helper', 'Yolo', 'Mine', 'Shell']);
    assert.match(await page.locator('.added-row .start-detail').innerText(), /Runs claude \(sonnet\) · added by/);

    await mine.click();
    await page.getByRole('heading', { name: /pane \d+/ }).waitFor();
    await waitScreen(page, 'the pinned agent with the model flag from the bridge table',
      (text) => text.includes('STARTED:--model sonnet:'));

    await page.goto(`${bridge.url}/#/new`);
    await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Remove Mine', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove Mine?', exact: true });
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click();
    await mine.waitFor({ state: 'detached' });
    const audit = (await readFile(path.join(bridge.dir, 'state', 'audit.log'), 'utf8'))
      .split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.equal(audit.filter((l) => l.event === 'starter.added' && l.detail.name === 'Mine').length, 1);
    assert.equal(audit.filter((l) => l.event === 'starter.removed' && l.detail.name === 'Mine').length, 1);
    assert.equal(audit.find((l) => l.event === 'pane.create').detail.row, 'Mine');
  }, { ...VIEW, bridge: bridgeOpts }));

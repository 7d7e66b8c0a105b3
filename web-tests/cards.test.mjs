// Cards on the phone (SPEC §10.1; docs/guide/phone-app.md, "Cards"): the real `collie hook
// claude-permission` runs in a hosted pane with Claude Code's PermissionRequest input on stdin; the
// phone sees the pill count it from another screen, opens Cards, reads the whole command, and its
// taps — two for "Always allow" — decide what the hook prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { session, pairInApp, openPane, waitFor, axeViolations, cardsTab, startHook as startHookWith, HOOK_REQUEST, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

const REQUEST = {
  ...HOOK_REQUEST,
  permission_suggestions: [{ type: 'addRules', behavior: 'allow', destination: 'localSettings',
    rules: [{ toolName: 'Bash', ruleContent: 'cargo test' }] }],
};

/** Starts the hook in a hosted pane `agent` with REQUEST (with its "Always allow" suggestion). */
const startHook = (bridge) => startHookWith(bridge, REQUEST);

test('the Cards tab and a pane\'s header count a waiting card, Cards shows it whole, and two taps always-allow it', T,
  () => session(browser, 'cards', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    const hook = await startHook(bridge);
    const tab = await cardsTab(page);
    assert.equal(await page.locator('nav.tabbar .tab-count').textContent(), '1');
    // A pane's screen has no tab bar: the number is a link in its header.
    await openPane(page);
    assert.equal(await page.locator('nav.tabbar').count(), 0);
    const pill = page.locator('header.bar').getByRole('link', { name: '1 card waiting', exact: true });
    await pill.waitFor({ timeout: 15_000 });
    await pill.click();
    assert.equal(await tab.getAttribute('aria-current'), 'page');
    await page.getByRole('heading', { name: 'Cards', exact: true }).waitFor();
    await page.getByText('Claude Code asks to use Bash', { exact: true }).waitFor();
    await page.getByText('cargo test --workspace', { exact: true }).waitFor();
    await page.getByText('agent on testbox', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Always allow', exact: true }).click();
    await page.getByText('Tap \u201cAlways allow\u201d again to confirm.', { exact: true }).waitFor();
    assert.equal(existsSync(hook.done), false, 'one tap decides nothing');
    await page.getByRole('button', { name: 'Confirm always allow', exact: true }).click();
    await waitFor('the hook to return', () => existsSync(hook.done), { timeout: 15_000 });
    const decision = JSON.parse(readFileSync(hook.out, 'utf8')).hookSpecificOutput.decision;
    assert.equal(decision.behavior, 'allow');
    assert.deepEqual(decision.updatedPermissions.map((p) => p.type), ['addRules']);
    await page.getByText('No cards waiting.', { exact: true }).waitFor({ timeout: 10_000 });
    await page.getByText(/always by phone/).waitFor();
  }));

test('a waiting card, and its "Always allow" confirm step, pass axe-core in the light and the dark theme', T,
  () => session(browser, 'cards-a11y', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    const hook = await startHook(bridge);
    await (await cardsTab(page)).click();
    await page.getByText('cargo test --workspace', { exact: true }).waitFor();
    const found = [];
    const audit = async (what) => {
      for (const colorScheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme });
        for (const v of await axeViolations(page)) found.push(`${what} (${colorScheme}): ${v}`);
      }
    };
    await audit('a card');
    await page.getByRole('button', { name: 'Always allow', exact: true }).click();
    await page.getByRole('button', { name: 'Confirm always allow', exact: true }).waitFor();
    await audit('the confirm step');
    assert.deepEqual(found, []);
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    await waitFor('the hook to return', () => existsSync(hook.done), { timeout: 15_000 });
    assert.deepEqual(page.problems, []);
  }));

test('a card answered at the machine leaves Cards and is listed as answered elsewhere', T,
  () => session(browser, 'cards-elsewhere', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    await startHook(bridge);
    await page.goto(`${bridge.url}/#/cards`);
    await page.getByText('cargo test --workspace', { exact: true }).waitFor({ timeout: 15_000 });
    // The dialog answered in the terminal: the hook's process goes away.
    const panes = JSON.parse(await bridge.cliOk(['panes', '--json']));
    const agent = (panes.panes || panes).find((p) => p.name === 'agent');
    await bridge.cliOk(['panes', 'close', agent.pane]);
    await page.getByText('No cards waiting.', { exact: true }).waitFor({ timeout: 10_000 });
    await page.getByText(/answered elsewhere/).waitFor();
  }));

test('the pane list puts the pane whose card waits first, saying "waiting for you"', T,
  () => session(browser, 'cards-activity', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    await bridge.cliOk(['panes', 'new', '--name', 'aaa-quiet', '--', 'sleep', '1000']);
    await startHook(bridge);
    await cardsTab(page);
    const rows = page.locator('section.machine .pane-row');
    // The list refreshes by itself: the waiting pane comes first however the bridge ordered it.
    await waitFor('the waiting pane on top', async () =>
      (await rows.first().innerText()).includes('waiting for you'), { timeout: 15_000 });
    assert.match(await rows.first().locator('.pane-link').innerText(), /^agent$/);
    const quiet = rows.filter({ hasText: 'aaa-quiet' });
    assert.match(await quiet.locator('.pane-state').innerText(), /idle|working/);
  }));

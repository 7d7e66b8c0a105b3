// The chat view of an agent's pane (issue 15; docs/guide/phone-app.md, "Chat") on a 360 × 740
// phone, in headless chromium against a real bridge and a real tmux pane running a stand-in for
// Claude Code (support.mjs `fakeClaude`; the real agents' transcripts are read in tests/agents.rs):
// the Chat toggle shows only for a pane with a chat, turns are text (markup shows as its
// characters, code as code), new turns follow live, the screen is one tap back, and the turns are
// kept on the phone beside the screen's text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, openPane, waitFor, waitScreen, fakeClaude, keptStore, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };

/** The kept record of every pane, as IndexedDB holds it. */
const keptRecords = async (page) => (await keptStore(page)).records;

test('a Claude Code pane has a Chat toggle: turns as text, followed live, the screen a tap away', T, () =>
  session(browser, 'chat', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    const toggle = page.getByRole('button', { name: 'Chat', exact: true });
    assert.equal(await toggle.isVisible(), false, 'a shell has no chat');

    const agent = await fakeClaude(bridge);
    await toggle.waitFor({ timeout: 10_000 });
    await agent.say('user', 'show me <b>x</b>');
    await agent.say('assistant', [
      { type: 'text', text: 'Here is **bold** and code:\n```\nlet a = "<i>";\n```' },
      { type: 'tool_use', name: 'Bash', input: { command: 'echo <img src=x onerror=alert(1)>' } },
    ]);
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
    const chat = page.getByRole('region', { name: 'Chat', exact: true });
    await chat.waitFor();
    assert.equal(await page.getByLabel('Screen', { exact: true }).isVisible(), false, 'the chat takes the screen\'s place');
    await waitFor('the turns', async () => (await chat.innerText()).includes('show me <b>x</b>'));
    const text = await chat.innerText();
    assert.match(text, /Here is bold and code:/);
    assert.match(text, /Bash: echo <img src=x onerror=alert\(1\)>/);
    assert.equal(await chat.locator('b, i, img').count(), 0, 'markup is never parsed');
    assert.equal(await chat.locator('strong').innerText(), 'bold');
    assert.equal(await chat.locator('pre.md-code').first().innerText(), 'let a = "<i>";');

    // Live: a new turn shows without a tap.
    await agent.say('assistant', [{ type: 'text', text: 'Done.' }]);
    await waitFor('the new turn', async () => (await chat.innerText()).includes('Done.'));
    assert.equal((await chat.innerText()).match(/show me/g).length, 1, 'no turn twice');

    // Kept beside the screen's text, as the chat showed them.
    await waitFor('the kept turns', async () => {
      const rec = (await keptRecords(page)).find((r) => (r.turns || []).length);
      return rec && rec.turns.some((t) => t.text === 'Done.') && rec.turns_bytes <= 128 * 1024;
    });

    // The raw screen, one tap back.
    await toggle.click();
    await page.getByLabel('Screen', { exact: true }).waitFor();
    assert.equal(await chat.isVisible(), false);
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('with "Keep text on this phone" off no chat turn is kept', T, () =>
  session(browser, 'chat-keep-off', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('checkbox', { name: 'Keep text on this phone', exact: true }).uncheck();
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await openPane(page);
    const agent = await fakeClaude(bridge);
    await agent.say('user', 'not to be kept');
    await page.getByRole('button', { name: 'Chat', exact: true }).click({ timeout: 10_000 });
    const chat = page.getByRole('region', { name: 'Chat', exact: true });
    await waitFor('the turn', async () => (await chat.innerText()).includes('not to be kept'));
    await agent.say('assistant', [{ type: 'text', text: 'Done.' }]);
    await waitFor('the next turn', async () => (await chat.innerText()).includes('Done.'));
    // Saving follows a shown turn at once; give it the time it takes when it does happen.
    await page.waitForTimeout(500);
    assert.deepEqual(await keptRecords(page), [], 'nothing kept while the setting is off');
    assert.deepEqual(page.problems, []);
  }, VIEW));

/**
 * Makes the page read as hidden (`on`) or shown, and tells it as the browser does. Headless
 * chromium never hides a page, so this stands in for the browser's own state: `document.hidden`
 * and `visibilityState` answer as in a hidden tab, and the `visibilitychange` event follows.
 */
const setHidden = (page, on) => page.evaluate((on) => {
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => on });
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (on ? 'hidden' : 'visible') });
  document.dispatchEvent(new Event('visibilitychange'));
}, on);

test('a pane that asks for a password drops its kept copy, chat turns and screen alike', T, () =>
  session(browser, 'chat-password', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    const agent = await fakeClaude(bridge);
    await agent.say('user', 'remember me');
    await agent.say('assistant', [{ type: 'text', text: 'Done.' }]);
    await page.getByRole('button', { name: 'Chat', exact: true }).click({ timeout: 10_000 });
    await waitFor('the kept turns', async () => {
      const rec = (await keptRecords(page)).find((r) => (r.turns || []).length);
      return rec && rec.turns.some((t) => t.text === 'Done.');
    });
    // The agent ends and a program asks for a password at the cursor.
    await bridge.tmux.sendKeys('C-c');
    await bridge.tmux.sendKeys("printf 'Pass''word: '; read -r x", 'Enter');
    await waitFor('the prompt in tmux', async () => (await bridge.tmux.capture()).includes('Password:'));
    await waitFor('the kept copy dropped', async () => (await keptRecords(page)).length === 0,
      { timeout: 20_000, every: 250 });
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('while the app is hidden the pane asks for no turn and no card; shown again it asks at once', T, () =>
  session(browser, 'chat-hidden', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    const agent = await fakeClaude(bridge);
    await page.getByRole('button', { name: 'Chat', exact: true }).click({ timeout: 10_000 });
    const chat = page.getByRole('region', { name: 'Chat', exact: true });
    await agent.say('user', 'before hiding');
    await waitFor('the turn', async () => (await chat.innerText()).includes('before hiding'));

    const asked = [];
    page.on('request', (r) => {
      const { pathname } = new URL(r.url());
      if (pathname.endsWith('/chat') || pathname === '/api/cards') asked.push(pathname);
    });
    await setHidden(page, true);
    // A poll sent just before the page was hidden may be reported a moment later: let it pass.
    await page.waitForTimeout(300);
    asked.length = 0;
    await agent.say('assistant', [{ type: 'text', text: 'said while hidden' }]);
    // Longer than both polls' periods (chat and cards 2 s; the app's card count 5 s).
    await page.waitForTimeout(5_500);
    assert.deepEqual(asked, [], 'no poll while hidden');
    assert.equal((await chat.innerText()).includes('said while hidden'), false);

    await setHidden(page, false);
    await waitFor('the polls at once', () => asked.includes('/api/cards') && asked.some((p) => p.endsWith('/chat')),
      { timeout: 1_500 });
    await waitFor('the turn said while hidden', async () => (await chat.innerText()).includes('said while hidden'),
      { timeout: 5_000 });
    assert.deepEqual(page.problems, []);
  }, VIEW));

test('a pane that asks for a password while the app is hidden drops its kept copy then', T, () =>
  session(browser, 'password-hidden', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await waitFor('the kept screen', async () => (await keptRecords(page)).length > 0);
    // The phone is locked; the stream goes on, and so must the check that sees the password prompt.
    await setHidden(page, true);
    await bridge.tmux.sendKeys("printf 'Pass''word: '; read -r x", 'Enter');
    await waitFor('the prompt in tmux', async () => (await bridge.tmux.capture()).includes('Password:'));
    await waitFor('the kept copy dropped while hidden', async () => (await keptRecords(page)).length === 0,
      { timeout: 20_000, every: 250 });
    assert.deepEqual(page.problems, []);
  }, VIEW));

// `Open in` on the phone's New page (issue 14; decision 0042; docs/guide/phone-app.md, "New pane"),
// on a 360 × 740 phone in headless chromium against a real bridge with an applied starter and a
// real private tmux server: the machine's tmux sessions are listed (their names set as text), a
// tap with a session chosen opens the starter as a new, named window of that session — no pane
// hosted by Collie — and the app shows it; the default stays a pane run by Collie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fakeAgent, session, pairInApp, waitFor, waitScreen, WINDOW, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };
// A session name a page must never read as markup (tmux allows all of it in a name).
const ODD = '<b id=odd>bold</b>';

const CONFIG = (dir) => `
[[starters]]
name = "Helper"
exec = "${path.join(dir, 'home', 'bin', 'fake-agent')}"
args = ["plain"]
`;

async function ownPanes(bridge) {
  return JSON.parse(await bridge.cliOk(['panes', 'list', '--json'])).panes;
}

async function windowNames(bridge, target) {
  const out = await bridge.tmux.run(['list-windows', '-t', target, '-F', '#{window_name}']);
  return out.stdout.split('\n').filter(Boolean);
}

test('Open in lists the tmux sessions and a starter opens as a named window of the one chosen', T, () =>
  session(browser, 'window-open-in', async ({ page, bridge }) => {
    const made = await bridge.tmux.run(['new-session', '-d', '-s', ODD, '-x', '80', '-y', '24']);
    assert.equal(made.code, 0, made.stderr);
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await page.getByRole('link', { name: 'New pane', exact: true }).click();
    await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
    const openIn = page.getByLabel('Open in', { exact: true });
    await openIn.waitFor();
    // The bridge mirrors the private server as tmux server 1 (0 is the default socket).
    await waitFor('both sessions listed', async () =>
      (await openIn.locator('option').allInnerTexts()).length === 3);
    const options = await openIn.locator('option').allInnerTexts();
    assert.deepEqual(options.slice(0, 1), ['A new Collie pane']);
    assert.deepEqual(options.slice(1).sort(), [
      `tmux session ${ODD} (tmux server 1)`,
      'tmux session main (tmux server 1)',
    ].sort());
    assert.equal(await page.locator('#odd').count(), 0, 'a name is text, never markup');
    assert.equal(await openIn.inputValue(), '', 'a pane run by Collie is the default');
    const box = await openIn.boundingBox();
    assert.ok(box && box.height >= 44 && box.x + box.width <= VIEW.width, JSON.stringify(box));

    await openIn.selectOption({ label: 'tmux session main (tmux server 1)' });
    assert.match(await page.locator('#start-shell-detail').innerText(), /A new window of the tmux session main/);
    await page.locator('#new-name').fill('agent-win');
    await page.getByRole('button', { name: 'Helper', exact: true }).click();
    await page.getByRole('heading', { name: 'agent-win', exact: true }).waitFor();
    await waitScreen(page, 'the starter ran in the window', (text) => text.includes('STARTED:plain:'));
    assert.ok((await windowNames(bridge, 'main')).includes('agent-win'), 'tmux has the window');
    assert.ok(!(await windowNames(bridge, ODD)).includes('agent-win'), 'only in the session chosen');
    assert.equal((await ownPanes(bridge)).filter((p) => p.backend === 'pty').length, 0,
      'no pane hosted by Collie');

    // Back on the New page, the default still opens a pane run by Collie.
    await page.goto(`${bridge.url}/#/new`);
    await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await waitFor('a hosted shell', async () =>
      (await ownPanes(bridge)).filter((p) => p.backend === 'pty').length === 1, { timeout: 10_000 });
  }, { ...VIEW, bridge: { setup: fakeAgent, config: CONFIG } }));

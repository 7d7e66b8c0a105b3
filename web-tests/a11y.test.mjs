// Accessibility (issue 15): axe-core (web-tests/node_modules, from the committed lock) on every
// screen of the phone app — pairing, panes, a pane, its chat, New, Cards, Walky, Agents, Files, Sent and
// Settings — on a 360 × 740 phone, in the light and the dark theme, against a real bridge and a
// real private tmux server. No serious or critical violation may be found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  fakeAgent, fakeClaude, session, pairInApp, openPane, axeViolations, waitScreen, WINDOW, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 180_000 };

/** Starters, so the New page shows its list, a "No prompts" badge and the form to add a row. */
const CONFIG = (dir) => `
[phone]
free_text = true

[[starters]]
name = "Claude"
exec = "${path.join(dir, 'home', 'bin', 'fake-agent')}"
agent = "claude"
no_prompts = true
`;

/** Each screen after pairing: its route and the heading that says it is shown. */
const SCREENS = [
  ['#/', 'Panes'],
  ['#/new', 'New pane'],
  ['#/cards', 'Cards'],
  ['#/walky', 'Messages'],
  ['#/agents', 'Agents'],
  ['#/files', 'Files'],
  ['#/sent', 'Sent'],
  ['#/settings', 'Settings'],
];

for (const colorScheme of ['light', 'dark']) {
  test(`every screen passes axe-core without a serious or critical violation (${colorScheme})`, T, () =>
    session(browser, `a11y-${colorScheme}`, async ({ bridge, page }) => {
      const found = [];
      const audit = async (what) => {
        for (const v of await axeViolations(page)) found.push(`${what}: ${v}`);
      };

      const code = await bridge.code('full');
      await page.goto(`${bridge.url}/#pair=${code}`);
      await page.getByLabel('Device name', { exact: true }).waitFor();
      await audit('pairing');
      await page.getByLabel('Device name', { exact: true }).fill('phone');
      await page.getByRole('button', { name: 'Pair', exact: true }).click();
      await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();

      for (const [route, heading] of SCREENS) {
        await page.goto(`${bridge.url}/${route}`);
        await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
        // Let the screen's first fetch land, so what it lists is audited too.
        await page.waitForLoadState('networkidle').catch(() => {});
        await audit(heading);
      }

      await page.goto(`${bridge.url}/#/new`);
      await page.getByRole('button', { name: 'Add starter', exact: true }).click();
      await audit('New pane with its Add starter form');

      await page.goto(`${bridge.url}/#/`);
      await openPane(page, WINDOW);
      await bridge.tmux.sendKeys("printf 'rea''dy\\n'", 'Enter');
      await waitScreen(page, 'ready', (l) => l.includes('ready'));
      await audit('pane');
      await page.getByRole('button', { name: 'Pane actions', exact: true }).click();
      await page.getByRole('dialog').waitFor();
      await audit('pane actions sheet');
      await page.keyboard.press('Escape');

      // The chat of an agent's pane.
      const agent = await fakeClaude(bridge);
      await agent.say('user', 'make the marker');
      await agent.say('assistant', [{ type: 'text', text: 'Done: **ok**\n```\ntouch marker\n```' },
        { type: 'tool_use', name: 'Bash', input: { command: 'touch marker' } }]);
      await page.getByRole('button', { name: 'Chat', exact: true }).click({ timeout: 10_000 });
      await page.getByRole('region', { name: 'Chat', exact: true }).getByText('make the marker').waitFor();
      await audit('chat');

      assert.deepEqual(found, [], `axe-core found:\n${found.join('\n')}`);
      assert.deepEqual(page.problems, []);
    }, { bridge: { setup: fakeAgent, config: CONFIG }, width: 360, height: 740, colorScheme }));
}

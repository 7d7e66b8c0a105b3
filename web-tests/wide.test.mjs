// Wide characters on the phone's screen (issue 15; decision 0044): CJK and emoji take two columns
// on a terminal, and the cursor and colour runs are placed by columns, so a wide character is drawn
// exactly two columns wide. On a 360 × 740 phone in headless chromium against a real bridge and a
// real tmux pane.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, openPane, waitFor, waitScreen, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

test('the cursor after four CJK characters sits right after the last of them', T, () =>
  session(browser, 'wide-cursor', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    // The shell waits in `read` with the cursor after the printed characters (column 8).
    await bridge.tmux.sendKeys("printf '\\346\\274\\242\\345\\255\\227\\346\\274\\242\\345\\255\\227'; read x", 'Enter');
    await waitScreen(page, 'the four characters', (l) => l === '漢字漢字');
    const place = await waitFor('the cursor on the characters\u2019 row', () => page.evaluate(() => {
      const cursor = document.querySelector('.cursor');
      const wide = [...document.querySelectorAll('pre.screen .wc')];
      if (!cursor || cursor.hidden || wide.length < 4) return null;
      const c = cursor.getBoundingClientRect();
      const last = wide[wide.length - 1].getBoundingClientRect();
      const first = wide[0].getBoundingClientRect();
      if (Math.abs(c.top - last.top) > 2) return null;
      return { cursor: c.left, lastRight: last.right, cell: c.width, first: first.width };
    }));
    assert.ok(Math.abs(place.cursor - place.lastRight) < 1,
      `the cursor starts where the characters end: ${JSON.stringify(place)}`);
    assert.ok(Math.abs(place.first - 2 * place.cell) < 0.5, `a wide character is two cells: ${JSON.stringify(place)}`);
    assert.deepEqual(page.problems, []);
  }, { width: 360, height: 740 }));

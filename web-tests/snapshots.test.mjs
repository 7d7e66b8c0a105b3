// Snapshot comparison of the pane view in colour (issue 15), on a 360 × 740 phone in headless
// Debian chromium against a real bridge and a real private tmux pane: the screen a short script
// paints (16, 256 and true colours, bold, italic, underline, inverse, a masked token) is compared,
// pixel by pixel with a small tolerance for anti-aliasing, with the screenshots committed under
// docs/screenshots/ (shown in the README), in the dark and the light theme. A missing reference
// fails; `COLLIE_UPDATE_SNAPSHOTS=1 node --test web-tests/snapshots.test.mjs` writes them anew
// (look at them before committing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import { ROOT, session, pairInApp, openPane, waitFor, waitScreen, isLine, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const UPDATE = process.env.COLLIE_UPDATE_SNAPSHOTS === '1';
/** A pixel differs when one channel moves by more than this; at most `SHARE` of them may. */
const CHANNEL = 48;
const SHARE = 0.005;

const DEMO = [
  "printf '\\033[1;32m✔ build\\033[0m finished in \\033[1m3.1s\\033[0m\\n'",
  "printf '\\033[31m- let total = a + b;\\033[0m\\n'",
  "printf '\\033[32m+ let total = a.saturating_add(b);\\033[0m\\n'",
  "printf '\\033[38;5;208m256: orange\\033[0m \\033[38;2;90;160;255mtrue colour\\033[0m \\033[7minverse\\033[0m\\n'",
  "printf '\\033[4munderline\\033[0m \\033[3mitalic\\033[0m \\033[33;44m yellow on blue \\033[0m\\n'",
  "printf 'pushing as %s%s\\n' ghp_ aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s",
  'echo done.',
  '',
].join('\n');

/** How many pixels of two PNGs (same size) differ, counted in a blank page's canvas. */
function differing(page, a, b) {
  return page.evaluate(async ([a, b, channel]) => {
    const load = (b64) => new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => resolve(img);
      img.onerror = reject;
      img.src = `data:image/png;base64,${b64}`;
    });
    const [ia, ib] = await Promise.all([load(a), load(b)]);
    if (ia.width !== ib.width || ia.height !== ib.height) return { size: [ia.width, ia.height, ib.width, ib.height] };
    const data = (img) => {
      const c = document.createElement('canvas');
      c.width = img.width;
      c.height = img.height;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      return ctx.getImageData(0, 0, img.width, img.height).data;
    };
    const [da, db] = [data(ia), data(ib)];
    let n = 0;
    for (let i = 0; i < da.length; i += 4) {
      if (Math.abs(da[i] - db[i]) > channel || Math.abs(da[i + 1] - db[i + 1]) > channel
        || Math.abs(da[i + 2] - db[i + 2]) > channel) n++;
    }
    return { n, total: da.length / 4 };
  }, [a.toString('base64'), b.toString('base64'), CHANNEL]);
}

for (const colorScheme of ['dark', 'light']) {
  test(`the colour pane view matches docs/screenshots/pane-colour-${colorScheme}.png`, T, () =>
    session(browser, `snapshot-${colorScheme}`, async ({ page, bridge, context }) => {
      await writeFile(path.join(bridge.dir, 'home', 'demo.sh'), DEMO);
      await pairInApp(page, bridge);
      await openPane(page);
      await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
      await bridge.tmux.sendKeys('clear; sh ~/demo.sh', 'Enter');
      await waitScreen(page, 'the last output', isLine('done.'));
      await waitFor('the prompt after it', async () => (await bridge.tmux.capture()).trimEnd().endsWith('$'));
      await waitScreen(page, 'the prompt after the output', (l) => l === '$');
      await waitFor('status Live', async () => (await page.getByRole('status').first().innerText()).includes('Live'));
      // The one-time hint about the masked token is the app's own; the snapshot is of the screen.
      await page.getByRole('button', { name: 'Got it', exact: true }).click();
      await page.getByRole('button', { name: 'Send', exact: true }).focus();
      const shot = await page.screenshot({ animations: 'disabled', caret: 'hide' });
      const file = path.join(ROOT, 'docs', 'screenshots', `pane-colour-${colorScheme}.png`);
      if (UPDATE) {
        await writeFile(file, shot);
        return;
      }
      const want = await readFile(file).catch(() => null);
      assert.ok(want, `${file} is missing: COLLIE_UPDATE_SNAPSHOTS=1 node --test web-tests/snapshots.test.mjs`);
      const blank = await context.newPage();
      const d = await differing(blank, shot, want);
      await blank.close();
      if (d.size || d.n > SHARE * d.total) {
        const got = path.join(bridge.dir, `pane-colour-${colorScheme}.png`);
        await writeFile(got, shot);
        assert.fail(`the pane view differs from ${file}: ${JSON.stringify(d)} (this run's screenshot was written to ${got}, removed with the test's folder)`);
      }
      assert.deepEqual(page.problems, []);
    }, { width: 360, height: 740, colorScheme }));
}

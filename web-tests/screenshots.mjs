// Takes the README's screenshots of the phone app at 390×844 (CSS px, scale 1) into docs/screenshots/:
// the pairing screen (opened from a QR link), the pane list, a pane view, the New pane page and a
// pane's actions sheet, against a real bridge and a real private tmux pane. Run on demand (not part
// of `node --test`):
//
//   cargo build --workspace --all-features && node web-tests/screenshots.mjs
//
// COLLIE_BIN picks another binary; SCREENSHOT_SCHEME=light|dark (default dark).
import path from 'node:path';
import { mkdir, writeFile } from 'node:fs/promises';
import {
  ROOT, Bridge, launchBrowser, openPage, pairInApp, openPane, waitFor, waitScreen, isLine,
} from './support.mjs';

const out = path.join(ROOT, 'docs', 'screenshots');
const colorScheme = process.env.SCREENSHOT_SCHEME || 'dark';
await mkdir(out, { recursive: true });

const bridge = await Bridge.start({ name: 'laptop' });
let browser;
try {
  // Something to look at in the pane: a short script's output, with a GitHub token that the bridge
  // masks before it leaves the machine (the typed line `sh ~/demo.sh` holds no secret).
  await writeFile(path.join(bridge.dir, 'home', 'demo.sh'), [
    'echo "   Compiling collie v0.1.0 (/home/anna/collie)"',
    'echo "    Finished test profile in 3.1s"',
    'echo "test result: ok. 128 passed; 0 failed"',
    "printf 'pushing as %s%s\\n' ghp_ aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s",
    'echo "done."',
    '',
  ].join('\n'));
  await bridge.tmux.sendKeys('sh ~/demo.sh', 'Enter');
  browser = await launchBrowser();
  const { context, page } = await openPage(browser, { width: 390, height: 844, colorScheme });
  try {
    const code = await bridge.code();
    await page.goto(`${bridge.url}/#pair=${code}`);
    await page.getByLabel('Pairing code', { exact: true }).waitFor();
    await page.getByLabel('Device name', { exact: true }).fill('my-phone');
    await page.screenshot({ path: path.join(out, 'pairing.png') });

    await page.getByRole('button', { name: 'Pair', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await page.getByRole('link', { name: 'work', exact: true }).waitFor();
    await page.screenshot({ path: path.join(out, 'panes.png') });

    await openPane(page);
    await waitScreen(page, 'the last output', isLine('done.'));
    await waitFor('status Live', async () => (await page.getByRole('status').innerText()).includes('Live'));
    await page.getByLabel('Type to pane', { exact: true }).fill('git status');
    await page.screenshot({ path: path.join(out, 'pane.png') });

    await page.getByRole('button', { name: 'Pane actions', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rename', exact: true }).waitFor();
    await page.screenshot({ path: path.join(out, 'pane-actions.png') });
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel', exact: true }).click();

    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: 'New pane', exact: true }).click();
    await page.getByRole('button', { name: 'Shell', exact: true }).waitFor();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('build');
    await page.screenshot({ path: path.join(out, 'new.png') });
  } finally {
    await context.close();
  }
  console.log(`wrote ${['pairing.png', 'panes.png', 'pane.png', 'pane-actions.png', 'new.png'].map((f) => path.join('docs/screenshots', f)).join(', ')}`);
} finally {
  await browser?.close();
  await bridge.close();
}

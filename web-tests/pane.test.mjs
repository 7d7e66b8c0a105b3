// The live pane view of the phone app (issue 3; docs/guide/phone-app.md): typing, named keys,
// masking and reconnecting, in headless chromium against a real bridge and a real tmux pane.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  session, pairInApp, openPane, waitFor, waitScreen, screenLines, isLine, sleep, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 90_000 };

async function send(page, text) {
  await page.getByLabel('Type to pane', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

const status = async (page) => (await page.getByRole('status').innerText()).trim();

test('2. typing `echo hello` + Send shows hello on the Screen', T, () =>
  session(browser, 'type-send', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await send(page, 'echo hel""lo');
    // The typed command line, then the command's own output line.
    const lines = await waitScreen(page, 'the output line `hello`', isLine('hello'));
    assert.ok(lines.some((l) => l.includes('echo hel""lo')), 'the typed command is shown');
    // Send pressed Enter: the command ran in tmux.
    const tmux = (await bridge.tmux.capture()).split('\n').map((l) => l.trim());
    assert.ok(tmux.includes('hello'), `tmux ran the command:\n${tmux.join('\n')}`);
  }));

test('3. the Ctrl+C key button interrupts a running command', T, () =>
  session(browser, 'ctrl-c', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await send(page, 'sleep 100');
    await waitScreen(page, 'the sleep command', (l) => l.includes('sleep 100'));
    await waitFor('sleep running in the pane', async () =>
      (await bridge.tmux.run(['display-message', '-p', '-t', 'main:0', '#{pane_current_command}'])).stdout.trim() === 'sleep');
    await page.getByRole('button', { name: 'Ctrl+C', exact: true }).click();
    await waitFor('^C in tmux', async () => (await bridge.tmux.capture()).includes('^C'));
    // The prompt is back: a new command runs at once (it would wait 100 s behind sleep otherwise).
    await send(page, 'echo af""ter');
    await waitScreen(page, 'the output line `after`', isLine('after'), 5_000);
  }));

test('4. a secret printed in the pane is masked on the Screen', T, () =>
  session(browser, 'mask', async ({ page, bridge }) => {
    const body = 'aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s';
    assert.equal(body.length, 36);
    const raw = `ghp_${body}`;
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    // The typed line never holds the token itself: printf joins the two halves.
    await send(page, `printf '%s%s\\n' ghp_ ${body}`);
    await waitFor('the token in tmux', async () => (await bridge.tmux.capture()).includes(raw));
    const masked = `ghp_a${'•'.repeat(35)}`;
    const lines = await waitScreen(page, `the masked line ${masked}`, isLine(masked));
    assert.ok(!lines.join('\n').includes(raw), 'the raw token is not on the Screen');
    assert.ok(!(await page.content()).includes(raw), 'the raw token is nowhere in the DOM');
  }));

test('8. after the bridge restarts the status reads Reconnecting… then Live, and output flows again', T, () =>
  session(browser, 'reconnect', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitFor('status Live', async () => (await status(page)).includes('Live'));

    await bridge.stop();
    await waitFor('status Reconnecting…', async () => (await status(page)).includes('Reconnecting…'), { timeout: 15_000 });
    await sleep(1_000); // the bridge stays down for a moment: the outage itself, not a wait for a condition
    await bridge.launch(); // same port, same state dir, same tmux server
    await waitFor('status Live again', async () => (await status(page)).includes('Live'), { timeout: 30_000 });

    await bridge.tmux.sendKeys('echo recon""nected', 'Enter');
    await waitScreen(page, 'the output line `reconnected`', isLine('reconnected'));
    // The app still drives the pane after reconnecting.
    await page.getByLabel('Type to pane', { exact: true }).fill('echo ty""ped');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const lines = await waitScreen(page, 'the output line `typed`', isLine('typed'));
    assert.ok(lines.some(isLine('reconnected')));
    assert.deepEqual((await screenLines(page)).filter((l) => l.includes('undefined')), []);
  }));

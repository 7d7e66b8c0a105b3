// Pairing, unpairing and tiers in the phone app (issue 3; docs/guide/phone-app.md), in headless
// chromium against a real bridge and a real private tmux server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  session, storage, pairInApp, openPane, waitFor, waitScreen, WINDOW, keptStore, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 90_000 };
const norm = (code) => code.replace(/-/g, '').toUpperCase();

/** Every URL held in Cache Storage. */
function cachedUrls(page) {
  return page.evaluate(async () => {
    const out = [];
    for (const name of await caches.keys()) {
      for (const req of await (await caches.open(name)).keys()) out.push(req.url);
    }
    return out;
  });
}

test('1. pairing through the QR link pre-fills the code, stores the token and lands on Panes', T, () =>
  session(browser, 'pair-qr', async ({ bridge, page }) => {
    const code = await bridge.code();
    await page.goto(`${bridge.url}/#pair=${code}`);
    await page.getByRole('heading', { name: 'Pair this phone', exact: true }).waitFor();
    const field = page.getByLabel('Pairing code', { exact: true });
    await waitFor('the code to be pre-filled', async () => norm(await field.inputValue()) === norm(code));

    await page.getByLabel('Device name', { exact: true }).fill('phone-1');
    await page.getByRole('button', { name: 'Pair', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();

    const ls = await storage(page);
    assert.ok(ls['collie.token'], `collie.token in localStorage: ${JSON.stringify(Object.keys(ls))}`);
    // The stored token is the device's real token: the bridge accepts it and names this device.
    const { status, body } = await bridge.api('/api/devices', ls['collie.token']);
    assert.equal(status, 200);
    const me = body.devices.find((d) => d.current);
    assert.equal(me?.label, 'phone-1');
    assert.equal(me?.tier, 'full');
  }));

test('5. revoking this device from Settings clears storage, keeps the theme and shows pairing', T, () =>
  session(browser, 'revoke-settings', async ({ bridge, page }) => {
    const observer = await bridge.pairApi('observer');
    await pairInApp(page, bridge, { label: 'phone-5' });

    // An appearance setting, chosen in Settings before unpairing.
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    await page.getByLabel('Theme', { exact: true }).selectOption({ label: 'Dark' });
    const theme = await waitFor('collie.pref.theme to be stored', async () => (await storage(page))['collie.pref.theme']);

    // Something for the phone to keep: a pane viewed (kept text) and an unsent draft.
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await page.getByLabel('Type to pane', { exact: true }).fill('an unsent draft');
    // Keeping text is on by default: the pane's masked text is in collie-store before unpairing.
    await waitFor('kept pane text in collie-store', async () => (await keptStore(page)).records.length > 0);
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();

    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke phone-5', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Revoke phone-5?').waitFor();
    await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();

    await page.getByRole('heading', { name: 'Pair this phone', exact: true }).waitFor();
    await page.getByLabel('Pairing code', { exact: true }).waitFor();

    const ls = await storage(page);
    assert.equal(ls['collie.token'], undefined, 'collie.token removed');
    assert.equal(ls['collie.device'], undefined, 'collie.device removed');
    assert.deepEqual(Object.keys(ls).filter((k) => k.startsWith('collie.draft.')), [], 'drafts removed');
    assert.equal(ls['collie.pref.theme'], theme, 'collie.pref.theme kept');
    const store = await keptStore(page);
    assert.equal(store.records.length, 0, `collie-store gone or empty: ${JSON.stringify(store)}`);
    const urls = await cachedUrls(page);
    assert.deepEqual(urls.filter((u) => new URL(u).pathname.startsWith('/api/')), [], 'no API answers cached');

    // The bridge revoked it too.
    const { body } = await bridge.api('/api/devices', observer);
    assert.deepEqual(body.devices.map((d) => d.label), ['observer']);
  }));

test('6. a read device sees the pane but no input controls', T, () =>
  session(browser, 'read-tier', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { label: 'reader', tier: 'read' });
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await waitFor('status Live', async () => (await page.getByRole('status').innerText()).includes('Live'));
    assert.equal(await page.getByLabel('Type to pane', { exact: true }).count(), 0, 'no Type to pane');
    assert.equal(await page.getByRole('textbox').count(), 0, 'no text field at all');
    assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).count(), 0, 'no Send');
    for (const key of ['Enter', 'Esc', 'Tab', 'Up', 'Down', 'Left', 'Right', 'Ctrl+C', 'Ctrl+D',
      'Ctrl+Z', 'Ctrl+L', 'Backspace', 'PageUp', 'PageDown']) {
      assert.equal(await page.getByRole('button', { name: key, exact: true }).count(), 0, `no ${key} key`);
    }
  }));

test('7. a 403 device not paired while open (revoked from the CLI) clears storage and shows pairing', T, () =>
  session(browser, 'revoke-cli', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { label: 'phone-7' });
    await openPane(page);
    await waitFor('status Live', async () => (await page.getByRole('status').innerText()).includes('Live'));
    await page.getByLabel('Type to pane', { exact: true }).fill('echo a draft');
    await waitFor('kept pane text in collie-store', async () => (await keptStore(page)).records.length > 0);
    await waitFor('the draft stored', async () =>
      Object.keys(await storage(page)).some((k) => k.startsWith('collie.draft.')));

    await bridge.cliOk(['devices', 'revoke', 'phone-7']);
    // The next call: Send (if the stream has not already met the 403 and left the pane view).
    try {
      await page.getByLabel('Type to pane', { exact: true }).fill('echo after revoke', { timeout: 2_000 });
      await page.getByRole('button', { name: 'Send', exact: true }).click({ timeout: 2_000 });
    } catch {}
    await page.getByRole('heading', { name: 'Pair this phone', exact: true }).waitFor({ timeout: 10_000 });

    const ls = await storage(page);
    assert.equal(ls['collie.token'], undefined, 'collie.token removed');
    assert.equal(ls['collie.device'], undefined, 'collie.device removed');
    assert.deepEqual(Object.keys(ls).filter((k) => k.startsWith('collie.draft.')), [], 'drafts removed');
    const store = await keptStore(page);
    assert.equal(store.records.length, 0, `collie-store gone or empty: ${JSON.stringify(store)}`);
    // Nothing typed after the revocation reached tmux.
    assert.ok(!(await bridge.tmux.capture()).includes('after revoke'));
  }));

test('pairing errors are shown in words: a wrong code, a name in use, too many attempts', T, () =>
  session(browser, 'pair-errors', async ({ bridge, page }) => {
    await bridge.pairApi('taken');
    const alert = page.getByRole('alert');
    const pair = async (code, label) => {
      await page.getByLabel('Pairing code', { exact: true }).fill(code);
      await page.getByLabel('Device name', { exact: true }).fill(label);
      await page.getByRole('button', { name: 'Pair', exact: true }).click();
    };
    await page.goto(`${bridge.url}/`);
    await pair('ZZZZ-ZZZZ', 'phone-e');
    await waitFor('the wrong-code message', async () =>
      (await alert.innerText()).includes('That code is wrong or has expired.'));

    await pair(await bridge.code(), 'taken');
    await waitFor('the label-in-use message', async () =>
      (await alert.innerText()).includes('Another device already uses that name.'));

    // More than ten attempts a minute from one address: 429 with Retry-After: 60.
    for (let i = 0; i < 12; i++) {
      await pair('ZZZZ-ZZZZ', 'phone-e');
      if ((await alert.innerText().catch(() => '')).includes('Too many attempts')) break;
      await page.waitForTimeout(100);
    }
    await waitFor('the too-many-attempts message', async () =>
      /Too many attempts\. Wait 60 seconds/.test(await alert.innerText()));
    assert.equal((await storage(page))['collie.token'], undefined);
  }));

test('turning "Keep text on this phone" off deletes the kept copy and keeps nothing new', T, () =>
  session(browser, 'keep-off', async ({ bridge, page }) => {
    await pairInApp(page, bridge, { label: 'keeper' });
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await waitFor('kept pane text in collie-store', async () => (await keptStore(page)).records.length > 0);
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    const keep = page.getByRole('checkbox', { name: 'Keep text on this phone', exact: true });
    assert.equal(await keep.isChecked(), true, 'on by default');
    await keep.uncheck();
    await waitFor('collie-store emptied', async () => (await keptStore(page)).records.length === 0);
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await openPane(page);
    await page.getByLabel('Type to pane', { exact: true }).fill('echo no""thing');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitScreen(page, 'the output line `nothing`', (l) => l.trim() === 'nothing');
    await page.waitForTimeout(500);
    assert.equal((await keptStore(page)).records.length, 0, 'nothing kept while the setting is off');
  }));

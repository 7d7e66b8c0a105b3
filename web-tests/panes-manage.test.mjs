// Creating, renaming and closing panes from the phone (issue 14; SPEC §3.2, §3.3;
// docs/guide/phone-app.md, "New pane" and "Pane actions"), on a 360 × 740 phone in headless
// chromium against real bridges and real private tmux servers: a hosted shell opened on the bridge
// and on a crew member through the lead, a tmux window renamed and closed, a member's pane renamed
// and closed through the lead, what a `read` device sees and what the bridge answers it, a bad
// name, and a tier lowered while the phone looks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  session, crewSession, pairInApp, openPane, waitFor, waitScreen, isLine, MEMBER, WINDOW, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };
/** The bridge's words for a bad pane name (src/app/panes.rs, `validate_pane_name`). */
const NAME_RULE = 'invalid name: 1-64 characters, no control characters';

/** The panes a bridge hosts or mirrors itself, from its own CLI (not through the phone). */
async function ownPanes(bridge) {
  return JSON.parse(await bridge.cliOk(['panes', 'list', '--json'])).panes;
}

/** The window names of a bridge's private tmux server. */
async function windows(bridge) {
  const out = await bridge.tmux.run(['list-windows', '-a', '-F', '#{window_name}']);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split('\n').filter(Boolean);
}

/** `GET /api/panes` as the page's own device sees it. */
function apiPanes(page) {
  return page.evaluate(async () => {
    const token = localStorage.getItem('collie.token') || '';
    const r = await fetch('/api/panes', { headers: { Authorization: `Bearer ${token}` } });
    return (await r.json()).panes;
  });
}

/** A machine's group on the Panes screen. */
const group = (page, name) => page.getByRole('region', { name, exact: true });

/** Asserts that `locator` is at least 44 × 44 CSS px and wholly inside the 360 × 740 viewport. */
async function thumbSized(locator, what) {
  const box = await locator.boundingBox();
  assert.ok(box, `${what} is laid out`);
  assert.ok(box.width >= 44 && box.height >= 44, `${what} is at least 44 px: ${JSON.stringify(box)}`);
  assert.ok(box.x >= 0 && box.y >= 0 && box.x + box.width <= VIEW.width && box.y + box.height <= VIEW.height,
    `${what} is inside the viewport: ${JSON.stringify(box)}`);
}

/** Nothing on the page is wider than the phone. */
async function noSideScroll(page) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= VIEW.width, `the page is ${width} px wide`);
}

const noCsp = (page) => assert.deepEqual(page.problems.filter((p) => p.includes('CSP')), []);

/** From the Panes screen, the New page. */
async function openNew(page) {
  const plus = page.getByRole('link', { name: 'New pane', exact: true });
  await thumbSized(plus, 'the New pane button');
  await plus.click();
  await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Shell', exact: true }).waitFor();
}

/** Opens the pane's actions sheet and taps `action` in it. */
async function paneAction(page, action) {
  const open = page.getByRole('button', { name: 'Pane actions', exact: true });
  await thumbSized(open, 'Pane actions');
  await open.click();
  const button = page.getByRole('dialog').getByRole('button', { name: action, exact: true });
  await thumbSized(button, action);
  await button.click();
}

/** Renames the open pane through its actions sheet; checks the field held `current`. */
async function rename(page, current, next) {
  await paneAction(page, 'Rename');
  const dialog = page.getByRole('dialog', { name: 'Rename pane', exact: true });
  const field = dialog.getByRole('textbox', { name: 'Name', exact: true });
  assert.equal(await field.inputValue(), current, 'the field starts with the current name');
  await field.fill(next);
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  return dialog;
}

/** Closes the open pane through its actions sheet: `confirm` taps `Close pane`, else `Cancel`. */
async function close(page, name, confirm) {
  await paneAction(page, 'Close pane');
  const dialog = page.getByRole('dialog', { name: `Close ${name}?`, exact: true });
  assert.match(await dialog.innerText(), /The program running in it on \S+ is ended/);
  await dialog.getByRole('button', { name: confirm ? 'Close pane' : 'Cancel', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
}

test('New pane: `+` → Shell with a name opens a hosted shell on the bridge, named, that runs what is typed', T, () =>
  session(browser, 'manage-new-local', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    await noSideScroll(page);
    // The crew of a solo bridge is the bridge itself, picked already.
    assert.equal(await page.getByLabel('Machine', { exact: true }).inputValue(), bridge.name);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('build');
    const shell = page.getByRole('button', { name: 'Shell', exact: true });
    await thumbSized(shell, 'Shell');
    assert.match(await page.getByText(/^A new shell on /).innerText(), new RegExp(`on ${bridge.name},`));
    await shell.click();
    // The app opens the new pane.
    await page.getByRole('heading', { name: 'build', exact: true }).waitFor();
    assert.match(page.url(), new RegExp(`#/pane/${bridge.name}/p\\d+$`));
    const made = (await ownPanes(bridge)).filter((p) => p.name === 'build');
    assert.equal(made.length, 1, 'one pane named build on the bridge');
    assert.equal(made[0].backend, 'pty', 'a hosted pane, not a tmux window');
    assert.ok(page.url().endsWith(`/${made[0].pane}`), 'the page shows that pane');
    assert.deepEqual(await windows(bridge), [WINDOW], 'no tmux window was made');
    // It is a live shell: what the phone types runs there.
    await page.getByLabel('Type to pane', { exact: true }).fill('echo new-sh""ell');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitScreen(page, 'the output line `new-shell`', isLine('new-shell'));
    noCsp(page);
  }, VIEW));

test('crew: a pane opened on the member through the lead, renamed, then closed; and the member gone', T, () =>
  crewSession(browser, 'manage-member', async ({ page, lead, member }) => {
    await pairInApp(page, lead);
    await group(page, MEMBER).getByRole('link', { name: WINDOW, exact: true }).waitFor({ timeout: 15_000 });
    await openNew(page);
    const machine = page.getByLabel('Machine', { exact: true });
    assert.equal(await machine.inputValue(), lead.name, 'the lead is picked first');
    await machine.selectOption(MEMBER);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('remote');
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await page.getByRole('heading', { name: 'remote', exact: true }).waitFor();
    assert.match(page.url(), new RegExp(`#/pane/${MEMBER}/p\\d+$`), 'the URL names the member');
    const onMember = (await ownPanes(member)).filter((p) => p.name === 'remote');
    assert.equal(onMember.length, 1, 'the member hosts it');
    assert.equal(onMember[0].backend, 'pty');
    assert.deepEqual((await ownPanes(lead)).filter((p) => p.name === 'remote'), [], 'not the lead');
    await page.getByLabel('Type to pane', { exact: true }).fill('echo on-mem""ber');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waitScreen(page, 'the output line `on-member`', isLine('on-member'));

    // Rename, through the lead: the member and the lead's API agree, and so does the list.
    const renameDialog = await rename(page, 'remote', 'renamed');
    await renameDialog.waitFor({ state: 'detached' });
    await page.getByRole('heading', { name: 'renamed', exact: true }).waitFor();
    const id = onMember[0].pane;
    assert.equal((await ownPanes(member)).find((p) => p.pane === id)?.name, 'renamed');
    assert.equal((await apiPanes(page)).find((p) => p.machine === MEMBER && p.pane === id)?.name, 'renamed');
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    const link = group(page, MEMBER).getByRole('link', { name: 'renamed', exact: true });
    await link.waitFor();
    assert.equal(await page.getByRole('link', { name: 'remote', exact: true }).count(), 0);

    // Close: Cancel keeps it; Close pane ends it, and the app goes back to the list without it.
    await link.click();
    await page.getByRole('heading', { name: 'renamed', exact: true }).waitFor();
    await close(page, 'renamed', false);
    assert.ok((await ownPanes(member)).some((p) => p.pane === id), 'Cancel closed nothing');
    await close(page, 'renamed', true);
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await waitFor('the closed pane to leave the list',
      async () => (await group(page, MEMBER).getByRole('link', { name: 'renamed', exact: true }).count()) === 0);
    assert.ok(!(await ownPanes(member)).some((p) => p.pane === id), 'the member no longer has it');
    assert.ok((await ownPanes(member)).some((p) => p.name === WINDOW), 'its tmux pane is untouched');

    // A refusal of the bridge is shown as it is: the member dies while the New page is open.
    await openNew(page);
    await page.getByLabel('Machine', { exact: true }).selectOption(MEMBER);
    await member.kill();
    await waitFor('the lead to see the member offline',
      async () => (await lead.crewMember(MEMBER))?.online === false, { timeout: 10_000, every: 200 });
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'Not created: member unreachable.' }).waitFor();
    assert.match(page.url(), /#\/new$/, 'the page stays');
    noCsp(page);
  }, VIEW));

test('a tmux pane renamed from the phone renames its window; closed, it is gone from tmux', T, () =>
  session(browser, 'manage-tmux', async ({ page, bridge }) => {
    const made = await bridge.tmux.run(['new-window', '-d', '-t', 'main:', '-n', 'extra', 'sh']);
    assert.equal(made.code, 0, made.stderr);
    await pairInApp(page, bridge);
    await openPane(page, 'extra');
    await noSideScroll(page);
    const dialog = await rename(page, 'extra', 'extra-2');
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('heading', { name: 'extra-2', exact: true }).waitFor();
    assert.deepEqual((await windows(bridge)).sort(), ['extra-2', WINDOW].sort(), 'tmux renamed the window');
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: 'extra-2', exact: true }).waitFor();

    await openPane(page, 'extra-2');
    await close(page, 'extra-2', true);
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    assert.deepEqual(await windows(bridge), [WINDOW], 'the window is gone from tmux');
    await waitFor('the closed pane to leave the list',
      async () => (await page.getByRole('link', { name: 'extra-2', exact: true }).count()) === 0);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    noCsp(page);
  }, VIEW));

test('a read device sees no New pane, Rename or Close, and the bridge refuses its forged requests (403)', T, () =>
  session(browser, 'manage-read', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { tier: 'read' });
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'New pane' }).count(), 0);
    await openPane(page, WINDOW);
    assert.equal(await page.getByRole('button', { name: 'Pane actions' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Rename' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Close pane' }).count(), 0);
    // Typed in by hand, the New page says why and offers nothing.
    await page.evaluate(() => { location.hash = '#/new'; });
    await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
    assert.match(await page.locator('main').innerText(), /needs a device of tier full; this phone is read/);
    assert.equal(await page.getByRole('button', { name: 'Shell' }).count(), 0);

    // The same requests sent by hand with this device's token.
    const before = await ownPanes(bridge);
    const id = before.find((p) => p.name === WINDOW).pane;
    const answers = await page.evaluate(async (pane) => {
      const token = localStorage.getItem('collie.token') || '';
      const ask = async (method, url, body) => {
        const r = await fetch(url, {
          method,
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return [r.status, (await r.json()).error];
      };
      return [
        await ask('POST', '/api/panes', { machine: 'local', name: 'forged' }),
        await ask('POST', `/api/panes/local/${pane}/rename`, { name: 'forged' }),
        await ask('DELETE', `/api/panes/local/${pane}`),
      ];
    }, id);
    assert.deepEqual(answers, [[403, 'insufficient tier'], [403, 'insufficient tier'], [403, 'insufficient tier']]);
    assert.deepEqual((await ownPanes(bridge)).map((p) => [p.pane, p.name]), before.map((p) => [p.pane, p.name]),
      'nothing was created, renamed or closed');
    assert.deepEqual(await windows(bridge), [WINDOW]);
  }, VIEW));

test('a bad name is refused in the bridge\'s words and creates or renames nothing', T, () =>
  session(browser, 'manage-bad-name', async ({ page, bridge }) => {
    // What the bridge itself answers for these names (another full device, by hand).
    const token = await bridge.pairApi('tester');
    const long = 'n'.repeat(65);
    for (const name of [long, 'tab\there']) {
      const r = await bridge.api('/api/panes', token, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ machine: 'local', name }),
      });
      assert.deepEqual([r.status, r.body], [400, { error: NAME_RULE }]);
    }
    const before = await ownPanes(bridge);

    await pairInApp(page, bridge);
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    const field = page.getByRole('textbox', { name: 'Name', exact: true });
    const alert = page.locator('#new-alert');
    for (const name of [long, 'tab\there']) {
      await field.fill(name);
      assert.equal(await field.inputValue(), name, 'the field holds the bad name as typed');
      await page.getByRole('button', { name: 'Shell', exact: true }).click();
      await waitFor('the refusal', async () => (await alert.innerText()) === NAME_RULE);
      assert.equal(await field.getAttribute('aria-invalid'), 'true');
    }
    // 64 characters of four bytes each are a good name: counted as the bridge counts them.
    await field.fill('🐕'.repeat(64));
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await page.getByRole('heading', { name: '🐕'.repeat(64), exact: true }).waitFor();
    const after = await ownPanes(bridge);
    assert.equal(after.length, before.length + 1, 'only the good name made a pane');
    assert.equal(after.filter((p) => p.backend === 'pty').map((p) => p.name).join(), '🐕'.repeat(64));

    // Renaming to nothing is refused the same way, and the window keeps its name.
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await openPane(page, WINDOW);
    const dialog = await rename(page, WINDOW, '');
    await waitFor('the refusal', async () => (await dialog.getByRole('alert').innerText()) === NAME_RULE);
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    assert.deepEqual(await windows(bridge), [WINDOW]);
  }, VIEW));

test('a tier lowered while the phone looks: the bridge\'s 403 is said and the controls go', T, () =>
  session(browser, 'manage-tier-drop', async ({ page, bridge }) => {
    await pairInApp(page, bridge, { label: 'phone' });
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await openNew(page);
    await bridge.cliOk(['devices', 'set-tier', 'phone', 'read']);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('late');
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: /^Not created: insufficient tier/ }).waitFor();
    await page.getByRole('button', { name: 'Shell' }).waitFor({ state: 'detached' });
    assert.match(await page.locator('main').innerText(), /this phone is read/);
    assert.ok(!(await ownPanes(bridge)).some((p) => p.name === 'late'), 'nothing was created');
    // Back on the list, the New pane button is gone too.
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('link', { name: WINDOW, exact: true }).waitFor();
    await waitFor('New pane to go', async () => (await page.getByRole('link', { name: 'New pane' }).count()) === 0);

    // In a pane view opened as full, a rename after the drop is refused and the actions go.
    await bridge.cliOk(['devices', 'set-tier', 'phone', 'full']);
    await page.reload();
    await openPane(page, WINDOW);
    await page.getByRole('button', { name: 'Pane actions', exact: true }).waitFor();
    await bridge.cliOk(['devices', 'set-tier', 'phone', 'read']);
    const dialog = await rename(page, WINDOW, 'late');
    await dialog.getByRole('alert').filter({ hasText: /^Not renamed: insufficient tier/ }).waitFor();
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.getByRole('button', { name: 'Pane actions' }).waitFor({ state: 'hidden' });
    assert.deepEqual(await windows(bridge), [WINDOW], 'the window keeps its name');
  }, VIEW));

// The phone app in a crew (SPEC §8; docs/guide/phone-app.md, "Panes"): a real lead and a real member
// bridge, each with its own private tmux server, linked over QUIC on loopback; the phone is paired
// with the lead only and reaches the member's pane through the lead's relay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  crewSession, pairInApp, waitFor, waitScreen, isLine, MEMBER, WINDOW, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

/** A machine's group on the Panes screen (a section named by its heading). */
const group = (page, name) => page.getByRole('region', { name, exact: true });

const status = async (page) => (await page.getByRole('status').innerText()).trim();

/** The machine headings of the Panes screen, in order. */
const machineNames = (page) => page.getByRole('heading', { level: 2 }).allInnerTexts();

const noCsp = (page) => assert.deepEqual(page.problems.filter((p) => p.includes('CSP')), []);

/** Pairs with the lead and waits until the member's group lists its pane. */
async function pairAndList(page, lead) {
  await pairInApp(page, lead);
  // The first list may have been answered before the member's panes came in: the view refreshes.
  await group(page, MEMBER).getByRole('link', { name: WINDOW, exact: true }).waitFor({ timeout: 15_000 });
}

/** From the Panes screen, opens the member's pane and waits for its prompt, live. */
async function openMemberPane(page) {
  await group(page, MEMBER).getByRole('link', { name: WINDOW, exact: true }).click();
  await page.getByRole('heading', { name: WINDOW, exact: true }).waitFor();
  assert.match(page.url(), new RegExp(`#/pane/${MEMBER}/[A-Za-z0-9._-]+$`), 'the URL names the member');
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
  await waitFor('status Live', async () => (await status(page)).includes('Live'));
}

async function send(page, text) {
  await page.getByLabel('Type to pane', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

test('crew: the Panes screen groups the panes by machine: the lead, then the member by its crew name', T, () =>
  crewSession(browser, 'crew-list', async ({ page, lead }) => {
    await pairAndList(page, lead);
    assert.deepEqual(await machineNames(page), [lead.name, MEMBER], 'the lead first, then the member');
    // Each group: its role in words, no offline mark, its own pane (both are tmux window `work`,
    // the same pane id on each machine: the link carries the machine).
    for (const [name, role] of [[lead.name, 'lead'], [MEMBER, 'member']]) {
      const g = group(page, name);
      const text = await g.innerText();
      assert.match(text, new RegExp(`\\b${role}\\b`), `${name} shows its role: ${text}`);
      assert.doesNotMatch(text, /offline|not answering/, `${name} is online: ${text}`);
      const href = await g.getByRole('link', { name: WINDOW, exact: true }).getAttribute('href');
      assert.match(href, new RegExp(`^#/pane/${name}/[A-Za-z0-9._-]+$`));
      assert.match(await g.locator('.pane-state').innerText(), /idle|working|waiting for you/);
    }
    noCsp(page);
  }));

test('crew: the member\'s pane opens through the lead, and text typed on the phone runs there', T, () =>
  crewSession(browser, 'crew-pane', async ({ page, lead, member }) => {
    await pairAndList(page, lead);
    await openMemberPane(page);
    await send(page, 'echo via-re""lay');
    const lines = await waitScreen(page, 'the output line `via-relay`', isLine('via-relay'));
    assert.ok(lines.some((l) => l.includes('echo via-re""lay')), 'the typed command is shown');
    // It ran on the member's tmux server, not on the lead's (same window name, same pane id).
    const ran = (await member.tmux.capture()).split('\n').map((l) => l.trim());
    assert.ok(ran.includes('via-relay'), `the member ran it:\n${ran.join('\n')}`);
    assert.ok(!(await lead.tmux.capture()).includes('via-re'), 'nothing reached the lead\'s pane');
    noCsp(page);
  }));

test('crew: a member killed while the Panes screen is open is marked offline within 10 s', T, () =>
  crewSession(browser, 'crew-offline', async ({ page, lead, member }) => {
    await pairAndList(page, lead);
    await member.kill();
    // The lead notices in about 3 s; the screen refreshes every 5 s.
    await group(page, MEMBER).locator('.badge', { hasText: /^offline$/ }).waitFor({ timeout: 10_000 });
    const text = await group(page, MEMBER).innerText();
    assert.match(text, /unavailable/, `the group says its panes are unavailable: ${text}`);
    assert.equal(await group(page, MEMBER).getByRole('link').count(), 0, 'no pane links of an offline machine');
    // The lead's own pane stays listed, its group not marked.
    await group(page, lead.name).getByRole('link', { name: WINDOW, exact: true }).waitFor({ timeout: 1_000 });
    assert.doesNotMatch(await group(page, lead.name).innerText(), /offline|not answering/);
    assert.deepEqual(await machineNames(page), [lead.name, MEMBER]);
    noCsp(page);
  }));

test('crew: an open member pane shows Unreachable when the member dies, and comes back Live with it', T, () =>
  crewSession(browser, 'crew-unreachable', async ({ page, lead, member }) => {
    await pairAndList(page, lead);
    await openMemberPane(page);
    await member.kill();
    await waitFor('status Unreachable', async () => (await status(page)).includes('Unreachable'), { timeout: 10_000 });
    const body = await page.locator('body').innerText();
    assert.match(body, new RegExp(`${MEMBER} is unreachable`), 'the view names the unreachable machine');
    assert.doesNotMatch(body, /closed|no longer exists/, 'the pane is not taken for closed');
    // The view keeps retrying: once the member is back (it dials the lead by itself), it is live.
    await member.launch();
    await waitFor('status Live again', async () => (await status(page)).includes('Live'), { timeout: 40_000, every: 200 });
    await page.getByText(`${MEMBER} is unreachable`).waitFor({ state: 'hidden', timeout: 1_000 });
    await send(page, 'echo back-ag""ain');
    await waitScreen(page, 'the output line `back-again`', isLine('back-again'));
    noCsp(page);
  }));

test('crew: a member pane that really closes reads "This pane was closed", not unreachable', T, () =>
  crewSession(browser, 'crew-pane-closed', async ({ page, lead, member }) => {
    const made = await member.tmux.run(['new-window', '-d', '-t', 'main:', '-n', 'extra', 'sh']);
    assert.equal(made.code, 0, made.stderr);
    await pairInApp(page, lead);
    const link = group(page, MEMBER).getByRole('link', { name: 'extra', exact: true });
    await link.waitFor({ timeout: 15_000 });
    await link.click();
    await page.getByRole('heading', { name: 'extra', exact: true }).waitFor();
    await waitFor('status Live', async () => (await status(page)).includes('Live'));
    const killed = await member.tmux.run(['kill-window', '-t', 'main:extra']);
    assert.equal(killed.code, 0, killed.stderr);
    await page.getByText('This pane was closed.', { exact: true }).waitFor({ timeout: 10_000 });
    assert.equal(await status(page), 'Ended');
    assert.doesNotMatch(await page.locator('body').innerText(), /unreachable/);
  }));

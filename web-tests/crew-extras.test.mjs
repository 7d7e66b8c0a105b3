// Uploads, the sent log and one-shot commands on a crew member, from the phone (SPEC §11, §8;
// docs/decisions/0036): a real lead and a real member bridge linked over QUIC on loopback, each
// with its own private tmux server; the phone is paired with the lead only. A `files` device
// attaches from the pane's bar (it has no input bar); the Sent screen lists and discards the
// member's lines; a `full` device runs a command on the member.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crewSession, pairInApp, waitFor, MEMBER, WINDOW, useBrowser, openMore } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

/** A machine's group on the Panes screen (a section named by its heading). */
const group = (page, name) => page.getByRole('region', { name, exact: true });

/** The lines of a bridge's sent log file, oldest first. */
async function sentFile(bridge) {
  let text = '';
  try {
    text = await readFile(path.join(bridge.dir, 'state', 'sent.jsonl'), 'utf8');
  } catch {}
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l).line);
}

test('crew: a files device attaches a file to a member\'s pane from the pane\'s bar', T, () =>
  crewSession(browser, 'crew-attach', async ({ page, lead, member }) => {
    // The member's pane works in a folder under its home (its workspace).
    const dir = path.join(member.dir, 'home', 'proj');
    await mkdir(dir, { recursive: true });
    const real = await realpath(dir);
    await member.tmux.sendKeys(`cd ${dir}`, 'Enter');
    await waitFor('the member pane to be in the folder', async () =>
      (await member.tmux.run(['display', '-p', '-t', 'main:0', '#{pane_current_path}'])).stdout.trim() === real);

    await pairInApp(page, lead, { tier: 'files' });
    const link = group(page, MEMBER).getByRole('link', { name: WINDOW, exact: true });
    await link.waitFor({ timeout: 15_000 });
    await link.click();
    await page.getByRole('heading', { name: WINDOW, exact: true }).waitFor();
    await page.getByLabel('Screen', { exact: true }).waitFor();
    // No input bar for a `files` device, but an attach control all the same.
    assert.equal(await page.getByLabel('Type to pane', { exact: true }).count(), 0);
    const before = await member.tmux.capture();
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach a file', exact: true }).click();
    await (await chooser).setFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('from the phone\n') });
    const want = path.join(real, '.collie-uploads', 'notes.txt');
    await page.getByText(`Uploaded to ${want}`, { exact: true }).waitFor({ timeout: 15_000 });
    assert.equal(await readFile(want, 'utf8'), 'from the phone\n');
    assert.equal((await stat(want)).mode & 0o777, 0o600);
    // It landed on the member, not on the lead, and nothing was typed into the pane.
    assert.ok(!existsSync(path.join(lead.dir, 'home', 'proj')));
    assert.equal(await member.tmux.capture(), before);
  }));

test('crew: the Sent screen lists and discards a member\'s lines, and a command runs on the member', T, () =>
  crewSession(browser, 'crew-sent', async ({ page, lead, member }) => {
    // The member's log from before, written the way the bridge writes it.
    const old = [1, 2].map((i) => JSON.stringify({
      id: i, ts: `2026-01-01T00:00:0${i}Z`, machine: MEMBER, pane: 't0-0', line: `echo member-${i}`,
    })).join('\n');
    await writeFile(path.join(member.dir, 'state', 'sent.jsonl'), `${old}\n`, { mode: 0o600 });

    await pairInApp(page, lead, { tier: 'full' });
    await openMore(page, 'Sent');
    await page.getByRole('heading', { name: 'Sent', exact: true }).waitFor();
    const section = page.getByRole('region', { name: MEMBER, exact: true });
    await section.getByRole('button', { name: 'echo member-1', exact: true }).waitFor({ timeout: 15_000 });
    assert.deepEqual(await section.locator('.sent-line').allInnerTexts(), ['echo member-2', 'echo member-1']);
    assert.equal(await page.getByText(/cannot be read now/).count(), 0, 'the member is not unavailable');

    // Discard one of the member's lines: the member's file changes.
    const row = section.locator('.sent-row', { hasText: 'echo member-2' });
    await row.getByRole('button', { name: 'Discard', exact: true }).click();
    await waitFor('the member\'s line discarded', async () => (await sentFile(member)).length === 1);
    await row.waitFor({ state: 'detached' });
    assert.deepEqual(await sentFile(member), ['echo member-1']);

    // A one-shot command on the member: the app opens the pane it runs in, on the member.
    const marker = path.join(member.dir, 'ran-from-the-phone');
    await page.getByLabel('Machine', { exact: true }).selectOption(MEMBER);
    await page.getByLabel('Command', { exact: true }).fill(`touch ${marker}`);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.getByRole('heading', { name: 'run', exact: true }).waitFor({ timeout: 15_000 });
    assert.match(page.url(), new RegExp(`#/pane/${MEMBER}/p[0-9]+$`), 'the pane is the member\'s');
    await waitFor('the command to run on the member', async () => existsSync(marker), { timeout: 15_000 });
    assert.deepEqual(await sentFile(lead), [], 'the lead keeps no line of the member\'s command');
    await waitFor('the member keeps it', async () => (await sentFile(member)).includes(`touch ${marker}`));
  }));

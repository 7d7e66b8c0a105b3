// Files, Changes and uploads on the phone (SPEC §11, §3.3; docs/guide/phone-app.md, "Files and
// Changes"): a real bridge with a real tmux pane, a real home folder with a git repository, and
// the app in headless chromium on a 360 × 740 viewport. Browse and open a file (masked, set as
// text), `.git` never listed, the Changes view's colours, an upload from the pane's input bar
// into the pane's folder with its path put into the input (not sent), and a `read` device that
// sees none of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openPane, pairInApp, session, waitFor, WINDOW, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };
// A GitHub-token-shaped string: the bridge masks it before the phone sees it.
const TOKEN = 'ghp_Abcdefghijklmnopqrstuvwxyz0123456789';
const HOSTILE = '<img src=x onerror=alert(1)>';

function git(dir, ...args) {
  const out = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' },
  });
  if (out.status !== 0) throw new Error(`git ${args.join(' ')}: ${out.stderr}`);
}

/** A repository in the home folder: one committed file, then changed; a `.git` folder. */
async function repo(bridge) {
  const dir = path.join(bridge.dir, 'home', 'proj');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'app.txt'), 'keep\nold line\nend\n');
  git(dir, 'init', '-q');
  git(dir, 'add', 'app.txt');
  git(dir, 'commit', '-q', '-m', 'first');
  await writeFile(path.join(dir, 'app.txt'), 'keep\nnew line\nend\n');
  await writeFile(path.join(dir, 'secret.txt'), `token ${TOKEN}\n${HOSTILE}\n`);
  return dir;
}

test('browse, open a masked file, no .git; the Changes view is coloured', T, () =>
  session(browser, 'files-browse', async ({ bridge, page }) => {
    await repo(bridge);
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    });
    await pairInApp(page, bridge, { tier: 'files' });
    await page.getByRole('link', { name: 'Files', exact: true }).click();
    await page.getByRole('heading', { name: 'Files', exact: true }).waitFor();
    await page.getByRole('button', { name: 'proj/', exact: true }).click();
    await page.getByRole('button', { name: 'secret.txt', exact: true }).waitFor();
    const entries = await page.locator('.file-entry').allTextContents();
    assert.ok(entries.includes('app.txt'), entries.join(','));
    assert.ok(!entries.some((e) => e.startsWith('.git')), `.git listed: ${entries.join(',')}`);

    await page.getByRole('button', { name: 'secret.txt', exact: true }).click();
    const text = page.locator('pre.file-text');
    await text.waitFor();
    const shown = await text.textContent();
    assert.ok(!shown.includes(TOKEN), shown);
    assert.match(shown, /ghp_A•+/);
    // Text stays text: the markup is shown, never made an element.
    assert.ok(shown.includes(HOSTILE), shown);
    assert.equal(await page.locator('pre.file-text img').count(), 0);

    await page.getByRole('link', { name: 'Changes', exact: true }).click();
    await page.getByRole('heading', { name: 'Changes', exact: true }).waitFor();
    // The workspace root is the home folder, not a repository: the view says so.
    await page.getByText('Not a git repository.', { exact: true }).waitFor();
    await page.evaluate(() => { location.hash = '#/'; });
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    assert.deepEqual(dialogs, []);
  }, VIEW));

test('the Changes view of a pane\'s repository: added green, removed red, per file', T, () =>
  session(browser, 'files-changes', async ({ bridge, page }) => {
    const dir = await repo(bridge);
    await pairInApp(page, bridge, { tier: 'files' });
    // Opened from a pane whose shell is in the repository: the Changes of the pane's folder.
    await bridge.tmux.sendKeys(`cd ${dir}`, 'Enter');
    await waitFor('the pane to be in the repository', async () =>
      (await bridge.tmux.run(['display', '-p', '-t', 'main:0', '#{pane_current_path}'])).stdout.trim() === dir);
    await openPane(page, WINDOW);
    // The pane's Changes sit in its actions sheet (a `files` device gets no Rename or Close there).
    await page.getByRole('button', { name: 'Pane actions', exact: true }).click();
    const sheet = page.getByRole('dialog', { name: WINDOW, exact: true });
    assert.equal(await sheet.getByRole('button', { name: 'Rename', exact: true }).count(), 0);
    assert.equal(await sheet.getByRole('button', { name: 'Close pane', exact: true }).count(), 0);
    await sheet.getByRole('link', { name: 'Changes', exact: true }).click();
    await page.getByRole('heading', { name: 'Changes', exact: true }).waitFor();
    const added = page.locator('.diff-line.add', { hasText: 'new line' });
    const removed = page.locator('.diff-line.del', { hasText: 'old line' });
    await added.waitFor();
    await removed.waitFor();
    const [green, red] = await Promise.all([
      added.evaluate((el) => getComputedStyle(el).color),
      removed.evaluate((el) => getComputedStyle(el).color),
    ]);
    assert.notEqual(green, red);
    const hunk = await page.locator('.diff-line.hunk').first().evaluate((el) => getComputedStyle(el).color);
    assert.notEqual(hunk, green);
    // The untracked secret file is a change too, masked.
    const all = await page.locator('.changes-body').textContent();
    assert.ok(!all.includes(TOKEN), all);
    assert.ok(all.includes('secret.txt'), all);
    // Collapsible per file.
    const summary = page.locator('details.diff-file summary', { hasText: 'app.txt' });
    await summary.click();
    assert.equal(await added.isVisible(), false);
  }, VIEW));

test('attach uploads into the pane\'s folder and puts the path into the input, unsent', T, () =>
  session(browser, 'files-upload', async ({ bridge, page }) => {
    const dir = path.join(bridge.dir, 'home', 'work');
    await mkdir(dir, { recursive: true });
    await bridge.tmux.sendKeys(`cd ${dir}`, 'Enter');
    await waitFor('the pane to be in the folder', async () =>
      (await bridge.tmux.run(['display', '-p', '-t', 'main:0', '#{pane_current_path}'])).stdout.trim() === dir);
    await pairInApp(page, bridge, { tier: 'full' });
    await openPane(page, WINDOW);
    const before = await bridge.tmux.capture();
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach a file', exact: true }).click();
    await (await chooser).setFiles({ name: 'shot.png', mimeType: 'image/png', buffer: Buffer.from('\x89PNG\r\n\x1a\npixels', 'latin1') });
    const want = path.join(dir, '.collie-uploads', 'shot.png');
    const input = page.getByLabel('Type to pane', { exact: true });
    await waitFor('the path in the input', async () => (await input.inputValue()) === want);
    const st = await stat(want);
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal((await readFile(want)).subarray(8).toString(), 'pixels');
    // Nothing was typed into the pane: the person sends it.
    assert.equal(await bridge.tmux.capture(), before);
  }, VIEW));

test('a read device sees no Files, Changes or attach', T, () =>
  session(browser, 'files-read', async ({ bridge, page }) => {
    await pairInApp(page, bridge, { tier: 'read' });
    await page.getByRole('link', { name: 'Settings', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Files', exact: true }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Changes', exact: true }).count(), 0);
    await openPane(page, WINDOW);
    assert.equal(await page.getByRole('button', { name: 'Attach a file' }).count(), 0);
    // No actions sheet either, so no way to the pane's Changes.
    assert.equal(await page.getByRole('button', { name: 'Pane actions' }).count(), 0);
    // And the bridge refuses the routes anyway.
    const status = await page.evaluate(async () => {
      const token = localStorage.getItem('collie.token') || '';
      return (await fetch('/api/files/local/list', { headers: { Authorization: `Bearer ${token}` } })).status;
    });
    assert.equal(status, 403);
  }, VIEW));

// zellij panes on the phone (issue 34, decision 0083): a real zellij session (the pinned zellij
// `scripts/setup` builds into `tools/`, or `$COLLIE_ZELLIJ_BIN`) in the bridge's own socket folder
// shows up in the pane list beside the tmux pane; opened on a 360 × 740 phone it is live, typed
// into, coloured like a tmux pane and masked; renamed from its actions sheet, its tab in zellij
// takes the name. Headless chromium against a real bridge. `COLLIE_ZELLIJ=0`
// skips it, as it skips the Rust zellij tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, session, pairInApp, openPane, waitScreen, waitFor, useBrowser } from './support.mjs';

const browser = useBrowser();

const ZELLIJ = process.env.COLLIE_ZELLIJ_BIN || path.join(ROOT, 'tools', 'zellij-0.45.1', 'bin', 'zellij');
const SKIP = process.env.COLLIE_ZELLIJ === '0' ? 'COLLIE_ZELLIJ=0' : false;
const T = { timeout: 90_000, skip: SKIP };
const PHONE = { width: 360, height: 740 };
const PATH = `${path.dirname(ZELLIJ)}:${process.env.PATH}`;

/** Runs zellij as the bridge's user would, in the bridge's socket folder and home. */
function zellij(bridge, args) {
  const d = bridge.dir;
  const out = spawnSync(ZELLIJ, args, {
    env: {
      PATH,
      ZELLIJ_SOCKET_DIR: path.join(d, 'zellij'),
      HOME: path.join(d, 'home'),
      XDG_CONFIG_HOME: path.join(d, 'home', '.config'),
      SHELL: '/bin/sh',
    },
    cwd: path.join(d, 'home'),
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(out.status, 0, `zellij ${args.join(' ')}: ${out.stderr}`);
  return out.stdout;
}

/** Starts zellij session `name` in the background; `scope` ends every session, pass or fail. */
async function startSession(bridge, scope, name) {
  assert.ok(existsSync(ZELLIJ), `no zellij at ${ZELLIJ} (scripts/setup builds it)`);
  const config = path.join(bridge.dir, 'home', '.config', 'zellij');
  await mkdir(config, { recursive: true });
  await writeFile(path.join(config, 'config.kdl'), 'show_startup_tips false\n');
  scope.add(null, async () => {
    spawnSync(ZELLIJ, ['kill-all-sessions', '--yes'], {
      env: { PATH, ZELLIJ_SOCKET_DIR: path.join(bridge.dir, 'zellij'), HOME: path.join(bridge.dir, 'home') },
      timeout: 20_000,
    });
  });
  zellij(bridge, ['attach', '--create-background', name]);
}

async function send(page, text) {
  await page.getByLabel('Type to pane', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

const SECRET = 'ghp_aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s';

test('a zellij pane is listed, live, typed into, coloured, masked and renamed from the phone', T, () =>
  session(browser, 'zellij-pane', async ({ page, bridge }, scope) => {
    await startSession(bridge, scope, 'work');
    await pairInApp(page, bridge);
    // Listed beside the tmux pane, under the tab's name.
    await page.getByRole('link', { name: 'Tab #1', exact: true }).waitFor({ timeout: 20_000 });
    await openPane(page, 'Tab #1');
    await waitScreen(page, 'the prompt', (l) => l.startsWith('#') || l.startsWith('$'));

    // Typed from the phone; the answer is live, its colour a red span, its token masked.
    await send(page, String.raw`printf '\033[31mZRED\033[0m zz-%s\n' ${SECRET.slice(0, 20)}${SECRET.slice(20)}`);
    const lines = await waitScreen(page, 'the red line', (l) => l.startsWith('ZRED zz-'), 20_000);
    const shown = lines.join('\n');
    assert.ok(!shown.includes(SECRET), `the token left the machine: ${shown}`);
    assert.ok(shown.includes('zz-ghp_'), shown);
    const red = await page.evaluate(() => {
      const s = [...document.querySelectorAll('pre.screen span')].find((x) => x.textContent === 'ZRED');
      return s ? getComputedStyle(s).color : null;
    });
    assert.equal(red, 'rgb(179, 38, 30)', 'red from the light palette, as on a tmux pane');

    // Renamed from the phone: its tab in zellij takes the name, and the list shows it.
    await page.getByRole('button', { name: 'Pane actions', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rename', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Rename pane', exact: true });
    const field = dialog.getByRole('textbox', { name: 'Name', exact: true });
    assert.equal(await field.inputValue(), 'Tab #1', 'the field starts with the tab name');
    await field.fill('build');
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'build', exact: true }).waitFor();
    await waitFor('the tab renamed in zellij', () =>
      zellij(bridge, ['--session', 'work', 'action', 'query-tab-names']).trim() === 'build');
    await page.goto(`${bridge.url}/#/`);
    await page.getByRole('link', { name: 'build', exact: true }).waitFor({ timeout: 20_000 });

    // The session ends: the pane goes from the list.
    zellij(bridge, ['kill-session', 'work']);
    await page.getByRole('link', { name: 'build', exact: true }).waitFor({ state: 'detached', timeout: 20_000 });
  }, { ...PHONE, bridge: { env: { PATH } } }));

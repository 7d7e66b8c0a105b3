// Everyday use on the phone (issue 33; decisions 0081, 0082): pinned panes, favourite and recent
// folders on New pane, the "Report a problem" link after a failed send, the update check and the
// version in Settings, and the tab bar with More — against a real bridge and a real tmux server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, session, pairInApp, openPane, waitFor, storage, useBrowser } from './support.mjs';

const browser = useBrowser();
const T = { timeout: 120_000 };

/** The names of the pane links in the list, section by section: `[[heading, [names]]]`. */
async function listed(page) {
  return page.locator('section.machine').evaluateAll((sections) => sections.map((s) => [
    s.querySelector('h2')?.textContent,
    [...s.querySelectorAll('a.pane-link')].map((a) => a.textContent),
  ]));
}

test('a pinned pane is listed first, stays pinned after a reload, and is forgotten with the pairing', T,
  () => session(browser, 'pins', async ({ bridge, page }) => {
    await bridge.cliOk(['panes', 'new', '--name', 'two', '--', 'sh']);
    await pairInApp(page, bridge);
    await waitFor('both panes listed', async () => (await listed(page)).flatMap(([, n]) => n).includes('two'));
    assert.deepEqual(await listed(page), [['testbox', ['work', 'two']]]);

    const pin = page.getByRole('button', { name: 'Pin two', exact: true });
    assert.equal(await pin.getAttribute('aria-pressed'), 'false');
    await pin.click();
    await waitFor('the Pinned section', async () => (await listed(page))[0]?.[0] === 'Pinned');
    assert.deepEqual(await listed(page), [['Pinned', ['two']], ['testbox', ['work']]]);
    assert.equal(await page.getByRole('button', { name: 'Pin two', exact: true }).getAttribute('aria-pressed'), 'true');
    assert.deepEqual(JSON.parse((await storage(page))['collie.pins']), ['testbox/' + (await paneId(bridge, 'two'))]);

    await page.reload();
    await waitFor('pinned after a reload', async () => (await listed(page))[0]?.[0] === 'Pinned');

    // Unpairing forgets pins like every other thing but the settings.
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('button', { name: 'Unpair this phone', exact: true }).click();
    await page.getByRole('button', { name: 'Pair', exact: true }).waitFor();
    assert.equal((await storage(page))['collie.pins'], undefined);
    await pairInApp(page, bridge, { label: 'phone-2' });
    await waitFor('both panes listed again', async () => (await listed(page)).flatMap(([, n]) => n).length === 2);
    assert.deepEqual(await listed(page), [['testbox', ['work', 'two']]]);
  }));

/** The id (`%N`) of the pane named `name`, as the bridge lists it. */
async function paneId(bridge, name) {
  const { panes } = JSON.parse(await bridge.cliOk(['panes', '--json']));
  return panes.find((p) => p.name === name).pane;
}

test('New pane keeps favourite and recent folders per phone, and one tap sets the folder', T,
  () => session(browser, 'folders', async ({ bridge, page }) => {
    const home = path.join(bridge.dir, 'home');
    for (const d of ['proj', 'other']) await mkdir(path.join(home, d), { recursive: true });
    await pairInApp(page, bridge);

    /** Opens New pane, picks `folder` of the home folder with the picker and opens a shell there. */
    async function shellIn(folder, { favourite = false } = {}) {
      await page.goto(`${bridge.url}/#/new`);
      await page.getByRole('heading', { name: 'New pane', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Choose folder', exact: true }).click();
      await page.getByRole('button', { name: folder, exact: true }).click();
      await page.getByRole('button', { name: 'Use this folder', exact: true }).click();
      await waitFor('the folder shown', async () => (await page.locator('#new-folder').textContent()).endsWith(`/${folder}`));
      if (favourite) {
        const star = page.getByRole('button', { name: 'Favourite folder', exact: true });
        await star.click();
        assert.equal(await star.getAttribute('aria-pressed'), 'true');
      }
      await page.getByRole('button', { name: 'Shell', exact: true }).click();
      await page.getByLabel('Screen', { exact: true }).waitFor({ timeout: 15_000 });
    }

    await shellIn('proj', { favourite: true });
    await shellIn('other');
    await page.goto(`${bridge.url}/#/new`);
    const favourites = page.getByRole('group', { name: 'Favourites', exact: true });
    const recent = page.getByRole('group', { name: 'Recent', exact: true });
    await favourites.waitFor();
    const real = (d) => path.join(home, d);
    assert.deepEqual(await favourites.getByRole('button').allTextContents(), [real('proj')]);
    // A favourite is not repeated among the recent folders.
    assert.deepEqual(await recent.getByRole('button').allTextContents(), [real('other')]);

    await recent.getByRole('button', { name: real('other'), exact: true }).click();
    assert.equal(await page.locator('#new-folder').textContent(), real('other'));
    await page.getByRole('button', { name: 'Shell', exact: true }).click();
    await page.getByLabel('Screen', { exact: true }).waitFor({ timeout: 15_000 });

    // Dropping the favourite removes it from the list.
    await page.goto(`${bridge.url}/#/new`);
    await favourites.getByRole('button', { name: real('proj'), exact: true }).click();
    await page.getByRole('button', { name: 'Favourite folder', exact: true }).click();
    await waitFor('no favourites', async () => (await favourites.count()) === 0);
    assert.match((await storage(page))['collie.folders'], /other/);
  }));

test('a failed send offers Report a problem: version, crew mode and the error, never pane text or the token', T,
  () => session(browser, 'report', async ({ bridge, page }) => {
    await bridge.tmux.sendKeys('echo PANE-SECRET-LINE', 'Enter');
    await pairInApp(page, bridge);
    await openPane(page);
    // A line over the 64 KiB a pane takes at once (SPEC §3.2): the bridge reads it whole and
    // refuses it (400), a real failure. (Over the 512 KiB body limit the bridge answers before the
    // body is read and closes, which WebKit reports as a network error.)
    await page.getByLabel('Type to pane', { exact: true }).fill(`echo TYPED-LINE ${'x'.repeat(100_000)}`);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const link = page.getByRole('link', { name: 'Report a problem', exact: true });
    await link.waitFor({ timeout: 10_000 });
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.match(await link.getAttribute('rel'), /noopener/);
    const href = new URL(await link.getAttribute('href'));
    const cargo = await readFile(path.join(ROOT, 'Cargo.toml'), 'utf8');
    const repository = /^repository = "(.*)"$/m.exec(cargo)[1];
    const version = /^version = "(.*)"$/m.exec(cargo)[1];
    assert.equal(`${href.origin}${href.pathname}`, `${repository}/issues/new`);
    const body = href.searchParams.get('body');
    assert.match(body, new RegExp(`Collie version: ${version.replace(/\./g, '\\.')}`));
    assert.match(body, /Crew mode: solo/);
    assert.match(body, /Error: 400 text too long/);
    assert.match(href.searchParams.get('title'), /text too long/);
    const token = (await storage(page))['collie.token'];
    assert.ok(token && token.length > 20);
    for (const secret of [token, 'PANE-SECRET-LINE', 'TYPED-LINE', 'phone']) {
      assert.ok(!href.href.includes(secret) && !decodeURIComponent(href.href).includes(secret), `the link holds ${secret}`);
    }
  }));

test('Settings shows the bridge\'s version and that the update check is off; More opens the other screens', T,
  () => session(browser, 'settings-update', async ({ bridge, page }) => {
    await pairInApp(page, bridge);
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    const version = /^version = "(.*)"$/m.exec(await readFile(path.join(ROOT, 'Cargo.toml'), 'utf8'))[1];
    await page.getByText(`Collie ${version}`, { exact: true }).waitFor();
    // The harness runs every bridge with COLLIE_UPDATE_CHECK=off.
    await page.getByText('The update check is off (COLLIE_UPDATE_CHECK=off).', { exact: true }).waitFor();
    const tab = page.getByRole('link', { name: 'Settings', exact: true });
    assert.equal(await tab.getAttribute('aria-current'), 'page');

    await page.getByRole('button', { name: 'More', exact: true }).click();
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await page.getByRole('heading', { name: 'Agents', exact: true }).waitFor();
    assert.equal(await page.locator('dialog[open]').count(), 0, 'the sheet closes');
    assert.equal(await page.getByRole('button', { name: 'More', exact: true }).getAttribute('aria-current'), 'page');
  }));

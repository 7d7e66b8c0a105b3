// The phone and the crew's deputy (SPEC §13; decision 0069): a real lead and a real member bridge
// `web-1` linked over QUIC on loopback, web-1 named the deputy. The phone, paired on the lead,
// learns the deputy's URL; when the lead is SIGKILLed it turns to the deputy's standby door (a
// cross-origin API: the page is the lead's) and says so — "via deputy web-1" — and web-1's pane
// stays readable in it; when the lead comes back on the same port the phone turns back to it and
// the label goes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  crewSession, pairInApp, waitFor, waitScreen, isLine, MEMBER, WINDOW, useBrowser,
} from './support.mjs';

const browser = useBrowser();

const T = { timeout: 180_000 };

const group = (page, name) => page.getByRole('region', { name, exact: true });

const via = (page) => page.locator('.via-deputy');

/** `collie crew status --json`'s deputy on `bridge`. */
async function deputyOf(bridge) {
  return JSON.parse(await bridge.cliOk(['crew', 'status', '--json'])).deputy;
}

/** What the app keeps of the lead and its deputy. */
async function kept(page) {
  return page.evaluate(() => JSON.parse(localStorage.getItem('collie.reach') || 'null'));
}

test('deputy: the phone turns to the deputy when the lead is killed, says so, and turns back when the lead returns', T, () =>
  crewSession(browser, 'deputy-failover', async ({ page, lead, member }) => {
    await lead.cliOk(['crew', 'deputy', 'set', MEMBER]);
    // The lead learns the deputy's URL from its answer to the first copy.
    const watcher = await lead.pairApi('watcher');
    const deputyUrl = await waitFor('the lead to know the deputy\'s URL', async () => {
      const { body } = await lead.api('/api/machines', watcher);
      return body?.deputy?.url;
    }, { timeout: 20_000, every: 200 });
    assert.equal(new URL(deputyUrl).origin, member.url, 'the URL the deputy reported is its own');

    // The page is opened once the lead has a deputy (its policy lets the page reach that origin).
    await pairInApp(page, lead);
    await waitFor('the app to keep the deputy', async () => {
      const r = await kept(page);
      return r?.deputy?.name === MEMBER && r.deputy.url === member.url && r.lead === lead.url;
    }, { timeout: 40_000, every: 200 });
    // The deputy holds the copy with this phone in it.
    await waitFor('the deputy to acknowledge the copy with the phone', async () => {
      const d = await deputyOf(lead);
      return d && d.version != null && d.acknowledged === d.version;
    }, { timeout: 20_000, every: 200 });

    await group(page, MEMBER).getByRole('link', { name: WINDOW, exact: true }).click();
    await page.getByRole('heading', { name: WINDOW, exact: true }).waitFor();
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    assert.equal(await via(page).isVisible(), false, 'no label while the lead answers');

    await lead.kill();
    await via(page).getByText(`via deputy ${MEMBER}`, { exact: true })
      .waitFor({ state: 'visible', timeout: 30_000 });
    // web-1's pane is read through the deputy: a line written there now reaches the Screen.
    await member.tmux.sendKeys('echo through-dep""uty', 'Enter');
    await waitScreen(page, 'the line written while the lead is away', isLine('through-deputy'), 30_000);

    await lead.launch(lead.port);
    await via(page).waitFor({ state: 'hidden', timeout: 30_000 });
    await member.tmux.sendKeys('echo back-on-le""ad', 'Enter');
    await waitScreen(page, 'the line written once the lead is back', isLine('back-on-lead'), 30_000);
    assert.equal(await via(page).isVisible(), false, 'the label is gone');
    assert.deepEqual(page.problems.filter((p) => p.includes('CSP')), [], 'no request was blocked by the page\'s policy');
    assert.deepEqual(await kept(page), { lead: lead.url, deputy: { name: MEMBER, url: member.url } });
  }));

// Identity at the door on the phone (SPEC §14, decision 0073): the pairing screen says which gate
// refused it, and pairs once the proxy names a trusted person. The browser talks to the bridge on
// loopback — the place the bridge trusts a proxy at — so the page's own extra headers stand in
// for what `tailscale serve` would set (tests/identity.rs runs a real proxy).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, useBrowser } from './support.mjs';

const browser = useBrowser();
const T = { timeout: 90_000 };

test('the pairing screen names the identity gate that refused it, then pairs a trusted person', T, () =>
  session(browser, 'identity-gate', async ({ bridge, context, page }) => {
    const code = await bridge.code();
    await page.goto(`${bridge.url}/#pair=${code}`);
    await page.getByRole('heading', { name: 'Pair this phone', exact: true }).waitFor();
    await page.getByLabel('Device name', { exact: true }).fill('phone-1');
    await page.getByRole('button', { name: 'Pair', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'Identity required' }).waitFor();
    assert.equal(
      await alert.textContent(),
      'Identity required: the tailscale gate refused this phone. Sign in as a person the bridge trusts.',
    );

    // The proxy names a trusted person: the same code pairs.
    await context.setExtraHTTPHeaders({ 'Tailscale-User-Login': 'alice@example.com' });
    await page.getByRole('button', { name: 'Pair', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
  }, { bridge: { env: { COLLIE_TRUSTED_USER: 'alice@example.com' }, tmux: false } }));

// A new pairing is announced on the other devices (SPEC §4.6; docs/guide/phone-app.md, "Cards"):
// the phone already paired sees, on its Cards view, the device someone else just paired — its
// label and tier — with the way to revoke it; the new device itself is not told of its own pairing.
import { test } from 'node:test';
import { session, pairInApp, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

test('a device paired behind the phone\'s back shows on its Cards view with a way to revoke it', T,
  () => session(browser, 'notices', async ({ bridge, page }) => {
    await pairInApp(page, bridge, { label: 'phone' });
    await bridge.pairApi('intruder', 'full');
    await page.goto(`${bridge.url}/#/cards`);
    await page.getByRole('heading', { name: 'Cards', exact: true }).waitFor();
    const notice = page.locator('[data-notice="intruder"]');
    await notice.getByText('New device paired:').waitFor({ timeout: 10_000 });
    await notice.getByText(/intruder \(full\)/).waitFor();
    await notice.getByRole('link', { name: 'revoke it in Settings', exact: true }).click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor({ timeout: 10_000 });
  }));

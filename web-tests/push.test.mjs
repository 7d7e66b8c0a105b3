// Notifications on the phone (SPEC §10.4; docs/guide/phone-app.md, "Notifications"): the switch in
// Settings subscribes this phone on the real bridge and turning it off removes the subscription
// there; a browser without Web Push, or with notifications blocked, is told so; the service worker
// shows a push as a notification that names no question.
//
// What is stubbed, and why: headless Chromium here cannot reach a real push service (there is no
// network), so `PushManager.prototype.subscribe` / `getSubscription` are replaced in the page by a
// stand-in that returns a subscription made of a real P-256 key (WebCrypto) and a fake FCM
// endpoint — the only thing a browser would have asked a push service for. Everything from there
// on is real: the app, the bridge's key, the allow-list, the store, the audit log. The push message
// itself is delivered to the real service worker through the DevTools protocol
// (`ServiceWorker.deliverPushMessage`), as a push service would deliver it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { session, pairInApp, waitFor, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };

/**
 * Replaces the browser's push subscription calls with a stand-in (see the file's comment). The
 * stand-in's subscription lives in sessionStorage, so it outlives a reload as a browser's does.
 */
function stubPushManager() {
  const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const KEPT = 'stub.push';
  const calls = () => JSON.parse(sessionStorage.getItem('stub.calls') || '[]');
  const call = (c) => sessionStorage.setItem('stub.calls', JSON.stringify([...calls(), c]));
  window.__pushCalls = calls;
  function made({ json, key }) {
    return {
      endpoint: json.endpoint,
      options: { userVisibleOnly: true, applicationServerKey: unb64(key).buffer },
      toJSON: () => json,
      unsubscribe: async () => {
        call({ unsubscribed: true });
        sessionStorage.removeItem(KEPT);
        return true;
      },
    };
  }
  PushManager.prototype.getSubscription = async function getSubscription() {
    const kept = sessionStorage.getItem(KEPT);
    return kept ? made(JSON.parse(kept)) : null;
  };
  PushManager.prototype.subscribe = async function subscribe(options) {
    const key = b64url(options.applicationServerKey);
    call({ userVisibleOnly: options.userVisibleOnly, key });
    const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
    const raw = await crypto.subtle.exportKey('raw', pair.publicKey);
    const auth = crypto.getRandomValues(new Uint8Array(16));
    const endpoint = `https://fcm.googleapis.com/fcm/send/stub-${b64url(crypto.getRandomValues(new Uint8Array(12)))}`;
    const kept = { json: { endpoint, expirationTime: null, keys: { p256dh: b64url(raw), auth: b64url(auth) } }, key };
    sessionStorage.setItem(KEPT, JSON.stringify(kept));
    return made(kept);
  };
}

/** The bridge's answer to `GET /api/push/subscribe` for the page's own device. */
function bridgeView(page) {
  return page.evaluate(async () => {
    const res = await fetch('/api/push/subscribe', {
      headers: { Authorization: `Bearer ${localStorage.getItem('collie.token')}` },
    });
    return res.json();
  });
}

function auditEvents(bridge, event) {
  return readFileSync(path.join(bridge.dir, 'state', 'audit.log'), 'utf8')
    .split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.event === event);
}

test('the switch subscribes this phone on the bridge with its key, and off removes it', T,
  () => session(browser, 'push-switch', async ({ bridge, context, page }) => {
    await context.grantPermissions(['notifications'], { origin: bridge.url });
    await context.addInitScript(stubPushManager);
    await pairInApp(page, bridge, { label: 'pixel' });
    await page.goto(`${bridge.url}/#/settings`);
    const toggle = page.getByRole('switch', { name: 'Notify me when a question waits', exact: true });
    await page.getByText('Off: this phone is not told when a question waits.', { exact: true }).waitFor();
    assert.equal(await toggle.isChecked(), false);
    assert.deepEqual(await bridgeView(page), { subscribed: false, devices: [] });

    await toggle.click();
    await page.getByText(/^On: this phone buzzes when a question waits/).waitFor();
    assert.equal(await toggle.isChecked(), true);
    // The browser was asked with the bridge's own key, for visible notifications only…
    const { key } = await page.evaluate(async () => (await fetch('/api/push/key', {
      headers: { Authorization: `Bearer ${localStorage.getItem('collie.token')}` },
    })).json());
    const calls = await page.evaluate(() => window.__pushCalls());
    assert.deepEqual(calls, [{ userVisibleOnly: true, key }]);
    // …and the subscription landed in the bridge, audited with the service's host only.
    assert.deepEqual(await bridgeView(page), { subscribed: true, devices: ['pixel'] });
    const [line] = auditEvents(bridge, 'push.subscribed');
    assert.equal(line.device, 'pixel');
    assert.equal(line.detail.service, 'fcm.googleapis.com');
    assert.ok(!JSON.stringify(line).includes('stub-'), 'the endpoint is not in the log');

    // Reloaded, the switch shows what is true.
    await page.reload();
    await page.getByText(/^On: /).waitFor();
    assert.equal(await toggle.isChecked(), true);

    await toggle.click();
    await page.getByText('Off: this phone is not told when a question waits.', { exact: true }).waitFor();
    assert.deepEqual(await bridgeView(page), { subscribed: false, devices: [] });
    assert.equal(auditEvents(bridge, 'push.subscribed').at(-1).detail.subscribed, 'no');
    assert.deepEqual((await page.evaluate(() => window.__pushCalls())).at(-1), { unsubscribed: true });
    assert.deepEqual(page.problems, []);
  }));

test('a browser without Web Push, or with notifications blocked, is told so', T,
  () => session(browser, 'push-unsupported', async ({ bridge, context, page }) => {
    await context.addInitScript(() => {
      if (sessionStorage.getItem('blocked') === '1') {
        Object.defineProperty(Notification, 'permission', { get: () => 'denied' });
      } else {
        delete window.PushManager;
      }
    });
    await pairInApp(page, bridge);
    await page.goto(`${bridge.url}/#/settings`);
    const toggle = page.getByRole('switch', { name: 'Notify me when a question waits', exact: true });
    await page.getByText(/^Not supported by this browser\./).waitFor();
    assert.equal(await toggle.isDisabled(), true);

    await page.evaluate(() => sessionStorage.setItem('blocked', '1'));
    await page.reload();
    await page.getByText(/^Blocked: notifications for this site are turned off/).waitFor();
    assert.equal(await toggle.isDisabled(), true);
    assert.deepEqual(await bridgeView(page), { subscribed: false, devices: [] });
  }));

test('a push is shown as a notification naming the machine and pane, never the question', T,
  () => session(browser, 'push-notification', async ({ bridge, context, page }) => {
    await context.grantPermissions(['notifications'], { origin: bridge.url });
    await pairInApp(page, bridge);
    await page.evaluate(() => navigator.serviceWorker.ready);
    const cdp = await context.newCDPSession(page);
    const registered = new Promise((resolve) => {
      cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations }) => {
        const reg = registrations.find((r) => !r.isDeleted && r.scopeURL.startsWith(bridge.url));
        if (reg) resolve(reg.registrationId);
      });
    });
    await cdp.send('ServiceWorker.enable');
    const registrationId = await registered;
    const show = async (payload) => {
      await cdp.send('ServiceWorker.deliverPushMessage', {
        origin: new URL(bridge.url).origin,
        registrationId,
        data: JSON.stringify(payload),
      });
      return waitFor('the notification', () => page.evaluate(async () => {
        const reg = await navigator.serviceWorker.ready;
        const shown = await reg.getNotifications({ tag: 'collie-cards' });
        const last = shown.at(-1);
        if (!last) return null;
        for (const n of shown) n.close();
        return { title: last.title, body: last.body, data: last.data };
      // A service worker woken for its first push on a loaded machine can take more than the
      // default 10 s (one full run saw it).
      }), { timeout: 30_000 });
    };
    assert.deepEqual(
      await show({ kind: 'permission', machine: 'web-1', pane: 'build', count: 1 }),
      { title: 'An agent asks for permission', body: 'web-1 \u00b7 build', data: { url: '/#/cards' } },
    );
    // Fields a push does not have are never shown.
    assert.deepEqual(
      await show({ kind: 'prompt', machine: 'testbox', count: 1, command: 'rm -rf /' }),
      { title: 'An agent waits for an answer', body: 'testbox', data: { url: '/#/cards' } },
    );
    const summary = await show({ kind: 'summary', machine: 'testbox', count: 31 });
    assert.equal(summary.title, '31 questions in the last hour');
    assert.match(summary.body, /^testbox: no more notifications from it for an hour/);
  }));

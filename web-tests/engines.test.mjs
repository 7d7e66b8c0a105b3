// The phone app's main flows in every engine of engines.mjs — Chromium and WebKit (Safari's
// engine, as Debian's WebKitGTK) — written once (issue 33; docs/decisions/0079-webkit-tests.md):
// pairing with a one-time code, the pane list, a pane taking typed input into the real tmux pane,
// a real hook's card answered, and the notification switch in Settings.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { ENGINES, engineSession, clickText, heading } from './engines.mjs';
import { WINDOW, waitFor, isLine, startHook } from './support.mjs';

const T = { timeout: 120_000 };
const norm = (code) => code.replace(/-/g, '').toUpperCase();

/** The screen's heading is `text` (the app draws a screen's h1 once it has what it shows). */
const headingIs = (tab, text) => tab.waitFor((want) => document.querySelector('h1')?.textContent === want, [text]);

/** The bridge's answer to `GET /api/push/subscribe` for the tab's own device. */
const bridgePush = (tab) => tab.evaluate(async () => (await fetch('/api/push/subscribe', {
  headers: { Authorization: `Bearer ${localStorage.getItem('collie.token')}` },
})).json());

/**
 * Where the page has Web Push, the browser's push service is stood in for as push.test.mjs does
 * (there is no network here): the permission is granted and `subscribe` gives a subscription of a
 * real P-256 key and a made-up endpoint. Everything from there on — the app, the bridge — is real.
 */
function standInPushService() {
  const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  let kept = null;
  Notification.requestPermission = async () => 'granted';
  PushManager.prototype.getSubscription = async () => kept;
  PushManager.prototype.subscribe = async (options) => {
    const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
    const json = {
      endpoint: `https://fcm.googleapis.com/fcm/send/stand-in-${b64url(crypto.getRandomValues(new Uint8Array(12)))}`,
      expirationTime: null,
      keys: {
        p256dh: b64url(await crypto.subtle.exportKey('raw', pair.publicKey)),
        auth: b64url(crypto.getRandomValues(new Uint8Array(16))),
      },
    };
    kept = {
      endpoint: json.endpoint,
      options: { userVisibleOnly: options.userVisibleOnly, applicationServerKey: options.applicationServerKey },
      toJSON: () => json,
      unsubscribe: async () => { kept = null; return true; },
    };
    return kept;
  };
  return true;
}

for (const engine of ENGINES) {
  describe(engine, () => {
    test(`${engine}: pairing with a one-time code from its QR link lands on the pane list`, T, () =>
      engineSession(engine, 'pairing', async ({ bridge, tab }) => {
        const code = await bridge.code();
        await tab.goto(`${bridge.url}/#pair=${code}`);
        await headingIs(tab, 'Pair this phone');
        const shown = await tab.waitFor(() => document.querySelector('#pair-code')?.value, []);
        assert.equal(norm(shown), norm(code), 'the QR link pre-fills the code');
        await tab.fill('#pair-label', `phone-${engine}`);
        await tab.click('form button[type=submit]');
        await headingIs(tab, 'Panes');

        const token = await tab.evaluate(() => localStorage.getItem('collie.token'));
        assert.ok(token, 'the token is stored');
        const { status, body } = await bridge.api('/api/devices', token);
        assert.equal(status, 200);
        assert.equal(body.devices.find((d) => d.current)?.label, `phone-${engine}`);
        // The code was used up by this pairing.
        const again = await fetch(`${bridge.url}/api/pair`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ code, label: 'another' }),
        });
        assert.notEqual(again.status, 200, 'a pairing code pairs once');
      }, { pair: false }));

    test(`${engine}: the pane list shows the tmux window`, T, () =>
      engineSession(engine, 'panes', async ({ tab }) => {
        const link = await tab.waitFor((name) => {
          const a = [...document.querySelectorAll('a.pane-link')].find((e) => e.textContent === name);
          if (!a) return null;
          const box = a.getBoundingClientRect();
          return box.width > 0 && box.height > 0 && { href: a.getAttribute('href'), left: box.left, right: box.right };
        }, [WINDOW]);
        assert.match(link.href, new RegExp(`^#/pane/[^/]+/[^/]+$`));
        const width = await tab.evaluate(() => document.documentElement.clientWidth);
        assert.ok(link.left >= 0 && link.right <= width, `the link is on screen: ${JSON.stringify(link)} in ${width}`);
      }));

    test(`${engine}: a line typed in a pane reaches the real tmux pane`, T, () =>
      engineSession(engine, 'pane-input', async ({ bridge, tab }) => {
        await clickText(tab, 'a.pane-link', WINDOW);
        await headingIs(tab, WINDOW);
        await tab.waitFor(() => /\$/.test(document.querySelector('pre.screen')?.textContent || ''), []);
        // The shell prints the line joined: only a line that ran shows `typed-in-<engine>` alone.
        await tab.fill('#pane-input', `echo typed-""in-${engine}`);
        await tab.press('#pane-input', 'Enter');
        const want = `typed-in-${engine}`;
        await waitFor(`${want} in the tmux pane`, async () => (await bridge.tmux.capture()).split('\n').some(isLine(want)));
        await tab.waitFor((w) => (document.querySelector('pre.screen')?.textContent || '')
          .split('\n').some((l) => l.trim() === w), [want]);
        assert.equal(await tab.evaluate(() => document.querySelector('#pane-input').value), '', 'the field is emptied once sent');
      }));

    test(`${engine}: a real hook's card shows on Cards and a tap answers it`, T, () =>
      engineSession(engine, 'cards', async ({ bridge, tab }) => {
        const hook = await startHook(bridge);
        // The Cards tab counts it (the app polls every 5 s): a badge, and the tab's description.
        await tab.waitFor(() => {
          const cards = document.querySelector('nav.tabbar a[href="#/cards"]');
          const said = document.getElementById(cards?.getAttribute('aria-describedby') || '-');
          return said?.textContent === '1 card waiting' && cards.querySelector('.tab-count').textContent === '1';
        }, [], { timeout: 20_000 });
        await tab.click('nav.tabbar a[href="#/cards"]');
        await headingIs(tab, 'Cards');
        const card = await tab.waitFor(() => {
          const a = document.querySelector('article.decision');
          return a && { title: a.querySelector('h2').textContent, text: a.textContent };
        }, []);
        assert.equal(card.title, 'Claude Code asks to use Bash');
        assert.ok(card.text.includes('cargo test --workspace'), card.text);
        assert.ok(card.text.includes('agent on testbox'), card.text);
        assert.equal(existsSync(hook.done), false, 'nothing is decided before the tap');

        await clickText(tab, 'article.decision button', 'Allow');
        await waitFor('the hook to return', () => existsSync(hook.done), { timeout: 15_000 });
        const decision = JSON.parse(readFileSync(hook.out, 'utf8')).hookSpecificOutput.decision;
        assert.equal(decision.behavior, 'allow');
        await tab.waitFor(() => [...document.querySelectorAll('.cards-list li')]
          .some((l) => l.textContent === 'No cards waiting.'), []);
      }));

    test(`${engine}: the notification switch turns on where the page has Web Push, else says so and is off`, T, () =>
      engineSession(engine, 'push-switch', async ({ tab }) => {
        await tab.click('a[href="#/settings"]');
        await headingIs(tab, 'Settings');
        // What this engine really has, as the page sees it (the app's own test of it, push.js).
        const supported = await tab.evaluate(() => window.isSecureContext && 'serviceWorker' in navigator
          && 'PushManager' in window && 'Notification' in window);
        const state = () => tab.waitFor(() => {
          const said = document.querySelector('#notify-state')?.textContent || '';
          const sw = document.querySelector('#notify');
          return !/…$/.test(said) && said && { said, checked: sw.checked, disabled: sw.disabled, role: sw.getAttribute('role') };
        }, []);
        const first = await state();
        assert.equal(first.role, 'switch');
        if (!supported) {
          assert.match(first.said, /^Not supported by this browser\./);
          assert.equal(first.disabled, true, 'a switch that cannot work is disabled');
          assert.equal(first.checked, false);
          assert.deepEqual(await bridgePush(tab), { subscribed: false, devices: [] });
          return;
        }
        assert.equal(first.said, 'Off: this phone is not told when a question waits.');
        assert.equal(first.disabled, false);
        await tab.evaluate(() => navigator.serviceWorker.ready.then(() => true));
        await tab.evaluate(standInPushService);
        await tab.click('#notify');
        await tab.waitFor(() => /^On: /.test(document.querySelector('#notify-state')?.textContent || ''), []);
        assert.equal((await state()).checked, true);
        assert.deepEqual(await bridgePush(tab), { subscribed: true, devices: ['phone'] });

        await tab.click('#notify');
        await tab.waitFor(() => /^Off: /.test(document.querySelector('#notify-state')?.textContent || ''), []);
        assert.equal((await state()).checked, false);
        assert.deepEqual(await bridgePush(tab), { subscribed: false, devices: [] });
      }));
  });
}

// The interface itself, where the engines differ most: the viewport is the size asked for.
for (const engine of ENGINES) {
  test(`${engine}: a tab's viewport is the CSS size asked for, and setSize changes it`, T, () =>
    engineSession(engine, 'size', async ({ tab }) => {
      assert.deepEqual(await tab.evaluate(() => [window.innerWidth, window.innerHeight]), [390, 844]);
      await tab.setSize(360, 640);
      assert.deepEqual(await tab.evaluate(() => [window.innerWidth, window.innerHeight]), [360, 640]);
      assert.equal(await heading(tab), 'Panes');
    }));
}

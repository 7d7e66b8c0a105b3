// Notifications (SPEC §10.4; docs/guide/phone-app.md, "Notifications"): this phone's Web Push
// subscription. The bridge's key comes from /api/push/key; the browser subscribes with it and the
// subscription is handed to the bridge, which keeps one per device. A push says only that a
// question waits (its kind, the machine, the pane's name, a count); the card itself is read from
// the bridge when the notification is opened.

import { api } from './client.js';
import { t } from './i18n.js';

/** base64url → bytes (the key as `applicationServerKey`). */
function bytes(b64url) {
  const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** Whether this browser can receive Web Push here (a secure page with a service worker). */
export function pushSupported() {
  return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window
    && 'Notification' in window;
}

/** The app's service worker registration (push messages arrive there), if it runs. */
async function registration() {
  const reg = await navigator.serviceWorker.getRegistration('/');
  if (!reg) throw new Error(t('the app\u2019s service worker is not running; reload the page'));
  return reg;
}

/** The browser's current subscription, if any. */
async function current() {
  if (!pushSupported()) return null;
  const reg = await navigator.serviceWorker.getRegistration('/');
  return reg ? reg.pushManager.getSubscription() : null;
}

/**
 * What the switch shows: `unsupported`, `denied` (the user blocked notifications for this site),
 * `on` (the browser and the bridge both hold this phone's subscription) or `off`.
 */
export async function pushState() {
  if (!pushSupported()) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  const sub = await current();
  if (!sub) return 'off';
  const bridge = await api('/api/push/subscribe');
  return bridge.subscribed ? 'on' : 'off';
}

/** Subscribes this phone; resolves to the new state. */
export async function enablePush() {
  if (!pushSupported()) return 'unsupported';
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') return permission === 'denied' ? 'denied' : 'off';
  const { key } = await api('/api/push/key');
  const reg = await registration();
  let sub = await reg.pushManager.getSubscription();
  // A subscription made with another key (another bridge) cannot be used: make a new one.
  if (sub && sub.options?.applicationServerKey) {
    const had = new Uint8Array(sub.options.applicationServerKey);
    const want = bytes(key);
    if (had.length !== want.length || had.some((b, i) => b !== want[i])) {
      await sub.unsubscribe();
      sub = null;
    }
  }
  if (!sub) {
    sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(key) });
  }
  const json = sub.toJSON();
  await api('/api/push/subscribe', {
    method: 'POST',
    body: { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } },
  });
  return 'on';
}

/** Unsubscribes this phone, on the bridge and in the browser; resolves to the new state. */
export async function disablePush() {
  await api('/api/push/subscribe', { method: 'DELETE' });
  const sub = await current();
  if (sub) await sub.unsubscribe();
  return 'off';
}

/** Drops the browser's subscription without asking the bridge (unpairing: the bridge drops its own). */
export async function forgetPush() {
  try {
    const sub = await current();
    if (sub) await sub.unsubscribe();
  } catch {
    // nothing to forget
  }
}

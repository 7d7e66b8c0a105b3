// Calls to the bridge's phone API (SPEC §3.2). Every call sends the token in the Authorization
// header (never in a URL). A 403 `device not paired` / `device expired` from any call forgets the
// pairing through the handler app.js installs.

import { getToken } from './store.js';

export class ApiError extends Error {
  constructor(status, code, retryAfter = null) {
    super(code);
    this.status = status; // 0: the bridge could not be reached
    this.code = code;
    this.retryAfter = retryAfter;
  }

  get offline() {
    return this.status === 0;
  }
}

let onUnpaired = () => {};

/** Installs what happens when the bridge says this phone is not (or no longer) paired. */
export function setUnpairedHandler(fn) {
  onUnpaired = fn;
}

export function isUnpaired(status, code) {
  return status === 403 && (code === 'device not paired' || code === 'device expired');
}

/** Turns a failed response into an ApiError (and reports an unpaired device). */
export async function failure(res) {
  let code = `HTTP ${res.status}`;
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') code = body.error;
  } catch {
    // not JSON: keep the status
  }
  const err = new ApiError(res.status, code, res.headers.get('Retry-After'));
  if (isUnpaired(res.status, code)) onUnpaired(code);
  return err;
}

export function authHeaders(extra = {}) {
  const h = { ...extra };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

/** JSON request; resolves with the parsed body, rejects with an ApiError. */
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = authHeaders(body === undefined ? {} : { 'Content-Type': 'application/json' });
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'bridge unreachable');
  }
  if (!res.ok) throw await failure(res);
  try {
    return await res.json();
  } catch {
    return null;
  }
}

/** `/api/panes/<m>/<p>` with both parts URL-encoded. */
export function panePath(machine, pane, rest = '') {
  return `/api/panes/${encodeURIComponent(machine)}/${encodeURIComponent(pane)}${rest}`;
}

/** Maps SPEC key names from the key bar's accessible names. */
export const KEYS = [
  ['Enter', 'Enter', '⏎'],
  ['Esc', 'Escape', 'Esc'],
  ['Tab', 'Tab', 'Tab'],
  ['Up', 'Up', '↑'],
  ['Down', 'Down', '↓'],
  ['Left', 'Left', '←'],
  ['Right', 'Right', '→'],
  ['Ctrl+C', 'C-c', '^C'],
  ['Ctrl+D', 'C-d', '^D'],
  ['Ctrl+Z', 'C-z', '^Z'],
  ['Ctrl+L', 'C-l', '^L'],
  ['Backspace', 'Backspace', '⌫'],
  ['PageUp', 'PageUp', 'PgUp'],
  ['PageDown', 'PageDown', 'PgDn'],
];

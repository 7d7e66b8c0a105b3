// Calls to the bridge's phone API (SPEC §3.2). Every call sends the token in the Authorization
// header (never in a URL). A 403 `device not paired` / `device expired` from any call to the lead
// forgets the pairing through the handler app.js installs (the deputy's word never does: the lead
// holds the registry). Calls go to the machine reach.js names — the lead, or its deputy while the
// lead does not answer; a GET that found no lead is asked once more of the deputy, a GET the
// deputy sent back (`standby`) once more of the lead. A write is never sent twice.

import { getToken } from './store.js';
import {
  at, fromLead, learn, STANDBY, standby, suspect, watchSlow,
} from './reach.js';

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
  if (isUnpaired(res.status, code) && fromLead(res.url)) onUnpaired(code);
  return err;
}

export function authHeaders(extra = {}) {
  const h = { ...extra };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

/**
 * `fetch(path)` on the machine the phone talks to now. A call to the lead that gets no answer
 * (a network error, or none within reach.js's SLOW_MS) has the lead's health asked; a deputy's
 * `standby` answer has the lead asked at once. `again` says whether the call is worth sending
 * once more when that changed the machine (a GET is; a write is not: it may have been served).
 */
export async function reachFetch(path, init, again = false) {
  const url = at(path);
  const toLead = fromLead(url);
  const done = toLead ? watchSlow() : () => {};
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    if (toLead && (await suspect()) && again) return reachFetch(path, init, false);
    throw e;
  } finally {
    done();
  }
  if (!toLead && res.status === 503) {
    const code = await res.clone().json().then((b) => b?.error, () => null);
    if (code === STANDBY && (await standby()) && again) return reachFetch(path, init, false);
  }
  return res;
}

/** JSON request; resolves with the parsed body, rejects with an ApiError. */
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = authHeaders(body === undefined ? {} : { 'Content-Type': 'application/json' });
  let res;
  try {
    res = await reachFetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
      credentials: 'omit',
    }, method === 'GET');
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'bridge unreachable');
  }
  if (!res.ok) throw await failure(res);
  let out;
  try {
    out = await res.json();
  } catch {
    return null;
  }
  if (path === '/api/machines' && fromLead(res.url)) learn(out);
  return out;
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

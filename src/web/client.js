// Calls to the bridge's phone API (SPEC §3.2). Every call sends the token in the Authorization
// header (never in a URL). A 403 `device not paired` / `device expired` from any call to the lead
// forgets the pairing through the handler app.js installs (the deputy's word never does: the lead
// holds the registry). Calls go to the machine named below — the lead, or its deputy while the
// lead does not answer (below); a GET that found no lead is asked once more of the deputy, a GET the
// deputy sent back (`standby`) once more of the lead. A write is never sent twice.

import { getReach, getToken, setReach } from './store.js';

export class ApiError extends Error {
  constructor(status, code, retryAfter = null, gate = null) {
    super(code);
    this.status = status; // 0: the bridge could not be reached
    this.code = code;
    this.retryAfter = retryAfter;
    this.gate = gate; // `identity required`: the gate that refused (SPEC §14)
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
  let gate = null;
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') code = body.error;
    if (body && typeof body.gate === 'string') gate = body.gate;
  } catch {
    // not JSON: keep the status
  }
  const err = new ApiError(res.status, code, res.headers.get('Retry-After'), gate);
  if (isUnpaired(res.status, code) && fromLead(res.url)) onUnpaired(code);
  return err;
}

export function authHeaders(extra = {}) {
  const h = { ...extra };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

// ---- Which machine the phone talks to (SPEC §13, decision 0069): the lead — the bridge that served
// this page — or, while the lead does not answer, the crew's deputy at its standby door.
//
// - The deputy's name and URL are learnt from the lead's `GET /api/machines` and kept with the
//   lead's origin (`collie.reach`, forgotten with the pairing).
// - A call to the lead that fails without an answer (a network error, or no answer within
//   SLOW_MS) makes the phone ask the lead's `/api/health`; when that gets no 200 within
//   PROBE_TIMEOUT_MS either, every call and stream turns to the deputy, and the page says
//   "via deputy NAME". An HTTP error from the lead is an answer: it never switches.
// - While on the deputy, the lead's health is asked every PROBE_EVERY_MS; the first 200 turns
//   everything back to the lead and the label goes. A deputy that answers 503
//   `standby: the lead is up` makes the phone ask the lead at once (it goes back as soon as the
//   lead answers it).
// The phone prefers the lead whenever the lead answers: a deputy is only ever used while the lead
// does not.

// SLOW_MS: no answer within 10 s counts as the lead not answering (the call itself goes on).
// PROBE_TIMEOUT_MS: a health probe waits 4 s. PROBE_EVERY_MS: while the phone talks to the
// deputy, the lead is asked every 3 s.

const lead = location.origin;
let onDeputy = false;
let probing = null;
let timer = null;
/** Fires `change` whenever the machine the phone talks to changes. */
export const changes = new EventTarget();

/** The kept deputy `{name, url}` (its URL an origin other than the lead's), or null. */
export function deputy() {
  const kept = getReach();
  return kept?.lead === lead ? kept.deputy : null;
}

/** The deputy's name while the phone talks to it, else undefined. */
export function via() {
  return onDeputy && deputy()?.name;
}

/** `path` (`/api/…`) on the machine the phone talks to now (the lead: the page's own origin). */
export function at(path) {
  return onDeputy ? (deputy()?.url ?? '') + path : path;
}

/** Whether `url` (a request's or a response's) is the lead's. */
export function fromLead(url) {
  return new URL(url, lead).origin === lead;
}

function switchTo(toDeputy) {
  if (onDeputy === toDeputy) return;
  onDeputy = toDeputy;
  clearTimeout(timer);
  if (onDeputy) timer = setTimeout(watchLead, 3000); // PROBE_EVERY_MS
  changes.dispatchEvent(new Event('change'));
}

/** Learns the deputy from the lead's `/api/machines` answer `res` (an answer from the lead: on
 * the deputy itself the entry says `standing_in`, and is not taken). */
export function learn(res) {
  const d = res?.deputy;
  let url;
  try {
    url = new URL(d.url).origin;
  } catch {
    // no deputy, or no URL for it yet
  }
  // `null` is the origin of anything but http(s) (and a URL of the lead's own is no deputy).
  if (d?.standing_in !== undefined || url === lead || url === 'null') url = undefined;
  setReach({ lead, deputy: url && { name: String(d.name), url } });
  if (!url) switchTo(false);
}

/** Whether the lead answers `/api/health` with a 200 within PROBE_TIMEOUT_MS. */
async function leadAnswers() {
  const ctrl = new AbortController();
  const t = setTimeout(() => ctrl.abort(), 4000); // PROBE_TIMEOUT_MS
  try {
    return (await fetch(`${lead}/api/health`, { cache: 'no-store', credentials: 'omit', signal: ctrl.signal })).ok;
  } catch {
    return false;
  } finally {
    clearTimeout(t);
  }
}

/**
 * Asks the lead's health (callers share a probe under way) and settles the machine: the lead when
 * it answers, else the deputy if there is one. Resolves whether the phone talks to the deputy.
 */
export function probe() {
  probing ??= leadAnswers().then((up) => {
    probing = null;
    switchTo(!up && !!deputy());
    return onDeputy;
  });
  return probing;
}

function watchLead() {
  if (onDeputy) probe().then((still) => still && (timer = setTimeout(watchLead, 3000)));
}

/** For a call to the lead (`toLead`): past SLOW_MS without an answer, the lead is asked. Returns
 * what cancels that once the call is answered. */
export function watchSlow(toLead) {
  const t = toLead && setTimeout(() => deputy() && !onDeputy && probe(), 1e4); // SLOW_MS
  return () => clearTimeout(t);
}

/** Turns back to the lead (the pairing, and with it the kept deputy, is being forgotten). */
export function forgetReach() {
  switchTo(false);
}

/**
 * `fetch(path)` on the machine the phone talks to now (below). A call to the lead that gets no answer
 * (a network error, or none within SLOW_MS) has the lead's health asked; a deputy's
 * `standby` answer has the lead asked at once. `again` says whether the call is worth sending
 * once more when that changed the machine (a GET is; a write is not: it may have been served).
 */
export async function reachFetch(path, init, again = false) {
  const url = at(path);
  const toLead = fromLead(url);
  const done = watchSlow(toLead);
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (e?.name !== 'AbortError' && toLead && deputy() && (await probe()) && again) return reachFetch(path, init);
    throw e;
  } finally {
    done();
  }
  // The deputy's `standby`: the lead is up, ask it.
  if (!toLead && res.status === 503 && (await res.clone().json().catch(() => 0))?.error === 'standby: the lead is up'
    && !(await probe()) && again) return reachFetch(path, init);
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

/**
 * A microphone for `field`, whose text is for `machine` (SPEC §16): dictate.js and what it needs
 * are fetched only when this bridge has a transcriber, so they are no part of the shell. It goes
 * with its field: a recording under way when the field leaves the page is thrown away.
 */
export function dictate(machine, field) {
  api('/api/settings').then((s) => s?.speech && import('./dictate.js')).then((m) => m && m.attach(machine, field), () => {});
}

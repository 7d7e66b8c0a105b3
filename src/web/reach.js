// Which machine the phone talks to (SPEC §13, decision 0069): the lead — the bridge that served
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

import { getReach, setReach } from './store.js';

/** No answer within this long counts as the lead not answering (the call itself goes on). */
export const SLOW_MS = 10_000;
/** How long a health probe waits. */
export const PROBE_TIMEOUT_MS = 4_000;
/** How often the lead is asked while the phone talks to the deputy. */
export const PROBE_EVERY_MS = 3_000;
/** The deputy's word for "the lead is up: ask it". */
export const STANDBY = 'standby: the lead is up';

const lead = location.origin;
let onDeputy = false;
let probing = null;
let timer = null;
const listeners = new Set();

/** The kept deputy `{name, url}` (its URL an origin other than the lead's), or null. */
export function deputy() {
  const kept = getReach();
  if (!kept || kept.lead !== lead || !kept.deputy) return null;
  return kept.deputy;
}

/** The deputy's name while the phone talks to it, else null. */
export function via() {
  return onDeputy ? deputy()?.name ?? null : null;
}

/** The base URL of every API call and stream now. */
export function base() {
  return onDeputy ? deputy()?.url ?? lead : lead;
}

/** `path` (`/api/…`) on the machine the phone talks to now. */
export function at(path) {
  return onDeputy ? `${base()}${path}` : path;
}

/** Whether `url` (a response's) is the lead's. */
export function fromLead(url) {
  try {
    return new URL(url, lead).origin === lead;
  } catch {
    return true;
  }
}

/** Calls `fn()` whenever the machine changes; returns the unsubscribe. */
export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function switchTo(deputyNow) {
  if (onDeputy === deputyNow) return;
  onDeputy = deputyNow;
  clearTimeout(timer);
  if (onDeputy) timer = setTimeout(watchLead, PROBE_EVERY_MS);
  for (const fn of [...listeners]) {
    try {
      fn();
    } catch {
      // one listener failing must not keep the others from hearing
    }
  }
}

/** Learns the deputy from the lead's `/api/machines` answer `res` (an answer from the lead). */
export function learn(res) {
  const d = res?.deputy;
  let url = null;
  if (d && typeof d.name === 'string' && typeof d.url === 'string' && d.standing_in === undefined) {
    try {
      const u = new URL(d.url);
      if ((u.protocol === 'http:' || u.protocol === 'https:') && u.origin !== lead) url = u.origin;
    } catch {
      url = null;
    }
  }
  const next = url ? { lead, deputy: { name: d.name, url } } : { lead, deputy: null };
  const kept = getReach();
  if (JSON.stringify(kept) !== JSON.stringify(next)) setReach(next);
  if (!next.deputy && onDeputy) switchTo(false);
}

/** Whether the lead answers `/api/health` with a 200 within PROBE_TIMEOUT_MS. */
async function leadAnswers() {
  const ctrl = new AbortController();
  const t = setTimeout(() => ctrl.abort(), PROBE_TIMEOUT_MS);
  try {
    const res = await fetch(`${lead}/api/health`, { cache: 'no-store', credentials: 'omit', signal: ctrl.signal });
    return res.ok;
  } catch {
    return false;
  } finally {
    clearTimeout(t);
  }
}

/**
 * A call to the lead got no answer: asks the lead's health once (callers share a probe under way)
 * and turns to the deputy when the lead does not answer it. Resolves whether the phone now talks
 * to the deputy.
 */
export function suspect() {
  if (onDeputy) return Promise.resolve(true);
  if (!deputy()) return Promise.resolve(false);
  if (!probing) {
    probing = leadAnswers().then((up) => {
      if (!up && deputy()) switchTo(true);
      return onDeputy;
    }).finally(() => {
      probing = null;
    });
  }
  return probing;
}

/** The deputy said the lead is up: asks the lead now. Resolves whether the phone is back on it. */
export async function standby() {
  if (!onDeputy) return true;
  if (await leadAnswers()) switchTo(false);
  return !onDeputy;
}

async function watchLead() {
  if (!onDeputy) return;
  if (await leadAnswers()) {
    switchTo(false);
    return;
  }
  if (onDeputy) timer = setTimeout(watchLead, PROBE_EVERY_MS);
}

/** Starts watching calls that hang: `done()` cancels; past SLOW_MS the lead is suspected. */
export function watchSlow() {
  if (onDeputy || !deputy()) return () => {};
  const t = setTimeout(suspect, SLOW_MS);
  return () => clearTimeout(t);
}

/** Forgets the deputy here (the pairing is being forgotten) and turns back to the lead. */
export function forgetReach() {
  switchTo(false);
}

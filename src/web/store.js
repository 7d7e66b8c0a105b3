// What the phone keeps in localStorage (docs/guide/phone-app.md, "What the phone stores"), and the
// one function that forgets the pairing.

import { deleteAll as deleteKept } from './kept.js';

const TOKEN = 'collie.token';
const DEVICE = 'collie.device';
const DRAFT = 'collie.draft.';
const PREF = 'collie.pref.';
const REACH = 'collie.reach';
const PINS = 'collie.pins';
const FOLDERS = 'collie.folders';
/** Cache Storage names of the app shell (sw.js); they survive unpairing. */
export const SHELL_CACHE_PREFIX = 'collie-shell-';

function ls() {
  try {
    return window.localStorage;
  } catch {
    return null; // storage disabled: the app still works for this session
  }
}

function get(k) {
  try {
    return ls()?.getItem(k) ?? null;
  } catch {
    return null;
  }
}

function set(k, v) {
  try {
    if (v === null || v === undefined || v === '') ls()?.removeItem(k);
    else ls()?.setItem(k, v);
  } catch {
    // quota or private mode: not fatal
  }
}

export function getToken() {
  return get(TOKEN);
}

/** `{label, tier, expires_at}` of this phone, or null. */
export function getDevice() {
  try {
    return JSON.parse(get(DEVICE) || 'null');
  } catch {
    return null;
  }
}

export function setDevice(device) {
  set(DEVICE, JSON.stringify({
    label: device.label,
    tier: device.tier,
    expires_at: device.expires_at ?? null,
  }));
}

export function setPairing(token, device) {
  set(TOKEN, token);
  setDevice(device);
}

/** `{lead, deputy: {name, url} | null}`: the lead's origin and the crew's deputy (client.js). */
export function getReach() {
  try {
    return JSON.parse(get(REACH) || 'null');
  } catch {
    return null;
  }
}

export function setReach(reach) {
  set(REACH, JSON.stringify(reach));
}

/** The pinned panes, `machine/pane` each, in the order they were pinned. */
export function getPins() {
  return list(PINS);
}

export function setPins(pins) {
  set(PINS, pins.length ? JSON.stringify(pins) : null);
}

/** `{favourites: [{machine, path}], recent: [{machine, path}]}` of the New page's folders. */
export function getFolders() {
  try {
    const f = JSON.parse(get(FOLDERS) || 'null');
    return { favourites: Array.isArray(f?.favourites) ? f.favourites : [], recent: Array.isArray(f?.recent) ? f.recent : [] };
  } catch {
    return { favourites: [], recent: [] };
  }
}

export function setFolders(folders) {
  set(FOLDERS, JSON.stringify(folders));
}

/** A kept JSON array of strings, or an empty one when missing or not such an array. */
function list(key) {
  try {
    const v = JSON.parse(get(key) || '[]');
    return Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

export function getDraft(machine, pane) {
  return get(`${DRAFT}${machine}/${pane}`) || '';
}

export function setDraft(machine, pane, text) {
  set(`${DRAFT}${machine}/${pane}`, text);
}

export function getPref(name, fallback) {
  return get(PREF + name) ?? fallback;
}

export function setPref(name, value) {
  set(PREF + name, value);
}

/** Whether `Keep text on this phone` is on (default on). */
export function keepText() {
  return getPref('keep', 'on') !== 'off';
}

/**
 * Forgets the pairing: token, device, drafts and any other `collie.*` key except `collie.pref.*`,
 * the kept pane text (IndexedDB `collie-store`) and every cache but the app shell's.
 */
export async function forgetPairing() {
  const s = ls();
  if (s) {
    for (let i = s.length - 1; i >= 0; i--) {
      const k = s.key(i);
      if (k && k.startsWith('collie.') && !k.startsWith(PREF)) s.removeItem(k);
    }
  }
  const jobs = [deleteKept()];
  if (self.caches) {
    jobs.push(caches.keys().then((names) => Promise.all(
      names.filter((n) => !n.startsWith(SHELL_CACHE_PREFIX)).map((n) => caches.delete(n)),
    )));
  }
  await Promise.allSettled(jobs);
}

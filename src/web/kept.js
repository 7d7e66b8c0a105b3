// The kept copy (docs/guide/phone-app.md, "What the phone stores"): IndexedDB `collie-store`, object
// store `panes`, one record per pane holding the masked text the bridge sent — the screen's lines
// and the chat's turns, each at most half of 256 KiB so neither crowds out the other (seed 002) —
// and 10 MiB in all, oldest dropped first. It is only ever shown, never used to send anything.
// Callers check `keepText()` before saving; this module knows nothing of settings.

const DB = 'collie-store';
const STORE = 'panes';
export const PER_PANE = 256 * 1024;
export const TOTAL = 10 * 1024 * 1024;

let opening = null;

function open() {
  if (!self.indexedDB) return Promise.reject(new Error('no IndexedDB'));
  if (!opening) {
    opening = new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'key' });
      req.onsuccess = () => {
        const db = req.result;
        db.onversionchange = () => {
          db.close();
          opening = null;
        };
        resolve(db);
      };
      req.onerror = () => {
        opening = null;
        reject(req.error);
      };
    });
  }
  return opening;
}

function run(mode, fn) {
  return open().then((db) => new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const result = fn(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(result && 'result' in result ? result.result : undefined);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  }));
}

const enc = new TextEncoder();

/** The newest lines of `lines` whose UTF-8 size (with newlines) fits in `limit` bytes. */
export function fit(lines, limit) {
  let bytes = 0;
  let start = lines.length;
  while (start > 0) {
    const b = enc.encode(lines[start - 1]).length + 1;
    if (bytes + b > limit) break;
    bytes += b;
    start--;
  }
  return { lines: lines.slice(start), bytes };
}

/** Each half of a pane's record: the screen's lines, the chat's turns. */
export const HALF = PER_PANE / 2 - 512;

/** The newest turns whose UTF-8 size (as JSON) fits in `limit` bytes. */
export function fitTurns(turns, limit) {
  let bytes = 0;
  let start = turns.length;
  while (start > 0) {
    const b = enc.encode(JSON.stringify(turns[start - 1])).length + 1;
    if (bytes + b > limit) break;
    bytes += b;
    start--;
  }
  return { turns: turns.slice(start), bytes };
}

/** Writes one half of a pane's record, keeping the other half as it is, in one transaction. */
async function merge(machine, pane, name, half) {
  const key = `${machine}/${pane}`;
  await run('readwrite', (s) => {
    const got = s.get(key);
    got.onsuccess = () => {
      const prev = got.result || { lines: [], lines_bytes: 0, turns: [], turns_bytes: 0 };
      const rec = { ...prev, ...half, key, machine, pane, name, saved_at: Date.now() };
      rec.bytes = (rec.lines_bytes || 0) + (rec.turns_bytes || 0);
      s.put(rec);
    };
  });
  await enforceTotal();
}

/** Saves the masked `lines` of a pane's screen (trimmed to its half), then enforces the total. */
export async function save(machine, pane, name, lines) {
  const { lines: kept, bytes } = fit(lines, HALF);
  await merge(machine, pane, name, { lines: kept, lines_bytes: bytes });
}

/** Saves the masked chat `turns` of a pane (trimmed to its half), then enforces the total. */
export async function saveChat(machine, pane, name, turns) {
  const { turns: kept, bytes } = fitTurns(turns, HALF);
  await merge(machine, pane, name, { turns: kept, turns_bytes: bytes });
}

async function enforceTotal() {
  const all = (await run('readonly', (s) => s.getAll())) || [];
  let total = all.reduce((n, r) => n + (r.bytes || 0), 0);
  if (total <= TOTAL) return;
  all.sort((a, b) => a.saved_at - b.saved_at);
  const drop = [];
  for (const r of all) {
    if (total <= TOTAL) break;
    total -= r.bytes || 0;
    drop.push(r.key);
  }
  await run('readwrite', (s) => drop.forEach((k) => s.delete(k)));
}

/** One pane's record, or null. */
export async function load(machine, pane) {
  try {
    return (await run('readonly', (s) => s.get(`${machine}/${pane}`))) || null;
  } catch {
    return null;
  }
}

/** Every record, newest first. */
export async function list() {
  try {
    const all = (await run('readonly', (s) => s.getAll())) || [];
    return all.sort((a, b) => b.saved_at - a.saved_at);
  } catch {
    return [];
  }
}

/** Drops one pane's record. */
export async function drop(machine, pane) {
  try {
    await run('readwrite', (s) => s.delete(`${machine}/${pane}`));
  } catch {
    // nothing kept, nothing to drop
  }
}

/** Deletes the whole database. */
export async function deleteAll() {
  if (!self.indexedDB) return;
  if (opening) {
    try {
      (await opening).close();
    } catch {
      // it never opened
    }
    opening = null;
  }
  await new Promise((resolve) => {
    const req = indexedDB.deleteDatabase(DB);
    req.onsuccess = req.onerror = req.onblocked = () => resolve();
  });
}

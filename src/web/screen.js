// The pane screen as data: rows of text, applied from stream events (SPEC §3.2, stream.rs), and the
// rows that scroll off the top between two events, kept so that history stays reachable while a
// program redraws the whole screen. Pure: no DOM.

/** Largest number of lines kept above the live screen in memory. */
export const HISTORY_MAX = 5000;

/**
 * Applies a stream event to `rows` and returns `{rows, all, changed}`: the new rows, whether every
 * row must be redrawn (first event, resync, resize), and the indexes that changed otherwise.
 */
export function applyEvent(rows, ev) {
  const n = Number.isInteger(ev.rows_count) ? ev.rows_count : rows.length;
  const incoming = ev.rows || {};
  if (ev.full || n !== rows.length) {
    const next = new Array(n).fill('');
    for (const [k, v] of Object.entries(incoming)) {
      const i = Number(k);
      if (i >= 0 && i < n) next[i] = String(v);
    }
    return { rows: next, all: true, changed: [] };
  }
  const next = rows.slice();
  const changed = [];
  for (const [k, v] of Object.entries(incoming)) {
    const i = Number(k);
    if (i >= 0 && i < n && next[i] !== v) {
      next[i] = String(v);
      changed.push(i);
    }
  }
  return { rows: next, all: false, changed };
}

const blank = (s) => s.trim() === '';

/**
 * The lines of `old` that left the screen on the way to `next` (same height): either the rows that
 * scrolled off the top (the screen moved up by k rows), or, when more than half of the non-blank
 * rows (and at least two) were replaced without a scroll (a redraw, `clear`), the old screen
 * without trailing blank rows. A row that only grew (typing at a prompt) is not replaced. Nothing for small changes (a spinner, a typed character).
 */
export function scrolledOff(old, next) {
  const n = old.length;
  if (n === 0 || next.length !== n) return [];
  let changed = 0;
  let replaced = 0; // changed rows that are not the old row with more typed after it
  let nonBlankOld = 0;
  for (let i = 0; i < n; i++) {
    if (blank(old[i])) continue;
    nonBlankOld++;
    if (old[i] === next[i]) continue;
    changed++;
    if (!next[i].startsWith(old[i].trimEnd())) replaced++;
  }
  if (changed === 0) return [];
  for (let k = 1; k < n; k++) {
    let match = 0;
    let nonBlankMatch = 0;
    let nonBlank = 0;
    for (let j = 0; j < n - k; j++) {
      if (!blank(next[j])) nonBlank++;
      if (old[j + k] === next[j]) {
        match++;
        if (!blank(next[j])) nonBlankMatch++;
      }
    }
    if (nonBlankMatch > 0 && match >= 0.6 * (n - k) && nonBlankMatch >= 0.6 * nonBlank) {
      return old.slice(0, k);
    }
  }
  if (replaced >= 2 && replaced * 2 > nonBlankOld) {
    let end = n;
    while (end > 0 && blank(old[end - 1])) end--;
    return old.slice(0, end);
  }
  return [];
}

/**
 * Where the first lines of `known` (the oldest history on the phone) start inside `fetched` (a
 * longer scrollback from the bridge): the number of earlier lines to prepend, or -1.
 */
export function earlierCount(known, fetched) {
  const m = Math.min(5, known.length);
  if (m === 0) return -1;
  outer: for (let i = 0; i + m <= fetched.length; i++) {
    for (let j = 0; j < m; j++) if (fetched[i + j] !== known[j]) continue outer;
    return i;
  }
  return -1;
}

// Follows a pane's Server-Sent Events stream with fetch (SPEC §3.2): the token goes in the
// Authorization header, `Last-Event-ID` is sent by hand, and the `id:`/`data:`/`event:` lines are
// parsed here. A dropped stream is retried with exponential backoff and full jitter (capped at
// 10 s); `kick()` retries at once (the page became visible, the network came back). Through a crew
// lead, a member's pane can also be out of reach while the lead is fine (the member is offline: 502,
// or its link dropped: a last `closed` event saying so); that is retried the same way, but reported
// as `unreachable` rather than `reconnecting`, and never taken for the pane closing. A `closed`
// event saying the pane ended is checked by reading the pane before it is given up: a bridge that
// is shutting down ends its streams the same way, and then the pane is still there. A stream
// follows the machine the phone talks to (client.js): when it turns to the deputy or back, the
// stream reconnects there at once.

import { api, authHeaders, changes, failure, isUnpaired, reachFetch } from './client.js';

const BASE_MS = 500;
const CAP_MS = 10_000;
/** The bridge sends a keep-alive comment every 15 s; silence longer than this means a dead link. */
const SILENCE_MS = 40_000;
/** The lead's word for "the member's machine cannot be reached" (SPEC §3.2, §8). */
export const UNREACHABLE = 'member unreachable';

/**
 * What a last `closed` event means: `'gone'` when the pane ended (no error: it was closed, or the
 * member no longer has it; to be confirmed), `'unreachable'` when the member's link dropped,
 * `'retry'` for any other error (the member restarting, its answer unreadable, a limit): worth
 * another try.
 */
export function closedMeaning(data) {
  let error;
  try {
    error = JSON.parse(data || '{}')?.error;
  } catch {
    error = undefined;
  }
  if (!error || error === 'no such pane') return 'gone';
  return error === UNREACHABLE ? 'unreachable' : 'retry';
}

/** Delay before retry number `attempt` (0-based): uniform in [cap/2, cap] of the doubled base. */
export function backoff(attempt, random = Math.random) {
  const ceiling = Math.min(CAP_MS, BASE_MS * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Incremental SSE parser: feed it decoded text, it calls `onEvent(type, data, id)` per event.
 */
export class SseParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buf = '';
    this.data = [];
    this.type = '';
    this.id = null;
  }

  push(text) {
    this.buf += text;
    for (;;) {
      const i = this.buf.search(/[\r\n]/);
      if (i < 0) return;
      if (this.buf[i] === '\r' && i === this.buf.length - 1) return; // maybe half of \r\n
      const line = this.buf.slice(0, i);
      const skip = this.buf[i] === '\r' && this.buf[i + 1] === '\n' ? 2 : 1;
      this.buf = this.buf.slice(i + skip);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length) this.onEvent(this.type || 'message', this.data.join('\n'), this.id);
      this.data = [];
      this.type = '';
      return;
    }
    if (line[0] === ':') return; // comment (keep-alive)
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.type = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

export class PaneStream {
  /**
   * @param {string} url the stream route
   * @param {object} on `event(json)`, `state('connecting'|'live'|'reconnecting'|'unreachable')`,
   *   `gone(code)`, `unpaired()`
   */
  constructor(url, on) {
    this.url = url;
    this.on = on;
    this.lastId = null;
    this.attempt = 0;
    this.stopped = false;
    this.ctrl = null;
    this.wake = null;
    this.silence = null;
  }

  start() {
    changes.addEventListener('change', this.onReach = () => this.kick());
    this.loop();
  }

  stop() {
    this.stopped = true;
    changes.removeEventListener('change', this.onReach);
    this.ctrl?.abort();
    this.wake?.();
    clearTimeout(this.silence);
  }

  /** Reconnects now: ends the current wait, or drops a possibly dead connection. */
  kick() {
    this.attempt = 0;
    if (this.wake) this.wake();
    else this.ctrl?.abort();
  }

  async loop() {
    this.on.state('connecting');
    while (!this.stopped) {
      const end = await this.once();
      if (this.stopped || end === 'done') return;
      this.on.state(end === 'unreachable' ? 'unreachable' : 'reconnecting');
      await this.sleep(backoff(this.attempt++));
    }
  }

  sleep(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(t);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  heard() {
    clearTimeout(this.silence);
    this.silence = setTimeout(() => this.ctrl?.abort(), SILENCE_MS);
  }

  /**
   * One connection; resolves `'done'` when there is no point in retrying, `'unreachable'` when
   * the lead says the pane's machine cannot be reached, `'retry'` otherwise.
   */
  async once() {
    this.ctrl = new AbortController();
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (this.lastId !== null) headers['Last-Event-ID'] = this.lastId;
    try {
      const res = await reachFetch(this.url, {
        headers,
        signal: this.ctrl.signal,
        cache: 'no-store',
        credentials: 'omit',
      });
      if (!res.ok) {
        const err = await failure(res);
        if (isUnpaired(err.status, err.code)) return 'done';
        if (err.status === 404 || err.status === 403) {
          this.on.gone(err.code);
          return 'done';
        }
        return err.code === UNREACHABLE ? 'unreachable' : 'retry';
      }
      this.heard();
      let closed = null;
      const parser = new SseParser((type, data, id) => {
        if (id !== null) this.lastId = id;
        if (type === 'closed') {
          closed = closedMeaning(data);
          return;
        }
        if (type !== 'message') return;
        let ev;
        try {
          ev = JSON.parse(data);
        } catch {
          return;
        }
        this.attempt = 0;
        this.on.state('live');
        this.on.event(ev);
      });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.heard();
        parser.push(dec.decode(value, { stream: true }));
      }
      if (closed === 'gone') return this.confirmGone();
      return closed === 'unreachable' ? 'unreachable' : 'retry';
    } catch {
      return 'retry';
    } finally {
      clearTimeout(this.silence);
    }
  }

  /**
   * After the stream said its pane ended: `'done'` (and `gone`) when reading the pane answers 404,
   * else as for a dropped stream (the pane is still there, or the bridge cannot tell now: it may be
   * restarting, or the pane's machine unreachable).
   */
  async confirmGone() {
    try {
      await api(this.url.replace(/\/stream$/, ''));
      return 'retry';
    } catch (err) {
      if (err.status !== 404) return err.code === UNREACHABLE ? 'unreachable' : 'retry';
      this.on.gone('pane closed');
      return 'done';
    }
  }
}

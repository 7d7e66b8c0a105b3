// Follows a pane's Server-Sent Events stream with fetch (SPEC §3.2): the token goes in the
// Authorization header, `Last-Event-ID` is sent by hand, and the `id:`/`data:`/`event:` lines are
// parsed here. A dropped stream is retried with exponential backoff and full jitter (capped at
// 10 s); `kick()` retries at once (the page became visible, the network came back).

import { authHeaders, failure, isUnpaired } from './client.js';

const BASE_MS = 500;
const CAP_MS = 10_000;
/** The bridge sends a keep-alive comment every 15 s; silence longer than this means a dead link. */
const SILENCE_MS = 40_000;

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
   * @param {object} on `event(json)`, `state('connecting'|'live'|'reconnecting')`, `gone(code)`,
   *   `unpaired()`
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
    this.loop();
  }

  stop() {
    this.stopped = true;
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
      this.on.state('reconnecting');
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

  /** One connection; resolves `'done'` when there is no point in retrying. */
  async once() {
    this.ctrl = new AbortController();
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (this.lastId !== null) headers['Last-Event-ID'] = this.lastId;
    try {
      const res = await fetch(this.url, {
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
        return 'retry';
      }
      this.heard();
      let closed = false;
      const parser = new SseParser((type, data, id) => {
        if (id !== null) this.lastId = id;
        if (type === 'closed') {
          closed = true;
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
      if (closed) {
        this.on.gone('pane closed');
        return 'done';
      }
      return 'retry';
    } catch {
      return 'retry';
    } finally {
      clearTimeout(this.silence);
    }
  }
}

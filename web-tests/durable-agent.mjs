// A small durable agent in Node for the browser tests: it speaks the durable wire, version 1
// (docs/DURABLE.md, SPEC §10.3) — HTTP/1.1 on a private unix socket — and keeps its conversations
// in memory. It is a real agent the bridge reaches through the real private-path check, not a
// stand-in for the bridge's side; the tests use it (rather than the reference agent) because it
// can say hostile things on cue (raw HTML, `javascript:` links, invisible characters).
//
// What it does — on the writes, the same as the reference agent (`examples/durable-agent/`), so a
// test that only looks at the phone runs against either: `GET /v1/state` answers the whole state
// with an ETag (304 when unchanged); `send` appends the text as a user item and answers
// `Got <n> bytes.` (and `ask <title>` opens a question titled `<title>`); `answer` removes the
// question, appends the option's label and `You said: <label>` (the `deploy` starter's question:
// `Deploying…` or `Cancelled`); `abort` ends a working turn (`Stopped`); the `retry` action says
// `Retrying the last step.`; `rename`, `close`, `reopen` do what they say; the starter `deploy`
// opens a conversation `Deploy` asking "Deploy to production?" (Deploy / Cancel), any other
// starter an empty one named by its label. Every answer carries `Collie-Wire: 1`; a request
// without it gets 400. Each write is kept in `writes` so a test can see what reached the agent.
//
// Start: the socket's folder is created 0700 (an existing folder with another mode is refused),
// a stale socket is removed, and the socket is made 0600 once listening. `stop()` closes it and
// removes the socket file.
//
// Also runnable by hand: `node web-tests/durable-agent.mjs SOCKET_PATH`.

import http from 'node:http';
import { chmod, lstat, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WIRE = { 'collie-wire': '1' };

/** A conversation to start from: `{id, title, state, items, questions, actions}`. */
export function conversation(id, fields = {}) {
  return { id, title: id, state: 'idle', updated: Date.now(), items: [], questions: [], actions: [], ...fields };
}

export class NodeAgent {
  /** Listens on `socket` with `state` (`{conversations, starters}`). */
  static async start(socket, state = {}) {
    const agent = new NodeAgent(socket, state);
    await agent.listen();
    return agent;
  }

  constructor(socket, state) {
    this.socket = socket;
    this.state = { conversations: [], starters: [], ...structuredClone(state) };
    this.version = 1;
    this.writes = [];
    this.reads = 0;
    this.next = 100;
    this.server = null;
  }

  /** Changes the state (and so the ETag). */
  change(fn) {
    fn(this.state);
    this.version += 1;
  }

  conv(id) {
    return this.state.conversations.find((c) => c.id === id);
  }

  async listen() {
    const dir = path.dirname(this.socket);
    try {
      const s = await stat(dir);
      if (!s.isDirectory() || (s.mode & 0o777) !== 0o700 || s.uid !== process.getuid()) {
        throw new Error(`${dir} must be this user's folder with mode 0700`);
      }
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chmod(dir, 0o700);
    }
    const old = await lstat(this.socket).catch(() => null);
    if (old?.isSocket()) await rm(this.socket);
    else if (old) throw new Error(`${this.socket} exists and is not a socket`);
    this.server = http.createServer((req, res) => this.serve(req, res));
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.socket, resolve);
    });
    await chmod(this.socket, 0o600);
  }

  async stop() {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
    await rm(this.socket, { force: true });
  }

  reply(res, status, body, headers = {}) {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { ...WIRE, ...headers, ...(text ? { 'content-type': 'application/json' } : {}) });
    res.end(text);
  }

  serve(req, res) {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size <= 1 << 20) chunks.push(c);
    });
    req.on('end', () => {
      if (req.headers['collie-wire'] !== '1') return this.reply(res, 400, { error: 'Collie-Wire: 1 missing' });
      if (size > 1 << 20) return this.reply(res, 413, { error: 'too large' });
      let body = {};
      try {
        if (chunks.length) body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return this.reply(res, 400, { error: 'bad JSON' });
      }
      let parts;
      try {
        parts = req.url.split('?')[0].split('/').map((p) => decodeURIComponent(p));
      } catch {
        return this.reply(res, 400, { error: 'bad path' });
      }
      if (req.method === 'GET' && req.url === '/v1/state') return this.read(req, res);
      if (req.method !== 'POST') return this.reply(res, 405, { error: 'method' });
      this.writes.push({ path: req.url, body, request: req.headers['collie-request'] });
      if (parts.length === 4 && parts[1] === 'v1' && parts[2] === 'starters') return this.starter(res, parts[3]);
      if (parts.length === 5 && parts[1] === 'v1' && parts[2] === 'conversations') return this.write(res, parts[3], parts[4], body);
      return this.reply(res, 404, { error: 'no such path' });
    });
  }

  read(req, res) {
    this.reads += 1;
    const etag = `"v${this.version}"`;
    if (req.headers['if-none-match'] === etag) return this.reply(res, 304, undefined, { etag });
    return this.reply(res, 200, this.state, { etag });
  }

  item(c, fields) {
    c.items.push({ id: `i${this.next++}`, role: 'agent', kind: 'text', at: Date.now(), ...fields });
    c.updated = Date.now();
  }

  starter(res, id) {
    const s = this.state.starters.find((x) => x.id === id);
    if (!s) return this.reply(res, 404, { error: 'no such starter' });
    const c = conversation(`c${this.next++}`, { title: id === 'deploy' ? 'Deploy' : s.label, actions: [{ id: 'retry', label: 'Retry' }] });
    this.change((st) => {
      st.conversations.push(c);
      if (id === 'deploy') {
        this.item(c, { text: 'Starting a deploy of main to production.' });
        c.questions.push({
          id: `q${this.next++}`, title: 'Deploy to production?', reason: 'Commit 4f2a9c1 passed CI.',
          items: [{ id: `i${this.next++}`, kind: 'code', role: 'agent', text: 'deploy --env production' }],
          options: [{ id: 'yes', label: 'Deploy' }, { id: 'no', label: 'Cancel' }], deploy: true,
        });
      }
    });
    return this.reply(res, 200, { conversation: c.id });
  }

  write(res, id, verb, body) {
    const c = this.conv(id);
    if (!c) return this.reply(res, 404, { error: 'no such conversation' });
    switch (verb) {
      case 'send': {
        if (c.state === 'closed') return this.reply(res, 409, { error: 'closed' });
        const text = String(body.text ?? '');
        this.change(() => {
          this.item(c, { role: 'user', text });
          this.item(c, { text: `Got ${Buffer.byteLength(text)} bytes.` });
          const ask = /^ask (.+)$/s.exec(text);
          if (ask) {
            c.questions.push({
              id: `q${this.next++}`, title: ask[1], reason: 'You asked me to ask.',
              options: [{ id: 'yes', label: 'Yes' }, { id: 'no', label: 'No' }],
            });
          }
        });
        break;
      }
      case 'answer': {
        const q = c.questions.find((x) => x.id === body.question);
        if (!q) return this.reply(res, 409, { error: 'no such open question' });
        const chosen = q.options.find((o) => o.id === body.option);
        if (!chosen) return this.reply(res, 400, { error: 'no such option' });
        this.change(() => {
          c.questions = c.questions.filter((x) => x !== q);
          this.item(c, { role: 'user', text: chosen.label });
          if (q.deploy && chosen.id === 'yes') c.state = 'working';
          this.item(c, { text: q.deploy ? (chosen.id === 'yes' ? 'Deploying\u2026' : 'Cancelled') : `You said: ${chosen.label}` });
        });
        break;
      }
      case 'abort':
        this.change(() => {
          c.state = 'idle';
          this.item(c, { text: 'Stopped' });
        });
        break;
      case 'action':
        if (!c.actions.some((a) => a.id === body.action)) return this.reply(res, 404, { error: 'no such action' });
        this.change(() => this.item(c, { text: body.action === 'retry' ? 'Retrying the last step.' : `Action ${body.action}.` }));
        break;
      case 'rename':
        this.change(() => {
          c.title = String(body.title ?? '');
          c.updated = Date.now();
        });
        break;
      case 'close':
        this.change(() => {
          c.state = 'closed';
          c.updated = Date.now();
        });
        break;
      case 'reopen':
        this.change(() => {
          c.state = 'idle';
          c.updated = Date.now();
        });
        break;
      default:
        return this.reply(res, 404, { error: 'no such verb' });
    }
    return this.reply(res, 200, {});
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const socket = process.argv[2];
  if (!socket) {
    console.error('usage: node durable-agent.mjs SOCKET_PATH');
    process.exit(2);
  }
  const agent = await NodeAgent.start(path.resolve(socket), {
    conversations: [conversation('c1', { title: 'Hello', items: [{ id: 'i1', kind: 'markdown', role: 'agent', text: '**Hello** from a Node agent.' }] })],
    starters: [{ id: 'hello', label: 'Say hello' }],
  });
  console.log(`listening on ${agent.socket}`);
  const stop = () => agent.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

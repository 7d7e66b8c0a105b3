// Harness of the browser tests: a real `collie bridge` in a temp dir of its own, a real tmux server on
// a private socket, and headless Debian chromium driven by playwright-core. Everything started here
// is stopped by `close()` (bridge: SIGTERM, SIGKILL after 10 s; tmux: kill-server before the temp dir
// is removed; browser: close), and every wait is bounded.
//
// The binary under test is `target/debug/collie` (scripts/test builds it with `cargo build
// --all-features` first), or `$COLLIE_BIN`.

import { spawn, execFile } from 'node:child_process';
import {
  mkdtemp, mkdir, rm, access, appendFile, chmod, readFile, readdir, readlink, writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const COLLIE_BIN = process.env.COLLIE_BIN || path.join(ROOT, 'target', 'debug', 'collie');
export const CHROMIUM = process.env.COLLIE_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** The tmux window (and so the pane's name in Collie) every test bridge starts with. */
export const WINDOW = 'work';

/**
 * A program of a test's own at `<dir>/home/bin/fake-agent` (for a starter to pin): prints what it
 * was started with as `STARTED:<args>:`, then waits.
 */
export async function fakeAgent(dir) {
  const bin = path.join(dir, 'home', 'bin');
  await mkdir(bin, { recursive: true });
  const file = path.join(bin, 'fake-agent');
  await writeFile(file, '#!/bin/sh\necho "STARTED:$*:"\nexec sleep 600\n');
  await chmod(file, 0o755);
  return file;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `p`, or what `late()` gives (or throws) when `p` has not settled within `ms`. The timer is
 * cleared as soon as `p` settles: a race against a bare `sleep` leaves its timer pending, and a
 * pending timer holds the test file's process open until it fires (each file then ended up to 20 s
 * after its last test).
 */
export function bounded(p, ms, late = () => undefined) {
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (e) {
        reject(e);
      }
    }, ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `f` (sync or async) every `every` ms until it returns a truthy value; throws after `timeout`. */
export async function waitFor(what, f, { timeout = 10_000, every = 50 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what} (last: ${String(last)})`);
    }
    await sleep(every);
  }
}

function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 15_000, ...opts }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr, error });
    });
  });
}

/** What the test pane runs: a plain interactive shell with a `$ ` prompt and no rc files. */
const SHELLS = {
  bash: "env PS1='$ ' HISTFILE=/dev/null bash --norc --noprofile -i",
  sh: "env PS1='$ ' ENV=/dev/null HISTFILE=/dev/null sh -i",
};

/**
 * A private tmux server with one session `main`, window `work` (100×30) running a plain `shell`
 * (`bash`, or `sh`).
 */
export class Tmux {
  constructor(dir, { shell = 'bash' } = {}) {
    if (!SHELLS[shell]) throw new Error(`unknown test shell ${shell}`);
    this.command = SHELLS[shell];
    this.socket = path.join(dir, 'tmux.sock');
    this.env = {
      PATH: process.env.PATH,
      HOME: path.join(dir, 'home'),
      TMUX_TMPDIR: path.join(dir, 'tmuxdefault'),
      TERM: 'xterm-256color',
      PS1: '$ ',
      HISTFILE: '/dev/null',
      LANG: 'C.UTF-8',
    };
  }

  async start() {
    const out = await this.run([
      'new-session', '-d', '-s', 'main', '-n', WINDOW, '-x', '100', '-y', '30', this.command,
    ]);
    if (out.code !== 0) throw new Error(`tmux new-session failed: ${out.stderr}`);
    // No automatic renaming: the window name is the pane's name in Collie.
    await this.run(['set-option', '-g', 'automatic-rename', 'off']);
    await this.run(['set-window-option', '-t', 'main:0', 'automatic-rename', 'off']);
    return this;
  }

  run(args) {
    return run('tmux', ['-S', this.socket, ...args], { env: this.env });
  }

  /** `capture-pane -p` of the (only) pane: what really reached tmux. */
  async capture(target = 'main:0') {
    const out = await this.run(['capture-pane', '-p', '-t', target]);
    return out.stdout;
  }

  /** Types into the pane with tmux itself (not through Collie). */
  async sendKeys(...keys) {
    const out = await this.run(['send-keys', '-t', 'main:0', ...keys]);
    if (out.code !== 0) throw new Error(`tmux send-keys failed: ${out.stderr}`);
  }

  async kill() {
    await this.run(['kill-server']);
  }
}

/**
 * A running `collie bridge` with its own state, config, home and tmux dirs. `env` is added to the
 * environment of the bridge and of every `collie` command run against it (e.g.
 * `{ COLLIE_CREW_PORT: '0' }` for a crew); `shell` is what its tmux pane runs.
 */
export class Bridge {
  /**
   * `setup(dir)` runs before the first launch (to put files the configuration names in place);
   * `config` is applied then (what follows `schema_version = 1`, or a function of the dir).
   */
  static async start({ name = 'testbox', tmux = true, env = {}, shell = 'bash', setup = null, config = null } = {}) {
    const dir = await mkdtemp(path.join(tmpdir(), 'collie-web-'));
    const b = new Bridge(dir, name, env);
    try {
      for (const d of ['state', 'config', 'tmuxdefault', 'home']) await mkdir(path.join(dir, d), { recursive: true });
      if (tmux) b.tmux = await new Tmux(dir, { shell }).start();
      if (setup) await setup(dir);
      if (config) await b.configure(typeof config === 'function' ? config(dir) : config);
      await b.launch(0);
    } catch (e) {
      await b.close();
      throw e;
    }
    return b;
  }

  constructor(dir, name, extraEnv = {}) {
    this.dir = dir;
    this.name = name;
    this.extraEnv = extraEnv;
    this.tmux = null;
    this.child = null;
    this.port = 0;
    this.stderr = '';
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  get env() {
    const d = this.dir;
    const env = {
      PATH: process.env.PATH,
      HOME: path.join(d, 'home'),
      COLLIE_STATE_DIR: path.join(d, 'state'),
      COLLIE_CONFIG_DIR: path.join(d, 'config'),
      TMUX_TMPDIR: path.join(d, 'tmuxdefault'),
      COLLIE_LOG: 'warn',
      // No call to the real release host from a test.
      COLLIE_UPDATE_CHECK: 'off',
      // A zellij on PATH sees only this test's sessions, never the user's.
      ZELLIJ_SOCKET_DIR: path.join(d, 'zellij'),
    };
    if (this.tmux) env.COLLIE_TMUX_SOCKETS = this.tmux.socket;
    return { ...env, ...this.extraEnv };
  }

  /** Starts (or restarts) the bridge process on the same state dir; `port` 0 picks a free one. */
  async launch(port = this.port) {
    const child = spawn(COLLIE_BIN, ['bridge', '--port', String(port), '--name', this.name], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stderr.on('data', (d) => {
      this.stderr = (this.stderr + d).slice(-20_000);
    });
    const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    child.exitedP = exited;
    const lines = createInterface({ input: child.stdout });
    const banner = await bounded(Promise.race([
      new Promise((resolve) => lines.once('line', resolve)),
      exited.then((e) => {
        throw new Error(`bridge exited before its banner (${JSON.stringify(e)}): ${this.stderr}`);
      }),
    ]), 15_000, () => {
      throw new Error(`no bridge banner within 15 s: ${this.stderr}`);
    });
    // Keep draining stdout so the bridge never blocks on a full pipe.
    lines.on('line', () => {});
    const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(banner);
    if (!m) throw new Error(`unexpected banner: ${banner}`);
    this.port = Number(m[1]);
    await waitFor('the bridge control socket', () =>
      access(path.join(this.dir, 'state', 'bridge.sock')).then(() => true, () => false), { timeout: 10_000 });
    await waitFor('GET /api/health', async () => (await fetch(`${this.url}/api/health`)).ok, { timeout: 10_000 });
  }

  /** Stops the bridge process (SIGTERM, SIGKILL after 10 s). */
  async stop() {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const done = await bounded(child.exitedP.then(() => true), 10_000, () => false);
    if (!done) {
      child.kill('SIGKILL');
      await bounded(child.exitedP, 5_000);
    }
  }

  /** Kills the bridge process at once (SIGKILL: no goodbye to a lead or a phone); waits for it to exit. */
  async kill() {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await bounded(child.exitedP, 5_000);
  }

  /** Runs `collie ARGS` against this bridge. */
  cli(args) {
    return run(COLLIE_BIN, args, { env: this.env });
  }

  async cliOk(args) {
    const out = await this.cli(args);
    if (out.code !== 0) throw new Error(`collie ${args.join(' ')} failed (${out.code}): ${out.stderr}`);
    return out.stdout;
  }

  /**
   * Writes `config.toml` (`schema_version = 1`, then `body`) and applies it with `collie apply
   * --yes`, as a person does before starting the bridge (SPEC §12).
   */
  async configure(body) {
    await writeFile(path.join(this.dir, 'config', 'config.toml'), `schema_version = 1\n${body}`);
    await this.cliOk(['apply', '--yes']);
  }

  /** This bridge's (a lead's) view of crew member `name` from `crew status --json`, or undefined. */
  async crewMember(name) {
    const status = JSON.parse(await this.cliOk(['crew', 'status', '--json']));
    return (status.members || []).find((m) => m.name === name);
  }

  /** A fresh pairing code from `collie pair --json`. */
  async code(tier = 'full') {
    const v = JSON.parse(await this.cliOk(['pair', '--json', '--tier', tier]));
    if (!v.code) throw new Error(`pair --json gave no code: ${JSON.stringify(v)}`);
    return v.code;
  }

  /** Pairs a device over the API (not through the app); returns its token. */
  async pairApi(label, tier = 'full') {
    const code = await this.code(tier);
    const r = await fetch(`${this.url}/api/pair`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code, label }),
    });
    const body = await r.json();
    if (r.status !== 200) throw new Error(`pairing failed: ${r.status} ${JSON.stringify(body)}`);
    return body.token;
  }

  async api(pathname, token, init = {}) {
    const r = await fetch(`${this.url}${pathname}`, {
      ...init,
      headers: { ...(init.headers || {}), authorization: `Bearer ${token}` },
    });
    const text = await r.text();
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: r.status, body, text };
  }

  /** The id of the tmux pane once the bridge mirrors it. */
  async tmuxPane(token) {
    return waitFor('the bridge to mirror the tmux pane', async () => {
      const { status, body } = await this.api('/api/panes', token);
      if (status !== 200) return null;
      const p = body.panes.find((p) => p.backend === 'tmux' && p.name === WINDOW);
      return p ? p.pane : null;
    }, { timeout: 10_000 });
  }

  async close() {
    try {
      await this.stop();
    } finally {
      try {
        if (this.tmux) await this.tmux.kill();
      } finally {
        await rm(this.dir, { recursive: true, force: true });
      }
    }
  }
}

/**
 * Launches Debian's chromium (never a downloaded one), with a fresh temp profile; `args` are added
 * to CHROMIUM_ARGS (a fake microphone, say).
 */
export async function launchBrowser({ args = [] } = {}) {
  await access(CHROMIUM).catch(() => {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (never \`npx playwright install\`)`);
  });
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...args], headless: true, timeout: 30_000 });
}

/**
 * Chromium's switches for a fake microphone that plays `wav` (over and over) and is allowed
 * without asking.
 */
export const fakeMicrophone = (wav) => [
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
  `--use-file-for-fake-audio-capture=${wav}`,
];

/**
 * The one headless chromium of a test file: launched before its first test and closed after its
 * last (node:test `before` / `after`, so a failing test still closes it). What it returns stands in
 * for the browser wherever `openPage`, `session` and `crewSession` take one. `launch` goes to
 * `launchBrowser` (or a function, run in `before`, that gives it).
 */
export function useBrowser(launch = {}) {
  let browser;
  before(async () => {
    browser = await launchBrowser(typeof launch === 'function' ? await launch() : launch);
  });
  after(async () => {
    await browser?.close();
  });
  return {
    newContext(opts) {
      if (!browser) throw new Error('useBrowser: the browser is used before its `before` hook ran');
      return browser.newContext(opts);
    },
  };
}

/**
 * A fresh context and page, with every console error, page error, failed request and CSP violation
 * recorded in `page.problems`; `locale` (say 'de') is the browser's language, else chromium's own. `ignoreHTTPSErrors` only for a bench behind its self-signed TLS proxy
 * (`bench/tls-proxy.mjs`).
 */
export async function openPage(browser, { width = 390, height = 844, colorScheme = 'light', scale = 1, ignoreHTTPSErrors = false, locale = 'en-US' } = {}) {
  const context = await browser.newContext({
    ignoreHTTPSErrors,
    locale,
    viewport: { width, height },
    deviceScaleFactor: scale,
    isMobile: true,
    hasTouch: true,
    colorScheme,
  });
  context.setDefaultTimeout(10_000);
  context.setDefaultNavigationTimeout(15_000);
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  const page = await context.newPage();
  page.problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.problems.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  return { context, page };
}

/** Reads localStorage as a plain object. */
export function storage(page) {
  return page.evaluate(() => Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)])));
}

/** The Screen's text, one string per line. */
export async function screenLines(page) {
  const text = await page.getByLabel('Screen', { exact: true }).innerText({ timeout: 5_000 });
  return text.split('\n').map((l) => l.replace(/\s+$/, ''));
}

/** Waits until some line of the Screen satisfies `pred`; returns the lines. */
export function waitScreen(page, what, pred, timeout = 10_000) {
  return waitFor(`the Screen to show ${what}`, async () => {
    const lines = await screenLines(page);
    return lines.some(pred) ? lines : null;
  }, { timeout });
}

/** Pairs the page through the QR link `<url>/#pair=CODE`, as a person would. */
export async function pairInApp(page, bridge, { label = 'phone', tier = 'full' } = {}) {
  const code = await bridge.code(tier);
  await page.goto(`${bridge.url}/#pair=${code}`);
  await page.getByLabel('Device name', { exact: true }).fill(label);
  await page.getByRole('button', { name: 'Pair', exact: true }).click();
  await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor({ timeout: 10_000 });
  return code;
}

/** From the pane list, opens the tmux pane by its link and waits for its Screen. */
export async function openPane(page, name = WINDOW) {
  await page.getByRole('link', { name, exact: true }).click({ timeout: 10_000 });
  await page.getByRole('heading', { name, exact: true }).waitFor({ timeout: 10_000 });
  await page.getByLabel('Screen', { exact: true }).waitFor({ timeout: 10_000 });
}

/** Everything a test holds, closed in reverse order, pass or fail. */
export class Scope {
  constructor() {
    this.items = [];
  }
  add(x, close) {
    this.items.push(close);
    return x;
  }
  async close() {
    const errors = [];
    for (const close of this.items.reverse()) {
      try {
        await bounded(close(), 20_000);
      } catch (e) {
        errors.push(e);
      }
    }
    this.items = [];
    if (errors.length) throw errors[0];
  }
}

/**
 * A bridge (with tmux) and a page, both closed by `scope`. `opts.bridge` goes to `Bridge.start`
 * (a configuration to apply first, say); the rest to the page.
 */
export async function setup(scope, browser, opts = {}) {
  const { bridge: bridgeOpts = {}, ...pageOpts } = opts;
  const bridge = scope.add(await Bridge.start(bridgeOpts), () => bridge.close());
  const { context, page } = await openPage(browser, pageOpts);
  scope.add(null, () => context.close());
  return { bridge, context, page };
}

/**
 * Runs `fn({bridge, context, page}, scope)` with a fresh bridge, tmux server and browser context,
 * all closed afterwards, pass or fail. On failure the error carries what the page showed, the
 * page's console errors and the bridge's stderr, and a screenshot is saved under
 * `$TMPDIR/collie-web-failures/`.
 */
export function session(browser, name, fn, pageOpts = {}) {
  return within(name, (scope) => setup(scope, browser, pageOpts), fn);
}

/** The crew name the member of `crewSetup` joins with. */
export const MEMBER = 'web-1';

/**
 * A crew of two real bridges, closed by `scope`: the lead (`testbox`, its tmux pane runs bash) and
 * a member that joined it as `MEMBER` (its own private tmux server, one pane `work` running
 * `sh`), both with an OS-chosen crew port; returns once the lead sees the member online. Plus a
 * page, not yet paired.
 */
export async function crewSetup(scope, browser, pageOpts = {}) {
  const env = { COLLIE_CREW_PORT: '0' };
  const lead = scope.add(await Bridge.start({ name: 'testbox', env }), () => lead.close());
  const member = scope.add(await Bridge.start({ name: 'memberbox', env, shell: 'sh' }), () => member.close());
  await lead.cliOk(['crew', 'init']);
  const { invite } = JSON.parse(await lead.cliOk(['crew', 'invite', '--json']));
  if (!invite) throw new Error('crew invite --json gave no invite');
  await member.cliOk(['crew', 'join', invite, '--name', MEMBER]);
  await waitFor(`the lead to see ${MEMBER} online`,
    async () => (await lead.crewMember(MEMBER))?.online === true, { timeout: 10_000, every: 200 });
  const { context, page } = await openPage(browser, pageOpts);
  scope.add(null, () => context.close());
  return { lead, member, context, page };
}

/** `session` with a crew: `fn({lead, member, context, page}, scope)`; see `crewSetup`. */
export function crewSession(browser, name, fn, pageOpts = {}) {
  return within(name, (scope) => crewSetup(scope, browser, pageOpts), fn);
}

/** Runs `fn(ctx, scope)` on what `start(scope)` set up, closing everything afterwards, pass or fail. */
async function within(name, start, fn) {
  const scope = new Scope();
  let ctx;
  try {
    ctx = await start(scope);
    await fn(ctx, scope);
  } catch (e) {
    await explain(e, name, ctx);
    throw e;
  } finally {
    await scope.close();
  }
}

/** Adds to a failure what the page showed, its console errors and every bridge's stderr. */
async function explain(e, name, ctx) {
  const notes = [];
  if (ctx?.page) {
    try {
      const dir = path.join(tmpdir(), 'collie-web-failures');
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.png`);
      await ctx.page.screenshot({ path: file, timeout: 5_000 });
      notes.push(`screenshot: ${file}`);
    } catch {}
    try {
      const body = await ctx.page.locator('body').innerText({ timeout: 2_000 });
      notes.push(`page ${ctx.page.url()}:\n${body.slice(0, 3_000)}`);
    } catch {}
    notes.push(`page problems:\n${ctx.page.problems.join('\n')}`);
  }
  for (const [role, b] of Object.entries(ctx || {})) {
    if (b instanceof Bridge) notes.push(`${role} stderr:\n${b.stderr.slice(-3_000)}`);
  }
  if (e && typeof e === 'object' && notes.length) {
    try {
      e.message += `\n--- ${notes.join('\n--- ')}`;
    } catch {}
  }
}

/** Lines of text as a human reads them: `hel""lo` echoed by the shell prints `hello` on a line of its own. */
export const isLine = (want) => (l) => l.trim() === want;

/** axe-core's script, read once (web-tests/node_modules, from the committed lock). */
let axeSource;

/**
 * Runs axe-core on what the page shows now and returns the serious and critical violations as
 * readable lines (empty: none). The script is evaluated through the browser's debugging protocol,
 * which the page's Content-Security-Policy does not govern, so the app's own CSP stays as shipped.
 */
export async function axeViolations(page) {
  axeSource ??= await readFile(path.join(ROOT, 'web-tests', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    // A button's colours fade for 0.15 s (style.css): a contrast measured mid-fade, right after a
    // theme switch or a tap, is neither colour's. Wait (at most 2 s) for every transition to end.
    await Promise.race([
      Promise.all(document.getAnimations().map((a) => a.finished.catch(() => {}))),
      new Promise((r) => setTimeout(r, 2000)),
    ]);
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
  });
  return found;
}

/**
 * What the app keeps on this phone: its IndexedDB database `collie-store` (`exists`) and every
 * record of its `panes` store (`records`: a pane's screen text and chat turns). A database the app
 * has not made is never opened: opening it would create it empty at version 1, and the app, opening
 * version 1 too, would then never make its store and keep nothing — a test would see "nothing kept"
 * of its own making.
 */
export function keptStore(page) {
  return page.evaluate(async () => {
    if (!(await indexedDB.databases()).some((d) => d.name === 'collie-store')) return { exists: false, records: [] };
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open('collie-store');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    try {
      if (!db.objectStoreNames.contains('panes')) return { exists: true, records: [] };
      const records = await new Promise((resolve, reject) => {
        const r = db.transaction('panes').objectStore('panes').getAll();
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      return { exists: true, records };
    } finally {
      db.close();
    }
  });
}

/** Whether a process of this user named `comm` runs with `cwd` as its working folder (from `/proc`). */
async function runningIn(comm, cwd) {
  for (const pid of (await readdir('/proc')).filter((e) => /^\d+$/.test(e))) {
    const [name, dir] = await Promise.all([
      readFile(`/proc/${pid}/comm`, 'utf8').catch(() => ''),
      readlink(`/proc/${pid}/cwd`).catch(() => ''),
    ]);
    if (name.trim() === comm && dir === cwd) return true;
  }
  return false;
}

/**
 * A stand-in for Claude Code in the bridge's tmux pane, for the chat view: a script named `claude`
 * (so `sh` runs under that name, waiting on the terminal) started from the pane's shell in a folder
 * `chat-work`, with a home of its own. `say(turn)` appends a line to its transcript the way Claude
 * Code writes one (`{type, message: {role, content}, timestamp}`), where the bridge reads it. The
 * real Claude Code's transcripts are read in the Rust tests (tests/agents.rs).
 */
export async function fakeClaude(bridge) {
  const base = path.join(bridge.dir, 'chat');
  const work = path.join(base, 'chat-work');
  const home = path.join(base, 'home');
  const bin = path.join(base, 'bin', 'claude');
  await mkdir(work, { recursive: true });
  await mkdir(path.dirname(bin), { recursive: true });
  await writeFile(bin, '#!/bin/sh\nwhile read -r line; do :; done\n');
  await chmod(bin, 0o755);
  const project = path.join(home, '.claude', 'projects', work.replace(/[^a-zA-Z0-9]/g, '-'));
  await mkdir(project, { recursive: true });
  await bridge.tmux.sendKeys(`cd ${work} && HOME=${home} ${bin}`, 'Enter');
  const file = path.join(project, 'session-1.jsonl');
  // The transcript must be written after the agent started (the bridge reads only what the agent
  // wrote since): wait for a process named `claude` working in `work`.
  await waitFor('the fake claude to run', () => runningIn('claude', work), { every: 20 });
  const say = (role, content) => appendFile(file, `${JSON.stringify({
    type: role, timestamp: new Date().toISOString(), message: { role, content },
  })}\n`);
  return { say, file };
}

/**
 * Waits until the tab bar's Cards tab says `said` (its description, decision 0082) and returns the
 * tab: its name stays `Cards`, the number waiting is its badge and description.
 */
export async function cardsTab(page, said = '1 card waiting', timeout = 15_000) {
  const tab = page.getByRole('link', { name: 'Cards', exact: true });
  await waitFor(`the Cards tab to say "${said}"`, async () => {
    const id = await tab.getAttribute('aria-describedby', { timeout: 1000 }).catch(() => null);
    return id && (await page.locator(`#${id}`).textContent()) === said;
  }, { timeout });
  return tab;
}

/** Opens `name` (Agents, Messages, Sent, Changes) from the tab bar's More sheet. */
export async function openMore(page, name) {
  await page.getByRole('button', { name: 'More', exact: true }).click();
  await page.locator('dialog[open]').getByRole('link', { name, exact: true }).click();
}

/** Claude Code's PermissionRequest for a Bash command, as a real one reads (the card tests' input). */
export const HOOK_REQUEST = {
  session_id: 'web', hook_event_name: 'PermissionRequest', tool_name: 'Bash',
  tool_input: { command: 'cargo test --workspace', description: 'Run the tests' },
};

/**
 * Starts the real `collie hook claude-permission` in a hosted pane `agent` with `request` on its
 * stdin; returns where its stdout and its exit code land (`done` appears when it returns).
 */
export async function startHook(bridge, request = HOOK_REQUEST) {
  const input = path.join(bridge.dir, 'request.json');
  const out = path.join(bridge.dir, 'hook.out');
  const done = path.join(bridge.dir, 'hook.done');
  await writeFile(input, JSON.stringify(request));
  const made = JSON.parse(await bridge.cliOk(['panes', 'new', '--json', '--name', 'agent', '--', 'sh', '-c',
    `${COLLIE_BIN} hook claude-permission < ${input} > ${out}; echo $? > ${done}; exec cat`]));
  if (!made.pane) throw new Error(`panes new gave no pane: ${JSON.stringify(made)}`);
  return { out, done };
}

// One small interface over the two browser engines the phone app is tested in, so a test body is
// written once and run in each (docs/decisions/0079-webkit-tests.md):
//
// - chromium: Debian's chromium through playwright-core (support.mjs's `launchBrowser` and
//   `openPage`: a phone-sized, touch, mobile context).
// - webkit: Debian's WebKitGTK (`webkit2gtk-driver`): WebKitWebDriver drives MiniBrowser over plain
//   W3C WebDriver, spoken here by a small client over `fetch`. MiniBrowser has no headless mode, so
//   the driver runs under `xvfb-run`, in a process group of its own that `close()` ends, pass or
//   fail. Skipped only when COLLIE_WEBKIT=0; otherwise a missing driver fails the test.
//
// The interface (every wait is bounded):
//
//   ENGINES                        ['chromium', 'webkit'] (without 'webkit' when COLLIE_WEBKIT=0)
//   openTab(engine, { width = 390, height = 844, locale } = {}) → Tab   a fresh browser of its own
//   Tab.engine                     'chromium' | 'webkit'
//   Tab.goto(url)                  navigates; resolves once the page has loaded
//   Tab.evaluate(fn, ...args)      runs `fn(...args)` in the page (fn is serialized: it sees only
//                                  its arguments, which are JSON); resolves to its JSON result,
//                                  awaiting a returned promise
//   Tab.click(selector, { timeout = 10000 } = {})  a real click on the first element matching
//                                  the CSS selector (waits for it to be there and clickable)
//   Tab.fill(selector, text)       empties the field and enters `text` as typing does (input
//                                  events; WebKit really types it key by key)
//   Tab.press(selector, key)       presses `key` in the element: 'Enter', 'Tab', 'Escape',
//                                  'Backspace', 'ArrowUp'/'Down'/'Left'/'Right', or one character
//   Tab.waitFor(fn, args = [], { timeout = 10000 } = {})  polls `evaluate(fn, ...args)` until it is
//                                  truthy and returns that value; else throws naming `fn`
//   Tab.screenshot(file)           a PNG of the viewport
//   Tab.setSize(width, height)     the viewport's CSS size (WebKit: the window is sized so that
//                                  the page's innerWidth × innerHeight is exactly that; checked)
//   Tab.close()                    ends the browser (and, for WebKit, the driver and its X server)
//
//   pairTab(tab, bridge, { label = 'phone', tier = 'full' })  pairs through the QR link, as
//                                  support.mjs's `pairInApp`; lands on the pane list; → the code
//   engineSession(engine, name, fn, opts)  a bridge (with tmux) and a tab paired with it (unless
//                                  `opts.pair === false`), `fn({ bridge, tab }, scope)`, everything
//                                  closed afterwards, pass or fail; a failure carries the page's
//                                  text, a screenshot's path and the bridge's stderr.
//                                  `opts.bridge` goes to `Bridge.start`, `opts.label` to pairTab,
//                                  the rest to `openTab`.
//   byText(tab, selector, text)    a selector for the element matching `selector` whose text is
//                                  exactly `text` (marks it with a data attribute)
//   clickText(tab, selector, text) clicks that element, found again if the view redraws it
//   heading(tab)                   the text of the page's first h1
//
// Differences a test may meet: navigator.language is what `locale` says in chromium ('de') and its
// regional form in WebKit ('de-DE'); the WebKit window is a desktop one (no touch, no `isMobile`).

import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Bridge, Scope, bounded, launchBrowser, openPage, sleep,
} from './support.mjs';

export const ENGINES = process.env.COLLIE_WEBKIT === '0' ? ['chromium'] : ['chromium', 'webkit'];

export const WEBKIT_DRIVER = process.env.COLLIE_WEBKIT_DRIVER || '/usr/bin/WebKitWebDriver';
const XVFB_RUN = '/usr/bin/xvfb-run';

/** Opens a fresh browser of `engine` with one tab of `width` × `height` CSS pixels. */
export async function openTab(engine, opts = {}) {
  if (engine === 'chromium') return ChromiumTab.open(opts);
  if (engine === 'webkit') return WebKitTab.open(opts);
  throw new Error(`unknown engine ${engine} (one of ${ENGINES.join(', ')})`);
}

/** The source of `fn`, shortened, for an error message. */
function describe(fn, args) {
  const src = String(fn).replace(/\s+/g, ' ');
  const short = src.length > 160 ? `${src.slice(0, 157)}…` : src;
  return args.length ? `${short} with ${JSON.stringify(args).slice(0, 120)}` : short;
}

/** What both engines share: `waitFor` on top of `evaluate`. */
class Tab {
  async waitFor(fn, args = [], { timeout = 10_000, every = 100 } = {}) {
    const deadline = Date.now() + timeout;
    let last;
    for (;;) {
      try {
        const v = await this.evaluate(fn, ...args);
        if (v) return v;
        last = v;
      } catch (e) {
        last = e;
      }
      if (Date.now() >= deadline) {
        throw new Error(`${this.engine}: timed out after ${timeout} ms waiting for ${describe(fn, args)}`
          + ` (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
      }
      await sleep(every);
    }
  }
}

class ChromiumTab extends Tab {
  static async open({ width = 390, height = 844, locale } = {}) {
    const browser = await launchBrowser();
    try {
      const { page } = await openPage(browser, { width, height, locale });
      return new ChromiumTab(browser, page);
    } catch (e) {
      await browser.close();
      throw e;
    }
  }

  constructor(browser, page) {
    super();
    this.engine = 'chromium';
    this.browser = browser;
    /** playwright-core's page, for what only chromium does (its problems: `page.problems`). */
    this.page = page;
  }

  async goto(url) {
    await this.page.goto(url);
  }

  evaluate(fn, ...args) {
    // An expression, not a function with an argument: every argument reaches `fn` as JSON, as in
    // WebKit, and the page's CSP (no eval) does not apply to what the debugging protocol runs.
    return this.page.evaluate(`(${fn})(...${JSON.stringify(args)})`);
  }

  click(selector, { timeout = 10_000 } = {}) {
    return this.page.click(selector, { timeout });
  }

  fill(selector, text) {
    return this.page.fill(selector, text, { timeout: 10_000 });
  }

  press(selector, key) {
    return this.page.press(selector, key, { timeout: 10_000 });
  }

  async screenshot(file) {
    await this.page.screenshot({ path: file, timeout: 10_000 });
  }

  setSize(width, height) {
    return this.page.setViewportSize({ width, height });
  }

  async close() {
    await bounded(this.browser.close(), 15_000);
  }
}

/** A free TCP port on 127.0.0.1 (asked of the OS, then released for the driver to take). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** WebDriver's key codes for `press`. */
const KEYS = {
  Enter: '\uE007',
  Tab: '\uE004',
  Escape: '\uE00C',
  Backspace: '\uE003',
  ArrowLeft: '\uE012',
  ArrowUp: '\uE013',
  ArrowRight: '\uE014',
  ArrowDown: '\uE015',
};

/** WebDriver's key for an element reference in a response (the W3C web element identifier). */
const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

/**
 * MiniBrowser's own toolbar sets the narrowest its window can be (447 px): this GTK style of the
 * driver's private config folder shrinks the toolbar so that a 320-pixel phone fits. Only the
 * browser's own widgets are styled; the page is not.
 */
const GTK_CSS = `headerbar, toolbar, headerbar *, toolbar *, entry, button, label {
  font-size: 1px; min-width: 0; min-height: 0; padding: 0; margin: 0; border-width: 0;
}
`;

/**
 * The C library's name of `locale` ('de' → de_DE, 'pt-BR' → pt_BR): WebKitGTK takes the page's
 * language from the process's locale, which must exist.
 */
async function cLocale(locale) {
  const [lang, region] = locale.split(/[-_]/);
  if (region) return `${lang.toLowerCase()}_${region.toUpperCase()}`;
  const same = `${lang.toLowerCase()}_${lang.toUpperCase()}`;
  const known = await readdir('/usr/share/i18n/locales').catch(() => []);
  if (known.includes(same)) return same;
  return known.find((f) => f.startsWith(`${lang.toLowerCase()}_`)) || same;
}

/** Runs `cmd` to its end (bounded); resolves to its exit code and output. */
function runToEnd(cmd, args, env, ms = 60_000) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('error', (e) => { clearTimeout(timer); resolve({ code: -1, out: String(e) }); });
    child.once('exit', (code) => { clearTimeout(timer); resolve({ code, out }); });
  });
}

/**
 * The driver groups and folders of the WebKit tabs still open. A test that timed out may leave its
 * tab unclosed when the test process ends: then they are killed and removed on the way out (the
 * group is detached, so nothing else would end it).
 */
const live = new Map();
function endAll() {
  for (const [pid, dir] of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  }
  live.clear();
}
process.once('exit', endAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    endAll();
    process.kill(process.pid, sig);
  });
}

class WebKitTab extends Tab {
  static async open({ width = 390, height = 844, locale } = {}) {
    for (const [file, pkg] of [[WEBKIT_DRIVER, 'webkit2gtk-driver'], [XVFB_RUN, 'xvfb']]) {
      await access(file).catch(() => {
        throw new Error(`${file} is missing: apt-get install -y ${pkg} (scripts/setup does it as root),`
          + ' or COLLIE_WEBKIT=0 to run the browser tests without WebKit');
      });
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'collie-webkit-'));
    const tab = new WebKitTab(dir);
    try {
      await tab.start(locale);
      await tab.setSize(width, height);
    } catch (e) {
      await tab.close().catch(() => {});
      throw e;
    }
    return tab;
  }

  constructor(dir) {
    super();
    this.engine = 'webkit';
    this.dir = dir;
    this.child = null;
    this.exited = null;
    this.base = '';
    this.session = '';
    this.stderr = '';
    /** What MiniBrowser's window adds around the page: [width, height] in CSS pixels. */
    this.chrome = null;
  }

  /** Starts the driver under its own X server (its own process group) and a session in it. */
  async start(locale) {
    const d = (p) => path.join(this.dir, p);
    for (const p of ['home', 'config/gtk-3.0', 'data', 'cache', 'runtime', 'tmp', 'locales']) await mkdir(d(p), { recursive: true, mode: 0o700 });
    await writeFile(d('config/gtk-3.0/gtk.css'), GTK_CSS);
    const env = {
      PATH: process.env.PATH,
      HOME: d('home'),
      XDG_CONFIG_HOME: d('config'),
      XDG_DATA_HOME: d('data'),
      XDG_CACHE_HOME: d('cache'),
      XDG_RUNTIME_DIR: d('runtime'),
      // xvfb-run's own temp folder (its X authority) lands here, so it goes with the tab even when
      // the group is killed before xvfb-run tidies up.
      TMPDIR: d('tmp'),
      // No accessibility bus, no dconf writes: quiet and alike on every machine.
      NO_AT_BRIDGE: '1',
      GSETTINGS_BACKEND: 'memory',
      // No LANG: WebKitGTK names the C locale "en-US", as chromium does; C.UTF-8 would be "C".
    };
    if (locale) {
      const name = await cLocale(locale);
      // A locale the C library lacks is compiled into the tab's own folder (LOCPATH).
      const made = await runToEnd('localedef', ['-c', '-i', name, '-f', 'UTF-8', d(`locales/${name}.UTF-8`)], env);
      if (made.code !== 0 && made.code !== 1) {
        throw new Error(`webkit: cannot make the locale ${name}.UTF-8 for ${locale} (localedef ${made.code}): ${made.out.slice(-500)}`);
      }
      Object.assign(env, {
        LOCPATH: d('locales'), LANG: `${name}.UTF-8`, LC_ALL: `${name}.UTF-8`, LANGUAGE: name,
      });
    }
    let lastError;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const port = await freePort();
      try {
        await this.launch(port, env);
        lastError = null;
        break;
      } catch (e) {
        lastError = e;
        await this.stop();
      }
    }
    if (lastError) throw lastError;
    const made = await this.wd('POST', '/session', {
      capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { args: ['--automation'] } } },
    }, 60_000);
    this.session = made.sessionId;
    await this.wd('POST', `/session/${this.session}/timeouts`, { script: 30_000, pageLoad: 30_000, implicit: 0 });
    if (locale) {
      const lang = await this.evaluate(() => navigator.language);
      if (!lang.toLowerCase().startsWith(locale.split(/[-_]/)[0].toLowerCase())) {
        throw new Error(`webkit: navigator.language is ${lang}, not ${locale}`);
      }
    }
  }

  async launch(port, env) {
    this.stderr = '';
    const child = spawn(XVFB_RUN, ['-a', '-s', '-screen 0 1600x1600x24', WEBKIT_DRIVER, `--port=${port}`], {
      env, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    live.set(child.pid, this.dir);
    this.exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    child.once('error', (e) => { this.stderr += String(e); });
    child.stdout.on('data', () => {});
    child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-10_000); });
    this.base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`webkit: the driver exited before it answered: ${this.stderr.slice(-1500)}`);
      }
      try {
        const r = await fetch(`${this.base}/status`, { signal: AbortSignal.timeout(2_000) });
        const body = await r.json();
        if (body?.value?.ready) return;
      } catch {
        // not listening yet
      }
      if (Date.now() >= deadline) throw new Error(`webkit: the driver did not answer within 20 s: ${this.stderr.slice(-1500)}`);
      await sleep(100);
    }
  }

  /** One WebDriver command; resolves to its `value`, or throws its error. */
  async wd(method, pathname, body, ms = 30_000) {
    let r;
    try {
      r = await fetch(`${this.base}${pathname}`, {
        method,
        headers: body ? { 'content-type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(ms),
      });
    } catch (e) {
      throw new Error(`webkit: ${method} ${pathname} failed: ${e.message}${this.stderr ? `; driver: ${this.stderr.slice(-800)}` : ''}`);
    }
    const text = await r.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`webkit: ${method} ${pathname} gave ${r.status}: ${text.slice(0, 300)}`);
    }
    if (!r.ok || json?.value?.error) {
      const err = new Error(`webkit: ${method} ${pathname}: ${json?.value?.error}: ${json?.value?.message}`);
      err.wd = json?.value?.error;
      throw err;
    }
    return json.value;
  }

  s(p) {
    return `/session/${this.session}${p}`;
  }

  async goto(url) {
    await this.wd('POST', this.s('/url'), { url }, 40_000);
  }

  async evaluate(fn, ...args) {
    const script = `const done = arguments[arguments.length - 1];
Promise.resolve().then(() => (${fn})(...${JSON.stringify(args)})).then(
  (v) => done(JSON.stringify({ ok: v })),
  (e) => done(JSON.stringify({ error: String(e) + (e && e.stack ? \`\\n\${e.stack}\` : '') })));`;
    const out = JSON.parse(await this.wd('POST', this.s('/execute/async'), { script, args: [] }, 40_000));
    if ('error' in out) throw new Error(`webkit: evaluate ${describe(fn, args)} threw: ${out.error}`);
    return out.ok;
  }

  /** Runs `act(elementId)` on `selector`'s first element, retrying while it is missing or not yet clickable. */
  async withElement(selector, what, act, timeout = 10_000) {
    const deadline = Date.now() + timeout;
    for (;;) {
      try {
        const el = await this.wd('POST', this.s('/element'), { using: 'css selector', value: selector });
        return await act(el[ELEMENT] ?? Object.values(el)[0]);
      } catch (e) {
        const again = ['no such element', 'element not interactable', 'element click intercepted',
          'stale element reference'].includes(e.wd);
        if (!again || Date.now() >= deadline) {
          throw new Error(`webkit: ${what} ${selector}: ${e.message}`);
        }
      }
      await sleep(100);
    }
  }

  click(selector, { timeout = 10_000 } = {}) {
    return this.withElement(selector, 'click', (id) => this.wd('POST', this.s(`/element/${id}/click`), {}), timeout);
  }

  fill(selector, text) {
    return this.withElement(selector, 'fill', async (id) => {
      await this.wd('POST', this.s(`/element/${id}/clear`), {});
      if (text) await this.wd('POST', this.s(`/element/${id}/value`), { text });
    });
  }

  press(selector, key) {
    const text = KEYS[key] ?? (key.length === 1 ? key : null);
    if (text === null) throw new Error(`webkit: press: unknown key ${key} (one of ${Object.keys(KEYS).join(', ')} or one character)`);
    return this.withElement(selector, 'press', (id) => this.wd('POST', this.s(`/element/${id}/value`), { text }));
  }

  async screenshot(file) {
    const b64 = await this.wd('GET', this.s('/screenshot'));
    await writeFile(file, Buffer.from(b64, 'base64'));
  }

  async setSize(width, height) {
    // The window holds the page and MiniBrowser's toolbar above it: size the window, measure what
    // the page got, and add what the toolbar takes (kept for the next call).
    const measure = () => this.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(
      () => r([window.innerWidth, window.innerHeight, window.outerWidth, window.outerHeight])))));
    let rect = { width: width + (this.chrome?.[0] ?? 0), height: height + (this.chrome?.[1] ?? 0) };
    let got;
    for (let i = 0; i < 4; i += 1) {
      await this.wd('POST', this.s('/window/rect'), rect);
      got = await measure();
      if (got[0] !== width || got[1] !== height) {
        await sleep(200); // a resize the page has not seen yet
        got = await measure();
      }
      this.chrome = [got[2] - got[0], got[3] - got[1]];
      if (got[0] === width && got[1] === height) return;
      rect = { width: width + this.chrome[0], height: height + this.chrome[1] };
    }
    throw new Error(`webkit: the viewport cannot be ${width}×${height}: the page has ${got[0]}×${got[1]}`);
  }

  /** Ends the session, then the driver's whole process group (SIGTERM, SIGKILL after 5 s). */
  async stop() {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (this.session) {
      const id = this.session;
      this.session = '';
      await this.wd('DELETE', `/session/${id}`, undefined, 5_000).catch(() => {});
    }
    const signal = (sig) => {
      try {
        process.kill(-child.pid, sig);
        return true;
      } catch {
        return false; // the group is gone
      }
    };
    signal('SIGTERM');
    const deadline = Date.now() + 5_000;
    // The whole group, not only xvfb-run: MiniBrowser and its web processes too.
    while (Date.now() < deadline && signal(0)) await sleep(50);
    if (signal('SIGKILL')) await bounded(this.exited, 5_000);
    await bounded(this.exited, 5_000);
    live.delete(child.pid);
  }

  async close() {
    try {
      await this.stop();
    } finally {
      await rm(this.dir, { recursive: true, force: true });
    }
  }
}

/** A selector for the element matching `selector` whose text is exactly `text` (it is marked). */
export async function byText(tab, selector, text, { timeout = 10_000 } = {}) {
  const mark = await tab.waitFor((sel, want) => {
    const el = [...document.querySelectorAll(sel)].find((e) => e.textContent.trim() === want);
    if (!el) return null;
    if (!el.dataset.testMark) el.dataset.testMark = String(Math.random()).slice(2);
    return el.dataset.testMark;
  }, [selector, text], { timeout });
  return `[data-test-mark="${mark}"]`;
}

/**
 * Clicks the element matching `selector` whose text is exactly `text`. A view that draws itself
 * anew (a list refreshing) replaces the element: it is then found and clicked again (10 s).
 */
export async function clickText(tab, selector, text, { timeout = 10_000 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const left = Math.max(deadline - Date.now(), 1);
    const sel = await byText(tab, selector, text, { timeout: left });
    try {
      await tab.click(sel, { timeout: Math.min(2_000, left) });
      return;
    } catch (e) {
      if (Date.now() >= deadline) throw e;
    }
  }
}

/** The text of the page's first h1 (a screen's heading). */
export const heading = (tab) => tab.evaluate(() => document.querySelector('h1')?.textContent ?? null);

/**
 * Pairs `tab` through the QR link `<url>/#pair=CODE`, as a person does and as support.mjs's
 * `pairInApp` does; waits for the pane list. Resolves to the code.
 */
export async function pairTab(tab, bridge, { label = 'phone', tier = 'full' } = {}) {
  const code = await bridge.code(tier);
  await tab.goto(`${bridge.url}/#pair=${code}`);
  await tab.fill('#pair-label', label);
  await tab.click('form button[type=submit]');
  // The pane list, in whatever language the page speaks: its tab is the one shown.
  await tab.waitFor(() => !!document.querySelector('nav.tabbar a[href="#/"][aria-current="page"]'), [], { timeout: 10_000 });
  return code;
}

/**
 * A fresh bridge (with its tmux server) and a tab of `engine` paired with it (unless `opts.pair`
 * is false); runs `fn({ bridge, tab }, scope)` and closes everything, pass or fail. On failure the
 * error carries the engine, what the page showed, a screenshot's path (under
 * `$TMPDIR/collie-web-failures/`) and the bridge's stderr.
 */
export async function engineSession(engine, name, fn, opts = {}) {
  const { bridge: bridgeOpts = {}, pair = true, label = 'phone', ...tabOpts } = opts;
  const scope = new Scope();
  const ctx = {};
  try {
    ctx.bridge = scope.add(await Bridge.start(bridgeOpts), () => ctx.bridge.close());
    ctx.tab = scope.add(await openTab(engine, tabOpts), () => ctx.tab.close());
    if (pair) await pairTab(ctx.tab, ctx.bridge, { label });
    await fn(ctx, scope);
  } catch (e) {
    await explain(e, `${engine}-${name}`, ctx);
    throw e;
  } finally {
    await scope.close();
  }
}

async function explain(e, name, { tab, bridge }) {
  const notes = [];
  if (tab) {
    try {
      const dir = path.join(tmpdir(), 'collie-web-failures');
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.png`);
      await bounded(tab.screenshot(file), 10_000);
      notes.push(`screenshot: ${file}`);
    } catch {}
    try {
      const shown = await bounded(tab.evaluate(() => `${location.href}\n${document.body.innerText}`), 10_000);
      if (shown) notes.push(`page ${shown.slice(0, 3_000)}`);
    } catch {}
    if (tab.page?.problems) notes.push(`page problems:\n${tab.page.problems.join('\n')}`);
  }
  if (bridge) notes.push(`bridge stderr:\n${bridge.stderr.slice(-3_000)}`);
  if (e && typeof e === 'object' && notes.length) {
    try {
      e.message += `\n--- ${notes.join('\n--- ')}`;
    } catch {}
  }
}

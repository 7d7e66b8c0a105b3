// Figures of the phone app (issue 3, docs/PERFORMANCE.md), measured in headless Debian chromium
// against a real `collie bridge` and a real private tmux pane on loopback. Run on demand (not part of
// `node --test`):
//
//   cargo build --release && node web-tests/bench/phone.mjs
//
// It measures, and prints as text and JSON:
// 1. keystroke → echo: 200 sequential keystrokes, each one character POSTed from the page to the
//    input API (the app's own input path, `fetch` with the stored token), timed from just before the
//    request until a MutationObserver sees the character echoed at the prompt line of the app's Screen;
// 2. the app shell's size: every same-origin file the app loads or its service worker caches (plus the
//    worker itself), each compressed with `gzip -9`, summed;
// 3. time to interactive of ~10 cold loads (a fresh browser context each: no HTTP cache, no service
//    worker): navigation start → the pairing form is usable (the `Pairing code` field and the `Pair`
//    button are in the page, visible and enabled, and the app's module scripts have run); and the
//    bytes such a load moved over the wire (Resource Timing's `transferSize`, headers included).
//
// Environment: COLLIE_BIN (default target/release/collie), BENCH_KEYS (200), BENCH_LOADS (10),
// BENCH_GAP_MS (0: each keystroke right after the previous echo; else an idle gap before each one),
// BENCH_RTT_MS and BENCH_KBPS (0: the cold loads run at loopback speed; else chromium's network
// emulation adds that latency to every request and caps the download at that many kilobits per
// second — `BENCH_RTT_MS=150 BENCH_KBPS=1600` is its "Slow 4G", a phone on a poor network),
// BENCH_TLS (unset: the cold loads ask the bridge itself over plain HTTP/1.1; 1: through a TLS
// reverse proxy speaking HTTP/2, as a phone reaches the bridge — `tls-proxy.mjs`).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.COLLIE_BIN ||= path.join(root, 'target', 'release', 'collie');
if (!existsSync(process.env.COLLIE_BIN)) {
  console.error(`${process.env.COLLIE_BIN} is missing: run \`cargo build --release\` first`);
  process.exit(1);
}
const { startTlsProxy } = await import('./tls-proxy.mjs');
const { Bridge, launchBrowser, openPage, pairInApp, openPane, waitFor, waitScreen, CHROMIUM } = await import('../support.mjs');

const KEYS = Number(process.env.BENCH_KEYS || 200);
const LOADS = Number(process.env.BENCH_LOADS || 10);
const GAP = Number(process.env.BENCH_GAP_MS || 0);
const RTT = Number(process.env.BENCH_RTT_MS || 0);
const KBPS = Number(process.env.BENCH_KBPS || 0);
const TLS = Boolean(process.env.BENCH_TLS);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const ms = (x) => `${x.toFixed(1)} ms`;

/** In the page: `n` sequential keystrokes, each timed from the POST to its echo on the Screen. */
async function keystrokes(page, n, gap = 0) {
  return page.evaluate(async ([n, gap]) => {
    const token = localStorage.getItem('collie.token');
    const panes = await (await fetch('/api/panes', { headers: { authorization: `Bearer ${token}` } })).json();
    const pane = panes.panes.find((p) => p.backend === 'tmux').pane;
    const input = (body) => fetch(`/api/panes/local/${encodeURIComponent(pane)}/input`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => {
      if (!r.ok) throw new Error(`input: ${r.status}`);
    });
    const lines = () => {
      const screen = document.querySelector('[aria-label="Screen"]');
      return screen ? screen.innerText.split('\n').map((l) => l.trimEnd()) : [];
    };
    // Resolves with the time the Screen first holds a line equal to `want` (checked on every mutation).
    const seen = (want, timeout = 5000) => new Promise((resolve, reject) => {
      const check = () => {
        if (lines().includes(want)) {
          mo.disconnect();
          clearTimeout(timer);
          resolve(performance.now());
        }
      };
      const mo = new MutationObserver(check);
      mo.observe(document.body, { subtree: true, childList: true, characterData: true });
      const timer = setTimeout(() => {
        mo.disconnect();
        reject(new Error(`no ${JSON.stringify(want)} on the Screen within ${timeout} ms`));
      }, timeout);
      check();
    });
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const out = [];
    const batch = 40; // characters per prompt line, then Ctrl+U clears it (the pane is 100 columns)
    for (let b = 0; out.length < n; b++) {
      await Promise.all([seen('$'), input({ keys: ['C-u'] })]);
      let typed = '';
      for (let i = 0; i < batch && out.length < n; i++) {
        if (gap) await new Promise((r) => setTimeout(r, gap));
        const ch = alphabet[(i + b) % alphabet.length];
        typed += ch;
        const t0 = performance.now();
        const [t1] = await Promise.all([seen(`$ ${typed}`), input({ text: ch })]);
        out.push(t1 - t0);
      }
    }
    return out;
  }, [n, gap]);
}

/** In a fresh context: navigation start → pairing form usable, in ms. */
async function coldLoad(browser, url) {
  const { context, page } = await openPage(browser, { ignoreHTTPSErrors: TLS });
  try {
    if (RTT || KBPS) {
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: RTT,
        downloadThroughput: KBPS ? (KBPS * 1000) / 8 : -1,
        uploadThroughput: -1,
      });
    }
    await context.addInitScript(() => {
      const labelOf = (el) => {
        if (el.getAttribute('aria-label')) return el.getAttribute('aria-label').trim();
        const by = el.getAttribute('aria-labelledby');
        if (by) return by.split(/\s+/).map((id) => document.getElementById(id)?.textContent || '').join(' ').trim();
        return [...(el.labels || [])].map((l) => l.textContent).join(' ').trim();
      };
      const usable = (el) => el && !el.disabled && el.getClientRects().length > 0;
      window.__collieFormUsable = new Promise((resolve) => {
        const check = () => {
          const field = [...document.querySelectorAll('input')].find((i) => labelOf(i) === 'Pairing code');
          const button = [...document.querySelectorAll('button')].find((b) => (b.getAttribute('aria-label') || b.textContent).trim() === 'Pair');
          if (usable(field) && usable(button)) {
            mo.disconnect();
            resolve(performance.now());
          }
        };
        const mo = new MutationObserver(check);
        mo.observe(document, { subtree: true, childList: true, attributes: true });
      });
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.getByLabel('Pairing code', { exact: true }).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Pair', exact: true }).waitFor({ timeout: 10_000 });
    return await page.evaluate(async () => {
      const form = await Promise.race([window.__collieFormUsable, new Promise((r) => setTimeout(() => r(NaN), 5000))]);
      const nav = performance.getEntriesByType('navigation')[0];
      // What crossed the wire (headers included), as the phone downloaded it: gzip where sent so.
      const entries = [nav, ...performance.getEntriesByType('resource')];
      const transfer = entries.reduce((a, e) => a + (e.transferSize || 0), 0);
      const decoded = entries.reduce((a, e) => a + (e.decodedBodySize || 0), 0);
      return {
        form, dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, tti: Math.max(form, nav.domContentLoadedEventEnd),
        transfer, decoded, files: entries.length, protocol: nav.nextHopProtocol,
      };
    });
  } finally {
    await context.close();
  }
}

const machine = {
  date: new Date().toISOString(),
  nproc: os.availableParallelism(),
  cpu: os.cpus()[0]?.model,
  memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
  kernel: os.release(),
  node: process.version,
  chromium: execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim(),
  collie: process.env.COLLIE_BIN,
  commit: (() => {
    try {
      return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    } catch {
      return null;
    }
  })(),
};

const bridge = await Bridge.start();
let browser;
try {
  browser = await launchBrowser();

  // 1. Keystroke → echo.
  const { context, page } = await openPage(browser);
  await pairInApp(page, bridge, { label: 'bench' });
  await openPane(page);
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
  await waitFor('status Live', async () => (await page.getByRole('status').innerText()).includes('Live'));
  await keystrokes(page, 20); // warm-up, not counted
  const lat = await keystrokes(page, KEYS, GAP);

  // 2. Shell size: what the app loaded (same origin, not /api/) and what its worker caches.
  await page.goto(`${bridge.url}/`);
  await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
  const shellUrls = await page.evaluate(async () => {
    const urls = new Set([location.origin + '/']);
    for (const e of performance.getEntriesByType('resource')) urls.add(e.name);
    const reg = await Promise.race([navigator.serviceWorker.ready, new Promise((r) => setTimeout(() => r(null), 5000))]);
    if (reg?.active) urls.add(reg.active.scriptURL);
    for (const name of await caches.keys()) {
      for (const req of await (await caches.open(name)).keys()) urls.add(req.url);
    }
    const manifest = document.querySelector('link[rel="manifest"]');
    if (manifest) urls.add(manifest.href);
    return [...urls].filter((u) => new URL(u).origin === location.origin && !new URL(u).pathname.startsWith('/api/'));
  });
  const shell = [];
  for (const u of [...new Set(shellUrls.map((u) => new URL(u).pathname))].sort()) {
    const body = Buffer.from(await (await fetch(`${bridge.url}${u}`)).arrayBuffer());
    const gz = execFileSync('gzip', ['-9', '-c'], { input: body });
    shell.push({ path: u, bytes: body.length, gzip9: gz.length });
  }
  await context.close();

  // 3. Cold loads.
  const loads = [];
  const proxy = TLS ? await startTlsProxy(bridge.url) : null;
  try {
    const url = `${proxy?.url ?? bridge.url}/`;
    await coldLoad(browser, url); // warm the bridge and the browser process, not counted
    for (let i = 0; i < LOADS; i++) loads.push(await coldLoad(browser, url));
  } finally {
    await proxy?.close();
  }

  const total = shell.reduce((a, f) => a + f.gzip9, 0);
  const raw = shell.reduce((a, f) => a + f.bytes, 0);
  const result = {
    machine,
    keystroke: {
      gapMs: GAP, n: lat.length, p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99),
      min: Math.min(...lat), max: Math.max(...lat), mean: lat.reduce((a, b) => a + b, 0) / lat.length,
    },
    shell: { files: shell, bytes: raw, gzip9: total },
    coldLoad: {
      n: loads.length,
      network: { rttMs: RTT, kbps: KBPS, protocol: loads[0]?.protocol },
      tti: { median: pct(loads.map((l) => l.tti), 50), min: Math.min(...loads.map((l) => l.tti)), max: Math.max(...loads.map((l) => l.tti)) },
      formUsable: { median: pct(loads.map((l) => l.form), 50) },
      domContentLoaded: { median: pct(loads.map((l) => l.dcl), 50) },
      load: { median: pct(loads.map((l) => l.load), 50) },
      transfer: { median: pct(loads.map((l) => l.transfer), 50), decoded: pct(loads.map((l) => l.decoded), 50), files: loads[0]?.files },
      all: loads,
    },
  };
  console.log(`machine: ${JSON.stringify(machine)}`);
  console.log(`keystroke → echo (n=${lat.length}, gap ${GAP} ms): p50 ${ms(result.keystroke.p50)}, p90 ${ms(result.keystroke.p90)}, p99 ${ms(result.keystroke.p99)}, min ${ms(result.keystroke.min)}, max ${ms(result.keystroke.max)}`);
  console.log('app shell:');
  for (const f of shell) console.log(`  ${f.path.padEnd(32)} ${String(f.bytes).padStart(7)} B  gzip -9 ${String(f.gzip9).padStart(6)} B`);
  console.log(`  total ${raw} B, gzip -9 ${total} B (${(total / 1024).toFixed(1)} KiB)`);
  console.log(`cold load (n=${loads.length}, ${loads[0]?.protocol}, ${RTT || KBPS ? `emulated: ${RTT} ms latency, ${KBPS || 'unlimited'} kbit/s` : 'loopback'}): TTI median ${ms(result.coldLoad.tti.median)} (${ms(result.coldLoad.tti.min)}–${ms(result.coldLoad.tti.max)}); form usable ${ms(result.coldLoad.formUsable.median)}, DOMContentLoaded ${ms(result.coldLoad.domContentLoaded.median)}, load ${ms(result.coldLoad.load.median)}`);
  console.log(`cold load transfer: ${result.coldLoad.transfer.median} B over the wire for ${result.coldLoad.transfer.files} files (${result.coldLoad.transfer.decoded} B decoded), until the pairing form`);
  console.log(JSON.stringify(result));
} finally {
  await browser?.close();
  await bridge.close();
}

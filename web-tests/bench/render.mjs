// A full-screen colour update on the phone (issue 15, docs/PERFORMANCE.md "A full screen of colour"),
// measured in headless Debian chromium at 360 × 740 against a real `collie bridge` and a real private
// tmux pane (100 × 30). Run on demand (not part of `node --test`):
//
//   cargo build --release && node web-tests/bench/render.mjs
//
// Each round `cat`s a prepared file into the pane: the screen cleared, then 28 rows of 100 cells,
// every cell its own 256-colour foreground and background (so every row is 100 runs), then a row
// `END<n>`. In the page, every chunk the pane's stream delivers is timed as it is read (the app's
// own `fetch` reader, wrapped by an init script), and a MutationObserver waits for `END<n>` on the
// Screen. Per round it records:
// - render: the chunk that carried `END<n>` read → the Screen's DOM holds it (the app's parse,
//   colour mapping and DOM update of that event);
// - painted: that chunk → the first frame after it is drawn (requestAnimationFrame, then a task);
// - shown: the first chunk of the round's colour rows → that frame (what a person waits for, the
//   bridge's batching of tmux's output included).
// Prints medians and ranges as text and JSON.
//
// Environment: COLLIE_BIN (default target/release/collie), BENCH_ROUNDS (30).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.COLLIE_BIN ||= path.join(root, 'target', 'release', 'collie');
if (!existsSync(process.env.COLLIE_BIN)) {
  console.error(`${process.env.COLLIE_BIN} is missing: run \`cargo build --release\` first`);
  process.exit(1);
}
const { Bridge, launchBrowser, openPage, pairInApp, openPane, waitScreen, CHROMIUM } = await import('../support.mjs');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 30);
const VIEW = { width: 360, height: 740 };

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const ms = (x) => `${x.toFixed(1)} ms`;

/** Round `n`'s file: clear, 28 rows of 100 differently coloured cells (letter of the round), `END<n>`. */
function frame(n) {
  const letter = String.fromCharCode(65 + (n % 26));
  let out = '\x1b[H\x1b[2J';
  for (let row = 0; row < 28; row++) {
    for (let col = 0; col < 100; col++) {
      const fg = (row * 100 + col + n) % 256;
      const bg = (fg + 128) % 256;
      out += `\x1b[38;5;${fg};48;5;${bg}m${letter}`;
    }
    out += '\x1b[0m\r\n';
  }
  return `${out}END${n}\r\n`;
}

const machine = {
  date: new Date().toISOString(),
  nproc: os.availableParallelism(),
  cpu: os.cpus()[0]?.model,
  kernel: os.release(),
  chromium: execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim(),
  collie: process.env.COLLIE_BIN,
};

const bridge = await Bridge.start();
let browser;
try {
  browser = await launchBrowser();
  const { context, page } = await openPage(browser, VIEW);
  await context.addInitScript(() => {
    window.__chunks = [];
    const read = ReadableStreamDefaultReader.prototype.read;
    const decoder = new TextDecoder();
    ReadableStreamDefaultReader.prototype.read = function () {
      return read.call(this).then((r) => {
        if (r.value instanceof Uint8Array) window.__chunks.push({ t: performance.now(), text: decoder.decode(r.value) });
        return r;
      });
    };
  });
  await pairInApp(page, bridge, { label: 'bench' });
  await openPane(page);
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));

  const rounds = [];
  for (let n = 0; n <= ROUNDS; n++) {
    const file = path.join(bridge.dir, `frame-${n}`);
    await writeFile(file, frame(n));
    const letter = String.fromCharCode(65 + (n % 26));
    const seen = page.evaluate(([marker, run]) => {
      window.__chunks = [];
      const screen = document.querySelector('[aria-label="Screen"]');
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${marker} within 10 s`)), 10_000);
        const mo = new MutationObserver(() => {
          if (!screen.textContent.includes(marker)) return;
          const dom = performance.now();
          mo.disconnect();
          clearTimeout(timer);
          requestAnimationFrame(() => {
            const ch = new MessageChannel();
            ch.port1.onmessage = () => {
              const painted = performance.now();
              const first = window.__chunks.find((c) => c.text.includes(run));
              const last = window.__chunks.find((c) => c.text.includes(marker));
              resolve({ dom, painted, first: first?.t, last: last?.t, chunks: window.__chunks.length });
            };
            ch.port2.postMessage(null);
          });
        });
        mo.observe(screen, { subtree: true, childList: true, characterData: true });
      });
    }, [`END${n}`, letter.repeat(20)]);
    await bridge.tmux.sendKeys(`cat ${file}`, 'Enter');
    const r = await seen;
    if (n > 0) rounds.push(r); // round 0 warms the page and the bridge
  }
  await context.close();

  const take = (f) => rounds.map(f).filter((x) => Number.isFinite(x));
  const render = take((r) => r.dom - r.last);
  const painted = take((r) => r.painted - r.last);
  const shown = take((r) => r.painted - r.first);
  const stat = (xs) => ({ n: xs.length, median: pct(xs, 50), min: Math.min(...xs), max: Math.max(...xs) });
  const result = {
    machine,
    viewport: VIEW,
    render: stat(render),
    painted: stat(painted),
    shown: stat(shown),
    chunksPerRound: stat(rounds.map((r) => r.chunks)),
  };
  console.log(`machine: ${JSON.stringify(machine)}`);
  for (const [name, s] of [['render (last chunk → DOM)', result.render], ['painted (last chunk → frame)', result.painted], ['shown (first chunk → frame)', result.shown]]) {
    console.log(`${name.padEnd(30)} median ${ms(s.median)} (${ms(s.min)}–${ms(s.max)}), n=${s.n}`);
  }
  console.log(`stream chunks per round: median ${result.chunksPerRound.median}`);
  console.log(JSON.stringify(result));
} finally {
  await browser?.close();
  await bridge.close();
}

// The stream's bytes per second for a pane printing colour output, with and without attrs
// (issue 15, docs/PERFORMANCE.md "Colours on the stream"). Run on demand (not part of `node --test`):
//
//   cargo build --release && node web-tests/bench/colour-stream.mjs
//
// A real `collie bridge` mirrors a real private tmux pane (bash, 100 × 30). A paired device reads
// the pane's stream (`GET /api/panes/local/{pane}/stream`, as the phone does, with `fetch`) while
// the pane prints BENCH_LINES lines of grep/diff-like colour output (a green `+`, a red `-`, a bold
// blue file name, a yellow line number; plain text between), one every BENCH_GAP_MS. For every
// event it counts the bytes of the `data:` JSON as sent, and the bytes of the same JSON without its
// `attrs` and `styles` members (what the stream would carry without colours). Prints both totals,
// both rates over the time from the first to the last event, and their ratio.
//
// Environment: COLLIE_BIN (default target/release/collie), BENCH_LINES (2000), BENCH_GAP_MS (5).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.COLLIE_BIN ||= path.join(root, 'target', 'release', 'collie');
if (!existsSync(process.env.COLLIE_BIN)) {
  console.error(`${process.env.COLLIE_BIN} is missing: run \`cargo build --release\` first`);
  process.exit(1);
}
const { Bridge, waitFor } = await import('../support.mjs');

const LINES = Number(process.env.BENCH_LINES || 2000);
const GAP = Number(process.env.BENCH_GAP_MS || 5);

const bridge = await Bridge.start();
try {
  const token = await bridge.pairApi('bench', 'full');
  const pane = await bridge.tmuxPane(token);
  const ctrl = new AbortController();
  const r = await fetch(`${bridge.url}/api/panes/local/${encodeURIComponent(pane)}/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: ctrl.signal,
  });
  if (r.status !== 200) throw new Error(`stream: ${r.status}`);
  const stats = { events: 0, withAttrs: 0, plain: 0, first: 0, last: 0, done: false };
  const reading = (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of r.body) {
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          const ev = JSON.parse(data);
          if (!ev.rows) continue;
          const now = performance.now();
          // The first event is the screen before the output; it is counted from the second.
          if (stats.events++ === 0) continue;
          if (!stats.first) stats.first = now;
          stats.last = now;
          stats.withAttrs += Buffer.byteLength(data);
          const { attrs, styles, ...plain } = ev;
          stats.plain += Buffer.byteLength(JSON.stringify(plain));
          if (Object.values(ev.rows).some((l) => l.startsWith('BENCH-END'))) stats.done = true;
        }
      }
    } catch (e) {
      if (e.name !== 'AbortError') throw e;
    }
  })();
  await waitFor('the first event', async () => stats.events > 0);
  const script = `for i in $(seq 1 ${LINES}); do printf '\\033[32m+\\033[0m src/\\033[1;34mfile_%d.rs\\033[0m:\\033[33m%d\\033[0m: let value = compute(%d); \\033[31m- old_value(%d)\\033[0m\\n' $i $i $i $i; sleep ${GAP / 1000}; done; echo BENCH-END`;
  await bridge.tmux.run(['send-keys', '-t', 'main:0', '-l', script]);
  await bridge.tmux.run(['send-keys', '-t', 'main:0', 'Enter']);
  await waitFor('the end marker on the stream', async () => stats.done, { timeout: 600_000, every: 100 });
  ctrl.abort();
  await reading;
  const secs = (stats.last - stats.first) / 1000;
  const result = {
    lines: LINES,
    gap_ms: GAP,
    events: stats.events - 1,
    seconds: Number(secs.toFixed(2)),
    bytes_with_attrs: stats.withAttrs,
    bytes_without_attrs: stats.plain,
    bytes_per_s_with_attrs: Math.round(stats.withAttrs / secs),
    bytes_per_s_without_attrs: Math.round(stats.plain / secs),
    ratio: Number((stats.withAttrs / stats.plain).toFixed(3)),
  };
  console.log(`${result.events} events in ${result.seconds} s: `
    + `${result.bytes_per_s_with_attrs} B/s with attrs, ${result.bytes_per_s_without_attrs} B/s without `
    + `(× ${result.ratio})`);
  console.log(JSON.stringify(result));
} finally {
  await bridge.close();
}

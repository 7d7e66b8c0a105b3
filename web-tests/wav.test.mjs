// The phone's recording format (src/web/wav.js; SPEC §16, decision 0076), in node: the WAV header
// byte for byte, the 60 s cap in bytes, and the resampler — a 48 kHz sine keeps its frequency at
// 16 kHz, a tone above 8 kHz is filtered out instead of folding into the speech band, and
// silence stays silence. The module is the file the bridge serves, loaded as it is (it imports
// nothing, and the app's folder has no package.json to make node read it as a module).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const source = await readFile(path.join(ROOT, 'src', 'web', 'wav.js'), 'utf8');
const wav = await import(`data:text/javascript,${encodeURIComponent(source)}`);

/** `seconds` of a sine of `freq` Hz at `rate`, amplitude `amp`. */
function sine(freq, rate, seconds, amp = 0.5) {
  const x = new Float32Array(Math.round(rate * seconds));
  for (let i = 0; i < x.length; i++) x[i] = amp * Math.sin((2 * Math.PI * freq * i) / rate);
  return x;
}

/** Everything `r` gives for `x` pushed in blocks of `block` samples, as the microphone's do. */
function resample(r, x, block = 2048) {
  const parts = [];
  for (let i = 0; i < x.length; i += block) parts.push(r.push(x.subarray(i, i + block)));
  parts.push(r.end());
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The frequency of `x` at `rate` from its zero crossings (upward), away from the ends. */
function frequency(x, rate) {
  const ups = [];
  for (let i = 1000; i < x.length - 1000; i++) if (x[i - 1] < 0 && x[i] >= 0) ups.push(i - x[i] / (x[i] - x[i - 1]));
  return ((ups.length - 1) * rate) / (ups.at(-1) - ups[0]);
}

const rms = (x) => Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length);

test('the header is RIFF/WAVE, PCM 1, mono, 16 kHz, 16 bits, one fmt chunk of 16 bytes, then data', () => {
  const bytes = wav.encodeWav(Int16Array.from([0, 1, -1, 32767, -32768]));
  assert.equal(bytes.length, 44 + 10);
  const head = Buffer.from(bytes.subarray(0, 44));
  const expected = Buffer.concat([
    Buffer.from('RIFF'), u32(36 + 10), Buffer.from('WAVE'),
    Buffer.from('fmt '), u32(16), u16(1), u16(1), u32(16000), u32(32000), u16(2), u16(16),
    Buffer.from('data'), u32(10),
  ]);
  assert.deepEqual(head, expected);
  assert.deepEqual(Buffer.from(bytes.subarray(44)), Buffer.from([0, 0, 1, 0, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x80]));
});

test('floats become 16-bit samples, clipped at full scale', () => {
  assert.deepEqual([...wav.pcm16(Float32Array.from([0, 0.5, -0.5, 1, -1, 2, -2]))],
    [0, 16384, -16384, 32767, -32768, 32767, -32768]);
});

test('a recording stops at 60 s: at most 1,920,044 bytes, and `add` says when it is full', () => {
  assert.equal(wav.MAX_BYTES, 1_920_044);
  const take = new wav.Take(48000);
  const block = sine(440, 48000, 2048 / 48000);
  let blocks = 0;
  while (take.add(block)) {
    blocks++;
    assert.ok(blocks < 2000, 'a take of 48 kHz fills after 60 s (1407 blocks of 2048)');
  }
  assert.equal(take.seconds, 60);
  assert.equal(take.add(block), false, 'nothing more is taken');
  const bytes = take.wav();
  assert.equal(bytes.length, wav.MAX_BYTES);
  assert.equal(new DataView(bytes.buffer).getUint32(40, true), 60 * 16000 * 2);
});

test('a short take is as long as it was: 2.5 s at 44.1 kHz is 40,000 samples', () => {
  const take = new wav.Take(44100);
  const x = sine(300, 44100, 2.5);
  for (let i = 0; i < x.length; i += 1024) assert.equal(take.add(x.subarray(i, i + 1024)), true);
  const bytes = take.wav();
  assert.equal(bytes.length, 44 + 40_000 * 2);
});

test('a 48 kHz sine keeps its frequency and level at 16 kHz', () => {
  for (const f of [220, 1000, 3000, 5000]) {
    const out = resample(new wav.Resampler(48000), sine(f, 48000, 1));
    assert.equal(out.length, 16000);
    const got = frequency(out, 16000);
    assert.ok(Math.abs(got - f) < f * 0.005, `${f} Hz came out as ${got.toFixed(1)} Hz`);
    const level = rms(out.subarray(1000, 15000)) / (0.5 * Math.SQRT1_2);
    assert.ok(level > 0.97 && level < 1.03, `${f} Hz: level ×${level.toFixed(3)}`);
  }
  // From 44.1 kHz too (a fractional step).
  const out = resample(new wav.Resampler(44100), sine(1000, 44100, 1));
  assert.equal(out.length, 16000);
  assert.ok(Math.abs(frequency(out, 16000) - 1000) < 5);
});

test('a tone above 8 kHz is filtered out rather than folded into the speech band', () => {
  // Dropping two samples of three would turn 10 kHz into a 6 kHz tone as loud as the original.
  const out = resample(new wav.Resampler(48000), sine(10_000, 48000, 1));
  const level = rms(out.subarray(1000, 15000)) / (0.5 * Math.SQRT1_2);
  assert.ok(level < 0.001, `10 kHz left ×${level} (at least 60 dB down expected)`);
});

test('silence stays silence and a constant stays itself', () => {
  const zero = resample(new wav.Resampler(48000), new Float32Array(4800));
  assert.ok(zero.every((v) => v === 0));
  const dc = resample(new wav.Resampler(44100), new Float32Array(44100).fill(0.25));
  for (const v of dc.subarray(200, 15800)) assert.ok(Math.abs(v - 0.25) < 1e-4, `constant became ${v}`);
});

test('the level meter reads a full-scale sine near the top and silence at zero', () => {
  assert.equal(wav.level(new Float32Array(128)), 0);
  const loud = wav.level(sine(1000, 48000, 0.05, 1));
  assert.ok(loud > 0.9 && loud <= 1, `loud: ${loud}`);
  const quiet = wav.level(sine(1000, 48000, 0.05, 0.01));
  assert.ok(quiet > 0.2 && quiet < 0.5, `-40 dB: ${quiet}`);
});

function u32(n) {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function u16(n) {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

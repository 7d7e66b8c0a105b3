// The recording a dictation sends (SPEC §16; decision 0076): 16 kHz mono 16-bit PCM in a WAV file
// of one `fmt ` chunk (16 bytes) and one `data` chunk, at most 60 s — the one form the bridge
// takes, so the machine needs no audio decoder. The microphone gives 32-bit floats at the audio
// device's rate (48 kHz or 44.1 kHz on most phones); `Resampler` brings them to 16 kHz through a
// low-pass filter first (a windowed sinc), because dropping two samples of three would fold
// everything above 8 kHz back into the speech band. Pure: no DOM, no audio API, so it is tested
// in node (web-tests/wav.test.mjs).

/** The rate the bridge takes. */
export const RATE = 16000;
/** The longest recording, in seconds. */
export const MAX_SECONDS = 60;
/** The most samples a recording holds. */
export const MAX_SAMPLES = RATE * MAX_SECONDS;
/** RIFF header, `fmt ` chunk and `data` chunk header. */
export const HEADER_BYTES = 44;
/** The largest file a recording makes: 1,920,044 bytes. */
export const MAX_BYTES = HEADER_BYTES + MAX_SAMPLES * 2;

// The filter: a sinc cut at 90 % of the lower rate's Nyquist frequency (7.2 kHz for 16 kHz),
// 16 zero crossings on each side, Blackman window. From 48 kHz it passes speech up to 6 kHz
// unchanged (-3 dB at 7 kHz) and holds everything from 8.5 kHz up more than 75 dB down (measured
// in decision 0076). Its values are read from a table, STEPS per input sample, linearly
// interpolated.
const ROLLOFF = 0.9;
const ZEROS = 16;
const STEPS = 64;

/**
 * Converts a stream of samples from `inRate` to `outRate`. `push(block)` returns the output
 * samples it could finish (each needs the input up to the filter's half width after it);
 * `end()` returns the rest, the input's end taken as silence. Output length: the input's length
 * times `outRate / inRate`, rounded.
 */
export class Resampler {
  constructor(inRate, outRate = RATE) {
    if (!(inRate > 0 && outRate > 0) || !Number.isFinite(inRate) || !Number.isFinite(outRate)) {
      throw new RangeError(`bad sample rates ${inRate} → ${outRate}`);
    }
    this.step = inRate / outRate; // input samples per output sample
    const fc = 0.5 * Math.min(1, outRate / inRate) * ROLLOFF; // cut-off, cycles per input sample
    this.half = ZEROS / (2 * fc); // half width, in input samples
    const n = Math.ceil(this.half * STEPS) + 2;
    this.table = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const x = i / STEPS;
      if (x >= this.half) break;
      const y = 2 * fc * x;
      const sinc = y === 0 ? 1 : Math.sin(Math.PI * y) / (Math.PI * y);
      const w = (x / this.half + 1) / 2; // Blackman, centred: 0.5 at x = 0
      const blackman = 0.42 - 0.5 * Math.cos(2 * Math.PI * w) + 0.08 * Math.cos(4 * Math.PI * w);
      this.table[i] = 2 * fc * sinc * blackman;
    }
    this.buf = new Float32Array(0); // input not yet consumed
    this.base = 0; // index in the whole input of buf[0]
    this.total = 0; // input samples pushed
    this.n = 0; // next output sample
  }

  /** Takes `block` (a Float32Array of samples in -1…1); returns the finished output samples. */
  push(block) {
    const buf = new Float32Array(this.buf.length + block.length);
    buf.set(this.buf);
    buf.set(block, this.buf.length);
    this.buf = buf;
    this.total += block.length;
    return this.drain(Infinity);
  }

  /** The output samples still owed once the input has ended. */
  end() {
    const owed = Math.round(this.total / this.step);
    const pad = new Float32Array(Math.ceil(this.half) + 2);
    const buf = new Float32Array(this.buf.length + pad.length);
    buf.set(this.buf);
    this.buf = buf;
    return this.drain(owed);
  }

  drain(limit) {
    const out = [];
    const { buf, half, step, table } = this;
    const have = this.base + buf.length;
    while (this.n < limit) {
      const t = this.n * step;
      const hi = Math.floor(t + half);
      if (hi >= have) break;
      let acc = 0;
      let wsum = 0;
      for (let k = Math.ceil(t - half); k <= hi; k++) {
        const x = Math.abs(t - k) * STEPS;
        const i = Math.floor(x);
        const w = table[i] + (table[i + 1] - table[i]) * (x - i);
        wsum += w;
        if (k >= 0) acc += buf[k - this.base] * w;
      }
      // Dividing by the weights' sum makes silence stay silence and a constant stay itself, at
      // any fractional position.
      out.push(wsum > 0 ? acc / wsum : 0);
      this.n++;
    }
    // Keep only what the next output sample reaches back to.
    const keepFrom = Math.max(this.base, Math.ceil(this.n * step - half) - 1);
    if (keepFrom > this.base) {
      this.buf = buf.slice(keepFrom - this.base);
      this.base = keepFrom;
    }
    return Float32Array.from(out);
  }
}

/** Float samples (-1…1, clipped) as 16-bit integers. */
export function pcm16(floats) {
  const out = new Int16Array(floats.length);
  for (let i = 0; i < floats.length; i++) {
    const v = Math.max(-1, Math.min(1, floats[i]));
    out[i] = Math.round(v < 0 ? v * 0x8000 : v * 0x7fff);
  }
  return out;
}

/** A WAV file (Uint8Array) of 16-bit mono `samples` (an Int16Array) at `rate`. */
export function encodeWav(samples, rate = RATE) {
  const bytes = new Uint8Array(HEADER_BYTES + samples.length * 2);
  const v = new DataView(bytes.buffer);
  const tag = (at, s) => {
    for (let i = 0; i < 4; i++) bytes[at + i] = s.charCodeAt(i);
  };
  tag(0, 'RIFF');
  v.setUint32(4, bytes.length - 8, true);
  tag(8, 'WAVE');
  tag(12, 'fmt ');
  v.setUint32(16, 16, true); // the chunk's size
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // one channel
  v.setUint32(24, rate, true);
  v.setUint32(28, rate * 2, true); // bytes per second
  v.setUint16(32, 2, true); // bytes per frame
  v.setUint16(34, 16, true); // bits per sample
  tag(36, 'data');
  v.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) v.setInt16(HEADER_BYTES + i * 2, samples[i], true);
  return bytes;
}

/**
 * One dictation's audio: blocks of float samples at the microphone's `rate` in, a WAV of at most
 * MAX_SECONDS out. `add` answers false once the recording is full (the rest of that block and
 * anything later is left out): the caller stops then.
 */
export class Take {
  constructor(rate) {
    this.rate = rate;
    this.resampler = new Resampler(rate);
    this.chunks = [];
    this.taken = 0; // input samples kept
    this.limit = Math.floor(rate * MAX_SECONDS);
  }

  /** Seconds recorded so far. */
  get seconds() {
    return this.taken / this.rate;
  }

  add(block) {
    const room = this.limit - this.taken;
    const part = block.length > room ? block.subarray(0, Math.max(0, room)) : block;
    if (part.length) {
      this.chunks.push(this.resampler.push(part));
      this.taken += part.length;
    }
    return this.taken < this.limit;
  }

  /** The WAV file of everything added. */
  wav() {
    this.chunks.push(this.resampler.end());
    const length = Math.min(MAX_SAMPLES, this.chunks.reduce((n, c) => n + c.length, 0));
    const all = new Float32Array(length);
    let at = 0;
    for (const c of this.chunks) {
      const part = c.subarray(0, length - at);
      all.set(part, at);
      at += part.length;
    }
    this.chunks = [];
    return encodeWav(pcm16(all));
  }
}

/** How loud `block` is, for the level meter: its RMS on a 60 dB scale, 0…1. */
export function level(block) {
  if (!block.length) return 0;
  let sum = 0;
  for (let i = 0; i < block.length; i++) sum += block[i] * block[i];
  const rms = Math.sqrt(sum / block.length);
  const db = rms > 0 ? 20 * Math.log10(rms) : -Infinity;
  return Math.max(0, Math.min(1, (db + 60) / 60));
}

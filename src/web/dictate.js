// Dictation (SPEC §16; docs/guide/speech.md; decision 0076): the microphone button of a pane's
// input bar and of a conversation's composer. Tap to record, tap to stop (it stops by itself at
// 60 s); while it records, a level meter and the time. The page makes the WAV itself (wav.js,
// from the samples speech-worklet.js taps off the microphone), posts it to the lead's
// `POST /api/speech/{machine}`, and puts the text it gets back into the input field at the
// cursor — for the person to read, edit and send. Nothing is ever sent on its own.
//
// This module, wav.js, speech-worklet.js and dictate.css are no part of the app shell: client.js
// `dictate` fetches them only when the bridge has a transcriber (`speech` in `GET /api/settings`),
// and the button shows only when the browser can record too. The microphone is released (its
// tracks stopped, so the browser's recording indicator goes off) as soon as a recording ends.
// A dictation goes with its field: when the field has left the page (the view was left, or the
// pane's input bar withdrawn) at a route change, at the next block of sound or when an answer
// comes, whatever it was doing is thrown away and the microphone released.

import { ApiError, authHeaders, failure, reachFetch } from './client.js';
import { h, icon } from './dom.js';
import { t } from './i18n.js';
import { MAX_SECONDS, Take, level } from './wav.js';

/** A microphone, and a square for stop (dom.js `icon`). */
const MIC = 'M12 3a3 3 0 0 0-3 3v6a3 3 0 0 0 6 0V6a3 3 0 0 0-3-3zM5 11a7 7 0 0 0 14 0M12 18v3M8 21h8';
const STOP = 'M7 7h10v10H7z';
/** What a take shorter than this holds is a tap, not speech. */
const SHORTEST_S = 0.3;
/** How long stop waits for the worklet's last block. */
const FLUSH_MS = 300;
/**
 * The microphone as it is, without the browser's processing for calls: nothing plays while a
 * dictation records, so echo cancellation has nothing to cancel, and what it and its companions
 * did to the sound cost PocketSphinx words (decision 0076). Ideal, not exact: a device that cannot
 * turn them off still records.
 */
const RAW = { echoCancellation: false, noiseSuppression: false, autoGainControl: false };

/** Whether this browser can record: getUserMedia and an AudioWorklet. */
export function canRecord() {
  return !!(navigator.mediaDevices?.getUserMedia && window.AudioContext && window.AudioWorkletNode);
}

let styled = null;

/** Loads dictate.css once; resolves when it applied (or failed: the buttons still work). */
function style() {
  styled ??= new Promise((resolve) => {
    const link = h('link', { rel: 'stylesheet', href: '/dictate.css', onload: resolve, onerror: resolve });
    document.head.append(link);
  });
  return styled;
}

/**
 * Gives `field` (an input or a textarea whose text is for `machine`) a microphone: the button
 * right after the field, the level, time and status after the field's row. Resolves with the
 * Dictation, or null when this browser cannot record or the field has gone meanwhile.
 */
export async function attach(machine, field) {
  if (!canRecord()) return null;
  await style();
  if (!field.isConnected) return null;
  const d = new Dictation({ machine, field });
  field.after(d.button);
  field.parentElement.after(d.panel);
  return d;
}

/** Posts a WAV file (Uint8Array) for `machine`'s pane; resolves with the text. */
export async function transcribe(machine, wav) {
  let res;
  try {
    res = await reachFetch(`/api/speech/${encodeURIComponent(machine)}`, {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'audio/wav' }),
      body: wav,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'bridge unreachable');
  }
  if (!res.ok) throw await failure(res);
  const body = await res.json().catch(() => null);
  if (typeof body?.text !== 'string') throw new ApiError(res.status, t('no text in the answer'));
  return body.text;
}

/** What the person is told when the microphone could not be opened. */
function micWords(e) {
  switch (e?.name) {
    case 'NotAllowedError':
    case 'SecurityError':
      return t('No microphone: this site may not use it. Allow it in the browser\u2019s site settings.');
    case 'NotFoundError':
    case 'OverconstrainedError':
      return t('No microphone found.');
    case 'NotReadableError':
      return t('The microphone is busy in another app.');
    default:
      return t('No microphone: {error}.', { error: e?.message || e?.name || e });
  }
}

/** `s` seconds as m:ss. */
function clock(s) {
  const whole = Math.floor(s);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
}

/**
 * The dictation of one input `field` (an input or a textarea) whose text is for `machine`.
 * `button` goes beside the field, `panel` below it: the level and time while recording, what
 * became of the recording (a status), and why it failed (an alert, styled as the views' own).
 */
export class Dictation {
  constructor({ machine, field }) {
    this.machine = machine;
    this.field = field;
    this.state = 'idle'; // starting, recording, transcribing
    this.run = 0; // each start and cancel counts: an async step of an older run stops there
    this.stream = null;
    this.ctx = null;
    this.node = null;
    this.take = null;
    this.timers = [];
    this.flushed = null;
    this.glyph = icon(MIC);
    this.button = h('button', {
      type: 'button',
      class: 'mic',
      'aria-pressed': 'false',
      'aria-label': t('Dictate'),
      title: t('Dictate'),
      onclick: () => this.toggle(),
    }, this.glyph);
    this.meter = h('meter', { class: 'dictate-level', min: 0, max: 1, value: 0, 'aria-label': t('Microphone level') });
    this.time = h('span', { class: 'dictate-time' });
    this.live = h('div', { class: 'dictate-live', role: 'group', 'aria-label': t('Recording'), hidden: true },
      this.meter, this.time);
    this.status = h('p', { class: 'dictate-status small', role: 'status' });
    this.alert = h('p', { class: 'alert small', role: 'alert' });
    this.panel = h('div', { class: 'dictate' }, this.live, this.status, this.alert);
    // The router (app.js) swaps the view on `hashchange` before this listener runs.
    this.onRoute = () => this.here();
    window.addEventListener('hashchange', this.onRoute);
  }

  /** Whether the field is still on the page; when it is not, the dictation ends here. */
  here() {
    if (this.field.isConnected) return true;
    this.dispose();
    return false;
  }

  say(words) {
    this.status.textContent = words;
  }

  fail(words) {
    this.alert.textContent = words;
  }

  setState(state) {
    this.state = state;
    const on = state === 'starting' || state === 'recording';
    this.button.setAttribute('aria-pressed', String(on));
    this.button.setAttribute('aria-label', on ? t('Stop dictation') : t('Dictate'));
    this.button.title = on ? t('Stop dictation') : t('Dictate');
    this.button.classList.toggle('recording', on);
    this.button.disabled = state === 'transcribing';
    const glyph = icon(on ? STOP : MIC);
    this.glyph.replaceWith(glyph);
    this.glyph = glyph;
    this.live.hidden = state !== 'recording';
  }

  toggle() {
    if (this.state === 'idle') this.start();
    else if (this.state === 'recording') this.finish();
    else if (this.state === 'starting') this.cancel();
  }

  async start() {
    const run = ++this.run;
    this.fail('');
    this.setState('starting');
    this.say(t('Starting the microphone\u2026'));
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: RAW });
    } catch (e) {
      if (run !== this.run) return;
      this.setState('idle');
      this.say('');
      this.fail(micWords(e));
      return;
    }
    if (run !== this.run || !this.here()) {
      stream.getTracks().forEach((track) => track.stop());
      return;
    }
    this.stream = stream;
    try {
      const ctx = new AudioContext();
      this.ctx = ctx;
      await ctx.audioWorklet.addModule('/speech-worklet.js');
      if (run !== this.run) return;
      const source = ctx.createMediaStreamSource(stream);
      const node = new AudioWorkletNode(ctx, 'collie-capture', {
        numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
      });
      // The audio thread runs a node only on a path to the speakers; this one plays silence.
      const mute = ctx.createGain();
      mute.gain.value = 0;
      source.connect(node).connect(mute).connect(ctx.destination);
      this.node = node;
      this.take = new Take(ctx.sampleRate);
      node.port.onmessage = (e) => this.onBlock(run, e.data);
      if (ctx.state !== 'running') await ctx.resume();
    } catch (e) {
      if (run !== this.run) return;
      this.teardown();
      this.setState('idle');
      this.say('');
      this.fail(t('No recording: {error}.', { error: e?.message || e?.name || e }));
      return;
    }
    if (run !== this.run) return;
    this.setState('recording');
    this.say(t('Recording. Tap stop when done (at most {max} s).', { max: MAX_SECONDS }));
    this.showTime();
    // The take stops itself when it holds 60 s of samples; this stops it should samples stall.
    this.timers.push(setTimeout(() => this.finish(), (MAX_SECONDS + 2) * 1000));
  }

  onBlock(run, data) {
    if (run !== this.run || !this.take || !this.here()) return;
    if (data === 'flushed') {
      this.flushed?.();
      return;
    }
    if (!(data instanceof Float32Array)) return;
    const more = this.take.add(data);
    this.meter.value = level(data);
    this.showTime();
    if (!more) this.finish();
  }

  showTime() {
    const shown = t('{time} of {max}', { time: clock(this.take ? this.take.seconds : 0), max: clock(MAX_SECONDS) });
    if (this.time.textContent !== shown) this.time.textContent = shown;
  }

  /** Waits (at most FLUSH_MS) for the worklet to hand over its last, partial block. */
  flush() {
    if (!this.node) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, FLUSH_MS);
      this.flushed = () => {
        clearTimeout(timer);
        resolve();
      };
      this.node.port.postMessage('flush');
    });
  }

  async finish() {
    if (this.state !== 'recording' || !this.here()) return;
    const run = this.run;
    this.setState('transcribing');
    await this.flush();
    if (run !== this.run) return;
    const take = this.take;
    this.teardown();
    if (!take || take.seconds < SHORTEST_S) {
      this.setState('idle');
      this.say(t('Too short: nothing was recorded.'));
      return;
    }
    this.say(t('Transcribing\u2026'));
    let text;
    try {
      text = await transcribe(this.machine, take.wav());
    } catch (err) {
      if (run !== this.run || !this.here()) return;
      this.setState('idle');
      this.say('');
      this.fail(err.offline ? t('Not transcribed: cannot reach the bridge.') : t('Not transcribed: {code}.', { code: err.code }));
      return;
    }
    if (run !== this.run || !this.here()) return;
    this.setState('idle');
    text = text.replace(/\s+/g, ' ').trim();
    if (!text) {
      this.say(t('No words were recognised.'));
      return;
    }
    this.insert(text);
    this.say(t('Dictated text added to the input: read it, then send.'));
  }

  /** Puts `text` into the field at its cursor (at the end when it has none), spaced from its neighbours. */
  insert(text) {
    const f = this.field;
    const v = f.value;
    const start = Math.min(f.selectionStart ?? v.length, v.length);
    const end = Math.max(start, Math.min(f.selectionEnd ?? start, v.length));
    const before = v.slice(0, start);
    const after = v.slice(end);
    const lead = before && !/\s$/.test(before) ? ' ' : '';
    const trail = after && !/^\s/.test(after) ? ' ' : '';
    f.value = `${before}${lead}${text}${trail}${after}`;
    const at = before.length + lead.length + text.length;
    f.setSelectionRange(at, at);
    f.focus({ preventScroll: true });
    // The view's own listeners keep the draft and check for masked text.
    f.dispatchEvent(new Event('input', { bubbles: true }));
  }

  /** Releases the microphone and the audio graph. */
  teardown() {
    this.timers.forEach(clearTimeout);
    this.timers = [];
    this.flushed = null;
    if (this.node) {
      this.node.port.onmessage = null;
      this.node.disconnect();
    }
    this.stream?.getTracks().forEach((track) => track.stop());
    this.ctx?.close().catch(() => {});
    this.node = null;
    this.stream = null;
    this.ctx = null;
    this.take = null;
    this.meter.value = 0;
    this.time.textContent = '';
  }

  /** Stops whatever is under way and throws it away (a recording, or the answer to one). */
  cancel() {
    this.run++;
    this.teardown();
    if (this.state !== 'idle') {
      this.setState('idle');
      this.say('');
    }
  }

  /** The field has gone: nothing of this dictation may outlive it. */
  dispose() {
    window.removeEventListener('hashchange', this.onRoute);
    this.cancel();
  }
}

// The microphone tap of a dictation (dictate.js; decision 0076). It runs on the browser's audio
// thread, loaded by `audioWorklet.addModule` from this origin (the CSP's `script-src 'self'`
// allows it; nothing here is inline or evaluated). It mixes the input's channels to one and posts
// blocks of BLOCK float samples to the page, transferring each block's buffer instead of copying
// it; the page resamples and encodes (wav.js). A `flush` message posts what the current block
// holds, so the last 40 ms are not lost when the person taps stop.

const BLOCK = 2048;

class Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.block = new Float32Array(BLOCK);
    this.at = 0;
    this.port.onmessage = (e) => {
      if (e.data === 'flush') {
        this.post();
        this.port.postMessage('flushed');
      }
    };
  }

  post() {
    if (!this.at) return;
    const full = this.block.slice(0, this.at);
    this.port.postMessage(full, [full.buffer]);
    this.at = 0;
  }

  process(inputs) {
    const channels = inputs[0] || [];
    const frames = channels.length ? channels[0].length : 0;
    for (let i = 0; i < frames; i++) {
      let v = 0;
      for (const ch of channels) v += ch[i];
      this.block[this.at++] = v / channels.length;
      if (this.at === BLOCK) this.post();
    }
    return true;
  }
}

registerProcessor('collie-capture', Capture);

// Dictation on the phone (issue 32; SPEC §16; docs/guide/speech.md; decision 0076): headless
// chromium with a fake microphone that plays a real recording of human speech — PocketSphinx's
// `goforward.raw` ("go forward ten meters", 16 kHz 16-bit mono; Debian's pocketsphinx-testdata),
// made a WAV file here — against a real bridge whose applied `[speech]` is Debian's
// `pocketsphinx_continuous` with its en-us model. The page records through getUserMedia, makes the
// WAV itself (resampled from the microphone's rate), and the bridge's engine transcribes it: the
// words come back into the input field, and nothing is sent to the pane — in a pane, its chat
// view, a durable agent's conversation and a crew member's pane (the lead transcribes). Leaving
// the view while recording releases the microphone and posts nothing; a refusal (the pinned
// engine changed) is said below the input. Without `[speech]` there is no microphone, and
// dictation's files are never fetched.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Bridge, MEMBER, Scope, WINDOW, axeViolations, fakeClaude, fakeMicrophone, openPage, openPane, pairInApp,
  session, useBrowser, waitFor, waitScreen, openMore } from './support.mjs';
import { NodeAgent, conversation } from './durable-agent.mjs';

const RAW = '/usr/share/pocketsphinx/test/data/goforward.raw';
const ENGINE = '/usr/bin/pocketsphinx_continuous';
const MODEL = '/usr/share/pocketsphinx/model/en-us';
// docs/guide/speech.md's PocketSphinx recipe.
const SPEECH = `
[speech]
exec = "${ENGINE}"
model = "${MODEL}"
args = ["-infile", "{wav}",
        "-hmm", "{model}/en-us", "-lm", "{model}/en-us.lm.bin", "-dict", "{model}/cmudict-en-us.dict",
        "-logfn", "/dev/null"]
`;

const T = { timeout: 120_000 };
const VIEW = { width: 360, height: 740 };

/** `raw` (16 kHz 16-bit mono little-endian PCM) as a WAV file. */
function wavOf(raw) {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + raw.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(16000, 24);
  h.writeUInt32LE(32000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(raw.length, 40);
  return Buffer.concat([h, raw]);
}

// The fake microphone's file, made before the browser starts (chromium reads it at launch).
let micDir;
const browser = useBrowser(async () => {
  micDir = await mkdtemp(path.join(tmpdir(), 'collie-mic-'));
  const wav = path.join(micDir, 'goforward.wav');
  await writeFile(wav, wavOf(await readFile(RAW)));
  return { args: fakeMicrophone(wav) };
});
after(async () => {
  if (micDir) await rm(micDir, { recursive: true, force: true });
});

/**
 * Watches `page`: every request it makes (method and path) in `page.requests`, and every
 * microphone stream it opens in `window.collieStreams` (the real getUserMedia, kept so a test can
 * see that the tracks were stopped). Call before the page's first navigation.
 */
async function watch(context, page) {
  page.requests = [];
  page.on('request', (r) => page.requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
  await context.addInitScript(() => {
    const gum = navigator.mediaDevices?.getUserMedia?.bind(navigator.mediaDevices);
    window.collieStreams = [];
    if (gum) {
      navigator.mediaDevices.getUserMedia = async (c) => {
        const s = await gum(c);
        window.collieStreams.push(s);
        return s;
      };
    }
  });
}

/** Whether every microphone track the page opened has ended (and it opened one). */
const micReleased = (page) => page.evaluate(() => window.collieStreams.length > 0
  && window.collieStreams.every((s) => s.getTracks().every((t) => t.readyState === 'ended')));

/** Whether a microphone track is live now. */
const micLive = (page) => page.evaluate(() => window.collieStreams.some((s) => s.getTracks().some((t) => t.readyState === 'live')));

/**
 * Taps the microphone, waits until the recorder has 3 s of sound (its own clock, read from the
 * samples it took), checks the recorder with axe, and taps stop.
 */
async function dictate(page, { axe = false } = {}) {
  const mic = page.getByRole('button', { name: 'Dictate', exact: true });
  await mic.click({ timeout: 15_000 });
  const stop = page.getByRole('button', { name: 'Stop dictation', exact: true });
  assert.equal(await stop.getAttribute('aria-pressed'), 'true');
  const recording = page.getByRole('group', { name: 'Recording', exact: true });
  await waitFor('3 s of recording', async () => /^0:0[3-9] of 1:00$/.test(await recording.innerText()), { timeout: 20_000 });
  assert.ok(await micLive(page), 'the microphone is on while recording');
  assert.ok(await recording.getByRole('meter', { name: 'Microphone level' }).isVisible());
  if (axe) assert.deepEqual(await axeViolations(page), [], 'axe: no serious or critical violation while recording');
  await stop.click();
}

test('the microphone fills the pane\'s input with the words it heard, and sends nothing', T, () =>
  session(browser, 'speech-pane', async ({ bridge, context, page }) => {
    await watch(context, page);
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    const input = page.getByLabel('Type to pane', { exact: true });
    await input.fill('please');

    await dictate(page, { axe: true });
    const status = page.getByRole('status').filter({ hasText: /Transcribing|Dictated/ });
    await status.first().waitFor();
    await waitFor('the words in the input', async () => /forward/i.test(await input.inputValue()), { timeout: 60_000 });
    const value = await input.inputValue();
    // The words PocketSphinx reads in the file itself: the page's resampling and the microphone
    // taken without the browser's call processing (decision 0076) lose none of them.
    assert.match(value, /^please go forward ten meters\b/i, 'appended after the text there, with a space');
    await page.getByText('Dictated text added to the input: read it, then send.', { exact: true }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'pane-input', 'the field has the focus');
    assert.equal(await page.getByRole('button', { name: 'Dictate', exact: true }).getAttribute('aria-pressed'), 'false');
    assert.ok(await micReleased(page), 'the microphone is released once the recording ended');

    // Nothing was sent: no input request, and the pane never saw the words.
    const speech = page.requests.filter((r) => r.startsWith('POST /api/speech/'));
    assert.deepEqual(speech, [`POST /api/speech/${bridge.name}`], 'one recording, for the pane\'s machine');
    assert.deepEqual(page.requests.filter((r) => r.includes('/input')), []);
    assert.doesNotMatch(await bridge.tmux.capture(), /forward|please/i);
    assert.deepEqual(page.problems, []);
  }, { bridge: { config: SPEECH }, ...VIEW }));

test('in the chat view the microphone fills the same input', T, () =>
  session(browser, 'speech-chat', async ({ bridge, context, page }) => {
    await watch(context, page);
    await pairInApp(page, bridge);
    await openPane(page);
    const agent = await fakeClaude(bridge);
    await agent.say('user', 'hello');
    const toggle = page.getByRole('button', { name: 'Chat', exact: true });
    await toggle.click({ timeout: 15_000 });
    await page.getByRole('region', { name: 'Chat', exact: true }).waitFor();

    await dictate(page);
    const input = page.getByLabel('Type to pane', { exact: true });
    await waitFor('the words in the input', async () => /forward/i.test(await input.inputValue()), { timeout: 60_000 });
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true', 'still the chat');
    assert.deepEqual(page.requests.filter((r) => r.includes('/input')), []);
    assert.ok(await micReleased(page));
    assert.deepEqual(page.problems, []);
  }, { bridge: { config: SPEECH }, ...VIEW }));

test('a durable agent\'s conversation: the microphone fills the composer, the agent gets nothing', T, async () => {
  const scope = new Scope();
  try {
    const bridge = scope.add(await Bridge.start({ tmux: false, config: SPEECH }), () => bridge.close());
    const socket = path.join(bridge.dir, 'agent', 'app.sock');
    const agent = scope.add(await NodeAgent.start(socket, {
      conversations: [conversation('c1', { title: 'Release notes', items: [{ id: 'i1', text: 'What next?' }] })],
    }), () => agent.stop());
    const { context, page } = await openPage(browser, VIEW);
    scope.add(null, () => context.close());
    await watch(context, page);
    await pairInApp(page, bridge);
    await bridge.cliOk(['durable', 'attach', 'ops', '--socket', socket]);
    await openMore(page, 'Agents');
    await page.getByRole('link', { name: 'Release notes', exact: true }).click({ timeout: 20_000 });
    await page.getByRole('heading', { name: 'Release notes', exact: true, level: 1 }).waitFor();

    await dictate(page);
    const text = page.getByLabel('Message to the agent', { exact: true });
    await waitFor('the words in the composer', async () => /forward/i.test(await text.inputValue()), { timeout: 60_000 });
    assert.equal(agent.writes.length, 0, 'nothing reached the agent');
    assert.ok(await micReleased(page));
    assert.deepEqual(page.problems, []);
  } finally {
    await scope.close();
  }
});

test('a crew member\'s pane: the lead transcribes, the member gets nothing', T, async () => {
  const scope = new Scope();
  let ctx = {};
  try {
    // crewSetup's crew, with the lead's `[speech]` applied before it starts.
    const env = { COLLIE_CREW_PORT: '0' };
    const lead = scope.add(await Bridge.start({ name: 'testbox', env, config: SPEECH }), () => lead.close());
    const member = scope.add(await Bridge.start({ name: 'memberbox', env, shell: 'sh' }), () => member.close());
    ctx = { lead, member };
    await lead.cliOk(['crew', 'init']);
    const { invite } = JSON.parse(await lead.cliOk(['crew', 'invite', '--json']));
    await member.cliOk(['crew', 'join', invite, '--name', MEMBER]);
    await waitFor(`the lead to see ${MEMBER} online`,
      async () => (await lead.crewMember(MEMBER))?.online === true, { timeout: 10_000, every: 200 });
    const { context, page } = await openPage(browser, VIEW);
    scope.add(null, () => context.close());
    ctx.page = page;
    await watch(context, page);
    await pairInApp(page, lead);
    await page.getByRole('region', { name: MEMBER, exact: true }).getByRole('link', { name: WINDOW, exact: true })
      .click({ timeout: 15_000 });
    await page.getByRole('heading', { name: WINDOW, exact: true }).waitFor();
    await waitScreen(page, 'the member\'s prompt', (l) => l.startsWith('$'));

    await dictate(page);
    const input = page.getByLabel('Type to pane', { exact: true });
    await waitFor('the words in the input', async () => /forward/i.test(await input.inputValue()), { timeout: 60_000 });
    assert.deepEqual(page.requests.filter((r) => r.startsWith('POST /api/speech/')), [`POST /api/speech/${MEMBER}`]);
    assert.deepEqual(page.requests.filter((r) => r.includes('/input')), []);
    assert.doesNotMatch(await member.tmux.capture(), /forward/i, 'the member\'s pane never saw the words');
    assert.deepEqual(page.problems, []);
  } catch (e) {
    e.message += `\n--- lead stderr:\n${ctx.lead?.stderr.slice(-3_000)}\n--- member stderr:\n${ctx.member?.stderr.slice(-3_000)}`;
    throw e;
  } finally {
    await scope.close();
  }
});

test('leaving the pane while recording stops the microphone and throws the recording away', T, () =>
  session(browser, 'speech-leave', async ({ bridge, context, page }) => {
    await watch(context, page);
    await pairInApp(page, bridge);
    await openPane(page);
    await page.getByRole('button', { name: 'Dictate', exact: true }).click({ timeout: 15_000 });
    const recording = page.getByRole('group', { name: 'Recording', exact: true });
    await waitFor('1 s of recording', async () => /^0:0[1-9] of 1:00$/.test(await recording.innerText()), { timeout: 20_000 });
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    await waitFor('the microphone to be released', () => micReleased(page));
    assert.deepEqual(page.requests.filter((r) => r.startsWith('POST /api/speech/')), [], 'nothing was transcribed');
    assert.deepEqual(page.problems, []);
  }, { bridge: { config: SPEECH }, ...VIEW }));

test('a refused recording says why below the input, and the input stays as it was', T, () =>
  session(browser, 'speech-refused', async ({ bridge, context, page }) => {
    await watch(context, page);
    await pairInApp(page, bridge);
    await openPane(page);
    const input = page.getByLabel('Type to pane', { exact: true });
    await input.fill('keep me');
    // The pinned engine changes after `collie apply`: the bridge refuses to run it (409).
    await appendFile(path.join(bridge.dir, 'home', 'bin', 'engine'), '# changed\n');
    await dictate(page);
    await page.getByRole('alert').filter({ hasText: 'Not transcribed: speech engine changed.' }).waitFor({ timeout: 20_000 });
    assert.equal(await input.inputValue(), 'keep me');
    assert.ok(await micReleased(page));
    assert.equal(await page.getByRole('button', { name: 'Dictate', exact: true }).isEnabled(), true, 'ready for another try');
    assert.deepEqual(page.problems.filter((p) => !/Failed to load resource/.test(p)), []);
  }, {
    bridge: {
      // An engine of the test's own (a script that runs PocketSphinx), so the test can change it.
      setup: async (dir) => {
        await mkdir(path.join(dir, 'home', 'bin'), { recursive: true });
        const engine = path.join(dir, 'home', 'bin', 'engine');
        await writeFile(engine, `#!/bin/sh\nexec ${ENGINE} "$@"\n`);
        await chmod(engine, 0o755);
      },
      config: (dir) => SPEECH.replace(`exec = "${ENGINE}"`, `exec = "${path.join(dir, 'home', 'bin', 'engine')}"`),
    },
    ...VIEW,
  }));

test('without [speech] there is no microphone, and dictation\'s files are never fetched', T, () =>
  session(browser, 'speech-none', async ({ bridge, context, page }) => {
    await watch(context, page);
    await pairInApp(page, bridge);
    const settings = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/settings');
    await openPane(page);
    const answer = await (await settings).json();
    assert.equal(answer.speech, false);
    await page.getByLabel('Type to pane', { exact: true }).waitFor();
    // The answer has been read by the time a later request of the view's goes out.
    const seen = page.requests.length;
    await waitFor('the view to make another request', () => page.requests.length > seen + 1);
    assert.equal(await page.getByRole('button', { name: 'Dictate' }).count(), 0);
    assert.deepEqual(page.requests.filter((r) => /dictate|wav\.js|speech-worklet/.test(r)), []);
    assert.deepEqual(page.problems, []);
  }, VIEW));

// Durable agents on the phone (SPEC §10.3, §3.3; docs/guide/phone-app.md, "Agents" and
// "Conversation"): a real bridge, a real durable agent on a private unix socket attached with
// `collie durable attach NAME --socket PATH`, and the app in headless chromium. The agent is
// `durable-agent.mjs` (it speaks the wire and can say hostile things on cue; what reached it is
// read from its own record of writes), and for the end-to-end walk the project's reference agent
// `collie-durable-example` when it is built beside `collie` (or `$COLLIE_DURABLE_EXAMPLE`). One
// test attaches an agent over HTTPS on loopback (a certificate from a test CA made with openssl)
// that refuses the bridge's token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { createInterface } from 'node:readline';
import path from 'node:path';
import {
  Bridge, COLLIE_BIN, bounded, MEMBER, Scope, crewSetup, openPage, pairInApp, sleep, waitFor, useBrowser, openMore } from './support.mjs';
import { NodeAgent, conversation } from './durable-agent.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const HOSTILE = '<img src=x onerror=alert(1)> and <b>bold</b>';

/**
 * Runs `fn({bridge, page, agent, attach, dialogs})` with a bridge (no tmux), a page paired with
 * tier `tier`, and a Node agent serving `state` on `<bridge dir>/agent/app.sock` (not yet
 * attached: `attach()` does it with the CLI). Everything is closed afterwards, pass or fail; on a
 * failure the page's text and the bridge's stderr are added to the error.
 */
async function withAgent(state, fn, { tier = 'full' } = {}) {
  const scope = new Scope();
  let ctx = {};
  try {
    const bridge = scope.add(await Bridge.start({ tmux: false }), () => bridge.close());
    const socket = path.join(bridge.dir, 'agent', 'app.sock');
    const agent = scope.add(await NodeAgent.start(socket, state), () => agent.stop());
    const { context, page } = await openPage(browser);
    scope.add(null, () => context.close());
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    });
    ctx = { bridge, page };
    await pairInApp(page, bridge, { tier, label: 'phone' });
    const attach = async (name = 'ops') => {
      const out = await bridge.cliOk(['durable', 'attach', name, '--socket', socket]);
      assert.match(out, new RegExp(`attached ${name}`));
    };
    await fn({ bridge, page, agent, attach, dialogs, socket });
    assert.deepEqual(dialogs, [], 'no agent text ever ran as script');
    assert.deepEqual(page.problems.filter((p) => !/Failed to load resource/.test(p)), []);
  } catch (e) {
    try {
      e.message += `\n--- page:\n${(await ctx.page?.locator('body').innerText({ timeout: 2_000 }))?.slice(0, 3_000)}`;
      e.message += `\n--- bridge stderr:\n${ctx.bridge?.stderr.slice(-3_000)}`;
    } catch {}
    throw e;
  } finally {
    await scope.close();
  }
}

/** From the Panes screen, opens Agents and waits for agent `name` to read `Status: up`. */
async function openAgents(page, name = 'ops') {
  await openMore(page, 'Agents');
  await page.getByRole('heading', { name: 'Agents', exact: true }).waitFor();
  const section = page.getByRole('region', { name, exact: true });
  await section.getByText('Status: up', { exact: true }).waitFor({ timeout: 20_000 });
  return section;
}

/** Opens conversation `title` from the Agents view. */
async function openConversation(page, title) {
  await page.getByRole('link', { name: title, exact: true }).click();
  await page.getByRole('heading', { name: title, exact: true, level: 1 }).waitFor();
  return page.getByRole('list', { name: 'Conversation', exact: true });
}

/** The agent's writes to `path` once one has come. */
function written(agent, path) {
  return waitFor(`a write to ${path} to reach the agent`, () => agent.writes.filter((w) => w.path === path).at(-1),
    { timeout: 10_000 });
}

const now = Date.now();
const noSidewaysScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('Agents lists the agent and its conversations newest first; agent text is shown as text', T,
  () => withAgent({
    conversations: [
      conversation('old', { title: 'Old chat', updated: now - 3_600_000, items: [{ id: 'o1', text: 'old' }] }),
      conversation('c1', {
        title: 'Release notes',
        state: 'working',
        updated: now,
        items: [
          { id: 'i1', kind: 'text', role: 'user', text: 'Summarize the release' },
          { id: 'i2', kind: 'text', role: 'agent', text: HOSTILE },
          { id: 'i3', kind: 'markdown', role: 'agent', text: '# Plan\n- **build** it\n- ship `v2`\n\n<b>raw</b> <img src=x onerror=alert(2)> [docs](https://example.com/docs) [bad](javascript:alert(3))' },
          { id: 'i4', kind: 'link', role: 'agent', url: 'javascript:alert(4)' },
          { id: 'i5', kind: 'link', role: 'agent', url: 'http://example.com/plain' },
          { id: 'i6', kind: 'link', role: 'agent', url: 'https://example.com/safe' },
          // Addresses that start like a safe one but are not: user info, an invisible character,
          // upper case, no host, over 2,048 characters.
          { id: 'i6a', kind: 'link', role: 'agent', url: 'https://user:pw@example.com/x' },
          { id: 'i6b', kind: 'link', role: 'agent', url: 'https://exa\u200bmple.com/' },
          { id: 'i6c', kind: 'link', role: 'agent', url: 'HTTPS://example.com/upper' },
          { id: 'i6d', kind: 'link', role: 'agent', url: 'https://' },
          { id: 'i6e', kind: 'link', role: 'agent', url: `https://example.com/${'a'.repeat(2100)}` },
          { id: 'i7', kind: 'code', role: 'agent', text: 'fn main() { println!("<b>hi</b>"); }' },
          { id: 'i8', kind: 'diff', role: 'agent', text: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old line\n+new line' },
          { id: 'i9', kind: 'tool', role: 'tool', summary: 'cargo test', output: 'test result: ok' },
        ],
      }),
    ],
    starters: [{ id: 'deploy', label: 'Start a deploy' }],
  }, async ({ page, attach }) => {
    await attach();
    const section = await openAgents(page);
    await section.getByText('testbox', { exact: true }).waitFor();
    assert.deepEqual(await section.locator('a.pane-link').allTextContents(), ['Release notes', 'Old chat']);
    await section.getByRole('button', { name: 'Start a deploy', exact: true }).waitFor();
    const items = await openConversation(page, 'Release notes');

    // Raw HTML stays characters: the literal text is there, and no element was made of it.
    await items.getByText(HOSTILE, { exact: true }).waitFor();
    await items.getByText(/<b>raw<\/b> <img src=x onerror=alert\(2\)>/).waitFor();
    await items.getByText('fn main() { println!("<b>hi</b>"); }', { exact: true }).waitFor();
    for (const tag of ['img', 'b', 'script', 'iframe']) {
      assert.equal(await page.locator(`main ${tag}`).count(), 0, `no <${tag}> element from agent text`);
    }
    // Markdown is styled with elements the app builds.
    await items.getByRole('heading', { name: 'Plan', exact: true }).waitFor();
    assert.equal(await items.locator('strong', { hasText: 'build' }).count(), 1);
    assert.equal(await items.locator('code', { hasText: 'v2' }).count(), 1);

    // Only https:// opens: a javascript: or http:// address is never a link.
    assert.equal(await page.locator('a[href^="javascript:"]').count(), 0);
    assert.equal(await page.locator('a[href^="http:"]').count(), 0);
    assert.deepEqual(await items.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href'))),
      ['https://example.com/docs', 'https://example.com/safe'], 'only the two https:// links open');
    for (const name of ['https://example.com/safe', 'docs']) {
      const a = items.getByRole('link', { name, exact: true });
      await a.waitFor();
      assert.match(await a.getAttribute('href'), /^https:\/\/example\.com\//);
      assert.equal(await a.getAttribute('rel'), 'noopener noreferrer');
      assert.equal(await a.getAttribute('target'), '_blank');
    }
    // The diff's lines are marked (and coloured by them), the tool call folds its output.
    assert.equal(await items.locator('.item-diff .add').textContent(), '+new line');
    assert.equal(await items.locator('.item-diff .del').textContent(), '-old line');
    assert.ok(await noSidewaysScroll(page), 'a 2,100-character address does not widen the page');
    const output = items.getByText('test result: ok', { exact: true });
    assert.equal(await output.isVisible(), false, 'a tool call starts folded');
    await items.getByText('cargo test', { exact: true }).click();
    await output.waitFor();
  }));

test('a question is a card in its conversation and a tap answers it; the agent gets the answer', T,
  () => withAgent({
    conversations: [conversation('c1', {
      title: 'Deploy web',
      questions: [{
        id: 'q1', title: 'Deploy to production?', reason: 'The build passed.',
        items: [{ id: 'x', kind: 'code', text: 'kubectl rollout restart deploy/web' }],
        options: [{ id: 'yes', label: 'Deploy' }, { id: 'no', label: 'Cancel' }],
      }],
    })],
  }, async ({ page, agent, attach }) => {
    await attach();
    // The question is a card in Cards too, which links to its conversation.
    await page.getByRole('link', { name: 'Cards', exact: true }).click();
    const card = page.locator('article', { has: page.getByRole('heading', { name: 'Deploy to production?', exact: true }) });
    // Who asks is said by the bridge, not by the question's words.
    await card.getByText(/^Asked by the durable agent \S+$/).waitFor({ timeout: 20_000 });
    await card.getByRole('link', { name: 'Open the conversation', exact: true }).click({ timeout: 20_000 });
    await page.getByRole('heading', { name: 'Deploy web', exact: true, level: 1 }).waitFor();
    const waiting = page.getByRole('region', { name: 'Waiting for your answer', exact: true });
    await waiting.getByRole('heading', { name: 'Deploy to production?', exact: true }).waitFor({ timeout: 20_000 });
    await waiting.getByText('kubectl rollout restart deploy/web', { exact: true }).waitFor();
    assert.equal(await waiting.getByText('Text shortened', { exact: true }).count(), 0, 'nothing was shortened');
    await waiting.getByRole('button', { name: 'Deploy', exact: true }).click();
    const answer = await written(agent, '/v1/conversations/c1/answer');
    assert.deepEqual(answer.body, { question: 'q1', option: 'yes' });
    await waiting.waitFor({ state: 'hidden', timeout: 15_000 });
    await page.getByText('You said: Deploy', { exact: true }).waitFor({ timeout: 15_000 });
    await page.getByText(/^Answered yes by phone /).waitFor({ timeout: 15_000 });

    // A question asked later (the agent opens one when told `ask …`) shows up the same way.
    await page.getByLabel('Message to the agent', { exact: true }).fill('ask Roll back?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await waiting.getByRole('heading', { name: 'Roll back?', exact: true }).waitFor({ timeout: 20_000 });
    await waiting.getByRole('button', { name: 'No', exact: true }).click();
    const second = await waitFor('the second answer', () =>
      agent.writes.find((w) => w.path === '/v1/conversations/c1/answer' && w.body.option === 'no'));
    assert.match(second.body.question, /^q\d+$/);
    await waiting.waitFor({ state: 'hidden', timeout: 15_000 });
  }));

// The `Text shortened` mark comes from the bridge's sanitizer (a question whose title or reason
// it changed: an invisible character removed, a title cut to 512 bytes).
test('a question whose title held a zero-width space, or was over the limit, says Text shortened',
  T,
  () => withAgent({
    conversations: [conversation('c1', {
      title: 'Shortened',
      questions: [
        { id: 'q1', title: 'Deploy\u200b now?', options: [{ id: 'yes', label: 'Yes' }] },
        { id: 'q2', title: `Long ${'x'.repeat(600)}`, options: [{ id: 'yes', label: 'Yes' }] },
      ],
    })],
  }, async ({ page, attach }) => {
    await attach();
    await openAgents(page);
    await openConversation(page, 'Shortened');
    const waiting = page.getByRole('region', { name: 'Waiting for your answer', exact: true });
    const first = waiting.locator('article', { has: page.getByRole('heading', { name: 'Deploy now?', exact: true }) });
    await first.getByText('Text shortened', { exact: true }).waitFor({ timeout: 20_000 });
    const second = waiting.locator('article', { has: page.getByRole('heading', { name: /^Long x+…$/ }) });
    await second.getByText('Text shortened', { exact: true }).waitFor({ timeout: 20_000 });
  }));

test('send, stop, an action, rename, close and reopen from a full device reach the agent', T,
  () => withAgent({
    conversations: [conversation('c1', { title: 'Chat', state: 'working', actions: [{ id: 'retry', label: 'Retry' }] })],
  }, async ({ page, agent, attach }) => {
    await attach();
    await openAgents(page);
    const items = await openConversation(page, 'Chat');
    const button = (name) => page.getByRole('button', { name, exact: true });

    await page.getByLabel('Message to the agent', { exact: true }).fill('hello <i>agent</i>');
    await button('Send').click();
    assert.deepEqual((await written(agent, '/v1/conversations/c1/send')).body, { text: 'hello <i>agent</i>' });
    await items.getByText('hello <i>agent</i>', { exact: true }).waitFor({ timeout: 15_000 });
    assert.equal(await page.getByLabel('Message to the agent', { exact: true }).inputValue(), '', 'the composer is emptied');

    await button('Stop').click();
    await written(agent, '/v1/conversations/c1/abort');
    await button('Stop').waitFor({ state: 'detached', timeout: 15_000 }); // the turn ended: idle

    await button('Retry').click();
    assert.deepEqual((await written(agent, '/v1/conversations/c1/action')).body, { action: 'retry' });

    await button('Rename').click();
    await page.getByLabel('New title', { exact: true }).fill('Renamed chat');
    await button('Save').click();
    assert.deepEqual((await written(agent, '/v1/conversations/c1/rename')).body, { title: 'Renamed chat' });
    await page.getByRole('heading', { name: 'Renamed chat', level: 1 }).waitFor({ timeout: 15_000 });

    await button('Close').click();
    await written(agent, '/v1/conversations/c1/close');
    await button('Reopen').click({ timeout: 15_000 });
    await written(agent, '/v1/conversations/c1/reopen');
    await button('Close').waitFor({ timeout: 15_000 });

    // Receipts say who did what, never what was typed.
    const receipts = page.locator('.receipts');
    for (const words of ['Sent by phone', 'Stopped by phone', 'Tapped retry by phone', 'Renamed by phone', 'Closed by phone', 'Reopened by phone']) {
      await receipts.getByText(new RegExp(`^${words} `)).waitFor({ timeout: 15_000 });
    }
    assert.doesNotMatch(await receipts.innerText(), /hello|Renamed chat/);
  }));

test('a read device sees the conversation and its question but no write button', T,
  () => withAgent({
    conversations: [conversation('c1', {
      title: 'Watched',
      state: 'working',
      items: [{ id: 'i1', kind: 'text', role: 'agent', text: 'Working on it' }],
      actions: [{ id: 'retry', label: 'Retry' }],
      questions: [{ id: 'q1', title: 'Ship it?', options: [{ id: 'yes', label: 'Ship' }] }],
    })],
    starters: [{ id: 'deploy', label: 'Start a deploy' }],
  }, async ({ page, attach }) => {
    await attach();
    const section = await openAgents(page);
    assert.equal(await section.getByRole('button').count(), 0, 'no starter for a read device');
    const items = await openConversation(page, 'Watched');
    await items.getByText('Working on it', { exact: true }).waitFor();
    const waiting = page.getByRole('region', { name: 'Waiting for your answer', exact: true });
    await waiting.getByRole('heading', { name: 'Ship it?', exact: true }).waitFor({ timeout: 20_000 });
    await waiting.getByText(/^Answers: Ship/).waitFor();
    assert.equal(await page.locator('main').getByRole('button').count(), 0, 'no write button at all');
    assert.equal(await page.locator('main textarea, main input').count(), 0, 'no composer');
  }, { tier: 'read' }));

test('no agent: the empty state says how to attach one; a starter opens its conversation; a stopped agent shows its status', T,
  () => withAgent({
    conversations: [],
    starters: [{ id: 'deploy', label: 'Start a deploy' }],
  }, async ({ page, agent, attach, socket }) => {
    await openMore(page, 'Agents');
    await page.getByText('No durable agents attached \u2014 collie durable attach NAME --socket PATH', { exact: true }).waitFor();
    await attach();
    const section = page.getByRole('region', { name: 'ops', exact: true });
    await section.getByText('Status: up', { exact: true }).waitFor({ timeout: 20_000 });
    await section.getByText('No conversations.', { exact: true }).waitFor();

    // The socket's folder opened to the group: the path is no longer private, and the phone says
    // so (the bridge reads a failing agent at most once per 10 s, hence the long waits).
    await chmod(path.dirname(socket), 0o750);
    await section.getByText(new RegExp(`^Status: not private: ${escape(path.dirname(socket))} must be this user's and mode 0700`))
      .waitFor({ timeout: 30_000 });
    assert.ok(await noSidewaysScroll(page), 'a long status wraps');
    await chmod(path.dirname(socket), 0o700);
    await section.getByText('Status: up', { exact: true }).waitFor({ timeout: 30_000 });

    await section.getByRole('button', { name: 'Start a deploy', exact: true }).click();
    await written(agent, '/v1/starters/deploy');
    await page.getByRole('heading', { name: 'Deploy', exact: true, level: 1 }).waitFor({ timeout: 15_000 });
    await page.getByText('Starting a deploy of main to production.', { exact: true }).waitFor({ timeout: 15_000 });

    // The agent stops (its socket goes away): a send is refused in the bridge's words, and the
    // Agents view says why.
    await agent.stop();
    await page.getByLabel('Message to the agent', { exact: true }).fill('anyone there?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Not sent: durable agent unreachable.' }).waitFor({ timeout: 15_000 });
    assert.equal(await page.getByLabel('Message to the agent', { exact: true }).inputValue(), 'anyone there?',
      'a refused text stays in the composer');
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await section.getByText(`Status: no socket at ${socket}`, { exact: true }).waitFor({ timeout: 30_000 });

    // The view reads the agents every 2 s while open, and nothing reads them once it is left.
    const reads = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/api/durable') reads.push(Date.now());
    });
    await waitFor('three reads of /api/durable', () => reads.length >= 3, { timeout: 10_000 });
    const gaps = reads.slice(1).map((t, i) => t - reads[i]);
    assert.ok(gaps.every((g) => g >= 1_500 && g <= 4_000), `reads 2 s apart: ${gaps}`);
    await page.getByRole('link', { name: 'Back', exact: true }).click();
    await page.getByRole('heading', { name: 'Panes', exact: true }).waitFor();
    const left = reads.length;
    // Only a span of time can show that nothing happens: two and a half poll periods.
    await sleep(5_000);
    assert.equal(reads.length, left, 'no read of /api/durable once the view is left');
  }));

test('a crew member\u2019s agent shows on the lead\u2019s phone, and a send from there reaches it', T, async () => {
  const scope = new Scope();
  let ctx = {};
  try {
    ctx = await crewSetup(scope, browser);
    const { lead, member, page } = ctx;
    const socket = path.join(member.dir, 'agent', 'app.sock');
    const agent = scope.add(await NodeAgent.start(socket, {
      conversations: [conversation('c1', { title: 'On the member', items: [{ id: 'i1', text: 'hello from web-1' }] })],
    }), () => agent.stop());
    await member.cliOk(['durable', 'attach', 'ops', '--socket', socket]);
    await pairInApp(page, lead);
    await openMore(page, 'Agents');
    const section = page.getByRole('region', { name: 'ops', exact: true });
    await section.getByText(MEMBER, { exact: true }).waitFor({ timeout: 20_000 });
    await section.getByText('Status: up', { exact: true }).waitFor({ timeout: 20_000 });
    const items = await openConversation(page, 'On the member');
    await items.getByText('hello from web-1', { exact: true }).waitFor();
    await page.getByLabel('Message to the agent', { exact: true }).fill('through the lead');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    assert.deepEqual((await written(agent, '/v1/conversations/c1/send')).body, { text: 'through the lead' });
    await items.getByText('through the lead', { exact: true }).waitFor({ timeout: 15_000 });
    await page.locator('.receipts').getByText(/^Sent by phone /).waitFor({ timeout: 15_000 });
  } catch (e) {
    try {
      e.message += `\n--- page:\n${(await ctx.page?.locator('body').innerText({ timeout: 2_000 }))?.slice(0, 3_000)}`;
      e.message += `\n--- lead stderr:\n${ctx.lead?.stderr.slice(-3_000)}\n--- member stderr:\n${ctx.member?.stderr.slice(-3_000)}`;
    } catch {}
    throw e;
  } finally {
    await scope.close();
  }
});

/**
 * The project's reference agent (`collie-durable-example`, built beside `collie`, or
 * `$COLLIE_DURABLE_EXAMPLE`) serving on `socket`, stopped with SIGTERM (it removes its socket);
 * null when it is not built.
 */
async function referenceAgent(socket) {
  const bin = process.env.COLLIE_DURABLE_EXAMPLE || path.join(path.dirname(COLLIE_BIN), 'collie-durable-example');
  if (!existsSync(bin)) return null;
  const child = spawn(bin, ['--socket', socket], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-5_000);
  });
  const lines = createInterface({ input: child.stdout });
  const ready = await bounded(Promise.race([
    new Promise((resolve) => lines.once('line', (l) => resolve(l.startsWith('listening on')))),
    exited.then(() => false),
  ]), 15_000, () => false);
  lines.on('line', () => {});
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    if (!(await bounded(exited.then(() => true), 5_000, () => false))) child.kill('SIGKILL');
  };
  if (!ready) {
    await stop();
    throw new Error(`${bin} did not start: ${stderr}`);
  }
  return { stop, kind: 'reference' };
}

// The same walk through the phone against the project's reference agent when it is built (the
// real thing users copy), else against the Node agent, which does the same on these writes. Only
// the phone is looked at: what the agent says back shows it got each tap.
test('the deploy starter, its question, a send, an ask, rename, close and reopen, end to end', T, async (t) => {
  const scope = new Scope();
  let ctx = {};
  try {
    const bridge = scope.add(await Bridge.start({ tmux: false }), () => bridge.close());
    const socket = path.join(bridge.dir, 'agent', 'app.sock');
    const agent = (await referenceAgent(socket))
      || await NodeAgent.start(socket, { starters: [{ id: 'deploy', label: 'Start a deploy' }] });
    scope.add(agent, () => agent.stop());
    t.diagnostic(agent.kind === 'reference' ? 'against the reference agent' : 'against the Node agent (the reference agent is not built)');
    const { context, page } = await openPage(browser);
    scope.add(null, () => context.close());
    ctx = { bridge, page };
    await pairInApp(page, bridge);
    await bridge.cliOk(['durable', 'attach', 'example', '--socket', socket]);
    const section = await openAgents(page, 'example');
    await section.getByRole('button', { name: 'Start a deploy', exact: true }).click();
    await page.getByRole('heading', { name: 'Deploy', exact: true, level: 1 }).waitFor({ timeout: 15_000 });
    const items = page.getByRole('list', { name: 'Conversation', exact: true });
    const waiting = page.getByRole('region', { name: 'Waiting for your answer', exact: true });
    await waiting.getByText('deploy --env production', { exact: true }).waitFor({ timeout: 20_000 });
    await waiting.getByRole('button', { name: 'Cancel', exact: true }).click();
    await items.getByText('Cancelled', { exact: true }).waitFor({ timeout: 15_000 });
    await waiting.waitFor({ state: 'hidden', timeout: 15_000 });

    const text = page.getByLabel('Message to the agent', { exact: true });
    await text.fill('ask Roll back?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await items.getByText('Got 14 bytes.', { exact: true }).waitFor({ timeout: 15_000 });
    await waiting.getByRole('button', { name: 'No', exact: true }).click({ timeout: 20_000 });
    await items.getByText('You said: No', { exact: true }).waitFor({ timeout: 15_000 });

    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await items.getByText('Retrying the last step.', { exact: true }).waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Rename', exact: true }).click();
    await page.getByLabel('New title', { exact: true }).fill('Deploy, not today');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'Deploy, not today', exact: true, level: 1 }).waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    await page.getByRole('button', { name: 'Reopen', exact: true }).click({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Close', exact: true }).waitFor({ timeout: 15_000 });
    const receipts = page.locator('.receipts');
    for (const words of ['Started deploy by phone', 'Answered no by phone', 'Sent by phone', 'Reopened by phone']) {
      await receipts.getByText(new RegExp(`^${words} `)).first().waitFor({ timeout: 15_000 });
    }
  } catch (e) {
    try {
      e.message += `\n--- page:\n${(await ctx.page?.locator('body').innerText({ timeout: 2_000 }))?.slice(0, 3_000)}`;
      e.message += `\n--- bridge stderr:\n${ctx.bridge?.stderr.slice(-3_000)}`;
    } catch {}
    throw e;
  } finally {
    await scope.close();
  }
});

/** Runs openssl with `args` in `dir`; rejects with its stderr. */
function openssl(dir, args) {
  return new Promise((resolve, reject) => {
    const child = spawn('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`openssl ${args[0]}: ${err}`))));
  });
}

test('an HTTPS agent that refuses the token is shown as "refuses the token"', T, async () => {
  const scope = new Scope();
  let ctx = {};
  try {
    const token = 'a1'.repeat(32);
    const bridge = scope.add(await Bridge.start({ tmux: false, env: { AGENT_TOKEN: token } }), () => bridge.close());
    // A test CA and a certificate for localhost signed by it (made here with openssl), and an
    // agent on loopback HTTPS that answers every request 401 — it holds another token.
    const dir = path.join(bridge.dir, 'tls');
    await mkdir(dir, { mode: 0o700 });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    await openssl(dir, ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=collie web-test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
    await openssl(dir, ['req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost']);
    await writeFile(path.join(dir, 'leaf.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
    await openssl(dir, ['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', 'leaf.pem', '-days', '1', '-extfile', 'leaf.ext']);
    const seen = [];
    const server = https.createServer({
      key: await readFile(path.join(dir, 'leaf.key')),
      cert: await readFile(path.join(dir, 'leaf.pem')),
    }, (req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(401, { 'collie-wire': '1', 'content-type': 'application/json' });
      res.end('{"error":"bad token"}');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    scope.add(server, () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }));
    const { context, page } = await openPage(browser);
    scope.add(null, () => context.close());
    ctx = { bridge, page };
    await pairInApp(page, bridge);
    await bridge.cliOk(['durable', 'attach', 'remote', '--url', `https://localhost:${server.address().port}`,
      '--token-env', 'AGENT_TOKEN', '--ca-file', path.join(dir, 'ca.pem')]);
    await openMore(page, 'Agents');
    const section = page.getByRole('region', { name: 'remote', exact: true });
    await section.getByText('Status: refuses the token', { exact: true }).waitFor({ timeout: 20_000 });
    assert.equal(seen[0], `Bearer ${token}`, 'the bridge sent its token');
    assert.doesNotMatch(await page.locator('body').innerText(), new RegExp(token), 'the phone never shows the token');
  } catch (e) {
    try {
      e.message += `\n--- page:\n${(await ctx.page?.locator('body').innerText({ timeout: 2_000 }))?.slice(0, 3_000)}`;
      e.message += `\n--- bridge stderr:\n${ctx.bridge?.stderr.slice(-3_000)}`;
    } catch {}
    throw e;
  } finally {
    await scope.close();
  }
});

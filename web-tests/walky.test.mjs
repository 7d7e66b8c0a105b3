// Walky-talky on the phone (SPEC §3.3, §9; docs/guide/phone-app.md, "Walky cards" and "Messages"):
// real bridges, real panes, and the real `collie walky send` typed into a tmux pane (so the sender is
// found from tmux's own TMUX/TMUX_PANE, as for an agent). The phone shows a card for a header only
// when the log of the pane's machine holds its id; a header that is merely printed stays plain text,
// marked "no log entry on this machine"; bodies are masked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  session, crewSession, pairInApp, openPane, waitFor, waitScreen, screenLines, COLLIE_BIN, MEMBER, WINDOW, useBrowser, openMore } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 120_000 };
const NO_LOG = 'no log entry on this machine';
/** The accessible name of a card's button on the screen starts so. */
const CHIP = /^Walky message from /;

const noCsp = (page) => assert.deepEqual(page.problems.filter((p) => p.includes('CSP')), []);

/**
 * Starts a hosted pane `name` on `bridge` running a program that reads its input without echoing
 * it back (as an agent does; a pane at a shell prompt refuses walky messages, SPEC §9); returns
 * `{pane, token}`.
 */
async function hostedPane(bridge, name) {
  const made = JSON.parse(await bridge.cliOk([
    'panes', 'new', '--json', '--name', name, '--', 'sh', '-c', 'cat >/dev/null',
  ]));
  assert.ok(made.pane && made.token, `panes new --json: ${JSON.stringify(made)}`);
  return made;
}

/** The bridge's tmux pane with wrapped lines joined. */
async function tmuxText(bridge) {
  return (await bridge.tmux.run(['capture-pane', '-p', '-J', '-t', 'main:0'])).stdout;
}

/** Types `line` into the bridge's tmux pane, then Enter, as a person or an agent would. */
async function typeInTmux(bridge, line) {
  const typed = await bridge.tmux.run(['send-keys', '-t', 'main:0', '-l', line]);
  assert.equal(typed.code, 0, typed.stderr);
  await bridge.tmux.sendKeys('Enter');
}

let marks = 0;

/**
 * Runs `collie walky send TO TEXT` inside the bridge's tmux pane (TEXT in single quotes) and
 * returns the message id once it was delivered.
 */
async function walkySend(bridge, to, text) {
  const marker = `SENT${++marks}`;
  const env = bridge.env;
  await typeInTmux(bridge, `COLLIE_STATE_DIR=${env.COLLIE_STATE_DIR} COLLIE_CONFIG_DIR=${env.COLLIE_CONFIG_DIR} `
    + `${COLLIE_BIN} walky send ${to} '${text}'; echo ${marker}=$?`);
  const out = await waitFor(`${marker} to finish`, async () => {
    const s = await tmuxText(bridge);
    return new RegExp(`${marker}=\\d+`).test(s) ? s : null;
  }, { timeout: 20_000, every: 100 });
  // What this send printed: after its own command line (`…; echo SENTn=$?`).
  const printed = out.split(`${marker}=$?`).pop();
  assert.match(printed, new RegExp(`${marker}=0`), `the send failed:\n${out}`);
  const id = /delivered ([0-9a-f]{32}) to /.exec(printed)?.[1];
  assert.ok(id, `no delivered line:\n${out}`);
  return id;
}

/** Records the page's card lookups (`GET /api/walky/<id>…`). */
function recordLookups(page) {
  const urls = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (/^\/api\/walky\/[^/]+$/.test(u.pathname)) urls.push(u.pathname + u.search);
  });
  return urls;
}

/** Opens a pane from the Panes screen by its name (within `scope`, a locator, if given). */
async function openNamed(page, name, scope = page) {
  await scope.getByRole('link', { name, exact: true }).click({ timeout: 15_000 });
  await page.getByRole('heading', { name, exact: true }).waitFor();
  await page.getByLabel('Screen', { exact: true }).waitFor();
}

/** Checks that `mark` sits on Screen row `row` (the grid is unchanged: marks are laid over it). */
async function assertOnRow(page, mark, row) {
  const [box, pre] = [await mark.boundingBox(), await page.getByLabel('Screen', { exact: true }).boundingBox()];
  const lh = await page.getByLabel('Screen', { exact: true })
    .evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
  const top = pre.y + row * lh;
  const middle = box.y + box.height / 2;
  assert.ok(middle > top && middle < top + lh, `the mark's middle is at y=${middle}, row ${row} spans ${top}..${top + lh}`);
}

test('walky: a delivered message shows a card on the receiving pane, its body behind a tap', T, () =>
  session(browser, 'walky-card', async ({ page, bridge }) => {
    const lookups = recordLookups(page);
    const reviewer = await hostedPane(bridge, 'reviewer');
    await pairInApp(page, bridge);
    const id = await walkySend(bridge, `${reviewer.pane}#${reviewer.token}`, 'hello phone');

    await openNamed(page, 'reviewer');
    const isHeader = (l) => l.includes(`[walky ${id} from `);
    const lines = await waitScreen(page, 'the walky header', isHeader);
    const header = lines.find(isHeader);
    assert.ok(!lines.join('\n').includes('hello phone'), 'the body is never typed into the pane');

    const chip = page.getByRole('button', { name: CHIP });
    await chip.waitFor({ timeout: 10_000 });
    assert.match(await chip.getAttribute('aria-label'), /^Walky message from work: delivered/);
    // The pane's text is untouched (the header row reads as the pane shows it), the card on its row.
    const now = await screenLines(page);
    assert.ok(now.includes(header), `the marks leave the screen's text alone:\n${now.join('\n')}`);
    await assertOnRow(page, chip, now.indexOf(header));
    assert.equal(await page.getByText(NO_LOG).count(), 0);

    await chip.click();
    const dialog = page.getByRole('dialog', { name: 'Walky message' });
    await dialog.waitFor();
    await dialog.getByText('hello phone', { exact: true }).waitFor();
    const text = await dialog.innerText();
    assert.ok(text.includes(WINDOW), `the sender's name (its tmux window): ${text}`);
    assert.ok(text.includes(`to ${bridge.name}/${reviewer.pane}#${reviewer.token}`), `the receiver: ${text}`);
    assert.match(text, /delivered/);
    await dialog.getByRole('button', { name: 'Hide message' }).click();
    await dialog.getByText('hello phone', { exact: true }).waitFor({ state: 'hidden' });
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });

    // Looked up once, in the log of the pane's machine.
    assert.deepEqual(lookups, [`/api/walky/${id}?machine=${bridge.name}`]);
    noCsp(page);
  }));

test('walky: a header that is merely printed stays plain text, marked "no log entry on this machine"', T, () =>
  session(browser, 'walky-fake', async ({ page, bridge }) => {
    const lookups = recordLookups(page);
    const fake = '0123456789abcdef0123456789abcdef';
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await typeInTmux(bridge,
      `printf '[walky %s from x/y#abcd "z"] read it: collie walky inbox %s\\n' ${fake} ${fake}`);
    const isHeader = (l) => l.startsWith(`[walky ${fake} from x/y#abcd`);
    const header = (await waitScreen(page, 'the printed header', isHeader)).find(isHeader);

    const marker = page.getByText(NO_LOG, { exact: true });
    await marker.waitFor({ timeout: 10_000 });
    const lines = await screenLines(page);
    assert.ok(lines.includes(header), `the line stays as printed:\n${lines.join('\n')}`);
    await assertOnRow(page, marker, lines.indexOf(header));
    assert.equal(await page.getByRole('button', { name: CHIP }).count(), 0, 'no card for a printed header');

    // More output moves the header up the screen: the marker follows it without asking again.
    await typeInTmux(bridge, 'echo one; echo two');
    await waitScreen(page, 'the output line `two`', (l) => l.trim() === 'two');
    const now = (await screenLines(page)).indexOf(header);
    assert.ok(now >= 0, 'the header is still on the screen');
    await marker.waitFor();
    await assertOnRow(page, marker, now);
    assert.deepEqual(lookups, [`/api/walky/${fake}?machine=${bridge.name}`], 'one lookup per machine and id');
    noCsp(page);
  }));

test('walky: the Messages view lists the bridge\'s messages, newest first, each expandable to its body', T, () =>
  session(browser, 'walky-messages', async ({ page, bridge }) => {
    const reviewer = await hostedPane(bridge, 'reviewer');
    const to = `${reviewer.pane}#${reviewer.token}`;
    const first = await walkySend(bridge, to, 'first note');
    const second = await walkySend(bridge, to, 'second note');
    assert.notEqual(first, second);
    await pairInApp(page, bridge);
    await openMore(page, 'Messages');
    await page.getByRole('heading', { name: 'Messages', exact: true }).waitFor();

    const cards = page.getByRole('article');
    await waitFor('two cards', async () => (await cards.count()) === 2);
    // One card per message (sent and received here are one message), the newest first.
    const texts = await cards.allInnerTexts();
    assert.ok(texts.every((t) => t.includes(WINDOW) && t.includes(`${bridge.name}/${to}`)), texts.join('\n--\n'));
    assert.ok(texts.every((t) => /delivered/.test(t)), texts.join('\n--\n'));
    assert.ok(!(await page.locator('body').innerText()).includes('note'), 'bodies are folded away');
    await cards.nth(0).getByRole('button', { name: 'Show message', exact: true }).click();
    await cards.nth(0).getByText('second note', { exact: true }).waitFor();
    await cards.nth(1).getByRole('button', { name: 'Show message', exact: true }).click();
    await cards.nth(1).getByText('first note', { exact: true }).waitFor();
    noCsp(page);
  }));

test('walky: a body holding a secret is shown masked, on the card and in Messages', T, () =>
  session(browser, 'walky-mask', async ({ page, bridge }) => {
    const raw = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    const masked = `ghp_a${'•'.repeat(35)}`;
    const reviewer = await hostedPane(bridge, 'reviewer');
    await pairInApp(page, bridge);
    const id = await walkySend(bridge, `${reviewer.pane}#${reviewer.token}`, `push with ${raw} please`);

    await openNamed(page, 'reviewer');
    await waitScreen(page, 'the walky header', (l) => l.includes(`[walky ${id} from `));
    await page.getByRole('button', { name: CHIP }).click({ timeout: 10_000 });
    const dialog = page.getByRole('dialog', { name: 'Walky message' });
    await dialog.getByText(`push with ${masked} please`, { exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(raw), 'the raw token is nowhere in the DOM');
    await dialog.getByRole('button', { name: 'Close' }).click();

    await page.goto(`${bridge.url}/#/walky`);
    await page.getByRole('heading', { name: 'Messages', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Show message', exact: true }).click();
    await page.getByText(`push with ${masked} please`, { exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(raw), 'the raw token is nowhere in the DOM');
    noCsp(page);
  }));

test('crew: a message to a member\'s pane shows its card on the lead\'s phone, from the member\'s log', T, () =>
  crewSession(browser, 'walky-crew', async ({ page, lead, member }) => {
    const lookups = recordLookups(page);
    // The member's agent: a tmux window running a program that reads its input (its `work`
    // window sits at a shell prompt, which refuses messages).
    const INBOX = 'inbox';
    const made = await member.tmux.run(['new-window', '-d', '-n', INBOX, 'cat >/dev/null']);
    assert.equal(made.code, 0, made.stderr);
    const to = await waitFor(`${MEMBER}'s agent pane in walky who`, async () => {
      const who = JSON.parse(await lead.cliOk(['walky', 'who', '--json']));
      return who.panes.find((p) => p.machine === MEMBER && p.name === INBOX && !p.at_shell)?.address;
    });
    const id = await walkySend(lead, to, 'hello from the lead');
    await pairInApp(page, lead);
    const group = page.getByRole('region', { name: MEMBER, exact: true });
    await group.getByRole('link', { name: INBOX, exact: true }).waitFor({ timeout: 15_000 });
    await openNamed(page, INBOX, group);
    await waitScreen(page, 'the walky header', (l) => l.includes(`[walky ${id} from ${lead.name}/`));
    await page.getByRole('button', { name: CHIP }).click({ timeout: 10_000 });
    await page.getByRole('dialog', { name: 'Walky message' }).getByText('hello from the lead', { exact: true }).waitFor();
    assert.deepEqual(lookups, [`/api/walky/${id}?machine=${MEMBER}`], 'asked the member\'s log through the lead');
    noCsp(page);
  }));

test('walky: headers are found where the terminal wrapped them, and one card per message is listed', T, () =>
  session(browser, 'walky-units', async ({ page, bridge }) => {
    // The app's own modules, as the bridge serves them, run in the page.
    await page.goto(`${bridge.url}/`);
    const got = await page.evaluate(async () => {
      const { findHeaders } = await import('/walky.js');
      const { messages } = await import('/views/walky.js');
      const id = '0123456789abcdef0123456789abcdef';
      const header = `[walky ${id} from m/p1#abcd "agent"] read it: collie walky inbox ${id}`;
      const wrap = (s, cols) => s.match(new RegExp(`.{1,${cols}}`, 'g'));
      return {
        // 20 columns: the id itself is cut over three rows.
        wrapped: findHeaders(['$ x', ...wrap(`# ${header}`, 20), '# '], 20),
        // A row that does not fill the width ends its line.
        short: findHeaders([`ab [walky ${id.slice(0, 10)}`, `${id.slice(10)} from x`], 40),
        two: findHeaders([`${header} ${header}`], 0),
        printf: findHeaders([`$ printf '[walky %s from x/y#abcd "z"]' ${id}`], 100),
        upper: findHeaders([`[walky ${id.toUpperCase()} from x`], 0),
        listed: messages([
          { id: 'a', kind: 'sent', sent_at: '2026-11-30T10:00:00Z', outcome: null, body: 'one' },
          { id: 'b', kind: 'sent', sent_at: '2026-11-30T10:05:00Z', outcome: 'rejected: walky off on x', body: 'two' },
          { id: 'a', kind: 'received', sent_at: '2026-11-30T10:00:00Z', outcome: 'delivered', body: 'one' },
          { id: 'c', kind: 'sent', sent_at: '2026-11-30T10:05:00Z', outcome: null, body: 'three' },
        ]).map((m) => [m.id, m.kinds.join('+'), m.outcome]),
      };
    });
    const id = '0123456789abcdef0123456789abcdef';
    const headerLength = `[walky ${id} from m/p1#abcd "agent"] read it: collie walky inbox ${id}`.length;
    assert.deepEqual(got.wrapped, [{ row: 1, col: 2, id }]);
    assert.deepEqual(got.short, []);
    assert.deepEqual(got.two, [{ row: 0, col: 0, id }, { row: 0, col: headerLength + 1, id }]);
    assert.deepEqual(got.printf, [], 'a printf format is not a header');
    assert.deepEqual(got.upper, [], 'ids are lower-case hex');
    assert.deepEqual(got.listed, [
      ['c', 'sent', null], // as new as b, later in the log
      ['b', 'sent', 'rejected: walky off on x'],
      ['a', 'sent+received', 'delivered'],
    ]);
  }));

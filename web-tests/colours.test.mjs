// Colours on the phone (issue 15, SPEC §5 "Colours"; decision 0043): a pane printing SGR colours
// shows coloured spans with the right computed colours on a 360×740 phone, in the light and the
// dark theme; text in a coloured run is set as text (`<b>x</b>` in red is the literal text); the
// 16-colour palettes are readable on their theme's screen background. Headless chromium against a
// real bridge and a real tmux pane.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { session, pairInApp, openPane, waitScreen, useBrowser } from './support.mjs';

const browser = useBrowser();

const T = { timeout: 90_000 };
const PHONE = { width: 360, height: 740 };

const SGR = String.raw`\033[31mRED1\033[0m \033[38;5;208mORG2\033[0m \033[38;2;10;20;30mTRU3\033[0m \033[1mB\033[0m \033[3mI\033[0m \033[4mU\033[0m \033[7mV\033[0m \033[42mG\033[0m\n`;

async function send(page, text) {
  await page.getByLabel('Type to pane', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

/** Each span of the Screen whose own text is in `texts`: its computed colours and attributes. */
function spans(page, texts) {
  return page.evaluate((want) => {
    const out = {};
    for (const s of document.querySelectorAll('pre.screen span')) {
      if (!want.includes(s.textContent) || s.children.length) continue;
      const c = getComputedStyle(s);
      out[s.textContent] = {
        color: c.color,
        background: c.backgroundColor,
        weight: c.fontWeight,
        style: c.fontStyle,
        decoration: c.textDecorationLine,
      };
    }
    return out;
  }, texts);
}

const cspProblems = (page) => page.problems.filter((p) => p.includes('CSP'));

/** Pairs the page, opens the pane and has it print `SGR`; returns once the coloured line shows. */
async function printColours(page, bridge) {
  await pairInApp(page, bridge);
  await openPane(page);
  await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
  await send(page, `printf '${SGR}'`);
  await waitScreen(page, 'the coloured line', (l) => l.startsWith('RED1 ORG2 TRU3'));
}

test('a pane printing 16, 256 and true colours, bold, italic, underline and inverse shows them (light)', T, () =>
  session(browser, 'colours-light', async ({ page, bridge }) => {
    await printColours(page, bridge);
    const got = await spans(page, ['RED1', 'ORG2', 'TRU3', 'B', 'I', 'U', 'V', 'G']);
    assert.equal(got.RED1?.color, 'rgb(179, 38, 30)', 'red from the light palette');
    // Colour 208 of the 256-colour cube is #ff8700: 2.2:1 on the light screen, so it is darkened,
    // keeping its hue, until it reads at 4.5:1 (attrs.js `readable`); the dark theme keeps it as is.
    assert.equal(got.ORG2?.color, 'rgb(179, 95, 0)', 'colour 208 of the 256-colour cube, darkened to 4.5:1');
    assert.equal(got.TRU3?.color, 'rgb(10, 20, 30)', 'true colour');
    assert.equal(got.B?.weight, '700', 'bold');
    assert.equal(got.I?.style, 'italic', 'italic');
    assert.equal(got.U?.decoration, 'underline', 'underline');
    assert.equal(got.V?.color, 'rgb(253, 253, 251)', 'inverse: the screen background as text');
    assert.equal(got.V?.background, 'rgb(27, 31, 35)', 'inverse: the text colour as background');
    assert.equal(got.G?.background, 'rgb(23, 105, 47)', 'green background from the palette');
    assert.deepEqual(cspProblems(page), [], 'colours are set without breaking the CSP');
  }, PHONE));

test('the dark theme draws the same colours from its own palette', T, () =>
  session(browser, 'colours-dark', async ({ page, bridge }) => {
    await printColours(page, bridge);
    const got = await spans(page, ['RED1', 'ORG2', 'V']);
    assert.equal(got.RED1?.color, 'rgb(255, 123, 114)', 'red from the dark palette');
    assert.equal(got.ORG2?.color, 'rgb(255, 135, 0)');
    assert.equal(got.V?.color, 'rgb(14, 17, 20)', 'inverse on the dark screen');
  }, { ...PHONE, colorScheme: 'dark' }));

test('text in a red run is set as text: `<b>x</b>` stays the literal text', T, () =>
  session(browser, 'colours-text', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    await openPane(page);
    await waitScreen(page, 'the prompt', (l) => l.startsWith('$'));
    await send(page, String.raw`printf '\033[31m<b>x</b>\033[0m\n'`);
    await waitScreen(page, 'the literal <b>x</b>', (l) => l === '<b>x</b>');
    const got = await spans(page, ['<b>x</b>']);
    assert.equal(got['<b>x</b>']?.color, 'rgb(179, 38, 30)', 'it is red');
    assert.equal(await page.locator('pre.screen b').count(), 0, 'no <b> element was made');
  }, PHONE));

test('the 16-colour palettes are readable on their theme\'s screen (contrast at least 4.5:1)', T, () =>
  session(browser, 'colours-contrast', async ({ page, bridge }) => {
    await pairInApp(page, bridge);
    for (const theme of ['light', 'dark']) {
      const ratios = await page.evaluate((t) => {
        document.documentElement.dataset.theme = t;
        const css = getComputedStyle(document.documentElement);
        const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.trim().slice(i, i + 2), 16) / 255);
        const lum = (hex) => {
          const [r, g, b] = rgb(hex).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        };
        const bg = lum(css.getPropertyValue('--term-bg'));
        return Array.from({ length: 16 }, (_, i) => {
          const fg = lum(css.getPropertyValue(`--ansi-${i}`));
          return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
        });
      }, theme);
      ratios.forEach((r, i) => assert.ok(r >= 4.5, `${theme} colour ${i}: contrast ${r.toFixed(2)}`));
    }
  }, PHONE));

test('runs are cut by display columns (wide characters take two) and the 256 colours are xterm\'s', T, () =>
  session(browser, 'colours-columns', async ({ page, bridge }) => {
    await page.goto(bridge.url);
    const got = await page.evaluate(async () => {
      const m = await import('/attrs.js');
      return {
        wide: m.pieces('a日本b•c', [[1, 4, 0], [5, 2, 1]]),
        combining: m.pieces('e\u0301xy', [[1, 1, 0]]),
        cube: [16, 196, 208, 231, 232, 255].map(m.xterm256),
        bad: [m.cssColour(256), m.cssColour('red'), m.cssColour('#12345g'), m.cssColour(-1)],
      };
    });
    assert.deepEqual(got.wide, [
      { text: 'a', style: -1 }, { text: '日本', style: 0 }, { text: 'b•', style: 1 }, { text: 'c', style: -1 },
    ]);
    assert.deepEqual(got.combining, [{ text: 'e\u0301', style: -1 }, { text: 'x', style: 0 }, { text: 'y', style: -1 }]);
    assert.deepEqual(got.cube, ['#000000', '#ff0000', '#ff8700', '#ffffff', '#080808', '#eeeeee']);
    assert.deepEqual(got.bad, [null, null, null, null], 'only 0–255 and #rrggbb are colours');
  }, PHONE));

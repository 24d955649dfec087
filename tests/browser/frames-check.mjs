// Loads `kwire read CAPTURE --format html` (every message of a capture in one file) in
// Debian's Chromium, headless, through playwright-core (no browser download), at 1400 px,
// and checks it as a person would: no console errors, nothing fetched from outside the
// file, a contents list linking every message, requests beside their responses,
// hovering a tree row marks exactly its bytes, hovering a byte marks the deepest row
// that covers it, and no horizontal scroll. Saves a screenshot.
//
// usage: node frames-check.mjs DOC.html SHOT.png
// Prints one JSON line with the findings; exits 1 when a check fails.
import { openPage } from './launch.mjs';

const [, , docFile, shot] = process.argv;
if (!docFile || !shot) {
  console.error('usage: node frames-check.mjs DOC.html SHOT.png');
  process.exit(2);
}
const failures = [];
const facts = {};

const { page, consoleErrors, outside, close } = await openPage(docFile, { width: 1400, height: 1000 });
try {
  // 1. The contents list links every message section.
  const toc = await page.evaluate(() => {
    const links = Array.from(document.querySelectorAll('nav.toc a')).map((a) => a.getAttribute('href'));
    const ids = Array.from(document.querySelectorAll('section.msg')).map((s) => '#' + s.id);
    return { links, ids };
  });
  facts.messages = toc.ids.length;
  const missing = toc.ids.filter((id) => !toc.links.includes(id));
  const dangling = toc.links.filter((l) => !toc.ids.includes(l));
  if (toc.ids.length === 0) failures.push('no message sections');
  if (missing.length || dangling.length) {
    failures.push(`contents list: sections not linked ${JSON.stringify(missing)}, links to nothing ${JSON.stringify(dangling)}`);
  }
  // 2. A request and its response side by side: same top, the response to the right.
  const pair = await page.evaluate(() => {
    const p = document.querySelector('.pair');
    if (!p) return null;
    const [a, b] = p.querySelectorAll('section.msg');
    const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
    return { top: [ra.top, rb.top], left: [ra.left, rb.left], right: ra.right,
             titles: [a.querySelector('.title').textContent, b.querySelector('.title').textContent] };
  });
  facts.pairs = await page.evaluate(() => document.querySelectorAll('.pair').length);
  if (!pair) {
    failures.push('no request/response pair');
  } else {
    if (Math.abs(pair.top[0] - pair.top[1]) > 1 || pair.left[1] < pair.right) {
      failures.push(`the pair is not side by side: ${JSON.stringify(pair)}`);
    }
    if (!/ request, correlation_id (\d+)/.test(pair.titles[0]) || !/ response, correlation_id (\d+)/.test(pair.titles[1])
        || pair.titles[0].match(/correlation_id (\d+)/)[1] !== pair.titles[1].match(/correlation_id (\d+)/)[1]) {
      failures.push(`the pair is not a request and its response: ${JSON.stringify(pair.titles)}`);
    }
  }
  // 3. Hovering a tree row of the first message marks exactly its bytes.
  const row = page.locator('#m1 .tree .row', { hasText: 'correlation_id int32' }).first();
  await row.scrollIntoViewIfNeeded();
  await row.hover();
  const span = await row.evaluate((r) => [+r.getAttribute('data-o'), +r.getAttribute('data-l')]);
  const marked = await page.evaluate(() => Array.from(document.querySelectorAll('table.grid[data-g="m1-0"] td.b'))
    .map((c, i) => (c.classList.contains('hl') ? i : -1)).filter((i) => i >= 0));
  const want = Array.from({ length: span[1] }, (_, i) => span[0] + i);
  if (JSON.stringify(marked) !== JSON.stringify(want) || span[1] !== 4) {
    failures.push(`hovering the correlation_id row marked ${JSON.stringify(marked)}, want ${JSON.stringify(want)}`);
  }
  // 4. Hovering a byte marks the deepest row covering it: byte 9 is inside correlation_id.
  await page.locator('table.grid[data-g="m1-0"] td.b').nth(9).hover();
  const rowsHl = await page.evaluate(() => Array.from(document.querySelectorAll('#m1 .tree .row.hl')).map((r) => r.textContent.trim()));
  if (rowsHl.length !== 1 || !/correlation_id int32 = \d+ \[0x0008, 4B\]/.test(rowsHl[0])) {
    failures.push(`hovering byte 9 marked rows ${JSON.stringify(rowsHl)}, want the correlation_id row`);
  }
  // 5. A cut tree row keeps its whole text as its tooltip.
  const cut = await page.evaluate(() => {
    const rows = Array.from(document.querySelectorAll('.msg .tree .row'));
    const r = rows.find((x) => x.scrollWidth > x.clientWidth + 1);
    return r ? { title: r.getAttribute('title') || '', text: r.textContent } : null;
  });
  facts.cut_rows = cut !== null;
  if (cut && !cut.title) failures.push(`a cut tree row has no tooltip: ${JSON.stringify(cut.text)}`);
  // 6. No horizontal scroll at 1400 px.
  const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  facts.widths = widths;
  if (widths[0] > widths[1]) failures.push(`horizontal scroll: page ${widths[0]} px wide in a ${widths[1]} px window`);
  // The picture: the top of the first pair, a tree row hovered.
  await page.evaluate(() => document.querySelector('.pair').scrollIntoView());
  await page.locator('.pair .tree .row', { hasText: 'correlation_id int32' }).first().hover();
  await page.screenshot({ path: shot, fullPage: false });
} finally {
  await close();
}
if (consoleErrors.length) failures.push(`console errors: ${JSON.stringify(consoleErrors)}`);
if (outside.length) failures.push(`fetched from outside the file: ${JSON.stringify(outside)}`);
console.log(JSON.stringify({ ok: failures.length === 0, failures, facts, screenshot: shot }));
process.exit(failures.length ? 1 : 0);

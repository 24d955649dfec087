// Loads one kwire HTML page in Debian's Chromium (headless, through playwright-core; no
// browser download) and checks it as a person would: no console errors, nothing fetched
// from outside the file, hovering a tree row marks exactly its bytes in the grid,
// hovering a byte marks the deepest row that covers it, clicking a row selects it.
// Saves a screenshot.
//
// usage: node page-check.mjs PAGE.html SHOT.png
// Prints one JSON line with the findings; exits 1 when a check fails.
import { openPage } from './launch.mjs';

const [, , pageFile, shot] = process.argv;
if (!pageFile || !shot) {
  console.error('usage: node page-check.mjs PAGE.html SHOT.png');
  process.exit(2);
}
const failures = [];

const { page, consoleErrors, outside, close } = await openPage(pageFile, { width: 1360, height: 1000 });
try {
  const marked = (g) => page.evaluate((g) => {
    const cells = Array.from(document.querySelectorAll(`table.grid[data-g="${g}"] td.b`));
    return cells.map((c, i) => (c.classList.contains('hl') ? i : -1)).filter((i) => i >= 0);
  }, g);
  const markedRows = (cls) => page.evaluate((cls) =>
    Array.from(document.querySelectorAll(`.tree .row.${cls}`)).map((r) => r.textContent.trim()), cls);

  // 1. Hovering a tree row marks its bytes: TopicId of the request, 16 bytes at 0x11.
  const row = page.locator('#request .tree .row', { hasText: 'TopicId uuid' }).first();
  await row.hover();
  const want = Array.from({ length: 16 }, (_, i) => 0x11 + i);
  const got = await marked('req-0');
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    failures.push(`hovering the TopicId row marked bytes ${JSON.stringify(got)}, want 0x11..0x20`);
  }
  // 2. Hovering a byte marks the deepest row covering it: 0x23 is inside TimeoutMs.
  await page.locator('table.grid[data-g="req-0"] td.b').nth(0x23).hover();
  const rowsHl = await markedRows('hl');
  if (rowsHl.length !== 1 || !/TimeoutMs int32 = 0 \[0x0022, 4B\]/.test(rowsHl[0])) {
    failures.push(`hovering byte 0x23 marked rows ${JSON.stringify(rowsHl)}, want the TimeoutMs row`);
  }
  const bytesHl = await marked('req-0');
  if (JSON.stringify(bytesHl) !== JSON.stringify([0x22, 0x23, 0x24, 0x25])) {
    failures.push(`hovering byte 0x23 marked bytes ${JSON.stringify(bytesHl)}, want 0x22..0x25`);
  }
  // 3. Clicking a response row selects it (and its bytes stay marked).
  await page.locator('#response .tree .row', { hasText: 'ErrorCode int16' }).first().click();
  const sel = await page.evaluate(() =>
    Array.from(document.querySelectorAll('table.grid[data-g="resp-0"] td.b'))
      .map((c, i) => (c.classList.contains('sel') ? i : -1)).filter((i) => i >= 0));
  if (JSON.stringify(sel) !== JSON.stringify([0x1f, 0x20])) {
    failures.push(`selecting the ErrorCode row marked bytes ${JSON.stringify(sel)}, want 0x1f..0x20`);
  }
  // 4. The grid is coloured by region: the size prefix and the header differ.
  const colours = await page.evaluate(() => {
    const cells = document.querySelectorAll('table.grid[data-g="req-0"] td.b');
    return [0, 4, 0x0f, 0x0e].map((i) => getComputedStyle(cells[i]).backgroundColor);
  });
  if (new Set(colours).size !== 4) {
    failures.push(`frame, header, body and tagged_fields bytes share colours: ${JSON.stringify(colours)}`);
  }
  // The picture: the top of the page, the request's TopicId row hovered.
  await page.evaluate(() => window.scrollTo(0, 0));
  await row.hover();
  await page.screenshot({ path: shot, fullPage: false });
} finally {
  await close();
}
if (consoleErrors.length) failures.push(`console errors: ${JSON.stringify(consoleErrors)}`);
if (outside.length) failures.push(`fetched from outside the file: ${JSON.stringify(outside)}`);
console.log(JSON.stringify({ ok: failures.length === 0, failures, screenshot: shot }));
process.exit(failures.length ? 1 : 0);

// Loads a `kwire report` page in Debian's Chromium (headless, through playwright-core; no
// browser download) and checks it: no console error, nothing fetched from outside the
// file, every plot an SVG with both axis labels and tick labels, a table sorts by a
// clicked column, a link of the slowest table opens that message's page (whose tree rows
// are printed for the caller to compare with `kwire read -V`), dark mode and print styles
// apply. Saves a screenshot 1400 px wide of the top of the page.
//
// usage: node report-check.mjs REPORT.html SHOT.png [HEIGHT]
// Prints one JSON line with the findings; exits 1 when a check fails.
import { openPage } from './launch.mjs';

const [, , file, shot, height] = process.argv;
if (!file || !shot) {
  console.error('usage: node report-check.mjs REPORT.html SHOT.png [HEIGHT]');
  process.exit(2);
}
const failures = [];
const { page, consoleErrors, outside, close } = await openPage(file, { width: 1400, height: +(height || 2200) });
let findings = {};
try {
  // Every plot: an SVG with a labelled x and y axis and tick labels on both.
  const plots = await page.evaluate(() => Array.from(document.querySelectorAll('figure')).map((f) => {
    const svg = f.querySelector('svg');
    return {
      id: f.id,
      svg: !!svg && svg.namespaceURI === 'http://www.w3.org/2000/svg',
      x: svg ? (svg.querySelector('text.axis-label.x') || {}).textContent || '' : '',
      y: svg ? (svg.querySelector('text.axis-label.y') || {}).textContent || '' : '',
      ticks: svg ? svg.querySelectorAll('text.tick').length : 0,
      caption: (f.querySelector('figcaption') || {}).textContent || '',
      width: svg ? svg.getBoundingClientRect().width : 0,
    };
  }));
  for (const p of plots) {
    if (!p.svg || !p.x || !p.y || p.ticks < 4 || !p.caption || p.width < 900) {
      failures.push(`plot ${p.id}: ${JSON.stringify(p)}`);
    }
  }
  findings.plots = plots.map((p) => `${p.id}: ${p.y} / ${p.x}`);

  // Sorting: the APIs table by its p99 column, descending on the first click.
  const col = await page.evaluate(() => Array.from(document.querySelectorAll('#t-apis thead th')).findIndex((t) => t.textContent === 'p99 ms'));
  await page.locator('#t-apis thead th').nth(col).click();
  const p99 = await page.evaluate((col) => Array.from(document.querySelectorAll('#t-apis tbody tr')).map((r) => +r.cells[col].getAttribute('data-v')), col);
  const sorted = [...p99].sort((a, b) => b - a);
  if (JSON.stringify(p99) !== JSON.stringify(sorted)) failures.push(`p99 not sorted descending: ${p99}`);

  // A link of the slowest table opens its message's page.
  const a = page.locator('#t-slowest tbody tr a').first();
  if (await a.count()) {
    const href = await a.getAttribute('href');
    await a.click();
    const hash = await page.evaluate(() => location.hash);
    if (hash !== href) failures.push(`clicking ${href} went to ${hash}`);
    const rows = await page.evaluate((id) => {
      const s = document.getElementById(id);
      if (!s) return null;
      const r = s.getBoundingClientRect();
      return { top: r.top, view: window.innerHeight, rows: Array.from(s.querySelectorAll('.tree .row')).map((x) => x.textContent) };
    }, href.slice(1));
    if (!rows) failures.push(`no section ${href}`);
    else {
      if (rows.top < -40 || rows.top > rows.view - 100) failures.push(`section ${href} is at ${rows.top} px after the click, out of view`);
      findings.linked = { id: href.slice(1), rows: rows.rows };
    }
  } else {
    failures.push('the slowest table has no link');
  }

  // Dark mode and print.
  await page.emulateMedia({ colorScheme: 'dark' });
  findings.dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  if (findings.dark !== 'rgb(21, 24, 30)') failures.push(`dark background ${findings.dark}`);
  await page.emulateMedia({ colorScheme: 'light', media: 'print' });
  const nav = await page.evaluate(() => getComputedStyle(document.querySelector('nav.sections')).display);
  if (nav !== 'none') failures.push(`the section links print (display ${nav})`);
  await page.emulateMedia({ colorScheme: 'light', media: 'screen' });

  await page.evaluate(() => window.scrollTo(0, 0));
  await page.evaluate(() => history.replaceState(null, '', location.pathname));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shot });
} catch (e) {
  failures.push(String(e));
}
await close();
if (consoleErrors.length) failures.push(`console errors: ${JSON.stringify(consoleErrors)}`);
if (outside.length) failures.push(`requests outside the file: ${JSON.stringify(outside)}`);
console.log(JSON.stringify({ ok: failures.length === 0, failures, ...findings }));
process.exit(failures.length ? 1 : 0);

// Opens one local HTML file in Debian's Chromium, headless, through playwright-core (no
// browser download), recording console errors and any request that leaves the file.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export async function openPage(file, viewport) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kwire-chromium-'));
  const consoleErrors = [];
  const outside = [];
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.KWIRE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    viewport,
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('file:') && !u.startsWith('data:')) outside.push(u);
  });
  await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: 'load' });
  const close = async () => {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return { page, consoleErrors, outside, close };
}

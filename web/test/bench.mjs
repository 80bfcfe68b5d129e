// The dashboard's load time, for bench/web/run.py: logs in once, then
// loads each page N times in a fresh document and measures navigation
// start → the page's data drawn (main[data-ready]); also the time of the
// page's API requests (resource timing: request start to the answer's
// last byte, the longest chain not separated). Prints JSON.
//
//   node web/test/bench.mjs CONFIG.json     (base, token, query, pages, n, chromium)
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const browser = await chromium.launch({ executablePath: cfg.chromium || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
const out = {};
await page.goto(cfg.base + '/');
await page.fill('#token', cfg.token);
await page.click('#login-form button[type=submit]');
await page.waitForSelector('main[data-ready="1"]', { timeout: 120000 });
for (const name of cfg.pages) {
  const runs = [];
  for (let i = 0; i < cfg.n + 1; i++) {
    await page.goto('about:blank');
    await page.goto(cfg.base + '/#/' + name + '?' + cfg.query);
    await page.waitForSelector('main[data-ready="1"]', { timeout: 120000 });
    const m = await page.evaluate(() => {
      const api = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/') || e.name.includes('/metrics'));
      return { ready_ms: performance.now(), api_ms: api.reduce((s, e) => s + (e.responseEnd - e.requestStart), 0),
        api_max_ms: Math.max(0, ...api.map((e) => e.responseEnd - e.requestStart)), requests: api.length };
    });
    if (i) runs.push(m); // the first load warms the caches
  }
  out[name] = runs;
}
await browser.close();
process.stdout.write(JSON.stringify(out));

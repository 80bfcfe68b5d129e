// Drives Debian's chromium (playwright-core) through the dashboard for
// test_dashboard.py, in one browser and one session: the login form, every
// page, the config editor's error, a trace file, the issues' status, a
// CSRF attempt from another origin, logout. Prints one JSON document with
// what it saw: per page the console errors, failed requests, every number
// (a.num: its link, path, value and text) and the page's own findings.
//
//   node web/test/drive.mjs CONFIG.json   (base, token, query, pages, shots, trace_file, attacker, issues)
// (here, beside web/node_modules, so that playwright-core resolves)
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = { pages: {}, login: {}, csrf: {}, logout: {}, storage: {} };
const browser = await chromium.launch({
  executablePath: cfg.chromium || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
const page = await context.newPage();
let current = null; // what the page being visited collects
const bucket = () => (current || (out.pages._boot = out.pages._boot || { console: [], failed: [] }));
page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') bucket().console.push(m.type() + ': ' + m.text()); });
page.on('pageerror', (e) => bucket().console.push('pageerror: ' + e.message));
page.on('requestfailed', (r) => bucket().failed.push(r.method() + ' ' + r.url() + ': ' + (r.failure() || {}).errorText));
page.on('response', (r) => { if (r.status() >= 400) bucket().failed.push(r.request().method() + ' ' + r.url() + ': HTTP ' + r.status()); });
const T = 90000;

async function ready() {
  await page.waitForSelector('main[data-ready="1"]', { timeout: T });
}

async function numbers() {
  return page.$$eval('a.num', (els) => els.map((a) => ({ href: a.getAttribute('href'), path: a.dataset.path, v: a.dataset.v, unit: a.dataset.unit, text: a.textContent })));
}

try {
  // ---- login ----
  current = out.login.page = { console: [], failed: [] };
  await page.goto(cfg.base + '/', { waitUntil: 'load' });
  await page.waitForSelector('#login-form', { timeout: T });
  out.login.form_first = true;
  await page.fill('#token', 'not-the-token');
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#login-error:not([hidden])', { timeout: T });
  out.login.wrong_message = await page.textContent('#login-error');
  await page.fill('#token', cfg.token);
  await page.click('#login-form button[type=submit]');
  await ready();
  await page.waitForLoadState('networkidle');
  out.login.url_after = page.url();
  const cookies = await context.cookies();
  out.login.cookies = cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, secure: c.secure, path: c.path }));
  out.login.session_cookie = (cookies.find((c) => c.name === 'pacer_session') || {}).value;
  out.storage = await page.evaluate(() => ({
    local: Object.keys(localStorage).map((k) => k + '=' + localStorage.getItem(k)),
    session: Object.keys(sessionStorage).map((k) => k + '=' + sessionStorage.getItem(k)),
    cookie: document.cookie, url: location.href,
  }));

  // ---- every page ----
  for (const visit of cfg.pages) {
    const name = visit.name;
    current = out.pages[name] = { console: [], failed: [] };
    const t0 = Date.now();
    // a fresh document per page, loaded from its URL as a link would be
    await page.goto('about:blank');
    await page.goto(cfg.base + '/#/' + visit.page + '?' + visit.query, { waitUntil: 'load' });
    await ready();
    await page.waitForLoadState('networkidle');
    current.ms = Date.now() - t0;
    current.nums = await numbers();
    current.url = page.url();
    if (visit.page === 'jank') {
      current.in_app = await page.$$eval('#jank-stack li.in-app .fn', (e) => e.map((x) => x.textContent));
      current.in_app_where = await page.$$eval('#jank-stack li.in-app .where', (e) => e.map((x) => x.textContent.trim()));
      current.flame = await page.$$eval('#jank-flame g.frame', (e) => e.map((x) => x.getAttribute('name')));
      current.groups = await page.$$eval('#jank-table tbody tr', (e) => e.map((x) => x.textContent));
    }
    if (visit.page === 'overview') {
      // the open issues by severity as the page shows them, and as the API
      // answers at the same moment
      current.severity_tiles = await page.$$eval('#issues-by-severity .tile-n', (e) => e.map((x) => ({ severity: x.dataset.severity, v: x.dataset.v, text: x.textContent })));
      current.open_issues = await page.evaluate(async (q) => {
        const app = new URLSearchParams(q).get('app');
        const r = await fetch('/api/v1/issues?limit=100&status=new,ongoing,regressed&app=' + encodeURIComponent(app));
        return (await r.json()).issues.map((i) => i.severity);
      }, visit.query);
    }
    if (visit.page === 'issues') {
      current.issue_flame = await page.$$eval('#issue-flame g.frame', (e) => e.map((x) => ({ name: x.getAttribute('name'), label: (x.querySelector('title') || {}).textContent })));
      current.issue_flame_title = await page.$$eval('#issue-flame', (e) => (e.length ? e[0].closest('section, .card').querySelector('h2').textContent : null));
    }
    if (name === 'pages') current.charts = await page.$$eval('.uplot', (e) => e.length);
    if (visit.page === 'frames') {
      current.phases = await page.$$eval('#frames-phases .wf-row', (rows) => rows.map((r) => ({
        window: r.dataset.window,
        segs: Array.from(r.querySelectorAll('.wf-seg')).map((x) => ({ phase: x.dataset.phase, ms: x.dataset.ms, width: x.style.width })),
      })));
      current.widgets = await page.$$eval('#frames-phases .frames-widgets', (boxes) => boxes.map((b) => ({
        window: b.dataset.window,
        after: b.previousElementSibling ? b.previousElementSibling.dataset.window : null,
        rows: Array.from(b.querySelectorAll('tbody tr')).map((r) => ({ type: r.dataset.type, phase: r.dataset.phase, cells: Array.from(r.cells).map((c) => c.textContent) })),
      })));
    }
    if (name === 'startup') current.segments = await page.$$eval('#wf-session .wf-seg', (e) => e.map((x) => ({ phase: x.dataset.phase, at: x.dataset.at })));
    await page.screenshot({ path: cfg.shots + '/' + name + '.png', fullPage: true });
    if (visit.page === 'jank') {
      const el = await page.$('#jank-flame');
      if (el) await el.screenshot({ path: cfg.shots + '/' + name + '-flame.png' });
    }
    if (name === 'config') {
      // an edit with an error: line 3 opens a tag it never closes
      const text = await page.inputValue('#config-text');
      const lines = text.split('\n');
      lines.splice(2, 0, '  <page id="Broken" tag="0">');
      await page.fill('#config-text', lines.join('\n'));
      await page.click('#config-save');
      const submitted = lines.join('\n');
      await page.waitForSelector('#config-status:not([hidden])', { timeout: T });
      current.error = { submitted, text: await page.textContent('#config-status'), line: await page.getAttribute('#config-status', 'data-line'),
        gutter: await page.$$eval('#config-gutter .err', (e) => e.map((x) => x.textContent)) };
      await page.screenshot({ path: cfg.shots + '/config-error.png', fullPage: true });
      // then a good edit: a new page type, pushed
      await page.fill('#config-text', text.replace('</pacer>', '  <page id="ShopDashboardProbe" tag="0"/>\n</pacer>'));
      await page.click('#config-save');
      await page.waitForSelector('#config-status.ok', { timeout: T });
      current.saved = await page.textContent('#config-status');
      // what pacerd answers to a change without the CSRF token, from the page itself
      current.no_csrf = await page.evaluate(async () => {
        const r = await fetch(location.pathname.replace(/\/$/, '') + '/v1/config/shop', { method: 'PUT', body: '<pacer/>', headers: { 'Content-Type': 'application/xml' } });
        return { status: r.status, body: await r.text() };
      });
    }
    if (name === 'traces' && cfg.trace_file) {
      await page.setInputFiles('#trace-file', cfg.trace_file);
      await page.waitForSelector('#call-tree', { timeout: T });
      await page.waitForTimeout(200);
      current.tree = await page.$$eval('#call-tree [data-name]', (e) => e.map((x) => ({ name: x.dataset.name, calls: +x.dataset.calls, total: +x.dataset.total })));
      current.flame = await page.$$eval('#trace-flame g.frame', (e) => e.length);
      current.summary = await page.textContent('#trace-summary');
      await page.screenshot({ path: cfg.shots + '/traces.png', fullPage: true });
    }
    if (name === 'issues' && cfg.issues) {
      const first = await page.$('#issue-table tbody tr a');
      if (first) {
        await first.click();
        await page.waitForSelector('#issue-evidence', { timeout: T });
        await ready();
        current.issue_id = await page.$eval('#issue-table tr.selected', (x) => x.dataset.id);
        current.before = await page.textContent('#issue-status');
        await page.click('#issue-status');
        await page.waitForFunction((b) => { const x = document.querySelector('#issue-status'); return x && x.textContent !== b; }, current.before, { timeout: T });
        current.after = await page.textContent('#issue-status');
        await page.screenshot({ path: cfg.shots + '/issues.png', fullPage: true });
      }
    }
  }

  // ---- a CSRF attempt: a page of another origin on this host (same site:
  // SameSite=Strict lets the cookie go) posts to pacerd ----
  current = out.csrf.page = { console: [], failed: [] };
  const evil = await context.newPage();
  const answers = [];
  evil.on('response', (r) => { if (r.url().startsWith(cfg.base)) answers.push({ url: r.url(), status: r.status() }); });
  await evil.goto(cfg.attacker + '?target=' + encodeURIComponent(cfg.base), { waitUntil: 'load' });
  await evil.waitForURL((u) => u.toString().startsWith(cfg.base), { timeout: T }).catch(() => {});
  await evil.waitForTimeout(500);
  out.csrf.answers = answers;
  out.csrf.evil_body = await evil.textContent('body').catch(() => null);
  await evil.close();
  out.csrf.after = await page.evaluate(async () => (await fetch('/auth/session')).json());

  // ---- logout ----
  current = out.logout.page = { console: [], failed: [] };
  await page.goto('about:blank');
  await page.goto(cfg.base + '/#/overview?' + cfg.query, { waitUntil: 'load' });
  await ready();
  await page.waitForLoadState('networkidle');
  await page.click('#logout');
  await page.waitForSelector('#login-form', { timeout: T });
  out.logout.cookies = (await context.cookies()).map((c) => c.name);
  out.logout.session = await page.evaluate(async () => (await fetch('/auth/session')).json());
  await page.screenshot({ path: cfg.shots + '/login.png' });
} catch (e) {
  out.error = String(e && e.stack || e);
  try { await page.screenshot({ path: cfg.shots + '/failure.png', fullPage: true }); } catch (e2) { /* nothing more to show */ }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));

// pacer's dashboard: the shell (login, navigation, the app, version and
// time range pickers) and the page router. Pages are modules with
// render(root, ctx); ctx carries the app, version and [from, to) every
// page applies, and the page's own parameters, all from the URL, and
// pacerd's schema (GET /api/v1/schema): the issue severities, the metrics
// of each query with their units — the pages name none of their own.

import './style.css';
import { h, clear, message } from './dom.js';
import { get, send, setCsrf, HttpError } from './api.js';
import { PAGES, RANGES, current, link, common, go, presetRange } from './state.js';
import { fmtTime } from './format.js';
import * as overview from './pages/overview.js';
import * as pages from './pages/pages.js';
import * as startup from './pages/startup.js';
import * as requests from './pages/requests.js';
import * as jank from './pages/jank.js';
import * as frames from './pages/frames.js';
import * as issues from './pages/issues.js';
import * as config from './pages/config.js';
import * as traces from './pages/traces.js';

const MODULES = { overview, pages, startup, requests, jank, frames, issues, config, traces };
const root = document.getElementById('app');
let apps = null;
let schema = null; // GET /api/v1/schema: the words pacerd's answers use (severities, metrics)
let renderSeq = 0;

function loginForm(error) {
  const input = h('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'current-password', required: true, size: 40 });
  const status = h('p', { class: 'msg error', id: 'login-error' }, error || '');
  if (!error) status.hidden = true;
  const form = h('form', { class: 'login', id: 'login-form' },
    h('h1', {}, 'pacer'),
    h('label', { for: 'token' }, 'Admin token'),
    input,
    h('button', { type: 'submit' }, 'Log in'),
    status,
    h('p', { class: 'help' }, 'The token pacerd reads from --admin-token-file. It is sent once; the browser then keeps an HttpOnly session cookie.'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = new URLSearchParams({ token: input.value });
    input.value = '';
    try {
      const s = await send('POST', '/auth/login', body.toString(), 'application/x-www-form-urlencoded');
      setCsrf(s.csrf);
      start();
    } catch (e) {
      status.hidden = false;
      status.textContent = e instanceof HttpError && e.status === 401 ? 'That is not the admin token.' : e.message;
    }
  });
  clear(root).appendChild(form);
  input.focus();
}

async function logout() {
  try { await send('POST', '/auth/logout'); } catch (e) { /* the session is gone either way */ }
  setCsrf(null);
  apps = null;
  schema = null;
  loginForm();
}

function rangeControls(params) {
  const sel = h('select', { id: 'range', 'aria-label': 'time range' },
    RANGES.map(([n]) => h('option', { value: n, selected: params.range === n }, 'last ' + n)),
    h('option', { value: 'custom', selected: !params.range }, 'custom'));
  const toLocal = (s) => new Date(s * 1000).toISOString().slice(0, 16);
  const fromIn = h('input', { type: 'datetime-local', id: 'from', value: toLocal(+params.from), 'aria-label': 'from (UTC)' });
  const toIn = h('input', { type: 'datetime-local', id: 'to', value: toLocal(+params.to), 'aria-label': 'to (UTC)' });
  sel.addEventListener('change', () => {
    if (sel.value === 'custom') return;
    const { page } = current();
    go(page, Object.assign({}, params, presetRange(sel.value)));
  });
  const apply = h('button', { type: 'button', id: 'apply-range' }, 'Apply');
  apply.addEventListener('click', () => {
    const f = Math.floor(Date.parse(fromIn.value + 'Z') / 1000), t = Math.floor(Date.parse(toIn.value + 'Z') / 1000);
    if (!(f < t)) return;
    const { page } = current();
    go(page, Object.assign({}, params, { from: f, to: t, range: undefined }));
  });
  return h('span', { class: 'range' }, sel, fromIn, '–', toIn, h('span', { class: 'utc' }, 'UTC'), apply);
}

function header(page, params, versions) {
  const appSel = h('select', { id: 'app-picker', 'aria-label': 'app' },
    apps.map((a) => h('option', { value: a.app, selected: a.app === params.app }, a.app)));
  appSel.addEventListener('change', () => go(page, Object.assign(common(params), { app: appSel.value, version: undefined })));
  const verSel = h('select', { id: 'version-picker', 'aria-label': 'version' },
    h('option', { value: '' }, 'all versions'),
    versions.map((v) => h('option', { value: v, selected: v === params.version }, v)));
  verSel.addEventListener('change', () => go(page, Object.assign({}, params, { version: verSel.value || undefined })));
  const out = h('button', { type: 'button', id: 'logout', class: 'link' }, 'Log out');
  out.addEventListener('click', logout);
  return h('header', {},
    h('div', { class: 'bar' },
      h('a', { class: 'brand', href: link('overview', common(params)) }, 'pacer'),
      h('label', {}, 'app ', appSel), h('label', {}, 'version ', verSel), rangeControls(params), out),
    h('nav', {}, PAGES.map(([p, title]) =>
      h('a', { href: link(p, common(params)), class: p === page ? 'active' : '', id: 'nav-' + p }, title))));
}

async function render() {
  const seq = ++renderSeq;
  const { page, params } = current();
  if (!apps) {
    try { [apps, schema] = await Promise.all([get('/api/v1/apps').then((r) => r.apps), get('/api/v1/schema')]); } catch (e) {
      if (e instanceof HttpError && e.status === 401) { loginForm(); return; }
      clear(root).appendChild(message('error', 'pacerd: ' + e.message));
      return;
    }
  }
  // the state every page needs, written into the URL when missing
  const fixed = Object.assign({}, params);
  if (!fixed.app && apps.length) fixed.app = apps[0].app;
  if (!fixed.from || !fixed.to || !(+fixed.from < +fixed.to)) Object.assign(fixed, presetRange(fixed.range || '7d'));
  if (JSON.stringify(fixed) !== JSON.stringify(params)) { go(page, fixed, true); }
  const entry = apps.find((a) => a.app === fixed.app);
  const versions = entry ? entry.versions : [];
  const main = h('main', { id: 'page-' + page, class: 'loading' });
  clear(root).append(header(page, fixed, versions), main);
  if (!apps.length && page !== 'traces' && page !== 'config') {
    main.appendChild(message('info', 'No data yet: pacerd has stored nothing for any app. Run an app under `pacer run --server …`, or `make demo`.'));
    main.classList.remove('loading');
    main.dataset.ready = '1';
    return;
  }
  const ctx = {
    app: fixed.app, version: fixed.version, from: +fixed.from, to: +fixed.to, params: fixed, versions, schema,
    set: (p, replace) => go(page, Object.assign({}, fixed, p), replace),
    link: (p, extra) => link(p, Object.assign(common(fixed), extra || {})),
    stale: () => seq !== renderSeq,
    refresh: () => render(),
  };
  main.appendChild(h('p', { class: 'range-note' }, fmtTime(ctx.from) + ' – ' + fmtTime(ctx.to) + (ctx.version ? ', version ' + ctx.version : ', all versions')));
  try {
    await MODULES[page].render(main, ctx);
  } catch (e) {
    if (e instanceof HttpError && e.status === 401) { loginForm('The session ended: log in again.'); return; }
    main.appendChild(message('error', e.message));
    console.warn(e);
  }
  if (seq !== renderSeq) return;
  main.classList.remove('loading');
  main.dataset.ready = '1'; // the tests wait for it
}

async function start() {
  let s;
  try { s = await get('/auth/session'); } catch (e) {
    clear(root).appendChild(message('error', 'pacerd does not answer: ' + e.message));
    return;
  }
  if (!s.logged_in) { loginForm(); return; }
  setCsrf(s.csrf);
  render();
}

window.addEventListener('hashchange', () => { if (apps !== null || current()) render(); });
start();

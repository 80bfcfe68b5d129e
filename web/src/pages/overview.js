// Overview: start-up, the worst pages over time, percentiles by version,
// the open issues by severity, and pacerd's ingest health.

import { h, card, table, message } from '../dom.js';
import { num, fmtNumber } from '../format.js';
import { timeChart } from '../chart.js';
import { get, HttpError } from '../api.js';
import { query, optional, series, seriesValues, sel, pcells, versionsOf, chartBox, sevClass } from './common.js';

function promValue(text, name, labels) {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = line.match(/^([a-z_]+)(\{[^}]*\})?\s+(\S+)$/);
    if (m && m[1] === name && (m[2] || '') === (labels || '')) return Number(m[3]);
  }
  return undefined;
}

async function health(ctx) {
  const box = card('Ingest health', 'What pacerd itself says: its store, what it stored, whom it turned away (/healthz, /metrics).');
  let hz;
  try { hz = await (await fetch('/healthz')).json(); } catch (e) { hz = { status: 'unreachable' }; }
  let text = '';
  try {
    const r = await fetch('/metrics', { credentials: 'same-origin' });
    text = r.ok ? await r.text() : '';
  } catch (e) { text = ''; }
  const rejects = text.split('\n').filter((l) => l.startsWith('pacerd_rejects_total{'))
    .reduce((s, l) => s + Number(l.split(/\s+/).pop()), 0);
  const prom = (name, labels, unit) => {
    const v = promValue(text, name, labels);
    return num(v, unit || 'count', '/metrics', { prom: name + (labels || '') });
  };
  box.appendChild(table(['store', 'spans stored', 'log records', 'data points', 'spans/s (10 s)', 'waiting for the writer', 'clients turned away'], [
    h('tr', {},
      h('td', { class: hz.status === 'ok' ? 'ok' : 'bad', id: 'store-status' }, hz.status + (hz.error ? ': ' + hz.error : '')),
      h('td', { class: 'n' }, prom('pacerd_ingest_records_total', '{signal="traces"}')),
      h('td', { class: 'n' }, prom('pacerd_ingest_records_total', '{signal="logs"}')),
      h('td', { class: 'n' }, prom('pacerd_ingest_records_total', '{signal="metrics"}')),
      h('td', { class: 'n' }, prom('pacerd_ingest_spans_per_second', '', 'x')),
      h('td', { class: 'n' }, prom('pacerd_store_queued_records', '')),
      h('td', { class: 'n' }, num(rejects, 'count', '/metrics', { prom_sum: 'pacerd_rejects_total' }))),
  ], { id: 'health' }));
  return box;
}

async function openIssues(ctx) {
  const box = card('Open issues', 'By severity, from the analysis layer.');
  const r = await optional(ctx, '/api/v1/issues', { status: 'new,ongoing,regressed', from: undefined, to: undefined });
  if (!r) { box.appendChild(message('info', 'This pacerd has no issues API.')); return box; }
  const list = r.data.issues || [];
  // the severities pacerd grades, the most severe first (GET /api/v1/schema)
  box.appendChild(h('div', { class: 'tiles', id: 'issues-by-severity' }, ctx.schema.issues.severities.map((s) => {
    const n = list.filter((i) => i.severity === s).length;
    return h('a', { class: 'tile ' + sevClass(ctx, s), href: ctx.link('issues', { status: 'new,ongoing,regressed', severity: s }) },
      h('span', { class: 'tile-n', dataset: { v: n, severity: s } }, String(n)), h('span', {}, s));
  })));
  return box;
}

export async function render(root, ctx) {
  const [st, pg] = await Promise.all([query(ctx, '/api/v1/startup'), query(ctx, '/api/v1/pages')]);
  // start-up
  const s = card('Start-up', 'Cold: launch → the main page\'s first frame (cold_ms); warm: a window after all had closed → its first frame (warm_ms).');
  const rows = st.data.startup.map((k) => {
    const metric = k.kind === 'warm' ? 'warm_ms' : 'cold_ms';
    const base = sel('startup', 'kind', k.kind);
    return h('tr', {}, h('td', {}, k.kind), h('td', { class: 'n' }, num(k.count, 'count', st.url, base.concat('count'))),
      pcells(k.metrics[metric], st.url, base, metric));
  });
  s.appendChild(rows.length ? table(['kind', 'starts', 'p50', 'p90', 'p99'], rows, { id: 'startup-table' }) : message('info', 'No start-ups in this range.'));
  const sc = chartBox('startup-chart');
  s.appendChild(sc);
  root.appendChild(s);
  // the worst pages
  const worst = pg.data.pages.filter((p) => p.metrics.total_ms)
    .sort((a, b) => b.metrics.total_ms.p90 - a.metrics.total_ms.p90).slice(0, 5);
  const w = card('The worst pages', 'Page classes by p90 of total_ms (creation → the render that shows their data).');
  w.appendChild(worst.length ? table(['page', 'loads', 'p50', 'p90', 'p99'], worst.map((p) => {
    const base = sel('pages', 'page', p.page);
    return h('tr', {}, h('td', {}, h('a', { href: ctx.link('pages', { page: p.page }) }, p.page)),
      h('td', { class: 'n' }, num(p.count, 'count', pg.url, base.concat('count'))), pcells(p.metrics.total_ms, pg.url, base, 'total_ms'));
  }), { id: 'worst-pages' }) : message('info', 'No page loads in this range.'));
  const wc = chartBox('worst-chart');
  w.appendChild(wc);
  root.appendChild(w);
  // by version
  const vs = versionsOf(ctx, 6);
  const byv = await Promise.all(vs.map((v) => Promise.all([
    query(Object.assign({}, ctx, { version: v }), '/api/v1/startup'),
    query(Object.assign({}, ctx, { version: v }), '/api/v1/pages')])));
  const main = worst.length ? worst[0].page : null;
  const v = card('By version', 'p50 / p90 / p99 of the cold start and of the worst page (' + (main || '–') + ') per version.');
  v.appendChild(table(['version', 'cold p50', 'cold p90', 'cold p99', (main || 'page') + ' p50', 'p90', 'p99'], vs.map((ver, i) => {
    const [sv, pv] = byv[i];
    const cold = sv.data.startup.find((k) => k.kind === 'cold');
    const page = main && pv.data.pages.find((p) => p.page === main);
    return h('tr', {}, h('td', {}, ver),
      pcells(cold && cold.metrics.cold_ms, sv.url, sel('startup', 'kind', 'cold'), 'cold_ms'),
      pcells(page && page.metrics.total_ms, pv.url, sel('pages', 'page', main), 'total_ms'));
  }), { id: 'by-version' }));
  root.appendChild(v);
  root.appendChild(await openIssues(ctx));
  root.appendChild(await health(ctx));
  // charts, once their boxes are on the page
  const [ss, ps] = await Promise.all([series(ctx, 'startup', 'cold'), series(ctx, 'page')]);
  const cs = seriesValues(ss.data, 'kind', ['cold'], 'cold_ms', 'p50');
  const cs90 = seriesValues(ss.data, 'kind', ['cold'], 'cold_ms', 'p90');
  timeChart(sc, { x: cs.x, unit: 'ms', yLabel: 'cold_ms', series: [{ label: 'cold p50', values: cs.out[0] }, { label: 'cold p90', values: cs90.out[0] }] });
  const names = worst.map((p) => p.page);
  const wv = seriesValues(ps.data, 'page', names, 'total_ms', 'p90');
  timeChart(wc, { x: wv.x, unit: 'ms', yLabel: 'total_ms p90', series: names.map((n, i) => ({ label: n, values: wv.out[i] })) });
}

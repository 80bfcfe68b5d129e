// Pages: per page class, the seed's three phases (first render, API load,
// second render) and the total, over time and by version; the
// distribution from the sketches; the slowest single loads with their API
// list.

import { h, card, table, message } from '../dom.js';
import { num, fmtMs, fmtTimeNs } from '../format.js';
import { timeChart, barChart } from '../chart.js';
import { query, series, seriesValues, sel, pcells, versionsOf, chartBox, metricsOf, metricHead } from './common.js';

// Sketch buckets merged into at most n bins of equal width in log scale.
export function bins(buckets, n) {
  if (!buckets.length) return [];
  const lo = Math.log(buckets[0].lo), hi = Math.log(buckets[buckets.length - 1].hi);
  const k = Math.max(1, Math.min(n, buckets.length));
  const w = (hi - lo) / k || 1;
  const out = Array.from({ length: k }, (_, i) => ({ lo: Math.exp(lo + i * w), hi: Math.exp(lo + (i + 1) * w), count: 0 }));
  for (const b of buckets) {
    const mid = (Math.log(b.lo) + Math.log(b.hi)) / 2;
    out[Math.min(k - 1, Math.max(0, Math.floor((mid - lo) / w)))].count += b.count;
  }
  return out;
}

function label(v) {
  return v < 10 ? v.toFixed(2) : v < 1000 ? v.toFixed(0) : (v / 1000).toFixed(1) + ' s';
}

export async function render(root, ctx) {
  // a page load's metrics, as pacerd's answers name them (its schema)
  const METRICS = metricsOf(ctx, 'page');
  const all = await query(ctx, '/api/v1/pages');
  const list = all.data.pages;
  if (!list.length) { root.appendChild(message('info', 'No page loads in this range.')); return; }
  const page = ctx.params.page && list.some((p) => p.page === ctx.params.page) ? ctx.params.page
    : list.slice().sort((a, b) => ((b.metrics.total_ms || {}).p90 || 0) - ((a.metrics.total_ms || {}).p90 || 0))[0].page;
  const metric = METRICS.some((m) => m.name === ctx.params.metric) ? ctx.params.metric
    : (METRICS.find((m) => m.name === 'total_ms') || METRICS[METRICS.length - 1]).name;

  const t = card('Page classes', 'Loads, and p50 / p90 / p99 of each phase (docs/records.md). Select a page to see it over time.');
  t.appendChild(table(['page', 'loads', 'incomplete'].concat(...METRICS.map((m) => [metricHead(m, ' p50'), 'p90', 'p99'])),
    list.map((p) => {
      const base = sel('pages', 'page', p.page);
      return h('tr', { class: p.page === page ? 'selected' : '' },
        h('td', {}, h('a', { href: ctx.link('pages', { page: p.page, metric }) }, p.page)),
        h('td', { class: 'n' }, num(p.count, 'count', all.url, base.concat('count'))),
        h('td', { class: 'n' }, num(p.incomplete, 'count', all.url, base.concat('incomplete'))),
        METRICS.map((m) => pcells(p.metrics[m.name], all.url, base, m.name, m.unit)));
    }), { id: 'page-table', class: 'wide' }));
  root.appendChild(t);

  const over = card(page + ' over time', 'p90 of each phase per time bucket (UTC).');
  const oc = chartBox('phases-chart');
  over.appendChild(oc);
  root.appendChild(over);

  const vs = versionsOf(ctx, 8);
  const byv = await Promise.all(vs.map((v) => query(Object.assign({}, ctx, { version: v }), '/api/v1/pages')));
  const vcard = card(page + ' by version', 'p50 / p90 of each phase per version.');
  vcard.appendChild(table(['version', 'loads'].concat(...METRICS.map((m) => [metricHead(m, ' p50'), 'p90'])), vs.map((v, i) => {
    const r = byv[i], p = r.data.pages.find((x) => x.page === page), base = sel('pages', 'page', page);
    return h('tr', {}, h('td', {}, v), h('td', { class: 'n' }, p ? num(p.count, 'count', r.url, base.concat('count')) : '–'),
      METRICS.map((m) => pcells(p && p.metrics[m.name], r.url, base, m.name, m.unit).slice(0, 2)));
  }), { id: 'page-versions' }));
  root.appendChild(vcard);

  const hist = await query(ctx, '/api/v1/histogram', { kind: 'page', name: page, metric });
  const hcard = card('Distribution of ' + metric, 'From the DDSketch buckets (1 % relative accuracy) of ' + page + '.',
    h('p', { class: 'metric-pick' }, METRICS.map((m) => h('a', { href: ctx.link('pages', { page, metric: m.name }), class: m.name === metric ? 'active' : '', title: m.meaning }, m.name))),
    h('p', {}, 'loads with ' + metric + ': ', num(hist.data.count, 'count', hist.url, 'count'),
      ', p50 ', num(hist.data.p50, 'ms', hist.url, 'p50'), ', p90 ', num(hist.data.p90, 'ms', hist.url, 'p90'),
      ', p99 ', num(hist.data.p99, 'ms', hist.url, 'p99')));
  const hc = chartBox('histogram');
  hcard.appendChild(hc);
  root.appendChild(hcard);

  const slow = await query(ctx, '/api/v1/records', { type: 'page', name: page, sort: metric, limit: 15 });
  const scard = card('The slowest loads', 'Single loads of ' + page + ' by ' + metric + ', with the APIs each waited for.');
  scard.appendChild(slow.data.records.length ? table(['time', 'version', 'session', 'status'].concat(METRICS.map((m) => metricHead(m)), ['APIs']),
    slow.data.records.map((r, i) => h('tr', {},
      h('td', {}, fmtTimeNs(r.ts)), h('td', {}, r.version), h('td', { class: 'mono' }, r.session), h('td', {}, r.status),
      METRICS.map(({ name: m, unit }) => h('td', { class: 'n' }, r[m] !== undefined ? num(r[m], unit, slow.url, 'records[' + i + '].' + m) : '–')),
      h('td', {}, h('ul', { class: 'apis' }, (r.apis || []).map((a, k) => h('li', {}, h('span', { class: 'mono' }, a.url), ' ',
        a.ms !== undefined ? num(a.ms, 'ms', slow.url, 'records[' + i + '].apis[' + k + '].ms') : 'not ended',
        a.status !== undefined ? ' (' + a.status + ')' : ''))),
        r.trace_id ? h('a', { href: '/api/v1/traces/' + r.trace_id, target: '_blank', rel: 'noopener', class: 'small' }, 'trace') : null))),
  { id: 'slow-loads', class: 'wide' }) : message('info', 'No single loads of this page in the range.'));
  if (slow.data.truncated) scard.appendChild(message('info', 'Only the newest 200 000 loads of the range were looked at.'));
  root.appendChild(scard);

  const ps = await series(ctx, 'page', page);
  const series4 = METRICS.map((m) => ({ label: m.name, values: seriesValues(ps.data, 'page', [page], m.name, 'p90').out[0] }));
  timeChart(oc, { x: ps.data.buckets.map((b) => b.from), unit: 'ms', yLabel: 'p90', series: series4 });
  const b = bins(hist.data.buckets, 30);
  barChart(hc, { labels: b.map((x) => label(x.lo) + '–' + label(x.hi) + (x.hi < 1000 ? ' ms' : '')), xLabel: metric + ' (ms, log bins)', yLabel: 'loads', unit: 'loads', series: [{ label: 'loads', values: b.map((x) => x.count) }] });
}

export { fmtMs };

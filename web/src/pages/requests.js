// Requests by URL pattern: count, p50 / p90, error rate, bytes, classes
// (large_image, error, slow), and the slowest single requests.

import { h, card, table, message } from '../dom.js';
import { num, pct, fmtTimeNs } from '../format.js';
import { timeChart } from '../chart.js';
import { query, series, seriesValues, sel, chartBox } from './common.js';

export async function render(root, ctx) {
  const [pq, st] = await Promise.all([query(ctx, '/api/v1/requests'), query(ctx, '/api/v1/request_stats')]);
  const list = pq.data.requests;
  if (!list.length) { root.appendChild(message('info', 'No requests in this range.')); return; }
  list.sort((a, b) => ((b.metrics.total_ms || {}).p90 || 0) - ((a.metrics.total_ms || {}).p90 || 0));
  const t = card('By URL pattern', 'Paths with ids folded ({id}); errors: status ≥ 400 or a transport failure; classes as the agent assigned them (docs/records.md, net).');
  t.appendChild(table(['method', 'pattern', 'requests', 'p50', 'p90', 'errors', 'error rate', 'bytes received (mean)', 'large_image', 'error', 'slow'], list.map((r) => {
    const key = r.method + ' ' + r.pattern;
    const base = ['requests', { method: r.method, pattern: r.pattern }];
    const s = st.data.requests.find((x) => x.method === r.method && x.pattern === r.pattern);
    const sbase = base;
    const m = r.metrics.total_ms || {};
    return h('tr', { dataset: { key } }, h('td', {}, r.method), h('td', { class: 'mono' }, r.pattern),
      h('td', { class: 'n' }, num(r.count, 'count', pq.url, base.concat('count'))),
      h('td', { class: 'n' }, num(m.p50, 'ms', pq.url, base.concat('metrics.total_ms.p50'))),
      h('td', { class: 'n' }, num(m.p90, 'ms', pq.url, base.concat('metrics.total_ms.p90'))),
      h('td', { class: 'n' }, num(r.errors, 'count', pq.url, base.concat('errors'))),
      h('td', { class: 'n' }, num(pct(r.errors, r.count), 'pct', pq.url, { ratio: [base.concat('errors'), base.concat('count')] })),
      h('td', { class: 'n' }, s && s.bytes_received_mean !== undefined ? num(s.bytes_received_mean, 'bytes', st.url, sbase.concat('bytes_received_mean')) : '–'),
      ['large_image', 'error', 'slow'].map((c) => h('td', { class: 'n' }, s ? num(s.classes[c], 'count', st.url, sbase.concat('classes', c)) : '–')));
  }), { id: 'request-table', class: 'wide' }));
  if (st.data.truncated) t.appendChild(message('info', 'Bytes and classes: only the newest 200 000 requests of the range were looked at.'));
  root.appendChild(t);

  const oc = chartBox('requests-chart');
  root.appendChild(card('p90 over time', 'The five slowest patterns.', oc));

  const worst = await query(ctx, '/api/v1/records', { type: 'net', sort: 'total_ms', limit: 20 });
  root.appendChild(card('The slowest requests', 'Single requests by total_ms.', table(['time', 'method', 'URL', 'status', 'total', 'bytes received', 'classes', 'page'],
    worst.data.records.map((r, i) => h('tr', {}, h('td', {}, fmtTimeNs(r.ts)), h('td', {}, r.method), h('td', { class: 'mono url' }, r.url),
      h('td', { class: 'n' }, String(r.status)), h('td', { class: 'n' }, num(r.total_ms, 'ms', worst.url, 'records[' + i + '].total_ms')),
      h('td', { class: 'n' }, r.bytes_received !== undefined ? num(r.bytes_received, 'bytes', worst.url, 'records[' + i + '].bytes_received') : '–'),
      h('td', {}, (r.classes || []).map((c) => h('span', { class: 'chip cls-' + c }, c))), h('td', {}, r.page || ''))), { id: 'worst-requests', class: 'wide' })));

  const top = list.slice(0, 5).map((r) => r.method + ' ' + r.pattern);
  const rs = await series(ctx, 'request');
  const x = rs.data.buckets.map((b) => b.from);
  timeChart(oc, { x, unit: 'ms', yLabel: 'total_ms p90', series: top.map((k) => ({ label: k, values: rs.data.buckets.map((b) => {
    const it = b.items.find((i) => i.method + ' ' + i.pattern === k);
    return it && it.metrics.total_ms ? it.metrics.total_ms.p90 : null;
  }) })) });
}

// Start-up: the cold start's waterfall as a median bar per version and for
// one session, with the percentiles of each phase and cold_ms over time.

import { h, card, table, message } from '../dom.js';
import { num, fmtTimeNs, fmtMs } from '../format.js';
import { timeChart } from '../chart.js';
import { waterfall, offsets, median, PHASES } from '../waterfall.js';
import { query, series, seriesValues, sel, pcells, versionsOf, chartBox, metricsOf, metricHead } from './common.js';

const N = 200;

export async function render(root, ctx) {
  const vs = versionsOf(ctx, 8);
  const per = await Promise.all(vs.map((v) => Promise.all([
    query(Object.assign({}, ctx, { version: v }), '/api/v1/records', { type: 'startup', name: 'cold', sort: 'newest', limit: N }),
    query(Object.assign({}, ctx, { version: v }), '/api/v1/startup')])));
  const any = per.some(([r]) => r.data.records.length);
  if (!any) { root.appendChild(message('info', 'No cold starts in this range.')); return; }

  const rows = vs.map((v, i) => {
    const recs = per[i][0].data.records, off = recs.map(offsets), med = {};
    for (const [p] of PHASES.slice(1)) med[p] = median(off.map((o) => o[p]));
    return { label: v, offsets: med, total: recs.length + ' starts' };
  }).filter((r) => Object.keys(r.offsets).some((k) => r.offsets[k] !== undefined));
  root.appendChild(card('Cold start by version', 'Each phase\'s median offset from launch, over the newest ' + N + ' cold starts of each version in the range (hover a segment for its exact times).',
    waterfall(rows, 'wf-versions')));

  // the start-up metrics pacerd names (its schema) that cold starts have
  const colds = per.map(([, r]) => r.data.startup.find((k) => k.kind === 'cold'));
  const METRICS = metricsOf(ctx, 'startup').filter((m) => colds.some((c) => c && c.metrics[m.name]));
  const t = card('Percentiles by version', 'From the sketches, over every cold start of the range.');
  t.appendChild(table(['version', 'starts'].concat(...METRICS.map((m) => [metricHead(m, ' p50'), 'p90', 'p99'])), vs.map((v, i) => {
    const r = per[i][1], cold = colds[i], base = sel('startup', 'kind', 'cold');
    return h('tr', {}, h('td', {}, v), h('td', { class: 'n' }, cold ? num(cold.count, 'count', r.url, base.concat('count')) : '–'),
      METRICS.map((m) => pcells(cold && cold.metrics[m.name], r.url, base, m.name, m.unit)));
  }), { id: 'startup-versions', class: 'wide' }));
  root.appendChild(t);

  // one session
  const recent = per.flatMap(([r]) => r.data.records.map((rec, k) => ({ rec, url: r.url, k }))).sort((a, b) => (BigInt(b.rec.ts) > BigInt(a.rec.ts) ? 1 : -1));
  const chosen = recent.find((x) => x.rec.session === ctx.params.session) || recent[0];
  const s = chosen.rec;
  const one = card('One session', 'The cold start of session ' + s.session + ' (' + s.version + ', ' + fmtTimeNs(s.ts) + ').',
    waterfall([{ label: s.session, offsets: offsets(s), total: fmtMs(s.cold_ms) }], 'wf-session'),
    table(['phase', 'ms after launch'], PHASES.slice(1).filter(([p]) => offsets(s)[p] !== undefined).map(([p, n]) =>
      h('tr', {}, h('td', {}, n), h('td', { class: 'n' }, fmtMs(offsets(s)[p])))), { id: 'session-phases' }),
    h('p', {}, 'cold_ms ', num(s.cold_ms, 'ms', chosen.url, 'records[' + chosen.k + '].cold_ms'),
      ', first_screen_ms ', num(s.first_screen_ms, 'ms', chosen.url, 'records[' + chosen.k + '].first_screen_ms'),
      ', app_cost_ms ', num(s.app_cost_ms, 'ms', chosen.url, 'records[' + chosen.k + '].app_cost_ms')),
    h('p', { class: 'help' }, 'Other sessions: ', recent.slice(0, 12).map((x) =>
      h('a', { href: ctx.link('startup', { session: x.rec.session }), class: 'chip' + (x.rec.session === s.session ? ' active' : '') }, x.rec.session))));
  root.appendChild(one);

  const oc = chartBox('cold-chart');
  root.appendChild(card('cold_ms over time', 'p50 and p90 per time bucket.', oc));
  const ss = await series(ctx, 'startup', 'cold');
  timeChart(oc, { x: ss.data.buckets.map((b) => b.from), unit: 'ms', yLabel: 'cold_ms', series: ['p50', 'p90'].map((p) => ({ label: 'cold ' + p, values: seriesValues(ss.data, 'kind', ['cold'], 'cold_ms', p).out[0] })) });
}

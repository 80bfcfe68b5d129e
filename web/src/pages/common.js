// What the pages share: queries with their URL (every number links to
// the query behind it), the common parameters, small tables.

import { get, qurl, HttpError } from '../api.js';
import { h } from '../dom.js';
import { num } from '../format.js';
import { stepFor } from '../state.js';

// GET path with the page's app, version and range (plus extra), and the
// URL that was asked (what the numbers link to).
export async function query(ctx, path, extra, opts) {
  const params = Object.assign({ app: ctx.app, version: ctx.version, from: ctx.from, to: ctx.to }, extra || {});
  if (opts && opts.allVersions) delete params.version;
  const url = qurl(path, params);
  const data = await get(path, params);
  return { url, data };
}

// The same, or null when pacerd has no such endpoint (404).
export async function optional(ctx, path, extra) {
  try { return await query(ctx, path, extra); } catch (e) {
    if (e instanceof HttpError && e.status === 404) return null;
    throw e;
  }
}

export async function series(ctx, kind, name) {
  const step = stepFor(ctx.from, ctx.to);
  return query(ctx, '/api/v1/series', { kind, step, name });
}

// [x (bucket starts), per name: values of metric's stat] from a series answer
export function seriesValues(data, field, names, metric, stat) {
  const x = data.buckets.map((b) => b.from);
  const out = names.map((n) => data.buckets.map((b) => {
    const it = b.items.find((i) => i[field] === n);
    const m = it && it.metrics[metric];
    return m ? m[stat] : null;
  }));
  return { x, out };
}

// ['pages', {page: 'Home'}]: the element of answer.pages whose page is Home
export function sel(list, key, value) {
  return [list, { [key]: value }];
}

// p50 / p90 / p99 cells of a metric, linked to url at base.metrics.M, in
// its unit (ms unless said)
export function pcells(m, url, base, metric, unit) {
  return ['p50', 'p90', 'p99'].map((p) => h('td', { class: 'n' },
    m && m[p] !== undefined ? num(m[p], unit || 'ms', url, base.concat('metrics', metric, p)) : '–'));
}

// The metrics pacerd's answers for a group kind (page, startup, request,
// span) hold, in order: [{name, unit, meaning}] (GET /api/v1/schema).
export function metricsOf(ctx, kind) {
  return ctx.schema.groups[kind].metrics;
}

// A table heading for a metric: its name, its meaning on hover.
export function metricHead(m, suffix) {
  return { text: m.name + (suffix || ''), title: m.meaning + (m.unit ? ' (' + m.unit + ')' : '') };
}

// The classes of a severity: its name, and its rank (0: the most severe),
// which the style sheet colours.
export function sevClass(ctx, severity) {
  const rank = ctx.schema.issues.severities.indexOf(severity);
  return 'sev-' + severity + (rank >= 0 ? ' sev-rank-' + rank : '');
}

export function versionsOf(ctx, max) {
  const v = ctx.version ? [ctx.version] : ctx.versions.slice(-(max || 8));
  return v;
}

export function chartBox(id) {
  return h('div', { class: 'chart', id });
}

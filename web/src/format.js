// Numbers as the dashboard shows them. Every number drawn from a query is
// a link to that query (num()): the exact value rides along in data-v and
// the place in the answer in data-path, so what the page says can be
// checked against the API (tests/web).

import { h } from './dom.js';

export function fmtNumber(v, decimals) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  return Number(v).toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

// milliseconds: 2 decimals below 10, 1 below 10 000, none above
export function msDecimals(v) {
  const a = Math.abs(v);
  return a < 10 ? 2 : a < 10000 ? 1 : 0;
}

export function fmtMs(v) {
  return v === undefined || v === null ? '–' : fmtNumber(v, msDecimals(v)) + ' ms';
}

export function fmtBytes(v) {
  if (v === undefined || v === null) return '–';
  if (v < 1024) return fmtNumber(v, 0) + ' B';
  if (v < 1024 * 1024) return fmtNumber(v / 1024, 1) + ' KiB';
  return fmtNumber(v / 1024 / 1024, 1) + ' MiB';
}

export function fmtTime(unixS) {
  const d = new Date(unixS * 1000);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export function fmtTimeNs(ns) {
  return fmtTime(Number(BigInt(ns) / 1000000000n));
}

// A path into an answer as a list of member names, indexes and selectors
// ({page: 'Home'}: the element with that member): strings are split at
// dots and [n], so ['pages', {page: 'a.b'}, 'metrics.total_ms.p50'] and
// 'records[2].apis[0].ms' both work. Objects other than a list pass
// through ({ratio: [A, B]}: A / B in %; {prom: 'name{labels}'}: a /metrics
// series; {prom_sum: 'name'}: all its series added).
export function normPath(p) {
  if (!Array.isArray(p)) p = typeof p === 'string' ? [p] : p;
  if (!Array.isArray(p)) return p.ratio ? { ratio: p.ratio.map(normPath) } : p;
  const out = [];
  for (const x of p) {
    if (typeof x !== 'string') { out.push(x); continue; }
    for (const seg of x.split('.')) {
      const m = seg.match(/^([^[]*)((?:\[\d+\])*)$/);
      if (m[1]) out.push(m[1]);
      for (const i of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
    }
  }
  return out;
}

// A number from the answer of `href` at `path` (tests/web reads them):
//   unit 'ms' | 'count' | 'pct' | 'bytes' | 'x' (plain, 2 decimals)
export function num(value, unit, href, path, title) {
  let text;
  if (value === undefined || value === null) text = '–';
  else if (unit === 'ms') text = fmtMs(value);
  else if (unit === 'pct') text = fmtNumber(value, 1) + ' %';
  else if (unit === 'bytes') text = fmtBytes(value);
  else if (unit === 'count') text = fmtNumber(value, 0);
  else text = fmtNumber(value, 2);
  return h('a', {
    class: 'num', href, target: '_blank', rel: 'noopener',
    title: (title ? title + '\n' : '') + 'exact: ' + value + '\nfrom ' + href,
    dataset: { v: value === undefined || value === null ? '' : String(value), path: JSON.stringify(normPath(path)), unit },
  }, text);
}

export function pct(part, whole) {
  return whole ? (100 * part) / whole : 0;
}

// The dashboard's state lives in the URL's fragment, so a link shows what
// its sender saw: '#/PAGE?app=A&from=UNIX_S&to=UNIX_S&version=V&…'. The
// time range is always absolute in the URL (a preset writes its from and
// to), and the fragment never reaches the server.

export const PAGES = [
  ['overview', 'Overview'], ['pages', 'Pages'], ['startup', 'Start-up'], ['requests', 'Requests'],
  ['jank', 'Jank & hangs'], ['frames', 'Frames'], ['issues', 'Issues'], ['config', 'Config'], ['traces', 'Traces'],
];

// what every page shares; a page's own parameters go when another page is opened
export const COMMON = ['app', 'version', 'from', 'to', 'range'];

export const RANGES = [['1h', 3600], ['24h', 86400], ['7d', 7 * 86400], ['30d', 30 * 86400], ['90d', 90 * 86400],
  ['1y', 365 * 86400]];

export function current() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [page, query] = hash.split('?');
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  return { page: PAGES.some(([p]) => p === page) ? page : 'overview', params };
}

export function link(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  return '#/' + page + (q.toString() ? '?' + q : '');
}

export function common(params) {
  const out = {};
  for (const k of COMMON) if (params[k] !== undefined) out[k] = params[k];
  return out;
}

export function go(page, params, replace) {
  const url = link(page, params);
  if (replace) history.replaceState(null, '', url);
  else location.hash = url;
}

// A preset range ending now, in whole minutes.
export function presetRange(name) {
  const span = (RANGES.find(([n]) => n === name) || RANGES[2])[1];
  const to = Math.ceil(Date.now() / 60000) * 60;
  return { from: to - span, to, range: name };
}

// The series step for a range: at most ~120 buckets, on UTC boundaries.
export function stepFor(from, to) {
  const span = to - from;
  for (const s of [600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400])
    if (span / s <= 120) return s;
  return 30 * 86400;
}

// Issues: the ranked list the analysis layer files (GET /api/v1/issues),
// with filters, one issue's evidence (GET /api/v1/issues/{id}) — for a jank
// or hang, the flame graph of its occurrences' profiles merged, as the Jank
// page draws it (GET /api/v1/jank of its fingerprint and kind) —, and
// resolve / reopen (PATCH /api/v1/issues/{id} {"status": …}).

import { h, card, table, message } from '../dom.js';
import { num } from '../format.js';
import { send } from '../api.js';
import { query, optional, sevClass } from './common.js';
import { appendFlame } from './jank.js';

// each filter and the list of its values in pacerd's schema (GET /api/v1/schema)
const FILTERS = [['status', 'statuses'], ['kind', 'kinds'], ['severity', 'severities']];

function when(t) {
  if (t === undefined || t === null) return '–';
  const s = Number(t) > 1e14 ? Number(t) / 1e9 : Number(t) > 1e11 ? Number(t) / 1e3 : Number(t);
  return new Date(s * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export async function render(root, ctx) {
  const all = await optional(ctx, '/api/v1/issues', { from: undefined, to: undefined });
  if (!all) { root.appendChild(message('info', 'This pacerd has no issues API (GET /api/v1/issues): it comes with the analysis layer.')); return; }
  const filters = {};
  for (const [f] of FILTERS) if (ctx.params[f]) filters[f] = ctx.params[f];
  const list = Object.keys(filters).length ? await query(ctx, '/api/v1/issues', Object.assign({ from: undefined, to: undefined }, filters)) : all;
  // every value pacerd knows, in its order (a link may carry a list: status=new,ongoing)
  const values = (k, words) => ctx.schema.issues[words].concat(filters[k] && !ctx.schema.issues[words].includes(filters[k]) ? [filters[k]] : []);
  const bar = h('form', { class: 'filters', id: 'issue-filters' }, FILTERS.map(([k, words]) => {
    const s = h('select', { name: k, id: 'filter-' + k }, h('option', { value: '' }, 'any ' + k),
      values(k, words).map((v) => h('option', { value: v, selected: v === filters[k] }, v)));
    s.addEventListener('change', () => ctx.set({ [k]: s.value || undefined, issue: undefined }));
    return h('label', {}, k + ' ', s);
  }));
  const issues = list.data.issues;
  const base = (i) => ['issues', { id: i.id }];
  const t = card('Issues', 'Ranked by the analysis layer (impact: sessions affected × time lost). Filters apply to the list.', bar,
    issues.length ? table(['#', 'severity', 'kind', 'title', 'status', 'count', 'sessions', 'versions', 'last seen'], issues.map((i, k) =>
      h('tr', { class: String(i.id) === ctx.params.issue ? 'selected' : '', dataset: { id: String(i.id) } },
        h('td', { class: 'n' }, String(k + 1)), h('td', { class: sevClass(ctx, i.severity) }, i.severity), h('td', {}, i.kind),
        h('td', {}, h('a', { href: ctx.link('issues', Object.assign({}, filters, { issue: i.id })) }, i.title)),
        h('td', {}, i.status),
        h('td', { class: 'n' }, num(i.count, 'count', list.url, base(i).concat('count'))),
        h('td', { class: 'n' }, num(i.sessions, 'count', list.url, base(i).concat('sessions'))),
        h('td', {}, (i.first_version || '?') + ' … ' + (i.last_version || '?')),
        h('td', {}, when(i.last_seen)))), { id: 'issue-table', class: 'wide' }) : message('info', 'No issue matches.'));
  root.appendChild(t);

  const id = ctx.params.issue;
  if (!id) return;
  const one = await query(ctx, '/api/v1/issues/' + encodeURIComponent(id), { app: undefined, version: undefined, from: undefined, to: undefined });
  const i = one.data.issue || one.data;
  const next = i.status === 'resolved' ? 'ongoing' : 'resolved'; /* reopened: ongoing */
  const button = h('button', { type: 'button', id: 'issue-status' }, i.status === 'resolved' ? 'Reopen' : 'Resolve');
  const status = h('p', { class: 'msg', id: 'issue-status-msg' });
  status.hidden = true;
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      await send('PATCH', '/api/v1/issues/' + encodeURIComponent(id), JSON.stringify({ status: next }), 'application/json');
      ctx.refresh();
    } catch (e) {
      status.hidden = false;
      status.className = 'msg error';
      status.textContent = e.message;
      button.disabled = false;
    }
  });
  root.appendChild(card(i.title, i.kind + ' · ' + i.severity + ' · ' + i.status + ' · fingerprint ' + (i.fingerprint || '–'),
    h('p', {}, 'seen ', num(i.count, 'count', one.url, 'count'), ' times in ', num(i.sessions, 'count', one.url, 'sessions'),
      ' sessions, from ', when(i.first_seen), ' (', i.first_version || '?', ') to ', when(i.last_seen), ' (', i.last_version || '?', ')'),
    h('p', {}, button), status,
    h('h3', {}, 'Evidence'),
    h('pre', { class: 'evidence', id: 'issue-evidence' }, JSON.stringify(i.evidence, null, 2))));
  if ((i.kind === 'jank' || i.kind === 'hang') && i.fingerprint) {
    // every occurrence the store still holds, whatever the page's range and version
    const j = await query(ctx, '/api/v1/jank', { app: i.app, version: undefined, from: undefined, to: undefined, fingerprint: i.fingerprint, kind: i.kind });
    if (j.data.records) {
      appendFlame(root, j.data, 'issue-flame', 'Where its ' + j.data.records + ' occurrences were stuck',
        'The ' + i.kind + ' records of fingerprint ' + i.fingerprint);
      root.lastChild.appendChild(h('p', {}, h('a', { href: ctx.link('jank', { fp: i.fingerprint }) }, 'This fingerprint on the Jank page')));
    }
  }
}

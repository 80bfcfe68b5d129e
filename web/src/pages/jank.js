// Jank and hangs by fingerprint: count, durations, pages and versions;
// one group's stack (in-app frames highlighted, with file:line); every
// stuck stack of the app merged into one flame graph — a jank's profile
// (its samples) where it has one, else its one stack.

import { h, card, table, message } from '../dom.js';
import { num, fmtTimeNs } from '../format.js';
import { flame, flameLegend } from '../flame.js';
import { query } from './common.js';

export async function render(root, ctx) {
  const j = await query(ctx, '/api/v1/jank');
  const groups = j.data.groups;
  if (!groups.length) { root.appendChild(message('info', 'No jank or hang in this range.')); return; }
  const fp = ctx.params.fp && groups.some((g) => g.fingerprint === ctx.params.fp) ? ctx.params.fp : groups[0].fingerprint;
  const base = (g) => ['groups', { fingerprint: g.fingerprint }];
  const t = card('By fingerprint', 'Main-loop iterations busy ≥ jank-ms (hang: ≥ hang-ms), grouped by the fingerprint of their in-app frames, most time lost first.');
  t.appendChild(table(['fingerprint', 'where', 'count', 'hangs', 'p50', 'max', 'time lost', 'pages', 'versions', 'last seen'], groups.map((g) => {
    const top = (g.stack || []).find((f) => f.in_app) || (g.stack || [])[0] || {};
    return h('tr', { class: g.fingerprint === fp ? 'selected' : '' },
      h('td', { class: 'mono' }, h('a', { href: ctx.link('jank', { fp: g.fingerprint }) }, g.fingerprint || '(no frame identified)')),
      h('td', { class: 'mono' }, top.function || '–'),
      h('td', { class: 'n' }, num(g.count, 'count', j.url, base(g).concat('count'))),
      h('td', { class: 'n' }, num(g.hangs, 'count', j.url, base(g).concat('hangs'))),
      h('td', { class: 'n' }, num(g.duration_ms.p50, 'ms', j.url, base(g).concat('duration_ms.p50'))),
      h('td', { class: 'n' }, num(g.duration_ms.max, 'ms', j.url, base(g).concat('duration_ms.max'))),
      h('td', { class: 'n' }, num(g.duration_ms.sum, 'ms', j.url, base(g).concat('duration_ms.sum'))),
      h('td', {}, g.pages.map((p) => h('span', { class: 'chip' }, (p.page || '–') + ' ×' + p.count))),
      h('td', {}, g.versions.map((v) => h('span', { class: 'chip' }, (v.version || '–') + ' ×' + v.count))),
      h('td', {}, fmtTimeNs(g.last_ts)));
  }), { id: 'jank-table', class: 'wide' }));
  if (j.data.truncated) t.appendChild(message('info', 'Only the newest 200 000 log records of the range were looked at.'));
  root.appendChild(t);

  const g = groups.find((x) => x.fingerprint === fp);
  const stack = g.stack || [];
  root.appendChild(card('Stack of ' + (fp || 'the group'), 'The longest one\'s stack (' + g.duration_ms.max + ' ms), innermost frame first; in-app frames highlighted.',
    stack.length ? h('ol', { class: 'stack', id: 'jank-stack' }, stack.map((f) => h('li', { class: f.in_app ? 'in-app' : '' },
      h('span', { class: 'fn' }, f.function || f.address || '?'),
      f.file ? h('span', { class: 'where' }, ' ' + f.file + (f.line !== undefined ? ':' + f.line : '')) : null,
      h('span', { class: 'mod' }, ' ' + (f.module || '')),
      f.in_app ? h('span', { class: 'chip in-app' }, 'in app') : null))) : message('info', 'No stack was captured for this group.')));

  appendFlame(root, j.data, 'jank-flame', 'All stuck stacks', 'Every jank of the range');
}

// The merged call tree of a /api/v1/jank answer (its janks' profiles, or
// stacks) as a flame graph in a card appended to root; `which` says
// whose janks it merges.
export function appendFlame(root, answer, id, title, which) {
  const box = h('div', { class: 'flame', id });
  root.appendChild(card(title, which + ' merged into one call tree (outermost frame at the bottom): a jank sampled while it was stuck adds each sampled stack for its samples × the interval, one without samples its one stack for its whole duration; width: time stuck. Click a frame to zoom.',
    flameLegend('ms stuck', true), box));
  if (answer.flame_truncated) box.parentNode.appendChild(message('info', 'The call tree holds its first 20 000 frames.'));
  flame(box, answer.flame, { unit: 'ms', countLabel: 'stalls' });
}

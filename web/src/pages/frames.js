// Frames per window: slow (longer than a refresh) and frozen (over 700
// ms) percentages, dropped frames, and Matrix's levels of ⌊duration /
// refresh⌋: best < 3 ≤ normal < 9 ≤ middle < 24 ≤ high < 42 ≤ frozen;
// and where the slow frames' time went, per phase of the frame, with the
// widget types that took longest in them when the records name them
// (pacer run --frames=detail).

import { h, card, table, message } from '../dom.js';
import { num, pct } from '../format.js';
import { COLORS } from '../chart.js';
import { query } from './common.js';

const LEVELS = ['best', 'normal', 'middle', 'high', 'frozen'];
const PHASES = ['events', 'update', 'layout', 'paint', 'present'];

export async function render(root, ctx) {
  const f = await query(ctx, '/api/v1/frames');
  const ws = f.data.windows;
  if (!ws.length) { root.appendChild(message('info', 'No frame records in this range.')); return; }
  const base = (w) => ['windows', { window: w.window }];
  root.appendChild(card('By window', 'Frames rendered by each toplevel window\'s frame clock (docs/records.md, frames).',
    table(['window', 'frames', 'slow', 'slow %', 'frozen', 'frozen %', 'dropped'].concat(LEVELS), ws.map((w) => h('tr', {},
      h('td', {}, w.window || '–'),
      h('td', { class: 'n' }, num(w.frames, 'count', f.url, base(w).concat('frames'))),
      h('td', { class: 'n' }, num(w.slow, 'count', f.url, base(w).concat('slow'))),
      h('td', { class: 'n' }, num(pct(w.slow, w.frames), 'pct', f.url, { ratio: [base(w).concat('slow'), base(w).concat('frames')] })),
      h('td', { class: 'n' }, num(w.frozen, 'count', f.url, base(w).concat('frozen'))),
      h('td', { class: 'n' }, num(pct(w.frozen, w.frames), 'pct', f.url, { ratio: [base(w).concat('frozen'), base(w).concat('frames')] })),
      h('td', { class: 'n' }, num(w.dropped_frames, 'count', f.url, base(w).concat('dropped_frames'))),
      LEVELS.map((l) => h('td', { class: 'n' }, num(w.levels[l], 'count', f.url, base(w).concat('levels', l)))))), { id: 'frames-table', class: 'wide' })));
  const bars = card('Levels', 'Share of each window\'s frames per level (hover for the exact count).',
    h('div', { class: 'wf-legend' }, LEVELS.map((l, i) => h('span', {}, h('span', { class: 'swatch', style: { background: COLORS[i] } }), l))),
    ws.map((w) => {
      const total = LEVELS.reduce((s, l) => s + w.levels[l], 0) || 1;
      let left = 0;
      const track = h('div', { class: 'wf-track' });
      LEVELS.forEach((l, i) => {
        const width = 100 * w.levels[l] / total;
        if (width > 0) track.appendChild(h('div', { class: 'wf-seg', title: w.window + ' ' + l + ': ' + w.levels[l] + ' frames (' + width.toFixed(1) + ' %)', style: { left: left + '%', width: width + '%', background: COLORS[i] } }));
        left += width;
      });
      return h('div', { class: 'wf-row' }, h('div', { class: 'wf-label' }, w.window), track, h('div', { class: 'wf-total' }, w.frames + ' frames'));
    }));
  root.appendChild(bars);
  // where the frames' time went: the slow frames' time per phase (all
  // frames' when none was slow), per window
  const phased = ws.filter((w) => w.slow_phases_ms || w.phases_ms || w.slow_widgets);
  if (phased.length) {
    const phases = root.appendChild(card('Phases', 'Where the slow frames\' time went, per phase of the frame (docs/records.md, frames: events, update — tick callbacks and animations —, layout — measure and allocate —, paint, present).',
      h('div', { class: 'wf-legend' }, PHASES.map((p, i) => h('span', {}, h('span', { class: 'swatch', style: { background: COLORS[i] } }), p))),
      phased.map((w) => {
        const slow = !!w.slow_phases_ms || !w.phases_ms;
        const ph = w.slow_phases_ms || w.phases_ms || Object.fromEntries(PHASES.map((p) => [p, 0]));
        const key = slow ? 'slow_phases_ms' : 'phases_ms';
        const total = PHASES.reduce((s, p) => s + ph[p], 0) || 1;
        let left = 0;
        const track = h('div', { class: 'wf-track' });
        PHASES.forEach((p, i) => {
          const width = 100 * ph[p] / total;
          if (width > 0) track.appendChild(h('div', { class: 'wf-seg', dataset: { phase: p, ms: String(ph[p]) }, title: w.window + ' ' + p + ': ' + ph[p].toFixed(1) + ' ms (' + width.toFixed(1) + ' %)', style: { left: left + '%', width: width + '%', background: COLORS[i] } }));
          left += width;
        });
        const top = PHASES.reduce((a, p) => (ph[p] > ph[a] ? p : a), PHASES[0]);
        const row = h('div', { class: 'wf-row', dataset: { window: w.window } }, h('div', { class: 'wf-label' }, w.window), track,
          h('div', { class: 'wf-total' }, w.slow_phases_ms || w.phases_ms ? [num(ph[top], 'ms', f.url, base(w).concat(key, top)), ' ' + top + (slow ? ' (slow frames)' : '')] : '–'));
        return w.slow_widgets ? [row, widgets(w, f.url, base(w))] : row;
      })));
    phases.id = 'frames-phases';
  }
}

// The widget types whose layout (measure, allocate) or paint (snapshot)
// took longest in the window's slow frames, their own time summed over
// the records, longest first.
function widgets(w, url, at) {
  const el = (x) => at.concat('slow_widgets', { type: x.type, phase: x.phase });
  const more = w.slow_widget_types > w.slow_widgets.length ? ' The ' + w.slow_widgets.length + ' longest of ' + w.slow_widget_types + ' types.' : '';
  return h('div', { class: 'frames-widgets', dataset: { window: w.window } },
    h('p', { class: 'hint' }, 'Slowest widget types in ' + w.window + '\'s slow frames (their own time, children taken out).' + more),
    table(['widget type', 'phase', 'time', 'calls', 'records'], w.slow_widgets.map((x) => h('tr', { dataset: { type: x.type, phase: x.phase } },
      h('td', { class: 'mono' }, x.type), h('td', {}, x.phase),
      h('td', { class: 'n' }, num(x.ms, 'ms', url, el(x).concat('ms'))),
      h('td', { class: 'n' }, num(x.calls, 'count', url, el(x).concat('calls'))),
      h('td', { class: 'n' }, num(x.records, 'count', url, el(x).concat('records'))))), { class: 'slow-widgets' }));
}

// The start-up waterfall: launch → agent → main() → app created → first
// frame → main frame → full display, one bar per row, drawn with plain
// elements (widths set through CSSOM), with an axis in ms and the exact
// offsets in each segment's tooltip.

import { h } from './dom.js';
import { fmtNumber, msDecimals } from './format.js';
import { COLORS } from './chart.js';

export const PHASES = [['launch', 'launch'], ['agent_init', 'agent'], ['main', 'main()'], ['app_created', 'app created'],
  ['first_frame', 'first frame'], ['main_frame', 'main frame'], ['full_display', 'full display']];

function niceStep(max) {
  const raw = max / 6, p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || p;
}

const ms = (v) => fmtNumber(v, msDecimals(v)) + ' ms';

// rows: [{label, offsets: {phase: ms since launch}, link}]
export function waterfall(rows, id) {
  const max = Math.max(1, ...rows.flatMap((r) => Object.values(r.offsets).filter((v) => v !== undefined)));
  const step = niceStep(max), top = Math.ceil(max / step) * step;
  const legend = h('div', { class: 'wf-legend' }, PHASES.slice(1).map(([, name], i) =>
    h('span', {}, h('span', { class: 'swatch', style: { background: COLORS[i] } }, ''), PHASES[i][1] + ' → ' + name)));
  const axis = h('div', { class: 'wf-axis' });
  for (let t = 0; t <= top + 1e-9; t += step)
    axis.appendChild(h('span', { style: { left: (100 * t / top) + '%' } }, fmtNumber(t, 0) + (t === top ? ' ms' : '')));
  const body = rows.map((r) => {
    const track = h('div', { class: 'wf-track' });
    let prev = 0, prevName = 'launch';
    PHASES.slice(1).forEach(([p, name], i) => {
      const at = r.offsets[p];
      if (at === undefined) return;
      const seg = h('div', {
        class: 'wf-seg',
        title: prevName + ' → ' + name + ': ' + ms(at - prev) + ' (' + name + ' at ' + ms(at) + ' after launch)',
        dataset: { phase: p, at: String(at) },
        style: { left: (100 * prev / top) + '%', width: Math.max(0.2, 100 * (at - prev) / top) + '%', background: COLORS[i] },
      });
      track.appendChild(seg);
      prev = at; prevName = name;
    });
    return h('div', { class: 'wf-row' }, h('div', { class: 'wf-label' }, r.link || r.label), track,
      h('div', { class: 'wf-total' }, r.total || ''));
  });
  return h('div', { class: 'waterfall', id }, legend, body, h('div', { class: 'wf-row' }, h('div', { class: 'wf-label' }, 'ms after launch'), axis, h('div', {})));
}

// {phase: ms after launch} of a start-up record's phases (ns)
export function offsets(rec) {
  const ph = rec.phases || {}, out = {};
  if (ph.launch === undefined) return out;
  for (const [p] of PHASES) if (ph[p] !== undefined) out[p] = (ph[p] - ph.launch) / 1e6;
  return out;
}

export function median(values) {
  const v = values.filter((x) => x !== undefined).sort((a, b) => a - b);
  if (!v.length) return undefined;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

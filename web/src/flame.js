// Flame graphs on d3-flame-graph: data {name, value, children, in_app,
// module, file, line}; in-app frames in orange, the rest in blue; the
// label (also the SVG tooltip) gives the exact value.

import flamegraph from 'd3-flame-graph';
import { select } from 'd3-selection';
import '../node_modules/d3-flame-graph/dist/d3-flamegraph.css'; // not in the package's exports
import { fmtNumber } from './format.js';
import { h } from './dom.js';

export function flame(el, data, { unit, countLabel }) {
  const total = data.value || 1;
  const chart = flamegraph()
    .width(Math.max(400, el.clientWidth || 900))
    .cellHeight(18)
    .transitionDuration(0)
    .minFrameSize(1)
    .sort(true)
    .inverted(false)
    .setColorMapper((d) => (d.data.in_app ? (d.highlight ? '#c2410c' : '#fb923c') : (d.highlight ? '#1d4ed8' : '#93c5fd')))
    .label((d) => {
      const x = d.data;
      const where = x.file ? ' — ' + x.file + (x.line !== undefined ? ':' + x.line : '') : x.module ? ' — ' + x.module : '';
      return x.name + where + ': ' + fmtNumber(d.value, 3) + ' ' + unit + ' (' + fmtNumber(100 * d.value / total, 1) + ' %)' +
        ((x.count !== undefined ? x.count : x.calls) !== undefined ? ', ' + (x.count !== undefined ? x.count : x.calls) + ' ' + countLabel : '') +
        (x.in_app ? ' [in app]' : '');
    });
  select(el).datum(data).call(chart);
  return chart;
}

// The colours' legend, and what a frame's width says.
export function flameLegend(unit, inApp) {
  return h('div', { class: 'wf-legend' },
    inApp ? [h('span', {}, h('span', { class: 'swatch', style: { background: '#fb923c' } }), 'in-app frame'),
      h('span', {}, h('span', { class: 'swatch', style: { background: '#93c5fd' } }), 'other modules')]
      : h('span', {}, h('span', { class: 'swatch', style: { background: '#93c5fd' } }), 'function'),
    h('span', {}, 'width: ' + unit + ' (hover a frame for the exact value)'));
}

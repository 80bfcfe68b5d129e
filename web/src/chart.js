// Charts on uPlot: every chart has axes with units, a legend, and a
// tooltip with the exact values under the cursor.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom.js';
import { fmtTime, fmtNumber, msDecimals } from './format.js';

export const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777',
  '#4b5563', '#65a30d'];

function exact(v, unit) {
  if (v === null || v === undefined) return '–';
  if (unit === 'ms') return fmtNumber(v, msDecimals(v) + 1) + ' ms';
  if (unit === '%') return fmtNumber(v, 2) + ' %';
  return fmtNumber(v, Number.isInteger(v) ? 0 : 3) + (unit ? ' ' + unit : '');
}

// A tooltip that follows the cursor, with the x label and every series.
function tooltipPlugin(xLabel, unit) {
  let tip;
  return {
    hooks: {
      init: (u) => {
        tip = h('div', { class: 'chart-tip' });
        tip.style.display = 'none';
        u.over.appendChild(tip);
        u.over.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
      },
      setCursor: (u) => {
        const i = u.cursor.idx;
        if (i === null || i === undefined || u.cursor.left < 0) { tip.style.display = 'none'; return; }
        while (tip.firstChild) tip.removeChild(tip.firstChild);
        tip.appendChild(h('div', { class: 'tip-x' }, xLabel(u.data[0][i], i)));
        for (let s = 1; s < u.series.length; s++) {
          if (!u.series[s].show) continue;
          tip.appendChild(h('div', {}, h('span', { class: 'swatch', style: { background: u.series[s].stroke() } }),
            u.series[s].label + ': ' + exact(u.data[s][i], unit)));
        }
        tip.style.display = 'block';
        const left = u.cursor.left + 12, width = u.over.clientWidth;
        tip.style.left = (left + 220 > width ? Math.max(0, u.cursor.left - 230) : left) + 'px';
        tip.style.top = Math.max(0, u.cursor.top - 10) + 'px';
      },
    },
  };
}

function width(el) {
  return Math.max(320, (el.clientWidth || el.parentNode.clientWidth || 800) - 8);
}

// Values over time: x in unix seconds (each bucket's start), one line per
// series; null leaves a gap.
export function timeChart(el, { x, series, unit, yLabel, height }) {
  const opts = {
    width: width(el),
    height: height || 240,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      { label: 'time (UTC)', space: 60 },
      { label: yLabel || unit, size: 70, values: (u, vals) => vals.map((v) => fmtNumber(v, v < 10 && v !== 0 ? 1 : 0) + (unit === '%' ? ' %' : unit ? ' ' + unit : '')) },
    ],
    series: [{ label: 'time', value: (u, v) => (v === null ? '–' : fmtTime(v)) }].concat(series.map((s, i) => ({
      label: s.label,
      stroke: s.color || COLORS[i % COLORS.length],
      width: 2,
      spanGaps: false,
      points: { show: true, size: 5 },
      value: (u, v) => exact(v, unit),
    }))),
    legend: { live: true },
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    plugins: [tooltipPlugin((v) => fmtTime(v), unit)],
  };
  return new uPlot(opts, [x].concat(series.map((s) => s.values)), el);
}

// Bars over categories (labels[i]), e.g. a histogram's bins.
export function barChart(el, { labels, series, unit, xLabel, yLabel, height }) {
  const x = labels.map((_, i) => i);
  const bars = uPlot.paths.bars({ size: [0.9, 60] });
  const opts = {
    width: width(el),
    height: height || 240,
    scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      { label: xLabel, space: 50, values: (u, vals) => vals.map((v) => (Number.isInteger(v) && labels[v] !== undefined ? labels[v] : '')) },
      { label: yLabel, size: 60 },
    ],
    series: [{ label: xLabel, value: (u, v) => (v === null ? '–' : labels[v]) }].concat(series.map((s, i) => ({
      label: s.label,
      stroke: s.color || COLORS[i % COLORS.length],
      fill: (s.color || COLORS[i % COLORS.length]) + '99',
      paths: bars,
      points: { show: false },
      value: (u, v) => exact(v, unit),
    }))),
    legend: { live: true },
    plugins: [tooltipPlugin((v) => labels[v], unit)],
  };
  return new uPlot(opts, [x].concat(series.map((s) => s.values)), el);
}

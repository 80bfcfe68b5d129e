// Traces: a `pacer trace` recording, exported as Chrome JSON (`pacer trace
// export --format chrome`) or folded stacks, opened in the browser — its
// flame graph and call tree — or handed to ui.perfetto.dev. The file
// stays in this browser: nothing is uploaded to pacerd.

import { h, card, message, clear } from '../dom.js';
import { fmtNumber } from '../format.js';
import { flame, flameLegend } from '../flame.js';
import { parseTrace } from '../trace_parse.js';

const PERFETTO = 'https://ui.perfetto.dev';
const MAX_TREE = 3000;

function callTree(tree, unit) {
  let shown = 0;
  const row = (n, depth) => {
    shown++;
    const label = h('span', { class: 'ct-row' }, h('span', { class: 'ct-name' }, n.name),
      h('span', { class: 'n' }, fmtNumber(n.value, 3) + ' ' + unit), h('span', { class: 'n' }, fmtNumber(n.self, 3) + ' ' + unit),
      h('span', { class: 'n' }, String(n.calls)));
    if (!n.children.length || shown > MAX_TREE) return h('div', { class: 'ct-leaf', dataset: { name: n.name, calls: String(n.calls), total: String(n.value) } }, label);
    return h('details', { open: depth < 3, dataset: { name: n.name, calls: String(n.calls), total: String(n.value) } }, h('summary', {}, label),
      n.children.map((c) => row(c, depth + 1)));
  };
  return h('div', { class: 'calltree', id: 'call-tree' },
    h('div', { class: 'ct-row ct-head' }, h('span', {}, 'function'), h('span', {}, 'total'), h('span', {}, 'self'), h('span', {}, 'calls')),
    row(tree, 0));
}

function openInPerfetto(buffer, title) {
  const win = window.open(PERFETTO + '/#!/viewer');
  if (!win) return false;
  const timer = setInterval(() => win.postMessage('PING', PERFETTO), 100);
  const onMessage = (e) => {
    if (e.origin !== PERFETTO || e.data !== 'PONG') return;
    clearInterval(timer);
    window.removeEventListener('message', onMessage);
    win.postMessage({ perfetto: { buffer, title } }, PERFETTO);
  };
  window.addEventListener('message', onMessage);
  setTimeout(() => clearInterval(timer), 30000);
  return true;
}

export async function render(root) {
  const out = h('div', { id: 'trace-view' });
  const input = h('input', { type: 'file', id: 'trace-file', accept: '.json,.folded,.txt,application/json' });
  input.addEventListener('change', async () => {
    const file = input.files[0];
    if (!file) return;
    clear(out);
    const buffer = await file.arrayBuffer();
    let parsed;
    try { parsed = parseTrace(new TextDecoder().decode(buffer)); } catch (e) {
      out.appendChild(message('error', file.name + ': ' + e.message));
      return;
    }
    const perfetto = h('button', { type: 'button', id: 'open-perfetto' }, 'Open in ui.perfetto.dev');
    perfetto.addEventListener('click', () => openInPerfetto(buffer, file.name));
    const box = h('div', { class: 'flame', id: 'trace-flame' });
    out.append(
      h('p', { id: 'trace-summary' }, file.name + ': ' + parsed.events + (parsed.unit === 'ms' ? ' calls, ' : ' stacks, ') +
        fmtNumber(parsed.tree.value, 3) + ' ' + parsed.unit + ' in all. ', perfetto),
      card('Flame graph', 'Width: time in the call (self and callees); the same call path merged across calls. Click a frame to zoom.',
        flameLegend(parsed.unit === 'ms' ? 'ms in the call' : 'samples', false), box),
      card('Call tree', 'Total, self time and calls per call path.', callTree(parsed.tree, parsed.unit)));
    flame(box, parsed.tree, { unit: parsed.unit, countLabel: 'calls' });
  });
  root.appendChild(card('Open a trace', 'A function trace of code built with -finstrument-functions: `pacer trace record -o app.trace -- ./app`, then `pacer trace export app.trace --format chrome -o app.json` (or --format folded). The file is read here, in the browser.',
    h('label', { for: 'trace-file' }, 'Trace file '), input));
  root.appendChild(out);
}

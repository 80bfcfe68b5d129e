// Reading a function trace in the browser: the Chrome trace JSON that
// `pacer trace export --format chrome` (and `pacer export --format
// chrome`) writes, or the folded stacks of `--format folded`, into one
// call tree: {name, value (ms, or samples for folded), self, calls,
// children}, threads under the root, the same call path merged.

function node(name) {
  return { name, value: 0, self: 0, calls: 0, children: [], index: new Map() };
}

function child(n, name) {
  let c = n.index.get(name);
  if (!c) { c = node(name); n.index.set(name, c); n.children.push(c); }
  return c;
}

function finish(n) {
  let kids = 0;
  for (const c of n.children) { finish(c); kids += c.value; }
  n.self = Math.max(0, n.value - kids);
  delete n.index;
  n.children.sort((a, b) => b.value - a.value);
  return n;
}

export function parseChrome(doc) {
  const events = Array.isArray(doc) ? doc : doc.traceEvents;
  if (!Array.isArray(events)) throw new Error('not a Chrome trace: no traceEvents list');
  const threads = new Map(), names = new Map();
  for (const e of events) {
    if (e.ph === 'M' && e.name === 'thread_name' && e.args) names.set(e.pid + ':' + e.tid, e.args.name);
  }
  // B/E pairs become complete events
  const open = new Map(), complete = [];
  for (const e of events) {
    const key = e.pid + ':' + e.tid;
    if (e.ph === 'X') complete.push({ key, name: e.name, ts: +e.ts, dur: +e.dur || 0 });
    else if (e.ph === 'B') { if (!open.has(key)) open.set(key, []); open.get(key).push(e); }
    else if (e.ph === 'E') {
      const b = (open.get(key) || []).pop();
      if (b) complete.push({ key, name: b.name, ts: +b.ts, dur: +e.ts - +b.ts });
    }
  }
  for (const e of complete) { if (!threads.has(e.key)) threads.set(e.key, []); threads.get(e.key).push(e); }
  const root = node('all');
  let n = 0;
  for (const [key, list] of threads) {
    list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    const t = child(root, names.get(key) || 'thread ' + key.split(':')[1]);
    const stack = [];
    for (const e of list) {
      while (stack.length && stack[stack.length - 1].end <= e.ts) stack.pop();
      const parent = stack.length ? stack[stack.length - 1].node : t;
      const c = child(parent, e.name);
      c.value += e.dur / 1000;
      c.calls += 1;
      if (!stack.length) t.value += e.dur / 1000;
      stack.push({ end: e.ts + e.dur, node: c });
      n++;
    }
    root.value += t.value;
  }
  if (!n) throw new Error('the trace holds no complete events (ph "X" or "B"/"E")');
  return { tree: finish(root), unit: 'ms', events: n };
}

export function parseFolded(text) {
  const root = node('all');
  let n = 0;
  for (const line of text.split('\n')) {
    const m = line.trim().match(/^(.*)\s+(\d+(?:\.\d+)?)$/);
    if (!m) continue;
    const v = Number(m[2]);
    let cur = root;
    root.value += v;
    for (const f of m[1].split(';')) { cur = child(cur, f); cur.value += v; cur.calls += 1; }
    n++;
  }
  if (!n) throw new Error('no folded stack lines ("a;b;c 123")');
  return { tree: finish(root), unit: 'samples', events: n };
}

export function parseTrace(text) {
  const t = text.trimStart();
  if (t.startsWith('{') || t.startsWith('[')) return parseChrome(JSON.parse(text));
  return parseFolded(text);
}

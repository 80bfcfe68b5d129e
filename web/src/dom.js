// Building the page without HTML strings: the Content-Security-Policy
// allows no inline script or style, and nothing here ever parses markup.

// h('a', {class: 'x', href: '/', onclick: fn, dataset: {v: 1}}, 'text', child…)
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style') Object.assign(el.style, v); // CSSOM: allowed by the policy
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// A section with a heading and a short explanation.
export function card(title, help, ...body) {
  return h('section', { class: 'card' },
    h('h2', {}, title),
    help ? h('p', { class: 'help' }, help) : null,
    ...body);
}

// headers: text, or {text, …attributes of the th} (a title, say)
export function table(headers, rows, attrs) {
  const th = (t) => {
    if (typeof t !== 'object' || t instanceof Node) return h('th', {}, t);
    const { text, ...rest } = t;
    return h('th', rest, text);
  };
  return h('table', attrs || {}, h('thead', {}, h('tr', {}, headers.map(th))), h('tbody', {}, rows));
}

export function message(kind, text) {
  return h('p', { class: 'msg ' + kind }, text);
}

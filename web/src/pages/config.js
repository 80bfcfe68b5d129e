// Config: the app's page config (the seed's XML), as pacerd serves it to
// the SDK; saving validates it on the server (PUT /v1/config/{app}) and
// running apps pick it up at their next poll. An error is shown at its
// line.

import { h, card, message } from '../dom.js';
import { get, send, HttpError } from '../api.js';

const EXAMPLE = '<pacer>\n  <page id="MainWindow" tag="1">\n    <api id="/api/config"/>\n  </page>\n</pacer>\n';

export async function render(root, ctx) {
  const url = '/v1/config/' + encodeURIComponent(ctx.app);
  let text = '', etag = null, missing = false;
  try {
    const r = await fetch(url, { credentials: 'same-origin' });
    if (r.status === 404) missing = true;
    else if (!r.ok) throw new HttpError(r.status, await r.json().catch(() => null));
    else { text = await r.text(); etag = r.headers.get('ETag'); }
  } catch (e) { if (e instanceof HttpError) throw e; throw new Error('GET ' + url + ': ' + e.message); }

  const area = h('textarea', { id: 'config-text', spellcheck: 'false', wrap: 'off', rows: 24, 'aria-label': 'config XML' });
  area.value = missing ? EXAMPLE : text;
  const gutter = h('div', { class: 'gutter', id: 'config-gutter', 'aria-hidden': 'true' });
  const status = h('div', { class: 'msg', id: 'config-status' });
  status.hidden = true;
  let errLine = null;
  const lines = () => {
    while (gutter.firstChild) gutter.removeChild(gutter.firstChild);
    const n = area.value.split('\n').length;
    for (let i = 1; i <= n; i++) gutter.appendChild(h('div', { class: i === errLine ? 'err' : '', dataset: { line: String(i) } }, String(i)));
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener('input', () => { errLine = null; lines(); });
  area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
  const save = h('button', { type: 'button', id: 'config-save' }, 'Save and push');
  save.addEventListener('click', async () => {
    save.disabled = true;
    try {
      const r = await send('PUT', url, area.value, 'application/xml');
      errLine = null;
      status.className = 'msg ok';
      status.textContent = 'Saved as version ' + r.version + ' (' + r.pages + ' pages); running apps take it at their next poll.';
    } catch (e) {
      status.className = 'msg error';
      if (e instanceof HttpError && e.body && e.body.line) {
        errLine = e.body.line;
        status.textContent = 'line ' + e.body.line + (e.body.column ? ', column ' + e.body.column : '') + ': ' + e.body.error.replace(/^\d+:\d+: /, '');
        status.dataset.line = String(e.body.line);
        const start = area.value.split('\n').slice(0, errLine - 1).join('\n').length + (errLine > 1 ? 1 : 0);
        area.focus();
        area.setSelectionRange(start, start + (area.value.split('\n')[errLine - 1] || '').length);
      } else {
        status.textContent = e.message;
      }
    }
    status.hidden = false;
    save.disabled = false;
    lines();
  });
  root.appendChild(card('Page config of ' + ctx.app, missing
    ? 'pacerd holds no config for this app yet: this is an example to start from.'
    : 'The newest version (ETag ' + etag + '), as the SDK fetches it from ' + url + '.',
  h('div', { class: 'editor' }, gutter, area), h('p', {}, save), status,
  h('p', { class: 'help' }, 'Format: DESIGN §4 / the README\'s "Config" section: <page id tag="1">, <api id>, <splash>, <thresholds>.')));
  lines();
  if (missing) root.appendChild(message('info', 'No config stored yet.'));
}

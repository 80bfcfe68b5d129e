// Talking to pacerd: the session cookie goes with every request (the
// browser holds it, HttpOnly: this code never sees it), and a change
// carries the session's CSRF token, which lives only in this page's
// memory — never in a URL or in the page's storage.

let csrfToken = null;

export function setCsrf(t) { csrfToken = t; }

export class HttpError extends Error {
  constructor(status, body) {
    super((body && body.error) || ('HTTP ' + status));
    this.status = status;
    this.body = body;
  }
}

// '/api/v1/pages' + {app: 'shop', version: undefined} → '/api/v1/pages?app=shop'
export function qurl(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? path + '?' + s : path;
}

async function parse(r) {
  const type = r.headers.get('Content-Type') || '';
  const body = type.includes('json') ? await r.json().catch(() => null) : await r.text();
  if (!r.ok) throw new HttpError(r.status, typeof body === 'object' ? body : { error: body });
  return body;
}

export async function get(path, params) {
  const r = await fetch(qurl(path, params), { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  return parse(r);
}

export async function send(method, path, body, contentType) {
  const headers = { Accept: 'application/json' };
  if (csrfToken) headers['X-CSRF-Token'] = csrfToken;
  if (contentType) headers['Content-Type'] = contentType;
  const r = await fetch(path, { method, body, headers, credentials: 'same-origin' });
  return parse(r);
}

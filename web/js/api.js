/* Requests to the /v1 API: api() with the role's token (a 401 asks for it), qs() builds query strings. */
import {askToken, roleOf, tokenOf} from './tokens.js';

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

/* The message of an error answer ({"error": {"code", "message"}}), else the status. */
async function errorOf(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    if (j && j.error) return new ApiError(res.status, j.error.code, j.error.message || j.error.code);
  } catch (e) { /* not JSON */ }
  return new ApiError(res.status, 'http_' + res.status, `HTTP ${res.status} ${res.statusText}${text ? ': ' + text.slice(0, 200) : ''}`);
}

/* A request with the token of the role its route needs. A 401 asks for
 * that token (askToken) and, once it is saved, sends the request again. */
export async function api(path, opts = {}) {
  const method = (opts.method || 'GET').toUpperCase();
  const role = roleOf(method, path);
  for (;;) {
    const token = tokenOf(role);
    const headers = Object.assign({Accept: 'application/json'}, opts.headers || {});
    if (token) headers.Authorization = 'Bearer ' + token;
    let res;
    try {
      res = await fetch(path, Object.assign({}, opts, {headers}));
    } catch (e) {
      throw new ApiError(0, 'network', 'cannot reach the server: ' + e.message);
    }
    if (res.status === 401) {
      const err = await errorOf(res);
      err.role = role;
      // a token saved while this request was under way: try that one first
      if (tokenOf(role) !== token) continue;
      await askToken(role, err, !!token);   // throws err when the prompt is cancelled
      continue;
    }
    if (!res.ok) throw await errorOf(res);
    if (opts.raw) return res;
    return opts.text ? res.text() : res.json();
  }
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

/* symd dashboard: a hash-routed single page over the /v1 API.
 * Everything the server sends is text: the DOM is built with createElement
 * and textContent only (see el()), never with innerHTML. */
'use strict';

const view = document.getElementById('view');

/* ---- DOM helpers -------------------------------------------------------- */

/* el('a', {href: '#/x', testid: 'y', class: 'z'}, 'text', child, ...).
 * Strings become text nodes; null/false children are skipped. */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'testid') e.dataset.testid = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  return add(e, children);
}

/* Appends children (nested arrays, nodes, strings as text; null/false skipped). */
function add(node, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/* Replaces a node's children. */
function put(node, ...children) {
  node.replaceChildren();
  return add(node, children);
}

function fmtTime(ms) {
  if (typeof ms !== 'number') return '';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function table(testid, headers, rows) {
  return el('table', {testid},
    el('thead', null, el('tr', null, headers.map((h) => el('th', {scope: 'col'}, h)))),
    el('tbody', null, rows));
}

/* A status line: messages and errors of one view. A 401 the token prompt
 * was cancelled for offers to enter the token. */
function statusLine(testid) {
  const p = el('p', {class: 'status', testid, role: 'status'});
  return {
    node: p,
    info(msg) { p.className = 'status'; p.textContent = msg; },
    error(err) {
      p.className = 'status error';
      p.textContent = err && err.message ? err.message : String(err);
      if (err && err.status === 401 && ROLES[err.role]) {
        add(p, ' ', el('button', {type: 'button', testid: 'status-token', onclick: () => openTokens(err.role)},
          'Enter the ' + err.role + ' token'));
      }
    },
    clear() { p.className = 'status'; p.textContent = ''; },
  };
}

/* ---- API ---------------------------------------------------------------- */

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
async function api(path, opts = {}) {
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

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

/* ---- bearer tokens: one per role ---------------------------------------- */

/* The server's three roles, each with its own token (--upload-token,
 * --report-token, --read-token). Tokens are kept in localStorage. */
const ROLES = {
  read: 'viewing crashes, groups, trends and images',
  upload: 'uploading and deleting images',
  report: 'posting, symbolicating and deleting reports',
};
const TOKEN_PREFIX = 'symd.token.';

/* The role a request needs: GETs read; images are written by the upload
 * role; reports posted, symbolicated and deleted by the report role. */
function roleOf(method, path) {
  if (method === 'GET' || method === 'HEAD') return 'read';
  return path.startsWith('/v1/images') ? 'upload' : 'report';
}

function tokenOf(role) { return localStorage.getItem(TOKEN_PREFIX + role) || ''; }

// the one token of earlier dashboards was the upload token
if (localStorage.getItem('symd.token') !== null) {
  if (!tokenOf('upload')) localStorage.setItem(TOKEN_PREFIX + 'upload', localStorage.getItem('symd.token'));
  localStorage.removeItem('symd.token');
}

const authBox = document.getElementById('auth');
const authWhy = document.getElementById('auth-why');
const waiting = {};   // role -> {promise, resolve, reject, error}: requests waiting for its token

/* Shows the token box: the rows of the roles asked for (all when none). */
function showTokenRows(roles) {
  for (const row of authBox.querySelectorAll('.auth-row')) {
    const r = row.dataset.role;
    row.hidden = roles.length > 0 && !roles.includes(r);
    const st = row.querySelector('.auth-state');
    st.textContent = tokenOf(r) ? 'saved' : 'not set';
    st.classList.toggle('set', !!tokenOf(r));
  }
  authBox.hidden = false;
  const first = authBox.querySelector('.auth-row:not([hidden]) input');
  if (first) first.focus();
}

/* Waits until the token of a role is saved; rejects with the 401 when the
 * prompt is cancelled. One prompt per role, whatever the requests waiting. */
function askToken(role, err, refused) {
  if (!waiting[role]) {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    waiting[role] = {promise, resolve, reject, error: err};
  }
  const pending = Object.keys(waiting);
  authWhy.textContent = pending.map((r) => (refused && r === role
    ? `The ${r} token was refused (the server says: ${waiting[r].error.message}).`
    : `This needs the ${r} token (the server says: ${waiting[r].error.message}).`)).join(' ') +
    ' It is kept in this browser.';
  authBox.dataset.mode = 'prompt';
  document.getElementById('auth-cancel').textContent = 'Cancel';
  showTokenRows(pending);
  return waiting[role].promise;
}

/* The token box opened by hand (the Tokens button), all roles or one. */
function openTokens(role) {
  authWhy.textContent = 'Tokens are kept in this browser (localStorage) and sent as Authorization: Bearer …; ' +
    'a server started without a role\'s token needs none for it.';
  authBox.dataset.mode = 'settings';
  document.getElementById('auth-cancel').textContent = 'Close';
  showTokenRows(role && !Object.keys(waiting).length ? [role] : Object.keys(waiting));
}

function closeTokens() {
  authBox.hidden = true;
  for (const i of authBox.querySelectorAll('input')) i.value = '';
}

document.getElementById('auth-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  let saved = 0;
  for (const row of authBox.querySelectorAll('.auth-row:not([hidden])')) {
    const input = row.querySelector('input');
    const v = input.value.trim();
    if (!v) continue;
    localStorage.setItem(TOKEN_PREFIX + row.dataset.role, v);
    saved++;
    const w = waiting[row.dataset.role];
    if (w) { delete waiting[row.dataset.role]; w.resolve(); }
  }
  if (!saved) {
    const first = authBox.querySelector('.auth-row:not([hidden]) input');
    if (first) first.focus();
    return;
  }
  const left = Object.keys(waiting);   // other roles still asked for
  if (left.length) {
    askToken(left[0], waiting[left[0]].error, false);
    return;
  }
  const manual = authBox.dataset.mode === 'settings';
  closeTokens();
  if (manual) route();   // a view that failed without the token loads again
});
document.getElementById('auth-cancel').addEventListener('click', () => {
  closeTokens();
  for (const [role, w] of Object.entries(waiting)) { delete waiting[role]; w.reject(w.error); }
});
for (const b of authBox.querySelectorAll('button[data-forget]')) {
  b.addEventListener('click', () => {
    localStorage.removeItem(TOKEN_PREFIX + b.dataset.forget);
    const st = b.closest('.auth-row').querySelector('.auth-state');
    st.textContent = 'not set';
    st.classList.remove('set');
  });
}
authBox.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') document.getElementById('auth-cancel').click(); });
document.getElementById('tokens-open').addEventListener('click', () => {
  if (authBox.hidden) openTokens(); else if (!Object.keys(waiting).length) closeTokens();
});

/* ---- Report kinds ------------------------------------------------------- */

/* The kinds a stored report can have (the answers' "kind"); listings and
 * groups take ?kind=NAME. Class names are built only from this list. */
/* The source formats of reports (the listings' ?format=). */
const FORMATS = ['crash', 'ips', 'kscrash', 'plcrash', 'metrickit', 'asc'];
const KINDS = ['crash', 'hang', 'resource', 'jetsam', 'panic', 'sample', 'spindump', 'fragment', 'launch'];
const KIND_LABEL = {
  crash: 'Crash', hang: 'Hang', resource: 'Resource report', jetsam: 'Jetsam event',
  panic: 'Kernel panic', sample: 'Sample', spindump: 'Spindump', fragment: 'Fragment',
  launch: 'Slow launch',
};

/* A badge naming a report's kind; nothing when the answer has none (older servers). */
function kindBadge(kind) {
  if (typeof kind !== 'string' || !kind) return null;
  const known = KINDS.includes(kind);
  return el('span', {class: 'kind' + (known ? ' kind-' + kind : ''), testid: 'kind-badge', 'data-kind': kind,
    title: known ? KIND_LABEL[kind] : kind}, kind);
}

/* A search box with its label and button (the images view). */
function searchForm(id, label, value, onSearch, ...extra) {
  const input = el('input', {id, type: 'search', value, testid: id});
  const form = el('form', {class: 'search', role: 'search'},
    el('label', {for: id}, label), input, extra, el('button', {type: 'submit', testid: id + '-submit'}, 'Search'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); onSearch(input.value.trim()); });
  return form;
}

/* ---- Trend charts: inline SVG drawn here -------------------------------- */

const SVG_NS = 'http://www.w3.org/2000/svg';
const DAY_MS = 86400000;
const TREND_DAYS = 30;   // the charts: the last 30 UTC days, today included

/* svg('rect', {x: 1}, ...children): el() for SVG; strings become text. */
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    e.setAttribute(k === 'testid' ? 'data-testid' : k, String(v));
  }
  return add(e, children);
}

/* A UTC day (days since 1970) as 2026-11-24, and as "Nov 24". */
function dayISO(day) { return new Date(day * DAY_MS).toISOString().slice(0, 10); }
function dayShort(day) {
  return new Date(day * DAY_MS).toLocaleDateString('en-US', {month: 'short', day: 'numeric', timeZone: 'UTC'});
}

/* The counts of a trend answer ({"from_day", "days": [...]}), or null. */
function trendCounts(trend) {
  if (!trend || !isInt(trend.from_day) || !Array.isArray(trend.days) || !trend.days.length) return null;
  return trend.days.map((c) => (isInt(c) && c > 0 ? c : 0));
}

/* The top of a count axis and its step: 1, 2 or 5 times a power of ten,
 * at most four steps. */
function niceScale(max) {
  if (max <= 0) return {top: 1, step: 1};
  for (let p = 1; ; p *= 10) {
    for (const m of [1, 2, 5]) {
      if (max / (m * p) <= 4) return {top: Math.ceil(max / (m * p)) * m * p, step: m * p};
    }
  }
}

/* A bar per day; the count on hover (each day's <title>), a few dates on the axis. */
function trendChart(trend, what) {
  const days = trendCounts(trend);
  if (!days) return el('p', {class: 'dim'}, 'No trend in the answer.');
  const n = days.length, from = trend.from_day, today = from + n - 1;
  const W = 1200, H = 200, L = 44, R = 14, T = 12, B = 28;
  const pw = W - L - R, ph = H - T - B, slot = pw / n, bw = Math.max(2, slot * 0.7);
  const total = days.reduce((a, b) => a + b, 0);
  const {top, step} = niceScale(Math.max(...days));
  const y = (v) => T + ph - (v / top) * ph;
  const ticks = [];
  for (let v = 0; v <= top; v += step) {
    ticks.push(svg('line', {class: v ? 'grid' : 'axis', x1: L, x2: W - R, y1: y(v), y2: y(v)}),
      svg('text', {class: 'tick', x: L - 7, y: y(v) + 4, 'text-anchor': 'end', testid: 'trend-ytick'}, String(v)));
  }
  const cols = days.map((c, i) => {
    const day = from + i, x = L + i * slot, h = (c / top) * ph;
    return svg('g', {class: 'day', testid: 'trend-day', 'data-day': dayISO(day), 'data-count': c},
      svg('title', null, `${dayISO(day)}${day === today ? ' (today)' : ''}: ${plural(c, 'report')}`),
      svg('rect', {class: 'hit', x, y: T, width: slot, height: ph}),
      c ? svg('rect', {class: 'bar', testid: 'trend-bar', x: x + (slot - bw) / 2, y: T + ph - h, width: bw, height: h}) : null);
  });
  // a date every week back from today
  const labels = days.map((c, i) => ((n - 1 - i) % 7 === 0
    ? svg('text', {class: 'tick', x: L + (i + 0.5) * slot, y: H - 8, 'text-anchor': 'middle', testid: 'trend-xtick'},
      i === n - 1 ? 'today' : dayShort(from + i))
    : null));
  return svg('svg', {class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', testid: 'trend-chart',
    'aria-label': `${what}: ${plural(total, 'report')} in the last ${n} days, ${days[n - 1]} today`,
    'data-from-day': from, 'data-top': top, 'data-total': total},
  svg('rect', {class: 'plot', testid: 'trend-plot', x: L, y: T, width: pw, height: ph}),
  ticks, cols, svg('line', {class: 'axis', x1: L, x2: W - R, y1: T + ph, y2: T + ph}), labels,
  total ? null : svg('text', {class: 'empty', x: L + pw / 2, y: T + ph / 2, 'text-anchor': 'middle'}, `No reports in the last ${n} days`));
}

/* A chart with its title and a one-line summary. */
function trendPanel(testid, title, trend) {
  const days = trendCounts(trend) || [];
  const total = days.reduce((a, b) => a + b, 0);
  let busiest = -1;
  days.forEach((c, i) => { if (c && (busiest < 0 || c >= days[busiest])) busiest = i; });
  return el('section', {class: 'panel trend', testid},
    el('h2', null, title, el('span', {class: 'dim'}, ` · last ${days.length || TREND_DAYS} days, UTC`)),
    el('p', {class: 'summary', testid: 'trend-summary'},
      el('strong', null, plural(total, 'report')), ', ', days.length ? days[days.length - 1] : 0, ' today',
      busiest >= 0 ? `, busiest day ${dayShort(trend.from_day + busiest)} (${days[busiest]})` : null),
    trendChart(trend, title));
}

/* A group's last days as a row-sized bar strip. */
function sparkline(trend) {
  const days = trendCounts(trend);
  if (!days) return null;
  const n = days.length, W = n * 4 + 1, H = 24;
  const max = Math.max(1, ...days);
  const total = days.reduce((a, b) => a + b, 0);
  return svg('svg', {class: 'spark', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', testid: 'group-spark',
    'aria-label': `${plural(total, 'report')} in the last ${n} days`, 'data-counts': days.join(',')},
  svg('title', null, `Last ${n} days: ${plural(total, 'report')}, ${days[n - 1]} today`),
  svg('line', {class: 'spark-base', x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5}),
  days.map((c, i) => {
    if (!c) return null;
    const h = Math.max(2, (c / max) * (H - 2));
    return svg('rect', {class: 'bar', x: 1 + i * 4, y: H - 1 - h, width: 3, height: h},
      svg('title', null, `${dayISO(trend.from_day + i)}: ${plural(c, 'report')}`));
  }));
}

/* ---- Crashes: filters, groups, reports ---------------------------------- */

/* The dimensions crashes are filtered and spread by: [query argument,
 * label, key of the group's spread]. */
const DIMS = [
  ['app_version', 'App version', 'app_versions'],
  ['os_version', 'OS version', 'os_versions'],
  ['hardware_model', 'Device', 'hardware_models'],
];

/* The filters of the crash views, from the address. */
function filtersOf(params) {
  const f = {query: params.get('query') || '', kind: KINDS.includes(params.get('kind')) ? params.get('kind') : '',
    format: FORMATS.includes(params.get('format')) ? params.get('format') : ''};
  for (const [k] of DIMS) f[k] = params.get(k) || '';
  return f;
}
function dimsOf(f) { return Object.fromEntries(DIMS.map(([k]) => [k, f[k] || ''])); }
function hasDims(f) { return DIMS.some(([k]) => f[k]); }

/* The page of a group (kind and signature), its reports narrowed by dims. */
function groupHref(g, dims) {
  return '#/group' + qs(Object.assign({kind: g.kind || 'crash', signature: g.signature || ''}, dims || {}));
}

/* The filter form: search, kind, format, app version, OS version, device.
 * Kind and format apply at once, the rest on submit. */
function filterForm(f, onApply) {
  const search = el('input', {id: 'crash-search', type: 'search', value: f.query, testid: 'crash-search',
    placeholder: 'signature, process, bundle id, exception…'});
  const kind = el('select', {id: 'kind-filter', testid: 'kind-filter'},
    el('option', {value: ''}, 'all kinds'), KINDS.map((k) => el('option', {value: k}, k)));
  kind.value = f.kind;
  const format = el('select', {id: 'format-filter', testid: 'format-filter'},
    el('option', {value: ''}, 'all formats'), FORMATS.map((k) => el('option', {value: k}, k)));
  format.value = f.format;
  const dims = DIMS.map(([k]) => el('input', {id: 'filter-' + k, type: 'text', value: f[k], testid: 'filter-' + k,
    list: 'values-' + k, placeholder: 'any', autocomplete: 'off', spellcheck: 'false'}));
  const lists = DIMS.map(([k]) => el('datalist', {id: 'values-' + k}));
  const field = (id, label, input, cls) => el('div', {class: 'field' + (cls ? ' ' + cls : '')}, el('label', {for: id}, label), input);
  const read = () => Object.assign({query: search.value.trim(), kind: kind.value, format: format.value},
    Object.fromEntries(DIMS.map(([k], i) => [k, dims[i].value.trim()])));
  const clear = () => { search.value = ''; kind.value = ''; format.value = ''; for (const d of dims) d.value = ''; onApply(read()); };
  const form = el('form', {class: 'filters', role: 'search', testid: 'crash-filters'},
    field('crash-search', 'Search', search, 'wide'), field('kind-filter', 'Kind', kind),
    field('format-filter', 'Format', format),
    DIMS.map(([k, label], i) => field('filter-' + k, label, dims[i])),
    el('div', {class: 'field buttons'},
      el('button', {type: 'submit', testid: 'crash-search-submit'}, 'Search'),
      el('button', {type: 'button', testid: 'filter-clear', onclick: clear}, 'Clear')),
    lists);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); onApply(read()); });
  kind.addEventListener('change', () => onApply(read()));
  format.addEventListener('change', () => onApply(read()));
  return {form, lists};
}

/* Suggestions for the dimension fields: the values of some reports. */
function fillSuggestions(lists, crashes) {
  DIMS.forEach(([k], i) => {
    const seen = new Map();
    for (const c of crashes) if (typeof c[k] === 'string' && c[k]) seen.set(c[k], (seen.get(c[k]) || 0) + 1);
    put(lists[i], Array.from(seen).sort((a, b) => b[1] - a[1]).slice(0, 50).map(([v]) => el('option', {value: v})));
  });
}

/* What a report needs uploaded: the app's image, by name, arch and UUID. */
function needsUpload(n) {
  if (!n || typeof n !== 'object') return null;
  return el('div', {class: 'need', testid: 'needs-upload', 'data-uuid': n.uuid || '',
    title: 'The app\'s image was never uploaded (for this arch): upload its binary or dSYM with this UUID'},
  el('span', {class: 'tag warn'}, 'upload'), el('span', {testid: 'needs-upload-name'}, n.name || 'the app image'),
  n.arch ? el('span', {class: 'dim', testid: 'needs-upload-arch'}, ' ' + n.arch) : null,
  el('div', {class: 'mono need-uuid', testid: 'needs-upload-uuid'}, n.uuid || ''));
}

/* Reports as the listings give them (CrashSummary). */
function crashTable(testid, rows, withSignature) {
  const head = ['Report', 'Kind', 'Received', 'Process, app version', 'OS, device', 'Exception'];
  if (withSignature) head.push('Signature');
  head.push('Needs upload');
  const t = table(testid, head, rows.map((c) => el('tr', {testid: 'crash-row', 'data-id': c.id, 'data-kind': c.kind || '',
    class: c.needs_upload ? 'needs' : null},
  el('td', null, el('a', {href: '#/crashes/' + c.id, testid: 'crash-link'}, '#' + c.id)),
  el('td', null, kindBadge(c.kind), el('div', {class: 'sub', testid: 'crash-format'}, c.format || '')),
  el('td', {class: 'nowrap'}, fmtTime(c.created_at)),
  el('td', null, el('div', null, c.process || ''), el('div', {class: 'sub', testid: 'crash-app_version'}, c.app_version || '')),
  el('td', {class: 'os'}, el('div', {testid: 'crash-os_version'}, c.os_version || ''), el('div', {class: 'sub', testid: 'crash-hardware_model'}, c.hardware_model || '')),
  el('td', null, c.exception_type || ''),
  withSignature ? el('td', {class: 'sig'}, c.signature
    ? el('a', {class: 'mono', href: groupHref(c), testid: 'crash-group'}, c.signature) : '') : null,
  el('td', null, needsUpload(c.needs_upload)))));
  t.classList.add('crashes');
  return t;
}

async function viewCrashes(params) {
  const f = filtersOf(params);
  let tab = params.get('tab') === 'reports' ? 'reports' : 'groups';
  const limit = Math.min(Math.max(parseInt(params.get('limit'), 10) || 0, 0), 1000);   // reports a page (0: 50)
  const status = statusLine('crashes-status');
  const trendBox = el('div', {testid: 'overall-trend'});
  const note = el('p', {class: 'note', testid: 'filter-note'});
  const list = el('div', {testid: 'crash-listing'});
  const {form, lists} = filterForm(f, (nf) => { Object.assign(f, nf); apply(); });
  const tabButton = (t, label) => el('button', {type: 'button', role: 'tab', class: 'tab', testid: 'tab-' + t,
    onclick: () => { tab = t; apply(); }}, label);
  const tabs = el('div', {class: 'tabs', role: 'tablist', 'aria-label': 'Listing'},
    tabButton('groups', 'Groups'), tabButton('reports', 'Reports'));
  view.append(el('h1', null, 'Crashes'), trendBox, form, note, el('div', {class: 'tabbar'}, tabs, status.node), list);

  let gen = 0;
  // keeps the filters in the address without a new route (no hashchange)
  function apply() {
    history.replaceState(null, '', '#/crashes' + qs(Object.assign({}, f, {tab: tab === 'reports' ? 'reports' : '', limit: limit || ''})));
    return load();
  }

  async function load() {
    const my = ++gen;
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.dataset.testid === 'tab-' + tab));
    note.textContent = hasDims(f) || f.format
      ? 'The charts count every app version, OS version, device and format; the list counts the reports these filters keep.' : '';
    status.info('Loading…');
    try {
      await Promise.all([
        api('/v1/crashes/trend' + qs({days: TREND_DAYS, kind: f.kind})).then((t) => {
          if (my === gen) put(trendBox, trendPanel('overall-trend-panel', f.kind ? `${KIND_LABEL[f.kind]} reports per day` : 'Reports per day', t));
        }, (e) => {   // the list stands without its chart
          if (my === gen) put(trendBox, el('p', {class: 'status error', testid: 'trend-error'}, 'No trend: ' + e.message));
        }),
        tab === 'groups' ? loadGroups(my) : loadReports(my),
      ]);
      if (my === gen) status.clear();
    } catch (e) { if (my === gen) status.error(e); }
  }

  function emptyText() {
    if (!f.query && !f.format && !hasDims(f)) {
      return f.kind ? `No reports of kind ${f.kind}.` : 'No crashes yet. POST a .crash, .ips, sample or spindump report to /v1/crashes.';
    }
    return 'No reports match these filters.';
  }

  async function loadGroups(my) {
    const data = await api('/v1/crashes/groups' + qs(Object.assign({query: f.query, kind: f.kind, format: f.format}, dimsOf(f),
      {limit: 200, trend: TREND_DAYS})));
    if (my !== gen) return;
    put(list, data.groups.length ? table('groups', ['Kind', 'Signature', 'Reports', 'Last 30 days', 'Last seen', 'App version', 'Process'],
      data.groups.map((g) => el('tr', {testid: 'group-row', 'data-kind': g.kind || '', 'data-signature': g.signature || '', 'data-count': g.count},
        el('td', null, kindBadge(g.kind)),
        el('td', null, el('a', {class: 'mono', href: groupHref(g, dimsOf(f)), testid: 'group-open'}, g.signature || '')),
        el('td', {class: 'num', testid: 'group-count'}, g.count),
        el('td', {class: 'sparkcell'}, sparkline(g.trend)),
        el('td', {class: 'nowrap'}, fmtTime(g.last_seen)),
        el('td', null, g.app_version || ''),
        el('td', null, g.process || ''))))
      : el('p', {testid: 'groups-empty'}, emptyText()));
  }

  async function loadReports(my, cursor, rows) {
    const data = await api('/v1/crashes' + qs(Object.assign({query: f.query, kind: f.kind, format: f.format}, dimsOf(f), {limit: limit || 50, cursor})));
    if (my !== gen) return;
    rows = (rows || []).concat(data.crashes);
    const more = data.next_cursor ? el('button', {type: 'button', class: 'more', testid: 'reports-more', onclick: async () => {
      try { await loadReports(my, data.next_cursor, rows); } catch (e) { status.error(e); }
    }}, 'Load more') : null;
    put(list, rows.length ? [crashTable('crash-list', rows, true), more] : el('p', {testid: 'reports-empty'}, emptyText()));
  }

  // value suggestions for the version, OS and device fields (the newest reports)
  api('/v1/crashes' + qs({limit: 200})).then((d) => fillSuggestions(lists, d.crashes)).catch(() => {});
  await load();
}

/* ---- A group: its trend, its spread, its reports ------------------------ */

/* One dimension of a group's spread: values, counts and shares; a value
 * links to the group's reports of that value. */
function spreadTable(key, label, items, total, hrefOf) {
  items = Array.isArray(items) ? items.filter((it) => it && isInt(it.count)) : [];
  const given = items.reduce((a, it) => a + it.count, 0);
  const row = (value, count, href, none) => {
    const share = total > 0 ? count / total : 0;
    const bar = el('span', {class: 'share'});
    // CSSOM, not a style attribute: the CSP forbids inline styles
    bar.style.setProperty('--share', (share * 100).toFixed(1) + '%');
    return el('tr', {testid: 'spread-row', 'data-value': value === null ? '' : value, 'data-count': count},
      el('td', {class: 'spread-value'}, value === null ? el('span', {class: 'dim'}, none)
        : el('a', {href, testid: 'spread-filter', title: 'Only the reports of ' + value}, value)),
      el('td', {class: 'num'}, count),
      el('td', {class: 'spread-share'}, el('span', {class: 'track'}, bar), el('span', {class: 'pct'}, Math.round(share * 100) + '%')));
  };
  const rows = items.map((it) => row(typeof it.value === 'string' ? it.value : null, it.count, hrefOf(it.value)));
  // the answer lists at most 50 values: the rest are other values or none
  if (total > given) rows.push(row(null, total - given, null, items.length >= 50 ? 'other values, or none' : 'not in the report'));
  return el('section', {class: 'panel spread', testid: 'spread-' + key},
    el('h3', null, label, el('span', {class: 'dim'}, ' · ' + plural(items.length, 'value'))),
    rows.length ? el('table', {class: 'spread-table'}, el('tbody', null, rows)) : el('p', {class: 'dim'}, 'None.'));
}

async function viewGroup(params) {
  const kind = params.get('kind') || '';
  const signature = params.get('signature') || '';
  const dims = dimsOf(filtersOf(params));
  const status = statusLine('group-status');
  const body = el('div');
  view.append(el('p', {class: 'crumbs'}, el('a', {href: '#/crashes' + qs(dims), testid: 'group-back'}, '← All crash groups')),
    el('div', {class: 'tight'}, status.node), body);
  status.info('Loading…');
  let g;
  try {
    g = await api('/v1/crashes/group' + qs({kind, signature, days: TREND_DAYS}));
  } catch (e) {
    put(body, el('h1', null, 'Group ', el('code', null, signature)));
    status.error(e);
    return;
  }
  status.clear();
  const gkind = typeof g.kind === 'string' ? g.kind : kind;
  const facts = [
    ['Kind', gkind], ['Reports', g.count], ['First seen', fmtTime(g.first_seen)], ['Last seen', fmtTime(g.last_seen)],
    ['Process', g.process], ['Newest app version', g.app_version],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '');
  const reports = el('section', {testid: 'group-crashes', 'aria-live': 'polite'});
  const hrefWith = (k) => (value) => groupHref(g, Object.assign({}, dims, {[k]: value}));
  put(body,
    el('h1', {testid: 'group-title'}, kindBadge(gkind), ' ', (KIND_LABEL[gkind] || 'Crash') + ' group: ',
      el('code', {testid: 'group-signature'}, g.signature)),
    el('dl', {class: 'facts', testid: 'group-facts'}, facts.map(([k, v]) => [el('dt', null, k), el('dd', {'data-fact': k}, String(v))])),
    trendPanel('group-trend', 'Reports of this group per day', g.trend),
    el('section', {testid: 'group-spread'},
      el('h2', null, 'Spread over app versions, OS versions and devices'),
      el('div', {class: 'spreads'}, DIMS.map(([k, label, key]) => spreadTable(key, label + 's', g[key], g.count, hrefWith(k))))),
    reports);
  await openReports();

  async function openReports(cursor, rows) {
    rows = rows || [];
    const chips = DIMS.filter(([k]) => dims[k]).map(([k, label]) => el('span', {class: 'chip', testid: 'group-filter', 'data-dim': k},
      label + ': ', el('strong', null, dims[k]), ' ',
      el('a', {href: groupHref(g, Object.assign({}, dims, {[k]: ''})), class: 'chip-x', 'aria-label': 'Remove the ' + label + ' filter', title: 'Remove this filter'}, '×')));
    const heading = () => el('h2', null, 'Reports', chips.length ? el('span', {class: 'dim'}, ' (filtered)') : null);
    if (!rows.length) put(reports, heading(), chips.length ? el('p', {class: 'chips'}, chips) : null, el('p', null, 'Loading…'));
    try {
      const data = await api('/v1/crashes' + qs(Object.assign({signature: g.signature, kind: gkind}, dims, {limit: 100, cursor})));
      rows = rows.concat(data.crashes);
      const more = data.next_cursor
        ? el('button', {type: 'button', class: 'more', testid: 'group-more', onclick: () => openReports(data.next_cursor, rows)}, 'Load more')
        : null;
      put(reports, heading(), chips.length ? el('p', {class: 'chips'}, chips) : null,
        rows.length ? crashTable('group-crash-list', rows, false) : el('p', {testid: 'group-crashes-empty'}, 'No reports of this group match the filter.'),
        more);
    } catch (e) { status.error(e); }
  }
}

/* ---- Crash detail ------------------------------------------------------- */

/* Rendering budgets that keep a stackshot of thousands of frames fast:
 * threads past the budget start collapsed and are built when opened. */
const OPEN_FRAMES_BUDGET = 1500;   // frames shown open at first, over all threads of a section
const FRAME_ROWS_PAGE = 1000;      // rows of one flat thread before "show more"
const TREE_OPEN_ROWS = 300;        // tree rows expanded at first
const TREE_EXPAND_ALL_ROWS = 20000;
const IMAGES_OPEN = 60;            // image tables longer than this start collapsed

function appImageOf(crash) {
  const ims = crash.images || [];
  return ims.find((im) => im && im.app === true) || null;
}

function isInt(v) { return Number.isInteger(v); }
function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }

/* "0xLOAD + offset" as Apple writes a frame it cannot name. */
function loadPlusOffset(f, images) {
  const im = images[f.image_index];
  if (!im || typeof f.address !== 'string' || !/^0x[0-9a-f]+$/i.test(f.address) ||
      typeof im.load_address !== 'string' || !/^0x[0-9a-f]+$/i.test(im.load_address)) return f.address || '';
  const off = BigInt(f.address) - BigInt(im.load_address);
  return off >= 0n ? `${im.load_address} + ${off}` : f.address;
}

/* A frame's "symbol + offset", or what the report would print for it. */
function frameSymbol(f, images) {
  let sym = f.symbol || '';
  if (sym && f.offset !== undefined && f.offset !== null) sym += ' + ' + f.offset;
  return sym || loadPlusOffset(f, images);
}
function frameWhere(f) { return f.file ? f.file + (f.line ? ':' + f.line : '') : ''; }
function isAppFrame(f, ctx) { return !!ctx.app && ctx.images[f.image_index] === ctx.app; }

/* The tags after a frame's symbol. */
function frameTags(f) {
  return [
    f.status === 'missing_image' ? el('span', {class: 'tag warn', testid: 'missing-tag', title: 'this image was never uploaded'}, 'missing image') : null,
    f.status === 'no_symbol' ? el('span', {class: 'tag'}, 'no symbol') : null,
    f.from_report ? el('span', {class: 'tag', title: 'as written in the report'}, 'from report') : null,
  ];
}

function frameRow(f, ctx) {
  const isApp = isAppFrame(f, ctx);
  const cls = ['frame', f.inlined ? 'inlined' : '', isApp ? 'app' : '', f.status === 'missing_image' ? 'missing' : ''].filter(Boolean).join(' ');
  return el('tr', {class: cls, testid: 'frame', 'data-status': f.status, 'data-inlined': f.inlined ? 'true' : 'false', 'data-app': isApp ? 'true' : 'false'},
    el('td', {class: 'num', testid: 'frame-index'}, f.frame),
    el('td', {testid: 'frame-image'}, f.image || '???'),
    el('td', {class: 'mono', testid: 'frame-symbol'},
      f.inlined ? el('span', {class: 'tag', title: 'inlined into the frame below'}, 'inlined') : null,
      el('span', {class: 'sym', title: f.mangled && f.mangled !== f.symbol ? f.mangled : null},
        frameSymbol(f, ctx.images)), frameTags(f)),
    el('td', {class: 'mono', testid: 'frame-file'}, frameWhere(f)),
    el('td', {class: 'mono dim'}, f.address));
}

/* A flat thread's frames, FRAME_ROWS_PAGE rows at a time. */
function framesTable(thread, ctx) {
  const frames = Array.isArray(thread.frames) ? thread.frames : [];
  const tbody = el('tbody');
  const t = el('table', {testid: 'frames'},
    el('thead', null, el('tr', null, ['#', 'Image', 'Symbol + offset', 'File:line', 'Address'].map((h) => el('th', {scope: 'col'}, h)))),
    tbody);
  const more = el('button', {type: 'button', class: 'more', testid: 'frames-more'});
  let shown = 0;
  const page = () => {
    const end = Math.min(frames.length, shown + FRAME_ROWS_PAGE);
    const frag = document.createDocumentFragment();
    for (; shown < end; shown++) frag.append(frameRow(frames[shown], ctx));
    tbody.append(frag);
    more.hidden = shown >= frames.length;
    more.textContent = `Show ${Math.min(FRAME_ROWS_PAGE, frames.length - shown)} more of ${frames.length - shown} remaining rows`;
  };
  more.addEventListener('click', page);
  page();
  return el('div', null, frames.length ? t : el('p', {class: 'dim'}, 'No frames.'), more);
}

/* ---- call trees (samples, spindumps, microstackshots) ---- */

/* The roots of a call-tree thread: its "tree", else rebuilt from the
 * frames' pre-order depths (answers that give depth but no tree). */
function treeRoots(thread) {
  if (Array.isArray(thread.tree)) return thread.tree;
  const roots = [], stack = [];
  let last = null;
  for (const f of thread.frames || []) {
    if (!isInt(f.depth) || f.frame === last) continue;  // inlined levels share their frame
    last = f.frame;
    const node = {count: f.count, frame: f.frame, children: []};
    while (stack.length > f.depth) stack.pop();
    (stack.length ? stack[stack.length - 1].children : roots).push(node);
    stack.push(node);
  }
  return roots;
}

function isTreeThread(t) {
  return Array.isArray(t.tree) || (Array.isArray(t.frames) && t.frames.some((f) => isInt(f.depth)));
}

function kidsOf(node) { return node && Array.isArray(node.children) ? node.children : []; }

/* Nodes and deepest level of a tree, without recursion (trees may be thousands deep). */
function treeSize(roots) {
  let nodes = 0, depth = 0;
  const stack = roots.map((n) => [n, 0]);
  while (stack.length) {
    const [n, d] = stack.pop();
    nodes++;
    if (d > depth) depth = d;
    for (const k of kidsOf(n)) stack.push([k, d + 1]);
  }
  return {nodes, depth};
}

/* An indented, collapsible call tree. Rows are one flat list (indentation by
 * depth), children built on first expand, so a big tree costs only what is shown. */
function treeView(thread, ctx) {
  const byFrame = new Map();   // frame number -> its frame objects (inlined levels first, as in frames)
  for (const f of thread.frames || []) {
    if (!byFrame.has(f.frame)) byFrame.set(f.frame, []);
    byFrame.get(f.frame).push(f);
  }
  const roots = treeRoots(thread);
  const size = treeSize(roots);
  const rows = el('div', {class: 'calltree', role: 'tree', testid: 'call-tree', 'data-nodes': size.nodes});
  const note = el('span', {class: 'dim', testid: 'tree-note'});
  const state = new WeakMap();   // row -> {node, depth, open}

  function nodeRow(node, depth) {
    const levels = byFrame.get(node.frame) || [];
    const outer = levels.find((l) => !l.inlined) || levels[levels.length - 1] || null;
    const kids = kidsOf(node);
    const app = !!outer && isAppFrame(outer, ctx);
    const twisty = kids.length
      ? el('button', {type: 'button', class: 'twisty', testid: 'tree-toggle', 'aria-label': 'expand'}, '▸')
      : el('span', {class: 'twisty leaf', 'aria-hidden': 'true'}, '·');
    const label = outer
      ? [el('span', {class: 'sym', testid: 'tree-symbol'}, frameSymbol(outer, ctx.images)),
        el('span', {class: 'dim', testid: 'tree-image'}, ' (in ' + (outer.image || '???') + ')'),
        frameWhere(outer) ? el('span', {class: 'where', testid: 'tree-file'}, ' ' + frameWhere(outer)) : null,
        frameTags(outer),
        el('span', {class: 'dim addr'}, ' [' + (outer.address || '') + ']')]
      : el('span', {class: 'dim'}, 'frame ' + node.frame + ' (not in the answer)');
    const inlined = levels.filter((l) => l !== outer).map((l) => el('div', {class: 'inl', testid: 'tree-inlined'},
      el('span', {class: 'tag'}, 'inlined'), el('span', {class: 'sym'}, frameSymbol(l, ctx.images)),
      frameWhere(l) ? el('span', {class: 'where'}, ' ' + frameWhere(l)) : null));
    const row = el('div', {class: 'tnode' + (app ? ' app' : '') + (outer && outer.status === 'missing_image' ? ' missing' : ''),
      role: 'treeitem', testid: 'tree-node', 'aria-level': depth + 1, 'aria-expanded': kids.length ? 'false' : null,
      'data-depth': depth, 'data-frame': node.frame, 'data-count': isInt(node.count) ? node.count : ''},
    el('div', {class: 'tline'}, twisty, el('span', {class: 'count', testid: 'tree-count'}, isInt(node.count) ? node.count : ''), ' ', label),
    inlined);
    // CSSOM, not a style attribute: the CSP forbids inline styles
    row.style.setProperty('--depth', String(Math.min(depth, 300)));
    row.title = 'depth ' + depth;
    state.set(row, {node, depth, open: false});
    if (kids.length) twisty.addEventListener('click', () => toggle(row));
    return row;
  }

  /* Rows of nodes in pre-order from entries [node, depth, heavy]; a node is
   * opened while want(...) says so and the row budget lasts. */
  function build(entries, budget, want) {
    const frag = document.createDocumentFragment();
    const stack = entries.slice().reverse();
    let n = 0;
    while (stack.length) {
      const [node, depth, heavy] = stack.pop();
      const row = nodeRow(node, depth);
      frag.append(row);
      n++;
      const kids = kidsOf(node);
      if (kids.length && n < budget && want(kids, depth, heavy)) {
        markOpen(row, true);
        let hi = 0;
        kids.forEach((k, i) => { if ((k.count || 0) > (kids[hi].count || 0)) hi = i; });
        for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1, i === hi]);
      }
    }
    return {frag, n};
  }

  function markOpen(row, open) {
    state.get(row).open = open;
    row.setAttribute('aria-expanded', open ? 'true' : 'false');
    const b = row.querySelector('.twisty');
    b.textContent = open ? '▾' : '▸';
    b.setAttribute('aria-label', open ? 'collapse' : 'expand');
  }

  /* Removes the rows below an open row (its shown descendants). */
  function close(row) {
    const d = state.get(row).depth;
    while (row.nextSibling && state.get(row.nextSibling).depth > d) row.nextSibling.remove();
    markOpen(row, false);
  }

  function open(row, budget, want) {
    const st = state.get(row);
    markOpen(row, true);
    const {frag} = build(kidsOf(st.node).map((k) => [k, st.depth + 1, false]), budget, want);
    row.after(frag);
  }

  // a click opens one level, and follows single-child chains
  function toggle(row) {
    if (state.get(row).open) close(row);
    else open(row, TREE_OPEN_ROWS, (kids) => kids.length === 1);
  }

  function showAll(budget, want) {
    const {frag, n} = build(roots.map((r) => [r, 0, true]), budget, want);
    put(rows, frag);
    note.textContent = n < size.nodes ? ` showing ${n} of ${size.nodes} nodes` : '';
  }

  // first view: the first levels, every single-child chain and each level's heaviest branch
  showAll(TREE_OPEN_ROWS, (kids, depth, heavy) => depth < 2 || kids.length === 1 || heavy);

  const expandAll = el('button', {type: 'button', testid: 'tree-expand-all', onclick: () => {
    showAll(TREE_EXPAND_ALL_ROWS, () => true);
  }}, 'Expand all');
  const collapseAll = el('button', {type: 'button', testid: 'tree-collapse-all', onclick: () => showAll(roots.length, () => false)}, 'Collapse all');
  return el('div', {class: 'treebox'},
    el('div', {class: 'treebar'}, el('span', {testid: 'tree-size'}, `Call tree: ${plural(size.nodes, 'node')}, ${size.depth + 1} levels deep`),
      ' ', expandAll, ' ', collapseAll, note),
    roots.length ? rows : el('p', {class: 'dim'}, 'Empty tree.'));
}

/* ---- threads, processes, images ---- */

const ROLE_TAG = {
  last_exception: ['cause', 'the exception that caused the crash'],
  app_specific: ['app specific', 'a backtrace the process recorded itself'],
  attributed: ['attributed', 'the thread the resource use is attributed to'],
  heaviest: ['heaviest', 'the heaviest stack of the process'],
  kernel: ['kernel', 'kernel backtrace'],
};
const ROLE_NAME = {last_exception: 'Last Exception Backtrace', app_specific: 'Application Specific Backtrace',
  attributed: 'Attributed thread', heaviest: 'Heaviest stack', kernel: 'Kernel backtrace'};

/* Order of threads: the exception backtrace (the cause) first, then the
 * crashed thread, then the other special sections, then plain threads. */
function threadRank(t) {
  if (t.role === 'last_exception') return 0;
  if (t.role === 'app_specific') return 1;
  if (t.crashed) return 2;
  if (t.role && t.role !== 'thread') return 3;
  return 4;
}
function sortThreads(threads) { return threads.slice().sort((a, b) => threadRank(a) - threadRank(b)); }

function threadHeading(t) {
  const title = typeof t.title === 'string' && t.title.trim() ? t.title.trim().replace(/:+$/, '') : null;
  const hasId = t.id !== null && t.id !== undefined;
  let h = title || (hasId ? 'Thread ' + t.id : ROLE_NAME[t.role] || 'Thread');
  if (!title && t.crashed) h += ' Crashed';
  const tag = ROLE_TAG[t.role];
  // a heading as written already names what it names
  const says = (v) => title && title.includes(v);
  return el('h2', null, h, t.name && !says(t.name) ? ': ' + t.name : '', t.queue && !says(t.queue) ? ' (queue ' + t.queue + ')' : '',
    isInt(t.count) ? el('span', {class: 'dim', testid: 'thread-count'}, ' ' + plural(t.count, 'sample')) : null,
    title && t.crashed ? el('span', {class: 'tag warn'}, 'crashed') : null,
    tag ? el('span', {class: 'tag role role-' + t.role, title: tag[1]}, tag[0]) : null,
    t.truncated === true ? el('span', {class: 'tag warn', testid: 'thread-truncated',
      title: 'The device cut this stack walk (<truncated backtrace>): outer frames are missing'}, 'truncated') : null);
}

/* One thread: a collapsible section, built when first opened. */
function threadSection(t, ctx, open) {
  const tree = isTreeThread(t);
  const nframes = Array.isArray(t.frames) ? t.frames.length : 0;
  const body = el('div', {class: 'thread-body'});
  let built = false;
  const build = () => { if (!built) { built = true; put(body, tree ? treeView(t, ctx) : framesTable(t, ctx)); } };
  const det = el('details', {open: !!open},
    el('summary', null, threadHeading(t), open ? null : el('span', {class: 'dim'}, ' ' + plural(nframes, 'frame'))), body);
  det.addEventListener('toggle', () => { if (det.open) build(); });
  if (open) build();
  const cls = ['thread', t.crashed ? 'crashed' : '', t.role === 'last_exception' ? 'cause' : '', tree ? 'tree' : ''].filter(Boolean).join(' ');
  return el('section', {class: cls, testid: 'thread', 'data-thread': t.id === null || t.id === undefined ? '' : t.id,
    'data-crashed': t.crashed ? 'true' : 'false', 'data-role': t.role || 'thread', 'data-tree': tree ? 'true' : 'false'}, det);
}

/* Threads in display order; the important ones and the first ones up to a
 * frame budget start open, the rest collapsed. */
function threadSections(threads, ctx) {
  let budget = OPEN_FRAMES_BUDGET;
  return sortThreads(threads).map((t, i) => {
    const n = Array.isArray(t.frames) ? t.frames.length : 0;
    const open = threadRank(t) < 4 || (i < 64 && n <= budget);
    if (open) budget -= Math.min(n, FRAME_ROWS_PAGE);
    return threadSection(t, ctx, open);
  });
}

const IMAGE_STATUS = ['found', 'missing', 'found_other_arch', 'outside_text'];
const IMAGE_STATUS_LABEL = {found: 'found', missing: 'missing', found_other_arch: 'found, other arch', outside_text: 'outside __TEXT'};

/* What to upload (or check) for an image that did not symbolicate. */
function imageHint(im) {
  const uuid = im.uuid ? 'UUID ' + im.uuid : null;
  const arch = im.arch || null;
  switch (im.status) {
    case 'missing':
      return uuid ? `Upload ${im.name || 'this image'}'s binary or dSYM with ${uuid}${arch ? ' (' + arch + ')' : ''}.`
        : 'The report gives no UUID for this image, so no upload can match it.';
    case 'found_other_arch':
      return `${uuid || 'This UUID'} is stored, but for another architecture: upload the ${arch || 'matching'} slice ` +
        `(the fat binary or dSYM that contains ${arch || 'it'}).`;
    case 'outside_text':
      return 'Some frames lie beyond the stored image\'s __TEXT: the uploaded file is probably not the build that ran ' +
        `(check ${uuid || 'the UUID'} and the version), or the report's load address is wrong.`;
    default: return '';
  }
}

function imagesTable(images) {
  return table('crash-images', ['Name', 'UUID', 'Arch', 'Load address', 'Status', 'Debug info'],
    images.map((im) => {
      const st = typeof im.status === 'string' ? im.status : '';
      const known = IMAGE_STATUS.includes(st);
      const hint = imageHint(im);
      return el('tr', {class: st && st !== 'found' ? 'missing' : '', testid: 'image-status-row', 'data-status': st, 'data-uuid': im.uuid || ''},
        el('td', null, im.name || ''), el('td', {class: 'mono'}, im.uuid || ''), el('td', null, im.arch || ''),
        el('td', {class: 'mono'}, im.load_address || ''),
        el('td', null, el('span', {class: 'istatus' + (known ? ' st-' + st : ''), testid: 'image-status'}, known ? IMAGE_STATUS_LABEL[st] : st),
          hint ? el('div', {class: 'hint', testid: 'image-hint'}, hint) : null),
        el('td', null, im.debug_info ? 'yes' : 'no'));
    }));
}

/* "3 found, 2 missing" of a list of images. */
function imageCounts(images) {
  const n = {};
  for (const im of images) n[im.status] = (n[im.status] || 0) + 1;
  return IMAGE_STATUS.filter((s) => n[s]).map((s) => n[s] + ' ' + IMAGE_STATUS_LABEL[s]).join(', ');
}

/* The images of a report or a process, collapsed when long. */
function imagesSection(images, title) {
  if (!images.length) return null;
  const body = el('div');
  let built = false;
  const open = images.length <= IMAGES_OPEN;
  const det = el('details', {open, class: 'images'},
    el('summary', null, el('h2', null, title, el('span', {class: 'dim'}, ` (${images.length}: ${imageCounts(images)})`))), body);
  const build = () => { if (!built) { built = true; put(body, imagesTable(images)); } };
  det.addEventListener('toggle', () => { if (det.open) build(); });
  if (open) build();
  return el('section', {testid: 'images-section'}, det);
}

/* What to upload, when some images did not symbolicate. */
function uploadAdvice(images) {
  const missing = images.filter((im) => im.status === 'missing' && im.uuid).length;
  const other = images.filter((im) => im.status === 'found_other_arch').length;
  const outside = images.filter((im) => im.status === 'outside_text').length;
  if (!missing && !other && !outside) return null;
  return el('div', {class: 'advice', testid: 'upload-advice'},
    missing ? el('p', null, plural(missing, 'image') + ' of this report ' + (missing === 1 ? 'was' : 'were') +
      ` never uploaded: upload ${missing === 1 ? 'its binary or dSYM' : 'their binaries or dSYMs'} ` +
      '(the UUIDs are in the binary images tables; every image stored reports need is on ',
    el('a', {href: '#/missing'}, 'Missing images'), ').') : null,
    other ? el('p', null, plural(other, 'image') + ' ' + (other === 1 ? 'is' : 'are') +
      ' stored under another architecture: upload the slice of the architecture the report names.') : null,
    outside ? el('p', null, plural(outside, 'image') + ' had frames outside the stored __TEXT: check that the uploaded build is the one that ran.') : null);
}

/* The processes of a multi-process report (stackshot, spindump, jetsam),
 * each a collapsed section built when opened; a filter by name or pid. */
function processesSection(c, procs, ctx) {
  const threads = procs.map(() => []), images = procs.map(() => []);
  for (const t of c.threads || []) if (isInt(t.process) && t.process >= 0 && t.process < procs.length) threads[t.process].push(t);
  for (const im of c.images || []) if (isInt(im.process) && im.process >= 0 && im.process < procs.length) images[im.process].push(im);
  const anyContent = procs.some((p, i) => threads[i].length || images[i].length);
  const filter = el('input', {id: 'process-filter', type: 'search', testid: 'process-filter', placeholder: 'name or pid'});
  const procName = (p) => (p && p.name) || '(unnamed)';
  const pidText = (p) => (p && isInt(p.pid) ? String(p.pid) : '');
  let items;   // [node, search text]
  let listNode;
  if (!anyContent) {
    // jetsam: processes without threads, one table
    const rows = procs.map((p) => el('tr', {testid: 'process'},
      el('td', {class: 'num'}, pidText(p)), el('td', null, procName(p)), el('td', {class: 'mono'}, (p && p.detail) || ''),
      el('td', {class: 'mono dim'}, (p && p.path) || '')));
    items = rows.map((r, i) => [r, (pidText(procs[i]) + ' ' + procName(procs[i])).toLowerCase()]);
    listNode = table('processes', ['pid', 'Process', 'Detail', 'Path'], rows);
  } else {
    // the reported process and those with a crashed thread first, open
    const focus = (i) => threads[i].some((t) => t.crashed || threadRank(t) < 2) ||
      (c.process && procs[i] && procs[i].name === c.process);
    const order = procs.map((p, i) => i).sort((a, b) => (focus(b) ? 1 : 0) - (focus(a) ? 1 : 0));
    let opened = 0;
    items = order.map((i) => {
      const p = procs[i] || {};
      const nframes = threads[i].reduce((s, t) => s + (Array.isArray(t.frames) ? t.frames.length : 0), 0);
      const body = el('div', {class: 'process-body'});
      let built = false;
      const open = focus(i) && opened++ < 3;
      const det = el('details', {class: 'process', testid: 'process', 'data-process': i, 'data-pid': pidText(p), open},
        el('summary', null,
          el('span', {class: 'pname', testid: 'process-name'}, procName(p)),
          pidText(p) ? el('span', {class: 'dim'}, ' [' + pidText(p) + ']') : null,
          el('span', {class: 'dim'}, ` ${plural(threads[i].length, 'thread')}, ${plural(nframes, 'frame')}, ${plural(images[i].length, 'image')}`),
          p.detail ? el('span', {class: 'pdetail mono'}, ' ' + p.detail) : null),
        body);
      const build = () => {
        if (built) return;
        built = true;
        put(body, p.path ? el('p', {class: 'mono dim'}, p.path) : null,
          p.detail ? el('p', {class: 'mono pdetail-full', testid: 'process-detail'}, p.detail) : null,
          threads[i].length ? threadSections(threads[i], ctx) : el('p', {class: 'dim'}, 'No threads in the report.'),
          imagesSection(images[i], 'Binary images of ' + procName(p)));
      };
      det.addEventListener('toggle', () => { if (det.open) build(); });
      if (open) build();
      return [det, (pidText(p) + ' ' + procName(p)).toLowerCase()];
    });
    listNode = el('div', {class: 'processes'}, items.map((x) => x[0]));
  }
  filter.addEventListener('input', () => {
    const q = filter.value.trim().toLowerCase();
    for (const [node, text] of items) node.hidden = !!q && !text.includes(q);
  });
  return el('section', {testid: 'processes'},
    el('h2', null, plural(procs.length, 'process', 'processes')),
    el('div', {class: 'search'}, el('label', {for: 'process-filter'}, 'Filter processes'), filter),
    listNode);
}

/* Warnings: what of the report was skipped or unreadable, and where. */
function warningsBox(c) {
  const ws = Array.isArray(c.warnings) ? c.warnings.filter((w) => w && typeof w === 'object') : [];
  const dropped = isInt(c.warnings_dropped) ? c.warnings_dropped : 0;
  if (!ws.length && !dropped) return null;
  const li = (w) => el('li', {testid: 'warning'},
    el('span', {class: 'where mono', testid: 'warning-where'}, String(w.where || '?')), ' ',
    el('span', {testid: 'warning-message'}, String(w.message || '')));
  const SHOWN = 10;
  return el('section', {class: 'warnings', testid: 'warnings', role: 'note', 'aria-label': 'Warnings'},
    el('h2', null, plural(ws.length + dropped, 'warning'), ': parts of this report could not be read and were skipped'),
    el('ul', null, ws.slice(0, SHOWN).map(li)),
    ws.length > SHOWN ? el('details', null, el('summary', null, `${ws.length - SHOWN} more`), el('ul', null, ws.slice(SHOWN).map(li))) : null,
    dropped ? el('p', {testid: 'warnings-dropped'}, `…and ${plural(dropped, 'more warning')}, counted but not kept.`) : null);
}

/* Verbatim text of the report (application specific information, panic string). */
function textSection(title, testid, text) {
  if (typeof text !== 'string' || !text) return null;
  return el('section', {class: 'verbatim'}, el('h2', null, title), el('pre', {class: 'result', testid}, text));
}

/* The text report, fetched with the read token (a plain link sends none). */
function downloadLink(id, name) {
  const url = '/v1/crashes/' + encodeURIComponent(id) + '?format=text';
  const a = el('a', {class: 'button', href: url, download: name, testid: 'download-report'}, 'Download symbolicated report');
  const failed = el('span', {class: 'status error', testid: 'download-error'});
  a.addEventListener('click', async (ev) => {
    ev.preventDefault();
    failed.textContent = '';
    try {
      const text = await api(url, {text: true, headers: {Accept: 'text/plain'}});
      const blob = URL.createObjectURL(new Blob([text], {type: 'text/plain'}));
      const tmp = el('a', {href: blob, download: name, class: 'offscreen'});
      document.body.append(tmp);
      tmp.click();
      tmp.remove();
      setTimeout(() => URL.revokeObjectURL(blob), 60000);
    } catch (e) { failed.textContent = e.message; }
  });
  return [a, failed];
}

/* Deletes a stored report (the report role), then shows its group. The page
 * is left only once the DELETE has succeeded (a 401 asks for the report
 * token and sends it again first); a failed delete says why and stays. */
function deleteButton(c, status) {
  const b = el('button', {type: 'button', class: 'danger', testid: 'crash-delete', onclick: async () => {
    if (!confirm(`Delete report #${c.id}? Its group's counts go down by one.`)) return;
    const gen = generation;
    b.disabled = true;
    status.info(`Deleting report #${c.id}…`);
    try {
      await api('/v1/crashes/' + encodeURIComponent(c.id), {method: 'DELETE', raw: true});
    } catch (e) {
      b.disabled = false;
      status.error(e);
      return;
    }
    let dest = '#/crashes';
    if (c.signature) {
      try {
        await api('/v1/crashes/group' + qs({kind: c.kind || 'crash', signature: c.signature, days: 1}));
        dest = groupHref(c);
      } catch (e) { /* its last report (404): the group is gone; else the listing */ }
    }
    if (gen === generation) go(dest);   // unless another view was opened meanwhile
  }}, 'Delete report');
  return b;
}

async function viewCrash(id) {
  const status = statusLine('crash-status');
  const body = el('div');
  const links = el('p', {class: 'crumbs'}, el('a', {href: '#/crashes'}, '← All crash groups'));
  view.append(links, el('div', {class: 'tight'}, status.node), body);
  status.info('Loading…');
  let c;
  try { c = await api('/v1/crashes/' + encodeURIComponent(id)); } catch (e) { status.error(e); return; }
  status.clear();
  if (typeof c.signature === 'string' && c.signature) {
    add(links, ' · ', el('a', {href: groupHref(c), testid: 'crash-group-link'}, 'its group'));
  }
  const images = Array.isArray(c.images) ? c.images : [];
  const threads = Array.isArray(c.threads) ? c.threads : [];
  const procs = Array.isArray(c.processes) ? c.processes : [];
  const ctx = {app: appImageOf(c), images};
  const kind = typeof c.kind === 'string' && c.kind ? c.kind : null;
  const exc = c.exception || {};
  const facts = [
    ['Kind', kind], ['Bug type', c.bug_type],
    ['Process', c.process], ['Bundle id', c.bundle_id], ['App version', c.app_version],
    ['OS version', c.os_version], ['Hardware', c.hardware_model], ['Incident', c.incident_id],
    ['Exception', [exc.type, exc.signal && !(exc.type || '').includes(exc.signal) ? exc.signal : null].filter(Boolean).join(' ')],
    ['Codes', exc.codes], ['Termination', c.termination], ['Format', c.format],
    ['Processes', procs.length ? procs.length : null],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '');
  // threads of one process, or of none, show here; the others under their process
  const own = procs.length ? threads.filter((t) => !(isInt(t.process) && t.process >= 0 && t.process < procs.length)) : threads;
  const ownImages = procs.length ? images.filter((im) => !(isInt(im.process) && im.process >= 0 && im.process < procs.length)) : images;
  const label = (kind && KIND_LABEL[kind]) || 'Crash';
  const text = kind && kind !== 'crash' && kind !== 'fragment' ? '.txt' : '.crash';
  put(body,
    el('h1', {testid: 'crash-title'}, kindBadge(kind), ' ', label + ' #' + c.id + ': ', el('code', {testid: 'crash-signature'}, c.signature)),
    el('p', {class: 'row'}, downloadLink(c.id, 'crash-' + c.id + text), deleteButton(c, status)),
    warningsBox(c),
    el('dl', {class: 'facts', testid: 'crash-facts'}, facts.map(([k, v]) => [el('dt', null, k), el('dd', {'data-fact': k}, String(v))])),
    textSection('Panic string', 'panic-string', c.panic_string),
    textSection('Application Specific Information', 'app-specific', c.app_specific),
    uploadAdvice(images),
    threads.length ? el('p', {class: 'legend'}, el('span', {class: 'swatch app'}), ' app frames (',
      ctx.app ? ctx.app.name : 'app image unknown', ')  ', el('span', {class: 'tag warn'}, 'missing image'), ' image never uploaded') : null,
    threadSections(own, ctx),
    procs.length ? processesSection(c, procs, ctx) : null,
    imagesSection(ownImages, 'Binary images'));
}

/* ---- Images: list, upload, delete --------------------------------------- */

async function viewImages(params) {
  const limit = Math.min(Math.max(parseInt(params.get('limit'), 10) || 50, 1), 1000);
  const status = statusLine('images-status');
  const result = el('pre', {class: 'result', testid: 'upload-result'});
  const answer = el('details', {hidden: true, testid: 'upload-answer'}, el('summary', null, 'Server answer (JSON)'), result);
  const list = el('div');
  const pager = el('div', {class: 'pager'});
  let query = '', cursors = [''], page = 0;  // cursors[i] is the cursor of page i
  let loading = 0;                            // loads of the list begun (the last one shows)

  const fileInput = el('input', {id: 'upload-file', type: 'file', multiple: true, testid: 'upload-input'});
  const nameInput = el('input', {id: 'upload-name', type: 'text', placeholder: 'optional', testid: 'upload-name'});
  const drop = el('div', {class: 'drop', tabindex: '0', role: 'button', testid: 'upload-drop'},
    'Drop binaries, dSYM DWARF files or zips here, or click to choose');
  drop.addEventListener('click', () => fileInput.click());
  drop.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); fileInput.click(); } });
  drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (ev) => { ev.preventDefault(); drop.classList.remove('over'); upload(ev.dataTransfer.files); });
  fileInput.addEventListener('change', () => { upload(fileInput.files); });

  view.append(el('h1', null, 'Images'),
    el('section', {class: 'upload', 'aria-label': 'Upload'},
      el('h2', null, 'Upload'),
      el('div', {class: 'row'}, el('label', {for: 'upload-file'}, 'Binary, dSYM or zip'), fileInput),
      el('div', {class: 'row'}, el('label', {for: 'upload-name'}, 'Name (optional, instead of the file name; dylibs keep their install name)'), nameInput),
      drop, answer),
    searchForm('image-search', 'Search (name or UUID prefix)', '', (q) => { query = q; cursors = ['']; load(0); }),
    status.node, list, pager);

  async function upload(files) {
    if (!files || !files.length) return;
    const fd = new FormData();
    const name = nameInput.value.trim();
    // symd names an image by its part's file name; the name field overrides it
    for (const f of files) fd.append('file', f, name || f.name);
    answer.hidden = true;
    status.info('Uploading ' + Array.from(files, (f) => f.name).join(', ') + '…');
    let data;
    try {
      data = await api('/v1/images' + qs({name}), {method: 'POST', body: fd});
    } catch (e) {
      status.error(e);
      fileInput.value = '';
      return;
    }
    result.textContent = JSON.stringify(data, null, 2);
    answer.hidden = false;
    fileInput.value = '';
    cursors = [''];
    await reload(0, 'Uploaded: ' + data.images.map((im) => `${im.name} ${im.uuid} (${im.arch}) ${im.status}`).join('; '));
  }

  async function remove(im, button) {
    if (!confirm(`Delete every slice of ${im.name} ${im.uuid}?`)) return;
    button.disabled = true;
    status.info(`Deleting ${im.uuid}…`);
    let data;
    try {
      data = await api('/v1/images/' + encodeURIComponent(im.uuid), {method: 'DELETE'});
    } catch (e) {
      button.disabled = false;
      status.error(e);
      return;
    }
    await reload(page, `Deleted ${data.uuid} (${data.deleted} slice${data.deleted === 1 ? '' : 's'})`);
  }

  /* The list again after an action that succeeded: the action's message
   * once the list shows its outcome, or why the list did not load. */
  async function reload(p, done) {
    try {
      await fill(p);
      status.info(done);
    } catch (e) {
      e.message = `${done}; the list did not load again: ${e.message}`;
      status.error(e);
    }
  }

  async function load(p) {
    status.info('Loading…');
    try {
      if (await fill(p)) status.clear();
    } catch (e) { status.error(e); }
  }

  /* Shows page p of the list; false when a later load took over meanwhile. */
  async function fill(p) {
    const my = ++loading;
    const data = await api('/v1/images' + qs({query, limit, cursor: cursors[p]}));
    if (my !== loading) return false;
    page = p;
    cursors = cursors.slice(0, page + 1);
    if (data.next_cursor) cursors.push(data.next_cursor);
    put(list, data.images.length ? table('images', ['Name', 'UUID', 'Arch', 'Kind', 'Debug info', 'Symbols', 'Uploaded', 'Updated', ''],
      data.images.map((im) => el('tr', {testid: 'image-row', 'data-uuid': im.uuid, 'data-arch': im.arch},
        el('td', {testid: 'image-name'}, im.name),
        el('td', {class: 'mono', testid: 'image-uuid'}, im.uuid),
        el('td', null, im.arch), el('td', null, im.kind),
        el('td', {testid: 'image-debug'}, im.debug_info ? 'yes' : 'no'),
        el('td', {class: 'num'}, im.symbols),
        el('td', null, fmtTime(im.created_at)), el('td', null, fmtTime(im.updated_at)),
        el('td', null, el('button', {type: 'button', class: 'danger', testid: 'image-delete', 'aria-label': 'Delete ' + im.name + ' ' + im.uuid,
          onclick: (ev) => remove(im, ev.currentTarget)}, 'Delete')))))
      : el('p', {testid: 'images-empty'}, 'No images.'));
    put(pager,
      page > 0 ? el('button', {type: 'button', testid: 'images-prev', onclick: () => load(page - 1)}, '← Newer') : null,
      el('span', null, ' Page ' + (page + 1) + ' '),
      data.next_cursor ? el('button', {type: 'button', testid: 'images-next', onclick: () => load(page + 1)}, 'Older →') : null);
    return true;
  }
  await load(0);
}

/* ---- Missing images ----------------------------------------------------- */

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (e) {
    const ta = el('textarea', {class: 'offscreen', readonly: true});
    ta.value = text;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e2) { ok = false; }
    ta.remove();
    return ok;
  }
}

async function viewMissing() {
  const status = statusLine('missing-status');
  const list = el('div');
  view.append(el('h1', null, 'Missing images'),
    el('p', null, 'Images that stored crashes reference but that were never uploaded, most needed first.'),
    status.node, list);
  status.info('Loading…');
  try {
    const data = await api('/v1/missing' + qs({limit: 500}));
    status.clear();
    put(list, data.missing.length ? table('missing', ['UUID', 'Arch', 'Name', 'Crashes', 'Last crash', ''],
      data.missing.map((m) => el('tr', {testid: 'missing-row', 'data-uuid': m.uuid},
        el('td', {class: 'mono', testid: 'missing-uuid'}, m.uuid),
        el('td', null, m.arch || ''), el('td', null, m.name || ''),
        el('td', {class: 'num'}, m.crashes),
        el('td', null, m.last_crash_id !== null && m.last_crash_id !== undefined ? el('a', {href: '#/crashes/' + m.last_crash_id}, '#' + m.last_crash_id) : ''),
        el('td', null, el('button', {type: 'button', testid: 'missing-copy', 'aria-label': 'Copy UUID ' + m.uuid,
          onclick: async (ev) => { const b = ev.currentTarget; b.textContent = (await copyText(m.uuid)) ? 'Copied' : 'Copy failed'; }}, 'Copy UUID')))))
      : el('p', {testid: 'missing-empty'}, 'Nothing missing.'));
  } catch (e) { status.error(e); }
}

/* ---- Symbolicate a pasted report ---------------------------------------- */

function viewSymbolicate() {
  const status = statusLine('symbolicate-status');
  const ta = el('textarea', {id: 'report', rows: 16, spellcheck: 'false', testid: 'symbolicate-input',
    placeholder: 'Paste a .crash or .ips report'});
  const file = el('input', {id: 'report-file', type: 'file', accept: '.crash,.ips,.txt,.json', testid: 'symbolicate-file'});
  const out = el('pre', {class: 'result', testid: 'symbolicate-output', hidden: true});
  file.addEventListener('change', async () => { if (file.files[0]) ta.value = await file.files[0].text(); });
  const form = el('form', {class: 'stack'},
    el('label', {for: 'report'}, 'Crash report (.crash or .ips), symbolicated against the uploaded images and not stored'),
    ta,
    el('div', {class: 'row'}, el('label', {for: 'report-file'}, 'or load a file'), file),
    el('div', null, el('button', {type: 'submit', testid: 'symbolicate-submit'}, 'Symbolicate')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    out.hidden = true;
    status.info('Symbolicating…');
    try {
      out.textContent = await api('/v1/crashes?store=false', {method: 'POST', body: ta.value, text: true,
        headers: {Accept: 'text/plain', 'Content-Type': 'text/plain'}});
      out.hidden = false;
      status.clear();
    } catch (e) { status.error(e); }
  });
  view.append(el('h1', null, 'Symbolicate a report'), form, status.node, out);
}

/* ---- router ------------------------------------------------------------- */

let generation = 0;

/* Opens a route once an action is done. hashchange comes as a later task:
 * until then the old view would pass for the new one, so the view stops
 * being ready at once, and a view still loading cannot mark it ready. */
function go(hash) {
  generation++;
  view.dataset.ready = 'false';
  if (location.hash === hash) route(); else location.hash = hash;
}

async function route() {
  const gen = ++generation;
  const [where, search] = location.hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(search || '');
  const parts = (where || 'crashes').split('/').map(decodeURIComponent);
  const section = parts[0];
  const nav = section === 'group' ? 'crashes' : section;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  put(view);
  view.dataset.view = section;
  view.dataset.ready = 'false';
  if (section === 'crashes' && parts[1]) await viewCrash(parts[1]);
  else if (section === 'group') await viewGroup(params);
  else if (section === 'images') await viewImages(params);
  else if (section === 'missing') await viewMissing();
  else if (section === 'symbolicate') viewSymbolicate();
  else await viewCrashes(params);
  if (gen !== generation) return;  // another route started meanwhile
  const h1 = view.querySelector('h1');
  document.title = 'symd: ' + (h1 ? h1.textContent : section);
  view.dataset.ready = 'true';
}

window.addEventListener('hashchange', route);
route();

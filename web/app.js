/* symd dashboard: a hash-routed single page over the /v1 API.
 * Everything the server sends is text: the DOM is built with createElement
 * and textContent only (see el()), never with innerHTML. */
'use strict';

const TOKEN_KEY = 'symd.token';
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

/* A status line: messages and errors of one view. */
function statusLine(testid) {
  const p = el('p', {class: 'status', testid, role: 'status'});
  return {
    node: p,
    info(msg) { p.className = 'status'; p.textContent = msg; },
    error(err) {
      p.className = 'status error';
      p.textContent = err && err.message ? err.message : String(err);
      if (err && err.status === 401) showAuth();
    },
    clear() { p.className = 'status'; p.textContent = ''; },
  };
}

/* ---- API ---------------------------------------------------------------- */

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

function authHeaders(h) {
  const t = localStorage.getItem(TOKEN_KEY);
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
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

async function api(path, opts = {}) {
  const headers = authHeaders(Object.assign({Accept: 'application/json'}, opts.headers || {}));
  let res;
  try {
    res = await fetch(path, Object.assign({}, opts, {headers}));
  } catch (e) {
    throw new ApiError(0, 'network', 'cannot reach the server: ' + e.message);
  }
  if (!res.ok) throw await errorOf(res);
  return opts.text ? res.text() : res.json();
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

/* ---- bearer token ------------------------------------------------------- */

const authBox = document.getElementById('auth');
function showAuth() {
  authBox.hidden = false;
  document.getElementById('auth-token').focus();
}
document.getElementById('auth-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = document.getElementById('auth-token').value.trim();
  if (v) localStorage.setItem(TOKEN_KEY, v);
  authBox.hidden = true;
});
document.getElementById('auth-forget').addEventListener('click', () => {
  localStorage.removeItem(TOKEN_KEY);
  document.getElementById('auth-token').value = '';
});

/* ---- Crashes: groups, a group's crashes --------------------------------- */

function searchForm(id, label, value, onSearch) {
  const input = el('input', {id, type: 'search', value, testid: id});
  const form = el('form', {class: 'search', role: 'search'},
    el('label', {for: id}, label), input, el('button', {type: 'submit', testid: id + '-submit'}, 'Search'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); onSearch(input.value.trim()); });
  return form;
}

async function viewCrashes() {
  const status = statusLine('crashes-status');
  const list = el('div');
  const detail = el('section', {testid: 'group-crashes', 'aria-live': 'polite'});
  let query = '';
  view.append(el('h1', null, 'Crash groups'),
    searchForm('crash-search', 'Search (process, bundle id, signature, exception, version)', '', (q) => { query = q; load(); }),
    status.node, list, detail);

  async function load() {
    status.info('Loading…');
    try {
      const data = await api('/v1/crashes/groups' + qs({query, limit: 200}));
      status.clear();
      put(list, data.groups.length ? table('groups', ['Signature', 'Crashes', 'First seen', 'Last seen', 'App version', 'Process'],
        data.groups.map((g) => el('tr', {testid: 'group-row'},
          el('td', null, el('button', {type: 'button', class: 'link mono', testid: 'group-open', onclick: () => openGroup(g)}, g.signature)),
          el('td', {class: 'num'}, g.count),
          el('td', null, fmtTime(g.first_seen)),
          el('td', null, fmtTime(g.last_seen)),
          el('td', null, g.app_version || ''),
          el('td', null, g.process || ''))))
        : el('p', {testid: 'groups-empty'}, 'No crashes yet. POST a .crash or .ips to /v1/crashes.'));
    } catch (e) { status.error(e); }
  }

  async function openGroup(g, cursor, rows) {
    rows = rows || [];
    put(detail, el('h2', null, 'Crashes with signature ', el('code', null, g.signature)), el('p', null, 'Loading…'));
    try {
      const data = await api('/v1/crashes' + qs({signature: g.signature, limit: 100, cursor}));
      rows = rows.concat(data.crashes);
      const more = data.next_cursor
        ? el('button', {type: 'button', testid: 'group-more', onclick: () => openGroup(g, data.next_cursor, rows)}, 'Load more')
        : null;
      put(detail, el('h2', null, 'Crashes with signature ', el('code', null, g.signature)),
        table('group-crash-list', ['Crash', 'Received', 'Process', 'App version', 'OS', 'Exception'],
          rows.map((c) => el('tr', {testid: 'crash-row'},
            el('td', null, el('a', {href: '#/crashes/' + c.id, testid: 'crash-link'}, '#' + c.id)),
            el('td', null, fmtTime(c.created_at)),
            el('td', null, c.process || ''),
            el('td', null, c.app_version || ''),
            el('td', null, c.os_version || ''),
            el('td', null, c.exception_type || '')))),
        more);
    } catch (e) { put(detail); status.error(e); }
  }
  await load();
}

/* ---- Crash detail ------------------------------------------------------- */

function appImageOf(crash) {
  const ims = crash.images || [];
  return ims.find((im) => im.app === true) || null;
}

/* "0xLOAD + offset" as Apple writes a frame it cannot name. */
function loadPlusOffset(f, images) {
  const im = images[f.image_index];
  if (!im || !/^0x[0-9a-f]+$/i.test(f.address)) return f.address;
  const off = BigInt(f.address) - BigInt(im.load_address);
  return off >= 0n ? `${im.load_address} + ${off}` : f.address;
}

function frameRows(thread, app, images) {
  return thread.frames.map((f) => {
    const isApp = !!app && images[f.image_index] === app;
    const cls = ['frame', f.inlined ? 'inlined' : '', isApp ? 'app' : '', f.status === 'missing_image' ? 'missing' : ''].filter(Boolean).join(' ');
    let sym = f.symbol || '';
    if (sym && f.offset !== undefined) sym += ' + ' + f.offset;
    if (!sym) sym = loadPlusOffset(f, images);
    const where = f.file ? f.file + (f.line ? ':' + f.line : '') : '';
    const row = el('tr', {class: cls, testid: 'frame', 'data-status': f.status, 'data-inlined': f.inlined ? 'true' : 'false', 'data-app': isApp ? 'true' : 'false'},
      el('td', {class: 'num', testid: 'frame-index'}, f.frame),
      el('td', {testid: 'frame-image'}, f.image || '???'),
      el('td', {class: 'mono', testid: 'frame-symbol'},
        f.inlined ? el('span', {class: 'tag', title: 'inlined into the frame below'}, 'inlined') : null,
        el('span', {class: 'sym'}, sym),
        f.status === 'missing_image' ? el('span', {class: 'tag warn', testid: 'missing-tag', title: 'this image was never uploaded'}, 'missing image') : null,
        f.status === 'no_symbol' ? el('span', {class: 'tag'}, 'no symbol') : null,
        f.from_report ? el('span', {class: 'tag', title: 'as written in the report'}, 'from report') : null),
      el('td', {class: 'mono', testid: 'frame-file'}, where),
      el('td', {class: 'mono dim'}, f.address));
    return row;
  });
}

async function viewCrash(id) {
  const status = statusLine('crash-status');
  const body = el('div');
  view.append(el('p', null, el('a', {href: '#/crashes'}, '← All crash groups')), status.node, body);
  status.info('Loading…');
  let c;
  try { c = await api('/v1/crashes/' + encodeURIComponent(id)); } catch (e) { status.error(e); return; }
  status.clear();
  const app = appImageOf(c);
  const exc = c.exception || {};
  const facts = [
    ['Process', c.process], ['Bundle id', c.bundle_id], ['App version', c.app_version],
    ['OS version', c.os_version], ['Hardware', c.hardware_model], ['Incident', c.incident_id],
    ['Exception', [exc.type, exc.signal && !(exc.type || '').includes(exc.signal) ? exc.signal : null].filter(Boolean).join(' ')],
    ['Codes', exc.codes], ['Termination', c.termination], ['Format', c.format],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '');
  const threads = c.threads.slice().sort((a, b) => (b.crashed ? 1 : 0) - (a.crashed ? 1 : 0));
  put(body,
    el('h1', {testid: 'crash-title'}, 'Crash #' + c.id + ': ', el('code', {testid: 'crash-signature'}, c.signature)),
    el('p', null, el('a', {class: 'button', href: '/v1/crashes/' + encodeURIComponent(c.id) + '?format=text',
      download: 'crash-' + c.id + '.crash', testid: 'download-report'}, 'Download symbolicated report')),
    el('dl', {class: 'facts', testid: 'crash-facts'}, facts.map(([k, v]) => [el('dt', null, k), el('dd', null, String(v))])),
    el('p', {class: 'legend'}, el('span', {class: 'swatch app'}), ' app frames (',
      app ? app.name : 'app image unknown', ')  ', el('span', {class: 'tag warn'}, 'missing image'), ' image never uploaded'),
    threads.map((t) => el('section', {class: 'thread' + (t.crashed ? ' crashed' : ''), testid: 'thread', 'data-thread': t.id, 'data-crashed': t.crashed ? 'true' : 'false'},
      el('h2', null, 'Thread ' + t.id + (t.crashed ? ' Crashed' : ''), t.name ? ': ' + t.name : '', t.queue ? ' (queue ' + t.queue + ')' : ''),
      table('frames', ['#', 'Image', 'Symbol + offset', 'File:line', 'Address'], frameRows(t, app, c.images || [])))),
    (c.images || []).length ? el('section', null, el('h2', null, 'Binary images'),
      table('crash-images', ['Name', 'UUID', 'Arch', 'Load address', 'Status', 'Debug info'],
        c.images.map((im) => el('tr', {class: im.status === 'missing' ? 'missing' : ''},
          el('td', null, im.name || ''), el('td', {class: 'mono'}, im.uuid || ''), el('td', null, im.arch || ''),
          el('td', {class: 'mono'}, im.load_address || ''), el('td', null, im.status), el('td', null, im.debug_info ? 'yes' : 'no'))))) : null);
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
    try {
      const data = await api('/v1/images' + qs({name}), {method: 'POST', body: fd});
      result.textContent = JSON.stringify(data, null, 2);
      answer.hidden = false;
      cursors = [''];
      await load(0, true);
      status.info('Uploaded: ' + data.images.map((im) => `${im.name} ${im.uuid} (${im.arch}) ${im.status}`).join('; '));
    } catch (e) { status.error(e); }
    fileInput.value = '';
  }

  async function remove(im) {
    if (!confirm(`Delete every slice of ${im.name} ${im.uuid}?`)) return;
    try {
      const data = await api('/v1/images/' + encodeURIComponent(im.uuid), {method: 'DELETE'});
      await load(page, true);
      status.info(`Deleted ${data.uuid} (${data.deleted} slice${data.deleted === 1 ? '' : 's'})`);
    } catch (e) { status.error(e); }
  }

  async function load(p, keepStatus) {
    page = p;
    if (!keepStatus) status.info('Loading…');
    try {
      const data = await api('/v1/images' + qs({query, limit, cursor: cursors[page]}));
      if (!keepStatus) status.clear();
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
          el('td', null, el('button', {type: 'button', class: 'danger', testid: 'image-delete', 'aria-label': 'Delete ' + im.name + ' ' + im.uuid, onclick: () => remove(im)}, 'Delete')))))
        : el('p', {testid: 'images-empty'}, 'No images.'));
      put(pager, 
        page > 0 ? el('button', {type: 'button', testid: 'images-prev', onclick: () => load(page - 1)}, '← Newer') : null,
        el('span', null, ' Page ' + (page + 1) + ' '),
        data.next_cursor ? el('button', {type: 'button', testid: 'images-next', onclick: () => load(page + 1)}, 'Older →') : null);
    } catch (e) { status.error(e); }
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
async function route() {
  const gen = ++generation;
  const [where, search] = location.hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(search || '');
  const parts = (where || 'crashes').split('/').map(decodeURIComponent);
  const section = parts[0];
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  put(view);
  view.dataset.view = section;
  view.dataset.ready = 'false';
  if (section === 'crashes' && parts[1]) await viewCrash(parts[1]);
  else if (section === 'images') await viewImages(params);
  else if (section === 'missing') await viewMissing();
  else if (section === 'symbolicate') viewSymbolicate();
  else await viewCrashes();
  if (gen !== generation) return;  // another route started meanwhile
  const h1 = view.querySelector('h1');
  document.title = 'symd: ' + (h1 ? h1.textContent : section);
  view.dataset.ready = 'true';
}

window.addEventListener('hashchange', route);
route();

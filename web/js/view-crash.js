/* The crash view (#/crashes/ID): facts, warnings, threads, processes and images of one report; download and delete. */
import {api, qs} from './api.js';
import {imagesSection, uploadAdvice} from './crash-images.js';
import {add, el, put, table} from './dom.js';
import {groupHref} from './filters.js';
import {isInt, plural} from './format.js';
import {KIND_LABEL, kindBadge} from './kinds.js';
import {generation, go, view} from './nav.js';
import {statusLine} from './status.js';
import {threadRank, threadSections} from './threads.js';

function appImageOf(crash) {
  const ims = crash.images || [];
  return ims.find((im) => im && im.app === true) || null;
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
          imagesSection(images[i], 'Binary images of ' + procName(p), c.os_version));
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

export async function viewCrash(id) {
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
    uploadAdvice(images, c),
    threads.length ? el('p', {class: 'legend'}, el('span', {class: 'swatch app'}), ' app frames (',
      ctx.app ? ctx.app.name : 'app image unknown', ')  ', el('span', {class: 'tag warn'}, 'missing image'), ' image never uploaded') : null,
    threadSections(own, ctx),
    procs.length ? processesSection(c, procs, ctx) : null,
    imagesSection(ownImages, 'Binary images', c.os_version));
}

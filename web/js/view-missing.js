/* The missing images view (#/missing): images stored crashes need that were never uploaded. */
import {api, qs} from './api.js';
import {el, put, table} from './dom.js';
import {view} from './nav.js';
import {statusLine} from './status.js';

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

export async function viewMissing() {
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

/* The missing images view (#/missing): images stored crashes need that the
 * store lacks. The app's first (dSYMs to upload, each with its UUID, arch and
 * the app version of the newest crash needing it), then the OS's counted by
 * OS build and arch (to import with symd import), their UUIDs below. */
import {api, qs} from './api.js';
import {el, put, table} from './dom.js';
import {plural} from './format.js';
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

/* A row of one missing image: its UUID (with a copy button), arch, name,
 * crashes and the newest crash needing it; with the app's version when
 * version is set. */
function missingRow(m, version) {
  const last = m.last_crash_id !== null && m.last_crash_id !== undefined
    ? el('a', {href: '#/crashes/' + m.last_crash_id}, '#' + m.last_crash_id) : '';
  return el('tr', {testid: 'missing-row', 'data-uuid': m.uuid, 'data-system': m.system === true ? 'true' : 'false',
    'data-app': m.app === true ? 'true' : 'false'},
    el('td', null, m.name || '', m.app === true ? el('span', {class: 'tag app', title: 'the app\'s own executable'}, 'app') : null),
    el('td', {class: 'mono', testid: 'missing-uuid'}, m.uuid),
    el('td', null, m.arch || ''),
    version ? el('td', {testid: 'missing-version'}, m.app_version || '') : null,
    el('td', {class: 'num'}, m.crashes),
    el('td', null, last),
    el('td', null, el('button', {type: 'button', testid: 'missing-copy', 'aria-label': 'Copy UUID ' + m.uuid,
      onclick: async (ev) => { const b = ev.currentTarget; b.textContent = (await copyText(m.uuid)) ? 'Copied' : 'Copy failed'; }}, 'Copy UUID')));
}

export async function viewMissing() {
  const status = statusLine('missing-status');
  const list = el('div');
  view.append(el('h1', null, 'Missing images'),
    el('p', null, 'Images that stored crashes reference but that the store lacks, most needed first: the app\'s, to upload, ' +
      'and the OS\'s, to import, by OS build.'),
    status.node, list);
  status.info('Loading…');
  try {
    const data = await api('/v1/missing' + qs({limit: 500}));
    status.clear();
    const all = Array.isArray(data.missing) ? data.missing : [];
    const app = Array.isArray(data.app) ? data.app : all.filter((m) => m.system !== true);
    const builds = Array.isArray(data.system) ? data.system : [];
    const sys = all.filter((m) => m.system === true);
    if (!all.length && !app.length && !builds.length) {
      put(list, el('p', {testid: 'missing-empty'}, 'Nothing missing.'));
      return;
    }
    const nsys = builds.reduce((s, g) => s + (Number.isInteger(g.count) ? g.count : 0), 0);
    // the apps' own executables first, then their other images; those the
    // reports give neither a name nor a path for (a stackshot lists every
    // process's) apart, folded
    const named = app.filter((m) => m.app === true || m.name).sort((a, b) => (b.app === true) - (a.app === true));
    const unnamed = app.filter((m) => !(m.app === true || m.name));
    const head = ['Name', 'UUID', 'Arch', 'App version', 'Crashes', 'Last crash', ''];
    put(list,
      el('section', {testid: 'missing-app'},
        el('h2', null, 'The app\'s images', el('span', {class: 'dim'}, ` (${app.length}): upload their dSYMs`)),
        named.length ? table('missing', head, named.map((m) => missingRow(m, true)))
          : el('p', {testid: 'missing-app-empty'}, unnamed.length ? 'Every named image of the app that stored crashes need is uploaded.'
            : 'Every image of the app that stored crashes need is uploaded.'),
        unnamed.length ? el('details', {testid: 'missing-unnamed'},
          el('summary', null, `${plural(unnamed.length, 'image')} the reports give no name or path for (a stackshot's other processes): ` +
            'not known to be the OS\'s'),
          table('missing-unnamed-list', head, unnamed.map((m) => missingRow(m, true)))) : null),
      builds.length ? el('section', {testid: 'missing-system'},
        el('h2', null, 'System images', el('span', {class: 'dim'}, ` (${nsys}): import each OS build's symbols`)),
        table('missing-system-builds', ['OS build', 'Arch', 'Missing', 'Last crash', 'What to do'],
          builds.map((g) => el('tr', {testid: 'missing-system-row', 'data-os': g.os_version || '', 'data-arch': g.arch || '',
            'data-count': g.count},
            el('td', {testid: 'missing-system-os'}, g.os_version || 'unknown build'),
            el('td', null, g.arch || ''),
            el('td', {class: 'num', testid: 'missing-system-count'}, plural(g.count, 'system image')),
            el('td', null, Number.isInteger(g.last_crash_id) ? el('a', {href: '#/crashes/' + g.last_crash_id}, '#' + g.last_crash_id) : ''),
            el('td', {class: 'hint', testid: 'missing-system-hint'}, g.hint || '')))),
        sys.length ? el('details', {testid: 'missing-system-images'},
          el('summary', null, `Their UUIDs (${sys.length} listed)`),
          table('missing-system-list', ['Name', 'UUID', 'Arch', 'Crashes', 'Last crash', ''], sys.map((m) => missingRow(m, false)))) : null)
        : null);
  } catch (e) { status.error(e); }
}

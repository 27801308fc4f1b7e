/* The table of reports as the listings give them (CrashSummary), with what each needs uploaded. */
import {el, table} from './dom.js';
import {groupHref} from './filters.js';
import {fmtTime} from './format.js';
import {kindBadge} from './kinds.js';

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
export function crashTable(testid, rows, withSignature) {
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

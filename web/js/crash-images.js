/* Binary images of a crash: their symbolication status, what to upload for
 * the app and what to import for the OS, and the collapsible images table. */
import {el, put, table} from './dom.js';
import {plural} from './format.js';

const IMAGES_OPEN = 60;            // image tables longer than this start collapsed

const IMAGE_STATUS = ['found', 'missing', 'found_other_arch', 'outside_text'];
const IMAGE_STATUS_LABEL = {found: 'found', missing: 'missing', found_other_arch: 'found, other arch', outside_text: 'outside __TEXT'};
const IMPORT_HINT = 'symd import that build\'s DeviceSupport folder or dyld shared cache';

/* What to upload (or import, or check) for an image that did not
 * symbolicate; os: the report's OS version. */
function imageHint(im, os) {
  const uuid = im.uuid ? 'UUID ' + im.uuid : null;
  const arch = im.arch || null;
  switch (im.status) {
    case 'missing':
      if (im.system === true && uuid)
        return `A system library of ${os || 'the OS'} (${uuid}${arch ? ', ' + arch : ''}): not imported; ${IMPORT_HINT}.`;
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

function imagesTable(images, os) {
  return table('crash-images', ['Name', 'UUID', 'Arch', 'Load address', 'Status', 'Debug info'],
    images.map((im) => {
      const st = typeof im.status === 'string' ? im.status : '';
      const known = IMAGE_STATUS.includes(st);
      const hint = imageHint(im, os);
      return el('tr', {class: st && st !== 'found' ? 'missing' : '', testid: 'image-status-row', 'data-status': st, 'data-uuid': im.uuid || '',
        'data-system': im.system === true ? 'true' : 'false'},
        el('td', null, im.name || '', im.system === true ? el('span', {class: 'tag', testid: 'image-system', title: 'one of the OS\'s images'}, 'system')
          : im.app === true ? el('span', {class: 'tag app', testid: 'image-app', title: 'the app\'s own executable'}, 'app') : null),
        el('td', {class: 'mono'}, im.uuid || ''), el('td', null, im.arch || ''),
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

/* The images of a report or a process, collapsed when long; os: the
 * report's OS version (for what to import). */
export function imagesSection(images, title, os) {
  if (!images.length) return null;
  const body = el('div');
  let built = false;
  const open = images.length <= IMAGES_OPEN;
  const det = el('details', {open, class: 'images'},
    el('summary', null, el('h2', null, title, el('span', {class: 'dim'}, ` (${images.length}: ${imageCounts(images)})`))), body);
  const build = () => { if (!built) { built = true; put(body, imagesTable(images, os)); } };
  det.addEventListener('toggle', () => { if (det.open) build(); });
  if (open) build();
  return el('section', {testid: 'images-section'}, det);
}

const APP_SHOWN = 5;   // the app's missing images named in the banner; the rest counted

/* What to do when some images did not symbolicate: for the app's, what to
 * upload (each by name, UUID, arch and the report's app version, the app's
 * own executable first); for the OS's, one line saying how many of which OS
 * build are not imported. c: the crash answer. */
export function uploadAdvice(images, c) {
  const crash = c || {};
  const missing = images.filter((im) => im.status === 'missing' && im.uuid);
  const notSys = missing.filter((im) => im.system !== true);
  // those the report names (or marks the app's), the app's own executable first
  const app = notSys.filter((im) => im.app === true || im.name).sort((a, b) => (b.app === true) - (a.app === true));
  const unnamed = notSys.length - app.length;   // a stackshot's other processes' images
  const sys = missing.length - notSys.length;
  const other = images.filter((im) => im.status === 'found_other_arch').length;
  const outside = images.filter((im) => im.status === 'outside_text').length;
  if (!missing.length && !other && !outside) return null;
  const version = typeof crash.app_version === 'string' && crash.app_version ? crash.app_version : null;
  const os = typeof crash.os_version === 'string' && crash.os_version ? crash.os_version : 'this OS build';
  const item = (im) => el('li', {testid: 'upload-app', 'data-uuid': im.uuid, 'data-app': im.app === true ? 'true' : 'false'},
    el('strong', {testid: 'upload-app-name'}, im.name || 'the app\'s executable'),
    im.app === true ? ' (the app)' : null, ': UUID ', el('span', {class: 'mono', testid: 'upload-app-uuid'}, im.uuid),
    im.arch ? [', ', el('span', {testid: 'upload-app-arch'}, im.arch)] : null,
    version ? [', app version ', el('span', {testid: 'upload-app-version'}, version)] : null);
  return el('div', {class: 'advice', testid: 'upload-advice'},
    app.length ? [el('p', null, plural(app.length, 'image') + ' of the app ' + (app.length === 1 ? 'was' : 'were') +
      ` never uploaded: upload ${app.length === 1 ? 'its dSYM (or binary)' : 'their dSYMs (or binaries)'}:`),
    el('ul', {class: 'uploads'}, app.slice(0, APP_SHOWN).map(item)),
    app.length > APP_SHOWN ? el('p', {testid: 'upload-app-more'}, `…and ${app.length - APP_SHOWN} more: every image stored reports need is on `,
      el('a', {href: '#/missing'}, 'Missing images'), '.') : null] : null,
    unnamed ? el('p', {testid: 'unnamed-advice', 'data-count': unnamed},
      `${plural(unnamed, 'image')} the report gives neither a name nor a path for ${unnamed === 1 ? 'was' : 'were'} never uploaded: ` +
      'not known to be the OS\'s (a stackshot lists every process\'s images).') : null,
    sys ? el('p', {testid: 'system-advice', 'data-count': sys},
      `${plural(sys, 'system image')} of ${os} ${sys === 1 ? 'is' : 'are'} not imported (${IMPORT_HINT}; see `,
      el('a', {href: '#/missing'}, 'Missing images'), ').') : null,
    other ? el('p', null, plural(other, 'image') + ' ' + (other === 1 ? 'is' : 'are') +
      ' stored under another architecture: upload the slice of the architecture the report names.') : null,
    outside ? el('p', null, plural(outside, 'image') + ' had frames outside the stored __TEXT: check that the uploaded build is the one that ran.') : null);
}

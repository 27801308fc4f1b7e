/* Binary images of a crash: their symbolication status, what to upload, and the collapsible images table. */
import {el, put, table} from './dom.js';
import {plural} from './format.js';

const IMAGES_OPEN = 60;            // image tables longer than this start collapsed

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
export function imagesSection(images, title) {
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
export function uploadAdvice(images) {
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

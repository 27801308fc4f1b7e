/* Frames of a crash's threads: symbol, file and tags of a frame, and a flat thread's frames table. */
import {el} from './dom.js';

export const FRAME_ROWS_PAGE = 1000;      // rows of one flat thread before "show more"

/* "0xLOAD + offset" as Apple writes a frame it cannot name. */
function loadPlusOffset(f, images) {
  const im = images[f.image_index];
  if (!im || typeof f.address !== 'string' || !/^0x[0-9a-f]+$/i.test(f.address) ||
      typeof im.load_address !== 'string' || !/^0x[0-9a-f]+$/i.test(im.load_address)) return f.address || '';
  const off = BigInt(f.address) - BigInt(im.load_address);
  return off >= 0n ? `${im.load_address} + ${off}` : f.address;
}

/* A frame's "symbol + offset", or what the report would print for it. */
export function frameSymbol(f, images) {
  let sym = f.symbol || '';
  if (sym && f.offset !== undefined && f.offset !== null) sym += ' + ' + f.offset;
  return sym || loadPlusOffset(f, images);
}
export function frameWhere(f) { return f.file ? f.file + (f.line ? ':' + f.line : '') : ''; }
export function isAppFrame(f, ctx) { return !!ctx.app && ctx.images[f.image_index] === ctx.app; }

/* How a minidump's stack walker found a frame (the answers' "trust"). */
const TRUST_LABEL = {context: 'context', cfi: 'CFI', frame_pointer: 'frame pointer', scan: 'stack scan'};

/* The tags after a frame's symbol. */
export function frameTags(f) {
  return [
    Object.hasOwn(TRUST_LABEL, f.trust) ? el('span', {class: 'tag', testid: 'trust-tag', 'data-trust': f.trust,
      title: 'how the stack walker found this frame'}, TRUST_LABEL[f.trust]) : null,
    f.status === 'missing_image' ? el('span', {class: 'tag warn', testid: 'missing-tag', title: 'this image was never uploaded'}, 'missing image') : null,
    f.status === 'no_symbol' ? el('span', {class: 'tag'}, 'no symbol') : null,
    f.from_report ? el('span', {class: 'tag', title: 'as written in the report'}, 'from report') : null,
    // the report's own name, kept beside the stored image's answer when they differ
    typeof f.report_symbol === 'string' && f.report_symbol && f.report_symbol !== f.symbol
      ? el('span', {class: 'tag', testid: 'report-symbol', title: 'the name the report gave this frame'}, 'report: ' + f.report_symbol) : null,
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
export function framesTable(thread, ctx) {
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

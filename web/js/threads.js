/* Threads of a crash: their order, headings and collapsible sections (flat frames or a call tree). */
import {isTreeThread, treeView} from './calltree.js';
import {el, put} from './dom.js';
import {isInt, plural} from './format.js';
import {FRAME_ROWS_PAGE, framesTable} from './frames.js';

/* Rendering budgets that keep a stackshot of thousands of frames fast:
 * threads past the budget start collapsed and are built when opened. */
const OPEN_FRAMES_BUDGET = 1500;   // frames shown open at first, over all threads of a section

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
export function threadRank(t) {
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
export function threadSections(threads, ctx) {
  let budget = OPEN_FRAMES_BUDGET;
  return sortThreads(threads).map((t, i) => {
    const n = Array.isArray(t.frames) ? t.frames.length : 0;
    const open = threadRank(t) < 4 || (i < 64 && n <= budget);
    if (open) budget -= Math.min(n, FRAME_ROWS_PAGE);
    return threadSection(t, ctx, open);
  });
}

/* The images view (#/images): upload binaries and dSYMs, search, page and delete stored images. */
import {api, qs} from './api.js';
import {el, put, table} from './dom.js';
import {fmtTime} from './format.js';
import {view} from './nav.js';
import {statusLine} from './status.js';

/* A search box with its label and button (the images view). */
function searchForm(id, label, value, onSearch, ...extra) {
  const input = el('input', {id, type: 'search', value, testid: id});
  const form = el('form', {class: 'search', role: 'search'},
    el('label', {for: id}, label), input, extra, el('button', {type: 'submit', testid: id + '-submit'}, 'Search'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); onSearch(input.value.trim()); });
  return form;
}

export async function viewImages(params) {
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

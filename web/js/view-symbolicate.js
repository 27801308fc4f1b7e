/* The symbolicate view (#/symbolicate): a pasted report symbolicated and not stored. */
import {api} from './api.js';
import {el} from './dom.js';
import {view} from './nav.js';
import {statusLine} from './status.js';

export function viewSymbolicate() {
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

/* A view's status line: progress, messages and errors (a 401 offers to enter the token). */
import {add, el} from './dom.js';
import {openTokens, ROLES} from './tokens.js';

/* A status line: messages and errors of one view. A 401 the token prompt
 * was cancelled for offers to enter the token. */
export function statusLine(testid) {
  const p = el('p', {class: 'status', testid, role: 'status'});
  return {
    node: p,
    info(msg) { p.className = 'status'; p.textContent = msg; },
    error(err) {
      p.className = 'status error';
      p.textContent = err && err.message ? err.message : String(err);
      if (err && err.status === 401 && ROLES[err.role]) {
        add(p, ' ', el('button', {type: 'button', testid: 'status-token', onclick: () => openTokens(err.role)},
          'Enter the ' + err.role + ' token'));
      }
    },
    clear() { p.className = 'status'; p.textContent = ''; },
  };
}

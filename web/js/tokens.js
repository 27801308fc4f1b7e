/* Bearer tokens, one per role: kept in localStorage, asked for by the token box when a request gets 401. */
import {route} from './nav.js';

/* The server's three roles, each with its own token (--upload-token,
 * --report-token, --read-token). Tokens are kept in localStorage. */
export const ROLES = {
  read: 'viewing crashes, groups, trends and images',
  upload: 'uploading and deleting images',
  report: 'posting, symbolicating and deleting reports',
};
const TOKEN_PREFIX = 'symd.token.';

/* The role a request needs: GETs read; images are written by the upload
 * role; reports posted, symbolicated and deleted by the report role. */
export function roleOf(method, path) {
  if (method === 'GET' || method === 'HEAD') return 'read';
  return path.startsWith('/v1/images') ? 'upload' : 'report';
}

export function tokenOf(role) { return localStorage.getItem(TOKEN_PREFIX + role) || ''; }

const authBox = document.getElementById('auth');
const authWhy = document.getElementById('auth-why');
const waiting = {};   // role -> {promise, resolve, reject, error}: requests waiting for its token

/* Shows the token box: the rows of the roles asked for (all when none). */
function showTokenRows(roles) {
  for (const row of authBox.querySelectorAll('.auth-row')) {
    const r = row.dataset.role;
    row.hidden = roles.length > 0 && !roles.includes(r);
    const st = row.querySelector('.auth-state');
    st.textContent = tokenOf(r) ? 'saved' : 'not set';
    st.classList.toggle('set', !!tokenOf(r));
  }
  authBox.hidden = false;
  const first = authBox.querySelector('.auth-row:not([hidden]) input');
  if (first) first.focus();
}

/* Waits until the token of a role is saved; rejects with the 401 when the
 * prompt is cancelled. One prompt per role, whatever the requests waiting. */
export function askToken(role, err, refused) {
  if (!waiting[role]) {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    waiting[role] = {promise, resolve, reject, error: err};
  }
  const pending = Object.keys(waiting);
  authWhy.textContent = pending.map((r) => (refused && r === role
    ? `The ${r} token was refused (the server says: ${waiting[r].error.message}).`
    : `This needs the ${r} token (the server says: ${waiting[r].error.message}).`)).join(' ') +
    ' It is kept in this browser.';
  authBox.dataset.mode = 'prompt';
  document.getElementById('auth-cancel').textContent = 'Cancel';
  showTokenRows(pending);
  return waiting[role].promise;
}

/* The token box opened by hand (the Tokens button), all roles or one. */
export function openTokens(role) {
  authWhy.textContent = 'Tokens are kept in this browser (localStorage) and sent as Authorization: Bearer …; ' +
    'a server started without a role\'s token needs none for it.';
  authBox.dataset.mode = 'settings';
  document.getElementById('auth-cancel').textContent = 'Close';
  showTokenRows(role && !Object.keys(waiting).length ? [role] : Object.keys(waiting));
}

function closeTokens() {
  authBox.hidden = true;
  for (const i of authBox.querySelectorAll('input')) i.value = '';
}
/* The old token moved to its role; the token box's buttons and form wired. */
export function initTokens() {
  // the one token of earlier dashboards was the upload token
  if (localStorage.getItem('symd.token') !== null) {
    if (!tokenOf('upload')) localStorage.setItem(TOKEN_PREFIX + 'upload', localStorage.getItem('symd.token'));
    localStorage.removeItem('symd.token');
  }

  document.getElementById('auth-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    let saved = 0;
    for (const row of authBox.querySelectorAll('.auth-row:not([hidden])')) {
      const input = row.querySelector('input');
      const v = input.value.trim();
      if (!v) continue;
      localStorage.setItem(TOKEN_PREFIX + row.dataset.role, v);
      saved++;
      const w = waiting[row.dataset.role];
      if (w) { delete waiting[row.dataset.role]; w.resolve(); }
    }
    if (!saved) {
      const first = authBox.querySelector('.auth-row:not([hidden]) input');
      if (first) first.focus();
      return;
    }
    const left = Object.keys(waiting);   // other roles still asked for
    if (left.length) {
      askToken(left[0], waiting[left[0]].error, false);
      return;
    }
    const manual = authBox.dataset.mode === 'settings';
    closeTokens();
    if (manual) route();   // a view that failed without the token loads again
  });
  document.getElementById('auth-cancel').addEventListener('click', () => {
    closeTokens();
    for (const [role, w] of Object.entries(waiting)) { delete waiting[role]; w.reject(w.error); }
  });
  for (const b of authBox.querySelectorAll('button[data-forget]')) {
    b.addEventListener('click', () => {
      localStorage.removeItem(TOKEN_PREFIX + b.dataset.forget);
      const st = b.closest('.auth-row').querySelector('.auth-state');
      st.textContent = 'not set';
      st.classList.remove('set');
    });
  }
  authBox.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') document.getElementById('auth-cancel').click(); });
  document.getElementById('tokens-open').addEventListener('click', () => {
    if (authBox.hidden) openTokens(); else if (!Object.keys(waiting).length) closeTokens();
  });
}

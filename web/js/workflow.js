/* A group's workflow: its state badge, the panel that resolves, ignores or reopens it, and its history. */
import {api, qs} from './api.js';
import {el, put} from './dom.js';
import {STATES} from './filters.js';
import {fmtTime} from './format.js';

/* A badge naming a group's state; nothing for an answer without one. Class names only from STATES. */
export function stateBadge(state) {
  if (!STATES.includes(state)) return null;
  return el('span', {class: 'state state-' + state, testid: 'state-badge', 'data-state': state}, state);
}

/* What a group's state waits for, in words ("" when nothing). */
export function stateDetail(g) {
  if ((g.state === 'resolved' || g.state === 'regressed') && g.resolved) {
    const r = g.resolved;
    if (r.in === 'next') return r.version ? `in the version after ${r.version}` : 'in the next version';
    if (r.in === 'version') return `in version ${r.version}`;
    return 'any later report reopens it';
  }
  if (g.state === 'ignored' && g.ignored) {
    const i = g.ignored, parts = [];
    if (Number.isInteger(i.reports)) parts.push(`until ${i.reports} more reports (${i.seen} so far)`);
    if (Number.isInteger(i.until)) parts.push('until ' + fmtTime(i.until));
    return parts.length ? parts.join(', or ') : 'forever';
  }
  return '';
}

/* The panel of a group's workflow (group g from /v1/crashes/group): its
 * state and the buttons that change it, then its history. onChange(answer)
 * runs after a change was stored. */
export function workflowPanel(g, status, onChange) {
  const box = el('section', {class: 'panel workflow', testid: 'group-workflow', 'data-state': g.state || ''});
  const hist = el('div', {testid: 'group-history'});
  async function change(body, what) {
    status.info(what + '…');
    try {
      const a = await api('/v1/crashes/group/state', {method: 'POST', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify(Object.assign({kind: g.kind, signature: g.signature}, body))});
      status.info(what + ': done.');
      Object.assign(g, a);
      render();
      await loadHistory();
      if (onChange) onChange(a);
    } catch (e) { status.error(e); }
  }
  const version = el('input', {type: 'text', testid: 'resolve-version', placeholder: 'e.g. 2.1', 'aria-label': 'Resolved in version'});
  const count = el('input', {type: 'number', min: '1', step: '1', testid: 'ignore-count', placeholder: 'reports', 'aria-label': 'More reports'});
  const date = el('input', {type: 'date', testid: 'ignore-date', 'aria-label': 'Ignore until'});
  const button = (id, label, onclick) => el('button', {type: 'button', testid: id, onclick}, label);
  function render() {
    box.dataset.state = g.state || '';
    const detail = stateDetail(g);
    put(box,
      el('h2', null, 'State: ', stateBadge(g.state), detail ? el('span', {class: 'dim', testid: 'state-detail'}, ' · ' + detail) : null),
      el('div', {class: 'actions'},
        g.state !== 'unresolved' ? button('state-reopen', 'Reopen', () => change({state: 'unresolved'}, 'Reopening')) : null,
        button('state-resolve', 'Resolve', () => change({state: 'resolved'}, 'Resolving')),
        button('state-resolve-next', 'Resolve in the next version', () => change({state: 'resolved', resolved_in: 'next'}, 'Resolving')),
        el('span', {class: 'action'}, version, button('state-resolve-version', 'Resolve in this version', () => {
          if (!version.value.trim()) { status.error(new Error('Which version? Type it first.')); return; }
          change({state: 'resolved', resolved_in: 'version', version: version.value.trim()}, 'Resolving');
        }))),
      el('div', {class: 'actions'},
        button('state-ignore', 'Ignore', () => change({state: 'ignored'}, 'Ignoring')),
        el('span', {class: 'action'}, count, button('state-ignore-count', 'Ignore until this many more reports', () => {
          const n = parseInt(count.value, 10);
          if (!(n > 0)) { status.error(new Error('How many more reports? Type a number first.')); return; }
          change({state: 'ignored', ignore_reports: n}, 'Ignoring');
        })),
        el('span', {class: 'action'}, date, button('state-ignore-date', 'Ignore until this day', () => {
          const t = date.valueAsNumber;   // midnight UTC of the day
          if (!Number.isFinite(t)) { status.error(new Error('Until which day? Pick it first.')); return; }
          change({state: 'ignored', ignore_until: t}, 'Ignoring');
        }))),
      hist);
  }
  async function loadHistory() {
    try {
      const d = await api('/v1/crashes/group/history' + qs({kind: g.kind, signature: g.signature, limit: 100}));
      put(hist, el('h3', null, 'History'), d.history.length ? el('table', {class: 'history'},
        el('thead', null, el('tr', null, ['When', 'From', 'To', 'By', 'Why', 'Details'].map((h) => el('th', null, h)))),
        el('tbody', null, d.history.map((h) => el('tr', {testid: 'history-row', 'data-from': h.from, 'data-to': h.to,
          'data-by': h.by, 'data-reason': h.reason},
        el('td', {class: 'nowrap'}, fmtTime(h.at)), el('td', null, stateBadge(h.from)), el('td', null, stateBadge(h.to)),
        el('td', null, h.by), el('td', null, h.reason.replace(/_/g, ' ')),
        el('td', null, [h.crash_id ? el('a', {href: '#/crashes/' + h.crash_id}, 'report ' + h.crash_id) : null,
          h.version ? ' version ' + h.version : null, h.note ? ' — ' + h.note : null]))))) : el('p', {class: 'dim', testid: 'history-empty'}, 'No changes yet.'));
    } catch (e) { put(hist, el('p', {class: 'status error'}, 'No history: ' + e.message)); }
  }
  render();
  loadHistory();
  return box;
}

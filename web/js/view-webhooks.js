/* The webhook deliveries view (#/webhooks): every event sent (or to send) to
 * each --webhook target, newest first: what happened, where it goes, whether
 * it was delivered, is pending (its next attempt) or failed, and how its
 * last attempt went. Paged like the images list. */
import {api, qs} from './api.js';
import {el, put, table} from './dom.js';
import {fmtTime, isInt} from './format.js';
import {view} from './nav.js';
import {statusLine} from './status.js';

/* What the event is about, in a few words: the group, the image, the spike. */
function summary(d) {
  const data = d.data && typeof d.data === 'object' ? d.data : {};
  const g = data.group && typeof data.group === 'object' ? data.group : null;
  const im = data.image && typeof data.image === 'object' ? data.image : null;
  const crash = data.crash && isInt(data.crash.id) ? data.crash.id : null;
  const parts = [];
  if (im) parts.push(el('span', {class: 'mono'}, String(im.uuid || '')), ' ', String(im.name || ''), im.arch ? ` (${im.arch})` : '');
  else if (g) {
    const href = '#/group?' + new URLSearchParams({kind: String(g.kind || ''), signature: String(g.signature || '')});
    parts.push(el('a', {href, testid: 'webhook-group'}, String(g.signature || '')));
  }
  if (d.type === 'group.spike' && isInt(data.hour_count)) parts.push(` — ${data.hour_count} this hour`);
  if (d.type === 'group.regressed' && data.crash && data.crash.app_version) parts.push(` — back in ${data.crash.app_version}`);
  if (crash !== null) parts.push(' ', el('a', {href: '#/crashes/' + crash}, '#' + crash));
  return parts;
}

function deliveryRow(d) {
  const state = String(d.state || '');
  const last = d.last_error ? String(d.last_error) : isInt(d.last_status) ? 'HTTP ' + d.last_status : '';
  const when = state === 'pending' ? (isInt(d.next_attempt_at) ? 'next ' + fmtTime(d.next_attempt_at) : '')
    : fmtTime(d.done_at);
  return el('tr', {testid: 'webhook-row', 'data-id': d.id, 'data-event': d.event_id, 'data-type': d.type, 'data-state': state},
    el('td', {class: 'num'}, d.id),
    el('td', {class: 'nowrap', testid: 'webhook-type'}, String(d.type || ''), el('span', {class: 'dim'}, ' #' + d.event_id)),
    el('td', {testid: 'webhook-summary'}, summary(d)),
    el('td', {class: 'mono', testid: 'webhook-url'}, String(d.url || '')),
    el('td', {class: 'nowrap'}, el('span', {class: 'tag' + (state === 'failed' ? ' warn' : ''), testid: 'webhook-state'}, state)),
    el('td', {class: 'num', testid: 'webhook-attempts'}, d.attempts),
    el('td', {testid: 'webhook-last'}, last),
    el('td', null, fmtTime(d.event_at)),
    el('td', {testid: 'webhook-when'}, when));
}

export async function viewWebhooks(params) {
  const limit = Math.min(Math.max(parseInt(params.get('limit'), 10) || 50, 1), 1000);
  const status = statusLine('webhooks-status');
  const list = el('div');
  const pager = el('div', {class: 'pager'});
  let cursors = [''], page = 0, loading = 0;
  view.append(el('h1', null, 'Webhook deliveries'),
    el('p', null, 'Events sent to each --webhook target, newest first: delivered, pending (retried with backoff) or failed.'),
    status.node, list, pager);

  /* Shows page p; false when a later load took over meanwhile. */
  async function fill(p) {
    const my = ++loading;
    const data = await api('/v1/webhooks/deliveries' + qs({limit, cursor: cursors[p]}));
    if (my !== loading) return false;
    page = p;
    cursors = cursors.slice(0, page + 1);
    if (data.next_cursor) cursors.push(data.next_cursor);
    const rows = Array.isArray(data.deliveries) ? data.deliveries : [];
    put(list, rows.length
      ? table('webhooks', ['Delivery', 'Event', 'About', 'Target', 'State', 'Attempts', 'Last attempt', 'Happened', 'Next / done'],
        rows.map(deliveryRow))
      : el('p', {testid: 'webhooks-empty'}, 'No deliveries: no --webhook target, or no event yet.'));
    put(pager,
      page > 0 ? el('button', {type: 'button', testid: 'webhooks-prev', onclick: () => load(page - 1)}, '← Newer') : null,
      el('span', null, ' Page ' + (page + 1) + ' '),
      data.next_cursor ? el('button', {type: 'button', testid: 'webhooks-next', onclick: () => load(page + 1)}, 'Older →') : null);
    return true;
  }
  async function load(p) {
    status.info('Loading…');
    try {
      if (await fill(p)) status.clear();
    } catch (e) { status.error(e); }
  }
  await load(0);
}

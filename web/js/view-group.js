/* The group view (#/group?kind=&signature=): its state and history, its trend, its spread over versions and devices, its reports. */
import {api, qs} from './api.js';
import {TREND_DAYS, trendPanel} from './charts.js';
import {crashTable} from './crash-table.js';
import {el, put} from './dom.js';
import {DIMS, dimsOf, filtersOf, groupHref} from './filters.js';
import {fmtTime, isInt, plural} from './format.js';
import {KIND_LABEL, kindBadge} from './kinds.js';
import {view} from './nav.js';
import {statusLine} from './status.js';
import {workflowPanel} from './workflow.js';

/* One dimension of a group's spread: values, counts and shares; a value
 * links to the group's reports of that value. The group's answer holds the
 * first 50 values: "More values" pages through the rest (more(cursor)
 * gives {values, next_cursor}). */
function spreadTable(key, label, items, total, hrefOf, more) {
  const section = el('section', {class: 'panel spread', testid: 'spread-' + key});
  let shown = Array.isArray(items) ? items : [], cursor = '', paged = false;
  const render = () => put(section, spreadBody(key, label, shown, total, hrefOf,
    shown.length >= 50 && (!paged || cursor) ? async () => {
      try {
        const d = await more(cursor);
        // the first page again holds the 50 shown: the pages replace them
        shown = (paged ? shown : []).concat(d.values);
        paged = true;
        cursor = d.next_cursor || '';
        render();
      } catch (e) { put(section, el('p', {class: 'status error'}, 'No more values: ' + e.message)); }
    } : null));
  render();
  return section;
}

function spreadBody(key, label, items, total, hrefOf, onMore) {
  items = Array.isArray(items) ? items.filter((it) => it && isInt(it.count)) : [];
  const given = items.reduce((a, it) => a + it.count, 0);
  const row = (value, count, href, none) => {
    const share = total > 0 ? count / total : 0;
    const bar = el('span', {class: 'share'});
    // CSSOM, not a style attribute: the CSP forbids inline styles
    bar.style.setProperty('--share', (share * 100).toFixed(1) + '%');
    return el('tr', {testid: 'spread-row', 'data-value': value === null ? '' : value, 'data-count': count},
      el('td', {class: 'spread-value'}, value === null ? el('span', {class: 'dim'}, none)
        : el('a', {href, testid: 'spread-filter', title: 'Only the reports of ' + value}, value)),
      el('td', {class: 'num'}, count),
      el('td', {class: 'spread-share'}, el('span', {class: 'track'}, bar), el('span', {class: 'pct'}, Math.round(share * 100) + '%')));
  };
  const rows = items.map((it) => row(typeof it.value === 'string' ? it.value : null, it.count, hrefOf(it.value)));
  // the answer lists at most 50 values: the rest are other values or none
  if (total > given) rows.push(row(null, total - given, null, onMore ? 'other values, or none' : 'not in the report'));
  return [el('h3', null, label, el('span', {class: 'dim'}, ' · ' + plural(items.length, 'value') + (onMore ? ' shown' : ''))),
    rows.length ? el('table', {class: 'spread-table'}, el('tbody', null, rows)) : el('p', {class: 'dim'}, 'None.'),
    onMore ? el('button', {type: 'button', class: 'more', testid: 'spread-more-' + key, onclick: onMore}, 'More values') : null];
}

/* Which grouping rule filed the group's newest report: a line of the
 * server's --grouping-rules file, or the default rule. */
function groupingRule(rule) {
  const ruled = typeof rule === 'string' && rule !== '';
  return el('p', {class: 'group-rule', testid: 'group-rule', 'data-rule': ruled ? rule : ''},
    ruled ? ['Grouped by the rule ', el('code', {testid: 'group-rule-text'}, rule), ' of the server\'s grouping rules.']
      : 'Grouped by the default rule: the app\'s top frame and the exception type.');
}

export async function viewGroup(params) {
  const kind = params.get('kind') || '';
  const signature = params.get('signature') || '';
  const dims = dimsOf(filtersOf(params));
  const status = statusLine('group-status');
  const body = el('div');
  view.append(el('p', {class: 'crumbs'}, el('a', {href: '#/crashes' + qs(dims), testid: 'group-back'}, '← All crash groups')),
    el('div', {class: 'tight'}, status.node), body);
  status.info('Loading…');
  let g;
  try {
    g = await api('/v1/crashes/group' + qs({kind, signature, days: TREND_DAYS}));
  } catch (e) {
    put(body, el('h1', null, 'Group ', el('code', null, signature)));
    status.error(e);
    return;
  }
  const gkind = typeof g.kind === 'string' ? g.kind : kind;
  // with a version, OS or device filter, the chart counts the reports it keeps
  const filtered = Object.values(dims).some(Boolean);
  let trend = g.trend;
  if (filtered) {
    try {
      trend = await api('/v1/crashes/trend' + qs(Object.assign({kind: gkind, signature: g.signature, days: TREND_DAYS}, dims)));
    } catch (e) { status.error(e); return; }
  }
  status.clear();
  const facts = [
    ['Kind', gkind], ['Reports', g.count], ['First seen', fmtTime(g.first_seen)], ['Last seen', fmtTime(g.last_seen)],
    ['Process', g.process], ['Newest app version', g.app_version],
    ['First version', g.first_version], ['Last version', g.last_version],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '');
  const reports = el('section', {testid: 'group-crashes', 'aria-live': 'polite'});
  const hrefWith = (k) => (value) => groupHref(g, Object.assign({}, dims, {[k]: value}));
  put(body,
    el('h1', {testid: 'group-title'}, kindBadge(gkind), ' ', (KIND_LABEL[gkind] || 'Crash') + ' group: ',
      el('code', {testid: 'group-signature'}, g.signature)),
    el('dl', {class: 'facts', testid: 'group-facts'}, facts.map(([k, v]) => [el('dt', null, k), el('dd', {'data-fact': k}, String(v))])),
    groupingRule(g.grouping_rule),
    workflowPanel(Object.assign({}, g, {kind: gkind}), status),
    trendPanel('group-trend', filtered ? 'Reports of this group per day that the filter keeps' : 'Reports of this group per day', trend),
    el('section', {testid: 'group-spread'},
      el('h2', null, 'Spread over app versions, OS versions and devices'),
      el('div', {class: 'spreads'}, DIMS.map(([k, label, key]) => spreadTable(key, label + 's', g[key], g.count, hrefWith(k),
        (cursor) => api('/v1/crashes/group/spread' + qs({kind: gkind, signature: g.signature, dim: k, limit: 200, cursor})))))),
    reports);
  await openReports();

  async function openReports(cursor, rows) {
    rows = rows || [];
    const chips = DIMS.filter(([k]) => dims[k]).map(([k, label]) => el('span', {class: 'chip', testid: 'group-filter', 'data-dim': k},
      label + ': ', el('strong', null, dims[k]), ' ',
      el('a', {href: groupHref(g, Object.assign({}, dims, {[k]: ''})), class: 'chip-x', 'aria-label': 'Remove the ' + label + ' filter', title: 'Remove this filter'}, '×')));
    const heading = () => el('h2', null, 'Reports', chips.length ? el('span', {class: 'dim'}, ' (filtered)') : null);
    if (!rows.length) put(reports, heading(), chips.length ? el('p', {class: 'chips'}, chips) : null, el('p', null, 'Loading…'));
    try {
      const data = await api('/v1/crashes' + qs(Object.assign({signature: g.signature, kind: gkind}, dims, {limit: 100, cursor})));
      rows = rows.concat(data.crashes);
      const more = data.next_cursor
        ? el('button', {type: 'button', class: 'more', testid: 'group-more', onclick: () => openReports(data.next_cursor, rows)}, 'Load more')
        : null;
      put(reports, heading(), chips.length ? el('p', {class: 'chips'}, chips) : null,
        rows.length ? crashTable('group-crash-list', rows, false) : el('p', {testid: 'group-crashes-empty'}, 'No reports of this group match the filter.'),
        more);
    } catch (e) { status.error(e); }
  }
}

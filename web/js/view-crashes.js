/* The crashes view (#/crashes): filters, the overall trend, and the groups (with their states) or reports tab. */
import {api, qs} from './api.js';
import {sparkline, TREND_DAYS, trendPanel} from './charts.js';
import {crashTable} from './crash-table.js';
import {el, put, table} from './dom.js';
import {DIMS, dimsOf, filtersOf, groupHref, hasDims, hasWorkflow, STATE_CHOICES} from './filters.js';
import {fmtTime} from './format.js';
import {FORMATS, KIND_LABEL, kindBadge, KINDS} from './kinds.js';
import {view} from './nav.js';
import {statusLine} from './status.js';
import {stateBadge} from './workflow.js';

/* The filter form: search, kind, format, app version, OS version, device,
 * and for groups their state and the version they are new in. Kind, format
 * and state apply at once, the rest on submit. */
function filterForm(f, onApply) {
  const search = el('input', {id: 'crash-search', type: 'search', value: f.query, testid: 'crash-search',
    placeholder: 'signature, process, bundle id, exception…'});
  const kind = el('select', {id: 'kind-filter', testid: 'kind-filter'},
    el('option', {value: ''}, 'all kinds'), KINDS.map((k) => el('option', {value: k}, k)));
  kind.value = f.kind;
  const format = el('select', {id: 'format-filter', testid: 'format-filter'},
    el('option', {value: ''}, 'all formats'), FORMATS.map((k) => el('option', {value: k}, k)));
  format.value = f.format;
  const state = el('select', {id: 'state-filter', testid: 'state-filter'},
    STATE_CHOICES.map(([v, label]) => el('option', {value: v}, label)));
  state.value = f.state;
  const newIn = el('input', {id: 'filter-new_in', type: 'text', value: f.new_in, testid: 'filter-new_in',
    placeholder: 'any', autocomplete: 'off', spellcheck: 'false', list: 'values-app_version'});
  const dims = DIMS.map(([k]) => el('input', {id: 'filter-' + k, type: 'text', value: f[k], testid: 'filter-' + k,
    list: 'values-' + k, placeholder: 'any', autocomplete: 'off', spellcheck: 'false'}));
  const lists = DIMS.map(([k]) => el('datalist', {id: 'values-' + k}));
  const field = (id, label, input, cls) => el('div', {class: 'field' + (cls ? ' ' + cls : '')}, el('label', {for: id}, label), input);
  const read = () => Object.assign({query: search.value.trim(), kind: kind.value, format: format.value},
    Object.fromEntries(DIMS.map(([k], i) => [k, dims[i].value.trim()])), {state: state.value, new_in: newIn.value.trim()});
  const clear = () => {
    search.value = ''; kind.value = ''; format.value = ''; state.value = ''; newIn.value = '';
    for (const d of dims) d.value = '';
    onApply(read());
  };
  const form = el('form', {class: 'filters', role: 'search', testid: 'crash-filters'},
    field('crash-search', 'Search', search, 'wide'), field('kind-filter', 'Kind', kind),
    field('format-filter', 'Format', format),
    DIMS.map(([k, label], i) => field('filter-' + k, label, dims[i])),
    field('state-filter', 'State', state), field('filter-new_in', 'New in version', newIn),
    el('div', {class: 'field buttons'},
      el('button', {type: 'submit', testid: 'crash-search-submit'}, 'Search'),
      el('button', {type: 'button', testid: 'filter-clear', onclick: clear}, 'Clear')),
    lists);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); onApply(read()); });
  kind.addEventListener('change', () => onApply(read()));
  format.addEventListener('change', () => onApply(read()));
  state.addEventListener('change', () => onApply(read()));
  return {form, lists};
}

/* Suggestions for the dimension fields: the values the stored reports give
 * (of the kind chosen), the most frequent first (GET /v1/crashes/values). */
function fillSuggestions(lists, kind) {
  DIMS.forEach(([k], i) => {
    api('/v1/crashes/values' + qs({dim: k, kind, limit: 200})).then((d) => {
      lists[i].dataset.kind = kind || '';
      put(lists[i], d.values.map((v) => el('option', {value: v.value, label: `${v.value} (${v.count})`})));
    }).catch(() => {});
  });
}

export async function viewCrashes(params) {
  const f = filtersOf(params);
  let tab = params.get('tab') === 'reports' ? 'reports' : 'groups';
  const limit = Math.min(Math.max(parseInt(params.get('limit'), 10) || 0, 0), 1000);   // reports a page (0: 50)
  const status = statusLine('crashes-status');
  const trendBox = el('div', {testid: 'overall-trend'});
  const note = el('p', {class: 'note', testid: 'filter-note'});
  const list = el('div', {testid: 'crash-listing'});
  const {form, lists} = filterForm(f, (nf) => { Object.assign(f, nf); apply(); });
  const tabButton = (t, label) => el('button', {type: 'button', role: 'tab', class: 'tab', testid: 'tab-' + t,
    onclick: () => { tab = t; apply(); }}, label);
  const tabs = el('div', {class: 'tabs', role: 'tablist', 'aria-label': 'Listing'},
    tabButton('groups', 'Groups'), tabButton('reports', 'Reports'));
  view.append(el('h1', null, 'Crashes'), trendBox, form, note, el('div', {class: 'tabbar'}, tabs, status.node), list);

  let gen = 0;
  // keeps the filters in the address without a new route (no hashchange)
  function apply() {
    history.replaceState(null, '', '#/crashes' + qs(Object.assign({}, f, {tab: tab === 'reports' ? 'reports' : '', limit: limit || ''})));
    return load();
  }

  async function load() {
    const my = ++gen;
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.dataset.testid === 'tab-' + tab));
    note.textContent = [hasDims(f) || f.format || hasWorkflow(f)
      ? 'The chart, the list and each group\'s sparkline count the reports these filters keep.' : '',
    hasWorkflow(f) && tab === 'reports' ? 'State and "new in version" keep groups: the reports tab lists every report of the other filters.' : '']
      .filter(Boolean).join(' ');
    status.info('Loading…');
    try {
      await Promise.all([
        api('/v1/crashes/trend' + qs(Object.assign({days: TREND_DAYS, kind: f.kind, format: f.format}, dimsOf(f),
          {state: f.state, new_in: f.new_in}))).then((t) => {
          if (my === gen) put(trendBox, trendPanel('overall-trend-panel', f.kind ? `${KIND_LABEL[f.kind]} reports per day` : 'Reports per day', t));
        }, (e) => {   // the list stands without its chart
          if (my === gen) put(trendBox, el('p', {class: 'status error', testid: 'trend-error'}, 'No trend: ' + e.message));
        }),
        tab === 'groups' ? loadGroups(my) : loadReports(my),
      ]);
      if (my === gen) status.clear();
    } catch (e) { if (my === gen) status.error(e); }
  }

  function emptyText() {
    if (!f.query && !f.format && !hasDims(f) && !hasWorkflow(f)) {
      return f.kind ? `No reports of kind ${f.kind}.` : 'No crashes yet. POST a .crash, .ips, sample or spindump report to /v1/crashes.';
    }
    return 'No reports match these filters.';
  }

  async function loadGroups(my) {
    const data = await api('/v1/crashes/groups' + qs(Object.assign({query: f.query, kind: f.kind, format: f.format}, dimsOf(f),
      {state: f.state, new_in: f.new_in, limit: 200, trend: TREND_DAYS})));
    if (my !== gen) return;
    put(list, data.groups.length ? table('groups', ['Kind', 'State', 'Signature', 'Reports', 'Last 30 days', 'Last seen', 'App version', 'First version', 'Process'],
      data.groups.map((g) => el('tr', {testid: 'group-row', 'data-kind': g.kind || '', 'data-signature': g.signature || '', 'data-count': g.count,
        'data-state': g.state || ''},
        el('td', null, kindBadge(g.kind)),
        el('td', {testid: 'group-state'}, stateBadge(g.state)),
        el('td', null, el('a', {class: 'mono', href: groupHref(g, dimsOf(f)), testid: 'group-open'}, g.signature || '')),
        el('td', {class: 'num', testid: 'group-count'}, g.count),
        el('td', {class: 'sparkcell'}, sparkline(g.trend)),
        el('td', {class: 'nowrap'}, fmtTime(g.last_seen)),
        el('td', null, g.app_version || ''),
        el('td', {testid: 'group-first-version'}, g.first_version || ''),
        el('td', null, g.process || ''))))
      : el('p', {testid: 'groups-empty'}, emptyText()));
  }

  async function loadReports(my, cursor, rows) {
    const data = await api('/v1/crashes' + qs(Object.assign({query: f.query, kind: f.kind, format: f.format}, dimsOf(f), {limit: limit || 50, cursor})));
    if (my !== gen) return;
    rows = (rows || []).concat(data.crashes);
    const more = data.next_cursor ? el('button', {type: 'button', class: 'more', testid: 'reports-more', onclick: async () => {
      try { await loadReports(my, data.next_cursor, rows); } catch (e) { status.error(e); }
    }}, 'Load more') : null;
    put(list, rows.length ? [crashTable('crash-list', rows, true), more] : el('p', {testid: 'reports-empty'}, emptyText()));
  }

  // value suggestions for the version, OS and device fields
  fillSuggestions(lists, f.kind);
  await load();
}

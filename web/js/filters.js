/* The crash filters kept in the address (query, kind, format, app version, OS version, device; for groups
 * their state and the version they are new in) and group links. */
import {qs} from './api.js';
import {FORMATS, KINDS} from './kinds.js';

/* The dimensions crashes are filtered and spread by: [query argument,
 * label, key of the group's spread]. */
export const DIMS = [
  ['app_version', 'App version', 'app_versions'],
  ['os_version', 'OS version', 'os_versions'],
  ['hardware_model', 'Device', 'hardware_models'],
];

/* The states of a group (the groups' ?state= takes any of them, comma-separated). */
export const STATES = ['unresolved', 'resolved', 'ignored', 'regressed'];
/* The state filter's choices: [value of ?state=, label]. */
export const STATE_CHOICES = [['', 'any state'], ['unresolved,regressed', 'open (unresolved or regressed)'],
  ...STATES.map((s) => [s, s])];

/* The filters of the crash views, from the address. */
export function filtersOf(params) {
  const f = {query: params.get('query') || '', kind: KINDS.includes(params.get('kind')) ? params.get('kind') : '',
    format: FORMATS.includes(params.get('format')) ? params.get('format') : ''};
  for (const [k] of DIMS) f[k] = params.get(k) || '';
  const st = params.get('state') || '';
  f.state = STATE_CHOICES.some(([v]) => v === st) ? st : '';
  f.new_in = params.get('new_in') || '';
  return f;
}
/* Whether f keeps groups by their workflow (state, new in a version): the reports tab ignores these. */
export function hasWorkflow(f) { return !!(f.state || f.new_in); }
export function dimsOf(f) { return Object.fromEntries(DIMS.map(([k]) => [k, f[k] || ''])); }
export function hasDims(f) { return DIMS.some(([k]) => f[k]); }

/* The page of a group (kind and signature), its reports narrowed by dims. */
export function groupHref(g, dims) {
  return '#/group' + qs(Object.assign({kind: g.kind || 'crash', signature: g.signature || ''}, dims || {}));
}

/* Report kinds and source formats: the lists filters take, their labels and the kind badge. */
import {el} from './dom.js';

/* The source formats of reports (the listings' ?format=). */
export const FORMATS = ['crash', 'ips', 'kscrash', 'plcrash', 'metrickit', 'asc', 'minidump'];

/* The kinds a stored report can have (the answers' "kind"); listings and
 * groups take ?kind=NAME. Class names are built only from this list. */
export const KINDS = ['crash', 'hang', 'resource', 'jetsam', 'panic', 'sample', 'spindump', 'fragment', 'launch', 'minidump'];
export const KIND_LABEL = {
  crash: 'Crash', hang: 'Hang', resource: 'Resource report', jetsam: 'Jetsam event',
  panic: 'Kernel panic', sample: 'Sample', spindump: 'Spindump', fragment: 'Fragment',
  launch: 'Slow launch', minidump: 'Minidump',
};

/* A badge naming a report's kind; nothing when the answer has none (older servers). */
export function kindBadge(kind) {
  if (typeof kind !== 'string' || !kind) return null;
  const known = KINDS.includes(kind);
  return el('span', {class: 'kind' + (known ? ' kind-' + kind : ''), testid: 'kind-badge', 'data-kind': kind,
    title: known ? KIND_LABEL[kind] : kind}, kind);
}

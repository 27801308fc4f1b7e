/* Call trees of samples, spindumps and microstackshots: a collapsible tree built as it is opened. */
import {el, put} from './dom.js';
import {isInt, plural} from './format.js';
import {frameSymbol, frameTags, frameWhere, isAppFrame} from './frames.js';

const TREE_OPEN_ROWS = 300;        // tree rows expanded at first
const TREE_EXPAND_ALL_ROWS = 20000;

/* The roots of a call-tree thread: its "tree", else rebuilt from the
 * frames' pre-order depths (answers that give depth but no tree). */
function treeRoots(thread) {
  if (Array.isArray(thread.tree)) return thread.tree;
  const roots = [], stack = [];
  let last = null;
  for (const f of thread.frames || []) {
    if (!isInt(f.depth) || f.frame === last) continue;  // inlined levels share their frame
    last = f.frame;
    const node = {count: f.count, frame: f.frame, children: []};
    while (stack.length > f.depth) stack.pop();
    (stack.length ? stack[stack.length - 1].children : roots).push(node);
    stack.push(node);
  }
  return roots;
}

export function isTreeThread(t) {
  return Array.isArray(t.tree) || (Array.isArray(t.frames) && t.frames.some((f) => isInt(f.depth)));
}

function kidsOf(node) { return node && Array.isArray(node.children) ? node.children : []; }

/* Nodes and deepest level of a tree, without recursion (trees may be thousands deep). */
function treeSize(roots) {
  let nodes = 0, depth = 0;
  const stack = roots.map((n) => [n, 0]);
  while (stack.length) {
    const [n, d] = stack.pop();
    nodes++;
    if (d > depth) depth = d;
    for (const k of kidsOf(n)) stack.push([k, d + 1]);
  }
  return {nodes, depth};
}

/* An indented, collapsible call tree. Rows are one flat list (indentation by
 * depth), children built on first expand, so a big tree costs only what is shown. */
export function treeView(thread, ctx) {
  const byFrame = new Map();   // frame number -> its frame objects (inlined levels first, as in frames)
  for (const f of thread.frames || []) {
    if (!byFrame.has(f.frame)) byFrame.set(f.frame, []);
    byFrame.get(f.frame).push(f);
  }
  const roots = treeRoots(thread);
  const size = treeSize(roots);
  const rows = el('div', {class: 'calltree', role: 'tree', testid: 'call-tree', 'data-nodes': size.nodes});
  const note = el('span', {class: 'dim', testid: 'tree-note'});
  const state = new WeakMap();   // row -> {node, depth, open}

  function nodeRow(node, depth) {
    const levels = byFrame.get(node.frame) || [];
    const outer = levels.find((l) => !l.inlined) || levels[levels.length - 1] || null;
    const kids = kidsOf(node);
    const app = !!outer && isAppFrame(outer, ctx);
    const twisty = kids.length
      ? el('button', {type: 'button', class: 'twisty', testid: 'tree-toggle', 'aria-label': 'expand'}, '▸')
      : el('span', {class: 'twisty leaf', 'aria-hidden': 'true'}, '·');
    const label = outer
      ? [el('span', {class: 'sym', testid: 'tree-symbol'}, frameSymbol(outer, ctx.images)),
        el('span', {class: 'dim', testid: 'tree-image'}, ' (in ' + (outer.image || '???') + ')'),
        frameWhere(outer) ? el('span', {class: 'where', testid: 'tree-file'}, ' ' + frameWhere(outer)) : null,
        frameTags(outer),
        el('span', {class: 'dim addr'}, ' [' + (outer.address || '') + ']')]
      : el('span', {class: 'dim'}, 'frame ' + node.frame + ' (not in the answer)');
    const inlined = levels.filter((l) => l !== outer).map((l) => el('div', {class: 'inl', testid: 'tree-inlined'},
      el('span', {class: 'tag'}, 'inlined'), el('span', {class: 'sym'}, frameSymbol(l, ctx.images)),
      frameWhere(l) ? el('span', {class: 'where'}, ' ' + frameWhere(l)) : null));
    const row = el('div', {class: 'tnode' + (app ? ' app' : '') + (outer && outer.status === 'missing_image' ? ' missing' : ''),
      role: 'treeitem', testid: 'tree-node', 'aria-level': depth + 1, 'aria-expanded': kids.length ? 'false' : null,
      'data-depth': depth, 'data-frame': node.frame, 'data-count': isInt(node.count) ? node.count : ''},
    el('div', {class: 'tline'}, twisty, el('span', {class: 'count', testid: 'tree-count'}, isInt(node.count) ? node.count : ''), ' ', label),
    inlined);
    // CSSOM, not a style attribute: the CSP forbids inline styles
    row.style.setProperty('--depth', String(Math.min(depth, 300)));
    row.title = 'depth ' + depth;
    state.set(row, {node, depth, open: false});
    if (kids.length) twisty.addEventListener('click', () => toggle(row));
    return row;
  }

  /* Rows of nodes in pre-order from entries [node, depth, heavy]; a node is
   * opened while want(...) says so and the row budget lasts. */
  function build(entries, budget, want) {
    const frag = document.createDocumentFragment();
    const stack = entries.slice().reverse();
    let n = 0;
    while (stack.length) {
      const [node, depth, heavy] = stack.pop();
      const row = nodeRow(node, depth);
      frag.append(row);
      n++;
      const kids = kidsOf(node);
      if (kids.length && n < budget && want(kids, depth, heavy)) {
        markOpen(row, true);
        let hi = 0;
        kids.forEach((k, i) => { if ((k.count || 0) > (kids[hi].count || 0)) hi = i; });
        for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1, i === hi]);
      }
    }
    return {frag, n};
  }

  function markOpen(row, open) {
    state.get(row).open = open;
    row.setAttribute('aria-expanded', open ? 'true' : 'false');
    const b = row.querySelector('.twisty');
    b.textContent = open ? '▾' : '▸';
    b.setAttribute('aria-label', open ? 'collapse' : 'expand');
  }

  /* Removes the rows below an open row (its shown descendants). */
  function close(row) {
    const d = state.get(row).depth;
    while (row.nextSibling && state.get(row.nextSibling).depth > d) row.nextSibling.remove();
    markOpen(row, false);
  }

  function open(row, budget, want) {
    const st = state.get(row);
    markOpen(row, true);
    const {frag} = build(kidsOf(st.node).map((k) => [k, st.depth + 1, false]), budget, want);
    row.after(frag);
  }

  // a click opens one level, and follows single-child chains
  function toggle(row) {
    if (state.get(row).open) close(row);
    else open(row, TREE_OPEN_ROWS, (kids) => kids.length === 1);
  }

  function showAll(budget, want) {
    const {frag, n} = build(roots.map((r) => [r, 0, true]), budget, want);
    put(rows, frag);
    note.textContent = n < size.nodes ? ` showing ${n} of ${size.nodes} nodes` : '';
  }

  // first view: the first levels, every single-child chain and each level's heaviest branch
  showAll(TREE_OPEN_ROWS, (kids, depth, heavy) => depth < 2 || kids.length === 1 || heavy);

  const expandAll = el('button', {type: 'button', testid: 'tree-expand-all', onclick: () => {
    showAll(TREE_EXPAND_ALL_ROWS, () => true);
  }}, 'Expand all');
  const collapseAll = el('button', {type: 'button', testid: 'tree-collapse-all', onclick: () => showAll(roots.length, () => false)}, 'Collapse all');
  return el('div', {class: 'treebox'},
    el('div', {class: 'treebar'}, el('span', {testid: 'tree-size'}, `Call tree: ${plural(size.nodes, 'node')}, ${size.depth + 1} levels deep`),
      ' ', expandAll, ' ', collapseAll, note),
    roots.length ? rows : el('p', {class: 'dim'}, 'Empty tree.'));
}

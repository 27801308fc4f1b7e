/* DOM helpers: el/svg build nodes, add/put fill them, table builds a table; text only, never innerHTML. */

/* Everything the server sends is text: the DOM is built with createElement
 * and textContent only (see el()), never with innerHTML. */

/* el('a', {href: '#/x', testid: 'y', class: 'z'}, 'text', child, ...).
 * Strings become text nodes; null/false children are skipped. */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'testid') e.dataset.testid = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  return add(e, children);
}

/* Appends children (nested arrays, nodes, strings as text; null/false skipped). */
export function add(node, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/* Replaces a node's children. */
export function put(node, ...children) {
  node.replaceChildren();
  return add(node, children);
}

export function table(testid, headers, rows) {
  return el('table', {testid},
    el('thead', null, el('tr', null, headers.map((h) => el('th', {scope: 'col'}, h)))),
    el('tbody', null, rows));
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/* svg('rect', {x: 1}, ...children): el() for SVG; strings become text. */
export function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    e.setAttribute(k === 'testid' ? 'data-testid' : k, String(v));
  }
  return add(e, children);
}

/* What views share to navigate: the <main> they render into, the route generation and go(). */

export const view = document.getElementById('view');

/* Routes begun: an action or load that outlives its view checks this. */
export let generation = 0;
let routeHandler = async () => {};

/* A new route begins; its generation. */
export function nextGeneration() { return ++generation; }

/* Sets what shows the view of the address (main.js). */
export function onRoute(fn) { routeHandler = fn; }

/* Shows the view of the current address (again). */
export function route() { return routeHandler(); }

/* Opens a route once an action is done. hashchange comes as a later task:
 * until then the old view would pass for the new one, so the view stops
 * being ready at once, and a view still loading cannot mark it ready. */
export function go(hash) {
  generation++;
  view.dataset.ready = 'false';
  if (location.hash === hash) route(); else location.hash = hash;
}

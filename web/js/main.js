/* Boot and router of the dashboard, a hash-routed single page over the /v1 API: one view module per address. */
import {put} from './dom.js';
import {generation, nextGeneration, onRoute, route, view} from './nav.js';
import {initTokens} from './tokens.js';
import {viewCrash} from './view-crash.js';
import {viewCrashes} from './view-crashes.js';
import {viewGroup} from './view-group.js';
import {viewImages} from './view-images.js';
import {viewMissing} from './view-missing.js';
import {viewSymbolicate} from './view-symbolicate.js';
import {viewWebhooks} from './view-webhooks.js';

/* Shows the view of the address. */
async function showRoute() {
  const gen = nextGeneration();
  const [where, search] = location.hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(search || '');
  const parts = (where || 'crashes').split('/').map(decodeURIComponent);
  const section = parts[0];
  const nav = section === 'group' ? 'crashes' : section;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  put(view);
  view.dataset.view = section;
  view.dataset.ready = 'false';
  if (section === 'crashes' && parts[1]) await viewCrash(parts[1]);
  else if (section === 'group') await viewGroup(params);
  else if (section === 'images') await viewImages(params);
  else if (section === 'missing') await viewMissing();
  else if (section === 'symbolicate') viewSymbolicate();
  else if (section === 'webhooks') await viewWebhooks(params);
  else await viewCrashes(params);
  if (gen !== generation) return;  // another route started meanwhile
  const h1 = view.querySelector('h1');
  document.title = 'symd: ' + (h1 ? h1.textContent : section);
  view.dataset.ready = 'true';
}

initTokens();
onRoute(showRoute);
window.addEventListener('hashchange', route);
route();

// The console's shell: the session, the page router (#tools, #plugins, …) and the one live
// connection (Server-Sent Events) every page listens to.

import { get, post, setCsrf } from './api.js';
import * as tools from './tools.js';
import * as plugins from './plugins.js';
import * as resources from './resources.js';
import * as prompts from './prompts.js';
import * as activity from './activity.js';
import * as audit from './audit.js';
import * as metrics from './metrics.js';

const pages = { tools, plugins, resources, prompts, activity, audit, metrics };
let current = null;

function route(moveFocus) {
  const name = location.hash.slice(1) in pages ? location.hash.slice(1) : 'tools';
  for (const key of Object.keys(pages)) {
    document.getElementById(`page-${key}`).hidden = key !== name;
  }
  for (const a of document.querySelectorAll('nav a[data-page]')) {
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${name[0].toUpperCase()}${name.slice(1)} · toolhost console`;
  if (current && current !== pages[name] && current.hide) current.hide();
  current = pages[name];
  if (current.show) current.show();
  if (moveFocus) document.getElementById(`h-${name}`).focus({ preventScroll: false });
}

function connect() {
  const live = document.getElementById('live');
  const source = new EventSource('/console/api/events');
  source.addEventListener('open', () => { live.textContent = 'live'; live.classList.add('on'); });
  source.addEventListener('error', () => { live.textContent = 'reconnecting…'; live.classList.remove('on'); });
  source.addEventListener('reload', (e) => {
    const change = JSON.parse(e.data);
    activity.reload(change);
    tools.refresh();
    plugins.refresh();
    resources.refresh();
    prompts.refresh();
  });
  source.addEventListener('resync', () => { tools.refresh(); plugins.refresh(); resources.refresh(); prompts.refresh(); });
  source.addEventListener('running', (e) => activity.running(JSON.parse(e.data)));
  source.addEventListener('call', (e) => activity.call(JSON.parse(e.data)));
  source.addEventListener('skipped', (e) => activity.skipped(JSON.parse(e.data).count));
}

async function main() {
  const session = await get('/console/api/session');
  setCsrf(session.csrf);
  document.getElementById('version').textContent = `v${session.version}`;
  if (session.who) {
    const who = document.getElementById('who');
    who.textContent = `Signed in as ${session.who.sub}`;
    who.title = session.who.iss ?? '';
    who.hidden = false;
  }
  const signout = document.getElementById('signout');
  if (session.signIn) {
    signout.hidden = false;
    signout.addEventListener('submit', async (e) => {
      e.preventDefault();
      await post('/console/logout', {}).catch(() => {});
      location.assign('/');
    });
  }
  for (const h1 of document.querySelectorAll('main h1')) h1.setAttribute('tabindex', '-1');
  for (const page of Object.values(pages)) page.init(session);
  window.addEventListener('hashchange', () => route(true));
  route(false);
  connect();
}

main().catch((e) => {
  document.getElementById('live').textContent = `cannot load the console: ${e.message}`;
});

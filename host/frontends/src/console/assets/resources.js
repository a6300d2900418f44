// Resources: what the host serves to read (MCP `resources/read`, `toolhost read`) — today the
// plugins' skills, each with its files (URI, type, size, digest); Read shows a file's text (a
// binary file is described, not shown).

import { get } from './api.js';
import { h, fill, facts, pre, bytes } from './dom.js';

let data = null;
let shown = null;

export function init() { refresh(); }
export function show() { refresh(); }

export function refresh() {
  return get('/console/api/resources').then((d) => { data = d; render(); })
    .catch((e) => status(`cannot list the resources: ${e.message}`));
}

function status(text) { fill(document.getElementById('resources-status'), text || ''); }

function render() {
  const list = document.getElementById('resources-list');
  status(data.skills.length
    ? `${data.skills.length} skill${data.skills.length === 1 ? '' : 's'}`
    : 'No resource is served: no loaded plugin ships a skill.');
  fill(list, data.skills.map(skillCard));
}

function skillCard(s) {
  const id = `skill-${s.plugin}-${s.name}`;
  return h('article', { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, s.name, ' ', h('span', { class: 'muted' }, `skill of ${s.plugin}`)),
    h('p', {}, s.description),
    h('p', {}, h('code', {}, s.uri)),
    h('ul', { class: 'files', 'aria-label': `Files of ${s.name}` }, s.files.map((f) => h('li', {},
      h('button', { type: 'button', title: f.uri, onclick: () => read(f.uri) }, `Read ${f.path}`),
      ' ', h('span', { class: 'muted' }, `${f.mimeType} · ${bytes(f.size)}`)))));
}

async function read(uri) {
  const out = document.getElementById('resource-view');
  shown = uri;
  fill(out, h('p', { class: 'muted', role: 'status' }, `reading ${uri}…`));
  try {
    const r = await get(`/console/api/resource?uri=${encodeURIComponent(uri)}`);
    if (shown !== uri) return;
    fill(out,
      h('h2', { id: 'resource-title', tabindex: -1 }, uri),
      facts([['Type', r.mimeType], ['Size', bytes(r.size)]]),
      r.text !== undefined
        ? pre(r.text, `Contents of ${uri}`)
        : h('p', { class: 'muted' }, `A binary file (${bytes(r.size)}): read it with toolhost read ${uri} --out FILE.`));
    document.getElementById('resource-title').focus();
  } catch (e) {
    fill(out, h('p', { class: 'error', role: 'alert' }, `cannot read ${uri}: ${e.message}`));
  }
}

// Resources: what the host serves to read (MCP `resources/read`, `toolhost read`) — the
// plugins' skills, each with its files (URI, type, size, digest), their static resources and
// their templates (a form fills the variables); Read shows a text resource (a binary one is
// described, not shown). A plugin's resource is read by running the plugin in its sandbox.

import { get } from './api.js';
import { h, fill, facts, pre, bytes } from './dom.js';
import { completes } from './complete.js';

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
  const count = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const served = data.skills.length + data.resources.length + data.templates.length;
  status(served
    ? [count(data.skills.length, 'skill'), count(data.resources.length, 'resource'),
      count(data.templates.length, 'template')].join(' · ')
    : 'No resource is served: no loaded plugin declares a resource or ships a skill.');
  fill(list, [...data.resources.map(resourceCard), ...data.templates.map(templateCard), ...data.skills.map(skillCard)]);
}

function resourceCard({ plugin, resource: r }) {
  const id = `resource-${plugin}-${r.name}`;
  return h('article', { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, r.title || r.name, ' ', h('span', { class: 'muted' }, `resource of ${plugin}`)),
    r.description ? h('p', {}, r.description) : null,
    h('p', {}, h('code', {}, r.uri), r.mimeType ? h('span', { class: 'muted' }, ` · ${r.mimeType}`) : null),
    h('button', { type: 'button', title: r.uri, onclick: () => read(r.uri) }, `Read ${r.name}`));
}

// The variables of an RFC 6570 template the host serves: `{name}` and `{+name}`.
function variables(template) {
  return [...template.matchAll(/\{(\+?)([A-Za-z0-9_]+)\}/g)].map((m) => ({ reserved: m[1] === '+', name: m[2] }));
}

// The URI a template gives for `values`: `{name}` percent-encodes everything but unreserved
// characters, `{+name}` keeps reserved ones (`/`) as RFC 6570 says.
function expand(template, values) {
  return template.replace(/\{(\+?)([A-Za-z0-9_]+)\}/g, (_, plus, name) => (plus
    ? encodeURI(values[name] || '').replace(/[?#]/g, encodeURIComponent)
    : encodeURIComponent(values[name] || '')));
}

function templateCard({ plugin, template: t }) {
  const id = `template-${plugin}-${t.name}`;
  const inputs = variables(t.uriTemplate).map((v) => {
    const input = h('input', { name: v.name, required: true, 'aria-label': `${v.name} of ${t.uriTemplate}` });
    const list = (t.complete || []).includes(v.name) ? completes(input, { template: t.uriTemplate }, v.name) : null;
    return h('label', {}, `${v.name} `, input, list);
  });
  const submit = (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(event.target));
    read(expand(t.uriTemplate, values));
  };
  return h('article', { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, t.title || t.name, ' ', h('span', { class: 'muted' }, `template of ${plugin}`)),
    t.description ? h('p', {}, t.description) : null,
    h('p', {}, h('code', {}, t.uriTemplate)),
    h('form', { onsubmit: submit, 'aria-label': `Read from ${t.uriTemplate}` }, ...inputs,
      h('button', { type: 'submit' }, 'Read')));
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
      facts([['Type', r.mimeType || 'not declared'], ['Size', bytes(r.size)], ['Plugin', r.plugin],
        ...(r.truncated ? [['Cut', 'at the plugin\'s resource_kb limit']] : [])]),
      r.text !== undefined
        ? pre(r.text, `Contents of ${uri}`)
        : h('p', { class: 'muted' }, `A binary file (${bytes(r.size)}): read it with toolhost read ${uri} --out FILE.`));
    document.getElementById('resource-title').focus();
  } catch (e) {
    fill(out, h('p', { class: 'error', role: 'alert' }, `cannot read ${uri}: ${e.message}`));
  }
}

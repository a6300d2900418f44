// Prompts: the plugins' message templates (MCP `prompts/get`, `toolhost get-prompt`), each with
// a form for its arguments (completed as they are typed, where the plugin completes them);
// Get shows the messages a client would send, each under its role.

import { get } from './api.js';
import { h, fill } from './dom.js';
import { completes } from './complete.js';

let data = null;

export function init() { refresh(); }
export function show() { refresh(); }

export function refresh() {
  return get('/console/api/prompts').then((d) => { data = d; render(); })
    .catch((e) => status(`cannot list the prompts: ${e.message}`));
}

function status(text) { fill(document.getElementById('prompts-status'), text || ''); }

function render() {
  const n = data.prompts.length;
  status(n ? `${n} prompt${n === 1 ? '' : 's'}` : 'No prompt is offered: no loaded plugin declares one.');
  fill(document.getElementById('prompts-list'), data.prompts.map(promptCard));
}

function promptCard({ plugin, prompt: p }) {
  const id = `prompt-${plugin}-${p.name}`;
  const args = p.arguments || [];
  const inputs = {};
  const fields = args.map((a) => {
    const input = h('input', { name: a.name, required: a.required || false, 'aria-label': `${a.name} of ${p.name}` });
    inputs[a.name] = input;
    const list = a.complete
      ? completes(input, { prompt: p.name }, a.name, () => Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value])))
      : null;
    return h('label', {}, `${a.name}${a.required ? '' : ' (optional)'} `, input, list,
      a.description ? h('span', { class: 'muted' }, ` ${a.description}`) : null);
  });
  const submit = (event) => {
    event.preventDefault();
    const values = Object.fromEntries([...new FormData(event.target)].filter(([, v]) => v !== ''));
    getPrompt(p.name, values);
  };
  return h('article', { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, p.title || p.name, ' ', h('span', { class: 'muted' }, `prompt of ${plugin}`)),
    p.description ? h('p', {}, p.description) : null,
    h('form', { onsubmit: submit, 'aria-label': `Arguments of ${p.name}` }, ...fields,
      h('button', { type: 'submit' }, `Get ${p.name}`)));
}

async function getPrompt(name, values) {
  const out = document.getElementById('prompt-view');
  fill(out, h('p', { class: 'muted', role: 'status' }, `getting ${name}…`));
  const q = new URLSearchParams({ name });
  for (const [k, v] of Object.entries(values)) q.append(`arg.${k}`, v);
  try {
    const r = await get(`/console/api/prompt?${q}`);
    fill(out,
      h('h2', { id: 'prompt-title', tabindex: -1 }, name),
      r.description ? h('p', {}, r.description) : null,
      ...r.messages.map((m) => h('div', { class: 'message' },
        h('h3', {}, m.role),
        m.text !== undefined
          ? h('pre', {}, m.text)
          : h('p', {}, 'A resource to read: ', h('code', {}, m.link.uri), ` (${m.link.name})`))),
      r.truncated ? h('p', { class: 'muted' }, 'Cut at the plugin\'s resource_kb limit.') : null);
    document.getElementById('prompt-title').focus();
  } catch (e) {
    fill(out, h('p', { class: 'error', role: 'alert' }, `cannot get ${name}: ${e.message}`));
  }
}

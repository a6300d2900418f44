// Tools: every tool with its plugin, flags, description and limits; search and filter; a try
// form generated from the tool's input schema, checked in the page before anything is sent;
// the outcome as the executor returned it, and the tool's app when it has one (`apps.js`).

import { get, post } from './api.js';
import { showApp, closeApp } from './apps.js';
import { h, fill, facts, pre, usageLine, confirmDialog, ms } from './dom.js';

let session = {};
let tools = [];
let selected = null;
let loading = null;

export function init(s) {
  session = s;
  document.getElementById('tool-search').addEventListener('input', renderList);
  document.getElementById('tool-flag').addEventListener('change', renderList);
  refresh();
}

export function show() {}

/** Fetch the tools again (on load and after every reload event). */
export function refresh() {
  loading = get('/console/api/tools').then((data) => {
    const before = tools.find((t) => t.name === selected);
    tools = data.tools;
    renderList();
    const now = tools.find((t) => t.name === selected);
    if (selected && (!now || !before || now.version !== before.version || now.plugin !== before.plugin)) {
      renderDetail(now);
    }
  }).catch((e) => {
    fill(document.getElementById('tool-count'), `cannot list the tools: ${e.message}`);
  });
  return loading;
}

function matches(t, q, flag) {
  if (flag && !t.flags.includes(flag)) return false;
  if (!q) return true;
  return [t.name, t.plugin, t.description, t.category || ''].some((s) => s.toLowerCase().includes(q));
}

function renderList() {
  const q = document.getElementById('tool-search').value.trim().toLowerCase();
  const flag = document.getElementById('tool-flag').value;
  const shown = tools.filter((t) => matches(t, q, flag));
  fill(document.getElementById('tool-count'), `${shown.length} of ${tools.length} tools`);
  fill(document.getElementById('tool-list'), shown.map((t) => h('li', {},
    h('button', {
      type: 'button',
      'data-tool': t.name,
      'aria-current': t.name === selected ? 'true' : null,
      onclick: () => select(t.name),
    },
    h('span', { class: 'name' }, t.name),
    t.flags.map((f) => h('span', { class: `badge ${f}` }, f)),
    h('span', { class: 'sub' }, `${t.plugin} v${t.version}`)))));
}

function select(name) {
  selected = name;
  for (const b of document.querySelectorAll('#tool-list button')) {
    if (b.dataset.tool === name) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
  renderDetail(tools.find((t) => t.name === name));
  const heading = document.getElementById('tool-title');
  if (heading) heading.focus();
}

function typeOf(p) {
  const s = p.schema || {};
  if (Array.isArray(s.enum)) return 'enum';
  if (typeof s.type === 'string') return s.type;
  return p.json ? 'json' : 'string';
}

function renderDetail(t) {
  closeApp();
  const detail = document.getElementById('tool-detail');
  if (!t) {
    fill(detail, h('p', { class: 'muted' }, selected ? `Tool ${selected} is gone (the plugin was reloaded).` : 'Pick a tool.'));
    return;
  }
  const l = t.limits;
  fill(detail,
    h('h2', { id: 'tool-title', tabindex: -1 }, t.name, t.flags.map((f) => h('span', { class: `badge ${f}` }, f))),
    h('p', {}, t.description),
    facts([
      ['Plugin', `${t.plugin} v${t.version}`],
      ['Call', h('code', {}, t.signature)],
      ['Category', t.category],
      ['Limits', `${l.timeout_ms} ms, ${l.memory_mb} MiB memory, ${l.output_limit} characters of output, ${l.write_mb} MiB of writes`],
    ]),
    t.dangerous ? h('p', { class: 'error' }, `Dangerous: every call needs a confirmation (danger policy “${session.danger}”).`) : null,
    t.dangerNotes.length ? h('ul', {}, t.dangerNotes.map((n) => h('li', {}, n))) : null,
    t.outputSchema ? h('details', {}, h('summary', {}, 'Output schema'), pre(JSON.stringify(t.outputSchema, null, 2), 'Output schema')) : null,
    session.readOnly ? h('p', { class: 'muted' }, 'This console is read-only ([console] read_only = true): tools cannot be run from here.') : tryForm(t),
    h('div', { id: 'result', class: 'result', 'aria-live': 'polite' }));
}

function tryForm(t) {
  const fields = t.params.map((p, i) => field(t, p, i));
  const form = h('form', { class: 'try', novalidate: true, 'aria-labelledby': 'try-title' },
    h('h3', { id: 'try-title' }, 'Try it'),
    t.params.length ? fields.map((f) => f.node) : h('p', { class: 'muted' }, 'This tool takes no arguments.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'run' }, t.dangerous ? 'Run…' : 'Run')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const args = {};
    let firstBad = null;
    for (const f of fields) {
      const r = f.read();
      if (r.error) { f.show(r.error); firstBad ??= f; } else { f.show(null); if (r.value !== undefined) args[f.name] = r.value; }
    }
    if (firstBad) { firstBad.focus(); return; }
    let confirm = false;
    if (t.dangerous) {
      const body = [
        h('p', {}, `${t.name} (plugin ${t.plugin}) is dangerous. Run it with these arguments?`),
        pre(JSON.stringify(args, null, 2), 'Arguments'),
        t.dangerNotes.length ? h('ul', {}, t.dangerNotes.map((n) => h('li', {}, n))) : null,
      ];
      confirm = await confirmDialog(`Run ${t.name}?`, body, 'Run it');
      if (!confirm) {
        fill(document.getElementById('result'), h('p', { class: 'muted' }, 'Not run: the call was not confirmed.'));
        return;
      }
    }
    await run(t, args, confirm);
  });
  return form;
}

/** One form field for param `p`, with its own check of what is typed. */
function field(t, p, i) {
  const id = `arg-${i}`;
  const kind = typeOf(p);
  const s = p.schema || {};
  const hintId = `${id}-hint`;
  const errId = `${id}-error`;
  const describedBy = `${hintId} ${errId}`;
  const common = { id, name: p.name, 'aria-describedby': describedBy, 'aria-required': p.optional ? null : 'true' };
  const initial = s.default !== undefined ? (typeof s.default === 'string' && !p.json ? s.default : JSON.stringify(s.default)) : '';
  let input;
  if (kind === 'enum') {
    input = h('select', common, h('option', { value: '' }, p.optional ? '(leave out)' : '(choose)'),
      s.enum.map((v) => h('option', { value: JSON.stringify(v), selected: JSON.stringify(v) === JSON.stringify(s.default) }, String(v))));
  } else if (kind === 'boolean') {
    input = h('select', common, h('option', { value: '' }, p.optional ? '(leave out)' : '(choose)'),
      h('option', { value: 'true', selected: s.default === true }, 'true'),
      h('option', { value: 'false', selected: s.default === false }, 'false'));
  } else if (kind === 'object' || kind === 'array' || kind === 'json' || p.rest) {
    input = h('textarea', { ...common, rows: kind === 'string' ? 3 : 4, spellcheck: 'false' });
    input.value = initial;
  } else {
    input = h('input', { ...common, type: 'text', inputmode: kind === 'integer' || kind === 'number' ? 'decimal' : null, autocomplete: 'off', spellcheck: 'false' });
    input.value = initial;
  }
  const typeText = p.json ? `${kind === 'json' ? 'JSON' : kind}, as JSON` : kind;
  const error = h('p', { class: 'field-error', id: errId, hidden: true });
  const node = h('div', { class: 'param' },
    h('label', { for: id }, p.name, h('span', { class: 'muted' }, ` — ${typeText}${p.optional ? ', optional' : ', required'}${p.rest ? ', may contain commas' : ''}`)),
    h('p', { class: 'hint', id: hintId }, p.description || ''),
    input, error);
  const show = (message) => {
    error.hidden = !message;
    fill(error, message || '');
    if (message) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
  };
  input.addEventListener('input', () => { if (input.getAttribute('aria-invalid')) show(check(p, kind, input.value).error); });
  input.addEventListener('blur', () => { if (input.value !== '') show(check(p, kind, input.value).error); });
  return { name: p.name, node, show, focus: () => input.focus(), read: () => check(p, kind, input.value) };
}

/** What is typed into a field, as the value to send, or why it cannot be sent. */
function check(p, kind, raw) {
  if (raw.trim() === '' && kind !== 'string') {
    return p.optional ? { value: undefined } : { error: `${p.name} is required` };
  }
  if (raw === '' && kind === 'string') {
    return p.optional ? { value: undefined } : { error: `${p.name} is required` };
  }
  if (!p.json && kind !== 'enum' && kind !== 'boolean') return { value: raw };
  let value;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    if (kind === 'string') return { value: raw };
    return { error: `${p.name} must be valid JSON: ${e.message}` };
  }
  const ok = {
    integer: Number.isInteger(value),
    number: typeof value === 'number',
    boolean: typeof value === 'boolean',
    array: Array.isArray(value),
    object: value !== null && typeof value === 'object' && !Array.isArray(value),
    string: typeof value === 'string',
  }[kind];
  if (ok === false) return { error: `${p.name} must be ${kind === 'array' || kind === 'object' || kind === 'integer' ? `an ${kind}` : `a ${kind}`} in JSON` };
  return { value };
}

async function run(t, args, confirm, grant) {
  const result = document.getElementById('result');
  const button = document.getElementById('run');
  button.disabled = true;
  closeApp();
  fill(result, h('p', { class: 'muted' }, `Running ${t.name}…`));
  try {
    const r = await post('/console/api/call', { tool: t.name, arguments: args, confirm, grant: grant || null });
    // A grant question: the card's answer runs the same call again with it.
    const answer = (q, a) => run(t, args, confirm, { item: q.item, sha256: q.sha256, answer: a });
    renderOutcome(result, r, answer);
    // A tool with an app (MCP Apps): its page shows the result too.
    if (t.app && !r.grantQuestion) showApp(result, t, args, r, tools);
  } catch (e) {
    fill(result, h('p', { class: 'error', role: 'alert' }, `The console could not run it: ${e.message}`));
  } finally {
    button.disabled = false;
  }
}

// The pending-grant card: the host’s question about one exact item, answered here by the
// person in the page (allow once, always, or deny), never by the tool’s arguments.
function grantCard(q, answer) {
  return h('div', { class: 'grant-card', role: 'alertdialog', 'aria-labelledby': 'grant-question', id: 'grant-card' },
    h('h4', { id: 'grant-question' }, q.question),
    facts([
      ['Plugin', q.plugin],
      ['Tool', q.tool],
      ['Item', q.item],
      ['Plugin file', `sha256:${q.sha256}`],
    ]),
    h('p', {}, 'The plugin’s manifest requests it and the operator has not granted it. “Always” writes it to toolhost.grants.toml (toolhost revoke undoes it); “deny” holds for this session. The call runs again from the start.'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'grant-once', onclick: () => answer(q, 'once') }, 'Allow once'),
      h('button', { type: 'button', id: 'grant-always', onclick: () => answer(q, 'always') }, 'Always'),
      h('button', { type: 'button', id: 'grant-deny', class: 'danger', onclick: () => answer(q, 'deny') }, 'Deny')));
}

function renderOutcome(el, r, answer) {
  const o = r.outcome;
  const data = r.structured ? JSON.stringify(r.structured, null, 2) : o.data;
  fill(el,
    h('h3', {}, 'Outcome ', o.success ? h('span', { class: 'badge ok' }, 'success') : h('span', { class: 'badge fail' }, o.kind || 'failed')),
    facts([
      ['Took', r.duration_ms !== undefined ? `${r.duration_ms} ms` : null],
      ['Truncated', o.truncated ? 'yes: the output was cut at its limit' : null],
      ['Usage', o.usage ? usageLine(o.usage) : null],
      ['Time in the tool', o.usage ? `${ms(o.usage.busy_us)} busy of ${ms(o.usage.wall_us)}` : null],
    ]),
    o.success ? [h('h4', {}, r.structured ? 'Result (structured)' : 'Result'), pre(data ?? '', 'Result')] : [
      r.grantQuestion && answer ? grantCard(r.grantQuestion, answer) : null,
      h('h4', {}, 'Error'),
      h('div', { role: 'alert' }, pre(o.error || '', 'Error')),
      r.grants && r.grants.length ? [
        h('p', {}, 'The host refused something the plugin is not granted. To grant it, add to toolhost.toml (or pass the flag):'),
        r.grants.map((g) => h('div', { class: 'grant' }, h('p', {}, g.what), pre(g.grant, `Config line for ${g.what}`))),
      ] : null,
    ]);
}

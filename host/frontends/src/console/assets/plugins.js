// Plugins: each plugin's file, hash, signer, size and its requested / granted / missing grants
// (with the toolhost.toml lines that grant them); versions waiting for approval with Approve /
// Reject (or, when the config pins approvals, the entry to paste); files that failed to load.

import { get, post } from './api.js';
import { h, fill, facts, pre, bytes, confirmDialog } from './dom.js';

let session = {};
let data = null;

export function init(s) { session = s; refresh(); }
export function show() { refresh(); }

export function refresh() {
  return get('/console/api/plugins').then((d) => { data = d; render(); })
    .catch((e) => status(`cannot list the plugins: ${e.message}`));
}

function status(text) { fill(document.getElementById('plugins-status'), text || ''); }

function list(items, empty) {
  return items.length ? h('ul', {}, items.map((i) => h('li', {}, i))) : h('p', { class: 'muted' }, empty);
}

function render() {
  const body = document.getElementById('plugins-body');
  const d = data;
  fill(body,
    d.pending.length ? [
      h('h2', {}, `Waiting for approval (${d.pending.length})`),
      d.pending.map(pendingCard),
    ] : null,
    h('h2', {}, `Loaded (${d.plugins.length})`),
    d.plugins.length ? d.plugins.map(pluginCard) : h('p', { class: 'muted' }, 'No plugin is loaded.'),
    d.failures.length ? [
      h('h2', {}, `Not loaded (${d.failures.length})`),
      d.failures.map((f) => h('div', { class: 'card failed' },
        h('h3', {}, f.fileName), h('p', {}, f.reason))),
    ] : null,
    d.warnings.length ? [h('h2', {}, 'Warnings'), list(d.warnings, '')] : null,
    h('p', { class: 'muted' }, d.approvals.locked
      ? 'Approvals are pinned in the config ([approvals] locked = true): nothing is written to the plugins folder.'
      : `Approvals are recorded in ${d.approvals.file}.`));
}

function pluginCard(p) {
  return h('article', { class: 'card', 'aria-labelledby': `plugin-${p.name}` },
    h('h3', { id: `plugin-${p.name}` }, `${p.name} `, h('span', { class: 'muted' }, `v${p.version}`)),
    p.description ? h('p', {}, p.description) : null,
    facts([
      ['File', p.fileName],
      ['SHA-256', h('code', {}, p.sha256)],
      ['Size', bytes(p.size)],
      ['Signer', p.signer || 'unsigned'],
      ['Tools', p.tools.join(', ') || 'none'],
      ['Requested', p.requested.length ? p.requested.join(', ') : 'nothing'],
      ['Granted', p.granted.length ? p.granted.join(', ') : 'nothing'],
      ['Key-value store', kvText(p.kv)],
    ]),
    p.missing.length ? [
      h('h4', {}, 'Requested but not granted'),
      p.missing.map((m) => h('div', {}, h('p', {}, m.what), pre(m.grant, `How to grant ${m.what}`))),
    ] : null,
    p.warnings.length ? list(p.warnings, '') : null);
}

/** A plugin's key-value buckets and their sizes (null: it has none granted). */
function kvText(kv) {
  if (!kv) return null;
  if (kv.error) return kv.error;
  if (!kv.buckets.length) return 'empty';
  return kv.buckets.map((b) => `${b.name}: ${b.keys} key${b.keys === 1 ? '' : 's'}, ${bytes(b.bytes)}`).join('; ');
}

function pendingCard(p) {
  const pinned = p.pinnedInConfig || data.approvals.locked;
  const actions = [];
  if (!pinned && !session.readOnly && p.sha256) {
    actions.push(h('button', { type: 'button', onclick: () => approve(p) }, `Approve ${p.plugin} v${p.version}`));
    actions.push(h('button', { type: 'button', class: 'quiet', onclick: () => reject(p) }, 'Reject'));
  }
  return h('article', { class: 'card held', 'aria-labelledby': `held-${p.plugin}` },
    h('h3', { id: `held-${p.plugin}` }, `${p.plugin} `, h('span', { class: 'muted' }, `v${p.version}`), h('span', { class: 'badge warn' }, 'waiting')),
    facts([
      ['File', p.fileName],
      ['SHA-256', p.sha256 ? h('code', {}, p.sha256) : 'cannot read the file'],
      ['Size', bytes(p.size)],
      ['Requests', p.requested ? (p.requested.join(', ') || 'nothing') : null],
    ]),
    h('h4', {}, 'More than was approved'),
    list(p.extra, ''),
    pinned && p.entry ? [
      h('p', {}, 'The config decides about this plugin: paste this entry into toolhost.toml (and restart) to approve it.'),
      pre(p.entry, `Entry that approves ${p.plugin}`),
    ] : null,
    actions.length ? h('div', { class: 'actions' }, actions) : null);
}

async function approve(p) {
  status(`Approving ${p.plugin} v${p.version}…`);
  try {
    const r = await post('/console/api/approve', { plugin: p.plugin, sha256: p.sha256 });
    status(`Approved ${r.approved} v${r.version}${r.serving ? ': it is serving now' : ''}.`);
  } catch (e) {
    status(`Not approved: ${e.message}${e.body && e.body.entry ? `\n${e.body.entry}` : ''}`);
  }
  refresh();
}

async function reject(p) {
  const also = p.alsoServing
    ? ' The same file holds the version serving now, which is only kept in memory: its tools go away too.'
    : '';
  const ok = await confirmDialog(`Reject ${p.plugin} v${p.version}?`,
    h('p', {}, `${p.fileName} is moved out of the plugins folder into .rejected/.${also}`), 'Reject');
  if (!ok) return;
  try {
    const r = await post('/console/api/reject', { plugin: p.plugin, sha256: p.sha256 });
    status(`Rejected ${r.rejected} v${r.version}: moved to ${r.movedTo}.`);
  } catch (e) {
    status(`Not rejected: ${e.message}`);
  }
  refresh();
}

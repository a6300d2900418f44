// Audit: the audit trail, filtered by tool, plugin, outcome and time, newest first; the same
// filter exported as JSONL.

import { get } from './api.js';
import { h, fill } from './dom.js';

export function init() {
  const form = document.getElementById('audit-form');
  form.addEventListener('submit', (e) => { e.preventDefault(); load(); });
  form.addEventListener('input', exportLink);
}

export function show() { load(); }

function query() {
  const form = document.getElementById('audit-form');
  const q = new URLSearchParams();
  for (const [k, v] of new FormData(form)) {
    if (!v) continue;
    // datetime-local is local time: the trail is in UTC.
    q.set(k, k === 'from' || k === 'to' ? new Date(v).toISOString().replace(/\.000Z$/, k === 'to' ? '.999Z' : '.000Z') : v);
  }
  return q.toString();
}

function exportLink() {
  const q = query();
  document.getElementById('audit-export').setAttribute('href', `/console/api/audit.jsonl${q ? `?${q}` : ''}`);
}

async function load() {
  exportLink();
  const statusEl = document.getElementById('audit-status');
  const tbody = document.querySelector('#audit-table tbody');
  try {
    const q = query();
    const d = await get(`/console/api/audit${q ? `?${q}` : ''}`);
    fill(statusEl, `${d.shown} of ${d.matching} matching lines from ${d.file}${d.olderNotRead ? ' (its oldest part was not read: export for everything)' : ''}`);
    fill(tbody, d.lines.map((l) => h('tr', {},
      h('td', {}, (l.time || '').replace('T', ' ').replace('Z', '')),
      h('td', {}, l.kind === 'read' ? `read ${l.uri}` : l.tool),
      h('td', {}, l.plugin ? `${l.plugin} v${l.version}` : ''),
      h('td', {}, h('span', { class: `badge ${l.outcome === 'ok' ? 'ok' : 'fail'}` }, l.outcome)),
      h('td', {}, [l.front_end, l.client, l.token ? `token ${l.token}` : null].filter(Boolean).join(', ')),
      h('td', {}, l.duration_ms === undefined ? '' : `${l.duration_ms} ms`),
      h('td', {}, l.danger ? `${l.danger.decision} by ${l.danger.by}` : ''),
      h('td', { class: 'args' }, (l.args || []).map((a) => JSON.stringify(a)).join(', ')))));
  } catch (e) {
    fill(statusEl, e.message);
    fill(tbody);
  }
}

// Activity: the live feed — reloads, calls and danger decisions as they happen; pause, filter,
// clear. At most MAX rows are kept; what the server could not send in time arrives as
// "N events skipped", so nothing shown is wrong and nothing missed goes unsaid.

import { h, fill, usageLine } from './dom.js';

const MAX = 500;
let paused = false;
let held = [];
let heldDropped = 0;
let skippedTotal = 0;

export function init() {
  const pause = document.getElementById('feed-pause');
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume' : 'Pause';
    if (!paused) {
      if (heldDropped) add(row('skipped', '', `${heldDropped} events skipped while paused`, { skipped: true }));
      for (const r of held) add(r);
      held = [];
      heldDropped = 0;
    }
    counts();
  });
  document.getElementById('feed-filter').addEventListener('input', applyFilter);
  document.getElementById('feed-kind').addEventListener('change', applyFilter);
  document.getElementById('feed-clear').addEventListener('click', () => {
    fill(document.getElementById('feed'));
    incoming = [];
    held = [];
    heldDropped = 0;
    counts();
  });
  counts();
}

export function show() {}

function time(iso) {
  return iso ? iso.slice(11, 23) : new Date().toISOString().slice(11, 23);
}

function row(kind, when, text, opts = {}) {
  const li = h('li', { class: opts.skipped ? 'skipped' : null, 'data-kind': kind, 'data-tags': opts.tags || kind },
    h('span', { class: 'when' }, time(when)),
    h('span', { class: 'kind' }, h('span', { class: `badge ${opts.badge || ''}` }, opts.label || kind)),
    h('span', { class: 'what' }, text));
  return li;
}

let incoming = [];
let scheduled = false;

function add(li) {
  if (paused) {
    held.push(li);
    if (held.length > MAX) { held.shift(); heldDropped += 1; }
    counts();
    return;
  }
  // Rows are added once per frame, however fast events come (only the newest MAX are kept
  // anyway).
  incoming.push(li);
  if (incoming.length > MAX) incoming.shift();
  if (!scheduled) {
    scheduled = true;
    requestAnimationFrame(flush);
  }
}

function flush() {
  scheduled = false;
  const feed = document.getElementById('feed');
  const batch = document.createDocumentFragment();
  for (let i = incoming.length - 1; i >= 0; i -= 1) {
    filterOne(incoming[i]);
    batch.appendChild(incoming[i]);
  }
  incoming = [];
  feed.prepend(batch);
  while (feed.children.length > MAX) feed.lastElementChild.remove();
  counts();
}

function counts() {
  const n = document.getElementById('feed').children.length;
  const parts = [`${n} shown`];
  if (paused) parts.push(`${held.length} new while paused`);
  if (skippedTotal) parts.push(`${skippedTotal} skipped by the server`);
  fill(document.getElementById('feed-status'), parts.join(' · '));
}

function filterOne(li) {
  const q = document.getElementById('feed-filter').value.trim().toLowerCase();
  const kind = document.getElementById('feed-kind').value;
  const tags = li.dataset.tags.split(' ');
  li.hidden = (kind && !tags.includes(kind)) || (q && !li.textContent.toLowerCase().includes(q));
}

function applyFilter() {
  for (const li of document.getElementById('feed').children) filterOne(li);
}

/** A registry change: one row per line (`+ tool`, `~ tool (v1 → v2)`, `- tool`, `! …`, `? …`). */
export function reload(change) {
  for (const line of change.lines) add(row('reload', change.time, line, { label: 'reload', tags: 'reload' }));
}

// Running calls by id: one row each, updated in place by its progress reports and removed
// when the call's finished event arrives (a call that started before the page opened shows
// from its first report on).
const runningRows = new Map();

function runningCount() {
  const n = runningRows.size;
  fill(document.getElementById('running-count'), n ? `(${n})` : '(none)');
}

// Ids of calls that finished lately: a report that arrives after its call's end is dropped.
const finished = new Set();

/** A call that started or reported progress. */
export function running(e) {
  if (finished.has(e.id)) return;
  let r = runningRows.get(e.id);
  if (!r) {
    const bar = h('progress', { max: '1', 'aria-label': `${e.tool} progress` });
    const text = h('span', { class: 'what' });
    const li = h('li', { 'data-id': String(e.id) },
      h('span', { class: 'when' }, time(e.started)),
      h('span', { class: 'kind' }, h('span', { class: 'badge' }, 'running')),
      bar, text);
    r = { li, bar, text };
    runningRows.set(e.id, r);
    document.getElementById('running').prepend(li);
    runningCount();
  }
  if (e.total) {
    r.bar.max = e.total;
    r.bar.value = e.done;
  } else if (e.done) {
    r.bar.removeAttribute('value');
  }
  const parts = [`${e.tool}${e.plugin ? ` (${e.plugin})` : ''}`, e.front_end];
  if (e.done || e.total) parts.push(e.total ? `${e.done} of ${e.total}` : `${e.done} done`);
  if (e.message) parts.push(e.message);
  fill(r.text, parts.join(' · '));
}

/** A finished call. */
export function call(e) {
  finished.add(e.id);
  if (finished.size > 1000) finished.delete(finished.values().next().value);
  const r = runningRows.get(e.id);
  if (r) {
    r.li.remove();
    runningRows.delete(e.id);
    runningCount();
  }
  const ok = e.outcome === 'ok';
  const parts = [`${e.tool}${e.plugin ? ` (${e.plugin} v${e.version})` : ''}`, e.front_end, `${e.duration_ms} ms`, e.outcome];
  if (e.danger) parts.push(`danger: ${e.danger.decision} by ${e.danger.by}`);
  if (e.token) parts.push(`token ${e.token}`);
  if (e.client) parts.push(`client ${e.client}`);
  if (e.usage) parts.push(usageLine(e.usage));
  const tags = ['call', ok ? '' : 'error', e.danger ? 'danger' : ''].join(' ').trim();
  add(row('call', e.time, parts.join(' · '), { label: e.danger ? 'danger' : 'call', badge: ok ? 'ok' : 'fail', tags }));
}

/** The server could not send `n` calls in time. */
export function skipped(n) {
  skippedTotal += n;
  add(row('skipped', '', `${n} events skipped (the feed fell behind)`, { skipped: true, tags: 'call' }));
}

// Metrics: calls/s, p50/p99 latency and errors by kind, in all and per tool, over the last
// minutes — from the same counters /metrics serves, sampled by the server.

import { get } from './api.js';
import { h, fill } from './dom.js';

let timer = null;

export function init() {}

export function show() {
  load();
  clearInterval(timer);
  timer = setInterval(load, 5000);
}

export function hide() { clearInterval(timer); timer = null; }

const W = 300;
const H = 60;

function spark(series, label) {
  const values = series.flatMap((s) => s.values.filter((v) => v !== null));
  const max = Math.max(1e-9, ...values);
  const n = Math.max(2, ...series.map((s) => s.values.length));
  const x = (i) => (i / (n - 1)) * W;
  const y = (v) => H - 4 - (v / max) * (H - 8);
  return h('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label },
    series.map((s) => {
      const pts = s.values.map((v, i) => (v === null ? null : [x(i), y(v)])).filter(Boolean);
      // A lone point (one interval with calls) is drawn as a short dash.
      if (pts.length === 1) pts.push([pts[0][0] - 4, pts[0][1]]);
      return h('polyline', { class: s.cls, points: pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' ') });
    }));
}

const last = (v) => { for (let i = v.length - 1; i >= 0; i -= 1) if (v[i] !== null) return v[i]; return null; };
const fmt = (v, unit) => (v === null || v === undefined ? '–' : `${v < 10 ? v.toFixed(2) : v.toFixed(0)}${unit}`);

function chart(title, s, minutes) {
  const errors = Object.entries(s.errorsPerSecond);
  const errSum = s.callsPerSecond.map((_, i) => errors.reduce((a, [, v]) => a + (v[i] || 0), 0));
  const rate = last(s.callsPerSecond);
  const p50 = last(s.p50Ms);
  const p99 = last(s.p99Ms);
  return h('article', { class: 'chart' },
    h('h2', {}, title),
    h('p', { class: 'legend' }, `${s.calls} calls in ${minutes} · now ${fmt(rate, '/s')}`),
    spark([{ values: s.callsPerSecond, cls: 'l1' }], `${title}: calls per second, now ${fmt(rate, '')}`),
    h('p', { class: 'legend' }, `latency p50 ${fmt(p50, ' ms')} (blue), p99 ${fmt(p99, ' ms')} (purple)`),
    spark([{ values: s.p50Ms, cls: 'l1' }, { values: s.p99Ms, cls: 'l2' }], `${title}: latency, p50 ${fmt(p50, ' ms')}, p99 ${fmt(p99, ' ms')}`),
    h('p', { class: 'legend' }, errors.length ? `errors/s (red): ${errors.map(([k, v]) => `${k} ${fmt(last(v), '')}`).join(', ')}` : 'no errors'),
    spark([{ values: errSum, cls: 'l3' }], `${title}: errors per second${errors.length ? `, by kind: ${errors.map(([k]) => k).join(', ')}` : ', none'}`));
}

async function load() {
  const statusEl = document.getElementById('metrics-status');
  try {
    const d = await get('/console/api/metrics');
    const minutes = d.times.length ? `${Math.max(1, Math.round((d.times.length * d.intervalSeconds) / 60))} min` : 'the last seconds';
    fill(statusEl, `${d.inFlight} calls in flight, ${d.waiting} waiting for a slot · sampled every ${d.intervalSeconds} s, the last 10 minutes kept`);
    fill(document.getElementById('metrics-body'),
      chart('all tools', d.all, minutes),
      d.tools.map((t) => chart(t.tool, t, minutes)));
  } catch (e) {
    fill(statusEl, `cannot read the metrics: ${e.message}`);
  }
}

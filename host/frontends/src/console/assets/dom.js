// Building the page from data: text always goes in as text (never as HTML), so nothing a
// plugin, a tool result or a file name says can become markup or script.

/** `h('p', {class: 'x', onclick: f}, 'text', child)`: an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const svg = ['svg', 'polyline', 'line', 'text', 'title', 'rect'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A `<dl>` of label → value rows (values skipped when empty). */
export function facts(rows) {
  return h('dl', { class: 'facts' }, rows.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => h('div', { class: 'row' }, h('dt', {}, k), h('dd', {}, v))));
}

/** A block of text that may scroll, reachable by keyboard. */
export function pre(text, label) {
  return h('pre', { tabindex: 0, 'aria-label': label }, text);
}

export function bytes(n) {
  if (n === null || n === undefined) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function ms(us) {
  return `${(us / 1000).toFixed(us < 10000 ? 2 : 0)} ms`;
}

/** A short, one-line summary of a call's usage. */
export function usageLine(u) {
  if (!u) return '';
  const parts = [`busy ${ms(u.busy_us)}`, `wall ${ms(u.wall_us)}`, `memory ${bytes(u.peak_memory_kb * 1024)}`];
  if (u.queued_us) parts.push(`queued ${ms(u.queued_us)}`);
  if (u.written_bytes) parts.push(`wrote ${bytes(u.written_bytes)}`);
  if (u.created) parts.push(`created ${u.created}`);
  if (u.http_requests) parts.push(`${u.http_requests} HTTP request${u.http_requests === 1 ? '' : 's'} (${bytes(u.http_sent_bytes ?? 0)} out, ${bytes(u.http_received_bytes ?? 0)} in)`);
  if (u.log_lines) parts.push(`${u.log_lines} log lines`);
  return parts.join(' · ');
}

/** Ask a yes/no question in the page's dialog; resolves to true when confirmed. */
export function confirmDialog(title, body, okLabel) {
  const dialog = document.getElementById('confirm');
  fill(document.getElementById('confirm-title'), title);
  fill(document.getElementById('confirm-body'), body);
  fill(document.getElementById('confirm-ok'), okLabel);
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

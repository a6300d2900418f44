// Apps (MCP Apps, 2026-01-26): a tool's page beside its result. The page runs in a frame of its
// own: `sandbox="allow-scripts"` and the server's `sandbox` policy give it an opaque origin (no
// cookie, no access to this page or its CSRF token), and its Content-Security-Policy holds only
// the origins the operator allows. It talks to the console over the extension's JSON-RPC
// bridge (postMessage), which answers only that frame's window: the handshake, the tool's input
// and result, size changes, and `tools/call` of its own plugin's tools — a dangerous one only
// after the person confirms, a grant it needs only if the person allows it once, every call
// through the console's API like a Run. Links are not opened for it.

import { post } from './api.js';
import { h, pre, confirmDialog } from './dom.js';

const PROTOCOL = '2026-01-26';
/** The largest bridge message taken from a page, in characters of JSON. */
const MAX_MESSAGE = 1 << 20;
const MIN_HEIGHT = 80;
const MAX_HEIGHT = 1600;

let current = null;

/** Show `tool`'s app under its outcome in `container`, for the call with `args` (`tools`: the
 * console's list, for the page's own calls). */
export function showApp(container, tool, args, r, tools) {
  closeApp();
  const frame = h('iframe', {
    class: 'app-frame',
    id: 'app-frame',
    sandbox: 'allow-scripts',
    referrerpolicy: 'no-referrer',
    title: `App of ${tool.name} (plugin ${tool.plugin})`,
    src: `/console/app?uri=${encodeURIComponent(tool.app)}`,
  });
  container.append(h('section', { class: 'app', id: 'app', 'aria-label': `App of ${tool.name}` },
    h('h4', {}, 'App ', h('code', {}, tool.app), ` — plugin ${tool.plugin}`),
    frame));
  const state = { frame, tool, args, result: callResult(r), tools, initialized: false };
  state.listener = (e) => onMessage(state, e);
  window.addEventListener('message', state.listener);
  current = state;
}

/** Forget the app shown (another tool picked, another run). */
export function closeApp() {
  if (!current) return;
  window.removeEventListener('message', current.listener);
  current.frame.closest('#app')?.remove();
  current = null;
}

/** A console call's answer as MCP's `CallToolResult`. */
function callResult(r) {
  const o = r.outcome;
  const result = { content: [{ type: 'text', text: (o.success ? o.data : o.error) ?? '' }], isError: !o.success };
  if (r.structured) result.structuredContent = r.structured;
  return result;
}

function postTo(state, message) {
  state.frame.contentWindow?.postMessage({ jsonrpc: '2.0', ...message }, '*');
}

function reply(state, id, result, error) {
  if (id === undefined || id === null) return;
  postTo(state, error ? { id, error } : { id, result });
}

function onMessage(state, e) {
  // Only this frame's window speaks for the app; anything else is not the bridge.
  if (e.source !== state.frame.contentWindow) return;
  const m = e.data;
  if (typeof m !== 'object' || m === null || m.jsonrpc !== '2.0' || typeof m.method !== 'string') return;
  let size = 0;
  try { size = JSON.stringify(m).length; } catch { size = Infinity; }
  if (size > MAX_MESSAGE) {
    reply(state, m.id, null, { code: -32600, message: `message too large (${MAX_MESSAGE} characters at most)` });
    return;
  }
  switch (m.method) {
    case 'ui/initialize':
      reply(state, m.id, {
        protocolVersion: PROTOCOL,
        hostInfo: { name: 'toolhost console', version: '1' },
        hostCapabilities: { serverTools: {} },
        hostContext: {
          toolInfo: { tool: { name: state.tool.name, description: state.tool.description, inputSchema: state.tool.inputSchema } },
          theme: 'light',
          platform: 'web',
          displayMode: 'inline',
          availableDisplayModes: ['inline'],
        },
      });
      return;
    case 'ui/notifications/initialized':
      if (state.initialized) return;
      state.initialized = true;
      postTo(state, { method: 'ui/notifications/tool-input', params: { arguments: state.args } });
      postTo(state, { method: 'ui/notifications/tool-result', params: state.result });
      return;
    case 'ui/notifications/size-changed': {
      const height = Number(m.params?.height);
      if (Number.isFinite(height)) {
        state.frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(height)))}px`;
      }
      return;
    }
    case 'ping':
      reply(state, m.id, {});
      return;
    case 'tools/call':
      callFromApp(state, m);
      return;
    case 'ui/open-link':
      reply(state, m.id, null, { code: -32000, message: 'Link opening denied: the console opens no links for apps' });
      return;
    case 'notifications/message':
      return;
    default:
      reply(state, m.id, null, { code: -32601, message: `Method not found: ${m.method}` });
  }
}

/** A `tools/call` from the page: a tool of its own plugin only, a dangerous one confirmed. */
async function callFromApp(state, m) {
  const name = m.params?.name;
  const args = m.params?.arguments ?? {};
  // A page calls its plugin's tools by the names it was built with: the plugin's own, which
  // the catalog may expose under others (a prefix, a namespace).
  const mine = state.tools.filter((t) => t.plugin === state.tool.plugin);
  const target = mine.find((t) => t.ownName === name) ?? mine.find((t) => t.name === name);
  if (!target || typeof args !== 'object' || Array.isArray(args)) {
    reply(state, m.id, null, {
      code: -32602,
      message: `an app may call only its own plugin's tools (${state.tool.plugin}) with named arguments; ${String(name)} is not one`,
    });
    return;
  }
  let confirm = false;
  if (target.dangerous) {
    const body = [
      h('p', {}, `The app of ${state.tool.name} asks to run ${name} (plugin ${target.plugin}), which is dangerous. Run it with these arguments?`),
      pre(JSON.stringify(args, null, 2), 'Arguments'),
    ];
    confirm = await confirmDialog(`The app asks to run ${name}`, body, 'Run it');
    if (!confirm) {
      reply(state, m.id, { content: [{ type: 'text', text: `${name} was not run: the person did not confirm it` }], isError: true });
      return;
    }
  }
  try {
    let grant = null;
    let r = await post('/console/api/call', { tool: target.name, arguments: args, confirm, grant });
    // A grant the plugin requested and the operator has not given: the person answers for this
    // one call (once or deny; "always" is the Run's card's to give), and it runs again.
    if (r.grantQuestion) {
      const q = r.grantQuestion;
      const yes = await confirmDialog(`The app's call of ${name} needs a grant`, [
        h('p', {}, q.question),
        pre(`plugin ${q.plugin}, tool ${q.tool}, item ${q.item}`, 'Grant'),
      ], 'Allow once');
      grant = { item: q.item, sha256: q.sha256, answer: yes ? 'once' : 'deny' };
      r = await post('/console/api/call', { tool: target.name, arguments: args, confirm, grant });
    }
    reply(state, m.id, callResult(r));
  } catch (e) {
    reply(state, m.id, null, { code: -32603, message: `the console could not run it: ${e.message}` });
  }
}

// toolhost-sdk for JavaScript: write toolhost tool plugins as ES modules.
//
//   import { definePlugin, defineTool, log, http, process, kv } from 'toolhost-sdk';
//
//   definePlugin({ name: 'notes', version: '0.1.0', capabilities: { net: ['api.example.com'] } });
//
//   export const countWords = defineTool({
//     name: 'count_words',
//     description: 'Count the words of a text.',
//     params: [{ name: 'text', description: 'the text; commas are part of it' }],
//     rest: true,
//     run(text) { return { words: text.split(/\s+/).filter(Boolean).length }; },
//   });
//
//   export const guide = defineResource({
//     uri: 'docs://guide', name: 'guide', mimeType: 'text/markdown', read() { return '# Guide'; },
//   });
//
//   export const review = definePrompt({
//     name: 'review', arguments: [{ name: 'path', required: true }],
//     get(path) { return [user(`Review ${path}.`), resourceLink(`file:///${path}`, path)]; },
//   });
//   defineCompletion({ prompt: review, argument: 'path', complete(value) { return [value + '.rs']; } });
//
// The same module runs in two places: under node, where `toolhost-js manifest` imports it and
// derives the manifest from what `definePlugin`/`defineTool`/`defineResource`/`definePrompt`/
// `defineCompletion` recorded, and inside the component (QuickJS), where the host's `tools.call`
// is dispatched to the `run` functions, its `resources.read` to the `read` functions, its
// `prompts.get` to the `get` functions and its `completion.complete` to the `complete`
// functions. Every
// declaration is checked against its `run` function when `defineTool` is called, so the
// manifest and the code cannot drift apart; misuse throws a `DefinitionError` carrying the
// file and line of the `defineTool` call.
//
// This file must not import anything: it runs inside QuickJS, which has no node modules.

const FORMAT = 1;
const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];
const PARAM_TYPES = [...JSON_TYPES, 'json'];
const TOOL_KEYS = [
  'name',
  'description',
  'params',
  'run',
  'danger',
  'readOnly',
  'rest',
  'outputLimit',
  'category',
  'outputSchema',
  'timeoutMs',
  'taskSupport',
  'title',
  'idempotent',
  'icons',
];
const RESOURCE_KEYS = ['uri', 'name', 'title', 'description', 'mimeType', 'size', 'read'];
const TEMPLATE_KEYS = ['uriTemplate', 'name', 'title', 'description', 'mimeType', 'read'];
const TASK_SUPPORT = ['forbidden', 'optional', 'required'];
// The longest time limit a tool may ask for (a day, the host's cap on `timeoutMs`).
const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000;
const PARAM_KEYS = ['name', 'type', 'description', 'optional', 'schema', 'default', 'items'];
const PLUGIN_KEYS = ['name', 'version', 'description', 'capabilities'];
const CAPABILITY_KEYS = ['fs', 'env', 'net', 'secrets', 'exec', 'kv'];
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
// The host's caps on a manifest's free text (host/spec/src/manifest.rs), in characters (code points:
// `[...s].length`); schemas in bytes of compact JSON. Checked here so that what builds, loads.
const MAX_PLUGIN_DESCRIPTION = 1024;
const MAX_TOOL_DESCRIPTION = 4096;
const MAX_PARAM_DESCRIPTION = 1024;
const MAX_LABEL = 64; // version and category: one line each
const MAX_SCHEMA_BYTES = 16 * 1024;
const MAX_TITLE = 128; // a tool's title: one line
const MAX_ICONS = 4; // icons per tool
const MAX_ICON_BYTES = 8 * 1024; // one icon's `data:` URI
const ICON_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
const ICON_MAGIC = {
  'image/png': ['\x89PNG\r\n\x1a\n'],
  'image/jpeg': ['\xff\xd8\xff'],
  'image/gif': ['GIF87a', 'GIF89a'],
  'image/webp': ['RIFF'],
};

/** Why `src` is not an icon the host takes, or undefined (the host's rule, in its words). */
function iconProblem(src) {
  const n = new TextEncoder().encode(src).length;
  if (n > MAX_ICON_BYTES) return `is ${n} bytes long; at most ${MAX_ICON_BYTES} are allowed`;
  if (!src.startsWith('data:')) return 'must be a `data:` URI (data:image/png;base64,…): icons are never fetched';
  const at = src.indexOf(';base64,');
  if (at < 0) return 'must be a base64 `data:` URI (data:image/png;base64,…)';
  const mime = src.slice(5, at);
  const data = src.slice(at + 8);
  if (!ICON_TYPES.includes(mime)) return `has the type ${JSON.stringify(mime)}; an icon is one of ${ICON_TYPES.join(', ')}`;
  if (!data || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return 'is not valid base64';
  const head = atob(data.slice(0, 16)); // a binary string: one character per byte
  const webp = mime !== 'image/webp' || head.slice(8, 12) === 'WEBP';
  if (!ICON_MAGIC[mime].some((m) => head.startsWith(m)) || !webp) return `does not hold ${mime} data`;
  return undefined;
}
// The host's caps on resources (host/spec/src/resources.rs): how many, a URI or template in
// bytes, a name in characters (one line), a MIME type in bytes, expressions per template.
const MAX_RESOURCES = 64;
const MAX_TEMPLATES = 16;
const MAX_URI = 1024;
const MAX_RESOURCE_NAME = 128;
const MAX_RESOURCE_DESCRIPTION = 1024;
const MAX_MIME = 127;
const MAX_EXPRESSIONS = 8;
// Schemes no plugin may declare: `skill:` is the host's own (a plugin's skills).
const RESERVED_SCHEMES = ['skill'];
// The host's caps on names: a plugin, tool or param name, and a program an `exec` request names.
const MAX_NAME = 64;
const MAX_PROGRAM = 255;
// A bucket of the key-value store a `kv` request names (the host's rule, `capabilities.kv`).
const BUCKET_RULE = "is not a bucket name (1–64 letters, digits, '_', '-' or '.', starting with a letter or digit)";
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];

/** A misuse of `definePlugin` or `defineTool`, located at the call that made it. */
export class DefinitionError extends Error {
  constructor(message, site) {
    super(message);
    this.name = 'DefinitionError';
    /** The file of the offending call (a path, or a URL if it was not a file URL). */
    this.file = site ? site.file : undefined;
    /** Its 1-based line. */
    this.line = site ? site.line : undefined;
  }
}

/** Every definition error of a module, in the order they were made. */
export class DefinitionErrors extends DefinitionError {
  constructor(errors) {
    super(errors.map((e) => e.message).join('; '), errors[0] && { file: errors[0].file, line: errors[0].line });
    this.name = 'DefinitionErrors';
    this.errors = errors;
  }
}

// ---------------------------------------------------------------------------------------------
// Where a call came from.

const SELF = (() => {
  const here = siteOfStack(new Error().stack, null, 0);
  return here ? here.file : null;
})();

/** The first stack frame outside this file, as {file, line}. */
function callSite() {
  return siteOfStack(new Error().stack, SELF, 0);
}

function siteOfStack(stack, skipFile) {
  if (typeof stack !== 'string') return null;
  for (const raw of stack.split('\n')) {
    // V8: "    at fn (file:///x/plugin.js:12:5)" or "    at file:///x/plugin.js:12:5";
    // QuickJS: "    at fn (/x/plugin.js:12:5)" or "    at /x/plugin.js:12".
    const m = /\(?((?:file:\/\/)?[^\s()]+?):(\d+)(?::\d+)?\)?\s*$/.exec(raw.trim());
    if (!m || !raw.trim().startsWith('at ')) continue;
    const file = toPath(m[1]);
    if (skipFile && file === skipFile) continue;
    return { file, line: Number(m[2]) };
  }
  return null;
}

function toPath(location) {
  if (!location.startsWith('file://')) return location;
  try {
    return decodeURIComponent(location.slice('file://'.length));
  } catch {
    return location.slice('file://'.length);
  }
}

function fail(message, site) {
  throw new DefinitionError(message, site);
}

function warn(message, site) {
  state.warnings.push({ file: site?.file, line: site?.line, message });
}

// ---------------------------------------------------------------------------------------------
// Small checks.

const isIdent = (s) => typeof s === 'string' && s.length <= MAX_NAME && /^[A-Za-z_][A-Za-z0-9_]*$/.test(s);
const isPluginName = (s) =>
  typeof s === 'string' && s.length <= MAX_NAME && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(s);
/** A program an `exec` request may name: `*`, or a file name (never a path). */
const isProgram = (s) =>
  s === '*' || (s.length <= MAX_PROGRAM && s !== '.' && s !== '..' && /^[A-Za-z0-9._+-]+$/.test(s));
/** A bucket of the key-value store a `kv` request may name. */
const isBucket = (s) => /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(s);
const isPlainObject = (v) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
const show = (v) => {
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'string') return JSON.stringify(v);
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 60 ? s.slice(0, 57) + '...' : s;
  } catch {
    return String(v);
  }
};

function editDistance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

/** Reject keys not in `allowed`, suggesting the closest one (`read_only` → `readOnly`). */
function checkKeys(obj, allowed, what, site) {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key)) continue;
    const folded = key.replace(/[_-]/g, '').toLowerCase();
    const near =
      allowed.find((k) => k.toLowerCase() === folded) ??
      allowed.find((k) => editDistance(k.toLowerCase(), key.toLowerCase()) <= 2);
    const hint = near ? `; did you mean \`${near}\`?` : `; expected one of: ${allowed.join(', ')}`;
    fail(`unknown ${what} option \`${key}\`${hint}`, site);
  }
}

function checkBool(obj, key, what, site) {
  if (obj[key] !== undefined && typeof obj[key] !== 'boolean') {
    fail(`${what} \`${key}\` is a flag: true or false, got ${show(obj[key])}`, site);
  }
  return obj[key] === true;
}

function checkString(obj, key, what, site) {
  if (obj[key] !== undefined && typeof obj[key] !== 'string') {
    fail(`${what} \`${key}\` must be a string, got ${show(obj[key])}`, site);
  }
  return obj[key];
}

/**
 * Why `text` breaks the host's rules for free text, or null: longer than `max` characters, or a
 * control character (tabs and line breaks are allowed in a description).
 */
function textProblem(text, max, description) {
  const n = [...text].length;
  if (n > max) return `is ${n} characters long; the host allows at most ${max}`;
  const bad = description ? /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/ : /[\u0000-\u001f\u007f-\u009f]/;
  const m = bad.exec(text);
  if (!m) return null;
  const code = m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
  const rule = description
    ? 'only tabs and line breaks are allowed besides printable text'
    : 'it must be one line of printable text';
  return `contains the control character U+${code}; ${rule}`;
}

/** Why a JSON Schema is too large for the host, or null. */
function schemaProblem(schema) {
  const n = utf8Encode(JSON.stringify(schema)).length;
  return n > MAX_SCHEMA_BYTES ? `is ${n} bytes of JSON; the host allows at most ${MAX_SCHEMA_BYTES}` : null;
}

/** Fail at `site` when `text` breaks the host's rules; `what` names the field. */
function checkText(text, max, description, what, site) {
  const problem = typeof text === 'string' ? textProblem(text, max, description) : null;
  if (problem) fail(`${what} ${problem}`, site);
}

// ---------------------------------------------------------------------------------------------
// Reading a function's parameter list from its source.

// A parameter name as written: any run of characters that cannot end one, so a name outside
// ASCII (`größe`) is read whole and then refused by the name rule, not cut short.
const NAME = '[^\\s=,()[\\]{}\'"`/.:;+*-]+';

/**
 * The parameters of `fn` as written: [{name, hasDefault, isRest, isPattern, text}], or null if
 * its source cannot be read (a native or bound function).
 */
export function functionParams(fn) {
  const src = Function.prototype.toString.call(fn);
  if (/\{\s*\[native code\]\s*\}\s*$/.test(src)) return null;
  let i = 0;
  // `x => …` and `async x => …`: one parameter without parentheses.
  const bare = new RegExp(`^(?:async\\s+)?(${NAME})\\s*=>`).exec(src);
  if (bare) return [{ name: bare[1], hasDefault: false, isRest: false, isPattern: false, text: bare[1] }];
  // Otherwise the first `(` outside strings and comments opens the list (a method name may be
  // quoted or computed: `'a b'(x) {}`, `[key](x) {}`).
  i = skipTo(src, 0, '(');
  if (i < 0) return null;
  const params = [];
  let depth = 0;
  let start = i + 1;
  for (let j = i + 1; j < src.length; j++) {
    const c = src[j];
    const skipped = skipLiteral(src, j);
    if (skipped !== j) {
      j = skipped - 1;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) {
        params.push(src.slice(start, j));
        break;
      }
      depth--;
    } else if (c === ',' && depth === 0) {
      params.push(src.slice(start, j));
      start = j + 1;
    }
  }
  return params
    .map((p) => stripComments(p).trim())
    .filter((p, k, all) => p !== '' || k !== all.length - 1)
    .map((text) => {
      const isRest = text.startsWith('...');
      const body = isRest ? text.slice(3).trim() : text;
      const isPattern = body.startsWith('{') || body.startsWith('[');
      const m = new RegExp(`^(${NAME})\\s*(=)?`).exec(body);
      return {
        name: m && !isPattern ? m[1] : null,
        hasDefault: Boolean(m && m[2]) || (isPattern && /[}\]]\s*=/.test(body)),
        defaultText: m && m[2] ? body.slice(m[0].length).trim() : null,
        isRest,
        isPattern,
        text,
      };
    });
}

const NO_DEFAULT = Symbol('no default');

/** A default written as a literal (`'mi'`, `10`, `true`, `[1, 2]` as JSON), or NO_DEFAULT. */
function literalDefault(text) {
  if (text === null || text === undefined) return NO_DEFAULT;
  try {
    return JSON.parse(text);
  } catch {
    // A single-quoted string without escapes of its own.
    const m = /^'([^'\\\n]*)'$/.exec(text);
    return m ? m[1] : NO_DEFAULT;
  }
}

/** Index of the first `ch` at or after `from` outside strings and comments, or -1. */
function skipTo(src, from, ch) {
  for (let j = from; j < src.length; j++) {
    const skipped = skipLiteral(src, j);
    if (skipped !== j) {
      j = skipped - 1;
      continue;
    }
    if (src[j] === ch) return j;
  }
  return -1;
}

/** If a string, template or comment starts at `j`, the index just after it; else `j`. */
function skipLiteral(src, j) {
  const c = src[j];
  if (c === '/' && src[j + 1] === '/') {
    const end = src.indexOf('\n', j);
    return end < 0 ? src.length : end;
  }
  if (c === '/' && src[j + 1] === '*') {
    const end = src.indexOf('*/', j + 2);
    return end < 0 ? src.length : end + 2;
  }
  if (c === '"' || c === "'" || c === '`') {
    let k = j + 1;
    while (k < src.length && src[k] !== c) {
      if (src[k] === '\\') k++;
      else if (c === '`' && src[k] === '$' && src[k + 1] === '{') {
        // Skip the substitution, which may itself hold strings and braces.
        let depth = 1;
        k += 2;
        while (k < src.length && depth > 0) {
          const inner = skipLiteral(src, k);
          if (inner !== k) {
            k = inner;
            continue;
          }
          if (src[k] === '{') depth++;
          else if (src[k] === '}') depth--;
          k++;
        }
        continue;
      }
      k++;
    }
    return k + 1;
  }
  return j;
}

function stripComments(s) {
  let out = '';
  for (let j = 0; j < s.length; j++) {
    const c = s[j];
    if (c === '/' && (s[j + 1] === '/' || s[j + 1] === '*')) {
      j = skipLiteral(s, j) - 1;
      out += ' ';
      continue;
    }
    const skipped = skipLiteral(s, j);
    if (skipped !== j) {
      out += s.slice(j, skipped);
      j = skipped - 1;
      continue;
    }
    out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The registry: what this module's plugin declares.

const state = {
  plugin: null, // {options, site}
  tools: [], // Tool
  byName: new Map(),
  resources: [], // Resource, static
  templates: [], // Resource, templates
  byUri: new Map(), // URI → {read, order, template, site}
  byTemplate: new Map(), // uriTemplate → the same
  resourceNames: new Map(), // name → site, across resources and templates
  failedTemplates: new Set(), // uriTemplates whose definition failed (collecting errors)
  templateComplete: new Map(), // uriTemplate → the variables completed, in definition order
  prompts: [], // Prompt
  byPrompt: new Map(), // name → {name, get, order, arguments, complete, site}
  failedPrompts: new Set(), // names whose definition failed (collecting errors)
  completions: new Map(), // completionKey → {argument, complete, takesContext, site, of}
  // Under `toolhost-js manifest`, definition errors are collected (every one of a build is
  // reported together) instead of thrown at the first; warnings are always collected.
  collect: false,
  errors: [], // DefinitionError
  warnings: [], // {file, line, message}
  backend: null,
  testHttp: null,
  testProcess: null,
  testKv: null, // the in-memory store of testing.memoryKv
  pluginName: null, // the manifest's name, set by the component's entry (for kv's errors)
  buckets: new Map(), // kv buckets opened in this instance, by name
  logs: [],
  progress: [],
};

/**
 * Declare the plugin: its name, version, description and the capabilities it requests. Optional
 * when package.json gives the name and version; call it at most once.
 */
export function definePlugin(options) {
  const site = callSite();
  if (!state.collect) return definePluginAt(options, site);
  try {
    return definePluginAt(options, site);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    state.errors.push(e);
  }
}

function definePluginAt(options, site) {
  if (!isPlainObject(options)) fail(`definePlugin takes an object, got ${show(options)}`, site);
  if (state.plugin) {
    const at = state.plugin.site;
    fail(`definePlugin is called twice; the first call is at ${at ? `${at.file}:${at.line}` : 'an unknown place'}`, site);
  }
  checkKeys(options, PLUGIN_KEYS, 'plugin', site);
  if (options.name !== undefined && !isPluginName(options.name)) {
    fail(`plugin name ${show(options.name)} must match [A-Za-z_][A-Za-z0-9_-]* (at most ${MAX_NAME} chars)`, site);
  }
  checkString(options, 'version', 'plugin', site);
  if (options.version !== undefined && options.version.trim() === '') fail('plugin `version` must not be empty', site);
  checkString(options, 'description', 'plugin', site);
  checkText(options.version, MAX_LABEL, false, 'plugin `version`', site);
  checkText(options.description, MAX_PLUGIN_DESCRIPTION, true, 'plugin `description`', site);
  const capabilities = normalizeCapabilities(options.capabilities ?? {}, site);
  const plugin = Object.freeze({
    name: options.name,
    version: options.version,
    description: options.description,
    capabilities,
  });
  state.plugin = { options: plugin, site };
  return plugin;
}

function normalizeCapabilities(caps, site) {
  if (!isPlainObject(caps)) fail(`\`capabilities\` must be an object, got ${show(caps)}`, site);
  checkKeys(caps, CAPABILITY_KEYS, 'capabilities', site);
  const list = (key) => {
    const v = caps[key] ?? [];
    if (!Array.isArray(v)) fail(`\`capabilities.${key}\` must be an array, got ${show(v)}`, site);
    return v;
  };
  const fs = list('fs').map((entry, i) => {
    let path;
    let mode;
    if (typeof entry === 'string') {
      const colon = entry.lastIndexOf(':');
      [path, mode] = colon < 0 ? [entry, 'ro'] : [entry.slice(0, colon), entry.slice(colon + 1)];
    } else if (isPlainObject(entry)) {
      checkKeys(entry, ['path', 'mode'], `capabilities.fs[${i}]`, site);
      path = entry.path;
      mode = entry.mode ?? 'ro';
    }
    if (typeof path !== 'string' || path.trim() === '' || (mode !== 'ro' && mode !== 'rw')) {
      fail(
        `\`fs\` takes "NAME:ro" or "NAME:rw" (or {path, mode}), e.g. "workspace:rw"; \`capabilities.fs[${i}]\` is ${show(entry)}`,
        site,
      );
    }
    return { path, mode };
  });
  const names = (key, check, rule) =>
    list(key).map((v, i) => {
      if (typeof v !== 'string' || !check(v)) fail(`\`capabilities.${key}[${i}]\` ${show(v)} ${rule}`, site);
      return v;
    });
  const out = {
    fs,
    env: names('env', (v) => v !== '' && !v.includes('=') && !v.includes('\0'), 'is not an environment variable name'),
    net: names('net', (v) => v !== '' && !/\s/.test(v), 'is not a host pattern such as "api.example.com", "*.example.com" or "*"'),
    secrets: names('secrets', (v) => v.trim() !== '', 'is not a secret name such as "api_token"'),
  };
  const exec = names(
    'exec',
    isProgram,
    'is not a program name such as "git" (no paths: the operator decides which executable a name runs; "*" asks for any program the operator grants)',
  );
  // Only when requested, as the Rust SDK writes it: a plugin that runs nothing loads on hosts
  // that predate `exec`.
  if (exec.length > 0) out.exec = exec;
  // The same for the buckets of the key-value store (`kv`).
  const kvBuckets = names('kv', isBucket, BUCKET_RULE);
  if (kvBuckets.length > 0) out.kv = kvBuckets;
  return out;
}

/**
 * Declare a tool. The declaration is checked against `run`: the params must be run's
 * parameters, in order, by name; a parameter with a default value must be optional.
 */
export function defineTool(options) {
  const site = callSite();
  if (!state.collect) return defineToolAt(options, site);
  try {
    return defineToolAt(options, site);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    state.errors.push(e);
    return Object.freeze({ name: isPlainObject(options) ? options.name : undefined, failed: e.message });
  }
}

function defineToolAt(options, site) {
  if (!isPlainObject(options)) fail(`defineTool takes an object, got ${show(options)}`, site);
  checkKeys(options, TOOL_KEYS, 'tool', site);

  const name = options.name;
  if (name === undefined) fail('the tool has no `name`', site);
  if (!isIdent(name)) fail(`tool name ${show(name)} must match [A-Za-z_][A-Za-z0-9_]* (at most 64 chars)`, site);
  const what = `tool \`${name}\`:`;
  const previous = state.byName.get(name);
  if (previous) {
    const at = previous.site;
    fail(`tool \`${name}\` is defined twice; the first definition is at ${at ? `${at.file}:${at.line}` : 'an unknown place'}`, site);
  }
  if (typeof options.description !== 'string' || options.description.trim() === '') {
    fail(
      `tool \`${name}\` has no description: give \`description\`, a non-empty string (the model reads it to choose the tool)`,
      site,
    );
  }
  checkText(options.description.trim(), MAX_TOOL_DESCRIPTION, true, `${what} \`description\``, site);
  const run = options.run;
  if (typeof run !== 'function') fail(`${what} \`run\` must be a function, got ${show(run)}`, site);
  const kind = run.constructor && run.constructor.name;
  if (kind === 'AsyncFunction' || kind === 'AsyncGeneratorFunction') {
    fail(`${what} \`run\` is async; tools are synchronous (the host calls them and waits): remove \`async\``, site);
  }
  if (kind === 'GeneratorFunction') fail(`${what} \`run\` is a generator; write a plain function`, site);
  if (/^class[\s{]/.test(Function.prototype.toString.call(run))) {
    fail(`${what} \`run\` is a class; write a plain function`, site);
  }
  const danger = checkBool(options, 'danger', what, site);
  const readOnly = checkBool(options, 'readOnly', what, site);
  const rest = checkBool(options, 'rest', what, site);
  const outputLimit = options.outputLimit;
  if (outputLimit !== undefined && !(Number.isSafeInteger(outputLimit) && outputLimit >= 1)) {
    fail(`${what} \`outputLimit\` must be a whole number of characters, at least 1, got ${show(outputLimit)}`, site);
  }
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_TIMEOUT_MS)) {
    fail(`${what} \`timeoutMs\` must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS} (a day), got ${show(timeoutMs)}`, site);
  }
  const taskSupport = options.taskSupport;
  if (taskSupport !== undefined && !TASK_SUPPORT.includes(taskSupport)) {
    fail(`${what} \`taskSupport\` must be one of ${TASK_SUPPORT.join(', ')}, got ${show(taskSupport)}`, site);
  }
  const category = checkString(options, 'category', what, site);
  if (category !== undefined && category.trim() === '') fail(`${what} \`category\` must not be empty`, site);
  checkText(category, MAX_LABEL, false, `${what} \`category\``, site);
  const title = checkString(options, 'title', what, site);
  if (title !== undefined && title.trim() === '') fail(`${what} \`title\` must not be empty`, site);
  checkText(title, MAX_TITLE, false, `${what} \`title\``, site);
  const idempotent = checkBool(options, 'idempotent', what, site);
  const icons = options.icons ?? [];
  if (!Array.isArray(icons) || !icons.every((i) => typeof i === 'string')) {
    fail(`${what} \`icons\` takes a list of \`data:\` URIs, got ${show(options.icons)}`, site);
  }
  if (icons.length > MAX_ICONS) fail(`${what}: a tool has at most ${MAX_ICONS} icons`, site);
  for (const icon of icons) {
    const problem = iconProblem(icon);
    if (problem) fail(`${what} \`icon\` ${problem}`, site);
  }

  const outputSchema = options.outputSchema;
  if (outputSchema !== undefined) {
    if (outputSchema === null || typeof outputSchema !== 'object' || Array.isArray(outputSchema) || outputSchema.type !== 'object') {
      fail(`${what} \`outputSchema\` must describe an object (a JSON Schema {type: 'object', ...}): a structured result is a JSON object`, site);
    }
    try {
      JSON.stringify(outputSchema);
    } catch (e) {
      fail(`${what} \`outputSchema\` is not JSON: ${e.message}`, site);
    }
    const problem = schemaProblem(outputSchema);
    if (problem) fail(`${what} \`outputSchema\` ${problem}`, site);
  }

  const params = checkParams(options.params, run, what, site);
  if (rest) {
    const last = params[params.length - 1];
    if (!last) fail(`${what} \`rest\` needs at least one parameter: the last one takes the remaining arguments`, site);
    if (last.type !== 'string' || last.optional) {
      fail(
        `${what} with \`rest\`, the last parameter \`${last.name}\` must be a required 'string': it receives the remaining arguments joined with ","`,
        site,
      );
    }
  }

  const spec = {
    name,
    description: options.description.trim(),
    params: params.map((p) => ({
      name: p.name,
      type: p.schema ?? p.type,
      description: p.description,
      optional: p.optional,
      ...(p.default !== undefined ? { default: JSON.parse(JSON.stringify(p.default)) } : {}),
    })),
    argCount: params.length,
    parseJson: params.map((p) => p.type !== 'string'),
    rest,
  };
  if (outputLimit !== undefined) spec.outputLimit = outputLimit;
  spec.danger = danger;
  spec.readOnly = readOnly;
  if (category !== undefined) spec.category = category;
  if (outputSchema !== undefined) spec.outputSchema = JSON.parse(JSON.stringify(outputSchema));
  if (timeoutMs !== undefined) spec.timeoutMs = timeoutMs;
  if (taskSupport !== undefined) spec.taskSupport = taskSupport;
  if (title !== undefined) spec.title = title;
  if (idempotent) spec.idempotent = true;
  if (icons.length > 0) spec.icons = icons.map((src) => ({ src }));

  const tool = Object.freeze({
    name,
    spec: deepFreeze(spec),
    params: Object.freeze(params.map((p) => Object.freeze({ ...p }))),
    run,
    site,
    /** Run as the host would: string arguments in, output text out; throws ToolError. */
    call(...args) {
      const out = dispatchTool(tool, args);
      if (out.ok) return out.value;
      throw new ToolError(out.error);
    },
  });
  state.tools.push(tool);
  state.byName.set(name, tool);
  return tool;
}

function checkParams(declared, run, what, site) {
  const actual = functionParams(run);
  if (actual) {
    for (const [i, p] of actual.entries()) {
      if (p.isRest) {
        fail(
          `${what} run's parameter ${i + 1} \`${p.text}\` is a rest parameter; tools take fixed parameters (use \`rest: true\` to give the last one all remaining arguments joined with ",")`,
          site,
        );
      }
      if (p.isPattern || !p.name) {
        fail(`${what} run's parameter ${i + 1} \`${p.text}\` must be a plain name, not a pattern`, site);
      }
    }
  }
  let params;
  if (declared === undefined) {
    if (!actual) fail(`${what} \`run\` is a native or bound function, so give \`params\` explicitly`, site);
    params = actual.map((p) => ({ name: p.name, type: 'string', description: '', optional: p.hasDefault }));
    for (const p of params) {
      warn(`${what} param \`${p.name}\` has no type, so it is text ('string'): declare \`params\` with a \`type\` for each`, site);
    }
  } else {
    if (!Array.isArray(declared)) fail(`${what} \`params\` must be an array, got ${show(declared)}`, site);
    params = declared.map((p, i) => normalizeParam(p, i, what, site));
    if (actual) {
      const names = actual.map((p) => p.name);
      if (actual.length !== params.length) {
        fail(
          `${what} declares ${params.length} param${params.length === 1 ? '' : 's'} (${params.map((p) => p.name).join(', ')}) but run takes ${actual.length} (${names.join(', ')})`,
          site,
        );
      }
      for (const [i, p] of params.entries()) {
        if (p.name !== names[i]) {
          fail(`${what} param ${i + 1} is declared as \`${p.name}\` but run's parameter ${i + 1} is \`${names[i]}\``, site);
        }
        if (actual[i].hasDefault && !p.optional) {
          fail(`${what} run's parameter \`${p.name}\` has a default value but the param is not declared \`optional: true\``, site);
        }
        const d = literalDefault(actual[i].defaultText);
        if (d !== NO_DEFAULT && p.default === undefined) p.default = d;
      }
    } else if (run.length > params.length) {
      fail(`${what} declares ${params.length} params but run takes ${run.length}`, site);
    }
  }
  for (const p of params) {
    if (p.default === undefined) continue;
    if (!p.optional) fail(`${what} param \`${p.name}\` has a default but is not declared \`optional: true\``, site);
    const type = p.type === 'json' ? p.schema?.type : p.type;
    if (typeof type === 'string' && !fits(type, p.default)) {
      fail(`${what} param \`${p.name}\`: its default ${show(p.default)} is not ${article[type] ?? `a ${type}`}, the param's type`, site);
    }
  }
  const seen = new Set();
  let firstOptional = null;
  for (const p of params) {
    if (!isIdent(p.name)) fail(`${what} param name ${show(p.name)} must match [A-Za-z_][A-Za-z0-9_]* (at most ${MAX_NAME} chars)`, site);
    if (seen.has(p.name)) fail(`${what} param \`${p.name}\` is declared twice`, site);
    seen.add(p.name);
    if (p.optional) firstOptional ??= p.name;
    else if (firstOptional) {
      fail(`${what} required param \`${p.name}\` cannot follow the optional param \`${firstOptional}\`; optional params must come last`, site);
    }
  }
  return params;
}

function normalizeParam(p, i, what, site) {
  if (typeof p === 'string') p = { name: p };
  if (!isPlainObject(p)) fail(`${what} params[${i}] must be an object like {name: 'text'}, got ${show(p)}`, site);
  checkKeys(p, PARAM_KEYS, `params[${i}]`, site);
  if (p.name === undefined) fail(`${what} params[${i}] has no \`name\``, site);
  const at = `${what} param \`${p.name}\`:`;
  const description = checkString(p, 'description', at, site) ?? '';
  checkText(description, MAX_PARAM_DESCRIPTION, true, `${at} \`description\``, site);
  const optional = checkBool(p, 'optional', at, site);
  if (p.type === undefined && p.schema === undefined && p.items === undefined) {
    warn(`${at} no \`type\`, so it is text: write type: 'string' (or the JSON type it takes)`, site);
  }
  let type = p.type;
  if (p.items !== undefined) {
    if (type !== undefined && type !== 'array') fail(`${at} \`items\` is for an 'array' param, not ${show(type)}`, site);
    if (p.schema !== undefined) fail(`${at} give \`items\` or \`schema\`, not both`, site);
    if (!JSON_TYPES.includes(p.items)) {
      fail(`${at} \`items\` ${show(p.items)} is not one of ${JSON_TYPES.map((t) => `'${t}'`).join(', ')}`, site);
    }
    p = { ...p, schema: { type: 'array', items: { type: p.items } } };
    type = 'json';
  }
  if (p.schema !== undefined) {
    if (!isPlainObject(p.schema)) fail(`${at} \`schema\` must be a JSON Schema object, got ${show(p.schema)}`, site);
    if (type === 'string') {
      fail(`${at} \`schema\` is for JSON params; a 'string' param is always plain text (use type 'json' or leave type out)`, site);
    }
    type ??= 'json';
  }
  type ??= 'string';
  if (!PARAM_TYPES.includes(type)) {
    fail(`${at} \`type\` ${show(type)} is not one of ${PARAM_TYPES.map((t) => `'${t}'`).join(', ')}`, site);
  }
  const param = { name: p.name, type, description, optional };
  if (p.default !== undefined) param.default = p.default;
  if (p.schema !== undefined) {
    const problem = schemaProblem(p.schema);
    if (problem) fail(`${at} \`schema\` ${problem}`, site);
    param.schema = JSON.parse(JSON.stringify(p.schema));
  }
  else if (type === 'json') param.schema = {};
  return param;
}

function deepFreeze(v) {
  if (v && typeof v === 'object') {
    Object.values(v).forEach(deepFreeze);
    Object.freeze(v);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Calling a tool.

/** A tool's failure: its message reaches the model as the tool's error. */
export class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolError';
  }
}

const article = { integer: 'an integer', object: 'an object', array: 'an array', null: 'null' };

function decodeArg(tool, param, i, raw) {
  if (param.type === 'string') return raw;
  let value;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    throw new ToolError(`${tool.name}: argument ${i + 1} (\`${param.name}\`) is not valid JSON: ${e.message}`);
  }
  const type = param.type === 'json' ? (param.schema && typeof param.schema.type === 'string' ? param.schema.type : null) : param.type;
  if (type !== null && !fits(type, value)) {
    throw new ToolError(
      `${tool.name}: argument ${i + 1} (\`${param.name}\`) must be ${article[type] ?? `a ${type}`}, got ${show(value)}`,
    );
  }
  // Declared item types are checked too (`items: 'number'`, or a schema's `items.type`).
  const items = type === 'array' && param.schema?.items && typeof param.schema.items.type === 'string' ? param.schema.items.type : null;
  if (items !== null) {
    const bad = value.findIndex((v) => !fits(items, v));
    if (bad >= 0) {
      throw new ToolError(
        `${tool.name}: argument ${i + 1} (\`${param.name}\`) must be an array of ${plural[items] ?? `${items}s`}, got ${show(value[bad])} at [${bad}]`,
      );
    }
  }
  return value;
}

const plural = { string: 'strings', number: 'numbers', integer: 'integers', boolean: 'booleans', object: 'objects', array: 'arrays', null: 'nulls' };

/** Whether `value` is of the JSON type `type` (an unknown type fits anything). */
function fits(type, value) {
  return (
    !JSON_TYPES.includes(type) ||
    (type === 'number' && typeof value === 'number') ||
    (type === 'integer' && Number.isInteger(value)) ||
    (type === 'boolean' && typeof value === 'boolean') ||
    (type === 'object' && isJsonObject(value)) ||
    (type === 'array' && Array.isArray(value)) ||
    (type === 'null' && value === null) ||
    (type === 'string' && typeof value === 'string')
  );
}

const isJsonObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The first value inside `v` that JSON.stringify would empty — a Map, a Set, an instance of a
 * class without toJSON — described with where it is, or null. */
function notJson(v, at, depth) {
  if (v === null || typeof v !== 'object' || depth > 64) return null;
  if (typeof v.toJSON === 'function') return null;
  const where = at ? ` at ${at}` : '';
  if (v instanceof Map) return `a Map${where}`;
  if (v instanceof Set) return `a Set${where}`;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const hit = notJson(v[i], `${at}[${i}]`, depth + 1);
      if (hit) return hit;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null && !ArrayBuffer.isView(v)) {
    const name = proto.constructor && proto.constructor.name;
    return `an instance of ${name || 'a class'}${where}`;
  }
  for (const [k, x] of Object.entries(v)) {
    const hit = notJson(x, at ? `${at}.${k}` : k, depth + 1);
    if (hit) return hit;
  }
  return null;
}

const PLAIN = 0;
const HAS_BIGINT = 1;
const HIDDEN = 2;

const bigintAsText = (_, v) => (typeof v === 'bigint' ? v.toString() : v);

/**
 * What JSON.stringify makes of `v`: PLAIN, HAS_BIGINT (a bigint inside, which it cannot write)
 * or HIDDEN (something `notJson` reports). The same walk as `notJson`, without its paths.
 */
function scanJson(v, depth) {
  if (typeof v === 'bigint') return HAS_BIGINT;
  if (v === null || typeof v !== 'object' || depth > 64) return PLAIN;
  if (typeof v.toJSON === 'function') return PLAIN;
  if (v instanceof Map || v instanceof Set) return HIDDEN;
  let found = PLAIN;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = scanJson(v[i], depth + 1);
      if (r === HIDDEN) return HIDDEN;
      if (r > found) found = r;
    }
    return found;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null && !ArrayBuffer.isView(v)) return HIDDEN;
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    const r = scanJson(v[k], depth + 1);
    if (r === HIDDEN) return HIDDEN;
    if (r > found) found = r;
  }
  return found;
}

/** The message of anything thrown. */
export function errorMessage(e) {
  if (e instanceof Error) return e.message || e.name || 'error';
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof e.message === 'string') return e.message;
  try {
    const s = JSON.stringify(e);
    return s === undefined ? String(e) : s;
  } catch {
    return String(e);
  }
}

/** A tool's return value as output text: a string as is, `undefined` as "ok", else JSON. */
function outputText(tool, value) {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'ok';
  if (value && typeof value.then === 'function') {
    throw new ToolError(`${tool.name}: run returned a Promise; tools are synchronous, return the value itself`);
  }
  if (typeof value === 'bigint') return value.toString();
  // One walk without building paths; the path of what JSON would hide only when there is one.
  const scan = scanJson(value, 0);
  if (scan === HIDDEN) {
    const hidden = notJson(value, '', 0);
    throw new ToolError(
      `${tool.name}: run returned ${hidden}, which JSON shows as {} (its contents lost): return plain objects and arrays (Object.fromEntries(map), [...set])`,
    );
  }
  let text;
  try {
    text = scan === HAS_BIGINT ? JSON.stringify(value, bigintAsText) : JSON.stringify(value);
  } catch (e) {
    throw new ToolError(`${tool.name}: the result cannot be written as JSON: ${errorMessage(e)}`);
  }
  if (text === undefined) throw new ToolError(`${tool.name}: run returned ${typeof value}, which is not text or JSON`);
  return text;
}

function dispatchTool(tool, args) {
  try {
    let strings = Array.isArray(args);
    for (let i = 0; strings && i < args.length; i++) strings = typeof args[i] === 'string';
    if (!strings) throw new ToolError(`${tool.name}: arguments must be strings`);
    const params = tool.params;
    if (args.length > params.length) {
      throw new ToolError(`${tool.name}: takes at most ${params.length} arguments, got ${args.length}`);
    }
    const values = new Array(params.length);
    for (let i = 0; i < params.length; i++) {
      const p = params[i];
      if (i >= args.length) {
        if (p.optional) {
          values[i] = p.default;
          continue;
        }
        throw new ToolError(`${tool.name}: argument ${i + 1} (\`${p.name}\`) is missing`);
      }
      values[i] = decodeArg(tool, p, i, args[i]);
    }
    return { ok: true, value: outputText(tool, tool.run(...values)) };
  } catch (e) {
    return { ok: false, error: errorMessage(e) };
  }
}

/** The host's `tools.call`: the output text, or throws the error message (a string). */
function dispatch(name, args) {
  const tool = state.byName.get(name);
  if (!tool) throw `this plugin has no tool named \`${name}\``;
  const out = dispatchTool(tool, args);
  if (out.ok) return out.value;
  throw out.error;
}

// ---------------------------------------------------------------------------------------------
// Resources: what the plugin serves by URI, held to the host's rules (host/spec/src/resources.rs:
// `check` and `Template::parse`) where they are defined.

/** A URI's scheme (`docs` of `docs://a`), or null. */
function uriScheme(uri) {
  const colon = uri.indexOf(':');
  const scheme = colon < 0 ? '' : uri.slice(0, colon);
  return /^[A-Za-z][A-Za-z0-9+.-]*$/.test(scheme) ? scheme : null;
}

/** The variables of a URI template (`{name}`, `{+name}`) in order; throws the reason (a string,
 * in the host's words) if the host cannot match it. */
function templateVariables(template) {
  const parts = []; // {literal} or {variable}
  let rest = template;
  while (rest !== '') {
    const i = rest.search(/[{}]/);
    if (i < 0) {
      parts.push({ literal: rest });
      break;
    }
    if (rest[i] === '}') throw 'has a `}` without its `{`';
    if (i > 0) parts.push({ literal: rest.slice(0, i) });
    const close = rest.indexOf('}', i);
    if (close < 0) throw 'has a `{` without its `}`';
    const inner = rest.slice(i + 1, close);
    const name = inner.startsWith('+') ? inner.slice(1) : inner;
    if (!/^[A-Za-z0-9_]+$/.test(name)) {
      throw `has \`{${inner}}\`: toolhost serves \`{name}\` and \`{+name}\` expressions, a name of letters, digits and \`_\``;
    }
    if (parts.length > 0 && parts[parts.length - 1].variable !== undefined) {
      throw `has two expressions in a row before \`{${inner}}\`: put text between them`;
    }
    if (parts.some((p) => p.variable === name)) throw `uses the variable \`${name}\` twice`;
    parts.push({ variable: name });
    rest = rest.slice(close + 1);
  }
  const names = parts.filter((p) => p.variable !== undefined).map((p) => p.variable);
  if (names.length === 0) throw 'has no `{name}` expression: a URI without variables is a static resource (defineResource)';
  if (names.length > MAX_EXPRESSIONS) throw `has ${names.length} expressions; at most ${MAX_EXPRESSIONS} are allowed`;
  if (parts[0].literal === undefined || uriScheme(parts[0].literal) === null) {
    throw 'must begin with its scheme (`file:///{+path}`, not `{+uri}`)';
  }
  return names;
}

// What the host counts as whitespace or a control character in a URI.
const URI_SPACE = /[\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** Why `uri` cannot be declared (a template when `template`), or null. */
function uriProblem(uri, template) {
  const n = utf8Encode(uri).length;
  if (n > MAX_URI) return `is ${n} bytes; at most ${MAX_URI} are allowed`;
  const bad = URI_SPACE.exec(uri);
  if (bad) return `holds ${JSON.stringify(bad[0])}: a URI has no whitespace or control characters`;
  const scheme = uriScheme(uri);
  if (scheme === null) return 'is not an absolute URI (`scheme:…`, e.g. `docs://guide`)';
  if (RESERVED_SCHEMES.includes(scheme.toLowerCase())) {
    return `uses the \`${scheme}:\` scheme, which is the host's own (a plugin's skills)`;
  }
  if (!template && /[{}]/.test(uri)) return 'has `{` or `}`: a URI with variables is a resource template (defineResourceTemplate)';
  if (template) {
    try {
      templateVariables(uri);
    } catch (why) {
      return why;
    }
  }
  return null;
}

/** Why `mime` is not a MIME type the host takes (`type/subtype`, printable ASCII), or null. */
function mimeProblem(mime) {
  const slash = mime.indexOf('/');
  const ok = mime.length <= MAX_MIME && slash > 0 && slash < mime.length - 1 && /^[\u0020-\u007e]*$/.test(mime);
  return ok ? null : `${JSON.stringify(mime)} is not a MIME type (\`type/subtype\`, e.g. "text/markdown")`;
}

/**
 * Declare a resource: `read()` returns its contents (a string is text, a Uint8Array bytes)
 * whenever a client reads `uri`. Checked at once; misuse throws a DefinitionError.
 */
export function defineResource(options) {
  return defineResourceOrTemplate(options, callSite(), false);
}

/**
 * Declare a resource template: every URI `uriTemplate` matches (`{name}`: one path segment,
 * `{+name}`: any text) is read by `read`, whose parameters are the template's variables, by
 * name (`read(path)` for `file:///{+path}`).
 */
export function defineResourceTemplate(options) {
  return defineResourceOrTemplate(options, callSite(), true);
}

function defineResourceOrTemplate(options, site, template) {
  if (!state.collect) return defineResourceAt(options, site, template);
  try {
    return defineResourceAt(options, site, template);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    state.errors.push(e);
    // A completion of this template is not checked against it (its error is this one).
    if (template && isPlainObject(options) && typeof options.uriTemplate === 'string') state.failedTemplates.add(options.uriTemplate);
    return Object.freeze({ name: isPlainObject(options) ? options.name : undefined, failed: e.message });
  }
}

function defineResourceAt(options, site, template) {
  const fn = template ? 'defineResourceTemplate' : 'defineResource';
  if (!isPlainObject(options)) fail(`${fn} takes an object, got ${show(options)}`, site);
  checkKeys(options, template ? TEMPLATE_KEYS : RESOURCE_KEYS, template ? 'resource template' : 'resource', site);
  const key = template ? 'uriTemplate' : 'uri';
  const uri = options[key];
  if (typeof uri !== 'string') fail(`${fn} needs \`${key}\`, a string such as ${template ? '"file:///{+path}"' : '"docs://guide"'}`, site);
  const problem = uriProblem(uri, template);
  if (problem) fail(`resource ${template ? 'template' : 'URI'} ${show(uri)} ${problem}`, site);
  const what = `resource ${show(uri)}:`;
  const entry = resourceEntry(options, key, what, site);
  const order = readOrder(options.read, template ? templateVariables(uri) : [], what, site);
  checkResourceCaps(uri, entry.name, template, site);

  // What a read needs: the function, the order of its variables, the template they come from.
  const served = { read: options.read, order, template: template ? uri : null, site };
  const frozen = deepFreeze(entry);
  const resource = Object.freeze({
    [key]: uri,
    name: entry.name,
    /** Its manifest entry; a template's lists the variables completions complete. */
    get spec() {
      const complete = template ? state.templateComplete.get(uri) : undefined;
      return complete ? deepFreeze({ ...entry, complete: complete.slice() }) : frozen;
    },
    read: options.read,
    site,
    /**
     * Read it as the host does: the template's variables in (`{path: 'a'}`), the contents out (a
     * string, or a Uint8Array); throws a ToolError with the message the reader would see.
     */
    call(variables = {}) {
      const out = runRead(served, uri, new Map(Object.entries(variables)));
      if (out.ok) return out.value.val;
      throw new ToolError(out.error);
    },
  });
  (template ? state.templates : state.resources).push(resource);
  (template ? state.byTemplate : state.byUri).set(uri, served);
  state.resourceNames.set(entry.name, site);
  return resource;
}

/** The manifest entry: the URI (or template) under `key`, then the texts the host shows. */
function resourceEntry(options, key, what, site) {
  const name = options.name;
  if (name === undefined) fail(`${what} has no \`name\` (a short name clients list it by)`, site);
  if (typeof name !== 'string' || name.trim() === '') fail(`${what} \`name\` must be a non-blank string, got ${show(name)}`, site);
  checkText(name, MAX_RESOURCE_NAME, false, `${what} \`name\``, site);
  const title = checkString(options, 'title', what, site);
  if (title !== undefined && title.trim() === '') fail(`${what} \`title\` must not be blank when given`, site);
  checkText(title, MAX_TITLE, false, `${what} \`title\``, site);
  const description = (checkString(options, 'description', what, site) ?? '').trim();
  checkText(description, MAX_RESOURCE_DESCRIPTION, true, `${what} \`description\``, site);
  const mimeType = checkString(options, 'mimeType', what, site);
  if (mimeType !== undefined && mimeProblem(mimeType)) fail(`${what} \`mimeType\` ${mimeProblem(mimeType)}`, site);
  const size = options.size;
  if (size !== undefined && !(Number.isSafeInteger(size) && size >= 0)) {
    fail(`${what} \`size\` must be a whole number of bytes, at least 0, got ${show(size)}`, site);
  }
  const entry = { [key]: options[key], name };
  if (title !== undefined) entry.title = title;
  if (description !== '') entry.description = description;
  if (mimeType !== undefined) entry.mimeType = mimeType;
  if (size !== undefined) entry.size = size;
  return entry;
}

/** The order in which `read` takes the template's `variables` (read's parameters, by name);
 * a static resource's `read` takes none. */
function readOrder(read, variables, what, site) {
  if (typeof read !== 'function') fail(`${what} \`read\` must be a function, got ${show(read)}`, site);
  const kind = read.constructor && read.constructor.name;
  if (kind === 'AsyncFunction' || kind === 'GeneratorFunction' || kind === 'AsyncGeneratorFunction') {
    fail(`${what} \`read\` is ${kind === 'AsyncFunction' ? 'async' : 'a generator'}; a resource's read is a plain synchronous function`, site);
  }
  if (/^class[\s{]/.test(Function.prototype.toString.call(read))) fail(`${what} \`read\` is a class; write a plain function`, site);
  const params = functionParams(read);
  if (params === null) return variables; // native or bound: the template's order
  const template = variables.length > 0;
  for (const [i, p] of params.entries()) {
    if (p.isRest || p.isPattern || !p.name) {
      fail(`${what} read's parameter ${i + 1} \`${p.text}\` must be a plain name: the template variable it takes`, site);
    }
    if (!template) fail(`${what} a static resource's read takes no parameters (\`${p.name}\`); a URI with {variables} is a defineResourceTemplate`, site);
    if (!variables.includes(p.name)) {
      fail(`${what} read's parameter \`${p.name}\` is no variable of the template (its variables: ${variables.join(', ')})`, site);
    }
  }
  const names = params.map((p) => p.name);
  const missing = variables.find((v) => !names.includes(v));
  if (missing !== undefined) fail(`${what} the template's variable \`${missing}\` needs a parameter \`${missing}\` of read`, site);
  return names;
}

/** The host's caps, and each URI, template and name declared once. */
function checkResourceCaps(uri, name, template, site) {
  const [list, cap, kind] = template
    ? [state.templates, MAX_TEMPLATES, 'resource templates']
    : [state.resources, MAX_RESOURCES, 'resources'];
  if (list.length >= cap) fail(`this plugin declares more than ${cap} ${kind}; the host allows at most ${cap}`, site);
  const at = (s) => (s ? `${s.file}:${s.line}` : 'an unknown place');
  const previous = state.byUri.get(uri) ?? state.byTemplate.get(uri);
  if (previous) fail(`${template ? 'resource template' : 'resource'} ${show(uri)} is declared twice; the first definition is at ${at(previous.site)}`, site);
  if (state.resourceNames.has(name)) {
    fail(`the name ${show(name)} names two resources; the first definition is at ${at(state.resourceNames.get(name))}`, site);
  }
}

/** A read's result as the `contents` variant: a string is text, bytes are a blob. */
function contents(uri, value) {
  if (typeof value === 'string') return { tag: 'text', val: value };
  if (value instanceof Uint8Array) return { tag: 'blob', val: value };
  if (value instanceof ArrayBuffer) return { tag: 'blob', val: new Uint8Array(value) };
  if (ArrayBuffer.isView(value)) return { tag: 'blob', val: new Uint8Array(value.buffer, value.byteOffset, value.byteLength) };
  if (value && typeof value.then === 'function') {
    throw new ToolError(`${uri}: read returned a Promise; a resource's read is synchronous, return the contents themselves`);
  }
  throw new ToolError(`${uri}: read returned ${show(value)}; a resource returns a string (text) or a Uint8Array (bytes)`);
}

/** Read `uri` with `served`'s function: {ok, value: contents} or {ok: false, error}. */
function runRead(served, uri, given) {
  try {
    const values = served.order.map((v) => {
      if (!given.has(v)) throw new ToolError(`${uri}: the host sent no value for \`${v}\` of ${served.template}`);
      return given.get(v);
    });
    return { ok: true, value: contents(uri, served.read(...values)) };
  } catch (e) {
    return { ok: false, error: errorMessage(e) };
  }
}

/** The host's `resources.read`: the `contents` variant, or throws the error message (a string). */
function read(req) {
  const template = req.template ?? null;
  const served = template === null ? state.byUri.get(req.uri) : state.byTemplate.get(template);
  if (!served) throw `this plugin serves no resource ${req.uri}`;
  const out = runRead(served, req.uri, new Map(req.variables ?? []));
  if (out.ok) return out.value;
  throw out.error;
}

// ---------------------------------------------------------------------------------------------
// Prompts and completion: message templates a person picks, and the values that complete their
// arguments (or a resource template's variables) as the person types, held to the host's rules
// (host/spec/src/prompts.rs `check`; a template's `complete` in host/spec/src/resources.rs)
// where they are defined.

const PROMPT_KEYS = ['name', 'title', 'description', 'arguments', 'get'];
const ARGUMENT_KEYS = ['name', 'description', 'required'];
const COMPLETION_KEYS = ['prompt', 'template', 'argument', 'complete'];
// The host's caps (host/spec/src/prompts.rs): prompts per plugin, arguments per prompt, a
// prompt's name in characters.
const MAX_PROMPTS = 32;
const MAX_ARGUMENTS = 16;
const MAX_PROMPT_NAME = 64;
const MAX_PROMPT_DESCRIPTION = 1024;
const ROLES = ['user', 'assistant'];
/** Marks the objects definePrompt returns, so `defineCompletion({prompt: summarise})` works. */
const PROMPT = Symbol('toolhost prompt');

/** A prompt name: `[A-Za-z0-9_-]`, 1 to 64 characters, not starting with `-`. */
const isPromptName = (s) =>
  typeof s === 'string' && s.length > 0 && s.length <= MAX_PROMPT_NAME && !s.startsWith('-') && /^[A-Za-z0-9_-]+$/.test(s);

function textMessage(role, text, fn) {
  if (typeof text !== 'string') throw new TypeError(`${fn}() takes the message's text, a string, got ${show(text)}`);
  return Object.freeze({ role, content: Object.freeze({ type: 'text', text }) });
}

/** A message the user says: `user(\`Summarise ${path}.\`)`. */
export function user(text) {
  return textMessage('user', text, 'user');
}

/** A message the assistant says (a reply the conversation starts from). */
export function assistant(text) {
  return textMessage('assistant', text, 'assistant');
}

/**
 * A link to the resource `uri` (named `name`) for the client to read, said by the user (or
 * `{role: 'assistant'}`): `resourceLink(\`file:///${path}\`, path, {mimeType: 'text/plain'})`.
 */
export function resourceLink(uri, name, options = {}) {
  if (typeof uri !== 'string') throw new TypeError(`resourceLink() takes \`uri\` as a string, got ${show(uri)}`);
  if (typeof name !== 'string') throw new TypeError(`resourceLink() takes \`name\` as a string, got ${show(name)}`);
  if (!isPlainObject(options)) throw new TypeError(`resourceLink() takes its options as an object, got ${show(options)}`);
  for (const key of Object.keys(options)) {
    if (!['description', 'mimeType', 'role'].includes(key)) {
      throw new TypeError(`resourceLink() has no option \`${key}\`; expected one of: description, mimeType, role`);
    }
  }
  const { description, mimeType, role = 'user' } = options;
  for (const [key, v] of [['description', description], ['mimeType', mimeType]]) {
    if (v !== undefined && v !== null && typeof v !== 'string') {
      throw new TypeError(`resourceLink() takes \`${key}\` as a string, got ${show(v)}`);
    }
  }
  if (!ROLES.includes(role)) throw new TypeError(`resourceLink() takes \`role\` 'user' or 'assistant', got ${show(role)}`);
  const content = { type: 'resource_link', uri, name };
  if (description !== undefined && description !== null) content.description = description;
  if (mimeType !== undefined && mimeType !== null) content.mimeType = mimeType;
  return Object.freeze({ role, content: Object.freeze(content) });
}

/** The message `m` (the `i`th a prompt returned) as a fresh plain object, or throws a ToolError. */
function checkMessage(where, m, i) {
  const bad = () =>
    new ToolError(`${where} returned ${show(m)} as message ${i + 1}; build messages with user(), assistant() or resourceLink()`);
  if (m === null || typeof m !== 'object' || !ROLES.includes(m.role) || m.content === null || typeof m.content !== 'object') throw bad();
  const c = m.content;
  const optional = (v) => v === undefined || v === null || typeof v === 'string';
  if (c.type === 'text' && typeof c.text === 'string') return { role: m.role, content: { type: 'text', text: c.text } };
  if (c.type === 'resource_link' && typeof c.uri === 'string' && typeof c.name === 'string' && optional(c.description) && optional(c.mimeType)) {
    const content = { type: 'resource_link', uri: c.uri, name: c.name };
    if (typeof c.description === 'string') content.description = c.description;
    if (typeof c.mimeType === 'string') content.mimeType = c.mimeType;
    return { role: m.role, content };
  }
  throw bad();
}

/** What a prompt's get returned as {description?, messages}, or throws a ToolError: a string is
 * one user message; a message, an array of them, or {description, messages}. */
function promptResult(name, value) {
  const where = `prompt "${name}": get`;
  const shape = 'a prompt returns a string (one user message), an array of messages (user(), assistant(), resourceLink()) or {description, messages}';
  if (value && typeof value.then === 'function') {
    throw new ToolError(`${where} returned a Promise; a prompt's get is synchronous, return the messages themselves`);
  }
  let description;
  let messages = value;
  if (isPlainObject(value) && !('role' in value)) {
    if (Object.keys(value).some((k) => k !== 'description' && k !== 'messages') || !('messages' in value)) {
      throw new ToolError(`${where} returned ${show(value)}; ${shape}`);
    }
    description = value.description ?? undefined;
    if (description !== undefined && typeof description !== 'string') {
      throw new ToolError(`${where} returned the description ${show(description)}; it is a string`);
    }
    messages = value.messages;
  }
  if (typeof messages === 'string') messages = [user(messages)];
  else if (isPlainObject(messages) && 'role' in messages) messages = [messages];
  if (!Array.isArray(messages)) throw new ToolError(`${where} returned ${show(messages)}; ${shape}`);
  const out = { messages: messages.map((m, i) => checkMessage(where, m, i)) };
  if (description !== undefined) out.description = description;
  return out;
}

/** The WIT `prompt` for {description?, messages} (componentize-qjs: a variant is {tag, val},
 * an option a value or null). */
function witPrompt(p) {
  return {
    description: p.description ?? null,
    messages: p.messages.map(({ role, content: c }) => ({
      role,
      content:
        c.type === 'text'
          ? { tag: 'text', val: c.text }
          : { tag: 'resource-link', val: { uri: c.uri, name: c.name, description: c.description ?? null, mimeType: c.mimeType ?? null } },
    })),
  };
}

/**
 * Declare a prompt: a message template a person picks (MCP `prompts/get`, a client's slash
 * command). `get`'s parameters are the prompt's arguments, by name; it returns the messages.
 * Checked at once; misuse throws a DefinitionError.
 */
export function definePrompt(options) {
  const site = callSite();
  if (!state.collect) return definePromptAt(options, site);
  try {
    return definePromptAt(options, site);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    state.errors.push(e);
    // A completion of this prompt is not checked against it (its error is this one).
    if (isPlainObject(options) && typeof options.name === 'string') state.failedPrompts.add(options.name);
    return Object.freeze({ name: isPlainObject(options) ? options.name : undefined, failed: e.message });
  }
}

function definePromptAt(options, site) {
  if (!isPlainObject(options)) fail(`definePrompt takes an object, got ${show(options)}`, site);
  checkKeys(options, PROMPT_KEYS, 'prompt', site);
  const name = options.name;
  if (name === undefined) fail('definePrompt needs `name`, such as "summarise-file" (what a client offers as /NAME)', site);
  if (!isPromptName(name)) fail(`prompt name ${show(name)} must be 1 to ${MAX_PROMPT_NAME} of [A-Za-z0-9_-], not starting with \`-\``, site);
  const what = `prompt ${show(name)}:`;
  const title = checkString(options, 'title', what, site);
  if (title !== undefined && title.trim() === '') fail(`${what} \`title\` must not be blank when given`, site);
  checkText(title, MAX_TITLE, false, `${what} \`title\``, site);
  const description = (checkString(options, 'description', what, site) ?? '').trim();
  checkText(description, MAX_PROMPT_DESCRIPTION, true, `${what} \`description\``, site);
  const declared = options.arguments ?? [];
  if (!Array.isArray(declared)) fail(`${what} \`arguments\` must be an array such as [{ name: 'path', required: true }], got ${show(declared)}`, site);
  if (declared.length > MAX_ARGUMENTS) fail(`${what} has ${declared.length} arguments; a prompt takes at most ${MAX_ARGUMENTS}`, site);
  const args = declared.map((a, i) => {
    if (!isPlainObject(a)) fail(`${what} \`arguments[${i}]\` must be an object such as { name: 'path' }, got ${show(a)}`, site);
    checkKeys(a, ARGUMENT_KEYS, 'prompt argument', site);
    if (!isIdent(a.name)) fail(`${what} argument name ${show(a.name)} must match [A-Za-z_][A-Za-z0-9_]* (at most ${MAX_NAME} chars)`, site);
    const at = `${what} argument \`${a.name}\`:`;
    const text = (checkString(a, 'description', at, site) ?? '').trim();
    checkText(text, MAX_PARAM_DESCRIPTION, true, `${at} \`description\``, site);
    return { name: a.name, description: text, required: checkBool(a, 'required', at, site) };
  });
  const seen = new Set();
  for (const a of args) {
    if (seen.has(a.name)) fail(`${what} the argument \`${a.name}\` is declared twice`, site);
    seen.add(a.name);
  }
  const order = getOrder(options.get, args, what, site);
  if (state.prompts.length >= MAX_PROMPTS) fail(`this plugin declares more than ${MAX_PROMPTS} prompts; the host allows at most ${MAX_PROMPTS}`, site);
  const previous = state.byPrompt.get(name);
  if (previous) fail(`prompt ${show(name)} is declared twice; the first definition is at ${siteText(previous.site)}`, site);

  const served = { name, get: options.get, order, arguments: args, complete: new Set(), site };
  const prompt = Object.freeze({
    [PROMPT]: true,
    name,
    /** Its manifest entry (an argument a completion completes has `complete: true`). */
    get spec() {
      const entry = { name };
      if (title !== undefined) entry.title = title;
      if (description !== '') entry.description = description;
      if (args.length > 0) {
        entry.arguments = args.map((a) => {
          const e = { name: a.name };
          if (a.description !== '') e.description = a.description;
          if (a.required) e.required = true;
          if (served.complete.has(a.name)) e.complete = true;
          return e;
        });
      }
      return deepFreeze(entry);
    },
    get: options.get,
    site,
    /**
     * Get it as the host does: its arguments in (`{path: 'a.txt'}`), {description?, messages}
     * out; throws a ToolError with the message whoever asked would see.
     */
    call(args = {}) {
      const out = runGet(served, new Map(Object.entries(args)));
      if (out.ok) return out.value;
      throw new ToolError(out.error);
    },
  });
  state.prompts.push(prompt);
  state.byPrompt.set(name, served);
  return prompt;
}

const siteText = (s) => (s ? `${s.file}:${s.line}` : 'an unknown place');

/** The order in which `get` takes the prompt's arguments (get's parameters, by name). */
function getOrder(get, args, what, site) {
  if (typeof get !== 'function') fail(`${what} \`get\` must be a function, got ${show(get)}`, site);
  const kind = get.constructor && get.constructor.name;
  if (kind === 'AsyncFunction' || kind === 'GeneratorFunction' || kind === 'AsyncGeneratorFunction') {
    fail(`${what} \`get\` is ${kind === 'AsyncFunction' ? 'async' : 'a generator'}; a prompt's get is a plain synchronous function`, site);
  }
  if (/^class[\s{]/.test(Function.prototype.toString.call(get))) fail(`${what} \`get\` is a class; write a plain function`, site);
  const names = args.map((a) => a.name);
  const params = functionParams(get);
  if (params === null) return names; // native or bound: the declared order
  for (const [i, p] of params.entries()) {
    if (p.isRest || p.isPattern || !p.name) {
      fail(`${what} get's parameter ${i + 1} \`${p.text}\` must be a plain name: the argument it takes`, site);
    }
    const arg = args.find((a) => a.name === p.name);
    if (!arg) {
      fail(`${what} get's parameter \`${p.name}\` is no argument of the prompt (its arguments: ${names.join(', ') || 'none'}); declare it in \`arguments\``, site);
    }
    if (p.hasDefault && arg.required) {
      fail(`${what} get's parameter \`${p.name}\` has a default value, so its argument must not be \`required\``, site);
    }
  }
  const taken = params.map((p) => p.name);
  const missing = names.find((n) => !taken.includes(n));
  if (missing !== undefined) fail(`${what} the argument \`${missing}\` needs a parameter \`${missing}\` of get`, site);
  return taken;
}

/** Get the prompt `served` with `given` (a Map): {ok, value: {description?, messages}} or {ok: false, error}. */
function runGet(served, given) {
  try {
    const takes = served.arguments.map((a) => a.name);
    for (const k of given.keys()) {
      if (!takes.includes(k)) {
        throw new ToolError(`prompt \`${served.name}\` takes no argument \`${k}\` (it takes: ${takes.join(', ') || 'none'})`);
      }
    }
    const missing = served.arguments.filter((a) => a.required && given.get(a.name) === undefined).map((a) => a.name);
    if (missing.length > 0) {
      throw new ToolError(`prompt \`${served.name}\` needs its argument${missing.length === 1 ? '' : 's'} \`${missing.join('`, `')}\``);
    }
    return { ok: true, value: promptResult(served.name, served.get(...served.order.map((n) => given.get(n)))) };
  } catch (e) {
    return { ok: false, error: errorMessage(e) };
  }
}

/** The host's `prompts.get`: the WIT `prompt`, or throws the error message (a string). */
function getPrompt(req) {
  const served = state.byPrompt.get(req.name);
  if (!served) throw `this plugin has no prompt ${req.name}`;
  const out = runGet(served, new Map(req.arguments ?? []));
  if (out.ok) return witPrompt(out.value);
  throw out.error;
}

const completionKey = (kind, target, argument) => `${kind}\u0000${target}\u0000${argument}`;

/**
 * Complete a prompt's argument (`prompt`: its name, or the object definePrompt returned) or a
 * resource template's variable (`template`: its `uriTemplate`, or the object) as a person types
 * it: `complete(value, context)` returns candidate values, best first. The prompt or template is
 * defined first. Checked at once; misuse throws a DefinitionError.
 */
export function defineCompletion(options) {
  const site = callSite();
  if (!state.collect) return defineCompletionAt(options, site);
  try {
    return defineCompletionAt(options, site);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    state.errors.push(e);
    return Object.freeze({ argument: isPlainObject(options) ? options.argument : undefined, failed: e.message });
  }
}

function defineCompletionAt(options, site) {
  const usage =
    "a completion names what it completes: defineCompletion({ prompt: 'NAME', argument: 'ARG', complete }) or defineCompletion({ template: 'file:///{+path}', argument: 'path', complete })";
  if (!isPlainObject(options)) fail(`defineCompletion takes an object, got ${show(options)}; ${usage}`, site);
  checkKeys(options, COMPLETION_KEYS, 'completion', site);
  const { prompt: ofPrompt, template: ofTemplate, argument } = options;
  if (ofPrompt !== undefined && ofTemplate !== undefined) fail('a completion names either `prompt` or `template`, not both', site);
  if ((ofPrompt === undefined && ofTemplate === undefined) || argument === undefined) fail(usage, site);
  const kind = ofPrompt !== undefined ? 'prompt' : 'template';
  // The name, or the object definePrompt / defineResourceTemplate returned.
  let target = kind === 'prompt' ? ofPrompt : ofTemplate;
  if (kind === 'prompt' && target !== null && typeof target === 'object' && target[PROMPT]) target = target.name;
  if (kind === 'template' && target !== null && typeof target === 'object' && typeof target.uriTemplate === 'string') target = target.uriTemplate;
  if (typeof target !== 'string') fail(`completion \`${kind}\` must be a ${kind === 'prompt' ? "prompt's name" : 'uriTemplate'} (or the object define${kind === 'prompt' ? 'Prompt' : 'ResourceTemplate'} returned), got ${show(target)}`, site);
  if (typeof argument !== 'string') fail(`completion \`argument\` must be a string, got ${show(argument)}`, site);
  const fn = options.complete;
  const what = `the completion of \`${argument}\`:`;
  if (typeof fn !== 'function') fail(`${what} \`complete\` must be a function, got ${show(fn)}`, site);
  const fnKind = fn.constructor && fn.constructor.name;
  if (fnKind === 'AsyncFunction' || fnKind === 'GeneratorFunction' || fnKind === 'AsyncGeneratorFunction') {
    fail(`${what} \`complete\` is ${fnKind === 'AsyncFunction' ? 'async' : 'a generator'}; a completion's complete is a plain synchronous function`, site);
  }
  if (/^class[\s{]/.test(Function.prototype.toString.call(fn))) fail(`${what} \`complete\` is a class; write a plain function`, site);
  const params = functionParams(fn);
  if (params !== null && (params.length > 2 || params.some((p) => p.isRest))) {
    fail(`${what} complete takes \`value\` (what has been typed) and, if it wants them, \`context\` (an object of the other arguments given)`, site);
  }

  let of;
  if (kind === 'prompt') {
    const served = state.byPrompt.get(target);
    if (!served) {
      if (state.failedPrompts.has(target)) return Object.freeze({ argument, failed: `prompt ${show(target)} failed` });
      fail(`this plugin has no prompt ${show(target)} (define the prompt before its completion)`, site);
    }
    if (!served.arguments.some((a) => a.name === argument)) {
      fail(`prompt ${show(target)} has no argument \`${argument}\` (its arguments: ${served.arguments.map((a) => a.name).join(', ') || 'none'})`, site);
    }
    of = `prompt ${show(target)}`;
  } else {
    if (!state.byTemplate.has(target)) {
      if (state.failedTemplates.has(target)) return Object.freeze({ argument, failed: `resource template ${show(target)} failed` });
      fail(`this plugin has no resource template ${show(target)} (define the template before its completion)`, site);
    }
    const variables = templateVariables(target);
    if (!variables.includes(argument)) fail(`${show(target)} has no variable \`${argument}\` (its variables: ${variables.join(', ')})`, site);
    of = `resource template ${show(target)}`;
  }
  const key = completionKey(kind, target, argument);
  const previous = state.completions.get(key);
  if (previous) fail(`\`${argument}\` of ${of} is completed twice; the first definition is at ${siteText(previous.site)}`, site);

  const served = { argument, complete: fn, takesContext: params === null || params.length === 2, site };
  state.completions.set(key, served);
  if (kind === 'prompt') state.byPrompt.get(target).complete.add(argument);
  else {
    if (!state.templateComplete.has(target)) state.templateComplete.set(target, []);
    state.templateComplete.get(target).push(argument);
  }
  return Object.freeze({
    [kind]: target,
    argument,
    complete: fn,
    site,
    /**
     * Complete as the host does: what has been typed and the other arguments given
     * (`{style: 'short'}`) in, the values out; throws a ToolError with the message whoever asked
     * would see.
     */
    call(value, context = {}) {
      const out = runComplete(served, value, new Map(Object.entries(context)));
      if (out.ok) return out.value;
      throw new ToolError(out.error);
    },
  });
}

/** Complete with `served`'s function: {ok, value: strings} or {ok: false, error}. */
function runComplete(served, value, context) {
  try {
    const got = served.takesContext ? served.complete(value, Object.fromEntries(context)) : served.complete(value);
    const where = `the completion of \`${served.argument}\`: complete`;
    if (got && typeof got.then === 'function') {
      throw new ToolError(`${where} returned a Promise; a completion's complete is synchronous, return the values themselves`);
    }
    if (!Array.isArray(got)) throw new ToolError(`${where} returned ${show(got)}; a completion returns an array of strings`);
    const bad = got.findIndex((v) => typeof v !== 'string');
    if (bad >= 0) throw new ToolError(`${where} returned ${show(got[bad])} as value ${bad + 1}; a completion returns an array of strings`);
    return { ok: true, value: got.slice() };
  } catch (e) {
    return { ok: false, error: errorMessage(e) };
  }
}

/** The host's `completion.complete`: the values, or throws the error message (a string). */
function complete(req) {
  const t = req.target ?? {};
  const kind = t.tag === 'prompt' ? 'prompt' : t.tag === 'resource-template' ? 'template' : null;
  const served = kind === null ? undefined : state.completions.get(completionKey(kind, t.val, req.argument));
  if (!served) throw `this plugin completes nothing for ${req.argument}`;
  const out = runComplete(served, req.value, new Map(req.context ?? []));
  if (out.ok) return out.value;
  throw out.error;
}

// ---------------------------------------------------------------------------------------------
// The manifest.

/**
 * The manifest JSON object for what was declared, with name, version and description from
 * `defaults` (package.json) where definePlugin leaves them out. `where` locates whole-plugin
 * errors ({file, line}).
 */
function manifest(defaults = {}, where = null) {
  if (state.errors.length === 1) throw state.errors[0];
  if (state.errors.length > 1) throw new DefinitionErrors(state.errors.slice());
  const p = state.plugin ? state.plugin.options : {};
  const at = state.plugin ? state.plugin.site : where;
  const name = p.name ?? defaults.name;
  const version = p.version ?? defaults.version;
  if (name === undefined) fail('the plugin has no name: give `name` in definePlugin or package.json', at);
  if (!isPluginName(name)) {
    fail(
      `plugin name ${show(name)} must match [A-Za-z_][A-Za-z0-9_-]* (at most 64 chars); give \`name\` in definePlugin`,
      at,
    );
  }
  if (typeof version !== 'string' || version.trim() === '') {
    fail('the plugin has no version: give `version` in definePlugin or package.json', at);
  }
  const description = p.description ?? defaults.description ?? '';
  if (typeof description !== 'string') fail(`the plugin \`description\` must be a string, got ${show(description)}`, at);
  checkText(version, MAX_LABEL, false, 'the plugin `version`', at);
  checkText(description, MAX_PLUGIN_DESCRIPTION, true, 'the plugin `description`', at);
  if (state.tools.length === 0) fail('the plugin declares no tools: call defineTool at least once', at);
  const out = {
    format: FORMAT,
    name,
    version,
    description,
    capabilities: JSON.parse(JSON.stringify(p.capabilities ?? { fs: [], env: [], net: [], secrets: [] })),
    tools: state.tools.map((t) => JSON.parse(JSON.stringify(t.spec))),
  };
  // Only when declared, as the Rust SDK writes them.
  if (state.resources.length > 0) out.resources = state.resources.map((r) => JSON.parse(JSON.stringify(r.spec)));
  if (state.templates.length > 0) out.resourceTemplates = state.templates.map((r) => JSON.parse(JSON.stringify(r.spec)));
  if (state.prompts.length > 0) out.prompts = state.prompts.map((p) => JSON.parse(JSON.stringify(p.spec)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Logging and HTTP, through the host inside the component and through stand-ins under node.

function backend() {
  return state.backend ?? nodeBackend;
}

const nodeBackend = {
  progress(done, total, message) {
    state.progress.push(total === undefined ? { done, message } : { done, total, message });
  },
  log(level, message) {
    state.logs.push({ level, message });
    if (typeof console !== 'undefined' && typeof process !== 'undefined' && process.env.TOOLHOST_LOG_STDERR) {
      console.error(`[${level}] ${message}`);
    }
  },
  send(req) {
    if (state.testHttp) return state.testHttp(req);
    throw 'http is only available inside toolhost (in tests, set a stand-in with testing.onHttp)';
  },
  run(program, args) {
    if (state.testProcess) return state.testProcess(program, args);
    throw 'process is only available inside toolhost (in tests, set a stand-in with testing.onProcess)';
  },
  get kv() {
    if (state.testKv) return state.testKv.bindings;
    throw new KvError(
      'kv is only available inside toolhost (in tests, install an in-memory store with testing.memoryKv())',
      'other',
    );
  },
};

function logAt(level, parts) {
  const message = parts.map((p) => (typeof p === 'string' ? p : p instanceof Error ? p.stack || p.message : show(p))).join(' ');
  backend().log(level, message);
}

/**
 * Report how far the running call has come: `done` units of work out of `total` (when known),
 * with a short `message` for the person waiting. Call it as often as is natural: the host
 * forwards at most about ten reports a second (always the last), keeps `done` from going
 * backwards and cuts messages past 200 characters. Under node, reports are kept in
 * `testing.progress`.
 */
export function progress(done, total, message = '') {
  const whole = (n) => (Number.isFinite(n) && n > 0 ? Math.min(Math.floor(n), Number.MAX_SAFE_INTEGER) : 0);
  const t = total === undefined || total === null ? undefined : whole(total);
  backend().progress(whole(done), t, typeof message === 'string' ? message : show(message));
}

/** Write a line to the host's log (info level); `log.debug(…)`, `log.warn(…)` and so on. */
export const log = Object.assign((...parts) => logAt('info', parts), {
  trace: (...parts) => logAt('trace', parts),
  debug: (...parts) => logAt('debug', parts),
  info: (...parts) => logAt('info', parts),
  warn: (...parts) => logAt('warn', parts),
  error: (...parts) => logAt('error', parts),
});

function utf8Encode(s) {
  if (typeof TextEncoder !== 'undefined') return new TextEncoder().encode(s);
  const out = [];
  for (const ch of s) {
    let c = ch.codePointAt(0);
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(out);
}

function utf8Decode(bytes) {
  if (typeof TextDecoder !== 'undefined') return new TextDecoder().decode(bytes);
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let c = 0xfffd;
    let n = 1;
    const cont = (k) => i + k < bytes.length && (bytes[i + k] & 0xc0) === 0x80;
    if (b < 0x80) c = b;
    else if (b >= 0xc2 && b < 0xe0 && cont(1)) {
      c = ((b & 31) << 6) | (bytes[i + 1] & 63);
      n = 2;
    } else if (b >= 0xe0 && b < 0xf0 && cont(1) && cont(2)) {
      c = ((b & 15) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63);
      n = 3;
      if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
    } else if (b >= 0xf0 && b < 0xf5 && cont(1) && cont(2) && cont(3)) {
      c = ((b & 7) << 18) | ((bytes[i + 1] & 63) << 12) | ((bytes[i + 2] & 63) << 6) | (bytes[i + 3] & 63);
      n = 4;
      if (c < 0x10000 || c > 0x10ffff) c = 0xfffd;
    }
    out += String.fromCodePoint(c);
    i += n;
  }
  return out;
}

function toBytes(body) {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return utf8Encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  if (Array.isArray(body)) return Uint8Array.from(body);
  throw new TypeError(`http: \`body\` must be a string or bytes, got ${show(body)} (use \`json\` for a JSON body)`);
}

function headerList(headers) {
  if (headers === undefined || headers === null) return [];
  const pairs = Array.isArray(headers) ? headers : Object.entries(headers);
  return pairs.map((pair) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
      throw new TypeError(`http: each header must be a [name, value] pair of strings, got ${show(pair)}`);
    }
    return [pair[0], pair[1]];
  });
}

function secretHeaderList(list) {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new TypeError('http: `secretHeaders` must be an array of {name, secret, prefix}');
  return list.map((h) => {
    if (!h || typeof h.name !== 'string' || typeof h.secret !== 'string') {
      throw new TypeError(`http: a secret header needs a \`name\` and a \`secret\`, got ${show(h)}`);
    }
    if (h.prefix !== undefined && typeof h.prefix !== 'string') {
      throw new TypeError('http: a secret header\'s `prefix` must be a string');
    }
    const declared = state.plugin ? state.plugin.options.capabilities.secrets : [];
    if (!declared.includes(h.secret)) {
      throw new Error(
        `http: secret \`${h.secret}\` is not requested by this plugin: add it to definePlugin({capabilities: {secrets: [...]}})`,
      );
    }
    return { name: h.name, secret: h.secret, prefix: h.prefix ?? '' };
  });
}

/** An HTTP response. An error status is still a response: check `status` or `ok`. */
class Response {
  constructor(r) {
    this.status = r.status;
    this.url = r.url;
    this.headers = (r.headers ?? []).map(([k, v]) => [k, v]);
    this.body = r.body instanceof Uint8Array ? r.body : toBytes(r.body ?? []);
    this.truncated = Boolean(r.truncated);
  }
  get ok() {
    return this.status >= 200 && this.status < 300;
  }
  /** The body as text (invalid UTF-8 replaced). */
  text() {
    return utf8Decode(this.body);
  }
  /** The body parsed as JSON; throws an error naming the URL if it is not JSON. */
  json() {
    try {
      return JSON.parse(this.text());
    } catch (e) {
      throw new Error(`${this.url}: response is not valid JSON: ${errorMessage(e)}`);
    }
  }
  /** The first header named `name` (case-insensitive), or undefined. */
  header(name) {
    const lower = name.toLowerCase();
    const hit = this.headers.find(([k]) => k.toLowerCase() === lower);
    return hit ? hit[1] : undefined;
  }
  /** This response for a 2xx status; otherwise throws an error naming the status and URL. */
  errorForStatus() {
    if (this.ok) return this;
    const snippet = [...this.text()].slice(0, 200).join('');
    throw new Error(`${this.url} answered HTTP ${this.status}: ${snippet}`);
  }
}

/** Send one request through the host. Throws if the host refuses or fails it. */
function send(request) {
  if (!request || typeof request !== 'object') throw new TypeError('http.send takes a request object');
  const method = (request.method ?? 'GET').toUpperCase();
  if (!HTTP_METHODS.includes(method)) {
    throw new TypeError(`http: method ${show(request.method)} is not one of ${HTTP_METHODS.join(', ')}`);
  }
  if (typeof request.url !== 'string') throw new TypeError('http: `url` must be a string');
  const headers = headerList(request.headers);
  let body = toBytes(request.body);
  if (request.json !== undefined) {
    if (body !== null) throw new TypeError('http: give either `body` or `json`, not both');
    body = utf8Encode(JSON.stringify(request.json));
    if (!headers.some(([k]) => k.toLowerCase() === 'content-type')) headers.push(['content-type', 'application/json']);
  }
  const wire = {
    method,
    url: request.url,
    headers,
    secretHeaders: secretHeaderList(request.secretHeaders),
    body,
  };
  let raw;
  try {
    raw = backend().send(wire);
  } catch (e) {
    throw new Error(errorMessage(e));
  }
  return new Response(raw);
}

/** Outbound HTTP through the host: `http(request)` is `http.send(request)`. */
export const http = Object.assign((request) => send(request), {
  send,
  get: (url, options = {}) => send({ ...options, method: 'GET', url }),
  post: (url, body, options = {}) => send({ ...options, method: 'POST', url, body }),
  /** A secret header `authorization: Bearer <secret>`, filled in by the host. */
  bearer: (secret) => ({ name: 'authorization', secret, prefix: 'Bearer ' }),
  Response,
});

// ---------------------------------------------------------------------------------------------
// Running programs through the host.

/** What a program did. A non-zero exit is still an Output: check `code` or `success()`. */
class Output {
  constructor(o) {
    /** The exit code; null if it ended by a signal or the host stopped it. */
    this.code = o.code ?? null;
    this.stdout = toBytes(o.stdout ?? []);
    this.stderr = toBytes(o.stderr ?? []);
    /** The output passed the host's cap: the program was stopped there. */
    this.truncated = Boolean(o.truncated);
  }
  /** Exit code 0. */
  success() {
    return this.code === 0;
  }
  /** stdout as text (invalid UTF-8 replaced). */
  stdoutText() {
    return utf8Decode(this.stdout);
  }
  /** stderr as text (invalid UTF-8 replaced). */
  stderrText() {
    return utf8Decode(this.stderr);
  }
}

/**
 * Run `program` — a name the plugin requests (`capabilities.exec`) or its granted absolute path —
 * with `args`, and wait for it. Throws an Error with the host's reason if it refuses or cannot
 * start the program (not granted, arguments not allowed, ...).
 */
function run(program, args = []) {
  if (typeof program !== 'string') throw new TypeError(`process.run: \`program\` must be a string, got ${show(program)}`);
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
    throw new TypeError(`process.run: \`args\` must be an array of strings, got ${show(args)}`);
  }
  let raw;
  try {
    raw = backend().run(program, args.slice());
  } catch (e) {
    throw new Error(errorMessage(e));
  }
  return new Output(raw);
}

/**
 * Running programs through the host: only programs the plugin requests and the operator grants,
 * with exactly these arguments (no shell), an empty environment plus what the operator grants,
 * stdin closed, in the workspace, the output capped and killed at the call's deadline.
 */
const processApi = Object.freeze({ run, Output });
export { processApi as process };

// ---------------------------------------------------------------------------------------------
// The key-value store, through the host's `wasi:keyvalue` 0.2.0-draft2 (store, atomics, batch).

/** The bucket `kv.open()` and kv's own functions use when none is named. */
const DEFAULT_BUCKET = 'default';
/** How often `update` tries again when another call changed the key in between. */
const UPDATE_ATTEMPTS = 64;

/**
 * The host refused or failed a store operation. `kind` is 'no-such-store' (the host has no such
 * bucket for this plugin: its manifest does not request it), 'access-denied' (the operator has
 * not granted it) or 'other' (anything else: a limit, a value that is not a counter or not JSON,
 * a store that is unavailable; `detail` holds the host's text). `bucket` names the bucket.
 */
export class KvError extends Error {
  constructor(message, kind = 'other', bucket = null, detail = null) {
    super(message);
    this.name = 'KvError';
    this.kind = kind;
    this.bucket = bucket;
    this.detail = detail;
  }
}

/** The plugin's name for the operator's hint: the manifest's (set by the entry), else definePlugin's. */
function kvPluginName() {
  return state.pluginName ?? state.plugin?.options.name ?? 'NAME';
}

/** A variant's case, whatever the bindings spell it: 'access-denied', 'accessDenied' or its index. */
function variantCase(v, names) {
  if (!v || typeof v !== 'object') return undefined;
  if (typeof v.tag === 'number') return names[v.tag];
  if (typeof v.tag === 'string') {
    const bare = v.tag.toLowerCase().replace(/[-_]/g, '');
    return names.find((n) => n.replace(/-/g, '') === bare);
  }
  return undefined;
}

const STORE_ERRORS = ['no-such-store', 'access-denied', 'other'];
const CAS_ERRORS = ['store-error', 'cas-failed'];

/** What a host call threw: the WIT error value (`err` of its result) when there is one. */
const thrownPayload = (e) => (e && typeof e === 'object' && 'payload' in e ? e.payload : e);

/** The KvError for a WIT `store.error` value (or anything else a store call threw). */
function storeError(bucket, value) {
  const kind = variantCase(value, STORE_ERRORS);
  if (kind === 'access-denied') {
    const name = kvPluginName();
    return new KvError(
      `kv: bucket \`${bucket}\` is not granted to this plugin (access-denied): the operator grants it with ` +
        `\`[plugin.${name}] kv = ["${bucket}"]\` in the config or \`--allow-kv ${name}=${bucket}\``,
      'access-denied',
      bucket,
    );
  }
  if (kind === 'no-such-store') {
    return new KvError(
      `kv: there is no bucket \`${bucket}\` for this plugin (no-such-store): request it in the plugin's manifest ` +
        `with definePlugin({capabilities: {kv: ["${bucket}"]}}), and have the operator grant it`,
      'no-such-store',
      bucket,
    );
  }
  if (value instanceof KvError) return value;
  const detail = kind === 'other' ? String(value.val) : errorMessage(value);
  return new KvError(`kv: bucket \`${bucket}\`: ${detail}`, 'other', bucket, detail);
}

function kvKey(key, what = 'key') {
  if (typeof key !== 'string') throw new TypeError(`kv: a ${what} is a string, got ${show(key)}`);
  return key;
}

function kvKeys(keys) {
  if (typeof keys === 'string' || !keys || typeof keys[Symbol.iterator] !== 'function') {
    throw new TypeError(`kv: give an array of keys, got ${show(keys)}`);
  }
  return [...keys].map((k) => kvKey(k));
}

function kvValue(value) {
  if (typeof value === 'string') return utf8Encode(value);
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`kv: a value is a string or bytes (Uint8Array), got ${show(value)} (use setJson for other values)`);
}

const asBytes = (v) => (v === null || v === undefined ? null : v instanceof Uint8Array ? v : Uint8Array.from(v));

function sameBytes(a, b) {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Release a resource handle now rather than when it is collected. */
function dropHandle(handle) {
  try {
    if (handle && typeof handle[Symbol.dispose] === 'function') handle[Symbol.dispose]();
    else if (handle && typeof handle.drop === 'function') handle.drop();
  } catch {
    // already released
  }
}

/** An open bucket of the plugin's store. Get one with `kv.open(name)`. */
class Bucket {
  constructor(name, handle, bindings) {
    this.name = name;
    this.handle = handle;
    this.bindings = bindings;
  }

  call(fn) {
    try {
      return fn();
    } catch (e) {
      throw storeError(this.name, thrownPayload(e));
    }
  }

  /** The value of `key` as bytes (Uint8Array), or null when the key is not there. */
  get(key) {
    kvKey(key);
    return asBytes(this.call(() => this.handle.get(key)));
  }

  /** The value of `key` decoded from UTF-8 (invalid bytes replaced), or `fallback`. */
  getText(key, fallback = null) {
    const v = this.get(key);
    return v === null ? fallback : utf8Decode(v);
  }

  /** The value of `key` parsed as JSON, or `fallback` when the key is not there. A value that is
   * not JSON throws a KvError (kind 'other'). */
  getJson(key, fallback = null) {
    const v = this.get(key);
    return v === null ? fallback : this.parse(key, v);
  }

  parse(key, bytes) {
    try {
      return JSON.parse(utf8Decode(bytes));
    } catch (e) {
      const detail = `the value of \`${key}\` is not JSON: ${errorMessage(e)}`;
      throw new KvError(`kv: bucket \`${this.name}\`: ${detail}`, 'other', this.name, detail);
    }
  }

  /** Store `value` (a string, stored as UTF-8, or bytes) under `key`, replacing what was there. */
  set(key, value) {
    kvKey(key);
    const bytes = kvValue(value);
    this.call(() => this.handle.set(key, bytes));
  }

  /** Store `value` as JSON text (UTF-8) under `key`. */
  setJson(key, value) {
    this.set(key, jsonText(value));
  }

  /** Remove `key` (nothing happens when it is not there). */
  delete(key) {
    kvKey(key);
    this.call(() => this.handle.delete(key));
  }

  /** Whether `key` is there. */
  exists(key) {
    kvKey(key);
    return Boolean(this.call(() => this.handle.exists(key)));
  }

  /** Every key of the bucket, in no particular order: the host's pages (`list-keys` with its
   * cursor) followed until there are no more. */
  keys() {
    const out = [];
    let cursor = null;
    for (;;) {
      const page = this.call(() => this.handle.listKeys(cursor));
      out.push(...page.keys);
      const next = page.cursor ?? null;
      if (next === null) return out;
      if (next === cursor) {
        throw new KvError(`kv: bucket \`${this.name}\`: the host answered the same list-keys cursor twice`, 'other', this.name);
      }
      cursor = next;
    }
  }

  /** Add `delta` to the counter `key` atomically and return the new value. A key that is not there
   * counts from 0; the host keeps counters as decimal text (`getText` shows "42"). */
  increment(key, delta = 1) {
    kvKey(key);
    if (!Number.isSafeInteger(delta)) throw new TypeError(`kv: increment takes a whole number, got ${show(delta)}`);
    return Number(this.call(() => this.bindings.atomics.increment(this.handle, key, delta)));
  }

  /** A Map of key → bytes for the keys of `keys` that are there (one host call). */
  getMany(keys) {
    const list = kvKeys(keys);
    const found = this.call(() => this.bindings.batch.getMany(this.handle, list));
    const out = new Map();
    for (const pair of found) if (pair) out.set(pair[0], asBytes(pair[1]));
    return out;
  }

  /** Store every key and value of `entries` (a Map, a plain object or [key, value] pairs; values
   * strings or bytes) in one host call. Not atomic: when it fails, some may be stored. */
  setMany(entries) {
    const pairs = entries instanceof Map || Array.isArray(entries) ? [...entries] : isPlainObject(entries) ? Object.entries(entries) : null;
    if (pairs === null) throw new TypeError(`kv: setMany takes a Map, an object or [key, value] pairs, got ${show(entries)}`);
    const list = pairs.map((p) => {
      if (!Array.isArray(p) || p.length !== 2) throw new TypeError(`kv: setMany takes [key, value] pairs, got ${show(p)}`);
      return [kvKey(p[0]), kvValue(p[1])];
    });
    this.call(() => this.bindings.batch.setMany(this.handle, list));
  }

  /** Remove every key of `keys` (those not there are skipped) in one host call. */
  deleteMany(keys) {
    const list = kvKeys(keys);
    this.call(() => this.bindings.batch.deleteMany(this.handle, list));
  }

  /** Store `value` under `key` only if its value is still `expected` (a string or bytes; null: the
   * key is not there), atomically. True if it was stored, false if the value was something else or
   * changed in between. */
  compareAndSwap(key, expected, value) {
    kvKey(key);
    const want = expected === null || expected === undefined ? null : kvValue(expected);
    const bytes = kvValue(value);
    const cas = this.call(() => this.bindings.atomics.Cas.new(this.handle, key));
    if (!sameBytes(this.casCurrent(cas), want)) {
      dropHandle(cas);
      return false;
    }
    const fresh = this.swap(cas, bytes);
    if (fresh === null) return true;
    dropHandle(fresh);
    return false;
  }

  /**
   * Replace the value of `key` with `fn(current)` atomically, and return what was stored. `fn` gets
   * the current bytes (null when the key is not there) and returns a string or bytes, or
   * undefined/null to leave the value as it is. When another call changes the key in between, `fn`
   * runs again on the newer value (up to `attempts` times; then a KvError).
   */
  update(key, fn, { attempts = UPDATE_ATTEMPTS } = {}) {
    kvKey(key);
    if (typeof fn !== 'function') throw new TypeError(`kv: update takes a function, got ${show(fn)}`);
    let cas = this.call(() => this.bindings.atomics.Cas.new(this.handle, key));
    for (let i = 0; i < attempts; i++) {
      const current = this.casCurrent(cas);
      let next;
      try {
        next = fn(current);
      } catch (e) {
        dropHandle(cas);
        throw e;
      }
      if (next === undefined || next === null) {
        dropHandle(cas);
        return current;
      }
      const bytes = kvValue(next);
      cas = this.swap(cas, bytes);
      if (cas === null) return bytes;
    }
    dropHandle(cas);
    const detail = `\`${key}\` kept changing: gave up after ${attempts} attempts`;
    throw new KvError(`kv: bucket \`${this.name}\`: ${detail}`, 'other', this.name, detail);
  }

  /** `update` on JSON: `fn` gets the parsed value (`fallback` when the key is not there) and
   * returns the value to store as JSON (undefined: leave it). Returns the value stored. */
  updateJson(key, fn, fallback = null, options = {}) {
    if (typeof fn !== 'function') throw new TypeError(`kv: updateJson takes a function, got ${show(fn)}`);
    // A fresh copy of `fallback` for each attempt: `fn` may change it in place.
    const fallbackText = jsonText(fallback);
    const stored = this.update(
      key,
      (current) => {
        const value = current === null ? JSON.parse(fallbackText) : this.parse(key, current);
        const out = fn(value);
        return out === undefined ? undefined : jsonText(out);
      },
      options,
    );
    return stored === null ? null : this.parse(key, stored);
  }

  casCurrent(cas) {
    try {
      return asBytes(cas.current());
    } catch (e) {
      dropHandle(cas);
      throw storeError(this.name, thrownPayload(e));
    }
  }

  /** null when swapped; the fresh CAS handle the host gives when the value changed. */
  swap(cas, bytes) {
    try {
      this.bindings.atomics.swap(cas, bytes);
      return null;
    } catch (e) {
      const err = thrownPayload(e);
      const kind = variantCase(err, CAS_ERRORS);
      if (kind === 'cas-failed') return err.val;
      throw storeError(this.name, kind === 'store-error' ? err.val : err);
    }
  }

  /** Release the bucket's handle now (it is released at the end of the call anyway). */
  close() {
    state.buckets.delete(this.name);
    dropHandle(this.handle);
  }
}

function jsonText(value) {
  const text = JSON.stringify(value, bigintAsText);
  if (text === undefined) throw new TypeError(`kv: ${show(value)} cannot be written as JSON`);
  return text;
}

/** The bucket `name` (default 'default'), which the manifest requests and the operator grants.
 * Throws a KvError if the host refuses it. */
function openBucket(name = DEFAULT_BUCKET) {
  if (typeof name !== 'string') throw new TypeError(`kv.open: a bucket name is a string, got ${show(name)}`);
  let bucket = state.buckets.get(name);
  if (!bucket) {
    const bindings = backend().kv;
    let handle;
    try {
      handle = bindings.store.open(name);
    } catch (e) {
      throw storeError(name, thrownPayload(e));
    }
    bucket = new Bucket(name, handle, bindings);
    state.buckets.set(name, bucket);
  }
  return bucket;
}

const onDefault = (method) => (...args) => openBucket(DEFAULT_BUCKET)[method](...args);

/**
 * The plugin's key-value store, kept by the host between calls. `kv.open(name)` is a bucket the
 * manifest requests (`capabilities: {kv: [name]}`) and the operator grants; `kv.get(key)`,
 * `kv.set(key, value)`, … act on the bucket 'default'.
 */
export const kv = Object.freeze({
  open: openBucket,
  get: onDefault('get'),
  getText: onDefault('getText'),
  getJson: onDefault('getJson'),
  set: onDefault('set'),
  setJson: onDefault('setJson'),
  delete: onDefault('delete'),
  exists: onDefault('exists'),
  keys: onDefault('keys'),
  increment: onDefault('increment'),
  getMany: onDefault('getMany'),
  setMany: onDefault('setMany'),
  deleteMany: onDefault('deleteMany'),
  compareAndSwap: onDefault('compareAndSwap'),
  update: onDefault('update'),
  updateJson: onDefault('updateJson'),
  KvError,
  Bucket,
  DEFAULT: DEFAULT_BUCKET,
});

/**
 * An in-memory store shaped as componentize-qjs gives the three interfaces to a component (a
 * result's error thrown as an Error with the WIT value as `payload`, variants as {tag, val}).
 */
class MemoryKv {
  constructor({ buckets = null, denied = [], pageSize = 100 } = {}) {
    this.buckets = buckets === null ? null : [...buckets];
    this.denied = [...denied];
    this.pageSize = pageSize;
    /** bucket → Map of key → Uint8Array */
    this.data = new Map();
    /** [operation, bucket, detail] of every host call, in order */
    this.calls = [];
    this.failure = null;
    this.versions = new Map();
    const memory = this;
    const thrown = (payload) => Object.assign(new Error(`kv error (see error.payload)`), { payload });
    const check = (op, bucket, detail) => {
      memory.calls.push([op, bucket, detail]);
      if (memory.failure !== null) throw thrown({ tag: 'other', val: memory.failure });
    };
    const mapOf = (name) => {
      if (!memory.data.has(name)) memory.data.set(name, new Map());
      return memory.data.get(name);
    };
    const bytes = (v) => (v instanceof Uint8Array ? Uint8Array.from(v) : Uint8Array.from(v));
    class MemoryBucket {
      constructor(name) {
        this.name = name;
      }
      get(key) {
        check('get', this.name, key);
        return mapOf(this.name).get(key) ?? null;
      }
      set(key, value) {
        check('set', this.name, key);
        memory.write(this.name, key, bytes(value));
      }
      delete(key) {
        check('delete', this.name, key);
        if (mapOf(this.name).delete(key)) memory.bump(this.name, key);
      }
      exists(key) {
        check('exists', this.name, key);
        return mapOf(this.name).has(key);
      }
      listKeys(cursor) {
        check('list-keys', this.name, cursor);
        const names = [...mapOf(this.name).keys()].sort();
        const start = cursor === null || cursor === undefined ? 0 : Number(cursor);
        const page = names.slice(start, start + memory.pageSize);
        const end = start + page.length;
        return { keys: page, cursor: end < names.length ? String(end) : null };
      }
    }
    class Cas {
      constructor(bucket, key) {
        this.bucket = bucket;
        this.key = key;
        this.version = memory.versions.get(`${bucket.name}\0${key}`) ?? 0;
        this.consumed = false;
      }
      static new(bucket, key) {
        check('cas.new', bucket.name, key);
        return new Cas(bucket, key);
      }
      current() {
        if (this.consumed) throw new Error('kv memory store: the CAS handle was used after it was consumed');
        check('cas.current', this.bucket.name, this.key);
        return mapOf(this.bucket.name).get(this.key) ?? null;
      }
    }
    this.bindings = {
      store: {
        open(identifier) {
          check('open', identifier);
          if (memory.denied.includes(identifier)) throw thrown({ tag: 'access-denied' });
          if (memory.buckets !== null && !memory.buckets.includes(identifier)) throw thrown({ tag: 'no-such-store' });
          return new MemoryBucket(identifier);
        },
      },
      atomics: {
        Cas,
        increment(bucket, key, delta) {
          check('increment', bucket.name, key);
          const old = mapOf(bucket.name).get(key);
          const text = old === undefined ? '0' : utf8Decode(old);
          if (!/^-?[0-9]+$/.test(text)) throw thrown({ tag: 'other', val: `the value of \`${key}\` is not a counter (decimal text)` });
          const n = BigInt(text) + BigInt(delta);
          if (n > 2n ** 63n - 1n || n < -(2n ** 63n)) throw thrown({ tag: 'other', val: `the counter \`${key}\` would overflow` });
          memory.write(bucket.name, key, utf8Encode(n.toString()));
          return Number(n);
        },
        swap(cas, value) {
          if (cas.consumed) throw new Error('kv memory store: the CAS handle was used after it was consumed');
          cas.consumed = true;
          try {
            check('swap', cas.bucket.name, cas.key);
          } catch (e) {
            throw thrown({ tag: 'store-error', val: e.payload });
          }
          if ((memory.versions.get(`${cas.bucket.name}\0${cas.key}`) ?? 0) !== cas.version) {
            throw thrown({ tag: 'cas-failed', val: new Cas(cas.bucket, cas.key) });
          }
          memory.write(cas.bucket.name, cas.key, bytes(value));
        },
      },
      batch: {
        getMany(bucket, keys) {
          check('get-many', bucket.name, keys.slice());
          const m = mapOf(bucket.name);
          return keys.map((k) => (m.has(k) ? [k, m.get(k)] : null));
        },
        setMany(bucket, pairs) {
          check('set-many', bucket.name, pairs.map(([k]) => k));
          for (const [k, v] of pairs) memory.write(bucket.name, k, bytes(v));
        },
        deleteMany(bucket, keys) {
          check('delete-many', bucket.name, keys.slice());
          for (const k of keys) if (mapOf(bucket.name).delete(k)) memory.bump(bucket.name, k);
        },
      },
    };
  }

  bump(bucket, key) {
    const id = `${bucket}\0${key}`;
    this.versions.set(id, (this.versions.get(id) ?? 0) + 1);
  }

  write(bucket, key, value) {
    if (!this.data.has(bucket)) this.data.set(bucket, new Map());
    this.data.get(bucket).set(key, value);
    this.bump(bucket, key);
  }

  /** Make every later operation fail with the host error `other(text)`; null: stop. */
  fail(text) {
    this.failure = text;
  }

  /** The text of every value of `bucket`, as a plain object (for assertions). */
  texts(bucket = DEFAULT_BUCKET) {
    return Object.fromEntries([...(this.data.get(bucket) ?? new Map())].map(([k, v]) => [k, utf8Decode(v)]));
  }
}

// ---------------------------------------------------------------------------------------------
// For tests under node.

/** Helpers for testing tools under node, where there is no host. */
export const testing = Object.freeze({
  /** Answer `http` calls with `handler(request)` → {status, body, headers?, url?}; null resets. */
  onHttp(handler) {
    state.testHttp = handler
      ? (req) => {
          const r = handler(req);
          return { status: 200, url: req.url, headers: [], truncated: false, ...r, body: toBytes(r.body ?? '') };
        }
      : null;
  },
  /**
   * Answer `process.run` calls with `handler(program, args)` → {code, stdout, stderr, truncated}
   * (code 0 and empty output by default; strings or bytes); throw to refuse; null resets.
   */
  onProcess(handler) {
    state.testProcess = handler
      ? (program, args) => ({ code: 0, stdout: '', stderr: '', truncated: false, ...handler(program, args) })
      : null;
  },
  /**
   * Install an in-memory key-value store for `kv` under node and return it: `data` (bucket → Map
   * of key → Uint8Array), `calls` (every host operation), `texts(bucket)` (the values as text),
   * `fail(text)` (every later operation fails with the host error `other(text)`). `buckets`: the
   * buckets that exist (null: any name opens); `denied`: buckets that answer access-denied;
   * `pageSize`: keys per `list-keys` page. `testing.reset()` removes it.
   */
  memoryKv(options = {}) {
    state.testKv = new MemoryKv(options);
    state.buckets.clear();
    return state.testKv;
  },
  /** The lines logged so far under node: [{level, message}]. */
  get logs() {
    return state.logs.slice();
  },
  /** The progress reports so far under node: [{done, total?, message}]. */
  get progress() {
    return state.progress.slice();
  },
  /** Forget logged lines, progress reports and the http, process and kv stand-ins. */
  reset() {
    state.logs.length = 0;
    state.progress.length = 0;
    state.testHttp = null;
    state.testProcess = null;
    state.testKv = null;
    state.buckets.clear();
  },
});

/** Not public API: used by toolhost-js and the component's entry module. */
export const __internal = Object.freeze({
  FORMAT,
  LEVELS,
  manifest,
  dispatch,
  read,
  get: getPrompt,
  complete,
  tools: () => state.tools.slice(),
  resources: () => [...state.resources, ...state.templates],
  prompts: () => state.prompts.slice(),
  /** Collect definition errors instead of throwing the first (`toolhost-js manifest`). */
  collectErrors() {
    state.collect = true;
  },
  warnings: () => state.warnings.slice(),
  setBackend(b) {
    state.backend = b;
    state.buckets.clear();
  },
  /** The manifest's plugin name (the component's entry sets it), for kv's access-denied hint. */
  setPluginName(name) {
    state.pluginName = name;
  },
  reset() {
    state.plugin = null;
    state.tools.length = 0;
    state.byName.clear();
    state.resources.length = 0;
    state.templates.length = 0;
    state.byUri.clear();
    state.byTemplate.clear();
    state.resourceNames.clear();
    state.failedTemplates.clear();
    state.templateComplete.clear();
    state.prompts.length = 0;
    state.byPrompt.clear();
    state.failedPrompts.clear();
    state.completions.clear();
    state.backend = null;
    state.testHttp = null;
    state.testProcess = null;
    state.testKv = null;
    state.pluginName = null;
    state.buckets.clear();
    state.logs.length = 0;
    state.progress.length = 0;
    state.errors.length = 0;
    state.warnings.length = 0;
  },
  siteOfStack,
});

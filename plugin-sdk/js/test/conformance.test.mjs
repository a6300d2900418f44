// The SDK conformance table (tests/sdk-conformance/cases.json), run against the JavaScript SDK.
//
// Each case becomes a plugin module written as an author would write it — `definePlugin` and one
// `defineTool` call per tool, with a `run` function taking the params (defaults in its parameter
// list), then its `defineResource`, `defineResourceTemplate`, `definePrompt` and
// `defineCompletion` calls — which is imported, and its manifest derived by the SDK's own
// derivation (what `toolhost-js manifest` prints). The manifest must equal the table's, or the
// DefinitionError must carry the table's message fragment at the author's line. See the table's
// README.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DefinitionError, __internal } from '../index.mjs';

const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TABLE = path.join(SDK, '..', '..', 'tests', 'sdk-conformance', 'cases.json');
const LANG = 'javascript';
const table = JSON.parse(fs.readFileSync(TABLE, 'utf8'));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-conformance-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The table's value with every `{"$repeat": [[piece, times], …]}` written out. */
function expand(v) {
  if (Array.isArray(v)) return v.map(expand);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$repeat') return v.$repeat.map(([piece, times]) => piece.repeat(times)).join('');
    return Object.fromEntries(keys.map((k) => [k, expand(v[k])]));
  }
  return v;
}

const TYPES = { string: 'string', integer: 'integer', number: 'number', boolean: 'boolean', array: 'array', object: 'object', null: 'null', any: 'json' };

/** Refuse a declaration holding a key this runner does not know: the case says something it
 * would otherwise silently leave out. */
function knownKeys(decl, what, known) {
  const unknown = Object.keys(decl).filter((k) => !known.includes(k)).sort();
  if (unknown.length > 0) throw new Error(`a ${what} with the key ${JSON.stringify(unknown[0])}, which the JavaScript runner does not know`);
}

/** The variables of a URI template, in order, read as an author reads them (`{name}`,
 * `{+name}`): even a template the SDK refuses gets the read its author would write. */
function templateVariables(template) {
  return template.split('{').slice(1).filter((part) => part.includes('}')).map((part) => part.split('}')[0].replace(/^\+/, ''));
}

/**
 * The plugin module for one case, with the line of `definePlugin` and of each `defineTool`, and
 * the span ([first line, last line]) of every declaration by kind: `spans.prompt[N]` is what
 * `at: "prompt:N"` points into.
 */
function source(c) {
  const sdk = JSON.stringify(pathToFileURL(path.join(SDK, 'index.mjs')).href);
  const lines = [`import { definePlugin, defineTool, defineResource, defineResourceTemplate, definePrompt, defineCompletion, user } from ${sdk};`, ''];
  const add = (line) => lines.push(line);
  add(`definePlugin(${JSON.stringify(c.plugin ?? {})});`);
  const pluginLine = lines.length;
  const toolLines = [];
  const spans = { resource: [], template: [], prompt: [], completion: [] };
  for (const t of c.tools ?? []) {
    add('');
    add('defineTool({');
    toolLines.push(lines.length);
    const { params = [], options = {}, ...rest } = t;
    for (const [key, value] of Object.entries({ ...rest, ...options })) add(`  ${key}: ${JSON.stringify(value)},`);
    const declared = params.map((p) => {
      const out = { name: p.name };
      if (p.schema !== undefined) out.schema = p.schema;
      else out.type = TYPES[p.type ?? 'string'] ?? p.type;
      if (p.description !== undefined) out.description = p.description;
      if (p.optional || p.default !== undefined) out.optional = true;
      return out;
    });
    add(`  params: ${JSON.stringify(declared)},`);
    const signature = params.map((p) => (p.default === undefined ? p.name : `${p.name} = ${JSON.stringify(p.default)}`));
    add(`  run(${signature.join(', ')}) {`);
    add(`    return [${params.map((p) => p.name).join(', ')}];`);
    add('  },');
    add('});');
  }
  // One `defineX({…})` call: each option on its line, then the function; its span.
  const declare = (kind, fn, options, body) => {
    add('');
    add(`${fn}({`);
    const start = lines.length;
    for (const [key, value] of Object.entries(options)) add(`  ${key}: ${JSON.stringify(value)},`);
    for (const line of body) add(`  ${line}`);
    add('});');
    spans[kind].push([start, lines.length]);
  };
  // In the README's order, completions last: after what they complete, as an author writes them.
  for (const r of c.resources ?? []) {
    knownKeys(r, 'resource', ['uri', 'name', 'title', 'description', 'mimeType', 'size']);
    declare('resource', 'defineResource', r, ['read() {', "  return 'x';", '},']);
  }
  for (const r of c.resourceTemplates ?? []) {
    knownKeys(r, 'resource template', ['uriTemplate', 'name', 'title', 'description', 'mimeType']);
    // A variable used twice (which the SDK refuses) is still one parameter: JavaScript allows no other.
    const variables = [...new Set(templateVariables(r.uriTemplate))];
    declare('template', 'defineResourceTemplate', r, [`read(${variables.join(', ')}) {`, "  return 'x';", '},']);
  }
  for (const p of c.prompts ?? []) {
    knownKeys(p, 'prompt', ['name', 'title', 'description', 'arguments']);
    const { arguments: args = [], ...options } = p;
    // The SDK's spelling: `required: true` on the arguments that are not `optional`.
    const declared = args.map((a) => {
      knownKeys(a, 'prompt argument', ['name', 'description', 'optional']);
      const out = { name: a.name };
      if (a.description !== undefined) out.description = a.description;
      if (!a.optional) out.required = true;
      return out;
    });
    declare('prompt', 'definePrompt', { ...options, arguments: declared }, [
      `get(${args.map((a) => a.name).join(', ')}) {`,
      "  return user('x');",
      '},',
    ]);
  }
  for (const k of c.completions ?? []) {
    knownKeys(k, 'completion', ['prompt', 'template', 'argument']);
    if (('prompt' in k) === ('template' in k)) throw new Error('a completion names exactly one of `prompt` and `template`');
    declare('completion', 'defineCompletion', k, ['complete(value) {', '  return [value];', '},']);
  }
  return { text: lines.join('\n') + '\n', lines, pluginLine, toolLines, spans };
}

let counter = 0;

async function runCase(raw) {
  const c = expand(raw);
  const src = source(c);
  const file = path.join(dir, `case-${++counter}-${c.id}.mjs`);
  fs.writeFileSync(file, src.text);
  const listing = src.lines.map((l, i) => `${String(i + 1).padStart(3)} ${l}`).join('\n');
  __internal.reset();
  let manifest;
  let error;
  try {
    await import(pathToFileURL(file).href);
    manifest = __internal.manifest({}, { file, line: 1 });
  } catch (e) {
    error = e;
  }
  if (c.manifest) {
    assert.equal(error, undefined, `refused: ${error && `${error.file}:${error.line}: ${error.message}`}\n${listing}`);
    assert.deepEqual(manifest, c.manifest, listing);
    for (const call of c.calls ?? []) {
      const tool = call.tool ?? manifest.tools[0].name;
      let out;
      try {
        out = __internal.dispatch(tool, call.args);
      } catch (e) {
        assert.fail(`${JSON.stringify(call)}: ${e}`);
      }
      assert.deepEqual(JSON.parse(out), call.returns, JSON.stringify(call));
    }
    return;
  }
  const want = c.error;
  assert.ok(error instanceof DefinitionError, `expected a DefinitionError (rule ${want.rule}), got ${error ?? 'a manifest'}\n${listing}`);
  assert.ok(error.message.includes(want.message), `rule ${want.rule}: ${JSON.stringify(want.message)} not in ${JSON.stringify(error.message)}\n${listing}`);
  assert.equal(error.file, file, error.message);
  if (want.at === 'plugin') assert.equal(error.line, src.pluginLine, `${error.message}\n${listing}`);
  else if (want.at.startsWith('tool:')) assert.equal(error.line, src.toolLines[Number(want.at.slice(5))], `${error.message}\n${listing}`);
  else if (/^(resource|template|prompt|completion):\d+$/.test(want.at)) {
    const [kind, index] = want.at.split(':');
    const span = src.spans[kind][Number(index)];
    assert.ok(span, `${want.at}: the case declares no such ${kind}`);
    const [start, end] = span;
    assert.ok(start <= error.line && error.line <= end, `line ${error.line} is not in ${start}..${end}: ${error.message}\n${listing}`);
  } else assert.equal(want.at, 'module');
}

for (const c of table.cases) {
  test(c.id, { skip: c.skip?.[LANG] ?? false }, () => runCase(c));
}

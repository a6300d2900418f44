// The SDK conformance table (tests/sdk-conformance/cases.json), run against the JavaScript SDK.
//
// Each case becomes a plugin module written as an author would write it — `definePlugin` and one
// `defineTool` call per tool, with a `run` function taking the params (defaults in its parameter
// list) — which is imported, and its manifest derived by the SDK's own derivation (what
// `toolhost-js manifest` prints). The manifest must equal the table's, or the DefinitionError
// must carry the table's message fragment at the author's line. See the table's README.
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

/** The plugin module for one case, with the line of `definePlugin` and of each `defineTool`. */
function source(c) {
  const lines = [`import { definePlugin, defineTool } from ${JSON.stringify(pathToFileURL(path.join(SDK, 'index.mjs')).href)};`, ''];
  const add = (line) => lines.push(line);
  add(`definePlugin(${JSON.stringify(c.plugin ?? {})});`);
  const pluginLine = lines.length;
  const toolLines = [];
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
  return { text: lines.join('\n') + '\n', lines, pluginLine, toolLines };
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
  else assert.equal(want.at, 'module');
}

for (const c of table.cases) {
  test(c.id, { skip: c.skip?.[LANG] ?? false }, () => runCase(c));
}

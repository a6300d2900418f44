// defineTool/definePlugin checks, in process: each misuse throws a DefinitionError located at
// the line of the offending call in this file.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { defineTool, definePlugin, DefinitionError, functionParams, __internal } from '../index.mjs';

const HERE = fileURLToPath(import.meta.url);

beforeEach(() => __internal.reset());

/** Line of the caller of this helper, to compare with a DefinitionError's line. */
function lineHere() {
  const frame = new Error().stack.split('\n')[2];
  return Number(/:(\d+):\d+\)?$/.exec(frame)[1]);
}

function rejects(make, pattern) {
  let err;
  try {
    make();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof DefinitionError, `expected a DefinitionError, got ${err}`);
  assert.match(err.message, pattern);
  assert.equal(err.file, HERE);
  return err;
}

const base = { name: 't', description: 'A tool.', run: () => 'x' };

test('a misuse names the file and line of the defineTool call', () => {
  const line = lineHere(); const err = rejects(() => defineTool({ ...base, bogus: 1 }), /unknown tool option `bogus`/);
  assert.equal(err.line, line);
});

test('a call spread over lines is located at its first line', () => {
  const line = lineHere() + 2;
  const err = rejects(() =>
    defineTool({
      name: 't',
      description: 'A tool.',
      params: [{ name: 'a' }],
      run(a, b) {
        return a + b;
      },
    }),
  /declares 1 param \(a\) but run takes 2 \(a, b\)/);
  assert.equal(err.line, line);
});

test('unknown keys suggest the right spelling', () => {
  rejects(() => defineTool({ ...base, read_only: true }), /unknown tool option `read_only`; did you mean `readOnly`\?/);
  rejects(() => defineTool({ ...base, outputlimit: 5 }), /did you mean `outputLimit`/);
  rejects(() => defineTool({ ...base, params: [{ name: 'x', optinal: true }], run: (x) => x }), /unknown params\[0\] option `optinal`; did you mean `optional`/);
  rejects(() => definePlugin({ name: 'p', capabilites: {} }), /unknown plugin option `capabilites`; did you mean `capabilities`/);
  rejects(() => definePlugin({ name: 'p', capabilities: { secret: ['a'] } }), /did you mean `secrets`/);
});

test('params are checked against run by count and by name', () => {
  rejects(() => defineTool({ ...base, params: [{ name: 'a' }, { name: 'b' }], run: (a) => a }), /declares 2 params \(a, b\) but run takes 1 \(a\)/);
  rejects(() => defineTool({ ...base, params: [{ name: 'from' }, { name: 'to' }], run: (to, from) => to + from }), /param 1 is declared as `from` but run's parameter 1 is `to`/);
  rejects(() => defineTool({ ...base, params: [], run: function (a) { return a; } }), /declares 0 params \(\) but run takes 1 \(a\)/);
});

test('a default value needs optional, and optional params must trail', () => {
  rejects(() => defineTool({ ...base, params: ['a', 'b'], run: (a, b = 1) => a + b }), /`b` has a default value but the param is not declared `optional: true`/);
  rejects(() => defineTool({ ...base, params: [{ name: 'a', optional: true }, 'b'], run: (a, b) => a + b }), /required param `b` cannot follow the optional param `a`/);
  // Derived from run: a default makes the param optional, and then order matters too.
  rejects(() => defineTool({ ...base, run: (a = 1, b) => a + b }), /required param `b` cannot follow the optional param `a`/);
});

test('rest needs a trailing required string param', () => {
  rejects(() => defineTool({ ...base, rest: true }), /`rest` needs at least one parameter/);
  rejects(() => defineTool({ ...base, rest: true, params: [{ name: 'n', type: 'integer' }], run: (n) => n }), /last parameter `n` must be a required 'string'/);
  rejects(() => defineTool({ ...base, rest: true, params: [{ name: 's', optional: true }], run: (s) => s }), /last parameter `s` must be a required 'string'/);
});

test('JavaScript rest parameters, patterns, async and non-functions are refused', () => {
  rejects(() => defineTool({ ...base, run: (...parts) => parts.join() }), /`\.\.\.parts` is a rest parameter; .*use `rest: true`/);
  rejects(() => defineTool({ ...base, run: ({ a }) => a }), /`\{ a \}` must be a plain name, not a pattern/);
  rejects(() => defineTool({ ...base, run: async () => 'x' }), /`run` is async; tools are synchronous/);
  rejects(() => defineTool({ ...base, run: 'x' }), /`run` must be a function/);
  rejects(() => defineTool({ ...base, run: undefined }), /`run` must be a function/);
});

test('names, descriptions, types and option values are checked', () => {
  rejects(() => defineTool({ ...base, name: 'bad-name' }), /tool name "bad-name" must match/);
  rejects(() => defineTool({ ...base, name: undefined }), /has no `name`/);
  rejects(() => defineTool({ ...base, description: '  ' }), /tool `t` has no description: give `description`, a non-empty string/);
  rejects(() => defineTool({ ...base, params: [{ name: 'x', type: 'int' }], run: (x) => x }), /`type` "int" is not one of 'string', 'number', 'integer'/);
  rejects(() => defineTool({ ...base, params: [{ name: 'x', type: 'string', schema: {} }], run: (x) => x }), /`schema` is for JSON params/);
  rejects(() => defineTool({ ...base, params: ['x', 'x'], run: function (x, y) { return x + y; } }), /param 2 is declared as `x` but run's parameter 2 is `y`/);
  rejects(() => defineTool({ ...base, params: ['$x'], run: ($x) => $x }), /param name "\$x" must match/);
  rejects(() => defineTool({ ...base, danger: 'yes' }), /`danger` is a flag: true or false, got "yes"/);
  rejects(() => defineTool({ ...base, outputLimit: 0 }), /`outputLimit` must be a whole number of characters, at least 1/);
  rejects(() => defineTool({ ...base, outputLimit: 1.5 }), /`outputLimit`/);
  rejects(() => defineTool({ ...base, category: '' }), /`category` must not be empty/);
  rejects(() => defineTool({ ...base, outputSchema: { type: 'array' } }), /`outputSchema` must describe an object/);
  rejects(() => defineTool({ ...base, outputSchema: 'object' }), /`outputSchema`/);
  rejects(() => defineTool('nope'), /defineTool takes an object/);
});

test('a tool name used twice points at the first definition', () => {
  const first = lineHere(); defineTool(base);
  const err = rejects(() => defineTool(base), /tool `t` is defined twice; the first definition is at .*define\.test\.mjs:(\d+)/);
  assert.equal(Number(/:(\d+)$/.exec(err.message)[1]), first);
});

test('definePlugin checks its fields and may be called once', () => {
  rejects(() => definePlugin({ name: 'has space' }), /plugin name "has space" must match/);
  rejects(() => definePlugin({ version: '' }), /plugin `version` must not be empty/);
  rejects(() => definePlugin({ capabilities: { fs: ['workspace:rwx'] } }), /`fs` takes "NAME:ro" or "NAME:rw" \(or \{path, mode\}\), e\.g\. "workspace:rw"; `capabilities\.fs\[0\]` is "workspace:rwx"/);
  rejects(() => definePlugin({ capabilities: { env: ['A=B'] } }), /`capabilities\.env\[0\]` "A=B" is not an environment variable name/);
  rejects(() => definePlugin({ capabilities: { net: 'example.com' } }), /`capabilities\.net` must be an array/);
  definePlugin({ name: 'p' });
  rejects(() => definePlugin({ name: 'p' }), /definePlugin is called twice/);
});

test('function parameter lists are read from source', () => {
  const names = (fn) => functionParams(fn).map((p) => [p.name, p.hasDefault]);
  assert.deepEqual(names((a, b) => a + b), [['a', false], ['b', false]]);
  assert.deepEqual(names((a) => a), [['a', false]]);
  assert.deepEqual(names(function named(first, /* c, d */ second = '(,)', third = { x: [1, 2] }) { return [first, second, third]; }), [['first', false], ['second', true], ['third', true]]);
  const obj = { run(text, sep = `,${'('}`,) { return text + sep; } };
  assert.deepEqual(names(obj.run), [['text', false], ['sep', true]]);
  assert.deepEqual(names(() => 1), []);
  assert.equal(functionParams(Math.max), null);
  assert.equal(functionParams(((a) => a).bind(null)), null);
});

test('a bound run needs explicit params and is checked by length', () => {
  const bound = ((a, b) => a + b).bind(null);
  rejects(() => defineTool({ ...base, run: bound }), /native or bound function, so give `params`/);
  rejects(() => defineTool({ ...base, params: ['a'], run: bound }), /declares 1 params but run takes 2/);
  const ok = defineTool({ ...base, params: ['a', 'b'], run: bound });
  assert.equal(ok.spec.argCount, 2);
});

test('an outputSchema is written to the manifest entry as given', () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  const t = defineTool({ ...base, outputSchema: schema, run: () => ({ n: 1 }) });
  assert.deepEqual(t.spec.outputSchema, schema);
  assert.equal(defineTool({ ...base, name: 'plain' }).spec.outputSchema, undefined);
});

test('free text is held to the host caps, at the defineTool or definePlugin line', () => {
  const line = lineHere(); const err = rejects(() => defineTool({ ...base, description: 'd'.repeat(4097) }), /tool `t`: `description` is 4097 characters long; the host allows at most 4096/);
  assert.equal(err.line, line);
  // Characters are code points: 4096 emoji (8192 UTF-16 units) fit.
  assert.equal(defineTool({ ...base, name: 'emoji', description: '😀'.repeat(4096) }).spec.description.length, 8192);
  rejects(() => defineTool({ ...base, description: 'Lists files.\u001b[2K' }), /`description` contains the control character U\+001B; only tabs and line breaks/);
  rejects(() => defineTool({ ...base, params: [{ name: 'x', description: 'p'.repeat(1025) }], run: (x) => x }), /param `x`: `description` is 1025 characters long/);
  rejects(() => defineTool({ ...base, category: 'files\nDANGEROUS' }), /`category` contains the control character U\+000A; it must be one line/);
  rejects(() => defineTool({ ...base, category: 'c'.repeat(65) }), /`category` is 65 characters long/);
  rejects(() => defineTool({ ...base, outputSchema: { type: 'object', description: 's'.repeat(20000) } }), /`outputSchema` is 20034 bytes of JSON; the host allows at most 16384/);
  rejects(() => defineTool({ ...base, params: [{ name: 'x', type: 'json', schema: { enum: ['v'.repeat(17000)] } }], run: (x) => x }), /param `x`: `schema` is 17013 bytes of JSON/);
  rejects(() => definePlugin({ description: 'd'.repeat(1025) }), /plugin `description` is 1025 characters long/);
  rejects(() => definePlugin({ version: '1.0\u0000' }), /plugin `version` contains the control character U\+0000/);
  // A multi-line description (a template literal) is fine: the host folds it into one line.
  const multi = defineTool({ ...base, name: 'multi', description: `Counts words.\n\tLines too.`, category: 'c'.repeat(64) });
  assert.equal(multi.spec.description, 'Counts words.\n\tLines too.');
});

test('the manifest checks the version and description package.json gives', () => {
  defineTool(base);
  assert.throws(() => __internal.manifest({ name: 'p', version: 'v'.repeat(65) }), /the plugin `version` is 65 characters long/);
  assert.throws(() => __internal.manifest({ name: 'p', version: '1', description: 'x\u0007' }), /the plugin `description` contains the control character U\+0007/);
  assert.equal(__internal.manifest({ name: 'p', version: '1', description: 'd'.repeat(1024) }).description.length, 1024);
});

test('exec requests are checked at the definePlugin line and written only when made', () => {
  definePlugin({ name: 'p', capabilities: { exec: ['git', 'xdg-open', '*'] } });
  defineTool(base);
  const m = __internal.manifest({ version: '1' });
  assert.deepEqual(Object.keys(m.capabilities), ['fs', 'env', 'net', 'secrets', 'exec']);
  assert.deepEqual(m.capabilities.exec, ['git', 'xdg-open', '*']);
  __internal.reset();
  definePlugin({ name: 'p', capabilities: { net: ['*'] } });
  defineTool(base);
  assert.equal('exec' in __internal.manifest({ version: '1' }).capabilities, false);
  for (const program of ['/usr/bin/git', 'bin/git', '..', '', 'git log', 'x'.repeat(256), 5]) {
    __internal.reset();
    const line = lineHere(); const err = rejects(() => definePlugin({ capabilities: { exec: [program] } }), /`capabilities\.exec\[0\]` .* is not a program name such as "git" \(no paths/);
    assert.equal(err.line, line);
  }
  __internal.reset();
  const line = lineHere(); const err = rejects(() => definePlugin({ name: 'p'.repeat(65) }), /must match \[A-Za-z_\]\[A-Za-z0-9_-\]\* \(at most 64 chars\)/);
  assert.equal(err.line, line);
});

test('a param name outside ASCII is read whole and refused by the name rule', () => {
  rejects(() => defineTool({ ...base, run: (größe) => größe }), /param name "größe" must match \[A-Za-z_\]\[A-Za-z0-9_\]\* \(at most 64 chars\)/);
  rejects(() => defineTool({ ...base, run: (ok, größe = 1) => ok + größe }), /param name "größe" must match/);
});

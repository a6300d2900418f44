// `toolhost-js manifest` on real project folders: the manifest it prints, and every misuse as
// `FILE:LINE: error: message` on stderr with exit code 1. Each case marks its expected line with
// `// <- here`.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(SDK, 'bin', 'toolhost-js.mjs');

// Every project folder a case made, removed once the file's cases have run.
const made = [];
after(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function project(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-test-'));
  made.push(dir);
  const all = {
    'package.json': JSON.stringify({ name: 'demo', version: '0.2.0', description: 'Demo.', type: 'module', toolhost: { main: 'plugin.js' } }, null, 2),
    ...files,
  };
  for (const [name, text] of Object.entries(all)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

function cli(args, cwd) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function markedLine(text) {
  const i = text.split('\n').findIndex((l) => l.includes('// <- here'));
  assert.ok(i >= 0, 'the case marks its line');
  return i + 1;
}

test('manifest: derived from the code, defaults from package.json', () => {
  const dir = project({
    'plugin.js': `import { definePlugin, defineTool } from 'toolhost-sdk';
import { words } from './lib/words.js';
definePlugin({ capabilities: { fs: ['workspace:rw'], net: ['api.example.com'], secrets: ['api_token'], env: ['HOME'] } });
export const count = defineTool({
  name: 'count_words',
  description: 'Count words.',
  params: [{ name: 'text', type: 'string', description: 'the text' }],
  rest: true, readOnly: true, category: 'text', outputLimit: 100,
  run: (text) => words(text).length,
});
export const plan = defineTool({
  name: 'plan', description: 'Plan.', danger: true,
  params: [{ name: 'steps', schema: { type: 'array' } }, { name: 'days', type: 'number', optional: true }, { name: 'any', type: 'json', optional: true }],
  run(steps, days, any) { return steps; },
});
`,
    'lib/words.js': 'export const words = (t) => t.split(/\\s+/).filter(Boolean);\n',
  });
  const r = cli(['manifest', dir]);
  assert.equal(r.stderr, '');
  assert.equal(r.code, 0);
  assert.deepEqual(JSON.parse(r.stdout), {
    format: 1,
    name: 'demo',
    version: '0.2.0',
    description: 'Demo.',
    capabilities: { fs: [{ path: 'workspace', mode: 'rw' }], env: ['HOME'], net: ['api.example.com'], secrets: ['api_token'] },
    tools: [
      {
        name: 'count_words', description: 'Count words.',
        params: [{ name: 'text', type: 'string', description: 'the text', optional: false }],
        argCount: 1, parseJson: [false], rest: true, outputLimit: 100, danger: false, readOnly: true, category: 'text',
      },
      {
        name: 'plan', description: 'Plan.',
        params: [
          { name: 'steps', type: { type: 'array' }, description: '', optional: false },
          { name: 'days', type: 'number', description: '', optional: true },
          { name: 'any', type: {}, description: '', optional: true },
        ],
        argCount: 3, parseJson: [true, true, true], rest: false, danger: true, readOnly: false,
      },
    ],
  });
});

test('manifest: definePlugin overrides package.json; a scoped package name loses its scope', () => {
  const dir = project({
    'package.json': JSON.stringify({ name: '@acme/notes', version: '1.0.0', type: 'module', toolhost: { main: 'src/main.mjs' } }),
    'src/main.mjs': `import { definePlugin, defineTool } from 'toolhost-sdk';
defineTool({ name: 'a', description: 'A.', run: () => 'a' });
`,
  });
  let m = JSON.parse(cli(['manifest', dir]).stdout);
  assert.equal(m.name, 'notes');
  assert.equal(m.version, '1.0.0');
  assert.equal(m.description, '');
  fs.writeFileSync(path.join(dir, 'src/main.mjs'), `import { definePlugin, defineTool } from 'toolhost-sdk';
definePlugin({ name: 'other', version: '2.0.0', description: 'Other.' });
defineTool({ name: 'a', description: 'A.', run: () => 'a' });
`);
  m = JSON.parse(cli(['manifest', dir]).stdout);
  assert.deepEqual([m.name, m.version, m.description], ['other', '2.0.0', 'Other.']);
});

const header = "import { definePlugin, defineTool } from 'toolhost-sdk';\n";
const misuse = [
  ['unknown option', `defineTool({ name: 't', description: 'T.', run: () => 1, readonly: true }); // <- here`, /unknown tool option `readonly`; did you mean `readOnly`\?/],
  ['param count', `export const t = defineTool({ // <- here
  name: 't',
  description: 'T.',
  params: [{ name: 'a' }],
  run(a, b) { return a + b; },
});`, /tool `t`: declares 1 param \(a\) but run takes 2 \(a, b\)/],
  ['param name', `defineTool({ name: 't', description: 'T.', params: ['path'], run: (file) => file }); // <- here`, /param 1 is declared as `path` but run's parameter 1 is `file`/],
  ['rest on a JSON param', `defineTool({ name: 't', description: 'T.', rest: true, params: [{ name: 'n', type: 'number' }], run: (n) => n }); // <- here`, /with `rest`, the last parameter `n` must be a required 'string'/],
  ['optional before required', `defineTool({ name: 't', description: 'T.', params: [{ name: 'a', optional: true }, 'b'], run: (a, b) => a }); // <- here`, /required param `b` cannot follow the optional param `a`/],
  ['duplicate tool', `defineTool({ name: 't', description: 'T.', run: () => 1 });
defineTool({ name: 't', description: 'T again.', run: () => 2 }); // <- here`, /tool `t` is defined twice; the first definition is at .*plugin\.js:2/],
  ['async run', `defineTool({ name: 't', description: 'T.', async run() { return 1; } }); // <- here`, /`run` is async/],
  ['definePlugin twice', `definePlugin({ name: 'a' });
definePlugin({ name: 'b' }); // <- here`, /definePlugin is called twice; the first call is at .*plugin\.js:2/],
  ['bad capability', `definePlugin({ capabilities: { fs: ['workspace:write'] } }); // <- here`, /`capabilities\.fs\[0\]` is "workspace:write"/],
  ['no tools', `definePlugin({ name: 'empty' }); // <- here`, /the plugin declares no tools/],
  ['a throw at top level', `defineTool({ name: 't', description: 'T.', run: () => 1 });
const config = JSON.parse('{'); // <- here`, /SyntaxError: /],
  ['a syntax error', `defineTool({ name: 't', description: 'T.', run: () => 1 });
const = 5; // <- here`, /SyntaxError: Unexpected token/],
  ['a missing import', `import { nope } from './missing.js'; // <- here`, /Cannot find module/],
];

for (const [name, body, message] of misuse) {
  test(`misuse: ${name} → FILE:LINE: error`, () => {
    const source = header + body + '\n';
    // The header imports; a case may add its own import, which must come first in the file.
    const text = body.startsWith('import') ? body + '\n' : source;
    const dir = project({ 'plugin.js': text });
    const r = cli(['manifest', dir], dir);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '');
    const m = /^(.*):(\d+): error: (.*)\n$/s.exec(r.stderr);
    assert.ok(m, `stderr is FILE:LINE: error: …, got ${JSON.stringify(r.stderr)}`);
    assert.equal(m[1], 'plugin.js', 'the file is shown relative to the working directory');
    assert.equal(Number(m[2]), markedLine(text));
    assert.match(m[3], message);
  });
}

test('misuse: package.json problems name package.json and the line', () => {
  const cases = [
    [{ 'package.json': '{"name": "x",\n  "version": 1,\n}' }, 3, /not valid JSON/],
    [{ 'package.json': '{"name": "x", "type": "module"}' }, 1, /no "toolhost" field: add "toolhost": \{"main": "plugin.js"\}/],
    [{ 'package.json': '{"name": "x", "type": "module",\n "toolhost": {"main": "nope.js"}}' }, 2, /"toolhost.main" names "nope.js", which does not exist/],
    [{ 'package.json': '{"name": "x", "type": "module",\n "toolhost": {"main": "plugin.js", "entry": 1}}' }, 2, /unknown "toolhost" field "entry"/],
    [{ 'package.json': '{"name": "x",\n "toolhost": {"main": "plugin.js"}}', 'plugin.js': '' }, 1, /must be an ES module: add "type": "module"/],
    [{ 'package.json': '{"name": "x", "type": "module",\n "toolhost": {"main": "../plugin.js"}}' }, 2, /is outside the project folder/],
  ];
  for (const [files, line, message] of cases) {
    const dir = project(files);
    const r = cli(['manifest', dir], dir);
    assert.equal(r.code, 1, r.stderr);
    const m = /^package\.json:(\d+): error: (.*)\n$/s.exec(r.stderr);
    assert.ok(m, `got ${JSON.stringify(r.stderr)}`);
    assert.equal(Number(m[1]), line, m[2]);
    assert.match(m[2], message);
  }
});

test('misuse: the plugin name must be valid for the host', () => {
  const dir = project({
    'package.json': JSON.stringify({ name: 'my.plugin', version: '1.0.0', type: 'module', toolhost: { main: 'plugin.js' } }),
    'plugin.js': header + "defineTool({ name: 't', description: 'T.', run: () => 1 });\n",
  });
  const r = cli(['manifest', dir], dir);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^plugin\.js:1: error: plugin name "my\.plugin" must match \[A-Za-z_\]\[A-Za-z0-9_-\]\*/);
});

test('usage errors exit 2', () => {
  assert.equal(cli([]).code, 2);
  assert.equal(cli(['bogus']).code, 2);
  assert.equal(cli(['manifest']).code, 2);
  const r = cli(['componentize', '.']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /componentize needs -o OUT\.wasm/);
});

test('the test command runs node --test with toolhost-sdk resolvable', () => {
  const dir = project({
    'plugin.js': header + "export const up = defineTool({ name: 'up', description: 'Up.', run: (s) => s.toUpperCase() });\n",
    'plugin.test.js': `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { up } from './plugin.js';
test('up', () => { assert.equal(up.run('a'), 'A'); assert.equal(up.call('b'), 'B'); });
`,
  });
  const r = spawnSync(process.execPath, [CLI, 'test', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /# pass 1/);
  fs.writeFileSync(path.join(dir, 'plugin.test.js'), "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\ntest('fails', () => assert.equal(1, 2));\n");
  const failing = spawnSync(process.execPath, [CLI, 'test', dir], { encoding: 'utf8' });
  assert.notEqual(failing.status, 0);
});

test('manifest: every definition error of the module at once, a param without a type a warning', () => {
  const dir = project({
    'plugin.js': `import { defineTool } from 'toolhost-sdk';
defineTool({ name: 'a', description: 'A.', params: [{ name: 'x', type: 'text' }], run(x) {} });
defineTool({ name: 'b', description: '', run() {} });
defineTool({ name: 'c', description: 'C.', params: [{ name: 'unit', type: 'string', optional: true }], run(unit = 5) {} });
defineTool({ name: 'd', description: 'D.', params: [{ name: 'y' }], run(y) {} });
`,
  });
  const r = cli(['manifest', dir], dir);
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr,
    [
      "plugin.js:2: error: tool `a`: param `x`: `type` \"text\" is not one of 'string', 'number', 'integer', 'boolean', 'object', 'array', 'null', 'json'",
      'plugin.js:3: error: tool `b` has no description: give `description`, a non-empty string (the model reads it to choose the tool)',
      "plugin.js:4: error: tool `c`: param `unit`: its default 5 is not a string, the param's type",
      'toolhost-js: 3 errors; nothing was built',
      '',
    ].join('\n'),
  );
  // A param without a type is text, with a warning at its tool.
  fs.writeFileSync(path.join(dir, 'plugin.js'), `import { defineTool } from 'toolhost-sdk';
defineTool({ name: 'd', description: 'D.', params: [{ name: 'y' }], run(y) {} });
`);
  const r2 = cli(['manifest', dir], dir);
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(r2.stderr, "plugin.js:2: warning: tool `d`: param `y`: no `type`, so it is text: write type: 'string' (or the JSON type it takes)\n");
});

test('manifest: a default in run\'s parameter list is the param\'s default', () => {
  const dir = project({
    'plugin.js': `import { defineTool } from 'toolhost-sdk';
defineTool({
  name: 'convert_units', description: 'Convert.',
  params: [{ name: 'distance', type: 'number' }, { name: 'to_unit', type: 'string', optional: true }, { name: 'digits', type: 'integer', optional: true }],
  run(distance, to_unit = 'mi', digits = 2) { return [distance, to_unit, digits]; },
});
`,
  });
  const r = cli(['manifest', dir], dir);
  assert.equal(r.code, 0, r.stderr);
  const params = JSON.parse(r.stdout).tools[0].params;
  assert.deepEqual(params.map((p) => p.default), [undefined, 'mi', 2]);
  assert.equal(params[0].type, 'number');
});

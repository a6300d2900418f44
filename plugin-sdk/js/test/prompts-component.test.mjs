// Prompts and completion through a real component, without the host: a plugin componentized for
// `plugin-full` (and the `toolhost dev` runtime) exports `prompts` and `completion`, and jco's
// transpilation of it, run under node with stand-ins for the toolhost imports, answers `get` and
// `complete` through the component model's own lifting and lowering. Needs jco, so it runs only
// when it is given:
//   TOOLHOST_JCO=target/jstool/node_modules/.bin/jco node --test plugin-sdk/js/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(SDK, '..', '..');
const CLI = path.join(SDK, 'bin', 'toolhost-js.mjs');
const JCO = process.env.TOOLHOST_JCO && path.resolve(process.env.TOOLHOST_JCO);
const skip = JCO ? false : 'set TOOLHOST_JCO to build a component';

const PLUGIN = `import { defineCompletion, definePrompt, defineResourceTemplate, defineTool, assistant, resourceLink, user } from 'toolhost-sdk';
export const ping = defineTool({ name: 'ping', description: 'Ping.', run: () => 'pong' });
export const file = defineResourceTemplate({ uriTemplate: 'file:///{+path}', name: 'file', read: (path) => path });
export const summarise = definePrompt({
  name: 'summarise-file',
  arguments: [{ name: 'path', required: true }, { name: 'style' }],
  get(path, style = 'short') {
    if (path === 'x') throw new Error('no x');
    if (path === 'd') return { description: 'About d', messages: [assistant('Sure.')] };
    return [user(\`Summarise \${path} (\${style}).\`), resourceLink(\`file:///\${path}\`, path, { mimeType: 'text/plain' })];
  },
});
export const paths = defineCompletion({ prompt: summarise, argument: 'path', complete: (value, context) => [value + '1', JSON.stringify(context)] });
export const files = defineCompletion({ template: file, argument: 'path', complete: (value) => [value + '.txt'] });
`;

// What the transpiled component is asked, and what it must answer (a thrown error's payload as
// {err}).
const CALLS = `
const answer = (f) => { try { return { ok: f() }; } catch (e) { return { err: e && e.payload !== undefined ? e.payload : String(e) }; } };
const out = [
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'a.txt']] })),
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'd'], ['style', 'long']] })),
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'x']] })),
  answer(() => c.prompts.get({ name: 'nope', arguments: [] })),
  answer(() => c.completion.complete({ target: { tag: 'prompt', val: 'summarise-file' }, argument: 'path', value: 'sr', context: [['style', 'long']] })),
  answer(() => c.completion.complete({ target: { tag: 'resource-template', val: 'file:///{+path}' }, argument: 'path', value: 'src/a', context: [] })),
  answer(() => c.completion.complete({ target: { tag: 'resource-template', val: 'file:///{+path}' }, argument: 'nope', value: '', context: [] })),
];
process.stdout.write(JSON.stringify(out));
`;

const EXPECTED = [
  {
    ok: {
      messages: [
        { role: 'user', content: { tag: 'text', val: 'Summarise a.txt (short).' } },
        { role: 'user', content: { tag: 'resource-link', val: { uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain' } } },
      ],
    },
  },
  { ok: { description: 'About d', messages: [{ role: 'assistant', content: { tag: 'text', val: 'Sure.' } }] } },
  { err: 'no x' },
  { err: 'this plugin has no prompt nope' },
  { ok: ['sr1', '{"style":"long"}'] },
  { ok: ['src/a.txt'] },
  { err: 'this plugin completes nothing for nope' },
];

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}\n${r.stderr}`);
  return r.stdout;
}

/** The jco command line: the script under node, or the executable. */
const jco = (...args) => (/\.(m?js|cjs)$/.test(JCO) ? run(process.execPath, [JCO, ...args]) : run(JCO, args));

/** The exports `jco wit` shows for a component. */
const exportsOf = (wasm) => [...jco('wit', wasm).matchAll(/export (toolhost:plugin\/[a-z-]+)@/g)].map((m) => m[1]).sort();

/** Transpile `wasm` and run CALLS against it under node (with `prelude` before the import). */
function callTranspiled(wasm, dir, prelude = '') {
  const out = path.join(dir, 'transpiled');
  const stubs = { host: 'export function log() {}\nexport function progress() {}\n', http: "export function send() { throw 'no http'; }\n", process: "export function run() { throw 'no process'; }\n" };
  // The world imports wasi:keyvalue too (unused here): stand-ins that refuse.
  const kvStubs = {
    store: "export class Bucket {}\nexport function open() { throw { payload: { tag: 'no-such-store' } }; }\n",
    atomics: "export class Cas {}\nexport function increment() {}\nexport function swap() {}\n",
    batch: 'export function getMany() {}\nexport function setMany() {}\nexport function deleteMany() {}\n',
  };
  const maps = [
    ...Object.keys(stubs).flatMap((n) => ['--map', `toolhost:plugin/${n}@0.1.0=./stub-${n}.js`]),
    ...Object.keys(kvStubs).flatMap((n) => ['--map', `wasi:keyvalue/${n}@0.2.0-draft2=./stub-kv-${n}.js`]),
  ];
  jco('transpile', wasm, '-o', out, '--name', 'component', ...maps);
  for (const [n, src] of Object.entries(stubs)) fs.writeFileSync(path.join(out, `stub-${n}.js`), src);
  for (const [n, src] of Object.entries(kvStubs)) fs.writeFileSync(path.join(out, `stub-kv-${n}.js`), src);
  fs.writeFileSync(path.join(out, 'package.json'), '{"type": "module"}');
  // The transpiled module imports @bytecodealliance/preview2-shim, which jco brings along.
  fs.symlinkSync(path.resolve(path.dirname(JCO), '..'), path.join(out, 'node_modules'));
  fs.writeFileSync(path.join(out, 'run.mjs'), `${prelude}\nconst c = await import('./component.js');\n${CALLS}`);
  // Node 20's V8 wants a flag for the extended-const proposal QuickJS's core module uses.
  const flag = ['--experimental-wasm-extended-const'].filter((f) => spawnSync(process.execPath, [f, '-e', '0']).status === 0);
  return JSON.parse(run(process.execPath, [...flag, path.join(out, 'run.mjs')], { cwd: out }));
}

test('a component and the dev runtime export prompts and completion and answer through them', { skip, timeout: 600_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-prompts-'));
  try {
    const project = path.join(dir, 'project');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'demo', version: '0.1.0', type: 'module', toolhost: { main: 'plugin.js' } }));
    fs.writeFileSync(path.join(project, 'plugin.js'), PLUGIN);
    const wit = path.join(REPO, 'wit');
    const all = ['toolhost:plugin/completion', 'toolhost:plugin/prompts', 'toolhost:plugin/resources', 'toolhost:plugin/tools'];

    const wasm = path.join(dir, 'demo.wasm');
    run(process.execPath, [CLI, 'componentize', project, '-o', wasm, '--wit', wit, '--jco', JCO]);
    assert.deepEqual(exportsOf(wasm), all);
    assert.deepEqual(callTranspiled(wasm, path.join(dir, 'full')), EXPECTED);

    const runtime = path.join(dir, 'runtime.wasm');
    run(process.execPath, [CLI, 'runtime', '-o', runtime, '--wit', wit, '--jco', JCO]);
    assert.deepEqual(exportsOf(runtime), all);
    const sources = path.join(dir, 'sources');
    fs.mkdirSync(sources);
    run(process.execPath, [CLI, 'bundle', project, '-o', path.join(sources, 'bundle.js'), '--jco', JCO]);
    const preopen = `import { _setPreopens } from '@bytecodealliance/preview2-shim/filesystem';\n_setPreopens({ '/toolhost-dev': ${JSON.stringify(sources)} });`;
    assert.deepEqual(callTranspiled(runtime, path.join(dir, 'dev'), preopen), EXPECTED);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

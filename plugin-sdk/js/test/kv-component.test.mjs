// `kv` through a real component, without the host: a plugin componentized for `plugin-full` uses
// every part of `kv`, and jco's transpilation of it runs under node with an in-memory
// `wasi:keyvalue` (store, atomics, batch) written in jco's host conventions, so the SDK meets the
// bindings componentize-qjs really generates (resources, results, variants, s64). Needs jco, so it
// runs only when it is given:
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

const PLUGIN = `import { definePlugin, defineTool, kv, KvError } from 'toolhost-sdk';
definePlugin({ capabilities: { kv: ['default', 'denied'] } });

const attempt = (f) => { try { return f(); } catch (e) { return e instanceof KvError ? { kind: e.kind, message: e.message } : 'not a KvError: ' + e; } };
// QuickJS has no TextDecoder: these values are ASCII.
const text = (b) => (b === null ? null : String.fromCharCode(...b));

export const demo = defineTool({
  name: 'demo',
  description: 'Use every part of kv.',
  run() {
    const b = kv.open('default');
    const out = {};
    b.set('a', 'x');
    b.set('bytes', new Uint8Array([0, 255]));
    out.get = text(b.get('a'));
    out.bytes = Array.from(b.get('bytes'));
    out.missing = b.get('nope');
    out.exists = [b.exists('a'), b.exists('nope')];
    b.setJson('j', { n: [1, 2], s: 'é' });
    out.json = b.getJson('j');
    out.increment = [b.increment('n'), b.increment('n', 41), kv.increment('n', -2)];
    out.counter = b.getText('n');
    b.setMany({ m1: '1', m2: '2' });
    out.getMany = Object.fromEntries([...b.getMany(['m1', 'nope', 'm2'])].map(([k, v]) => [k, text(v)]));
    b.deleteMany(['m1']);
    b.delete('bytes');
    out.keys = b.keys().sort();
    out.cas = [b.compareAndSwap('c', null, 'v1'), b.compareAndSwap('c', 'other', 'v2'), b.compareAndSwap('c', 'v1', 'v2')];
    out.c = b.getText('c');
    out.update = text(b.update('c', (v) => text(v) + '+'));
    out.updateJson = b.updateJson('list', (l) => [...l, 'milk'], []);
    out.raced = text(b.update('race', (v) => (v === null ? 'first' : text(v) + ' then mine')));
    out.denied = attempt(() => kv.open('denied'));
    out.unknown = attempt(() => kv.open('unknown'));
    out.other = attempt(() => b.get('boom'));
    out.casOther = attempt(() => b.compareAndSwap('boom', null, 'x'));
    return out;
  },
});
`;

// wasi:keyvalue for jco's transpiled component: classes for the resources, a thrown {payload}
// for a result's error, BigInt for s64. 'race' is written by "someone else" at its first CAS.
const STORE = `
export const data = new Map();
export const versions = new Map();
const bump = (k) => versions.set(k, (versions.get(k) ?? 0) + 1);
export const write = (k, v) => { data.set(k, Uint8Array.from(v)); bump(k); };
export const fail = (k) => { if (k === 'boom') throw { payload: { tag: 'other', val: 'disk full' } }; };
export class Bucket {
  get(key) { fail(key); return data.get(key) ?? undefined; }
  set(key, value) { fail(key); write(key, value); }
  delete(key) { fail(key); if (data.delete(key)) bump(key); }
  exists(key) { fail(key); return data.has(key); }
  listKeys(cursor) {
    const names = [...data.keys()].sort();
    const start = cursor == null ? 0 : Number(cursor);
    const end = Math.min(start + 2, names.length);
    return { keys: names.slice(start, end), cursor: end < names.length ? String(end) : undefined };
  }
}
export function open(name) {
  if (name === 'default') return new Bucket();
  if (name === 'denied') throw { payload: { tag: 'access-denied' } };
  throw { payload: { tag: 'no-such-store' } };
}
`;
const ATOMICS = `
import { data, versions, write, fail } from './stub-store.js';
let raced = false;
export class Cas {
  constructor(key) { this.key = key; this.version = versions.get(key) ?? 0; this.value = data.get(key); }
  static new(bucket, key) {
    fail(key);
    if (key === 'race' && !raced) { raced = true; const c = new Cas(key); write(key, new TextEncoder().encode('theirs')); return c; }
    return new Cas(key);
  }
  // The value when the CAS began: a write since then makes the swap fail.
  current() { return this.value; }
}
export function increment(bucket, key, delta) {
  const n = BigInt(new TextDecoder().decode(data.get(key) ?? new TextEncoder().encode('0'))) + delta;
  write(key, new TextEncoder().encode(String(n)));
  return n;
}
export function swap(cas, value) {
  if ((versions.get(cas.key) ?? 0) !== cas.version) throw { payload: { tag: 'cas-failed', val: new Cas(cas.key) } };
  write(cas.key, value);
}
`;
const BATCH = `
import { data, write } from './stub-store.js';
export function getMany(bucket, keys) { return keys.map((k) => (data.has(k) ? [k, data.get(k)] : undefined)); }
export function setMany(bucket, pairs) { for (const [k, v] of pairs) write(k, v); }
export function deleteMany(bucket, keys) { for (const k of keys) data.delete(k); }
`;

const KV_STUBS = { store: STORE, atomics: ATOMICS, batch: BATCH };

const EXPECTED = {
  get: 'x',
  bytes: [0, 255],
  missing: null,
  exists: [true, false],
  json: { n: [1, 2], s: 'é' },
  increment: [1, 42, 40],
  counter: '40',
  getMany: { m1: '1', m2: '2' },
  keys: ['a', 'j', 'm2', 'n'],
  cas: [true, false, true],
  c: 'v2',
  update: 'v2+',
  updateJson: ['milk'],
  // The first CAS read nothing, then "theirs" was written: the update ran again on it.
  raced: 'theirs then mine',
  denied: {
    kind: 'access-denied',
    message:
      'kv: bucket `denied` is not granted to this plugin (access-denied): the operator grants it with `[plugin.kvdemo] kv = ["denied"]` in the config or `--allow-kv kvdemo=denied`',
  },
  unknown: {
    kind: 'no-such-store',
    message:
      'kv: there is no bucket `unknown` for this plugin (no-such-store): request it in the plugin\'s manifest with definePlugin({capabilities: {kv: ["unknown"]}}), and have the operator grant it',
  },
  other: { kind: 'other', message: 'kv: bucket `default`: disk full' },
  casOther: { kind: 'other', message: 'kv: bucket `default`: disk full' },
};

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}\n${r.stderr}`);
  return r.stdout;
}

const jco = (...args) => (/\.(m?js|cjs)$/.test(JCO) ? run(process.execPath, [JCO, ...args]) : run(JCO, args));

test('kv in a component: every operation and error through componentize-qjs bindings', { skip, timeout: 600_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-kv-'));
  try {
    const project = path.join(dir, 'project');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'kvdemo', version: '0.1.0', type: 'module', toolhost: { main: 'plugin.js' } }));
    fs.writeFileSync(path.join(project, 'plugin.js'), PLUGIN);
    const wasm = path.join(dir, 'kvdemo.wasm');
    run(process.execPath, [CLI, 'componentize', project, '-o', wasm, '--wit', path.join(REPO, 'wit'), '--jco', JCO]);
    assert.match(jco('wit', wasm), /import wasi:keyvalue\/store@0\.2\.0-draft2/);

    const out = path.join(dir, 'transpiled');
    const stubs = {
      'toolhost:plugin/host@0.1.0': ['host', 'export function log() {}\nexport function progress() {}\n'],
      'toolhost:plugin/http@0.1.0': ['http', "export function send() { throw 'no http'; }\n"],
      'toolhost:plugin/process@0.1.0': ['process', "export function run() { throw 'no process'; }\n"],
      ...Object.fromEntries(Object.entries(KV_STUBS).map(([n, src]) => [`wasi:keyvalue/${n}@0.2.0-draft2`, [n, src]])),
    };
    const maps = Object.entries(stubs).flatMap(([spec, [n]]) => ['--map', `${spec}=./stub-${n}.js`]);
    jco('transpile', wasm, '-o', out, '--name', 'component', ...maps);
    for (const [n, src] of Object.values(stubs)) fs.writeFileSync(path.join(out, `stub-${n}.js`), src);
    fs.writeFileSync(path.join(out, 'package.json'), '{"type": "module"}');
    fs.symlinkSync(path.resolve(path.dirname(JCO), '..'), path.join(out, 'node_modules'));
    fs.writeFileSync(
      path.join(out, 'run.mjs'),
      "const c = await import('./component.js');\nprocess.stdout.write(c.tools.call('demo', []));\n",
    );
    const flag = ['--experimental-wasm-extended-const'].filter((f) => spawnSync(process.execPath, [f, '-e', '0']).status === 0);
    assert.deepEqual(JSON.parse(run(process.execPath, [...flag, path.join(out, 'run.mjs')], { cwd: out })), EXPECTED);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

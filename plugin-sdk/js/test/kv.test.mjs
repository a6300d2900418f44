// `kv` under node, against `testing.memoryKv()`: the in-memory stand-in for the host's
// `wasi:keyvalue` store, atomics and batch, shaped as componentize-qjs gives them to a component.
// Every method, the mapping of the host's errors to KvError, the `list-keys` cursor loop, and the
// `kv` request of the manifest.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { definePlugin, defineTool, DefinitionError, kv, KvError, testing, __internal } from '../index.mjs';

let store;
let b;
const enc = (s) => new TextEncoder().encode(s);
const ops = (op) => store.calls.filter((c) => c[0] === op);

beforeEach(() => {
  __internal.reset();
  store = testing.memoryKv({ buckets: ['default', 'cache'], denied: ['secret'], pageSize: 2 });
  b = kv.open('default');
});

/** The KvError `f` throws. */
function kvError(f) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof KvError, `expected a KvError, got ${e}`);
    return e;
  }
  assert.fail('expected a KvError');
}

test('get, set, delete, exists', () => {
  assert.equal(b.get('a'), null);
  assert.equal(b.exists('a'), false);
  b.set('a', new Uint8Array([0, 255]));
  assert.deepEqual(b.get('a'), new Uint8Array([0, 255]));
  b.set('t', 'héllo'); // a string: stored as UTF-8
  assert.deepEqual(store.data.get('default').get('t'), enc('héllo'));
  assert.equal(b.getText('t'), 'héllo');
  assert.equal(b.getText('nope', 'fallback'), 'fallback');
  b.set('ab', enc('xy').buffer);
  assert.equal(b.getText('ab'), 'xy');
  assert.equal(b.exists('a'), true);
  b.delete('a');
  b.delete('a'); // not there: nothing happens
  assert.equal(b.exists('a'), false);
});

test('JSON', () => {
  assert.deepEqual(b.getJson('prefs', { x: 0 }), { x: 0 });
  assert.equal(b.getJson('prefs'), null);
  b.setJson('prefs', { dark: true, name: 'Zoë', n: [1, 2] });
  assert.equal(store.texts().prefs, '{"dark":true,"name":"Zoë","n":[1,2]}');
  assert.deepEqual(b.getJson('prefs'), { dark: true, name: 'Zoë', n: [1, 2] });
  b.set('bad', '{nope');
  const e = kvError(() => b.getJson('bad'));
  assert.equal(e.kind, 'other');
  assert.match(e.message, /^kv: bucket `default`: the value of `bad` is not JSON: /);
  assert.throws(() => b.setJson('u', undefined), TypeError);
});

test('keys follow the cursor to the end', () => {
  assert.deepEqual(b.keys(), []);
  for (const k of 'edcba') b.set(k, k);
  store.calls.length = 0;
  assert.deepEqual(b.keys().sort(), ['a', 'b', 'c', 'd', 'e']);
  // Pages of two: cursors none, "2", "4"; the third page's cursor is none.
  assert.deepEqual(ops('list-keys').map((c) => c[2]), [null, '2', '4']);
});

test('keys refuse a cursor that does not move', () => {
  const stuck = new kv.Bucket('default', { listKeys: () => ({ keys: ['k'], cursor: 'same' }) }, null);
  assert.match(kvError(() => stuck.keys()).message, /same list-keys cursor twice/);
});

test('increment', () => {
  assert.equal(b.increment('n'), 1);
  assert.equal(b.increment('n', 41), 42);
  assert.equal(b.increment('n', -50), -8);
  assert.equal(b.getText('n'), '-8'); // a counter is decimal text
  b.set('t', 'ten');
  const e = kvError(() => b.increment('t'));
  assert.equal(e.kind, 'other');
  assert.match(e.detail, /not a counter/);
  assert.throws(() => b.increment('n', 1.5), TypeError);
  assert.throws(() => b.increment('n', 2 ** 60), TypeError);
});

test('batch', () => {
  b.setMany({ a: enc('1'), b: '2' });
  b.setMany([['c', '3']]);
  b.setMany(new Map([['d', '4']]));
  assert.equal(ops('set-many').length, 3);
  const got = b.getMany(['a', 'nope', 'c', 'b']);
  assert.ok(got instanceof Map);
  assert.deepEqual([...got].map(([k, v]) => [k, new TextDecoder().decode(v)]), [['a', '1'], ['c', '3'], ['b', '2']]);
  assert.equal(b.getMany([]).size, 0);
  b.deleteMany(['a', 'nope', 'b', 'd']);
  assert.deepEqual(b.keys(), ['c']);
  assert.throws(() => b.getMany('ab'), TypeError); // a string is not a list of keys
  assert.throws(() => b.setMany('ab'), TypeError);
});

test('compareAndSwap', () => {
  assert.equal(b.compareAndSwap('k', null, 'v1'), true); // null: the key is not there
  assert.equal(b.compareAndSwap('k', null, 'v2'), false);
  assert.equal(b.compareAndSwap('k', 'other', 'v2'), false);
  assert.equal(b.compareAndSwap('k', enc('v1'), 'v2'), true);
  assert.equal(b.getText('k'), 'v2');
});

test('compareAndSwap loses to a write in between', () => {
  b.set('k', 'mine');
  const { Cas } = store.bindings.atomics;
  const current = Cas.prototype.current;
  Cas.prototype.current = function () {
    const value = current.call(this);
    store.write('default', 'k', enc('theirs')); // another call writes meanwhile
    return value;
  };
  try {
    assert.equal(b.compareAndSwap('k', 'mine', 'new'), false);
  } finally {
    Cas.prototype.current = current;
  }
  assert.equal(b.getText('k'), 'theirs');
});

test('update runs again on the newer value', () => {
  b.set('n', '1');
  const seen = [];
  const stored = b.update('n', (cur) => {
    seen.push(new TextDecoder().decode(cur));
    if (seen.length === 1) store.write('default', 'n', enc('10')); // another call changes it
    return String(Number(new TextDecoder().decode(cur)) + 1);
  });
  assert.deepEqual(stored, enc('11'));
  assert.deepEqual(seen, ['1', '10']);
  assert.deepEqual(b.update('n', () => undefined), enc('11')); // undefined: left as it is
  assert.deepEqual(b.update('new', (cur) => (cur === null ? 'first' : 'again')), enc('first'));
});

test('update gives up after its attempts', () => {
  const e = kvError(() =>
    b.update('k', () => {
      store.bump('default', 'k');
      return 'x';
    }, { attempts: 3 }),
  );
  assert.match(e.message, /`k` kept changing: gave up after 3 attempts/);
  assert.equal(b.get('k'), null);
});

test('updateJson', () => {
  const add = (items) => [...items, 'milk'];
  assert.deepEqual(b.updateJson('todo', add, []), ['milk']);
  assert.deepEqual(b.updateJson('todo', add, []), ['milk', 'milk']);
  assert.deepEqual(b.getJson('todo'), ['milk', 'milk']);
  const fallback = { n: 0 };
  b.updateJson('d', (d) => {
    d.n += 1;
    return d;
  }, fallback);
  assert.deepEqual(fallback, { n: 0 }); // copied for each attempt
  assert.deepEqual(b.updateJson('d', () => undefined), { n: 1 });
});

test('the kv functions use the bucket "default", opened once', () => {
  kv.set('a', '1');
  assert.equal(kv.getText('a'), '1');
  assert.deepEqual(kv.get('a'), enc('1'));
  assert.equal(kv.exists('a'), true);
  assert.equal(kv.increment('a', 2), 3);
  kv.setJson('j', [1]);
  assert.deepEqual(kv.getJson('j'), [1]);
  kv.setMany({ x: 'y' });
  assert.equal(kv.getMany(['x']).size, 1);
  kv.deleteMany(['x']);
  assert.equal(kv.compareAndSwap('c', null, '1'), true);
  assert.deepEqual(kv.update('c', (v) => new TextDecoder().decode(v) + '2'), enc('12'));
  assert.equal(kv.updateJson('u', (v) => v + 1, 0), 1);
  kv.delete('j');
  assert.deepEqual(kv.keys().sort(), ['a', 'c', 'u']);
  assert.deepEqual([...store.data.keys()], ['default']);
  assert.equal(ops('open').length, 1);
});

test('buckets are separate', () => {
  const cache = kv.open('cache');
  cache.set('a', 'c');
  b.set('a', 'd');
  assert.deepEqual([cache.getText('a'), b.getText('a')], ['c', 'd']);
  assert.equal(kv.open('cache'), cache);
});

test('argument types', () => {
  assert.throws(() => b.get(1), /a key is a string/);
  assert.throws(() => b.set('a', 1), /use setJson/);
  assert.throws(() => kv.open(null), /a bucket name is a string/);
});

test('access-denied names the bucket and the grant', () => {
  __internal.setPluginName('notes');
  const e = kvError(() => kv.open('secret'));
  assert.equal(e.kind, 'access-denied');
  assert.equal(e.bucket, 'secret');
  assert.equal(
    e.message,
    'kv: bucket `secret` is not granted to this plugin (access-denied): the operator grants it with `[plugin.notes] kv = ["secret"]` in the config or `--allow-kv notes=secret`',
  );
});

test('the plugin name falls back to definePlugin, then a placeholder', () => {
  assert.match(kvError(() => kv.open('secret')).message, /\[plugin\.NAME\] kv = \["secret"\].*--allow-kv NAME=secret/);
  definePlugin({ name: 'mine', capabilities: { kv: ['secret'] } });
  assert.match(kvError(() => kv.open('secret')).message, /--allow-kv mine=secret/);
});

test('no-such-store', () => {
  const e = kvError(() => kv.open('other'));
  assert.equal(e.kind, 'no-such-store');
  assert.match(e.message, /there is no bucket `other` for this plugin \(no-such-store\)/);
  assert.match(e.message, /definePlugin\(\{capabilities: \{kv: \["other"\]\}\}\)/);
});

test('other carries the host text for every operation', () => {
  b.set('n', '1');
  store.fail('the store is unavailable');
  const all = [
    () => b.get('k'), () => b.set('k', 'v'), () => b.delete('k'), () => b.exists('k'), () => b.keys(),
    () => b.increment('k'), () => b.getMany(['k']), () => b.setMany({ k: 'v' }), () => b.deleteMany(['k']),
    () => b.compareAndSwap('k', null, 'v'), () => b.update('k', () => 'v'), () => kv.open('cache'),
  ];
  let e;
  for (const op of all) {
    e = kvError(op);
    assert.equal(e.kind, 'other');
    assert.equal(e.detail, 'the store is unavailable');
  }
  assert.equal(e.message, 'kv: bucket `cache`: the store is unavailable');
});

test('a store error at swap is a KvError', () => {
  const { swap } = store.bindings.atomics;
  store.bindings.atomics.swap = (cas, value) => {
    store.fail('disk full');
    return swap(cas, value);
  };
  try {
    assert.equal(kvError(() => b.compareAndSwap('k', null, 'v')).message, 'kv: bucket `default`: disk full');
  } finally {
    store.bindings.atomics.swap = swap;
  }
});

test('variants as case indexes and errors thrown bare are understood too', () => {
  // Bindings that give a variant's case as its index ({tag: 1} is access-denied) and throw the
  // WIT error value itself.
  __internal.setBackend({
    kv: {
      store: {
        open(name) {
          if (name === 'denied') throw { tag: 1 };
          if (name === 'gone') throw { tag: 0 };
          return { get: () => { throw { tag: 2, val: 'bare' }; } };
        },
      },
      atomics: {},
      batch: {},
    },
  });
  assert.equal(kvError(() => kv.open('denied')).kind, 'access-denied');
  assert.equal(kvError(() => kv.open('gone')).kind, 'no-such-store');
  const e = kvError(() => kv.open('x').get('k'));
  assert.equal(e.kind, 'other');
  assert.equal(e.message, 'kv: bucket `x`: bare');
  __internal.setBackend({ kv: { store: { open() { throw { payload: { tag: 'accessDenied' } }; } } } });
  assert.equal(kvError(() => kv.open('y')).kind, 'access-denied');
});

test('without a host or a stand-in', () => {
  testing.reset();
  const e = kvError(() => kv.open('default'));
  assert.match(e.message, /kv is only available inside toolhost \(in tests, install an in-memory store with testing\.memoryKv\(\)\)/);
});

test('a tool that uses kv, called through the dispatch', () => {
  definePlugin({ name: 'counter', capabilities: { kv: ['default'] } });
  defineTool({ name: 'count', description: 'Count calls.', run: () => kv.increment('calls') });
  assert.deepEqual(__internal.dispatch('count', []), '1');
  assert.deepEqual(__internal.dispatch('count', []), '2');
  store.fail('quota exceeded');
  assert.throws(() => __internal.dispatch('count', []), (e) => /kv: bucket `default`: quota exceeded/.test(e.message ?? e));
});

test('kv requests are checked at the definePlugin line and written only when made', () => {
  definePlugin({ name: 'p', capabilities: { kv: ['default', 'cache.v2'], exec: ['git'] } });
  defineTool({ name: 't', description: 'd', run: () => 'x' });
  const m = __internal.manifest({ version: '1' });
  assert.deepEqual(Object.keys(m.capabilities), ['fs', 'env', 'net', 'secrets', 'exec', 'kv']);
  assert.deepEqual(m.capabilities.kv, ['default', 'cache.v2']);
  __internal.reset();
  definePlugin({ name: 'p', capabilities: { kv: [] } });
  defineTool({ name: 't', description: 'd', run: () => 'x' });
  assert.equal('kv' in __internal.manifest({ version: '1' }).capabilities, false);
  for (const bucket of ['bad bucket', '', '-x', 'x'.repeat(65), 'é', 7]) {
    __internal.reset();
    let err;
    try {
      definePlugin({ capabilities: { kv: [bucket] } });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof DefinitionError, `${bucket}: ${err}`);
    assert.match(
      err.message,
      /`capabilities\.kv\[0\]` .* is not a bucket name \(1–64 letters, digits, '_', '-' or '\.', starting with a letter or digit\)/,
    );
  }
  __internal.reset();
  definePlugin({ capabilities: { kv: ['x'.repeat(64)] } });
});

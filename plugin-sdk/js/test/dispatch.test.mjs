// Dispatch as the component does it: string arguments decoded per param, the return value
// turned into output text, anything thrown into the tool's error message.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { defineTool, definePlugin, http, log, process as proc, testing, ToolError, __internal } from '../index.mjs';

beforeEach(() => __internal.reset());

/** What the host's `tools.call` gets: {ok: text} or {err: message}. */
function call(tool, args) {
  try {
    return { ok: __internal.dispatch(tool, args) };
  } catch (e) {
    assert.equal(typeof e, 'string', 'tools.call must throw a string (the WIT error payload)');
    return { err: e };
  }
}

test('text params arrive verbatim, JSON params decoded, optional ones undefined', () => {
  defineTool({
    name: 'plan',
    description: 'Plan.',
    params: [
      { name: 'title' },
      { name: 'items', type: 'array' },
      { name: 'days', type: 'integer', optional: true },
    ],
    run(title, items, days) {
      return { title, items, days: days ?? null };
    },
  });
  assert.deepEqual(call('plan', ['a, "b"', '[1,{"x":2}]', '3']), { ok: '{"title":"a, \\"b\\"","items":[1,{"x":2}],"days":3}' });
  assert.deepEqual(call('plan', ['t', '[]']), { ok: '{"title":"t","items":[],"days":null}' });
});

test('a default value of run applies when an optional argument is left off', () => {
  defineTool({ name: 'greet', description: 'Greet.', run: (name, greeting = 'Hello') => `${greeting}, ${name}!` });
  assert.deepEqual(call('greet', ['Ada']), { ok: 'Hello, Ada!' });
  assert.deepEqual(call('greet', ['Ada', 'Hi']), { ok: 'Hi, Ada!' });
});

test('JSON arguments of the wrong type or not JSON are tool errors naming the argument', () => {
  defineTool({
    name: 'typed',
    description: 'Typed.',
    params: [
      { name: 'n', type: 'integer' },
      { name: 'o', type: 'object', optional: true },
      { name: 's', schema: { type: 'array', items: { type: 'string' } }, optional: true },
    ],
    run: (n, o, s) => [n, o, s],
  });
  assert.deepEqual(call('typed', ['1.5']), { err: 'typed: argument 1 (`n`) must be an integer, got 1.5' });
  assert.deepEqual(call('typed', ['1', '[1]']), { err: 'typed: argument 2 (`o`) must be an object, got [1]' });
  assert.deepEqual(call('typed', ['1', '{}', '{}']), { err: 'typed: argument 3 (`s`) must be an array, got {}' });
  assert.match(call('typed', ['one']).err, /^typed: argument 1 \(`n`\) is not valid JSON: /);
  assert.deepEqual(call('typed', ['7', '{"a":1}', '["x"]']), { ok: '[7,{"a":1},["x"]]' });
  assert.deepEqual(call('typed', []), { err: 'typed: argument 1 (`n`) is missing' });
});

test('the return value becomes text: strings as is, undefined as ok, the rest as JSON', () => {
  const values = { s: 'plain', u: undefined, n: 42, b: false, z: null, o: { a: [1] }, big: 10n };
  for (const [name, value] of Object.entries(values)) {
    defineTool({ name, description: 'Returns.', run: () => value });
  }
  assert.deepEqual(call('s', []), { ok: 'plain' });
  assert.deepEqual(call('u', []), { ok: 'ok' });
  assert.deepEqual(call('n', []), { ok: '42' });
  assert.deepEqual(call('b', []), { ok: 'false' });
  assert.deepEqual(call('z', []), { ok: 'null' });
  assert.deepEqual(call('o', []), { ok: '{"a":[1]}' });
  assert.deepEqual(call('big', []), { ok: '10' });
});

test('whatever run throws becomes the error message, without a stack', () => {
  const thrown = {
    error: new Error('disk full'),
    typeError: new TypeError('x is not a function'),
    text: 'plain text',
    object: { message: 'from an object' },
    other: 17,
  };
  for (const [name, value] of Object.entries(thrown)) {
    defineTool({ name, description: 'Throws.', run: () => { throw value; } });
  }
  assert.deepEqual(call('error', []), { err: 'disk full' });
  assert.deepEqual(call('typeError', []), { err: 'x is not a function' });
  assert.deepEqual(call('text', []), { err: 'plain text' });
  assert.deepEqual(call('object', []), { err: 'from an object' });
  assert.deepEqual(call('other', []), { err: '17' });
});

test('a Promise or an unencodable result is a tool error, not a crash', () => {
  defineTool({ name: 'promise', description: 'P.', run: () => Promise.resolve(1) });
  const cyclic = {};
  cyclic.self = cyclic;
  defineTool({ name: 'cyclic', description: 'C.', run: () => cyclic });
  defineTool({ name: 'fn', description: 'F.', run: () => () => 1 });
  assert.match(call('promise', []).err, /run returned a Promise; tools are synchronous/);
  assert.match(call('cyclic', []).err, /^cyclic: the result cannot be written as JSON/);
  assert.match(call('fn', []).err, /^fn: run returned function/);
});

test('an unknown tool is an error naming it', () => {
  assert.deepEqual(call('nope', []), { err: 'this plugin has no tool named `nope`' });
});

test('Tool.call runs a tool as the host would, and run is the plain function', () => {
  const t = defineTool({ name: 'add', description: 'Add.', params: [{ name: 'a', type: 'number' }, { name: 'b', type: 'number' }], run: (a, b) => a + b });
  assert.equal(t.run(2, 3), 5);
  assert.equal(t.call('2', '3'), '5');
  assert.throws(() => t.call('2', 'x'), (e) => e instanceof ToolError && /argument 2 \(`b`\) is not valid JSON/.test(e.message));
});

test('http builds the WIT request, with secret headers, and wraps the response', () => {
  definePlugin({ name: 'p', capabilities: { net: ['api.example.com'], secrets: ['api_token'] } });
  const seen = [];
  testing.onHttp((req) => {
    seen.push(req);
    return { status: 200, body: '{"user":{"name":"Ada"}}', headers: [['Content-Type', 'application/json']] };
  });
  const r = http.get('https://api.example.com/me', { headers: { accept: 'application/json' }, secretHeaders: [http.bearer('api_token')] });
  assert.equal(r.ok, true);
  assert.equal(r.header('content-type'), 'application/json');
  assert.deepEqual(r.json(), { user: { name: 'Ada' } });
  assert.deepEqual(seen[0], {
    method: 'GET',
    url: 'https://api.example.com/me',
    headers: [['accept', 'application/json']],
    secretHeaders: [{ name: 'authorization', secret: 'api_token', prefix: 'Bearer ' }],
    body: null,
  });
  http.send({ method: 'post', url: 'https://api.example.com/x', json: { a: 'é' } });
  assert.equal(seen[1].method, 'POST');
  assert.deepEqual(seen[1].headers, [['content-type', 'application/json']]);
  assert.deepEqual([...seen[1].body], [...Buffer.from('{"a":"é"}')]);
});

test('http errors: host refusal, error status, unrequested secret, bad input', () => {
  definePlugin({ name: 'p', capabilities: { secrets: ['api_token'] } });
  testing.onHttp(() => {
    throw 'network access to `evil.example` is not granted to plugin `p`';
  });
  assert.throws(() => http.get('https://evil.example/'), { message: 'network access to `evil.example` is not granted to plugin `p`' });
  testing.onHttp(() => ({ status: 404, body: 'no such user' }));
  assert.throws(() => http.get('https://x.example/u').errorForStatus(), { message: 'https://x.example/u answered HTTP 404: no such user' });
  assert.throws(() => http.get('https://x.example/u', { secretHeaders: [http.bearer('github')] }), /secret `github` is not requested by this plugin/);
  assert.throws(() => http.send({ method: 'BREW', url: 'x' }), /method "BREW" is not one of/);
  assert.throws(() => http.get('https://x.example/', { body: 5 }), /`body` must be a string or bytes/);
  testing.onHttp(() => ({ body: 'not json' }));
  assert.throws(() => http.get('https://x.example/j').json(), /https:\/\/x\.example\/j: response is not valid JSON/);
});

test('an http failure inside a tool becomes its error message', () => {
  definePlugin({ name: 'p', capabilities: { net: ['*'] } });
  defineTool({ name: 'fetch', description: 'F.', run: (url) => http.get(url).text() });
  testing.onHttp(() => {
    throw 'timed out after 5000 ms';
  });
  assert.deepEqual(call('fetch', ['https://slow.example/']), { err: 'timed out after 5000 ms' });
});

test('log goes to the backend with its level', () => {
  const lines = [];
  __internal.setBackend({ log: (level, message) => lines.push([level, message]), send: () => { throw 'no'; } });
  log('plain', 3, { a: 1 });
  log.warn('careful');
  log.debug('detail');
  assert.deepEqual(lines, [['info', 'plain 3 {"a":1}'], ['warn', 'careful'], ['debug', 'detail']]);
  __internal.setBackend(null);
  log.error('kept');
  assert.deepEqual(testing.logs, [{ level: 'error', message: 'kept' }]);
});

test('process.run hands program and args to the host and wraps its output', () => {
  const seen = [];
  testing.onProcess((program, args) => {
    seen.push([program, args]);
    return { code: 3, stdout: 'out \u00e9', stderr: Uint8Array.from([0x65, 0xff]), truncated: true };
  });
  const out = proc.run('git', ['log', '--oneline']);
  assert.deepEqual(seen, [['git', ['log', '--oneline']]]);
  assert.equal(out instanceof proc.Output, true);
  assert.equal(out.code, 3);
  assert.equal(out.success(), false);
  assert.equal(out.truncated, true);
  assert.equal(out.stdoutText(), 'out é');
  assert.equal(out.stderrText(), 'e\ufffd');
  assert.deepEqual([...out.stdout], [...Buffer.from('out é')]);
  // The host's `none` (a signal, or stopped) is null; code 0 is success.
  testing.onProcess(() => ({ code: undefined }));
  assert.equal(proc.run('true').code, null);
  testing.onProcess(() => ({}));
  assert.equal(proc.run('true', []).success(), true);
});

test('process errors: host refusal, no host, bad input; inside a tool it is the error message', () => {
  assert.throws(() => proc.run('git', []), /process is only available inside toolhost \(in tests, set a stand-in with testing\.onProcess\)/);
  testing.onProcess(() => {
    throw 'program `sh` is not granted to plugin `p`';
  });
  assert.throws(() => proc.run('sh', ['-c', 'id']), { message: 'program `sh` is not granted to plugin `p`' });
  assert.throws(() => proc.run('git', 'log'), /`args` must be an array of strings, got "log"/);
  assert.throws(() => proc.run('git', ['-n', 5]), /`args` must be an array of strings/);
  assert.throws(() => proc.run(['git']), /`program` must be a string/);
  definePlugin({ name: 'p', capabilities: { exec: ['sh'] } });
  defineTool({ name: 'shell', description: 'S.', run: (line) => proc.run('sh', ['-c', line]).stdoutText() });
  assert.deepEqual(call('shell', ['id']), { err: 'program `sh` is not granted to plugin `p`' });
  testing.reset();
  assert.match(call('shell', ['id']).err, /process is only available inside toolhost/);
});

test('a Map, a Set or a class instance returned is an error, not an empty object', () => {
  class Point {
    constructor(x) {
      this.x = x;
    }
  }
  const returning = (name, value) =>
    defineTool({ name, description: 'R.', params: [], run: () => value });
  returning('map', new Map([['a', 1]]));
  returning('set', { tags: new Set(['x']) });
  returning('point', [1, new Point(2)]);
  returning('date', { when: new Date(0) });
  assert.deepEqual(call('map', []), {
    err: 'map: run returned a Map, which JSON shows as {} (its contents lost): return plain objects and arrays (Object.fromEntries(map), [...set])',
  });
  assert.match(call('set', []).err, /^set: run returned a Set at tags, which JSON/);
  assert.match(call('point', []).err, /^point: run returned an instance of Point at \[1\], which JSON/);
  assert.deepEqual(call('date', []), { ok: '{"when":"1970-01-01T00:00:00.000Z"}' });
});

test('declared item types of an array are checked', () => {
  defineTool({
    name: 'total',
    description: 'Sum.',
    params: [{ name: 'xs', type: 'array', items: 'number' }],
    run: (xs) => xs.reduce((a, b) => a + b, 0),
  });
  assert.deepEqual(call('total', ['[1, 2.5]']), { ok: '3.5' });
  assert.deepEqual(call('total', ['[1, "2"]']), { err: 'total: argument 1 (`xs`) must be an array of numbers, got "2" at [1]' });
  assert.deepEqual(__internal.manifest({ name: 'm', version: '1' }).tools[0].params[0].type, { type: 'array', items: { type: 'number' } });
});

test('a declared default is passed when the argument is left off', () => {
  defineTool({
    name: 'convert',
    description: 'Convert.',
    params: [{ name: 'd', type: 'number' }, { name: 'unit', type: 'string', optional: true, default: 'mi' }],
    run: (d, unit) => `${d} ${unit}`,
  });
  assert.deepEqual(call('convert', ['-5']), { ok: '-5 mi' });
  assert.equal(__internal.manifest({ name: 'm', version: '1' }).tools[0].params[1].default, 'mi');
});

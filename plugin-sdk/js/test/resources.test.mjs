// Resources: defineResource and defineResourceTemplate become the manifest's `resources` and
// `resourceTemplates`, held to the host's rules at the line of the call; `resources.read` is
// dispatched to their `read` functions as the component does it.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineResource, defineResourceTemplate, defineTool, DefinitionError, ToolError, __internal } from '../index.mjs';

const HERE = fileURLToPath(import.meta.url);
const CLI = path.join(path.dirname(HERE), '..', 'bin', 'toolhost-js.mjs');

beforeEach(() => __internal.reset());

const tool = () => defineTool({ name: 't', description: 'T.', run: () => 'x' });
const manifest = () => __internal.manifest({ name: 'p', version: '1' });

/** Line of the caller of this helper. */
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

/** What the host's `resources.read` gets: {ok: contents} or {err: message}. */
function read(uri, template = null, variables = []) {
  try {
    return { ok: __internal.read({ uri, template, variables }) };
  } catch (e) {
    assert.equal(typeof e, 'string', 'resources.read must throw a string (the WIT error payload)');
    return { err: e };
  }
}

const base = { uri: 'docs://a', name: 'a', read: () => 'a' };
const baseTemplate = { uriTemplate: 'file:///{+path}', name: 'file', read: (path) => path };

test('the manifest lists resources and templates with every field, in order', () => {
  tool();
  defineResource({
    uri: 'docs://style-guide',
    name: 'style-guide',
    title: 'Style guide',
    description: ' The house style guide. ',
    mimeType: 'text/markdown',
    size: 123,
    read: () => '# Style',
  });
  defineResourceTemplate({
    uriTemplate: 'file:///{+path}',
    name: 'workspace-file',
    title: 'A file',
    description: 'A file of the workspace.',
    mimeType: 'text/plain',
    read: (path) => path,
  });
  const m = manifest();
  assert.deepEqual(m.resources, [
    { uri: 'docs://style-guide', name: 'style-guide', title: 'Style guide', description: 'The house style guide.', mimeType: 'text/markdown', size: 123 },
  ]);
  assert.deepEqual(Object.keys(m.resources[0]), ['uri', 'name', 'title', 'description', 'mimeType', 'size']);
  assert.deepEqual(m.resourceTemplates, [
    { uriTemplate: 'file:///{+path}', name: 'workspace-file', title: 'A file', description: 'A file of the workspace.', mimeType: 'text/plain' },
  ]);
  assert.deepEqual(Object.keys(m), ['format', 'name', 'version', 'description', 'capabilities', 'tools', 'resources', 'resourceTemplates']);
});

test('empty fields and lists are left out', () => {
  tool();
  assert.equal('resources' in manifest(), false);
  assert.equal('resourceTemplates' in manifest(), false);
  defineResource({ ...base, description: '' });
  const m = manifest();
  assert.deepEqual(m.resources, [{ uri: 'docs://a', name: 'a' }]);
  assert.equal('resourceTemplates' in m, false);
});

test('a misuse names the file and line of the call', () => {
  const line = lineHere(); const err = rejects(() => defineResource({ ...base, mime_type: 'text/plain' }), /unknown resource option `mime_type`; did you mean `mimeType`\?/);
  assert.equal(err.line, line);
  rejects(() => defineResourceTemplate({ ...baseTemplate, size: 1 }), /unknown resource template option `size`; expected one of: uriTemplate, name, title, description, mimeType, read/);
});

test('URIs are held to the host rules', () => {
  const cases = [
    ['skill://a/b/SKILL.md', /resource URI "skill:\/\/a\/b\/SKILL.md" uses the `skill:` scheme, which is the host's own/],
    ['SKILL://a', /the `SKILL:` scheme/],
    ['no-scheme', /resource URI "no-scheme" is not an absolute URI/],
    ['1x://a', /is not an absolute URI/],
    ['docs://a b', /holds " ": a URI has no whitespace or control characters/],
    ['docs://a\u00a0b', /holds "\u00a0"/],
    ['docs://a\u0007', /holds "\\u0007"/],
    ['docs://{a}', /a URI with variables is a resource template \(defineResourceTemplate\)/],
    ['docs://' + 'a'.repeat(1018), /is 1025 bytes; at most 1024 are allowed/],
  ];
  for (const [uri, pattern] of cases) rejects(() => defineResource({ ...base, uri }), pattern);
  rejects(() => defineResource({ ...base, uri: 42 }), /defineResource needs `uri`, a string such as "docs:\/\/guide"/);
  rejects(() => defineResourceTemplate({ ...baseTemplate, uriTemplate: undefined }), /defineResourceTemplate needs `uriTemplate`/);
});

test('templates are held to the host rules', () => {
  const cases = [
    ['file:///{a}{b}', /resource template "file:\/\/\/\{a\}\{b\}" has two expressions in a row before `\{b\}`: put text between them/],
    ['{+uri}', /is not an absolute URI/],
    ['file:///{a', /has a `\{` without its `\}`/],
    ['file:///a}', /has a `\}` without its `\{`/],
    ['file:///{?q}', /has `\{\?q\}`: toolhost serves `\{name\}` and `\{\+name\}` expressions/],
    ['file:///{}', /has `\{\}`/],
    ['file:///{a}/{a}', /uses the variable `a` twice/],
    ['file:///a', /has no `\{name\}` expression: a URI without variables is a static resource/],
    ['x://' + Array.from({ length: 9 }, (_, i) => `{v${i}}`).join('/'), /has 9 expressions; at most 8 are allowed/],
    ['skill://{a}', /the `skill:` scheme/],
  ];
  for (const [uriTemplate, pattern] of cases) rejects(() => defineResourceTemplate({ ...baseTemplate, uriTemplate, read: (a) => a }), pattern);
});

test('texts are held to the host rules', () => {
  const cases = [
    [{ name: undefined }, /resource "docs:\/\/a": has no `name`/],
    [{ name: ' ' }, /`name` must be a non-blank string/],
    [{ name: 'a\nb' }, /`name` contains the control character U\+000A; it must be one line/],
    [{ name: 'n'.repeat(129) }, /`name` is 129 characters long; the host allows at most 128/],
    [{ title: ' ' }, /`title` must not be blank when given/],
    [{ title: 't'.repeat(129) }, /`title` is 129 characters long/],
    [{ description: 'd'.repeat(1025) }, /`description` is 1025 characters long; the host allows at most 1024/],
    [{ description: 'a\u0000' }, /`description` contains the control character U\+0000; only tabs and line breaks/],
    [{ mimeType: 'text' }, /`mimeType` "text" is not a MIME type \(`type\/subtype`/],
    [{ mimeType: 'text/' }, /is not a MIME type/],
    [{ mimeType: 'text/é' }, /is not a MIME type/],
    [{ mimeType: 'a/' + 'b'.repeat(126) }, /is not a MIME type/],
    [{ size: -1 }, /`size` must be a whole number of bytes, at least 0, got -1/],
    [{ size: 1.5 }, /`size` must be a whole number of bytes/],
  ];
  for (const [options, pattern] of cases) rejects(() => defineResource({ ...base, ...options }), pattern);
  // What the host allows.
  tool();
  defineResource({ ...base, title: 't'.repeat(128), description: 'one\n\ttwo', mimeType: 'text/markdown; charset=utf-8' });
  assert.equal(manifest().resources[0].mimeType, 'text/markdown; charset=utf-8');
});

test("read's parameters are the template's variables, by name; a static read takes none", () => {
  rejects(() => defineResource({ ...base, read: (path) => path }), /a static resource's read takes no parameters \(`path`\); a URI with \{variables\} is a defineResourceTemplate/);
  rejects(
    () => defineResourceTemplate({ ...baseTemplate, uriTemplate: 'db://{table}/rows/{id}', read: (table, key) => key }),
    /read's parameter `key` is no variable of the template \(its variables: table, id\)/,
  );
  rejects(() => defineResourceTemplate({ ...baseTemplate, uriTemplate: 'db://{table}/rows/{id}', read: (table) => table }), /the template's variable `id` needs a parameter `id` of read/);
  rejects(() => defineResourceTemplate({ ...baseTemplate, read: ({ path }) => path }), /read's parameter 1 `\{ path \}` must be a plain name/);
  rejects(() => defineResourceTemplate({ ...baseTemplate, read: (...path) => path }), /must be a plain name/);
  rejects(() => defineResource({ ...base, read: 'text' }), /`read` must be a function, got "text"/);
  rejects(() => defineResource({ ...base, async read() { return ''; } }), /`read` is async; a resource's read is a plain synchronous function/);
  rejects(() => defineResource({ ...base, *read() { yield ''; } }), /`read` is a generator/);
  rejects(() => defineResource({ ...base, read: class {} }), /`read` is a class; write a plain function/);
});

test('URIs and names are declared once, within the caps', () => {
  const first = lineHere(); defineResource(base);
  rejects(() => defineResource({ ...base, name: 'b' }), new RegExp(`resource "docs://a" is declared twice; the first definition is at .*:${first}`));
  rejects(() => defineResourceTemplate({ ...baseTemplate, name: 'a' }), /the name "a" names two resources; the first definition is at /);
  for (let i = 1; i < 64; i++) defineResource({ ...base, uri: `docs://r${i}`, name: `r${i}` });
  rejects(() => defineResource({ ...base, uri: 'docs://r64', name: 'r64' }), /this plugin declares more than 64 resources; the host allows at most 64/);
  for (let i = 0; i < 16; i++) defineResourceTemplate({ ...baseTemplate, uriTemplate: `t${i}://{path}`, name: `t${i}` });
  rejects(() => defineResourceTemplate({ ...baseTemplate, uriTemplate: 't16://{path}', name: 't16' }), /more than 16 resource templates/);
});

test('a read: static, template by name, bytes as a blob, thrown errors, what is not served', () => {
  tool();
  defineResource({ ...base, uri: 'docs://guide', read: () => '# Guide' });
  defineResource({ ...base, uri: 'img://logo', name: 'logo', read: () => new Uint8Array([0x89, 0x50]) });
  defineResource({ ...base, uri: 'img://buffer', name: 'buffer', read: () => Buffer.from('ab') });
  defineResource({ ...base, uri: 'img://array-buffer', name: 'ab', read: () => new Uint8Array([1, 2]).buffer });
  defineResourceTemplate({ ...baseTemplate, uriTemplate: 'db://{table}/rows/{id}.json', name: 'row', read: (id, table) => `${table}:${id}` });
  defineResourceTemplate({
    ...baseTemplate,
    uriTemplate: 'fail://{kind}',
    name: 'fail',
    read(kind) {
      if (kind === 'error') throw new Error('no such row');
      if (kind === 'string') throw 'just text';
      if (kind === 'promise') return Promise.resolve('x');
      return kind === 'object' ? { a: 1 } : undefined;
    },
  });
  assert.deepEqual(read('docs://guide'), { ok: { tag: 'text', val: '# Guide' } });
  assert.deepEqual(read('img://logo'), { ok: { tag: 'blob', val: new Uint8Array([0x89, 0x50]) } });
  const buffer = read('img://buffer').ok;
  assert.equal(buffer.tag, 'blob');
  assert.deepEqual([...buffer.val], [0x61, 0x62]);
  assert.deepEqual(read('img://array-buffer'), { ok: { tag: 'blob', val: new Uint8Array([1, 2]) } });
  assert.deepEqual(read('db://users/rows/4%2F2.json', 'db://{table}/rows/{id}.json', [['table', 'users'], ['id', '4/2']]), { ok: { tag: 'text', val: 'users:4/2' } });
  // componentize-qjs passes `none` as null; undefined is taken the same way.
  assert.deepEqual(read('docs://guide', undefined), { ok: { tag: 'text', val: '# Guide' } });
  const fails = (kind) => read(`fail://${kind}`, 'fail://{kind}', [['kind', kind]]);
  assert.deepEqual(fails('error'), { err: 'no such row' });
  assert.deepEqual(fails('string'), { err: 'just text' });
  assert.deepEqual(fails('promise'), { err: "fail://promise: read returned a Promise; a resource's read is synchronous, return the contents themselves" });
  assert.deepEqual(fails('object'), { err: 'fail://object: read returned {"a":1}; a resource returns a string (text) or a Uint8Array (bytes)' });
  assert.deepEqual(fails('none'), { err: 'fail://none: read returned undefined; a resource returns a string (text) or a Uint8Array (bytes)' });
  assert.deepEqual(read('fail://x', 'fail://{kind}', []), { err: 'fail://x: the host sent no value for `kind` of fail://{kind}' });
  assert.deepEqual(read('docs://other'), { err: 'this plugin serves no resource docs://other' });
  assert.deepEqual(read('x://a', 'x://{a}', [['a', 'a']]), { err: 'this plugin serves no resource x://a' });
});

test('a plugin without resources answers every read with an error', () => {
  tool();
  assert.deepEqual(read('docs://a'), { err: 'this plugin serves no resource docs://a' });
});

test('the object defineResource returns: spec, read, and call as the host reads', () => {
  const guide = defineResource({ ...base, read: () => 'text' });
  const file = defineResourceTemplate({ ...baseTemplate, read: (path) => (path === 'x' ? (() => { throw new Error('no x'); })() : `<${path}>`) });
  assert.deepEqual(guide.spec, { uri: 'docs://a', name: 'a' });
  assert.equal(guide.uri, 'docs://a');
  assert.equal(file.uriTemplate, 'file:///{+path}');
  assert.equal(guide.read(), 'text');
  assert.equal(guide.call(), 'text');
  assert.equal(file.call({ path: 'a/b' }), '<a/b>');
  assert.throws(() => file.call({ path: 'x' }), (e) => e instanceof ToolError && e.message === 'no x');
  assert.throws(() => file.call({}), (e) => e instanceof ToolError && /the host sent no value for `path`/.test(e.message));
});

test('toolhost-js manifest reports every resource mistake at its line', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-res-'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'demo', version: '0.1.0', type: 'module', toolhost: { main: 'plugin.js' } }));
    const source = `import { defineResource, defineResourceTemplate, defineTool } from 'toolhost-sdk';
defineTool({ name: 't', description: 'T.', params: [], run: () => 'x' });
defineResource({ uri: 'skill://a', name: 'a', read: () => '' });
defineResourceTemplate({ uriTemplate: 'file:///{+path}', name: 'f', read: (p) => p });
defineResource({ uri: 'docs://ok', name: 'ok', read: () => '' });
`;
    fs.writeFileSync(path.join(dir, 'plugin.js'), source);
    const r = spawnSync(process.execPath, [CLI, 'manifest', dir], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /plugin\.js:3: error: resource URI "skill:\/\/a" uses the `skill:` scheme/);
    assert.match(r.stderr, /plugin\.js:4: error: resource "file:\/\/\/\{\+path\}": read's parameter `p` is no variable of the template \(its variables: path\)/);
    assert.match(r.stderr, /2 errors; nothing was built/);
    fs.writeFileSync(path.join(dir, 'plugin.js'), source.split('\n').filter((_, i) => i !== 2 && i !== 3).join('\n'));
    const ok = spawnSync(process.execPath, [CLI, 'manifest', dir], { encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout).resources, [{ uri: 'docs://ok', name: 'ok' }]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

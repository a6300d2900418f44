// Prompts and completion: definePrompt becomes the manifest's `prompts` and defineCompletion the
// `complete` marks on a prompt's argument or a resource template, held to the host's rules at the
// line of the call; `prompts.get` and `completion.complete` are dispatched to their functions as
// the component does it.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  assistant,
  defineCompletion,
  definePrompt,
  defineResourceTemplate,
  defineTool,
  DefinitionError,
  resourceLink,
  ToolError,
  user,
  __internal,
} from '../index.mjs';

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

/** What the host's `prompts.get` gets: {ok: prompt} or {err: message}. */
function get(name, args = []) {
  try {
    return { ok: __internal.get({ name, arguments: args }) };
  } catch (e) {
    assert.equal(typeof e, 'string', 'prompts.get must throw a string (the WIT error payload)');
    return { err: e };
  }
}

/** What the host's `completion.complete` gets: {ok: values} or {err: message}. */
function complete(tag, val, argument, value = '', context = []) {
  try {
    return { ok: __internal.complete({ target: { tag, val }, argument, value, context }) };
  } catch (e) {
    assert.equal(typeof e, 'string', 'completion.complete must throw a string (the WIT error payload)');
    return { err: e };
  }
}

const base = { name: 'p', arguments: [{ name: 'path', required: true }], get: (path) => path };
const text = (val, role = 'user') => ({ role, content: { tag: 'text', val } });

test('the manifest lists prompts with every field, in order, and what completes', () => {
  tool();
  const summarise = definePrompt({
    name: 'summarise-file',
    title: 'Summarise a file',
    description: ' Summarise a file of the workspace. ',
    arguments: [{ name: 'path', description: 'the file', required: true }, { name: 'style', description: 'short or long' }],
    get: (path, style = 'short') => `${path} ${style}`,
  });
  defineCompletion({ prompt: summarise, argument: 'path', complete: (value) => [value] });
  const m = manifest();
  assert.deepEqual(m.prompts, [
    {
      name: 'summarise-file',
      title: 'Summarise a file',
      description: 'Summarise a file of the workspace.',
      arguments: [
        { name: 'path', description: 'the file', required: true, complete: true },
        { name: 'style', description: 'short or long' },
      ],
    },
  ]);
  assert.deepEqual(Object.keys(m.prompts[0]), ['name', 'title', 'description', 'arguments']);
  assert.deepEqual(Object.keys(m.prompts[0].arguments[0]), ['name', 'description', 'required', 'complete']);
  assert.deepEqual(Object.keys(m), ['format', 'name', 'version', 'description', 'capabilities', 'tools', 'prompts']);
  assert.deepEqual(summarise.spec, m.prompts[0]);
});

test('empty fields and lists are left out', () => {
  tool();
  assert.equal('prompts' in manifest(), false);
  definePrompt({ name: 'hello', description: '', arguments: [], get: () => 'Hello.' });
  definePrompt({ name: 'greet', arguments: [{ name: 'who', description: '', required: false }], get: (who) => `Hello ${who}.` });
  assert.deepEqual(manifest().prompts, [{ name: 'hello' }, { name: 'greet', arguments: [{ name: 'who' }] }]);
});

test('a template lists the variables completed, in the order they were defined', () => {
  tool();
  const rows = defineResourceTemplate({ uriTemplate: 'db://{table}/rows/{id}', name: 'row', read: (table, id) => `${table}${id}` });
  defineResourceTemplate({ uriTemplate: 'file:///{+path}', name: 'file', read: (path) => path });
  defineCompletion({ template: 'db://{table}/rows/{id}', argument: 'id', complete: () => [] });
  defineCompletion({ template: rows, argument: 'table', complete: () => [] });
  const m = manifest();
  assert.deepEqual(m.resourceTemplates, [
    { uriTemplate: 'db://{table}/rows/{id}', name: 'row', complete: ['id', 'table'] },
    { uriTemplate: 'file:///{+path}', name: 'file' },
  ]);
  assert.deepEqual(rows.spec.complete, ['id', 'table']);
  assert.equal('prompts' in m, false);
});

test('a misuse names the file and line of the call', () => {
  const line = lineHere(); const err = rejects(() => definePrompt({ ...base, args: [] }), /unknown prompt option `args`; expected one of: name, title, description, arguments, get/);
  assert.equal(err.line, line);
  rejects(() => definePrompt({ ...base, titel: 'x' }), /unknown prompt option `titel`; did you mean `title`\?/);
  rejects(() => definePrompt({ ...base, arguments: [{ name: 'path', optional: true }] }), /unknown prompt argument option `optional`/);
  rejects(() => definePrompt('p'), /definePrompt takes an object, got "p"/);
});

test('names are held to the host rules', () => {
  for (const name of ['-x', 'a b', '', 'é', 'n'.repeat(65), 42]) {
    rejects(() => definePrompt({ ...base, name }), /prompt name .* must be 1 to 64 of \[A-Za-z0-9_-\], not starting with `-`/);
  }
  rejects(() => definePrompt({ ...base, name: undefined }), /definePrompt needs `name`, such as "summarise-file"/);
  tool();
  definePrompt({ ...base, name: 'n'.repeat(64) });
  definePrompt({ ...base, name: '_a-9' });
  assert.deepEqual(manifest().prompts.map((p) => p.name), ['n'.repeat(64), '_a-9']);
});

test('texts are held to the host rules', () => {
  const cases = [
    [{ title: ' ' }, /prompt "p": `title` must not be blank when given/],
    [{ title: 'a\nb' }, /`title` contains the control character U\+000A; it must be one line/],
    [{ title: 't'.repeat(129) }, /`title` is 129 characters long; the host allows at most 128/],
    [{ title: 1 }, /`title` must be a string, got 1/],
    [{ description: 'd'.repeat(1025) }, /`description` is 1025 characters long; the host allows at most 1024/],
    [{ description: 'a\u0000' }, /`description` contains the control character U\+0000; only tabs and line breaks/],
  ];
  for (const [options, pattern] of cases) rejects(() => definePrompt({ ...base, ...options }), pattern);
  tool();
  definePrompt({ ...base, title: 't'.repeat(128), description: 'one\n\ttwo' });
  assert.equal(manifest().prompts[0].description, 'one\n\ttwo');
});

test('arguments are held to the host rules', () => {
  const args = (list, get = () => '') => definePrompt({ name: 'p', arguments: list, get });
  rejects(() => args('path'), /`arguments` must be an array such as/);
  rejects(() => args(['path']), /`arguments\[0\]` must be an object such as \{ name: 'path' \}, got "path"/);
  rejects(() => args([{ name: 'größe' }]), /argument name "größe" must match \[A-Za-z_\]\[A-Za-z0-9_\]\* \(at most 64 chars\)/);
  rejects(() => args([{ name: '1a' }]), /argument name "1a" must match/);
  rejects(() => args([{ name: 'a', description: 'd'.repeat(1025) }], (a) => a), /argument `a`: `description` is 1025 characters long/);
  rejects(() => args([{ name: 'a', required: 'yes' }], (a) => a), /argument `a`: `required` is a flag: true or false/);
  rejects(() => args([{ name: 'a' }, { name: 'a' }], (a) => a), /the argument `a` is declared twice/);
  const many = Array.from({ length: 17 }, (_, i) => ({ name: `a${i}` }));
  rejects(() => args(many), /has 17 arguments; a prompt takes at most 16/);
});

test("get's parameters are the arguments, by name", () => {
  const p = (get, list = [{ name: 'path', required: true }, { name: 'style' }]) => definePrompt({ name: 'p', arguments: list, get });
  rejects(() => p((path, colour) => ''), /get's parameter `colour` is no argument of the prompt \(its arguments: path, style\); declare it in `arguments`/);
  rejects(() => p((path) => ''), /the argument `style` needs a parameter `style` of get/);
  rejects(() => p(({ path }) => ''), /get's parameter 1 `\{ path \}` must be a plain name/);
  rejects(() => p((...all) => ''), /must be a plain name/);
  rejects(() => p((path = 'a', style) => ''), /get's parameter `path` has a default value, so its argument must not be `required`/);
  rejects(() => p('text'), /`get` must be a function, got "text"/);
  rejects(() => p(async (path, style) => ''), /`get` is async; a prompt's get is a plain synchronous function/);
  rejects(() => p(function* (path, style) { yield ''; }), /`get` is a generator/);
  rejects(() => p(class {}), /`get` is a class; write a plain function/);
  rejects(() => p((x) => '', []), /get's parameter `x` is no argument of the prompt \(its arguments: none\)/);
  // Any order; a bound function takes the declared order.
  tool();
  const swapped = p((style, path) => `${path}|${style}`);
  assert.deepEqual(swapped.call({ path: 'a', style: 'b' }).messages, [user('a|b')]);
  __internal.reset();
  const bound = p(function (path, style) { return `${path}|${style}|${this.x}`; }.bind({ x: 1 }));
  assert.deepEqual(bound.call({ style: 's', path: 'p' }).messages, [user('p|s|1')]);
});

test('names are declared once, within the cap', () => {
  const first = lineHere(); definePrompt(base);
  rejects(() => definePrompt(base), new RegExp(`prompt "p" is declared twice; the first definition is at .*:${first}`));
  for (let i = 1; i < 32; i++) definePrompt({ ...base, name: `p${i}` });
  rejects(() => definePrompt({ ...base, name: 'p32' }), /this plugin declares more than 32 prompts; the host allows at most 32/);
});

test('a completion names an existing prompt argument or template variable, once', () => {
  const summarise = definePrompt({ ...base, name: 'summarise', arguments: [{ name: 'path' }, { name: 'style' }], get: (path, style) => '' });
  defineResourceTemplate({ uriTemplate: 'file:///{+path}', name: 'file', read: (path) => path });
  const c = (options) => defineCompletion({ complete: (value) => [value], ...options });
  const usage = /a completion names what it completes: defineCompletion\(\{ prompt: 'NAME', argument: 'ARG', complete \}\) or defineCompletion\(\{ template: 'file:\/\/\/\{\+path\}'/;
  rejects(() => c({ argument: 'path' }), usage);
  rejects(() => c({ prompt: 'summarise' }), usage);
  rejects(() => defineCompletion('summarise'), /defineCompletion takes an object, got "summarise"/);
  rejects(() => c({ prompt: 'summarise', template: 'file:///{+path}', argument: 'path' }), /a completion names either `prompt` or `template`, not both/);
  rejects(() => c({ prompt: 'summarise', argument: 'path', limit: 3 }), /unknown completion option `limit`; expected one of: prompt, template, argument, complete/);
  rejects(() => c({ prompt: 7, argument: 'path' }), /completion `prompt` must be a prompt's name \(or the object definePrompt returned\), got 7/);
  rejects(() => c({ prompt: 'summarise', argument: 7 }), /completion `argument` must be a string, got 7/);
  rejects(() => c({ prompt: 'other', argument: 'path' }), /this plugin has no prompt "other" \(define the prompt before its completion\)/);
  rejects(() => c({ prompt: summarise, argument: 'colour' }), /prompt "summarise" has no argument `colour` \(its arguments: path, style\)/);
  rejects(() => c({ template: 'file:///{path}', argument: 'path' }), /this plugin has no resource template "file:\/\/\/\{path\}" \(define the template before its completion\)/);
  rejects(() => c({ template: 'file:///{+path}', argument: 'p' }), /"file:\/\/\/\{\+path\}" has no variable `p` \(its variables: path\)/);
  const first = lineHere(); defineCompletion({ prompt: 'summarise', argument: 'path', complete: (value) => [value] });
  rejects(() => c({ prompt: summarise, argument: 'path' }), new RegExp(`\`path\` of prompt "summarise" is completed twice; the first definition is at .*:${first}`));
  c({ template: 'file:///{+path}', argument: 'path' });
  rejects(() => c({ template: 'file:///{+path}', argument: 'path' }), /`path` of resource template "file:\/\/\/\{\+path\}" is completed twice/);
});

test("a completion's function: value and, if it wants it, context; synchronous", () => {
  definePrompt(base);
  const c = (complete) => defineCompletion({ prompt: 'p', argument: 'path', complete });
  const takes = /the completion of `path`: complete takes `value` \(what has been typed\) and, if it wants them, `context`/;
  rejects(() => c((value, context, more) => []), takes);
  rejects(() => c((...all) => []), takes);
  rejects(() => c([]), /`complete` must be a function, got \[\]/);
  rejects(() => c(async (value) => []), /`complete` is async; a completion's complete is a plain synchronous function/);
  rejects(() => c(class {}), /`complete` is a class/);
});

test('messages: user, assistant and resourceLink', () => {
  assert.deepEqual(user('hi'), { role: 'user', content: { type: 'text', text: 'hi' } });
  assert.deepEqual(assistant('ok'), { role: 'assistant', content: { type: 'text', text: 'ok' } });
  assert.deepEqual(resourceLink('file:///a', 'a'), { role: 'user', content: { type: 'resource_link', uri: 'file:///a', name: 'a' } });
  assert.deepEqual(resourceLink('file:///a', 'a', { description: 'the a', mimeType: 'text/plain', role: 'assistant' }), {
    role: 'assistant',
    content: { type: 'resource_link', uri: 'file:///a', name: 'a', description: 'the a', mimeType: 'text/plain' },
  });
  assert.throws(() => user(1), /user\(\) takes the message's text, a string, got 1/);
  assert.throws(() => resourceLink('file:///a'), /resourceLink\(\) takes `name` as a string, got undefined/);
  assert.throws(() => resourceLink('file:///a', 'a', { mime_type: 'x' }), /resourceLink\(\) has no option `mime_type`/);
  assert.throws(() => resourceLink('file:///a', 'a', { role: 'system' }), /`role` 'user' or 'assistant', got "system"/);
  assert.throws(() => resourceLink('file:///a', 'a', { mimeType: 1 }), /takes `mimeType` as a string, got 1/);
});

test('a get: arguments by name, defaults when absent, every result shape, errors', () => {
  tool();
  definePrompt({
    name: 'summarise-file',
    arguments: [{ name: 'path', required: true }, { name: 'style' }],
    get(path, style = 'short') {
      switch (path) {
        case 'str':
          return `${path} ${style}`;
        case 'one':
          return resourceLink('file:///a', 'a', { description: 'the a', mimeType: 'text/plain' });
        case 'object':
          return { description: 'A summary.', messages: [assistant('Which file?'), user('x')] };
        case 'literal':
          return [{ role: 'user', content: { type: 'text', text: 'typed by hand' } }];
        case 'error':
          throw new Error('no such file');
        case 'string':
          throw 'just text';
        case 'promise':
          return Promise.resolve('x');
        case 'number':
          return 42;
        case 'bad-message':
          return ['a'];
        case 'bad-object':
          return { text: 'a' };
        case 'bad-description':
          return { description: 1, messages: [] };
        default:
          return [user(`Summarise ${path} (${style}).`), resourceLink(`file:///${path}`, path)];
      }
    },
  });
  const g = (path, more = []) => get('summarise-file', [['path', path], ...more]);
  assert.deepEqual(g('a.txt'), {
    ok: {
      description: null,
      messages: [text('Summarise a.txt (short).'), { role: 'user', content: { tag: 'resource-link', val: { uri: 'file:///a.txt', name: 'a.txt', description: null, mimeType: null } } }],
    },
  });
  assert.deepEqual(get('summarise-file', [['style', 'long'], ['path', 'a']]).ok.messages[0], text('Summarise a (long).'));
  assert.deepEqual(g('str'), { ok: { description: null, messages: [text('str short')] } });
  assert.deepEqual(g('one').ok.messages, [{ role: 'user', content: { tag: 'resource-link', val: { uri: 'file:///a', name: 'a', description: 'the a', mimeType: 'text/plain' } } }]);
  assert.deepEqual(g('object'), { ok: { description: 'A summary.', messages: [text('Which file?', 'assistant'), text('x')] } });
  assert.deepEqual(g('literal').ok.messages, [text('typed by hand')]);
  assert.deepEqual(g('error'), { err: 'no such file' });
  assert.deepEqual(g('string'), { err: 'just text' });
  assert.deepEqual(g('promise'), { err: 'prompt "summarise-file": get returned a Promise; a prompt\'s get is synchronous, return the messages themselves' });
  const shape = 'a prompt returns a string (one user message), an array of messages (user(), assistant(), resourceLink()) or {description, messages}';
  assert.deepEqual(g('number'), { err: `prompt "summarise-file": get returned 42; ${shape}` });
  assert.deepEqual(g('bad-object'), { err: `prompt "summarise-file": get returned {"text":"a"}; ${shape}` });
  assert.deepEqual(g('bad-message'), { err: 'prompt "summarise-file": get returned "a" as message 1; build messages with user(), assistant() or resourceLink()' });
  assert.deepEqual(g('bad-description'), { err: 'prompt "summarise-file": get returned the description 1; it is a string' });
  // What the host checks before it asks.
  assert.deepEqual(get('other'), { err: 'this plugin has no prompt other' });
  assert.deepEqual(get('summarise-file'), { err: 'prompt `summarise-file` needs its argument `path`' });
  assert.deepEqual(g('a', [['colour', 'red']]), { err: 'prompt `summarise-file` takes no argument `colour` (it takes: path, style)' });
});

test('a complete: by target and argument, with the context, errors', () => {
  tool();
  definePrompt({ name: 'p', arguments: [{ name: 'path' }, { name: 'style' }], get: (path, style) => '' });
  defineResourceTemplate({ uriTemplate: 'file:///{+path}', name: 'file', read: (path) => path });
  defineCompletion({
    prompt: 'p',
    argument: 'path',
    complete(value, context) {
      if (value === 'error') throw new Error('cannot list');
      if (value === 'promise') return Promise.resolve([]);
      if (value === 'set') return new Set(['a']);
      if (value === 'numbers') return ['a', 1];
      return [value + '1', JSON.stringify(context)];
    },
  });
  defineCompletion({ template: 'file:///{+path}', argument: 'path', complete: (value) => [`${value}.txt`] });
  assert.deepEqual(complete('prompt', 'p', 'path', 'sr', [['style', 'long']]), { ok: ['sr1', '{"style":"long"}'] });
  assert.deepEqual(complete('resource-template', 'file:///{+path}', 'path', 'src/ma'), { ok: ['src/ma.txt'] });
  assert.deepEqual(complete('prompt', 'p', 'path', 'error'), { err: 'cannot list' });
  assert.deepEqual(complete('prompt', 'p', 'path', 'promise'), {
    err: "the completion of `path`: complete returned a Promise; a completion's complete is synchronous, return the values themselves",
  });
  assert.deepEqual(complete('prompt', 'p', 'path', 'set'), { err: 'the completion of `path`: complete returned {}; a completion returns an array of strings' });
  assert.deepEqual(complete('prompt', 'p', 'path', 'numbers'), { err: 'the completion of `path`: complete returned 1 as value 2; a completion returns an array of strings' });
  for (const [tag, val, argument] of [['prompt', 'p', 'style'], ['prompt', 'q', 'path'], ['resource-template', 'p', 'path'], ['prompt', 'file:///{+path}', 'path']]) {
    assert.deepEqual(complete(tag, val, argument), { err: `this plugin completes nothing for ${argument}` });
  }
});

test('a plugin without prompts answers every get and complete with an error', () => {
  tool();
  assert.deepEqual(get('p'), { err: 'this plugin has no prompt p' });
  assert.deepEqual(complete('prompt', 'p', 'a'), { err: 'this plugin completes nothing for a' });
  assert.deepEqual(complete('resource-template', 'file:///{+path}', 'path'), { err: 'this plugin completes nothing for path' });
});

test('the objects returned: spec, the function, and call as the host does', () => {
  const p = definePrompt({
    name: 'p',
    arguments: [{ name: 'path', required: true }, { name: 'style' }],
    get: (path, style = 'short') => (path === 'x' ? (() => { throw new Error('no x'); })() : { description: 'd', messages: [user(`${path} ${style}`)] }),
  });
  const c = defineCompletion({ prompt: 'p', argument: 'path', complete: (value, context) => [value, ...Object.values(context)] });
  const bare = defineCompletion({ prompt: p, argument: 'style', complete: (value) => [value] });
  assert.equal(p.name, 'p');
  assert.deepEqual(p.spec, { name: 'p', arguments: [{ name: 'path', required: true, complete: true }, { name: 'style', complete: true }] });
  assert.deepEqual(p.get('a'), { description: 'd', messages: [user('a short')] });
  assert.deepEqual(p.call({ path: 'a' }), { description: 'd', messages: [user('a short')] });
  assert.throws(() => p.call({ path: 'x' }), (e) => e instanceof ToolError && e.message === 'no x');
  assert.throws(() => p.call({}), (e) => e instanceof ToolError && e.message === 'prompt `p` needs its argument `path`');
  assert.equal(c.prompt, 'p');
  assert.equal(c.argument, 'path');
  assert.deepEqual(c.complete('a', {}), ['a']);
  assert.deepEqual(c.call('a', { style: 'b' }), ['a', 'b']);
  assert.deepEqual(c.call('a'), ['a']);
  assert.deepEqual(bare.call('s', { path: 'ignored' }), ['s']);
});

test('toolhost-js manifest reports every prompt mistake at its line, a broken prompt once', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-prompts-'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'demo', version: '0.1.0', type: 'module', toolhost: { main: 'plugin.js' } }));
    const source = `import { defineCompletion, definePrompt, defineResourceTemplate, defineTool, user } from 'toolhost-sdk';
defineTool({ name: 't', description: 'T.', params: [], run: () => 'x' });
definePrompt({ name: '-bad', get: () => '' });
defineCompletion({ prompt: '-bad', argument: 'a', complete: (v) => [v] });
defineResourceTemplate({ uriTemplate: 'file:///{a}{b}', name: 'f', read: (a, b) => a });
defineCompletion({ template: 'file:///{a}{b}', argument: 'a', complete: (v) => [v] });
definePrompt({ name: 'ok', arguments: [{ name: 'path', required: true }], get: (path) => [user(path)] });
defineCompletion({ prompt: 'ok', argument: 'nope', complete: (v) => [v] });
defineCompletion({ prompt: 'ok', argument: 'path', complete: (v) => [v] });
`;
    fs.writeFileSync(path.join(dir, 'plugin.js'), source);
    const r = spawnSync(process.execPath, [CLI, 'manifest', dir], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /plugin\.js:3: error: prompt name "-bad" must be 1 to 64 of \[A-Za-z0-9_-\], not starting with `-`/);
    assert.match(r.stderr, /plugin\.js:5: error: resource template "file:\/\/\/\{a\}\{b\}" has two expressions in a row/);
    assert.match(r.stderr, /plugin\.js:8: error: prompt "ok" has no argument `nope` \(its arguments: path\)/);
    assert.doesNotMatch(r.stderr, /plugin\.js:[46]:/);
    assert.match(r.stderr, /3 errors; nothing was built/);
    fs.writeFileSync(path.join(dir, 'plugin.js'), source.split('\n').filter((_, i) => i < 2 || i === 6 || i === 8).join('\n'));
    const built = spawnSync(process.execPath, [CLI, 'manifest', dir], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    assert.deepEqual(JSON.parse(built.stdout).prompts, [{ name: 'ok', arguments: [{ name: 'path', required: true, complete: true }] }]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

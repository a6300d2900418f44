import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { testing } from 'toolhost-sdk';
import { jsonSelect, mdTable, wordFreq, jsonApi } from './plugin.js';

beforeEach(() => testing.reset());

test('json_select: pointer into a JSON argument, errors naming what is there', () => {
  const doc = '{"items": [{"name": "a/b", "tags": ["x"]}], "~k": 1}';
  assert.equal(jsonSelect.call(doc, '/items/0/name'), '"a/b"');
  assert.equal(jsonSelect.call(doc, '/~0k'), '1');
  assert.equal(jsonSelect.call('[1,2]'), '[\n  1,\n  2\n]');
  assert.throws(() => jsonSelect.call(doc, '/items/3'), { message: 'nothing at /items/3: the array has 1 item(s)' });
  assert.throws(() => jsonSelect.call(doc, '/nope'), { message: "nothing at /nope: the object's keys are items, ~k" });
  assert.throws(() => jsonSelect.call(doc, 'items'), /is not a JSON pointer/);
  assert.throws(() => jsonSelect.call('{oops', ''), /argument 1 \(`document`\) is not valid JSON/);
});

test('md_table: columns from the rows or given, cells escaped', () => {
  const rows = '[{"name": "a|b", "size": 1}, {"name": "c", "note": "x\\ny"}]';
  assert.equal(
    mdTable.call(rows),
    '| name | size | note |\n| --- | --- | --- |\n| a\\|b | 1 |  |\n| c |  | x y |',
  );
  assert.equal(mdTable.call(rows, '["size"]'), '| size |\n| --- |\n| 1 |\n|  |');
  assert.deepEqual(testing.progress.at(-1), { done: 2, total: 2, message: '2 rows' });
  // The SDK checks the declared item type before the tool runs.
  assert.throws(() => mdTable.call('[1]'), { message: 'md_table: argument 1 (`rows`) must be an array of objects, got 1 at [0]' });
  assert.throws(() => mdTable.call('{}'), /argument 1 \(`rows`\) must be an array/);
});

test('word_freq: the rest argument, counted case-insensitively', () => {
  assert.equal(wordFreq.run('The cat, the dog, THE end'), '3\tthe\n1\tcat\n1\tdog\n1\tend');
  assert.throws(() => wordFreq.run(' ,, '), { message: 'the text has no words' });
});

test('json_api: sends the bearer secret header and selects from the answer', () => {
  const seen = [];
  testing.onHttp((req) => {
    seen.push(req);
    return { status: 200, body: '{"user": {"login": "ada"}}' };
  });
  assert.equal(jsonApi.run('https://api.example.com/user', '/user/login'), '"ada"');
  assert.deepEqual(seen[0].secretHeaders, [{ name: 'authorization', secret: 'api_token', prefix: 'Bearer ' }]);
  assert.deepEqual(seen[0].headers, [['accept', 'application/json']]);
  testing.onHttp(() => ({ status: 401, body: 'bad credentials' }));
  assert.throws(() => jsonApi.call('https://api.example.com/user'), {
    message: 'https://api.example.com/user answered HTTP 401: bad credentials',
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wordCount } from './plugin.js';

test('word_count counts words, lines and characters', () => {
  assert.deepEqual(wordCount.run('one two\nthree'), { words: 3, lines: 2, chars: 13 });
});

test('word_count as the host calls it: text in, JSON text out, errors as messages', () => {
  assert.equal(wordCount.call('a b'), '{"words":2,"lines":1,"chars":3}');
  assert.throws(() => wordCount.call('   '), { message: 'the text is empty' });
});

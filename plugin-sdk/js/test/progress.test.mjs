// `progress` under node: reports are kept in `testing.progress`, whole numbers, never a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progress, testing } from '../index.mjs';

test('progress reports are kept under node', () => {
  testing.reset();
  progress(3, 10, 'hashing');
  progress(4.7);
  progress(-2, null, 'x');
  assert.deepEqual(testing.progress, [
    { done: 3, total: 10, message: 'hashing' },
    { done: 4, message: '' },
    { done: 0, message: 'x' },
  ]);
  testing.reset();
  assert.deepEqual(testing.progress, []);
});

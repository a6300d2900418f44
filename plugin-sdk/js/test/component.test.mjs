// End to end through the real host: componentize the datakit example, embed its manifest, call
// its tools. Needs jco and a toolhost binary, so it runs only when both are given:
//   TOOLHOST_JCO=target/jstool/node_modules/.bin/jco TOOLHOST_BIN=target/debug/toolhost \
//     node --test plugin-sdk/js/test/
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
const { TOOLHOST_JCO: JCO, TOOLHOST_BIN: BIN } = process.env;
const skip = JCO && BIN ? false : 'set TOOLHOST_JCO and TOOLHOST_BIN to build and load a component';

test('datakit builds into a component the host loads and calls', { skip, timeout: 600_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-e2e-'));
  const wasm = path.join(dir, 'plugins', 'datakit.wasm');
  const build = spawnSync(process.execPath, [CLI, 'componentize', path.join(REPO, 'plugins/js/datakit'), '-o', wasm, '--wit', path.join(REPO, 'wit'), '--jco', path.resolve(JCO)], { encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  const manifest = spawnSync(process.execPath, [CLI, 'manifest', path.join(REPO, 'plugins/js/datakit')], { encoding: 'utf8' });
  assert.equal(manifest.status, 0, manifest.stderr);
  fs.writeFileSync(path.join(dir, 'manifest.json'), manifest.stdout);
  const embed = spawnSync(BIN, ['embed-manifest', wasm, '-m', path.join(dir, 'manifest.json')], { encoding: 'utf8' });
  assert.equal(embed.status, 0, embed.stderr);
  const call = (...args) => spawnSync(BIN, ['--no-cache', '--plugins', path.join(dir, 'plugins'), 'call', '--json', ...args], { encoding: 'utf8' });
  const ok = call('json_select', '{"a": [1, {"b": "x"}]}', '/a/1/b');
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { success: true, data: '"x"' });
  const rest = call('word_freq', 'b a', 'b');
  assert.equal(JSON.parse(rest.stdout).data, '2\tb\n1\ta');
  const thrown = call('md_table', '[1]');
  assert.equal(thrown.status, 1);
  assert.equal(JSON.parse(thrown.stdout).error, 'row 1 is 1, not an object');
  const ungranted = call('json_api', 'http://127.0.0.1:9/');
  assert.equal(ungranted.status, 1);
  assert.match(JSON.parse(ungranted.stdout).error, /plugin `datakit` has no network access/);
});

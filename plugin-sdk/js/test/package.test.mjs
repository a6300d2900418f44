// The SDK as shipped: FILES lists exactly the files toolhost embeds, and the template for
// `toolhost new NAME --lang js` is a working project once {{name}} is filled in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(SDK, 'bin', 'toolhost-js.mjs');

function walk(dir, base = dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return walk(p, base);
    return [path.relative(base, p).split(path.sep).join('/')];
  });
}

test('FILES lists every shipped file (everything but the tests), each once', () => {
  const listed = fs.readFileSync(path.join(SDK, 'FILES'), 'utf8').split('\n').filter(Boolean);
  assert.equal(new Set(listed).size, listed.length, 'no duplicates');
  const shipped = walk(SDK).filter((f) => !f.startsWith('test/') && f !== 'FILES' && !f.startsWith('node_modules/'));
  assert.deepEqual([...listed].sort(), shipped.sort());
});

test('the template becomes a project whose manifest derives and whose test passes', (ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-new-'));
  ctx.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const project = path.join(dir, 'my_tools');
  for (const rel of walk(path.join(SDK, 'template'))) {
    const text = fs.readFileSync(path.join(SDK, 'template', rel), 'utf8').replaceAll('{{name}}', 'my_tools');
    fs.mkdirSync(path.dirname(path.join(project, rel)), { recursive: true });
    fs.writeFileSync(path.join(project, rel), text);
  }
  const m = spawnSync(process.execPath, [CLI, 'manifest', project], { encoding: 'utf8' });
  assert.equal(m.status, 0, m.stderr);
  const manifest = JSON.parse(m.stdout);
  assert.equal(manifest.name, 'my_tools');
  assert.deepEqual(manifest.tools.map((t) => [t.name, t.rest, t.argCount]), [['word_count', true, 1]]);
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const t = spawnSync(process.execPath, [CLI, 'test', project], { encoding: 'utf8', env });
  assert.equal(t.status, 0, t.stdout + t.stderr);
  assert.match(t.stdout, /# pass 2\n/);
  // With the SDK vendored as node_modules/toolhost-sdk (what `toolhost new` writes), plain
  // `node --test` works too.
  const vendored = path.join(project, 'node_modules', 'toolhost-sdk');
  for (const rel of fs.readFileSync(path.join(SDK, 'FILES'), 'utf8').split('\n').filter(Boolean)) {
    fs.mkdirSync(path.dirname(path.join(vendored, rel)), { recursive: true });
    fs.copyFileSync(path.join(SDK, rel), path.join(vendored, rel));
  }
  const plain = spawnSync(process.execPath, ['--test'], { cwd: project, encoding: 'utf8', env });
  assert.equal(plain.status, 0, plain.stdout + plain.stderr);
  assert.match(plain.stdout, /# pass 2\n/);
});

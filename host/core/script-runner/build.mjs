#!/usr/bin/env node
// Build script-runner.wasm from runner.js and script.wit (run by `cargo xtask script-runner`).
//
//   node build.mjs JCO_NODE_MODULES OUT.wasm
//
// JCO_NODE_MODULES holds jco and componentize-qjs (and the rolldown jco brings). The component
// gets a `toolhost-script-source` custom section: the SHA-256 of runner.js and script.wit, which
// the host's test compares with the files, so a change to either without a rebuild fails.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [modules, out] = process.argv.slice(2);
if (!modules || !out) {
  console.error('usage: node build.mjs JCO_NODE_MODULES OUT.wasm');
  process.exit(2);
}

export function sourceDigest() {
  const h = crypto.createHash('sha256');
  for (const f of ['runner.js', 'script.wit']) h.update(fs.readFileSync(path.join(here, f)));
  return h.digest('hex');
}

const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-script-runner-'));
try {
  const { rolldown } = await import(pathToFileURL(path.join(modules, 'rolldown', 'dist', 'index.mjs')).href);
  const bundle = await rolldown({
    input: path.join(here, 'runner.js'),
    external: ['toolhost:script/tools'],
    resolve: { modules: [modules] },
    logLevel: 'silent',
  });
  const entry = path.join(stage, 'runner.bundle.js');
  await bundle.write({ file: entry, format: 'esm' });
  const bare = path.join(stage, 'bare.wasm');
  const jco = path.join(modules, '.bin', 'jco');
  const args = [
    'componentize', entry, '--wit', path.join(here, 'script.wit'), '--world-name', 'runner',
    '--backend', 'qjs', '--backend-qjs-disable-async', '--backend-qjs-stub-wasi', '-o', bare,
  ];
  const r = spawnSync(jco, args, { stdio: 'inherit', cwd: stage });
  if (r.status !== 0) throw new Error(`jco componentize failed (${r.signal ?? `exit code ${r.status}`})`);
  const wasm = fs.readFileSync(bare);
  fs.writeFileSync(out, Buffer.concat([wasm, customSection('toolhost-script-source', sourceDigest())]));
  console.error(`wrote ${out} (${(fs.statSync(out).size / 1024 / 1024).toFixed(2)} MiB)`);
} finally {
  fs.rmSync(stage, { recursive: true, force: true });
}

function leb(n) {
  const bytes = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    bytes.push(b);
  } while (n);
  return Buffer.from(bytes);
}

/** A component-level custom section (id 0): name, then payload. */
function customSection(name, payload) {
  const body = Buffer.concat([leb(Buffer.byteLength(name)), Buffer.from(name), Buffer.from(payload)]);
  return Buffer.concat([Buffer.from([0]), leb(body.length), body]);
}

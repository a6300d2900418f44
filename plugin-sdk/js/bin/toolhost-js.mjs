#!/usr/bin/env node
// toolhost-js: turn a JavaScript plugin project into what toolhost loads.
//
//   toolhost-js manifest PROJECT_DIR
//   toolhost-js componentize PROJECT_DIR -o OUT.wasm --wit WIT_DIR [--jco PATH] [--stub-wasi] [--keep-stage]
//   toolhost-js test PROJECT_DIR [-- NODE_TEST_ARGS...]
//   toolhost-js bundle PROJECT_DIR -o OUT.js --jco PATH
//   toolhost-js runtime -o OUT.wasm --wit WIT_DIR --jco PATH
//
// `manifest` imports the project's module under node and prints the manifest JSON derived from
// its definePlugin/defineTool calls. `componentize` checks the same, then builds the component
// with jco's QuickJS backend (without a manifest section: `toolhost embed-manifest` or
// `toolhost build` adds it). Misuse is reported as `FILE:LINE: error: message`, exit code 1.
// `bundle` and `runtime` are `toolhost dev`'s fast path: the project bundled into one script
// (rolldown, which jco installs), run by a prebuilt runtime component that reads it from the
// sources the host maps read-only at /toolhost-dev, so a save needs no component build.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SDK_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The files a component needs from the SDK (the rest is node-side tooling). */
const RUNTIME_FILES = ['package.json', 'index.mjs'];
const ENTRY = '__toolhost_entry.mjs';
const BACKEND = '__toolhost_backend.mjs';
// The world the SDK builds for: `plugin` and every optional export (`resources`, `prompts`,
// `completion`).
const WORLD = 'plugin-full';
const SKIP_DIRS = new Set(['node_modules', 'target', 'dist']);

const USAGE = `usage:
  toolhost-js manifest PROJECT_DIR
  toolhost-js componentize PROJECT_DIR -o OUT.wasm --wit WIT_DIR [--jco PATH] [--stub-wasi] [--keep-stage]
  toolhost-js test PROJECT_DIR [-- NODE_TEST_ARGS...]
  toolhost-js bundle PROJECT_DIR -o OUT.js --jco PATH
  toolhost-js runtime -o OUT.wasm --wit WIT_DIR --jco PATH

A project is a folder whose package.json has "toolhost": {"main": "plugin.js"}; the main module
imports 'toolhost-sdk' (resolved to this SDK, no npm install needed).
--jco is the jco executable (default: \`jco\` on PATH), e.g. node_modules/.bin/jco from
  npm install @bytecodealliance/jco@1.35.0 componentize-qjs@0.4.5`;

/** A user-facing failure: printed as is, exit code 1 (2 for usage). */
class Failure extends Error {
  constructor(message, code = 1) {
    super(message);
    this.code = code;
  }
}

function shown(file) {
  if (!file) return '<unknown>';
  if (file.startsWith('file://')) file = fileURLToPath(file);
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

function located(file, line, message) {
  return new Failure(`${shown(file)}:${line ?? 1}: error: ${message}`);
}

/** Line number (1-based) of character `pos` in `text`. */
function lineOf(text, pos) {
  return text.slice(0, pos).split('\n').length;
}

/** Read PROJECT_DIR/package.json and find the main module. */
function readProject(dir) {
  const root = path.resolve(dir);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) {
    throw new Failure(`${dir}: error: not a directory`);
  }
  const pkgPath = path.join(root, 'package.json');
  if (!fs.existsSync(pkgPath)) {
    throw located(pkgPath, 1, 'missing: a toolhost JavaScript plugin needs a package.json with "toolhost": {"main": "plugin.js"}');
  }
  const text = fs.readFileSync(pkgPath, 'utf8');
  let pkg;
  try {
    pkg = JSON.parse(text);
  } catch (e) {
    const pos = /position (\d+)/.exec(e.message);
    throw located(pkgPath, pos ? lineOf(text, Number(pos[1])) : 1, `not valid JSON: ${e.message}`);
  }
  const lineOfKey = (key) => {
    const at = text.indexOf(`"${key}"`);
    return at < 0 ? 1 : lineOf(text, at);
  };
  const th = pkg.toolhost;
  if (th === undefined) {
    throw located(pkgPath, 1, 'has no "toolhost" field: add "toolhost": {"main": "plugin.js"}');
  }
  if (th === null || typeof th !== 'object' || Array.isArray(th)) {
    throw located(pkgPath, lineOfKey('toolhost'), '"toolhost" must be an object like {"main": "plugin.js"}');
  }
  for (const key of Object.keys(th)) {
    if (key !== 'main') throw located(pkgPath, lineOfKey(key), `unknown "toolhost" field "${key}"; expected "main"`);
  }
  if (typeof th.main !== 'string' || th.main === '') {
    throw located(pkgPath, lineOfKey('toolhost'), '"toolhost.main" must name the plugin module, e.g. "plugin.js"');
  }
  const main = path.resolve(root, th.main);
  const rel = path.relative(root, main);
  if (rel.startsWith('..') || path.isAbsolute(rel)) {
    throw located(pkgPath, lineOfKey('main'), `"toolhost.main" ${JSON.stringify(th.main)} is outside the project folder`);
  }
  if (!fs.existsSync(main) || !fs.statSync(main).isFile()) {
    throw located(pkgPath, lineOfKey('main'), `"toolhost.main" names ${JSON.stringify(th.main)}, which does not exist`);
  }
  if (!/\.(m?js)$/.test(main)) {
    throw located(pkgPath, lineOfKey('main'), `"toolhost.main" must be a .js or .mjs ES module (TypeScript: compile it first)`);
  }
  if (main.endsWith('.js') && pkg.type !== 'module') {
    throw located(pkgPath, 1, 'a .js main module must be an ES module: add "type": "module"');
  }
  const name = typeof pkg.name === 'string' ? pkg.name.replace(/^@[^/]+\//, '') : undefined;
  const defaults = {
    name,
    version: typeof pkg.version === 'string' ? pkg.version : undefined,
    description: typeof pkg.description === 'string' ? pkg.description : undefined,
  };
  return { root, pkgPath, main, mainRel: rel.split(path.sep).join('/'), defaults };
}

/** Import the project under node and derive its manifest. */
async function describe(project) {
  const { register } = await import('node:module');
  register(pathToFileURL(path.join(SDK_DIR, 'lib', 'hooks.mjs')));
  const sdk = await import(pathToFileURL(path.join(SDK_DIR, 'index.mjs')).href);
  // Every definition error of the module is reported, not only the first.
  sdk.__internal.collectErrors();
  try {
    await import(pathToFileURL(project.main).href);
    const manifest = sdk.__internal.manifest(project.defaults, { file: project.main, line: 1 });
    for (const w of sdk.__internal.warnings()) {
      process.stderr.write(`${shown(w.file ?? project.main)}:${w.line ?? 1}: warning: ${w.message}\n`);
    }
    return manifest;
  } catch (e) {
    throw asFailure(e, project, sdk);
  }
}

/** Turn whatever the user's module threw into `FILE:LINE: error: message`. */
function asFailure(e, project, sdk) {
  if (e instanceof sdk.DefinitionErrors) {
    const lines = e.errors.map((d) => `${shown(d.file ?? project.main)}:${d.line ?? 1}: error: ${d.message}`);
    return new Failure(`${lines.join('\n')}\ntoolhost-js: ${e.errors.length} errors; nothing was built`);
  }
  if (e instanceof sdk.DefinitionError) return located(e.file ?? project.main, e.line, e.message);
  if (e instanceof Failure) return e;
  const stack = e && typeof e.stack === 'string' ? e.stack : '';
  const message = e instanceof Error ? `${e.name}: ${e.message}` : `uncaught ${String(e)}`;
  // A syntax error's stack starts with "file:///x/plugin.js:LINE"; a thrown one's names frames.
  const head = /^(file:\/\/\S+?):(\d+)\s*$/m.exec(stack.split('\n')[0] ?? '');
  if (head) return located(head[1], Number(head[2]), message);
  if (e instanceof SyntaxError) {
    // Node does not say which module failed to parse: ask `node --check` of each source.
    const hit = findSyntaxError(project.root);
    if (hit) return located(hit.file, hit.line, message);
  }
  const site = sdk.__internal.siteOfStack(stack, null);
  if (site && !site.file.startsWith('node:')) return located(site.file, site.line, message);
  return located(project.main, 1, message);
}

/** The first project source (outside node_modules) that `node --check` rejects. */
function findSyntaxError(root) {
  const sources = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIP_DIRS.has(entry.name)) continue;
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/\.m?js$/.test(entry.name)) sources.push(p);
    }
  };
  walk(root);
  for (const file of sources.sort()) {
    const r = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' });
    const m = /^(.*):(\d+)\n/.exec(r.stderr ?? '');
    if (r.status !== 0 && m) return { file: m[1], line: Number(m[2]) };
  }
  return null;
}

function parseArgs(argv, spec) {
  const out = { positional: [], rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      out.rest = argv.slice(i + 1);
      break;
    }
    const key = spec[a];
    if (key === undefined) {
      if (a.startsWith('-')) throw new Failure(`unknown option ${a}\n\n${USAGE}`, 2);
      out.positional.push(a);
    } else if (key.flag) {
      out[key.name] = true;
    } else {
      if (i + 1 >= argv.length) throw new Failure(`${a} needs a value\n\n${USAGE}`, 2);
      out[key.name] = argv[++i];
    }
  }
  return out;
}

function oneProject(args) {
  if (args.positional.length !== 1) throw new Failure(`give exactly one PROJECT_DIR\n\n${USAGE}`, 2);
  return readProject(args.positional[0]);
}

async function cmdManifest(argv) {
  const project = oneProject(parseArgs(argv, {}));
  const manifest = await describe(project);
  process.stdout.write(JSON.stringify(manifest, null, 2) + '\n');
}

/** Copy a tree, skipping what a build must not see (dependencies, VCS, outputs, dotfiles). */
function copyProject(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIP_DIRS.has(entry.name) || entry.name.endsWith('.wasm')) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) copyProject(src, dst);
    else if (entry.isFile()) fs.copyFileSync(src, dst);
  }
}

function findJco(given) {
  if (given) {
    const p = path.resolve(given);
    if (!fs.existsSync(p)) throw new Failure(`--jco ${given}: no such file`);
    return p;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, 'jco');
    if (dir && fs.existsSync(p)) return p;
  }
  throw new Failure(
    'cannot find jco: pass --jco PATH (install it with `npm install --prefix DIR @bytecodealliance/jco@1.35.0 componentize-qjs@0.4.5`, then use DIR/node_modules/.bin/jco)',
  );
}

function run(cmd, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk) => {
      output += chunk;
      process.stderr.write(chunk);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, output }));
  });
}

/** The component's entry: sets up the host backend, loads the plugin, exports `tools`,
 * `resources`, `prompts` and `completion`. */
function entrySource(mainRel, name) {
  return `// Generated by toolhost-js: the component's entry module.
import './${BACKEND}';
import './${mainRel}';
import { __internal } from 'toolhost-sdk';

// The plugin's name, for kv's errors (the operator's grant names it).
__internal.setPluginName(${JSON.stringify(name)});

export const tools = {
  call(tool, args) {
    return __internal.dispatch(tool, args);
  },
};

export const resources = {
  read(req) {
    return __internal.read(req);
  },
};

export const prompts = {
  get(req) {
    return __internal.get(req);
  },
};

export const completion = {
  complete(req) {
    return __internal.complete(req);
  },
};
`;
}

const BACKEND_SOURCE = `// Generated by toolhost-js: log, progress, http, process and kv go to the host; console writes to the host's log.
import host from 'toolhost:plugin/host@0.1.0';
import http from 'toolhost:plugin/http@0.1.0';
import hostProcess from 'toolhost:plugin/process@0.1.0';
import kvStore from 'wasi:keyvalue/store@0.2.0-draft2';
import kvAtomics from 'wasi:keyvalue/atomics@0.2.0-draft2';
import kvBatch from 'wasi:keyvalue/batch@0.2.0-draft2';
import { __internal, log } from 'toolhost-sdk';

__internal.setBackend({
  log: (level, message) => host.log(level, message),
  // componentize-qjs: u64 is a number (exact to 2^53), option<u64> a number or null.
  progress: (done, total, message) => host.progress(done, total === undefined ? null : total, message),
  send: (request) => http.send(request),
  run: (program, args) => hostProcess.run(program, args),
  kv: { store: kvStore, atomics: kvAtomics, batch: kvBatch },
});

// A plugin's stdout reaches no one (and traps with --stub-wasi): console.* logs to the host.
globalThis.console = {
  log: (...a) => log.info(...a),
  info: (...a) => log.info(...a),
  warn: (...a) => log.warn(...a),
  error: (...a) => log.error(...a),
  debug: (...a) => log.debug(...a),
  trace: (...a) => log.trace(...a),
};
`;

async function cmdComponentize(argv) {
  const args = parseArgs(argv, {
    '-o': { name: 'out' },
    '--out': { name: 'out' },
    '--wit': { name: 'wit' },
    '-w': { name: 'wit' },
    '--jco': { name: 'jco' },
    '--keep-stage': { name: 'keepStage', flag: true },
    '--stub-wasi': { name: 'stubWasi', flag: true },
  });
  if (!args.out) throw new Failure(`componentize needs -o OUT.wasm\n\n${USAGE}`, 2);
  if (!args.wit) throw new Failure(`componentize needs --wit WIT_DIR (the toolhost repository's wit/)\n\n${USAGE}`, 2);
  const project = oneProject(args);
  const wit = path.resolve(args.wit);
  if (!fs.existsSync(wit)) throw new Failure(`--wit ${args.wit}: no such file or directory`);
  const jco = findJco(args.jco);
  const out = path.resolve(args.out);

  // Check the declarations first: a misuse reads far better here than from inside QuickJS.
  const manifest = await describe(project);
  const count = (list, noun) => (list && list.length > 0 ? `, ${list.length} ${noun}${list.length === 1 ? '' : 's'}` : '');
  const served =
    count(manifest.resources, 'resource') + count(manifest.resourceTemplates, 'resource template') + count(manifest.prompts, 'prompt');
  process.stderr.write(`toolhost-js: ${manifest.name} ${manifest.version}: ${manifest.tools.length} tool${manifest.tools.length === 1 ? '' : 's'}${served} checked\n`);

  // Stage the project with the SDK as its `toolhost-sdk` package: the QuickJS build resolves
  // imports only inside its module root, and must see this SDK, not some other copy.
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-'));
  try {
    const app = path.join(stage, 'app');
    copyProject(project.root, app);
    const modules = path.join(project.root, 'node_modules');
    if (fs.existsSync(modules)) {
      for (const entry of fs.readdirSync(modules)) {
        if (entry === 'toolhost-sdk' || entry.startsWith('.')) continue;
        fs.cpSync(path.join(modules, entry), path.join(stage, 'node_modules', entry), {
          recursive: true,
          dereference: true,
        });
      }
    }
    const sdk = path.join(stage, 'node_modules', 'toolhost-sdk');
    fs.mkdirSync(sdk, { recursive: true });
    for (const f of RUNTIME_FILES) fs.copyFileSync(path.join(SDK_DIR, f), path.join(sdk, f));
    fs.writeFileSync(path.join(app, BACKEND), BACKEND_SOURCE);
    fs.writeFileSync(path.join(app, ENTRY), entrySource(project.mainRel, manifest.name));

    fs.mkdirSync(path.dirname(out), { recursive: true });
    const jcoArgs = [
      'componentize',
      path.join(app, ENTRY),
      '--wit',
      wit,
      '--world-name',
      WORLD,
      '--backend',
      'qjs',
      // The host does not enable component-model async: a component built with the async
      // runtime is refused at load (`task.cancel` requires the component model async feature).
      '--backend-qjs-disable-async',
      // Without this, QuickJS's own WASI p2 imports (clocks, random, stdio, filesystem) are
      // served by the host's sandbox like any plugin's, so Date.now() and Math.random() work.
      ...(args.stubWasi ? ['--backend-qjs-stub-wasi'] : []),
      '--cwd',
      stage,
      '-o',
      out,
    ];
    const isScript = /\.(m?js|cjs)$/.test(jco);
    const [cmd, cmdArgs] = isScript ? [process.execPath, [jco, ...jcoArgs]] : [jco, jcoArgs];
    process.stderr.write(`toolhost-js: ${[path.basename(jco), ...jcoArgs].join(' ')}\n`);
    const started = Date.now();
    const result = await run(cmd, cmdArgs, { cwd: stage });
    if (result.code !== 0) {
      throw new Failure(`toolhost-js: jco componentize failed (${result.signal ?? `exit code ${result.code}`})`);
    }
    const size = fs.statSync(out).size;
    process.stderr.write(
      `toolhost-js: wrote ${shown(out)} (${(size / 1024 / 1024).toFixed(2)} MiB) in ${((Date.now() - started) / 1000).toFixed(1)} s` +
        // Under `toolhost build` the host embeds the manifest itself (TOOLHOST_BUILD is set).
        (process.env.TOOLHOST_BUILD ? '\n' : '; it has no manifest yet: embed it with `toolhost embed-manifest`\n'),
    );
  } finally {
    if (args.keepStage) process.stderr.write(`toolhost-js: kept the staging folder ${stage}\n`);
    else fs.rmSync(stage, { recursive: true, force: true });
  }
}

/** The node_modules folder jco was installed into (rolldown and the WASI WIT are there too). */
function modulesOf(jco) {
  return path.resolve(path.dirname(jco), '..');
}

/** The project as one script for the dev runtime: `toolhost-sdk` is the runtime's own SDK. */
async function cmdBundle(argv) {
  const args = parseArgs(argv, { '-o': { name: 'out' }, '--out': { name: 'out' }, '--jco': { name: 'jco' } });
  if (!args.out) throw new Failure(`bundle needs -o OUT.js\n\n${USAGE}`, 2);
  const project = oneProject(args);
  const modules = modulesOf(findJco(args.jco));
  const { rolldown } = await import(pathToFileURL(path.join(modules, 'rolldown', 'dist', 'index.mjs')).href);
  const bundle = await rolldown({ input: project.main, cwd: project.root, external: ['toolhost-sdk'], logLevel: 'silent' });
  try {
    const { output } = await bundle.generate({ format: 'iife', globals: { 'toolhost-sdk': '__toolhost_sdk' } });
    fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
    fs.writeFileSync(args.out, output[0].code);
  } finally {
    await bundle.close();
  }
}

/** The dev runtime's entry: the SDK and the host backend, and the project's bundle read from the
 * sources the host maps at /toolhost-dev, evaluated on the first call of each instance. */
const RUNTIME_ENTRY = `// Generated by toolhost-js: the \`toolhost dev\` runtime's entry module.
import './${BACKEND}';
import * as sdk from 'toolhost-sdk';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

globalThis.__toolhost_sdk = sdk;
let loaded = null;

function utf8(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i++];
    let c;
    if (b < 0x80) c = b;
    else if (b < 0xe0) c = ((b & 0x1f) << 6) | (bytes[i++] & 0x3f);
    else if (b < 0xf0) c = ((b & 0x0f) << 12) | ((bytes[i++] & 0x3f) << 6) | (bytes[i++] & 0x3f);
    else c = ((b & 0x07) << 18) | ((bytes[i++] & 0x3f) << 12) | ((bytes[i++] & 0x3f) << 6) | (bytes[i++] & 0x3f);
    out += String.fromCodePoint(c);
  }
  return out;
}

function source() {
  const dir = getDirectories().find(([, p]) => p === '/toolhost-dev');
  if (!dir) throw new Error('the sources of this dev build are not mapped at /toolhost-dev');
  const file = dir[0].openAt({}, 'bundle.js', {}, { read: true });
  const [bytes] = file.read(Number(file.stat().size), 0);
  return utf8(bytes);
}

function load() {
  if (loaded === null) {
    try {
      (0, eval)(source());
      loaded = true;
    } catch (e) {
      loaded = "toolhost dev: loading the plugin's sources failed: " + sdk.errorMessage(e);
    }
  }
  if (loaded !== true) throw loaded;
}

export const tools = {
  call(tool, args) {
    load();
    return sdk.__internal.dispatch(tool, args);
  },
};

export const resources = {
  read(req) {
    load();
    return sdk.__internal.read(req);
  },
};

export const prompts = {
  get(req) {
    load();
    return sdk.__internal.get(req);
  },
};

export const completion = {
  complete(req) {
    load();
    return sdk.__internal.complete(req);
  },
};
`;

async function cmdRuntime(argv) {
  const args = parseArgs(argv, { '-o': { name: 'out' }, '--out': { name: 'out' }, '--wit': { name: 'wit' }, '--jco': { name: 'jco' } });
  if (!args.out || !args.wit) throw new Failure(`runtime needs -o OUT.wasm and --wit WIT_DIR\n\n${USAGE}`, 2);
  const jco = findJco(args.jco);
  const builtin = path.join(modulesOf(jco), '@bytecodealliance', 'jco', 'lib', 'wit', 'builtin', '0.2.12');
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-js-runtime-'));
  try {
    // The SDK's world, and a dev world that also reads the sources (WASI's preopens).
    const wit = path.join(stage, 'wit');
    fs.mkdirSync(path.join(wit, 'deps'), { recursive: true });
    fs.copyFileSync(path.join(path.resolve(args.wit), 'toolhost.wit'), path.join(wit, 'toolhost.wit'));
    fs.writeFileSync(
      path.join(wit, 'dev.wit'),
      `package toolhost:plugin@0.1.0;\n\nworld plugin-dev {\n    include ${WORLD};\n    import wasi:filesystem/preopens@0.2.12;\n}\n`,
    );
    for (const dep of ['wasi-filesystem', 'wasi-io', 'wasi-clocks']) {
      fs.mkdirSync(path.join(wit, 'deps', dep));
      fs.copyFileSync(path.join(builtin, dep, 'package.wit'), path.join(wit, 'deps', dep, 'package.wit'));
    }
    // The SDK's world imports these too (wasi:keyvalue in deps/keyvalue).
    const ownDeps = path.join(path.resolve(args.wit), 'deps');
    if (fs.existsSync(ownDeps)) {
      for (const dep of fs.readdirSync(ownDeps)) {
        fs.cpSync(path.join(ownDeps, dep), path.join(wit, 'deps', dep), { recursive: true, dereference: true });
      }
    }
    const app = path.join(stage, 'app');
    fs.mkdirSync(app);
    const sdk = path.join(stage, 'node_modules', 'toolhost-sdk');
    fs.mkdirSync(sdk, { recursive: true });
    for (const f of RUNTIME_FILES) fs.copyFileSync(path.join(SDK_DIR, f), path.join(sdk, f));
    fs.writeFileSync(path.join(app, BACKEND), BACKEND_SOURCE);
    fs.writeFileSync(path.join(app, ENTRY), RUNTIME_ENTRY);
    const out = path.resolve(args.out);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    const jcoArgs = ['componentize', path.join(app, ENTRY), '--wit', wit, '--world-name', 'plugin-dev', '--backend', 'qjs',
      '--backend-qjs-disable-async', '--cwd', stage, '-o', out];
    const isScript = /\.(m?js|cjs)$/.test(jco);
    const [cmd, cmdArgs] = isScript ? [process.execPath, [jco, ...jcoArgs]] : [jco, jcoArgs];
    const result = await run(cmd, cmdArgs, { cwd: stage });
    if (result.code !== 0) throw new Failure(`toolhost-js: jco componentize failed (${result.signal ?? `exit code ${result.code}`})`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

async function cmdTest(argv) {
  const args = parseArgs(argv, {});
  const project = oneProject(args);
  const register = pathToFileURL(path.join(SDK_DIR, 'lib', 'register.mjs')).href;
  // A runner started from inside another test run would report to that run, not to the terminal.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', register, '--test', ...args.rest], {
    cwd: project.root,
    stdio: 'inherit',
    env,
  });
  const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  if (code !== 0) process.exitCode = code;
}

async function main(argv) {
  const [command, ...rest] = argv;
  switch (command) {
    case 'manifest':
      return cmdManifest(rest);
    case 'componentize':
      return cmdComponentize(rest);
    case 'test':
      return cmdTest(rest);
    case 'bundle':
      return cmdBundle(rest);
    case 'runtime':
      return cmdRuntime(rest);
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE + '\n');
      return;
    default:
      throw new Failure(`${command ? `unknown command ${command}` : 'no command given'}\n\n${USAGE}`, 2);
  }
}

main(process.argv.slice(2)).catch((e) => {
  if (e instanceof Failure) {
    process.stderr.write(e.message + '\n');
    process.exitCode = e.code;
  } else {
    process.stderr.write(`toolhost-js: internal error: ${e && e.stack ? e.stack : e}\n`);
    process.exitCode = 3;
  }
});

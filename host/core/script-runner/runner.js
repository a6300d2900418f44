// The code-mode sandbox's program (`[code_mode]`): it runs a model's script whose only door is
// `tools.NAME(args)`, each an inner call the host makes through its executor.
//
// Built by `cargo xtask script-runner` (rolldown bundles this file with acorn, jco's QuickJS
// backend makes the component, WASI stubbed out: the component imports nothing but
// `toolhost:script/tools`). The host embeds script-runner.wasm and checks that it was built
// from this file and script.wit.
//
// QuickJS as this component runs it never drains its job queue between calls, so a native
// `await` would never resume. The script is therefore rewritten before it runs (acorn parses
// it; line numbers are kept, and an error's column is mapped back past the rewrite's text): every
// `async` function becomes a generator driven synchronously by `__async`, every `await x` takes
// a settled value at once and `yield`s only a pending one, and `Promise` is `SyncPromise`, whose
// callbacks run as soon as it settles. Inner calls run one at a time: `Promise.all` over tool
// calls works, with a concurrency of one.

import host from 'toolhost:script/tools';
import { parse } from 'acorn';

/** Bytes of console output a script keeps (the host cuts further to its own limit). */
const LOG_BYTES = 65536;
const HEADER = 'async function __script(tools, console) {';
// The script's program: a function of the helpers its rewrite calls and of `__t`, so each is a
// closure variable (a slot) rather than a global looked up by name. Nothing comes before the
// script's first statement: a `'use strict'` there still applies.
const RUN_HEADER = '(function (__async, __ready, __value, __SP, __t) { return function* __script(tools, console) {';

// ---- SyncPromise: a Promise whose callbacks run as soon as it settles ---------------------

const PENDING = 0;
const FULFILLED = 1;
const REJECTED = 2;

class SyncPromise {
  constructor(executor) {
    if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
    this._state = PENDING;
    this._value = undefined;
    this._waiting = [];
    let done = false;
    const resolve = (v) => {
      if (!done) {
        done = true;
        this._resolve(v);
      }
    };
    const reject = (e) => {
      if (!done) {
        done = true;
        this._settle(REJECTED, e);
      }
    };
    try {
      executor(resolve, reject);
    } catch (e) {
      reject(e);
    }
  }

  _resolve(v) {
    if (v === this) return this._settle(REJECTED, new TypeError('a promise cannot resolve to itself'));
    if (v instanceof SyncPromise) {
      if (v._state === PENDING) v._waiting.push(() => this._settle(v._state, v._value));
      else this._settle(v._state, v._value);
      return;
    }
    if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
      let then;
      try {
        then = v.then;
      } catch (e) {
        return this._settle(REJECTED, e);
      }
      if (typeof then === 'function') {
        let called = false;
        try {
          then.call(
            v,
            (x) => {
              if (!called) {
                called = true;
                this._resolve(x);
              }
            },
            (e) => {
              if (!called) {
                called = true;
                this._settle(REJECTED, e);
              }
            },
          );
        } catch (e) {
          if (!called) this._settle(REJECTED, e);
        }
        return;
      }
    }
    this._settle(FULFILLED, v);
  }

  _settle(state, value) {
    if (this._state !== PENDING) return;
    this._state = state;
    this._value = value;
    const waiting = this._waiting;
    this._waiting = [];
    for (const w of waiting) w();
  }

  then(onFulfilled, onRejected) {
    return new SyncPromise((resolve, reject) => {
      const run = () => {
        const f = this._state === FULFILLED ? onFulfilled : onRejected;
        if (typeof f !== 'function') {
          (this._state === FULFILLED ? resolve : reject)(this._value);
          return;
        }
        try {
          resolve(f(this._value));
        } catch (e) {
          reject(e);
        }
      };
      if (this._state === PENDING) this._waiting.push(run);
      else run();
    });
  }

  catch(onRejected) {
    return this.then(undefined, onRejected);
  }

  finally(f) {
    return this.then(
      (v) => SyncPromise.resolve(f()).then(() => v),
      (e) =>
        SyncPromise.resolve(f()).then(() => {
          throw e;
        }),
    );
  }

  static resolve(v) {
    if (v instanceof SyncPromise) return v;
    // A plain value settles at once: no executor, no closures (every awaited tool call's value).
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return settled(FULFILLED, v);
    return new SyncPromise((resolve) => resolve(v));
  }

  static reject(e) {
    return settled(REJECTED, e);
  }

  static withResolvers() {
    let resolve, reject;
    const promise = new SyncPromise((a, b) => {
      resolve = a;
      reject = b;
    });
    return { promise, resolve, reject };
  }

  static all(items) {
    return SyncPromise._gather(items, (p, i, out, ok, fail) => p.then((v) => ok(i, v), fail));
  }

  static allSettled(items) {
    return SyncPromise._gather(items, (p, i, out, ok) =>
      p.then(
        (value) => ok(i, { status: 'fulfilled', value }),
        (reason) => ok(i, { status: 'rejected', reason }),
      ),
    );
  }

  static race(items) {
    return new SyncPromise((resolve, reject) => {
      for (const p of items) SyncPromise.resolve(p).then(resolve, reject);
    });
  }

  static any(items) {
    return new SyncPromise((resolve, reject) => {
      const list = [...items];
      const errors = [];
      let left = list.length;
      if (left === 0) reject(new AggregateError([], 'All promises were rejected'));
      list.forEach((p, i) =>
        SyncPromise.resolve(p).then(resolve, (e) => {
          errors[i] = e;
          if (--left === 0) reject(new AggregateError(errors, 'All promises were rejected'));
        }),
      );
    });
  }

  static _gather(items, each) {
    return new SyncPromise((resolve, reject) => {
      const list = [...items];
      const out = new Array(list.length);
      let left = list.length;
      if (left === 0) resolve(out);
      const ok = (i, v) => {
        out[i] = v;
        if (--left === 0) resolve(out);
      };
      list.forEach((p, i) => each(SyncPromise.resolve(p), i, out, ok, reject));
    });
  }
}

/** A promise already settled with `state` and `value`. */
function settled(state, value) {
  const p = Object.create(SyncPromise.prototype);
  p._state = state;
  p._value = value;
  p._waiting = null;
  return p;
}

/** Whether an awaited value can be taken without suspending: a settled SyncPromise, or a
 * value that is no thenable. (`__t` holds it only between its assignment and this test: a
 * suspended function reads its value from the resumption, so one global serves them all.) */
function __ready(v) {
  if (v instanceof SyncPromise) return v._state !== PENDING;
  return v === null || (typeof v !== 'object' && typeof v !== 'function') || typeof v.then !== 'function';
}

/** The value of a ready awaited value: a rejected promise throws its reason. */
function __value(v) {
  if (!(v instanceof SyncPromise)) return v;
  if (v._state === REJECTED) throw v._value;
  return v._value;
}

/** Drive the generator a rewritten `async` function became: a SyncPromise of its result. */
function __async(gen) {
  return drive(gen, 'next', undefined);
}

/** Resume `gen` with `method(arg)` until it returns, throws or awaits something pending. */
function drive(gen, method, arg) {
  return new SyncPromise((resolve, reject) => {
    // A loop, not recursion: ten thousand awaits must not grow the stack.
    for (;;) {
      let step;
      try {
        step = gen[method](arg);
      } catch (e) {
        reject(e);
        return;
      }
      if (step.done) {
        resolve(step.value);
        return;
      }
      const p = SyncPromise.resolve(step.value);
      if (p._state === PENDING) {
        // Awaiting something the script settles later itself: go on when it does.
        p.then(
          (v) => drive(gen, 'next', v).then(resolve, reject),
          (e) => drive(gen, 'throw', e).then(resolve, reject),
        );
        return;
      }
      method = p._state === FULFILLED ? 'next' : 'throw';
      arg = p._value;
    }
  });
}

// ---- the rewrite ------------------------------------------------------------------------

/** A script error: its kind (`syntax`, `unsupported`, `runtime`, `tool`, `result`), where. */
class ScriptFailure extends Error {
  constructor(kind, message, line, column) {
    super(message);
    this.kind = kind;
    this.line = line;
    this.column = column;
  }
}

/** The 1-based column in the model's script of `column` (0-based) on `line` of the source. */
function scriptColumn(line, column, header) {
  return line === 1 ? Math.max(1, column - header.length + 1) : column + 1;
}

function unsupported(node, what) {
  const { line, column } = node.loc.start;
  return new ScriptFailure('unsupported', what, line, scriptColumn(line, column, HEADER));
}

/** Every node of `ast`, parents first, with its depth. */
function walk(node, depth, visit) {
  if (!node || typeof node.type !== 'string') return;
  visit(node, depth);
  for (const key of Object.keys(node)) {
    if (key === 'loc') continue;
    const v = node[key];
    if (Array.isArray(v)) {
      for (const c of v) if (c && typeof c.type === 'string') walk(c, depth + 1, visit);
    } else if (v && typeof v.type === 'string') {
      walk(v, depth + 1, visit);
    }
  }
}

/** `code` as the generator-driven program QuickJS runs (see the file's head). */
function rewrite(code) {
  const src = `${HEADER}${code}\n}`;
  let ast;
  try {
    ast = parse(src, { ecmaVersion: 'latest', sourceType: 'script', locations: true });
  } catch (e) {
    const line = e.loc ? e.loc.line : 1;
    const column = e.loc ? scriptColumn(line, e.loc.column, HEADER) : 1;
    const message = String(e.message).replace(/ \(\d+:\d+\)$/, '');
    throw new ScriptFailure('syntax', `SyntaxError: ${message}`, line, column);
  }
  const edits = [];
  // `origin`: where in the script an error thrown by the edit's text is reported (its own place
  // unless said).
  const at = (pos, text, depth, closing, remove = 0, origin = pos) =>
    edits.push({ pos, text, depth, closing, remove, origin });
  const dropAsync = (from, to, depth) => {
    const i = src.slice(from, to).search(/\basync\b/);
    if (i >= 0) at(from + i, '', depth, false, 5);
  };
  const wrapBody = (fn, depth) => {
    if (fn.generator) throw unsupported(fn, 'async generators are not supported in scripts');
    const args = '.apply(this, arguments)';
    if (fn.body.type === 'BlockStatement') {
      at(fn.body.start + 1, ' return __async(function* () {', depth, false);
      at(fn.body.end - 1, `}${args}); `, depth, true);
    } else {
      at(fn.body.start, '__async(function* () { return (', depth, false);
      at(fn.body.end, `); }${args})`, depth, true);
    }
  };
  const top = ast.body[0];
  walk(top.body, 0, (node, depth) => {
    switch (node.type) {
      case 'AwaitExpression':
        // A settled value (every tool call's) is taken at once; only a pending one suspends.
        // A fulfilled SyncPromise, the common case, is taken without a call.
        at(node.start, '((__t =', depth, false, 5);
        // A rejected value throws from here: reported at the `await`.
        at(
          node.end,
          ') instanceof __SP && __t._state === 1 ? __t._value : __ready(__t) ? __value(__t) : (yield __t))',
          depth,
          true,
          0,
          node.start,
        );
        break;
      case 'ForOfStatement':
        if (node.await) throw unsupported(node, '`for await` is not supported in scripts; await each value');
        break;
      case 'ImportExpression':
        throw unsupported(node, 'a script cannot import modules: it has only `tools` and `console`');
      case 'MetaProperty':
        if (node.meta.name === 'import') throw unsupported(node, 'a script is not a module: `import.meta` is absent');
        break;
      case 'Property':
      case 'MethodDefinition':
        if (node.value && node.value.type === 'FunctionExpression' && node.value.async) {
          dropAsync(node.start, node.key.start, depth);
          node.value.__method = true;
        }
        break;
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        if (node.async) {
          if (!node.__method) dropAsync(node.start, node.start + 5, depth);
          wrapBody(node, depth);
        }
        break;
      default:
    }
  });
  // Applied from the end: at one position, openings of outer nodes end up left of inner ones
  // and closings of inner nodes left of outer ones.
  edits.sort((a, b) => b.pos - a.pos || (a.closing ? a.depth - b.depth : b.depth - a.depth));
  let out = src.slice(HEADER.length);
  for (const e of edits) {
    const p = e.pos - HEADER.length;
    out = out.slice(0, p) + e.text + out.slice(p + e.remove);
  }
  return { program: `${RUN_HEADER}${out} })`, shifts: shiftsOf(src, edits) };
}

/** Where the rewrite moved each line's text: per line, its edits in the order they stand in
 * the program (the reverse of the order they were applied in), each with the column it stands
 * at in the program's line (`at`, past the run header on line 1), the column of the script it
 * took the place of (`col`), the length of its text, and how far it moves what follows it
 * (`after`: the sum of the line's changes up to it). No edit adds or removes a line. */
function shiftsOf(src, edits) {
  const starts = [0];
  for (let i = 0; i < src.length; i++) if (src.charCodeAt(i) === 10) starts.push(i + 1);
  const shifts = new Map();
  let line = 1;
  let moved = 0;
  for (let i = edits.length - 1; i >= 0; i--) {
    const e = edits[i];
    while (line < starts.length && starts[line] <= e.pos) {
      line++;
      moved = 0;
    }
    const start = line === 1 ? HEADER.length : starts[line - 1];
    const col = e.pos - start;
    const at = col + moved;
    moved += e.text.length - e.remove;
    if (!shifts.has(line)) shifts.set(line, []);
    // An origin on an earlier line (an `await` broken over lines) is reported at the edit.
    const origin = e.origin >= start ? e.origin - start : col;
    shifts.get(line).push({ at, col: origin, len: e.text.length, after: moved });
  }
  return shifts;
}

/** The 1-based column in the model's script of QuickJS's `column` on `line` of the program.
 * QuickJS counts the first line's columns from 0 and every later line's from 1. */
function programColumn(shifts, line, column) {
  const col = line === 1 ? column - RUN_HEADER.length : column - 1;
  let moved = 0;
  for (const s of shifts.get(line) ?? []) {
    if (col < s.at) break;
    // Inside text the rewrite wrote: the place of the script it stands for.
    if (col < s.at + s.len) return s.col + 1;
    moved = s.after;
  }
  return Math.max(1, col - moved + 1);
}

// ---- the script's world -----------------------------------------------------------------

/** An inner call that did not return a value: `kind` is its outcome's (`forbidden`, …). */
class ToolError extends Error {
  constructor(tool, kind, message) {
    super(`${tool}: ${message}`);
    this.name = 'ToolError';
    this.tool = tool;
    this.kind = kind;
  }
}

function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** `tools.NAME(args)`: one inner call, its value or its ToolError as a settled promise. */
function callTool(name, args) {
  let payload;
  try {
    payload = args.length === 1 && isPlainObject(args[0]) ? JSON.stringify(args[0]) : JSON.stringify(args);
  } catch (e) {
    return settled(REJECTED, new TypeError(`${name}: its arguments are not JSON: ${e.message}`));
  }
  let answer;
  try {
    answer = host.call(name, payload);
  } catch (e) {
    // The import's `err` arrives as an Error carrying the `failure` record as its payload.
    const failure = e && e.payload !== undefined ? e.payload : e;
    return settled(REJECTED, new ToolError(name, failure.kind, failure.message));
  }
  return settled(FULFILLED, JSON.parse(answer));
}

// `tools.NAME` is found by a Proxy behind a plain object: the first read of a name makes its
// function and keeps it as the object's own property, so later reads never reach the Proxy.
const tools = Object.create(
  new Proxy(Object.create(null), {
    get(_, name, receiver) {
      // `then`: a script may `await tools` by mistake; a Proxy answering it would hang it.
      if (typeof name !== 'string' || name === 'then') return undefined;
      const f = (...args) => callTool(name, args);
      Reflect.defineProperty(receiver, name, { value: f, writable: true, enumerable: true, configurable: true });
      return f;
    },
    has: () => true,
  }),
);

function shown(v) {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return `${v.name}: ${v.message}`;
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

function makeConsole(logs) {
  let bytes = 0;
  let cut = false;
  const write = (level) => (...args) => {
    if (cut) return;
    const line = (level === 'log' || level === 'info' ? '' : `${level}: `) + args.map(shown).join(' ');
    bytes += line.length + 1;
    if (bytes > LOG_BYTES) {
      cut = true;
      logs.push(`… console output cut at ${LOG_BYTES} bytes`);
      return;
    }
    logs.push(line);
  };
  return { log: write('log'), info: write('info'), warn: write('warn'), error: write('error'), debug: write('debug') };
}

/** Where in the model's script `e` was thrown: the first frame of the script's code. */
function whereThrown(e) {
  const stack = e && typeof e.stack === 'string' ? e.stack : '';
  const m = /<input>:(\d+)(?::(\d+))?/.exec(stack);
  if (!m) return {};
  const line = Number(m[1]);
  const column = m[2] === undefined ? undefined : programColumn(shifts, line, Number(m[2]));
  return { line, column };
}

function failure(e) {
  if (e instanceof ScriptFailure) {
    return { kind: e.kind, message: e.message, line: e.line, column: e.column };
  }
  const where = whereThrown(e);
  if (e instanceof ToolError) {
    return { kind: 'tool', message: e.message, tool: e.tool, toolKind: e.kind, ...where };
  }
  if (e instanceof Error) return { kind: 'runtime', message: `${e.name}: ${e.message}`, ...where };
  return { kind: 'runtime', message: `uncaught ${shown(e)}` };
}

globalThis.Promise = SyncPromise;
globalThis.ToolError = ToolError;
// No clock but the host's monotonic one, counted from the script's start.
globalThis.performance = { now: () => host.now() };
const NativeDate = Date;
globalThis.Date = function Date(...args) {
  if (args.length === 0) {
    throw new TypeError('a script has no wall clock: use performance.now() for elapsed time');
  }
  return new.target ? new NativeDate(...args) : new NativeDate(...args).toString();
};
globalThis.Date.now = () => {
  throw new TypeError('a script has no wall clock: use performance.now() for elapsed time');
};
globalThis.Date.parse = NativeDate.parse;
globalThis.Date.UTC = NativeDate.UTC;
globalThis.Date.prototype = NativeDate.prototype;

/** The running script's shifts (see `shiftsOf`): one script per sandbox. */
let shifts = new Map();

export function run(code) {
  const logs = [];
  const console = makeConsole(logs);
  try {
    const rewritten = rewrite(code);
    shifts = rewritten.shifts;
    const program = (0, eval)(rewritten.program)(__async, __ready, __value, SyncPromise);
    const result = __async(program(tools, console));
    if (result._state === PENDING) {
      throw new ScriptFailure(
        'runtime',
        'the script never finished: it awaits a promise nothing settles (code made by eval or Function cannot await)',
      );
    }
    if (result._state === REJECTED) throw result._value;
    let value;
    try {
      value = JSON.stringify(result._value === undefined ? null : result._value);
    } catch (e) {
      throw new ScriptFailure('result', `the script's result is not JSON: ${e.message}`);
    }
    if (value === undefined) value = 'null';
    return `{"ok":true,"value":${value},"logs":${JSON.stringify(logs)}}`;
  } catch (e) {
    return JSON.stringify({ ok: false, error: failure(e), logs });
  }
}

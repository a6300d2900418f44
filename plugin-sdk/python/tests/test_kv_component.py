"""`toolhost_sdk.kv` through a real component, without the host: a plugin componentized for
`plugin-full` uses every part of `kv`, and jco's transpilation of it runs under node with an
in-memory `wasi:keyvalue` (store, atomics, batch) in jco's host conventions, so the SDK meets the
bindings componentize-py really generates (resources, results, variants). Needs componentize-py,
jco and node, so it runs only when they are given (about a minute):

    TOOLHOST_COMPONENTIZE_PY=target/pytool/bin/componentize-py \\
    TOOLHOST_JCO=target/jstool/node_modules/.bin/jco \\
        python3 -m unittest discover -s tests -p 'test_kv_component.py'
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from test_prompts_component import CPY, JCO, NODE, SDK, STUBS, WIT

APP = '''\
from toolhost_sdk import kv, plugin, tool

plugin(kv=["default", "denied"])


def attempt(f):
    try:
        return f()
    except kv.KvError as e:
        return {"kind": e.kind, "message": str(e)}


def text(b):
    return None if b is None else b.decode()


@tool
def demo() -> dict:
    """Use every part of kv."""
    b = kv.open("default")
    out = {}
    b.set("a", "x")
    b.set("bytes", bytes([0, 255]))
    out["get"] = text(b.get("a"))
    out["bytes"] = list(b.get("bytes"))
    out["missing"] = b.get("nope")
    out["exists"] = [b.exists("a"), b.exists("nope")]
    b.set_json("j", {"n": [1, 2], "s": "é"})
    out["json"] = b.get_json("j")
    out["increment"] = [b.increment("n"), b.increment("n", 41), kv.increment("n", -2)]
    out["counter"] = b.get_text("n")
    b.set_many({"m1": "1", "m2": "2"})
    out["getMany"] = {k: text(v) for k, v in b.get_many(["m1", "nope", "m2"]).items()}
    b.delete_many(["m1"])
    b.delete("bytes")
    out["keys"] = sorted(b.keys())
    out["cas"] = [b.compare_and_swap("c", None, "v1"), b.compare_and_swap("c", "other", "v2"),
                  b.compare_and_swap("c", "v1", "v2")]
    out["c"] = b.get_text("c")
    out["update"] = text(b.update("c", lambda v: v + b"+"))
    out["updateJson"] = b.update_json("list", lambda items: items + ["milk"], default=[])
    out["raced"] = text(b.update("race", lambda v: "first" if v is None else v.decode() + " then mine"))
    out["denied"] = attempt(lambda: kv.open("denied"))
    out["unknown"] = attempt(lambda: kv.open("unknown"))
    out["other"] = attempt(lambda: b.get("boom"))
    out["casOther"] = attempt(lambda: b.compare_and_swap("boom", None, "x"))
    return out
'''

# wasi:keyvalue for jco's transpiled component (the same as plugin-sdk/js/test/kv-component.test.mjs):
# classes for the resources, a thrown {payload} for a result's error, BigInt for s64. 'race' is
# written by "someone else" at its first CAS.
KV_STUBS = {
    "store": r"""
export const data = new Map();
export const versions = new Map();
const bump = (k) => versions.set(k, (versions.get(k) ?? 0) + 1);
export const write = (k, v) => { data.set(k, Uint8Array.from(v)); bump(k); };
export const fail = (k) => { if (k === 'boom') throw { payload: { tag: 'other', val: 'disk full' } }; };
export class Bucket {
  get(key) { fail(key); return data.get(key) ?? undefined; }
  set(key, value) { fail(key); write(key, value); }
  delete(key) { fail(key); if (data.delete(key)) bump(key); }
  exists(key) { fail(key); return data.has(key); }
  listKeys(cursor) {
    const names = [...data.keys()].sort();
    const start = cursor == null ? 0 : Number(cursor);
    const end = Math.min(start + 2, names.length);
    return { keys: names.slice(start, end), cursor: end < names.length ? String(end) : undefined };
  }
}
export function open(name) {
  if (name === 'default') return new Bucket();
  if (name === 'denied') throw { payload: { tag: 'access-denied' } };
  throw { payload: { tag: 'no-such-store' } };
}
""",
    "atomics": r"""
import { data, versions, write, fail } from './stub-store.js';
let raced = false;
export class Cas {
  constructor(key) { this.key = key; this.version = versions.get(key) ?? 0; this.value = data.get(key); }
  static new(bucket, key) {
    fail(key);
    if (key === 'race' && !raced) { raced = true; const c = new Cas(key); write(key, new TextEncoder().encode('theirs')); return c; }
    return new Cas(key);
  }
  // The value when the CAS began: a write since then makes the swap fail.
  current() { return this.value; }
}
export function increment(bucket, key, delta) {
  const n = BigInt(new TextDecoder().decode(data.get(key) ?? new TextEncoder().encode('0'))) + delta;
  write(key, new TextEncoder().encode(String(n)));
  return n;
}
export function swap(cas, value) {
  if ((versions.get(cas.key) ?? 0) !== cas.version) throw { payload: { tag: 'cas-failed', val: new Cas(cas.key) } };
  write(cas.key, value);
}
""",
    "batch": r"""
import { data, write } from './stub-store.js';
export function getMany(bucket, keys) { return keys.map((k) => (data.has(k) ? [k, data.get(k)] : undefined)); }
export function setMany(bucket, pairs) { for (const [k, v] of pairs) write(k, v); }
export function deleteMany(bucket, keys) { for (const k of keys) data.delete(k); }
""",
}

EXPECTED = {
    "get": "x",
    "bytes": [0, 255],
    "missing": None,
    "exists": [True, False],
    "json": {"n": [1, 2], "s": "é"},
    "increment": [1, 42, 40],
    "counter": "40",
    "getMany": {"m1": "1", "m2": "2"},
    "keys": ["a", "j", "m2", "n"],
    "cas": [True, False, True],
    "c": "v2",
    "update": "v2+",
    "updateJson": ["milk"],
    # The first CAS read nothing, then "theirs" was written: the update ran again on it.
    "raced": "theirs then mine",
    "denied": {"kind": "access-denied",
               "message": "kv: bucket `denied` is not granted to this plugin (access-denied): the operator grants it "
                          "with `[plugin.kvdemo] kv = [\"denied\"]` in the config or `--allow-kv kvdemo=denied`"},
    "unknown": {"kind": "no-such-store",
                "message": "kv: there is no bucket `unknown` for this plugin (no-such-store): request it in the "
                           "plugin's manifest with plugin(kv=[\"unknown\"]), and have the operator grant it"},
    "other": {"kind": "other", "message": "kv: bucket `default`: disk full"},
    "casOther": {"kind": "other", "message": "kv: bucket `default`: disk full"},
}


@unittest.skipUnless(CPY and JCO and NODE, "set TOOLHOST_COMPONENTIZE_PY and TOOLHOST_JCO (and have node) to build "
                                           "a component")
class Component(unittest.TestCase):
    def run_ok(self, cmd, **kw):
        done = subprocess.run(cmd, capture_output=True, text=True, **kw)
        self.assertEqual(done.returncode, 0, f"{' '.join(cmd)}\n{done.stderr}")
        return done.stdout

    def jco(self, *args):
        cmd = [NODE, JCO] if JCO.endswith((".js", ".mjs", ".cjs")) else [JCO]
        return self.run_ok(cmd + list(args))

    def test_every_operation_and_error_through_componentize_py_bindings(self):
        with tempfile.TemporaryDirectory(prefix="toolhost-py-kv-") as tmp:
            project = os.path.join(tmp, "project")
            os.mkdir(project)
            with open(os.path.join(project, "pyproject.toml"), "w") as f:
                f.write('[project]\nname = "kvdemo"\nversion = "0.1.0"\n')
            with open(os.path.join(project, "app.py"), "w", encoding="utf-8") as f:
                f.write(APP)
            wasm = os.path.join(tmp, "kvdemo.wasm")
            env = dict(os.environ, PYTHONPATH=SDK, PYTHONDONTWRITEBYTECODE="1")
            self.run_ok([sys.executable, "-m", "toolhost_sdk", "componentize", project, "-o", wasm, "--wit", WIT,
                         "--componentize-py", CPY], env=env)
            self.assertIn("import wasi:keyvalue/store@0.2.0-draft2", self.jco("wit", wasm))

            out = os.path.join(tmp, "transpiled")
            maps = [a for n in STUBS for a in ("--map", f"toolhost:plugin/{n}@0.1.0=./stub-{n}.js")]
            maps += [a for n in KV_STUBS for a in ("--map", f"wasi:keyvalue/{n}@0.2.0-draft2=./stub-{n}.js")]
            self.jco("transpile", wasm, "-o", out, "--name", "component", *maps)
            for n, src in {**STUBS, **KV_STUBS}.items():
                with open(os.path.join(out, f"stub-{n}.js"), "w", encoding="utf-8") as f:
                    f.write(src)
            with open(os.path.join(out, "package.json"), "w") as f:
                f.write('{"type": "module"}')
            os.symlink(os.path.abspath(os.path.join(os.path.dirname(JCO), "..")), os.path.join(out, "node_modules"))
            with open(os.path.join(out, "run.mjs"), "w") as f:
                f.write("const c = await import('./component.js');\nprocess.stdout.write(c.tools.call('demo', []));\n")
            flag = [f for f in ["--experimental-wasm-extended-const"]
                    if subprocess.run([NODE, f, "-e", "0"], capture_output=True).returncode == 0]
            got = json.loads(self.run_ok([NODE, *flag, os.path.join(out, "run.mjs")], cwd=out))
            self.assertEqual(got, EXPECTED)


if __name__ == "__main__":
    unittest.main()

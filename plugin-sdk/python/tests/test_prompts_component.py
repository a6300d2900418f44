"""Prompts and completion through a real component, without the host: a plugin componentized for
`plugin-full` (and the `toolhost dev` runtime) exports `prompts` and `completion`, and jco's
transpilation of it, run under node with stand-ins for the toolhost imports, answers `get` and
`complete` through the component model's own lifting and lowering. Needs componentize-py, jco
and node, so it runs only when they are given (about two minutes):

    TOOLHOST_COMPONENTIZE_PY=target/pytool/bin/componentize-py \\
    TOOLHOST_JCO=target/jstool/node_modules/.bin/jco \\
        python3 -m unittest discover -s tests -p 'test_prompts_component.py'
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
WIT = os.path.join(SDK, "..", "..", "wit")
CPY = os.environ.get("TOOLHOST_COMPONENTIZE_PY")
JCO = os.environ.get("TOOLHOST_JCO")
NODE = shutil.which("node")

APP = '''\
from toolhost_sdk import assistant, complete, prompt, resource_link, resource_template, tool, user


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@resource_template("file:///{+path}")
def file(path: str) -> str:
    return path


@prompt("summarise-file")
def summarise(path: str, style: str = "short"):
    """Summarise a file."""
    if path == "x":
        raise ValueError("no x")
    if path == "d":
        return {"description": "About d", "messages": [assistant("Sure.")]}
    return [user(f"Summarise {path} ({style})."), resource_link(f"file:///{path}", path, mime_type="text/plain")]


@complete(prompt="summarise-file", argument="path")
def paths(value, context):
    return [value + "1", json.dumps(context)]


@complete(template="file:///{+path}", argument="path")
def files(value):
    return [value + ".txt"]
'''

CALLS = '''
const answer = (f) => { try { return { ok: f() }; } catch (e) { return { err: e && e.payload !== undefined ? e.payload : String(e) }; } };
const out = [
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'a.txt']] })),
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'd'], ['style', 'long']] })),
  answer(() => c.prompts.get({ name: 'summarise-file', arguments: [['path', 'x']] })),
  answer(() => c.prompts.get({ name: 'nope', arguments: [] })),
  answer(() => c.completion.complete({ target: { tag: 'prompt', val: 'summarise-file' }, argument: 'path', value: 'sr', context: [['style', 'long']] })),
  answer(() => c.completion.complete({ target: { tag: 'resource-template', val: 'file:///{+path}' }, argument: 'path', value: 'src/a', context: [] })),
  answer(() => c.completion.complete({ target: { tag: 'resource-template', val: 'file:///{+path}' }, argument: 'nope', value: '', context: [] })),
];
process.stdout.write(JSON.stringify(out));
'''

EXPECTED = [
    {"ok": {"messages": [
        {"role": "user", "content": {"tag": "text", "val": "Summarise a.txt (short)."}},
        {"role": "user", "content": {"tag": "resource-link",
                                     "val": {"uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"}}}]}},
    {"ok": {"description": "About d", "messages": [{"role": "assistant", "content": {"tag": "text", "val": "Sure."}}]}},
    {"err": "ValueError: no x"},
    {"err": "this plugin has no prompt nope"},
    {"ok": ["sr1", '{"style": "long"}']},
    {"ok": ["src/a.txt"]},
    {"err": "this plugin completes nothing for nope"},
]

STUBS = {
    "host": "export function log() {}\nexport function progress() {}\n",
    "http": "export function send() { throw 'no http'; }\n",
    "process": "export function run() { throw 'no process'; }\n",
}
# The world imports wasi:keyvalue too (unused here): stand-ins that refuse.
KV_STUBS = {
    "store": "export class Bucket {}\nexport function open() { throw { payload: { tag: 'no-such-store' } }; }\n",
    "atomics": "export class Cas {}\nexport function increment() {}\nexport function swap() {}\n",
    "batch": "export function getMany() {}\nexport function setMany() {}\nexport function deleteMany() {}\n",
}


@unittest.skipUnless(CPY and JCO and NODE, "set TOOLHOST_COMPONENTIZE_PY and TOOLHOST_JCO (and have node) to build "
                                           "a component")
class Component(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="toolhost-py-prompts-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def run_ok(self, cmd, **kw):
        done = subprocess.run(cmd, capture_output=True, text=True, **kw)
        self.assertEqual(done.returncode, 0, f"{' '.join(cmd)}\n{done.stderr}")
        return done.stdout

    def jco(self, *args):
        cmd = [NODE, JCO] if JCO.endswith((".js", ".mjs", ".cjs")) else [JCO]
        return self.run_ok(cmd + list(args))

    def sdk(self, *args):
        env = dict(os.environ, PYTHONPATH=SDK, PYTHONDONTWRITEBYTECODE="1")
        self.run_ok([sys.executable, "-m", "toolhost_sdk", *args, "--wit", WIT, "--componentize-py", CPY], env=env)

    def exports(self, wasm):
        return sorted(re.findall(r"export (toolhost:plugin/[a-z-]+)@", self.jco("wit", wasm)))

    def call(self, wasm, name, prelude=""):
        out = os.path.join(self.dir, name)
        maps = [a for n in STUBS for a in ("--map", f"toolhost:plugin/{n}@0.1.0=./stub-{n}.js")]
        maps += [a for n in KV_STUBS for a in ("--map", f"wasi:keyvalue/{n}@0.2.0-draft2=./stub-kv-{n}.js")]
        self.jco("transpile", wasm, "-o", out, "--name", "component", *maps)
        for n, src in STUBS.items():
            with open(os.path.join(out, f"stub-{n}.js"), "w") as f:
                f.write(src)
        for n, src in KV_STUBS.items():
            with open(os.path.join(out, f"stub-kv-{n}.js"), "w") as f:
                f.write(src)
        with open(os.path.join(out, "package.json"), "w") as f:
            f.write('{"type": "module"}')
        # The transpiled module imports @bytecodealliance/preview2-shim, which jco brings along.
        os.symlink(os.path.abspath(os.path.join(os.path.dirname(JCO), "..")), os.path.join(out, "node_modules"))
        with open(os.path.join(out, "run.mjs"), "w") as f:
            f.write(f"{prelude}\nconst c = await import('./component.js');\n{CALLS}")
        # Node 20's V8 wants a flag for the extended-const proposal.
        flag = [f for f in ["--experimental-wasm-extended-const"]
                if subprocess.run([NODE, f, "-e", "0"], capture_output=True).returncode == 0]
        return json.loads(self.run_ok([NODE, *flag, os.path.join(out, "run.mjs")], cwd=out))

    def test_a_component_and_the_dev_runtime_answer_get_and_complete(self):
        project = os.path.join(self.dir, "project")
        os.mkdir(project)
        with open(os.path.join(project, "pyproject.toml"), "w") as f:
            f.write('[project]\nname = "demo"\nversion = "0.1.0"\n')
        with open(os.path.join(project, "app.py"), "w") as f:
            f.write("import json\n" + textwrap.dedent(APP))
        every = ["toolhost:plugin/completion", "toolhost:plugin/prompts", "toolhost:plugin/resources",
                 "toolhost:plugin/tools"]

        wasm = os.path.join(self.dir, "demo.wasm")
        self.sdk("componentize", project, "-o", wasm)
        self.assertEqual(self.exports(wasm), every)
        self.assertEqual(self.call(wasm, "full"), EXPECTED)

        runtime = os.path.join(self.dir, "runtime.wasm")
        self.sdk("runtime", "-o", runtime)
        self.assertEqual(self.exports(runtime), every)
        with open(os.path.join(project, ".toolhost-dev.json"), "w") as f:
            f.write('{"module": "app"}')
        prelude = ("import { _setPreopens } from '@bytecodealliance/preview2-shim/filesystem';\n"
                   f"_setPreopens({{ '/toolhost-dev': {json.dumps(project)} }});")
        self.assertEqual(self.call(runtime, "dev", prelude), EXPECTED)


if __name__ == "__main__":
    unittest.main()

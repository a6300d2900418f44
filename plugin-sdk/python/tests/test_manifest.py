"""Manifest derivation: signature, type hints, docstring and options → the manifest JSON."""

import json
import os
import subprocess
import sys
import unittest

from support import SDK, ProjectCase


class Types(ProjectCase):
    def test_each_type_maps_to_text_or_json(self):
        self.app('''\
@dataclasses.dataclass
class Item:
    title: str
    days: float = 1.0
    owner: Optional[str] = None

class Point(typing.TypedDict):
    x: int
    y: int

@tool
def t(s: str, i: int, f: float, b: bool, l: list, ls: list[str], d: dict, di: dict[str, int],
      item: Item, p: Point, a: Any, lit: typing.Literal["a", "b"]) -> str:
    """All the types."""
    return ""
''')
        t = self.tool()
        self.assertEqual(t["argCount"], 12)
        self.assertEqual(t["parseJson"], [False] + [True] * 11)
        types = [p["type"] for p in t["params"]]
        self.assertEqual(types[:5], ["string", "integer", "number", "boolean", "array"])
        self.assertEqual(types[5], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(types[6], "object")
        self.assertEqual(types[7], {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(types[8], {
            "type": "object",
            "properties": {"title": {"type": "string"}, "days": {"type": "number"},
                           "owner": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["title"], "additionalProperties": False})
        self.assertEqual(types[9]["required"], ["x", "y"])
        self.assertEqual(types[10], {})
        self.assertEqual(types[11], {"enum": ["a", "b"]})
        self.assertTrue(all(p["optional"] is False for p in t["params"]))

    def test_optional_and_defaults_are_optional_params(self):
        self.app('''\
@tool
def t(path: str, limit: int = 10, pointer: Optional[str] = None, deep: bool | None = None) -> str:
    """Optional ones."""
    return ""
''')
        t = self.tool()
        self.assertEqual([p["optional"] for p in t["params"]], [False, True, True, True])
        self.assertEqual([p["type"] for p in t["params"]], ["string", "integer", "string", "boolean"])
        self.assertEqual(t["parseJson"], [False, True, False, True])

    def test_string_annotations_resolve(self):
        self.write("app.py", '''\
from __future__ import annotations
from toolhost_sdk import tool

@tool
def t(n: int, s: str) -> str:
    """Postponed annotations."""
    return ""
''')
        self.assertEqual(self.tool()["parseJson"], [True, False])


class Docs(ProjectCase):
    def test_first_paragraph_and_args_section(self):
        self.app('''\
@tool
def split(title: str, parts: list[str], sep: str = ",") -> str:
    """Split a task
    into parts.

    More words that are not the description.

    Args:
        title: the task title
        parts (list): JSON array of part names,
            one per subtask
        sep: separator

    Returns:
        the plan
    """
    return ""
''')
        t = self.tool()
        self.assertEqual(t["description"], "Split a task into parts.")
        self.assertEqual([p["description"] for p in t["params"]],
                         ["the task title", "JSON array of part names, one per subtask", "separator"])

    def test_one_line_docstring(self):
        self.app('''\
@tool
def t(x: str) -> str:
    """Just a line."""
    return x
''')
        t = self.tool()
        self.assertEqual(t["description"], "Just a line.")
        self.assertEqual(t["params"][0]["description"], "")


class Options(ProjectCase):
    def test_decorator_options(self):
        self.app('''\
@tool(rest=True, danger=True, read_only=True, output_limit=500, category="text", name="say")
def t(prefix: str, text: str) -> str:
    """Say it."""
    return text

@tool
def plain() -> str:
    """Plain."""
    return ""
''')
        m = self.manifest()
        say, plain = m["tools"]
        self.assertEqual(say["name"], "say")
        self.assertEqual((say["rest"], say["danger"], say["readOnly"]), (True, True, True))
        self.assertEqual(say["outputLimit"], 500)
        self.assertEqual(say["category"], "text")
        self.assertEqual((plain["rest"], plain["danger"], plain["readOnly"]), (False, False, False))
        self.assertNotIn("outputLimit", plain)
        self.assertNotIn("category", plain)
        # Field order as the Rust SDK writes it.
        self.assertEqual(list(say), ["name", "description", "params", "argCount", "parseJson", "rest",
                                     "outputLimit", "danger", "readOnly", "category"])

    def test_output_schema_from_option_or_return_annotation(self):
        self.app('''\
from dataclasses import dataclass
from typing import TypedDict

@dataclass
class Counts:
    words: int
    note: str = ""

class Point(TypedDict):
    x: float

@tool
def count(text: str) -> Counts:
    """Count."""
    return Counts(len(text.split()))

@tool(output_schema=Point)
def point() -> dict:
    """Point."""
    return {"x": 1.0}

@tool(output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
def raw() -> dict:
    """Raw."""
    return {"ok": True}

@tool
def text() -> str:
    """Text."""
    return ""
''')
        count, point, raw, text = self.manifest()["tools"]
        self.assertEqual(count["outputSchema"], {
            "type": "object", "properties": {"words": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["words"], "additionalProperties": False})
        self.assertEqual(point["outputSchema"]["properties"], {"x": {"type": "number"}})
        self.assertEqual(raw["outputSchema"]["properties"], {"ok": {"type": "boolean"}})
        self.assertNotIn("outputSchema", text)

    def test_plugin_declaration_and_pyproject_defaults(self):
        self.app('''\
plugin(fs=["workspace:rw", "docs"], env="LANG", net=["example.com", "*.example.org"], secret="api_token")

@tool
def t() -> str:
    """T."""
    return ""
''')
        m = self.manifest()
        self.assertEqual(list(m), ["format", "name", "version", "description", "capabilities", "tools"])
        self.assertEqual((m["format"], m["name"], m["version"], m["description"]),
                         (1, "demo", "0.1.0", "a demo plugin"))
        self.assertEqual(m["capabilities"], {
            "fs": [{"path": "workspace", "mode": "rw"}, {"path": "docs", "mode": "ro"}],
            "env": ["LANG"], "net": ["example.com", "*.example.org"], "secrets": ["api_token"]})

    def test_exec_requests_are_written_only_when_made(self):
        self.app('''\
plugin(exec=["git", "xdg-open"])

@tool
def t() -> str:
    """T."""
    return ""
''')
        caps = self.manifest()["capabilities"]
        self.assertEqual(list(caps), ["fs", "env", "net", "secrets", "exec"])
        self.assertEqual(caps["exec"], ["git", "xdg-open"])
        self.app('''\
plugin(exec="*")

@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertEqual(self.manifest()["capabilities"]["exec"], ["*"])
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertNotIn("exec", self.manifest()["capabilities"])

    def test_plugin_call_overrides_pyproject(self):
        self.app('''\
plugin(name="other", version="2.0.0", description="overridden", secrets=["a", "b"])

@tool
def t() -> str:
    """T."""
    return ""
''')
        m = self.manifest()
        self.assertEqual((m["name"], m["version"], m["description"]), ("other", "2.0.0", "overridden"))
        self.assertEqual(m["capabilities"]["secrets"], ["a", "b"])

    def test_bare_app_py_without_pyproject(self):
        os.remove(os.path.join(self.dir, "pyproject.toml"))
        self.app('''\
plugin(name="bare", version="0.0.1")

@tool
def t() -> str:
    """T."""
    return ""
''')
        m = self.manifest()
        self.assertEqual((m["name"], m["version"], m["description"]), ("bare", "0.0.1", ""))

    def test_module_named_in_pyproject(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "1"\n[tool.toolhost]\nmodule = "mytools"\n')
        self.write("mytools.py", '''\
from toolhost_sdk import tool
import helper

@tool
def t() -> str:
    """T."""
    return helper.VALUE
''')
        self.write("helper.py", "VALUE = 'from helper'\n")
        self.assertEqual(self.manifest()["tools"][0]["name"], "t")


class SignatureDrivesManifest(ProjectCase):
    def test_changing_the_signature_changes_the_manifest(self):
        src = '''\
from toolhost_sdk import tool

@tool
def t(path: str) -> str:
    """T."""
    return path
'''
        self.write("app.py", src)
        before = self.tool()
        self.assertEqual((before["argCount"], before["parseJson"]), (1, [False]))
        # The same file, one edit to the signature only.
        self.write("app.py", src.replace("(path: str)", "(path: str, count: int = 3)"))
        after = self.tool()
        self.assertEqual(after["argCount"], 2)
        self.assertEqual(after["parseJson"], [False, True])
        self.assertEqual(after["params"][1], {"name": "count", "type": "integer", "description": "",
                                              "optional": True, "default": 3})


class Cli(ProjectCase):
    def run_cli(self, *args):
        env = dict(os.environ, PYTHONPATH=SDK)
        return subprocess.run([sys.executable, "-m", "toolhost_sdk", *args], capture_output=True,
                              text=True, env=env, cwd=self.dir)

    def test_manifest_prints_json(self):
        self.app('''\
@tool
def t(x: int) -> str:
    """T."""
    return ""
''')
        r = self.run_cli("manifest", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["tools"][0]["parseJson"], [True])

    def test_misuse_prints_file_line_and_exits_1(self):
        self.app('''\
@tool
def t(x: set) -> str:
    """T."""
    return ""
''')
        r = self.run_cli("manifest", ".")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr.splitlines()[0], r"^app\.py:5: error: parameter `x`: unsupported type `set`")

    def test_componentize_stops_before_componentize_py_on_misuse(self):
        self.app('''\
@tool
def t(x) -> str:
    """T."""
    return ""
''')
        out = os.path.join(self.dir, "out.wasm")
        r = self.run_cli("componentize", ".", "-o", out, "--wit", ".", "--componentize-py", "/nonexistent")
        self.assertEqual(r.returncode, 1)
        self.assertIn("app.py:5: error: parameter `x` needs a type hint", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_componentize_reports_a_missing_componentize_py(self):
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        r = self.run_cli("componentize", ".", "-o", "out.wasm", "--wit", ".", "--componentize-py",
                         "/nonexistent/componentize-py")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot run /nonexistent/componentize-py", r.stderr)


if __name__ == "__main__":
    unittest.main()

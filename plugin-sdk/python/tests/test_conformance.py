"""The SDK conformance table (tests/sdk-conformance/cases.json), run against the Python SDK.

Each case becomes an `app.py` written as an author would write it — `plugin(...)`, `@tool`
functions with type hints, defaults and docstrings — and goes through `_project.manifest`, the
function behind `python3 -m toolhost_sdk manifest`. The manifest must equal the table's, or the
one error must carry the table's message fragment at the author's line. See the table's README.
"""

import json
import keyword
import os
import sys
import tempfile
import unittest

from support import SDK

from toolhost_sdk import _guest, _project  # noqa: E402
from toolhost_sdk._spec import _Errors  # noqa: E402

TABLE = os.path.join(SDK, "..", "..", "tests", "sdk-conformance", "cases.json")
LANG = "python"


def expand(v):
    """The table's value with every `{"$repeat": [[piece, times], …]}` written out."""
    if isinstance(v, dict):
        if list(v) == ["$repeat"]:
            return "".join(piece * times for piece, times in v["$repeat"])
        return {k: expand(x) for k, x in v.items()}
    if isinstance(v, list):
        return [expand(x) for x in v]
    return v


class CannotExpress(Exception):
    """The case asks for something Python cannot write; the table must say so in `skip`."""


BASE_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
              "array": "list", "object": "dict", "any": "Any", "null": "None"}


def hint_for_schema(schema):
    """The type hint whose derived JSON Schema is `schema`."""
    keys = sorted(schema)
    if not keys:
        return "Any"
    if keys == ["type"] and schema["type"] in BASE_TYPES:
        return BASE_TYPES[schema["type"]]
    if keys == ["items", "type"] and schema["type"] == "array":
        return f"list[{hint_for_schema(schema['items'])}]"
    if keys == ["additionalProperties", "type"] and schema["type"] == "object":
        return f"dict[str, {hint_for_schema(schema['additionalProperties'])}]"
    if keys == ["enum"]:
        return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
    raise CannotExpress(f"no type hint derives the schema {json.dumps(schema)[:80]}")


def literal(text):
    """A triple-quoted Python literal for `text` that keeps its line breaks as lines."""
    out = []
    for c in text:
        if c == "\n":
            out.append(c)
        elif c in '\\"':
            out.append("\\" + c)
        elif not c.isprintable():
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"""' + "".join(out) + '"""'


def is_name(s):
    return isinstance(s, str) and s.isidentifier() and not keyword.iskeyword(s)


class Source:
    """app.py for one case, with the lines of the plugin call and of each tool."""

    def __init__(self, case):
        self.lines = ["from typing import Any, Literal, Optional",
                      "from toolhost_sdk import plugin, tool", ""]
        self.plugin_line = None
        self.tool_spans = []
        self.write_plugin(case.get("plugin", {}))
        for i, t in enumerate(case.get("tools", [])):
            self.write_tool(i, t)

    def add(self, line):
        self.lines.append(line)
        return len(self.lines)

    def write_plugin(self, p):
        args = []
        for key, value in p.items():
            if key == "capabilities":
                for cap, entries in value.items():
                    args.append(f"{ {'secrets': 'secret'}.get(cap, cap)}={entries!r}")
            else:
                args.append(f"{key}={value!r}")
        self.plugin_line = self.add(f"plugin({', '.join(args)})")
        self.add("")

    def write_tool(self, index, t):
        options = {}
        fn = t["name"]
        if not is_name(fn):
            options["name"] = fn
            fn = f"tool_{index}"
        spelled = {"rest": "rest", "danger": "danger", "readOnly": "read_only", "outputLimit": "output_limit",
                   "category": "category", "outputSchema": "output_schema", "timeoutMs": "timeout_ms",
                   "taskSupport": "task_support", "title": "title",
                   "idempotent": "idempotent", "icons": "icons"}
        for key, py in spelled.items():
            if key in t:
                options[py] = t[key]
        options.update(t.get("options", {}))
        start = self.add("")
        self.add(f"@tool({', '.join(f'{k}={v!r}' for k, v in options.items())})")
        self.add(f"def {fn}(")
        defaulted = False
        for p in t.get("params", []):
            hint = hint_for_schema(p["schema"]) if "schema" in p else BASE_TYPES[p.get("type", "string")]
            if "default" in p:
                if p["default"] is None:
                    hint = f"Optional[{hint}]"
                self.add(f"    {p['name']}: {hint} = {p['default']!r},")
                defaulted = True
            elif p.get("optional"):
                self.add(f"    {p['name']}: Optional[{hint}]{' = None' if defaulted else ''},")
            elif defaulted:
                raise CannotExpress(f"a required parameter `{p['name']}` after one with a default")
            else:
                self.add(f"    {p['name']}: {hint},")
        self.add("):")
        doc = t.get("description", "")
        described = [p for p in t.get("params", []) if p.get("description")]
        if described:
            doc += "\n\nArgs:\n" + "".join(f"    {p['name']}: {p['description']}\n" for p in described)
        if doc:
            self.add("    " + literal(doc))
            # The literal's own line breaks are lines of the file too.
            self.lines[-1:] = self.lines[-1].split("\n")
        end = self.add(f"    return [{', '.join(p['name'] for p in t.get('params', []))}]")
        self.tool_spans.append((start, end))

    def text(self):
        return "\n".join(self.lines) + "\n"


def run_case(test, case):
    case = expand(case)
    source = Source(case)
    with tempfile.TemporaryDirectory(prefix="toolhost-conformance-") as root:
        app = os.path.join(root, "app.py")
        with open(app, "w", encoding="utf-8") as f:
            f.write(source.text())
        listing = "\n".join(f"{i + 1:3} {l}" for i, l in enumerate(source.lines))
        if "manifest" in case:
            try:
                manifest = _project.manifest(root)
            except _Errors as e:
                test.fail(f"refused: {[m.render() for m in e.errors]}\n{listing}")
            test.assertEqual(manifest, case["manifest"], listing)
            tools = [t["name"] for t in manifest["tools"]]
            _guest.prepare()
            for call in case.get("calls", []):
                ok, text = _guest.dispatch(call.get("tool", tools[0]), call["args"])
                test.assertTrue(ok, f"{call}: {text}")
                test.assertEqual(json.loads(text), call["returns"], call)
            return
        want = case["error"]
        with test.assertRaises(_Errors, msg=listing) as ctx:
            _project.manifest(root)
        errors = ctx.exception.errors
        shown = [m.render() for m in errors]
        test.assertEqual(len(errors), 1, f"expected one error: {shown}\n{listing}")
        err = errors[0]
        test.assertIn(want["message"], err.message, f"rule {want['rule']}\n{listing}")
        test.assertEqual(os.path.realpath(err.file), os.path.realpath(app), shown)
        at = want["at"]
        if at == "plugin":
            test.assertEqual(err.line, source.plugin_line, f"{shown}\n{listing}")
        elif at.startswith("tool:"):
            start, end = source.tool_spans[int(at[5:])]
            test.assertTrue(start <= err.line <= end, f"line {err.line} is not in {start}..{end}: {shown}\n{listing}")
        else:
            test.assertEqual(at, "module")


class Conformance(unittest.TestCase):
    """One test per case of the table (`test_<id>`)."""

    maxDiff = 4000

    def test_the_table_is_well_formed(self):
        with open(TABLE, encoding="utf-8") as f:
            table = json.load(f)
        ids = [c["id"] for c in table["cases"]]
        self.assertEqual(len(ids), len(set(ids)), "case ids are unique")
        for c in table["cases"]:
            self.assertEqual(("manifest" in c) + ("error" in c), 1, f"{c['id']}: one of manifest or error")
            if "error" in c:
                self.assertIn(c["error"]["rule"], table["rules"], c["id"])
            for lang in c.get("skip", {}):
                self.assertIn(lang, ("rust", "python", "javascript"), c["id"])
        used = {c["error"]["rule"] for c in table["cases"] if "error" in c}
        self.assertEqual(sorted(set(table["rules"]) - used), [], "every rule has a case")


def _load():
    with open(TABLE, encoding="utf-8") as f:
        table = json.load(f)
    for case in table["cases"]:
        def test(self, case=case):
            run_case(self, case)

        reason = case.get("skip", {}).get(LANG)
        if reason:
            test = unittest.skip(reason)(test)
        setattr(Conformance, f"test_{case['id']}", test)


_load()

if __name__ == "__main__":
    sys.exit(unittest.main())

"""The SDK conformance table (tests/sdk-conformance/cases.json), run against the Python SDK.

Each case becomes an `app.py` written as an author would write it — `plugin(...)`, `@tool`
functions with type hints, defaults and docstrings, then its `@resource`, `@resource_template`,
`@prompt` and `@complete` functions — and goes through `_project.manifest`, the function behind
`python3 -m toolhost_sdk manifest`. The manifest must equal the table's, or the
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


# The names app.py imports: a function named so would shadow the decorator the next
# declaration uses.
IMPORTED = {"Any", "Literal", "Optional", "plugin", "tool", "resource", "resource_template", "prompt",
            "complete"}


def is_name(s):
    return isinstance(s, str) and s.isidentifier() and not keyword.iskeyword(s) and s not in IMPORTED


def function_name(name, kind, index, options):
    """A declaration's function name: `name` when Python can spell it (so the SDK's own naming
    by function is what is tested), else `{kind}_{index}` with `name` set in `options`."""
    if is_name(name):
        return name
    options["name"] = name
    return f"{kind}_{index}"


def known_keys(decl, what, known):
    """Refuse a declaration holding a key this runner does not know: the case says something it
    would otherwise silently leave out."""
    unknown = sorted(set(decl) - set(known))
    if unknown:
        raise CannotExpress(f"a {what} with the key {unknown[0]!r}, which the Python runner does not know")


def template_variables(template):
    """The variables of a URI template, in order, read as an author reads them (`{name}`,
    `{+name}`): even a template the SDK refuses gets the function its author would write."""
    return [part.split("}")[0].lstrip("+") for part in template.split("{")[1:] if "}" in part]


def call(decorator, args, options, bare=False):
    """`@decorator(args…, key=value…)`, each value as a Python literal; with `bare` and nothing
    to pass, `@decorator` alone (the SDK takes the function itself then)."""
    written = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in options.items()]
    if bare and not written:
        return f"@{decorator}"
    return f"@{decorator}({', '.join(written)})"


class Source:
    """app.py for one case, with the lines of the plugin call and the span (first line, last
    line) of each declaration, by kind: `spans["tool"][N]` is what `at: "tool:N"` points into."""

    def __init__(self, case):
        self.lines = ["from typing import Any, Literal, Optional",
                      "from toolhost_sdk import complete, plugin, prompt, resource, resource_template, tool", ""]
        self.plugin_line = None
        self.spans = {"tool": [], "resource": [], "template": [], "prompt": [], "completion": []}
        self.write_plugin(case.get("plugin", {}))
        for i, t in enumerate(case.get("tools", [])):
            self.write_tool(i, t)
        # In the README's order, completions last: after what they complete, as an author writes them.
        for i, r in enumerate(case.get("resources", [])):
            self.write_resource(i, r)
        for i, r in enumerate(case.get("resourceTemplates", [])):
            self.write_template(i, r)
        for i, p in enumerate(case.get("prompts", [])):
            self.write_prompt(i, p)
        for i, c in enumerate(case.get("completions", [])):
            self.write_completion(i, c)

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
        self.write_docstring(t.get("description", ""), t.get("params", []))
        end = self.add(f"    return [{', '.join(p['name'] for p in t.get('params', []))}]")
        self.spans["tool"].append((start, end))

    def write_docstring(self, description, params=()):
        """The docstring an author writes: the description, then an `Args:` section for the
        described params (or prompt arguments). No description and none described: none."""
        doc = description or ""
        described = [p for p in params if p.get("description")]
        if described:
            args = "Args:\n" + "".join(f"    {p['name']}: {p['description']}\n" for p in described)
            doc = f"{doc}\n\n{args}" if doc else args
        if doc:
            self.add("    " + literal(doc))
            # The literal's own line breaks are lines of the file too.
            self.lines[-1:] = self.lines[-1].split("\n")

    def write_declaration(self, kind, decorator, fn, params, description, body, described=()):
        """One decorated function; its span, from the decorator to the body's last line."""
        self.add("")
        start = self.add(decorator)
        self.add(f"def {fn}({', '.join(params)}):")
        self.write_docstring(description, described)
        end = self.add(f"    return {body}")
        self.spans[kind].append((start, end))

    def resource_options(self, r, kind, index):
        """(options, function name) of a resource or template; the URI is the decorator's
        positional argument, as the SDK's examples write it."""
        options = {}
        fn = function_name(r["name"], kind, index, options) if "name" in r else f"{kind}_{index}"
        for key, py in (("title", "title"), ("mimeType", "mime_type"), ("size", "size")):
            if key in r:
                options[py] = r[key]
        return options, fn

    def write_resource(self, index, r):
        known_keys(r, "resource", ("uri", "name", "title", "description", "mimeType", "size"))
        options, fn = self.resource_options(r, "resource", index)
        self.write_declaration("resource", call("resource", [r["uri"]], options), fn, [],
                               r.get("description"), repr("x"))

    def write_template(self, index, r):
        known_keys(r, "resource template", ("uriTemplate", "name", "title", "description", "mimeType"))
        options, fn = self.resource_options(r, "template", index)
        variables = template_variables(r["uriTemplate"])
        for v in variables:
            if not is_name(v):
                raise CannotExpress(f"the template variable {v!r} cannot be a Python parameter")
        # A variable used twice (which the SDK refuses) is still one parameter: Python allows no other.
        self.write_declaration("template", call("resource_template", [r["uriTemplate"]], options), fn,
                               [f"{v}: str" for v in dict.fromkeys(variables)], r.get("description"), repr("x"))

    def write_prompt(self, index, p):
        known_keys(p, "prompt", ("name", "title", "description", "arguments"))
        options = {}
        fn = function_name(p["name"], "prompt", index, options)
        # The name first and positional, as the SDK's examples write it: `@prompt("summarise-file")`.
        args = [options.pop("name")] if "name" in options else []
        if "title" in p:
            options["title"] = p["title"]
        params = []
        arguments = p.get("arguments", [])
        for a in arguments:
            known_keys(a, "prompt argument", ("name", "description", "optional"))
            if not is_name(a["name"]):
                raise CannotExpress(f"the prompt argument {a['name']!r} cannot be a Python parameter")
            params.append(f"{a['name']}: Optional[str] = None" if a.get("optional") else f"{a['name']}: str")
        # A prompt's arguments are passed by name, so a required one may follow an optional one
        # when all are keyword-only (a positional parameter without a default cannot).
        optional = [bool(a.get("optional")) for a in arguments]
        if optional != sorted(optional):
            params.insert(0, "*")
        self.write_declaration("prompt", call("prompt", args, options, bare=True), fn, params,
                               p.get("description"), repr("x"), arguments)

    def write_completion(self, index, c):
        known_keys(c, "completion", ("prompt", "template", "argument"))
        if ("prompt" in c) == ("template" in c):
            raise CannotExpress("a completion names exactly one of `prompt` and `template`")
        options = {k: c[k] for k in ("prompt", "template", "argument") if k in c}
        self.write_declaration("completion", call("complete", [], options), f"completion_{index}", ["value"], "",
                               "[value]")

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
        kind, _, index = at.partition(":")
        if at == "plugin":
            test.assertEqual(err.line, source.plugin_line, f"{shown}\n{listing}")
        elif kind in source.spans and index.isdigit():
            start, end = source.spans[kind][int(index)]
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

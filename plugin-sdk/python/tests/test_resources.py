"""Resources: `@resource` and `@resource_template` become the manifest's `resources` and
`resourceTemplates`, held to the host's rules at the author's line; a read dispatches to them.

app.py in these tests starts with 4 header lines (support.ProjectCase.app's 3 and the import of
`resource`, `resource_template`), so the body's first line is line 5; a tool follows the body
(a plugin needs one)."""

import io
import os
import sys
import types
import unittest
from contextlib import redirect_stderr

from support import Err, ProjectCase, componentize_py_stand_ins

from toolhost_sdk import __main__ as cli
from toolhost_sdk import _dev, _guest, _resources

TAIL = '''

@tool
def ping() -> str:
    """Ping."""
    return "pong"
'''


class ResourceCase(ProjectCase):
    def resources(self, body):
        self.app("from toolhost_sdk import resource, resource_template\n" + body + TAIL)

    def read(self, uri, template=None, variables=()):
        with redirect_stderr(io.StringIO()) as err:
            result = _guest.read(uri, template, list(variables))
        self.stderr = err.getvalue()
        return result


class Manifest(ResourceCase):
    def test_entries_with_every_field_in_order(self):
        self.resources('''\
@resource("docs://style-guide", name="style-guide", title="Style guide", mime_type="text/markdown", size=123)
def style():
    """The house style guide.

    Details that are not the description.
    """
    return "# Style"

@resource_template("file:///{+path}", name="workspace-file", title="A file",
                   description="A file of the workspace.", mime_type="text/plain")
def workspace_file(path: str) -> str:
    return path
''')
        m = self.manifest()
        self.assertEqual(m["resources"], [{
            "uri": "docs://style-guide", "name": "style-guide", "title": "Style guide",
            "description": "The house style guide.", "mimeType": "text/markdown", "size": 123}])
        self.assertEqual(list(m["resources"][0]), ["uri", "name", "title", "description", "mimeType", "size"])
        self.assertEqual(m["resourceTemplates"], [{
            "uriTemplate": "file:///{+path}", "name": "workspace-file", "title": "A file",
            "description": "A file of the workspace.", "mimeType": "text/plain"}])
        self.assertEqual(list(m), ["format", "name", "version", "description", "capabilities", "tools",
                                   "resources", "resourceTemplates"])

    def test_empty_fields_and_lists_are_left_out(self):
        self.resources('''\
@resource("docs://a")
def a():
    return "a"
''')
        m = self.manifest()
        self.assertEqual(m["resources"], [{"uri": "docs://a", "name": "a"}])
        self.assertNotIn("resourceTemplates", m)

    def test_a_plugin_without_resources_has_neither_list(self):
        self.resources("")
        m = self.manifest()
        self.assertNotIn("resources", m)
        self.assertNotIn("resourceTemplates", m)

    def test_the_function_is_returned_unchanged(self):
        self.resources('''\
@resource_template("notes://{name}")
def note(name):
    return name.upper()
''')
        self.manifest()
        app = sys.modules["app"]
        self.assertEqual(app.note("x"), "X")


class Rules(ResourceCase):
    def assertRefused(self, body, where, text):
        self.resources(body)
        self.assertError(where, text)

    def test_uris(self):
        cases = [
            ('"skill://a/b/SKILL.md"', "the `skill:` scheme, which is the host's own"),
            ('"SKILL://a"', "the `SKILL:` scheme"),
            ('"no-scheme"', 'resource URI "no-scheme" is not an absolute URI'),
            ('"1x://a"', "is not an absolute URI"),
            ('"docs://a b"', "holds ' ': a URI has no whitespace or control characters"),
            ('"docs://a\\x07"', "holds '\\x07'"),
            ('"docs://{a}"', "a URI with variables is a resource template (`@resource_template`)"),
            ('"docs://" + "a" * 1020', "is 1027 bytes; at most 1024 are allowed"),
            ("42", "the resource URI must be a string, got 42"),
        ]
        for uri, text in cases:
            with self.subTest(uri=uri):
                self.assertRefused(f'@resource({uri})\ndef r():\n    return ""\n', "app.py:5", text)

    def test_templates(self):
        cases = [
            ("file:///{a}{b}", "has two expressions in a row before `{b}`: put text between them"),
            ("{+uri}", "is not an absolute URI"),
            ("x{+uri}:", "is not an absolute URI"),
            ("file:///{a", "has a `{` without its `}`"),
            ("file:///a}", "has a `}` without its `{`"),
            ("file:///{?q}", "has `{?q}`: toolhost serves `{name}` and `{+name}` expressions"),
            ("file:///{}", "has `{}`"),
            ("file:///{a}/{a}", "uses the variable `a` twice"),
            ("file:///a", "has no `{name}` expression: a URI without variables is a static resource"),
            ("x://" + "/".join(f"{{v{i}}}" for i in range(9)), "has 9 expressions; at most 8 are allowed"),
            ("skill://{a}", "the `skill:` scheme"),
        ]
        for t, text in cases:
            with self.subTest(template=t):
                self.assertRefused(f'@resource_template({t!r})\ndef r(a):\n    return ""\n', "app.py:5",
                                   f"resource template {_resources.quoted(t)} {text}" if t == "file:///{a}{b}"
                                   else text)

    def test_texts(self):
        cases = [
            ('name=""', "`name` must be a non-blank string"),
            ('name="a\\nb"', "`name` contains the control character U+000A; it must be one line"),
            ('name="n" * 129', "`name` is 129 characters long; the host allows at most 128"),
            ('title=" "', "`title` must not be blank when given"),
            ('title="t" * 129', "`title` is 129 characters long"),
            ('description="d" * 1025', "`description` is 1025 characters long; the host allows at most 1024"),
            ('description="a\\x00"', "`description` contains the control character U+0000; only tabs and line"),
            ('mime_type="text"', '`mime_type` "text" is not a MIME type (`type/subtype`'),
            ('mime_type="text/"', "is not a MIME type"),
            ('mime_type="text/é"', "is not a MIME type"),
            ('mime_type="a/" + "b" * 126', "is not a MIME type"),
            ("size=-1", "`size` must be a whole number of bytes, at least 0, got -1"),
            ("size=True", "`size` must be a whole number of bytes"),
            ("colour=1", "unknown resource option `colour`; expected one of: name, title, description, "
                         "mime_type, size"),
        ]
        for option, text in cases:
            with self.subTest(option=option):
                self.assertRefused(f'@resource("docs://a", {option})\ndef r():\n    return ""\n', "app.py:5", text)

    def test_text_rules_allow_what_the_host_allows(self):
        self.resources('''\
@resource("docs://a", title="t" * 128, description="line one\\n\\tline two", mime_type="text/markdown; charset=utf-8")
def r():
    return ""
''')
        self.assertEqual(self.manifest()["resources"][0]["mimeType"], "text/markdown; charset=utf-8")

    def test_a_docstring_too_long_is_reported_at_the_docstring(self):
        self.assertRefused('''\
@resource("docs://a")
def r():
    """''' + "x" * 1025 + '''"""
    return ""
''', "app.py:7", "the description of `r` (the docstring's first paragraph) is 1025 characters long")

    def test_a_template_option_size_is_unknown(self):
        self.assertRefused('@resource_template("file:///{+path}", size=1)\ndef r(path):\n    return ""\n',
                           "app.py:5", "unknown resource option `size`; expected one of: name, title, description, "
                                       "mime_type")

    def test_a_static_resource_takes_no_parameters(self):
        self.assertRefused('''\
@resource("docs://a")
def r(
    path,
):
    return ""
''', "app.py:7", "a static resource's function takes no parameters (`path`); a URI with `{variables}` is a "
                 "`@resource_template`")

    def test_template_parameters_are_its_variables(self):
        self.assertRefused('''\
@resource_template("db://{table}/rows/{id}")
def r(table,
      key):
    return ""
''', "app.py:7", '`key` is no variable of "db://{table}/rows/{id}" (its variables: table, id)')
        self.assertRefused('''\
@resource_template("db://{table}/rows/{id}")
def r(table):
    return ""
''', "app.py:6", "the template's variable `id` needs a parameter `id: str` of `r`")
        self.assertRefused('''\
@resource_template("db://{table}/rows/{id}")
def r(table, id: int):
    return ""
''', "app.py:6", "parameter `id` is a template variable, so text: annotate it `str`")
        self.assertRefused('''\
@resource_template("db://{table}/rows/{id}")
def r(table, id, **more):
    return ""
''', "app.py:6", "`**more` is not supported")

    def test_async_generators_and_non_functions_are_refused(self):
        self.assertRefused('@resource("docs://a")\nasync def r():\n    return ""\n', "app.py:6",
                           "a resource's function is synchronous")
        self.assertRefused('@resource("docs://a")\ndef r():\n    yield ""\n', "app.py:6",
                           "a resource's function is synchronous")
        self.assertRefused('@resource("docs://a")\nclass R:\n    pass\n', "app.py:5",
                           "`@resource` goes on a plain function defined with `def`")

    def test_the_uri_is_required(self):
        self.assertRefused('@resource\ndef r():\n    return ""\n', "app.py:5",
                           '`@resource` needs its URI: `@resource("docs://guide")`')
        self.assertRefused('@resource_template\ndef r():\n    return ""\n', "app.py:5",
                           '`@resource_template` needs its URI: `@resource_template("file:///{+path}")`')

    def test_uris_and_names_are_declared_once(self):
        self.assertRefused('''\
@resource("docs://a")
def a():
    return ""

@resource("docs://a", name="b")
def b():
    return ""
''', "app.py:9", 'resource "docs://a" is declared twice (first at ')
        self.assertRefused('''\
@resource("docs://a", name="same")
def a():
    return ""

@resource_template("docs://{b}", name="same")
def b(b):
    return ""
''', "app.py:9", 'the name "same" names two resources (first at ')

    def test_caps(self):
        statics = "".join(f'@resource("docs://r{i}")\ndef r{i}():\n    return ""\n' for i in range(65))
        self.resources(statics)
        errors = self.errors()
        self.assertEqual(errors, [f"app.py:{5 + 64 * 3}: this plugin declares more than 64 resources; the host "
                                  "allows at most 64"])
        templates = "".join(f'@resource_template("t{i}://{{v}}")\ndef t{i}(v):\n    return ""\n' for i in range(17))
        self.resources(templates)
        self.assertError(f"app.py:{5 + 16 * 3}", "this plugin declares more than 16 resource templates")

    def test_every_mistake_is_reported_together(self):
        self.resources('''\
@resource("skill://a")
def a():
    return ""

@resource("docs://b", size="big")
def b(x):
    return ""
''')
        self.assertEqual([e.split(":")[1] for e in self.errors()], ["5", "9", "10"])


class Read(ResourceCase):
    def setUp(self):
        super().setUp()
        self.resources('''\
@resource("docs://guide", mime_type="text/markdown")
def guide():
    return "# Guide"

@resource("img://logo", mime_type="image/png")
def logo():
    return b"\\x89PNG"

@resource("img://buffer")
def buffer():
    return bytearray(b"ab")

@resource_template("db://{table}/rows/{id}.json")
def row(id, table):
    return f"{table}:{id}"

@resource_template("fail://{kind}")
def fail(kind):
    if kind == "tool":
        raise ToolError("no such row")
    if kind == "value":
        raise ValueError("bad row")
    if kind == "none":
        return None
    return 42
''')
        self.manifest()
        _guest.prepare()

    def test_a_static_resource_reads_its_function(self):
        self.assertEqual(self.read("docs://guide"), (True, "# Guide"))

    def test_bytes_are_a_blob(self):
        self.assertEqual(self.read("img://logo"), (True, b"\x89PNG"))
        self.assertEqual(self.read("img://buffer"), (True, b"ab"))

    def test_a_template_gets_its_variables_by_name(self):
        template = "db://{table}/rows/{id}.json"
        self.assertEqual(self.read("db://users/rows/4%2F2.json", template, [("table", "users"), ("id", "4/2")]),
                         (True, "users:4/2"))

    def test_exceptions_are_the_reads_error(self):
        self.assertEqual(self.read("fail://tool", "fail://{kind}", [("kind", "tool")]), (False, "no such row"))
        self.assertEqual(self.read("fail://value", "fail://{kind}", [("kind", "value")]),
                         (False, "ValueError: bad row"))
        self.assertIn("Traceback", self.stderr)

    def test_other_results_are_errors(self):
        self.assertEqual(self.read("fail://none", "fail://{kind}", [("kind", "none")]),
                         (False, "fail://none: `fail` returned a `NoneType`; a resource returns str (text) or bytes"))
        self.assertEqual(self.read("fail://int", "fail://{kind}", [("kind", "int")])[1],
                         "fail://int: `fail` returned a `int`; a resource returns str (text) or bytes")

    def test_what_the_plugin_does_not_serve(self):
        self.assertEqual(self.read("docs://other"), (False, "this plugin serves no resource docs://other"))
        self.assertEqual(self.read("x://a", "x://{a}", [("a", "a")]), (False, "this plugin serves no resource x://a"))
        self.assertEqual(self.read("fail://x", "fail://{kind}", []),
                         (False, "fail://x: the host sent no value for `kind` of fail://{kind}"))


class NoResources(ResourceCase):
    def test_every_read_is_an_error(self):
        self.resources("")
        self.manifest()
        _guest.prepare()
        self.assertEqual(self.read("docs://a"), (False, "this plugin serves no resource docs://a"))


class Entry(ResourceCase):
    """The generated entry's `Resources.read`, with stand-ins for componentize-py's modules."""

    def test_resources_read_returns_contents_or_raises_err(self):
        self.resources('''\
@resource("docs://a")
def a():
    return "text"

@resource_template("bin://{n}")
def b(n):
    if n == "0":
        raise ToolError("zero")
    return bytes([int(n)])
''')
        self.manifest()
        sys.path.insert(0, self.dir)
        try:
            with componentize_py_stand_ins():
                entry = types.ModuleType(cli.ENTRY_NAME)
                exec(compile(cli.ENTRY.format(module="app"), os.path.join(self.dir, "entry.py"), "exec"),
                     entry.__dict__)
                res = entry.Resources()
                req = types.SimpleNamespace
                got = res.read(req(uri="docs://a", template=None, variables=[]))
                self.assertEqual((got.kind, got.value), ("text", "text"))
                got = res.read(req(uri="bin://7", template="bin://{n}", variables=[("n", "7")]))
                self.assertEqual((got.kind, got.value), ("blob", b"\x07"))
                with self.assertRaises(Err) as ctx:
                    res.read(req(uri="bin://0", template="bin://{n}", variables=[("n", "0")]))
                self.assertEqual(ctx.exception.value, "zero")
        finally:
            sys.path.remove(self.dir)

    def test_the_dev_runtime_reads_too(self):
        self.resources('''\
@resource("docs://a")
def a():
    return "text"
''')
        self.manifest()
        _guest.prepare()
        try:
            with componentize_py_stand_ins():
                entry = types.ModuleType("dev_entry")
                exec(compile(_dev.RUNTIME_ENTRY, os.path.join(self.dir, "dev_entry.py"), "exec"), entry.__dict__)
                req = types.SimpleNamespace(uri="docs://a", template=None, variables=[])
                _dev._ready = "toolhost dev: loading the plugin's sources failed: boom"
                with self.assertRaises(Err) as ctx:
                    entry.Resources().read(req)
                self.assertEqual(ctx.exception.value, "toolhost dev: loading the plugin's sources failed: boom")
                _dev._ready = True
                got = entry.Resources().read(req)
                self.assertEqual((got.kind, got.value), ("text", "text"))
        finally:
            _dev._ready = None

    def test_the_sdk_builds_for_plugin_full(self):
        self.assertEqual(cli.WORLD, "plugin-full")


if __name__ == "__main__":
    unittest.main()

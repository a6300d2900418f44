"""Every misuse is a `FILE:LINE: error: message` at the author's line, not a traceback.

app.py in these tests starts with 3 header lines (see support.ProjectCase.app), so the body's
first line is line 4."""

import unittest

from support import ProjectCase


class Misuse(ProjectCase):
    def test_unsupported_type_points_at_the_parameter(self):
        self.app('''\
@tool
def t(
    ok: str,
    bad: set[str],
) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:7", "parameter `bad`: unsupported type `set[str]`")

    def test_unsupported_type_inside_a_dataclass(self):
        self.app('''\
@dataclasses.dataclass
class Item:
    when: bytes

@tool
def t(item: Item) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:9", "parameter `item`: unsupported type `bytes`")

    def test_docstring_line_for_a_missing_parameter(self):
        self.app('''\
@tool
def t(path: str) -> str:
    """Read a file.

    Args:
        path: the file
        encoding: the text encoding
    """
    return ""
''')
        self.assertError("app.py:10", "the docstring describes a parameter `encoding` that `t` does not have")

    def test_rest_needs_a_str_last_parameter(self):
        self.app('''\
@tool(rest=True)
def t(a: str, n: int) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:5", "with `rest`, the last parameter must be a required `str` (`n` is not)")

    def test_rest_last_parameter_cannot_be_optional(self):
        self.app('''\
@tool(rest=True)
def t(a: str, b: str = "") -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:5", "with `rest`")

    def test_rest_needs_a_parameter(self):
        self.app('''\
@tool(rest=True)
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:4", "`rest` needs at least one parameter")

    def test_duplicate_tool_names_point_at_the_second(self):
        self.app('''\
@tool
def read() -> str:
    """One."""
    return ""

@tool(name="read")
def read_again() -> str:
    """Two."""
    return ""
''')
        self.assertError("app.py:9", "tool `read` is defined twice in this plugin (first at ")

    def test_required_after_optional(self):
        self.app('''\
@tool
def t(a: Optional[int],
      b: str) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:6", "required parameter `b` cannot follow the optional parameter `a`")

    def test_missing_type_hint(self):
        self.app('''\
@tool
def t(x) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:5", "parameter `x` needs a type hint")

    def test_missing_docstring_points_at_def(self):
        self.app('''\
@tool(category="x")
def t() -> str:
    return ""
''')
        self.assertError("app.py:5", "tool `t` has no description: write a docstring")

    def test_bad_options_point_at_the_decorator(self):
        self.app('''\
@tool(colour="red")
def a() -> str:
    """A."""
    return ""

@tool(output_limit=0)
def b() -> str:
    """B."""
    return ""

@tool(danger="yes")
def c() -> str:
    """C."""
    return ""

@tool(name="no spaces")
def d() -> str:
    """D."""
    return ""
''')
        errs = self.errors()
        self.assertEqual(len(errs), 4, errs)
        self.assertTrue(errs[0].startswith("app.py:4: unknown tool option `colour`"), errs)
        self.assertTrue(errs[1].startswith("app.py:9: `output_limit` must be a whole number of characters, at least 1"), errs)
        self.assertTrue(errs[2].startswith("app.py:14: `danger` is a flag"), errs)
        self.assertTrue(errs[3].startswith('app.py:19: tool name "no spaces" must match'), errs)

    def test_output_schema_must_be_an_object_schema(self):
        self.app('''\
@tool(output_schema={"type": "array"})
def a() -> list:
    """A."""
    return []

@tool(output_schema=list)
def b() -> list:
    """B."""
    return []
''')
        errs = self.errors()
        self.assertEqual(len(errs), 2, errs)
        self.assertTrue(errs[0].startswith("app.py:4: `output_schema` must describe an object"), errs)
        self.assertTrue(errs[1].startswith("app.py:9: `output_schema` takes a dataclass"), errs)

    def test_var_args_keyword_only_and_async(self):
        self.app('''\
@tool
def a(*words: str) -> str:
    """A."""
    return ""

@tool
def b(x: str, *, y: str) -> str:
    """B."""
    return ""

@tool
async def c() -> str:
    """C."""
    return ""
''')
        errs = self.errors()
        self.assertTrue(any(e.startswith("app.py:5: `*words` is not supported") for e in errs), errs)
        self.assertTrue(any(e.startswith("app.py:10: parameter `y` is keyword-only") for e in errs), errs)
        self.assertTrue(any(e.startswith("app.py:15: tools are synchronous") for e in errs), errs)

    def test_bad_args_section_line(self):
        self.app('''\
@tool
def t(x: str) -> str:
    """T.

    Args:
        this is not a param line
    """
    return ""
''')
        self.assertError("app.py:9", "cannot read this `Args:` line")

    def test_all_errors_are_reported_at_once(self):
        self.app('''\
@tool
def a(x) -> str:
    """A."""
    return ""

@tool
def b(y: set) -> str:
    """B."""
    return ""
''')
        errs = self.errors()
        self.assertEqual([e.split(":")[1] for e in errs], ["5", "10"])


class FreeText(ProjectCase):
    """Descriptions, categories and schemas are held to the host's caps (host/spec/src/manifest/mod.rs)."""

    def test_a_long_docstring_points_at_the_docstring(self):
        self.app('@tool\ndef t() -> str:\n    """' + "d" * 4097 + '"""\n    return ""\n')
        self.assertError("app.py:6", "the description of `t` (the docstring's first paragraph) is 4097 "
                                     "characters long; the host allows at most 4096")

    def test_a_control_character_points_at_its_line(self):
        self.app('''\
@tool
def t() -> str:
    """Lists files.
    Really.\x1b[2K
    """
    return ""
''')
        self.assertError("app.py:7", "contains the control character U+001B")

    def test_a_long_param_description_points_at_its_args_line(self):
        self.app('''\
@tool
def t(path: str) -> str:
    """Reads.

    Args:
        path: ''' + "p" * 1025 + '''
    """
    return ""
''')
        self.assertError("app.py:9", "the description of parameter `path` is 1025 characters long")

    def test_category_is_one_short_line(self):
        self.app('''\
@tool(category="files\\nDANGEROUS")
def a() -> str:
    """A."""
    return ""

@tool(category="c" * 65)
def b() -> str:
    """B."""
    return ""
''')
        errs = self.errors()
        self.assertTrue(errs[0].startswith("app.py:4: `category` contains the control character U+000A"), errs)
        self.assertTrue(errs[1].startswith("app.py:9: `category` is 65 characters long"), errs)

    def test_an_oversized_output_schema(self):
        self.app('''\
@tool(output_schema={"type": "object", "description": "s" * 20000})
def a() -> dict:
    """A."""
    return {}
''')
        self.assertError("app.py:4", "the output schema is 20034 bytes of JSON; the host allows at most 16384")

    def test_plugin_description_and_version_from_pyproject(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "1\\u0007"\ndescription = "' + "d" * 1025 + '"\n')
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("pyproject.toml:3", "plugin `version` contains the control character U+0007")
        self.assertError("pyproject.toml:4", "plugin `description` is 1025 characters long")

    def test_at_the_caps_it_builds(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "' + "1" * 64 + '"\ndescription = "' + "d" * 1024 + '"\n')
        self.app('@tool(category="' + "c" * 64 + '")\ndef t() -> str:\n    """' + "d" * 4096 + '"""\n    return ""\n')
        self.assertEqual(len(self.tool()["description"]), 4096)


class PluginMisuse(ProjectCase):
    def test_bad_plugin_options_point_at_the_call(self):
        self.app('''\
plugin(fs="workspace:rwx", colour=1, env="A=B", net=3)

@tool
def t() -> str:
    """T."""
    return ""
''')
        errs = self.errors()
        self.assertEqual(len(errs), 4, errs)
        self.assertTrue(all(e.startswith("app.py:4: ") for e in errs), errs)
        text = "\n".join(errs)
        for want in ["`fs` takes \"NAME:ro\" or \"NAME:rw\"", "unknown plugin option `colour`",
                     '`env` entry "A=B" is not an environment variable name', "`net` takes a string or a list"]:
            self.assertIn(want, text)

    def test_new_rules_point_at_the_call(self):
        # A plugin name over the host's cap of 64, and `exec` requests that are paths, empty or
        # over 255 characters: each at the `plugin(...)` line (the host would refuse the file).
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""

plugin(name="p" * 65,
       exec=["/bin/sh", "", "x" * 256, "git"])
''')
        errs = self.errors()
        self.assertEqual(len(errs), 4, errs)
        self.assertTrue(all(e.startswith("app.py:9: ") for e in errs), errs)
        self.assertIn('plugin name "' + "p" * 65 + '" must match [A-Za-z_][A-Za-z0-9_-]* (at most 64 chars)', errs[3])
        for e, shown in zip(errs, ['"/bin/sh"', '""', '"' + "x" * 256 + '"']):
            self.assertIn(f"`exec` entry {shown} is not a program name such as \"git\" (no paths", e)

    def test_a_long_param_name_points_at_the_parameter(self):
        self.app('''\
@tool
def t(
    ok: str,
    ''' + "a" * 65 + ''': str,
) -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:7", "parameter name \"" + "a" * 65 + "\" must match [A-Za-z_][A-Za-z0-9_]* (at most 64")

    def test_plugin_declared_twice(self):
        self.app('''\
plugin(net="a.com")
plugin(net="b.com")

@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:5", "`plugin(...)` is called twice (first at ")

    def test_bad_name_in_pyproject_points_at_its_line(self):
        self.write("pyproject.toml", '[project]\nversion = "1"\nname = "my.notes"\n')
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("pyproject.toml:3", 'plugin name "my.notes" must match')

    def test_unknown_toolhost_key_in_pyproject(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "1"\n\n[tool.toolhost]\nmodule = "app"\nmodul = "x"\n')
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("pyproject.toml:7", "unknown key `modul` in [tool.toolhost]")

    def test_reserved_module_name(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "1"\n[tool.toolhost]\nmodule = "plugin"\n')
        self.write("plugin.py", "")
        self.assertError("pyproject.toml:5", "the module name `plugin` is taken inside the component")

    def test_missing_module_file(self):
        self.write("pyproject.toml", '[project]\nname = "x"\nversion = "1"\n[tool.toolhost]\nmodule = "tools"\n')
        self.assertError("pyproject.toml:5", "the tool module `tools` has no file")

    def test_missing_version(self):
        self.write("pyproject.toml", '[project]\nname = "x"\n')
        self.app('''\
@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("pyproject.toml:1", "the plugin has no version")

    def test_no_tools(self):
        self.app("def helper():\n    pass\n")
        self.assertError("app.py:1", "this plugin declares no tools")

    def test_import_failure_points_at_the_line(self):
        self.app('''\
X = 1
Y = undefined_name
''')
        self.assertError("app.py:5", "importing `app` failed: NameError: name 'undefined_name' is not defined")

    def test_syntax_error(self):
        self.app('''\
@tool
def t( -> str:
    return ""
''')
        self.assertError("app.py:5", "SyntaxError")

    def test_failure_in_an_imported_module_points_there(self):
        self.write("helper.py", "A = 1\nraise RuntimeError('boom')\n")
        self.app("import helper\n")
        self.assertError("helper.py:2", "RuntimeError: boom")


if __name__ == "__main__":
    unittest.main()


class LateImports(ProjectCase):
    """An import inside a tool runs when the tool is called; the component holds only the
    modules imported while it was built."""

    def setUp(self):
        super().setUp()
        import sys

        from toolhost_sdk import _project

        self._baseline = _project.baseline
        # As under `python3 -m toolhost_sdk`: `csv` is not among the modules the component holds.
        _project.baseline = frozenset(m for m in sys.modules if m != "csv")

    def tearDown(self):
        from toolhost_sdk import _project

        _project.baseline = self._baseline
        super().tearDown()

    def test_an_import_inside_a_tool_of_a_module_not_loaded_is_an_error_at_its_line(self):
        self.app('''\
import json

@tool
def export(rows: list) -> str:
    """Rows as CSV."""
    import csv
    import json
    return json.dumps(rows)
''')
        self.assertEqual(self.errors(), [
            "app.py:9: `csv` is imported inside `export`, so only when the tool runs, and the component "
            "holds only the modules imported when it is built: import `csv` at the top of the module",
        ])

    def test_the_same_import_at_the_top_is_fine(self):
        self.app('''\
import csv

@tool
def export(rows: list) -> str:
    """Rows as CSV."""
    import csv
    return str(csv)
''')
        self.assertEqual(self.tool()["name"], "export")

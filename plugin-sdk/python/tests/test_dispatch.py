"""Calls: string arguments decoded per type, results encoded, exceptions → error messages."""

import io
import json
import unittest
from contextlib import redirect_stderr
from unittest import mock

from support import ProjectCase

from toolhost_sdk import ToolError, _guest, http, log, process

APP = '''\
@dataclasses.dataclass
class Item:
    title: str
    days: float = 1.0
    owner: Optional[str] = None

class Point(typing.TypedDict):
    x: int
    y: int

@tool
def echo(text: str) -> str:
    """Echo."""
    return text

@tool
def kinds(i: int, f: float, b: bool, items: list[Item], p: Point) -> dict:
    """Types of what arrived."""
    return {"i": [type(i).__name__, i], "f": [type(f).__name__, f], "b": b,
            "items": [[type(x).__name__, x.title, x.days, x.owner] for x in items],
            "p": [type(p).__name__, p["x"] + p["y"]]}

@tool
def opt(path: str, limit: int = 10, note: Optional[str] = None) -> list:
    """Optional params."""
    return [path, limit, note]

@tool
def fail(kind: str) -> str:
    """Raise."""
    if kind == "tool":
        raise ToolError("the file `x` does not exist")
    if kind == "value":
        raise ValueError("bad value")
    if kind == "key":
        return {}["missing"]
    if kind == "import":
        raise ModuleNotFoundError("No module named 'csv'", name="csv")
    raise RuntimeError()

@tool
def returns(kind: str) -> Any:
    """Return things."""
    return {"none": None, "list": [1, "a"], "item": Item("t"), "set": {1}, "int": 3, "bool": True}[kind]

@tool
def anything(v: Any) -> str:
    """Any JSON."""
    return json.dumps(v)

import json
'''


class Dispatch(ProjectCase):
    def setUp(self):
        super().setUp()
        self.app(APP)
        self.manifest()
        _guest.prepare()

    def call(self, tool, *args):
        with redirect_stderr(io.StringIO()) as err:
            result = _guest.dispatch(tool, list(args))
        self.stderr = err.getvalue()
        return result

    def test_text_passes_verbatim(self):
        self.assertEqual(self.call("echo", ' "a", b \n'), (True, ' "a", b \n'))

    def test_json_args_are_decoded_and_converted(self):
        ok, out = self.call("kinds", "3", "2", "true", '[{"title": "a"}, {"title": "b", "days": 2.5, "owner": "me"}]',
                            '{"x": 1, "y": 2}')
        self.assertTrue(ok, out)
        self.assertEqual(json.loads(out), {
            "i": ["int", 3], "f": ["float", 2.0], "b": True,
            "items": [["Item", "a", 1.0, None], ["Item", "b", 2.5, "me"]], "p": ["dict", 3]})

    def test_wrong_shapes_are_errors_naming_the_argument_and_path(self):
        cases = [
            (['"x"', "2", "true", "[]", "{}"], "argument `i` does not have the expected shape: i: expected an integer, got a string"),
            (["1.5", "2", "true", "[]", "{}"], "i: expected an integer, got 1.5"),
            (["true", "2", "true", "[]", "{}"], "i: expected an integer, got a boolean"),
            (["1", "2", "1", "[]", "{}"], "b: expected true or false, got a number"),
            (["1", "2", "true", '[{"title": 1}]', "{}"], "items[0].title: expected a string, got a number"),
            (["1", "2", "true", '[{"days": 1}]', "{}"], "items[0]: missing field `title`"),
            (["1", "2", "true", '[{"title": "a", "colour": 1}]', "{}"], "items[0]: unknown field `colour`"),
            (["1", "2", "true", '{}', "{}"], "items: expected an array, got an object"),
            (["1", "2", "true", '[]', '{"x": 1}'], "p: missing field `y`"),
        ]
        for args, want in cases:
            ok, out = self.call("kinds", *args)
            self.assertFalse(ok, args)
            self.assertTrue(out.startswith("kinds: "), out)
            self.assertIn(want, out)
        ok, out = self.call("kinds", "{oops")
        self.assertEqual((ok, out.split(":")[:2]), (False, ["kinds", " argument `i` is not valid JSON"]))

    def test_optional_params_take_defaults(self):
        self.assertEqual(self.call("opt", "a"), (True, '["a", 10, null]'))
        self.assertEqual(self.call("opt", "a", "5", "n"), (True, '["a", 5, "n"]'))
        self.assertEqual(self.call("opt", "a", "null"), (True, '["a", 10, null]'))

    def test_a_missing_module_says_imports_go_at_the_top(self):
        self.assertEqual(self.call("fail", "import"), (
            False, "ModuleNotFoundError: No module named 'csv'; a component holds only the modules imported "
                   "when it was built: import it at the top of the plugin's module"))

    def test_arity_and_unknown_tool(self):
        self.assertEqual(self.call("opt"), (False, "opt: argument 1 (`path`) is missing"))
        self.assertEqual(self.call("echo", "a", "b"), (False, "echo: takes at most 1 arguments but got 2"))
        self.assertEqual(self.call("nope"), (False, "this plugin has no tool named `nope`"))

    def test_exceptions_become_error_messages(self):
        self.assertEqual(self.call("fail", "tool"), (False, "the file `x` does not exist"))
        self.assertEqual(self.call("fail", "value"), (False, "ValueError: bad value"))
        self.assertIn("Traceback", self.stderr)
        self.assertEqual(self.call("fail", "key"), (False, "KeyError: 'missing'"))
        self.assertEqual(self.call("fail", "other"), (False, "RuntimeError"))

    def test_results_are_encoded(self):
        self.assertEqual(self.call("returns", "none"), (True, "ok"))
        self.assertEqual(self.call("returns", "list"), (True, '[1, "a"]'))
        self.assertEqual(self.call("returns", "item"), (True, '{"title": "t", "days": 1.0, "owner": null}'))
        self.assertEqual(self.call("returns", "int"), (True, "3"))
        self.assertEqual(self.call("returns", "bool"), (True, "true"))
        self.assertEqual(self.call("returns", "set"),
                         (False, "returns: returned a `set`; a tool returns str, dict, list, a dataclass or None"))

    def test_any_is_passed_through(self):
        self.assertEqual(self.call("anything", '{"a": [1, null]}'), (True, '{"a": [1, null]}'))


class HostImports(unittest.TestCase):
    def test_http_builds_the_request_with_secret_headers(self):
        seen = []

        def fake(req):
            seen.append(req)
            return http.Response(200, req.url, [("Content-Type", "application/json")], b'{"ok": 1}')

        with mock.patch("toolhost_sdk.http.send", fake):
            resp = http.get("https://api.example.com/x", headers={"accept": "application/json"},
                            secret_headers=[http.SecretHeader("authorization", "api_token", "Bearer "),
                                            ("x-key", "other", "")])
            posted = http.post("https://api.example.com/y", json={"a": 1})
        self.assertEqual(resp.json(), {"ok": 1})
        self.assertEqual(resp.header("content-type"), "application/json")
        req = seen[0]
        self.assertEqual((req.method, req.url, req.headers), ("GET", "https://api.example.com/x",
                                                               [("accept", "application/json")]))
        self.assertEqual(req.secret_headers, [http.SecretHeader("authorization", "api_token", "Bearer "),
                                              http.SecretHeader("x-key", "other", "")])
        self.assertEqual((seen[1].method, seen[1].body, seen[1].headers),
                         ("POST", b'{"a": 1}', [("content-type", "application/json")]))
        self.assertIs(posted.raise_for_status(), posted)

    def test_status_and_json_errors_are_tool_errors(self):
        r = http.Response(404, "https://e.com/", [], b"not here")
        with self.assertRaisesRegex(http.HttpError, r"https://e.com/ answered HTTP 404: not here"):
            r.raise_for_status()
        with self.assertRaisesRegex(http.HttpError, "response is not valid JSON"):
            r.json()

    def test_without_a_host_http_says_how_to_test(self):
        with self.assertRaisesRegex(http.HttpError, "replace toolhost_sdk.http.send"):
            http.get("https://example.com/")

    def test_process_run_hands_program_and_args_to_the_host(self):
        seen = []

        def fake(program, args):
            seen.append((program, args))
            return process.Output(3, b"out \xff", b"err", True)

        with mock.patch("toolhost_sdk.process.host_run", fake):
            out = process.run("git", ("log", "--oneline"))
            none = process.run("true")
        self.assertEqual(seen, [("git", ["log", "--oneline"]), ("true", [])])
        self.assertEqual((out.code, out.stdout, out.stderr, out.truncated), (3, b"out \xff", b"err", True))
        self.assertFalse(out.success())
        self.assertEqual((out.stdout_text(), out.stderr_text()), ("out \ufffd", "err"))
        self.assertTrue(process.Output(0, b"", b"").success())
        self.assertFalse(process.Output(None, b"", b"").success())
        self.assertIs(none.truncated, True)

    def test_process_run_checks_its_arguments(self):
        with self.assertRaisesRegex(TypeError, "`args` must be a list of strings"):
            process.run("git", "log")
        with self.assertRaisesRegex(TypeError, "`args` must be a list of strings"):
            process.run("git", ["-n", 5])
        with self.assertRaisesRegex(TypeError, "`program` must be a string"):
            process.run(["git"])

    def test_without_a_host_process_says_how_to_test(self):
        with self.assertRaisesRegex(process.ProcessError, "replace toolhost_sdk.process.host_run"):
            process.run("git", ["status"])
        self.assertTrue(issubclass(process.ProcessError, ToolError))

    def test_log_goes_to_stderr_under_cpython(self):
        with redirect_stderr(io.StringIO()) as err:
            log.info("hello")
            log.warn("careful")
        self.assertEqual(err.getvalue(), "[info] hello\n[warn] careful\n")


if __name__ == "__main__":
    unittest.main()

"""Prompts and completion: `@prompt` becomes the manifest's `prompts` and `@complete` the
`complete` marks on a prompt's argument or a template, held to the host's rules at the author's
line; `prompts.get` and `completion.complete` dispatch to them.

app.py in these tests starts with 4 header lines (support.ProjectCase.app's 3 and the SDK
import), so the body's first line is line 5; a tool follows the body (a plugin needs one)."""

import io
import os
import sys
import types
import unittest
from contextlib import redirect_stderr

from support import COMPLETION, PROMPTS, Err, ProjectCase, Role, componentize_py_stand_ins

from toolhost_sdk import __main__ as cli
from toolhost_sdk import _dev, _guest, _prompts
from toolhost_sdk import Message, ResourceLink, assistant, resource_link, user

IMPORT = ("from toolhost_sdk import prompt, complete, user, assistant, resource_link, resource_template, "
          "Message\n")

TAIL = '''

@tool
def ping() -> str:
    """Ping."""
    return "pong"
'''


class PromptCase(ProjectCase):
    def prompts(self, body):
        self.app(IMPORT + body + TAIL)

    def get(self, name, arguments=()):
        with redirect_stderr(io.StringIO()) as err:
            result = _guest.get(name, list(arguments))
        self.stderr = err.getvalue()
        return result

    def complete(self, kind, target, argument, value="", context=()):
        with redirect_stderr(io.StringIO()) as err:
            result = _guest.complete(kind, target, argument, value, list(context))
        self.stderr = err.getvalue()
        return result

    def assertRefused(self, body, where, text):
        self.prompts(body)
        self.assertError(where, text)


class Manifest(PromptCase):
    def test_a_prompt_with_every_field_in_order(self):
        self.prompts('''\
@prompt("summarise-file", title="Summarise a file")
def summarise_file(path: str, style: str = "short"):
    """Summarise a file of the workspace.

    - `path`: the file
      to summarise
    - `style`: short or long
    """
    return f"Summarise {path}."

@complete(prompt="summarise-file", argument="path")
def complete_path(value, context):
    return []
''')
        m = self.manifest()
        self.assertEqual(m["prompts"], [{
            "name": "summarise-file", "title": "Summarise a file", "description": "Summarise a file of the workspace.",
            "arguments": [{"name": "path", "description": "the file to summarise", "required": True, "complete": True},
                          {"name": "style", "description": "short or long"}]}])
        self.assertEqual(list(m["prompts"][0]), ["name", "title", "description", "arguments"])
        self.assertEqual(list(m["prompts"][0]["arguments"][0]), ["name", "description", "required", "complete"])
        self.assertEqual(list(m), ["format", "name", "version", "description", "capabilities", "tools", "prompts"])

    def test_empty_fields_and_lists_are_left_out(self):
        self.prompts('''\
@prompt
def hello():
    return "Hello."

@prompt(name="greet")
def greet(who=None):
    return f"Hello {who}."
''')
        m = self.manifest()
        self.assertEqual(m["prompts"], [{"name": "hello"}, {"name": "greet", "arguments": [{"name": "who"}]}])
        self.assertNotIn("resourceTemplates", m)

    def test_a_plugin_without_prompts_has_no_list(self):
        self.prompts("")
        self.assertNotIn("prompts", self.manifest())

    def test_a_description_option_an_args_section_and_optional_hints(self):
        self.prompts('''\
@prompt(description="Review a change.")
def review(diff: str, focus: Optional[str], tone: "str | None" = None):
    """Not the description.

    Args:
        diff: the change
        focus: what to look at
    """
    return diff
''')
        self.assertEqual(self.manifest()["prompts"], [{
            "name": "review", "description": "Review a change.",
            "arguments": [{"name": "diff", "description": "the change", "required": True},
                          {"name": "focus", "description": "what to look at"}, {"name": "tone"}]}])

    def test_a_template_lists_the_variables_it_completes(self):
        self.prompts('''\
@resource_template("db://{table}/rows/{id}")
def row(table: str, id: str) -> str:
    return ""

@complete(template="db://{table}/rows/{id}", argument="id")
def ids(value):
    return []

@complete(template="db://{table}/rows/{id}", argument="table")
def tables(value, context):
    return []

@resource_template("file:///{+path}")
def file(path: str) -> str:
    return ""
''')
        m = self.manifest()
        self.assertEqual(m["resourceTemplates"], [
            {"uriTemplate": "db://{table}/rows/{id}", "name": "row", "complete": ["id", "table"]},
            {"uriTemplate": "file:///{+path}", "name": "file"}])
        self.assertNotIn("prompts", m)

    def test_the_functions_are_returned_unchanged(self):
        self.prompts('''\
@prompt("p")
def p(a):
    return [user(a)]

@complete(prompt="p", argument="a")
def c(value):
    return [value]
''')
        self.manifest()
        app = sys.modules["app"]
        self.assertEqual(app.p("x"), [Message("user", "x")])
        self.assertEqual(app.c("v"), ["v"])


class PromptRules(PromptCase):
    def test_names(self):
        cases = [
            ('"-x"', 'prompt name "-x" must be 1 to 64 of [A-Za-z0-9_-], not starting with `-`'),
            ('"a b"', 'prompt name "a b" must be 1 to 64'),
            ('""', 'prompt name "" must be 1 to 64'),
            ('"é"', 'prompt name "é" must be'),
            ('"n" * 65', "must be 1 to 64"),
            ("42", "prompt name 42 must be"),
        ]
        for name, text in cases:
            with self.subTest(name=name):
                self.assertRefused(f'@prompt({name})\ndef p():\n    return ""\n', "app.py:5", text)
        self.assertRefused('@prompt("a", name="b")\ndef p():\n    return ""\n', "app.py:5",
                           "prompt() got multiple values for argument 'name'")
        self.prompts('@prompt("n" * 64)\ndef p():\n    return ""\n@prompt("_a-9")\ndef q():\n    return ""\n')
        self.assertEqual([p["name"] for p in self.manifest()["prompts"]], ["n" * 64, "_a-9"])

    def test_texts(self):
        cases = [
            ('title=" "', "`title` must not be blank when given"),
            ('title="a\\nb"', "`title` contains the control character U+000A; it must be one line"),
            ('title="t" * 129', "`title` is 129 characters long; the host allows at most 128"),
            ("title=1", "`title` takes a string, got 1"),
            ('description="d" * 1025', "`description` is 1025 characters long; the host allows at most 1024"),
            ('description="a\\x00"', "`description` contains the control character U+0000; only tabs and line"),
            ("colour=1", "unknown prompt option `colour`; expected one of: name, title, description"),
        ]
        for option, text in cases:
            with self.subTest(option=option):
                self.assertRefused(f'@prompt("p", {option})\ndef p():\n    return ""\n', "app.py:5", text)
        self.prompts('@prompt("p", title="t" * 128, description="one\\n\\ttwo\\r")\ndef p():\n    return ""\n')
        self.assertEqual(self.manifest()["prompts"][0]["description"], "one\n\ttwo\r")

    def test_docstrings_are_checked_at_their_line(self):
        self.assertRefused('''\
@prompt
def p():
    """''' + "x" * 1025 + '''"""
    return ""
''', "app.py:7", "the description of `p` (the docstring's first paragraph) is 1025 characters long")
        self.assertRefused('''\
@prompt
def p(path):
    """Do it.

    - `path`: the path
    - `colour`: a colour
    """
    return ""
''', "app.py:10", "the docstring describes an argument `colour` that `p` does not have")
        self.assertRefused('''\
@prompt
def p(path):
    """Do it.

    - `path`: ''' + "x" * 1025 + '''
    """
    return ""
''', "app.py:9", "the description of argument `path` is 1025 characters long")

    def test_arguments(self):
        self.assertRefused('@prompt\ndef p(\n    größe,\n):\n    return ""\n', "app.py:7",
                           'argument name "größe" must match [A-Za-z_][A-Za-z0-9_]*')
        self.assertRefused('@prompt\ndef p(a,\n      n: int):\n    return ""\n', "app.py:7",
                           "parameter `n` is an argument of the prompt, so text: annotate it `str`")
        self.assertRefused('@prompt\ndef p(n: "int | str"):\n    return ""\n', "app.py:6",
                           "parameter `n` is an argument of the prompt, so text")
        self.assertRefused('@prompt\ndef p(a, *more):\n    return ""\n', "app.py:6", "`*more` is not supported")
        self.assertRefused('@prompt\ndef p(a, **more):\n    return ""\n', "app.py:6", "`**more` is not supported")
        self.assertRefused('@prompt\ndef p(a, /):\n    return ""\n', "app.py:6",
                           "parameter `a` is positional-only; a prompt's arguments are passed by name")
        many = ", ".join(f"a{i}" for i in range(17))
        self.assertRefused(f'@prompt\ndef p({many}):\n    return ""\n', "app.py:6",
                           "`p` takes 17 arguments; a prompt takes at most 16")
        self.prompts(f'@prompt\ndef p({", ".join(f"a{i}" for i in range(16))}, *, k: str = ""):\n    return ""\n')
        self.assertError("app.py:6", "takes 17 arguments")

    def test_functions_only_synchronous(self):
        self.assertRefused('@prompt\nasync def p():\n    return ""\n', "app.py:6", "a prompt's function is synchronous")
        self.assertRefused('@prompt\ndef p():\n    yield ""\n', "app.py:6", "a prompt's function is synchronous")
        self.assertRefused('@prompt\nclass P:\n    pass\n', "app.py:5", "`@prompt` goes on a plain function")

    def test_names_once_within_the_cap(self):
        self.assertRefused('''\
@prompt("same")
def a():
    return ""

@prompt("same")
def b():
    return ""
''', "app.py:9", 'the name "same" names two prompts (first at ')
        many = "".join(f'@prompt\ndef p{i}():\n    return ""\n' for i in range(34))
        self.prompts(many)
        self.assertEqual(self.errors(), [f"app.py:{5 + 32 * 3}: this plugin declares more than 32 prompts; the host "
                                         "allows at most 32"])


class CompletionRules(PromptCase):
    PROMPT = '''\
@prompt("p")
def p(path, style=""):
    return ""

@resource_template("file:///{+path}")
def f(path):
    return ""

'''

    def assertCompletionRefused(self, decorator, where, text, func="def c(value):\n    return []\n"):
        self.assertRefused(self.PROMPT + decorator + "\n" + func, where, text)

    def test_what_is_completed_must_exist(self):
        cases = [
            ('@complete(prompt="q", argument="path")', 'this plugin has no prompt "q" (a prompt is named by'),
            ('@complete(prompt="p", argument="colour")', 'prompt "p" has no argument `colour` (its arguments: '
                                                          'path, style)'),
            ('@complete(template="file:///{path}", argument="path")', 'this plugin has no resource template '
                                                                      '"file:///{path}"'),
            ('@complete(template="file:///{+path}", argument="p")', '"file:///{+path}" has no variable `p` (its '
                                                                    'variables: path)'),
        ]
        for decorator, text in cases:
            with self.subTest(decorator=decorator):
                self.assertCompletionRefused(decorator, "app.py:13", text)

    def test_the_decorator(self):
        usage = 'a completion names what it completes: `@complete(prompt="NAME", argument="ARG")`'
        cases = [
            ("@complete", usage),
            ('@complete("p", "path")', usage),
            ('@complete(prompt="p")', usage),
            ('@complete(argument="path")', usage),
            ('@complete(prompt="p", template="file:///{+path}", argument="path")',
             "name either `prompt` or `template`, not both"),
            ('@complete(prompt="p", argument="path", limit=3)', "unknown completion option `limit`; expected: "
                                                                "prompt or template, and argument"),
            ('@complete(prompt=1, argument="path")', "`prompt` takes a string, got 1"),
        ]
        for decorator, text in cases:
            with self.subTest(decorator=decorator):
                self.assertCompletionRefused(decorator, "app.py:13", text)

    def test_the_function(self):
        take = "a completion's function takes `value` (what has been typed) and, if it wants them, `context`"
        for func in ("def c():\n    return []\n", "def c(value, context, more):\n    return []\n",
                     "def c(value, **context):\n    return []\n", "def c(value, *, context):\n    return []\n"):
            with self.subTest(func=func):
                self.assertCompletionRefused('@complete(prompt="p", argument="path")', "app.py:14", take, func)
        self.assertCompletionRefused('@complete(prompt="p", argument="path")', "app.py:14",
                                     "a completion's function is synchronous", "async def c(value):\n    return []\n")
        self.assertCompletionRefused('@complete(prompt="p", argument="path")', "app.py:13",
                                     "`@complete` goes on a plain function", "class C:\n    pass\n")

    def test_the_function_may_stand_for_its_prompt_or_template(self):
        self.prompts(self.PROMPT + '''\
@complete(prompt=p, argument="path")
def a(value):
    return []

@complete(template=f, argument="path")
def b(value):
    return []
''')
        m = self.manifest()
        self.assertEqual(m["prompts"][0]["arguments"][0], {"name": "path", "required": True, "complete": True})
        self.assertEqual(m["resourceTemplates"][0]["complete"], ["path"])
        self.assertCompletionRefused('@complete(prompt=len, argument="path")', "app.py:13",
                                     "`prompt` is the function `len`, which is no `@prompt` of this plugin")
        self.assertEqual(len(self.errors()), 1)
        self.assertCompletionRefused('@complete(template=p, argument="path")', "app.py:13",
                                     "`template` is the function `p`, which is no `@resource_template` of this plugin")

    def test_one_completion_per_argument(self):
        self.assertRefused(self.PROMPT + '''\
@complete(prompt="p", argument="path")
def a(value):
    return []

@complete(prompt="p", argument="path")
def b(value):
    return []

@complete(template="file:///{+path}", argument="path")
def c(value):
    return []
''', "app.py:17", '`path` of prompt "p" is completed twice (first at ')
        self.assertEqual(len(self.errors()), 1)

    def test_a_broken_prompt_or_template_is_reported_once(self):
        self.prompts('''\
@prompt("p", colour=1)
def p(path):
    return ""

@resource_template("file:///{+path}", size=1)
def f(path):
    return ""

@complete(prompt="p", argument="path")
def a(value):
    return []

@complete(template="file:///{+path}", argument="path")
def b(value):
    return []

@complete(prompt=p, argument="path")
def c(value):
    return []

@complete(template=f, argument="path")
def d(value):
    return []
''')
        self.assertEqual([e.split(":")[1] for e in self.errors()], ["5", "9"])


class Helpers(unittest.TestCase):
    def test_messages(self):
        self.assertEqual(user("hi"), Message("user", "hi"))
        self.assertEqual(assistant("ok"), Message("assistant", "ok"))
        self.assertEqual(resource_link("file:///a", "a"), Message("user", ResourceLink("file:///a", "a")))
        self.assertEqual(resource_link("file:///a", "a", "the a", "text/plain", role="assistant"),
                         Message("assistant", ResourceLink("file:///a", "a", "the a", "text/plain")))
        with self.assertRaisesRegex(TypeError, r"user\(\) takes the message's text, a str, got int"):
            user(1)
        with self.assertRaisesRegex(TypeError, r"resource_link\(\) takes `name` as a str"):
            resource_link("file:///a", None)
        with self.assertRaisesRegex(TypeError, r"`mime_type` as a str or None"):
            resource_link("file:///a", "a", mime_type=1)
        with self.assertRaisesRegex(ValueError, r"`role` \"user\" or \"assistant\", got 'system'"):
            resource_link("file:///a", "a", role="system")


class Get(PromptCase):
    def setUp(self):
        super().setUp()
        self.prompts('''\
@prompt("summarise-file")
def summarise(path: str, style: str = "short", focus: Optional[str] = None, *, tone: Optional[str]):
    if path == "str":
        return f"{path} {style}"
    if path == "tuple":
        return (assistant("Which file?"), user(path))
    if path == "one":
        return resource_link("file:///a", "a")
    if path == "dict":
        return {"description": "A summary.", "messages": [user("x")]}
    if path == "kwargs":
        return f"{style}|{focus}|{tone}"
    if path == "tool":
        raise ToolError("no such file")
    if path == "value":
        raise ValueError("bad")
    if path == "int":
        return 42
    if path == "list-of-str":
        return ["a"]
    if path == "bad-dict":
        return {"text": "a"}
    if path == "bad-description":
        return {"description": 1, "messages": []}
    return [user(f"Summarise {path} ({style})."), resource_link(f"file:///{path}", path)]
''')
        self.manifest()
        _guest.prepare()

    def test_arguments_by_name_defaults_when_absent(self):
        self.assertEqual(self.get("summarise-file", [("path", "a.txt")]), (True, (None, [
            Message("user", "Summarise a.txt (short)."), Message("user", ResourceLink("file:///a.txt", "a.txt"))])))
        self.assertEqual(self.get("summarise-file", [("style", "long"), ("path", "a")])[1][1][0].content,
                         "Summarise a (long).")
        self.assertEqual(self.get("summarise-file", [("path", "kwargs")]), (True, (None, [user("short|None|None")])))
        self.assertEqual(self.get("summarise-file", [("path", "kwargs"), ("tone", "dry"), ("focus", "f")]),
                         (True, (None, [user("short|f|dry")])))

    def test_what_a_prompt_may_return(self):
        self.assertEqual(self.get("summarise-file", [("path", "str")]), (True, (None, [user("str short")])))
        self.assertEqual(self.get("summarise-file", [("path", "tuple")]),
                         (True, (None, [assistant("Which file?"), user("tuple")])))
        self.assertEqual(self.get("summarise-file", [("path", "one")]),
                         (True, (None, [resource_link("file:///a", "a")])))
        self.assertEqual(self.get("summarise-file", [("path", "dict")]), (True, ("A summary.", [user("x")])))

    def test_errors(self):
        self.assertEqual(self.get("summarise-file", [("path", "tool")]), (False, "no such file"))
        self.assertEqual(self.get("summarise-file", [("path", "value")]), (False, "ValueError: bad"))
        self.assertIn("Traceback", self.stderr)
        shape = ("a prompt returns str (one user message), a list of messages (user(), assistant(), resource_link()) "
                 "or {\"description\": str, \"messages\": [...]}")
        self.assertEqual(self.get("summarise-file", [("path", "int")]),
                         (False, f"prompt `summarise-file`: `summarise` returned a `int`; {shape}"))
        self.assertEqual(self.get("summarise-file", [("path", "list-of-str")]),
                         (False, "prompt `summarise-file`: `summarise` returned a `str` as message 1; build messages "
                                 "with user(), assistant() or resource_link()"))
        self.assertEqual(self.get("summarise-file", [("path", "bad-dict")]),
                         (False, f"prompt `summarise-file`: `summarise` returned a dict with the keys ['text']; {shape}"))
        self.assertEqual(self.get("summarise-file", [("path", "bad-description")])[1],
                         "prompt `summarise-file`: `summarise` returned a `int` description; it is a str")

    def test_what_the_host_would_not_send(self):
        self.assertEqual(self.get("other"), (False, "this plugin has no prompt other"))
        self.assertEqual(self.get("summarise-file"), (False, "prompt `summarise-file` needs its argument `path`"))
        self.assertEqual(self.get("summarise-file", [("path", "a"), ("colour", "red")]),
                         (False, "prompt `summarise-file` takes no argument `colour` (it takes: path, style, focus, "
                                 "tone)"))


class Complete(PromptCase):
    def setUp(self):
        super().setUp()
        self.prompts('''\
@prompt("p")
def p(path, style=""):
    return ""

@resource_template("file:///{+path}")
def f(path):
    return ""

@complete(prompt="p", argument="path")
def paths(value, context):
    if value == "fail":
        raise ToolError("cannot list")
    if value == "tuple":
        return ("a", "b")
    if value == "gen":
        return (v for v in "ab")
    if value == "ints":
        return ["a", 1]
    return [value + "1", repr(sorted(context.items()))]

@complete(template="file:///{+path}", argument="path")
def files(value):
    return [f"{value}.txt"]
''')
        self.manifest()
        _guest.prepare()

    def test_dispatch_by_target_and_argument(self):
        self.assertEqual(self.complete("prompt", "p", "path", "sr", [("style", "x")]),
                         (True, ["sr1", "[('style', 'x')]"]))
        self.assertEqual(self.complete("template", "file:///{+path}", "path", "src/ma"), (True, ["src/ma.txt"]))
        self.assertEqual(self.complete("prompt", "p", "path", "tuple"), (True, ["a", "b"]))

    def test_errors(self):
        self.assertEqual(self.complete("prompt", "p", "path", "fail"), (False, "cannot list"))
        self.assertEqual(self.complete("prompt", "p", "path", "gen"),
                         (False, "the completion of `path`: `paths` returned a `generator`; a completion returns a "
                                 "list of str"))
        self.assertEqual(self.complete("prompt", "p", "path", "ints"),
                         (False, "the completion of `path`: `paths` returned a `int` as value 2; a completion returns "
                                 "a list of str"))

    def test_what_is_not_completed(self):
        for kind, target, argument in (("prompt", "p", "style"), ("prompt", "q", "path"),
                                       ("template", "p", "path"), ("template", "file:///{path}", "path")):
            with self.subTest(target=target, argument=argument):
                self.assertEqual(self.complete(kind, target, argument),
                                 (False, f"this plugin completes nothing for {argument}"))


class Nothing(PromptCase):
    def test_a_plugin_without_prompts_answers_errors(self):
        self.prompts("")
        self.manifest()
        _guest.prepare()
        self.assertEqual(self.get("p"), (False, "this plugin has no prompt p"))
        self.assertEqual(self.complete("prompt", "p", "a"), (False, "this plugin completes nothing for a"))
        self.assertEqual(self.complete("template", "file:///{+path}", "path"),
                         (False, "this plugin completes nothing for path"))


class Entry(PromptCase):
    """The generated entries' `Prompts.get` and `Completion.complete`, with stand-ins for
    componentize-py's modules."""

    BODY = '''\
@prompt("p")
def p(path, style="short"):
    if path == "x":
        raise ToolError("no x")
    return {"description": "About " + path, "messages": [
        user(f"Summarise {path} ({style})."), assistant("Sure."),
        resource_link("file:///" + path, path, "the file", "text/plain")]}

@complete(prompt="p", argument="path")
def paths(value, context):
    return [value + "/" + context.get("style", "-")]
'''

    def check(self, entry):
        req = types.SimpleNamespace
        got = entry.Prompts().get(req(name="p", arguments=[("path", "a.txt")]))
        P = PROMPTS
        self.assertEqual(got, P["Prompt"]("About a.txt", [
            P["Message"](Role.USER, P["Content_Text"]("Summarise a.txt (short).")),
            P["Message"](Role.ASSISTANT, P["Content_Text"]("Sure.")),
            P["Message"](Role.USER, P["Content_ResourceLink"](
                P["ResourceLink"]("file:///a.txt", "a.txt", "the file", "text/plain")))]))
        with self.assertRaises(Err) as ctx:
            entry.Prompts().get(req(name="p", arguments=[("path", "x")]))
        self.assertEqual(ctx.exception.value, "no x")
        with self.assertRaises(Err) as ctx:
            entry.Prompts().get(req(name="q", arguments=[]))
        self.assertEqual(ctx.exception.value, "this plugin has no prompt q")
        C = COMPLETION
        complete = entry.Completion().complete
        self.assertEqual(complete(C["CompleteRequest"](C["Target_Prompt"]("p"), "path", "sr", [("style", "long")])),
                         ["sr/long"])
        with self.assertRaises(Err) as ctx:
            complete(C["CompleteRequest"](C["Target_ResourceTemplate"]("p"), "path", "sr", []))
        self.assertEqual(ctx.exception.value, "this plugin completes nothing for path")

    def test_the_component_entry(self):
        self.prompts(self.BODY)
        self.manifest()
        sys.path.insert(0, self.dir)
        try:
            with componentize_py_stand_ins():
                entry = types.ModuleType(cli.ENTRY_NAME)
                exec(compile(cli.ENTRY.format(module="app"), os.path.join(self.dir, "entry.py"), "exec"),
                     entry.__dict__)
                self.check(entry)
        finally:
            sys.path.remove(self.dir)

    def test_the_dev_runtime(self):
        self.prompts(self.BODY)
        self.manifest()
        _guest.prepare()
        try:
            with componentize_py_stand_ins():
                entry = types.ModuleType("dev_entry")
                exec(compile(_dev.RUNTIME_ENTRY, os.path.join(self.dir, "dev_entry.py"), "exec"), entry.__dict__)
                _dev._ready = "toolhost dev: loading the plugin's sources failed: boom"
                req = types.SimpleNamespace
                with self.assertRaises(Err) as ctx:
                    entry.Prompts().get(req(name="p", arguments=[("path", "a")]))
                self.assertEqual(ctx.exception.value, "toolhost dev: loading the plugin's sources failed: boom")
                with self.assertRaises(Err) as ctx:
                    entry.Completion().complete(COMPLETION["CompleteRequest"](COMPLETION["Target_Prompt"]("p"),
                                                                              "path", "", []))
                self.assertEqual(ctx.exception.value, "toolhost dev: loading the plugin's sources failed: boom")
                _dev._ready = True
                self.check(entry)
        finally:
            _dev._ready = None

    def test_componentize_counts_the_prompts(self):
        self.prompts(self.BODY)
        err = io.StringIO()
        with redirect_stderr(err):
            cli.main(["componentize", self.dir, "-o", os.path.join(self.dir, "out.wasm"), "--wit", self.dir,
                      "--componentize-py", os.path.join(self.dir, "no-such-componentize-py")])
        self.assertIn("1 tool (ping), 1 prompt", err.getvalue())


if __name__ == "__main__":
    unittest.main()

"""The entry module `componentize` generates: `Tools.call` returns the output or raises
componentize-py's `Err`, as the `tools.call` export expects. Run here under CPython with a
stand-in for componentize-py's `componentize_py_types`."""

import os
import sys
import types

from support import ProjectCase

from toolhost_sdk import __main__ as cli


class Entry(ProjectCase):
    def test_tools_call_returns_or_raises_err(self):
        self.app('''\
@tool
def half(n: int) -> str:
    """Half of an even number."""
    if n % 2:
        raise ToolError(f"{n} is odd")
    return str(n // 2)
''')
        self.manifest()  # loads the project the way `componentize` checks it first

        class Err(Exception):
            def __init__(self, value):
                super().__init__(value)
                self.value = value

        fake = types.ModuleType("componentize_py_types")
        fake.Err = Err
        sys.modules["componentize_py_types"] = fake
        sys.path.insert(0, self.dir)
        try:
            entry = types.ModuleType(cli.ENTRY_NAME)
            exec(compile(cli.ENTRY.format(module="app"), os.path.join(self.dir, "entry.py"), "exec"),
                 entry.__dict__)
            tools = entry.Tools()
            self.assertEqual(tools.call("half", ["4"]), "2")
            with self.assertRaises(Err) as ctx:
                tools.call("half", ["3"])
            self.assertEqual(ctx.exception.value, "3 is odd")
            with self.assertRaises(Err) as ctx:
                tools.call("twice", [])
            self.assertEqual(ctx.exception.value, "this plugin has no tool named `twice`")
        finally:
            sys.path.remove(self.dir)
            del sys.modules["componentize_py_types"]

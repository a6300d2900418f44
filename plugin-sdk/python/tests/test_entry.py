"""The entry module `componentize` generates: `Tools.call` returns the output or raises
componentize-py's `Err`, as the `tools.call` export expects. Run here under CPython with
stand-ins for the modules componentize-py provides (see support.componentize_py_stand_ins)."""

import os
import sys
import types

from support import Err, ProjectCase, componentize_py_stand_ins

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
        sys.path.insert(0, self.dir)
        try:
            with componentize_py_stand_ins():
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

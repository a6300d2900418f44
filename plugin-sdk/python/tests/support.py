"""Helpers for the SDK tests: write a throwaway plugin project and derive its manifest."""

import contextlib
import dataclasses
import enum
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
if SDK not in sys.path:
    sys.path.insert(0, SDK)

from toolhost_sdk import _project  # noqa: E402
from toolhost_sdk._spec import _Errors  # noqa: E402

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
description = "a demo plugin"

[tool.toolhost]
module = "app"
"""


class ProjectCase(unittest.TestCase):
    """Each test gets its own project folder; `write` puts files in it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="toolhost-sdk-test-")
        self.dir = self._tmp.name
        self.write("pyproject.toml", PYPROJECT)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, text, dedent=True):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text) if dedent else text)
        return path

    def app(self, body):
        """Write app.py with the SDK imports in front; returns the number of header lines."""
        header = "from toolhost_sdk import tool, plugin, ToolError\nimport dataclasses, typing\nfrom typing import Optional, Any\n"
        self.write("app.py", header + textwrap.dedent(body), dedent=False)
        return header.count("\n")

    def manifest(self):
        return _project.manifest(self.dir)

    def tool(self, name=None):
        m = self.manifest()
        tools = {t["name"]: t for t in m["tools"]}
        return tools[name] if name else m["tools"][0]

    def errors(self):
        """The misuse lines as `app.py:LINE: message` (file base name only)."""
        with self.assertRaises(_Errors) as ctx:
            self.manifest()
        return [f"{os.path.basename(e.file)}:{e.line}: {e.message}" for e in ctx.exception.errors]

    def assertError(self, want_file_line, want_text):
        errs = self.errors()
        hits = [e for e in errs if e.startswith(want_file_line + ": ") and want_text in e]
        self.assertTrue(hits, f"expected {want_file_line}: …{want_text}… in {errs}")


class Err(Exception):
    """Stand-in for componentize-py's `componentize_py_types.Err`."""

    def __init__(self, value):
        super().__init__(value)
        self.value = value


class Contents:
    """Stand-in for componentize-py's `Contents_Text` and `Contents_Blob` (`kind` tells which)."""

    def __init__(self, kind, value):
        self.kind = kind
        self.value = value


class Role(enum.Enum):
    """Stand-in for componentize-py's `wit_world.exports.prompts.Role`."""

    USER = 0
    ASSISTANT = 1


def _record(name, *fields):
    """Stand-in for one of componentize-py's generated dataclasses (positional, as it builds them)."""
    return dataclasses.make_dataclass(name, fields)


# `wit_world.exports.prompts` and `wit_world.exports.completion`, as componentize-py 0.25.1
# generates them for this WIT (class and field names, field order).
PROMPTS = {
    "Role": Role,
    "ResourceLink": _record("ResourceLink", "uri", "name", "description", "mime_type"),
    "Content_Text": _record("Content_Text", "value"),
    "Content_ResourceLink": _record("Content_ResourceLink", "value"),
    "Message": _record("Message", "role", "content"),
    "Prompt": _record("Prompt", "description", "messages"),
    "GetRequest": _record("GetRequest", "name", "arguments"),
}
COMPLETION = {
    "Target_Prompt": _record("Target_Prompt", "value"),
    "Target_ResourceTemplate": _record("Target_ResourceTemplate", "value"),
    "CompleteRequest": _record("CompleteRequest", "target", "argument", "value", "context"),
}


@contextlib.contextmanager
def componentize_py_stand_ins():
    """The modules componentize-py gives the entry module (`componentize_py_types`,
    `wit_world.exports.resources`, `.prompts`, `.completion`), as stand-ins under CPython for
    the test's duration."""
    import types

    modules = {"componentize_py_types": {"Err": Err}, "wit_world": {}, "wit_world.exports": {},
               "wit_world.exports.resources": {"Contents_Text": lambda v: Contents("text", v),
                                               "Contents_Blob": lambda v: Contents("blob", v)},
               "wit_world.exports.prompts": PROMPTS, "wit_world.exports.completion": COMPLETION}
    for name, attrs in modules.items():
        sys.modules[name] = types.ModuleType(name)
        sys.modules[name].__dict__.update(attrs)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, sys.modules[name])
    try:
        yield
    finally:
        for name in modules:
            del sys.modules[name]

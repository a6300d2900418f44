"""toolhost_sdk: write toolhost tool plugins as ordinary Python functions.

    from toolhost_sdk import tool, plugin, log, http, kv, process

    plugin(fs="workspace:ro")

    @tool(rest=True, category="text")
    def count_words(text: str) -> dict:
        \"\"\"Count the words in a text.

        Args:
            text: the text to count; commas are part of it
        \"\"\"
        return {"words": len(text.split())}

`@resource("docs://guide")` serves a function's `str` or `bytes` by URI, and
`@resource_template("file:///{+path}")` every URI the template matches (the function takes the
template's variables: `def file(path: str)`).

`@prompt("summarise-file", title="Summarise a file")` offers a prompt whose arguments are the
function's parameters (without a default: required); it returns `str` (one user message) or
a list of `user(...)`, `assistant(...)` and `resource_link(uri, name)` messages.
`@complete(prompt="summarise-file", argument="path")` (or `template="file:///{+path}"`) on
`def f(value, context)` completes that argument as a person types it: a list of str.

`python3 -m toolhost_sdk manifest DIR` prints the manifest derived from the code (docstring →
description, signature and type hints → params, argCount, parseJson; decorator options →
danger, readOnly, rest, outputLimit, category, timeoutMs, taskSupport); `progress(done, total,
message)` says how far a long call has come; `process.run("git", [...])` runs a program the
plugin requests and the operator grants; `kv.open("default")` is a bucket of the plugin's own
key-value store, kept between calls (`plugin(kv="default")` requests it); `python3 -m
toolhost_sdk componentize DIR -o OUT.wasm --wit WIT` builds the component with componentize-py.
See README.md.
"""

from . import http, kv, log, process
from ._progress import progress
from ._prompts import Message, ResourceLink, assistant, complete, prompt, resource_link, user
from ._resources import resource, resource_template
from ._spec import ToolError, plugin, tool

__all__ = ["tool", "plugin", "resource", "resource_template", "prompt", "complete", "user", "assistant",
           "resource_link", "Message", "ResourceLink", "log", "http", "kv", "process", "progress", "ToolError"]

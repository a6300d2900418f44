"""The tools of this plugin. Each `@tool` function is a tool: its docstring's first paragraph is
the description the model reads, its type hints decide how arguments are decoded (`str` is plain
text; int, float, bool, list, dict and dataclasses are JSON), and `Args:` describes the params.

Import everything you use at the top of the file: the component is a snapshot taken after this
module was imported, and source files cannot be read once it runs.
"""

from toolhost_sdk import ToolError, plugin, tool

# Capability requests (the operator still decides what is granted), e.g.
# plugin(fs="workspace:ro", net="api.example.com", secret="api_token")
plugin()


@tool(rest=True, read_only=True, category="text")
def count_words(text: str) -> dict:
    """Count the words, lines and characters of a text.

    Args:
        text: the text; commas are part of it
    """
    if not text.strip():
        raise ToolError("the text is empty")
    return {"words": len(text.split()), "lines": len(text.splitlines()), "chars": len(text)}

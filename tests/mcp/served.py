"""Check what plugins serve besides tools — resources, resource templates, prompts, completion,
skills' files, pagination and subscriptions — as a client of the official MCP Python SDK sees
them, in either generation.

    python served.py GENERATION MODE stdio TOOLHOST_BIN [ARGS...]
    python served.py GENERATION MODE http URL

GENERATION 1: SDK 1.x's `ClientSession` (2025-06-18; MODE is ignored). GENERATION 2: SDK 2.x's
`Client` in MODE (`auto`: 2026-07-28; `legacy`: the initialize handshake). The server's plugins
and config are the caller's (tests/all/prompts.rs): files (its template `file:///{+path}` and
its skill), text (its static schema and the prompt `summarise-file`) and liar, the workspace
granted, `[mcp] page_size = 1`; the workspace holds `readme.txt` ("hi\n").

Prints one `ok: ...` line per check and, last, `all N served checks passed (LABEL)`.
"""

import asyncio
import sys
from contextlib import asynccontextmanager

import common
from common import check


def field(x, name):
    """`x`'s field `name` (snake case, as SDK 2.x names it; SDK 1.x names it as the wire does)."""
    if hasattr(x, name):
        return getattr(x, name)
    head, *rest = name.split("_")
    return getattr(x, head + "".join(w.title() for w in rest))


async def walk(list_page, items):
    """Every item of a paginated list, following `nextCursor`; checks each page holds one."""
    out, cursor = [], None
    while True:
        page = await list_page(cursor)
        got = field(page, items)
        check(len(got) == 1, f"a page of {items} holds one item (page_size = 1)", page)
        out.extend(got)
        cursor = field(page, "next_cursor")
        if cursor is None:
            return out


async def checks(c, types, error, label, stateless):
    resources = await walk(lambda cur: c.list_resources(cursor=cur), "resources")
    uris = [str(r.uri) for r in resources]
    check(len(set(uris)) == len(uris), "walking the pages gives each resource once", uris)
    check("text://split-task/subtask.schema.json" in uris, "text's static resource is listed", uris)
    check("skill://files/workspace-files/SKILL.md" in uris, "files' skill is listed as a resource", uris)
    schema = next(r for r in resources if str(r.uri) == "text://split-task/subtask.schema.json")
    check(field(schema, "mime_type") == "application/schema+json", "the static resource has its manifest's MIME type", schema)

    templates = await walk(lambda cur: c.list_resource_templates(cursor=cur), "resource_templates")
    check(any(field(t, "uri_template") == "file:///{+path}" for t in templates), "files' template is listed", templates)

    read = await c.read_resource("file:///readme.txt")
    check(read.contents[0].text == "hi\n", "a URI of the template reads the workspace file", read)
    read = await c.read_resource("text://split-task/subtask.schema.json")
    check('"properties"' in read.contents[0].text, "the static resource reads", read)
    try:
        await c.read_resource("nope://x")
        check(False, "an unknown URI is refused")
    except error as e:
        # -32002 (resource not found) on 2025 revisions; rmcp sends -32602 to 2026-07-28 clients.
        check(e.error.code in (-32002, -32602) and "nope://x" in e.error.message, "an unknown URI is refused by name", e)

    prompts = await walk(lambda cur: c.list_prompts(cursor=cur), "prompts")
    summarise = next((p for p in prompts if p.name == "summarise-file"), None)
    check(summarise is not None and summarise.title == "Summarise a file", "text's prompt is listed with its title", prompts)
    args = {a.name: a.required for a in summarise.arguments}
    check(args == {"path": True, "style": False}, "its arguments and which are required", summarise.arguments)
    got = await c.get_prompt("summarise-file", {"path": "readme.txt"})
    check("`readme.txt`" in got.messages[0].content.text, "the prompt's first message names the file", got)
    link = got.messages[1].content
    check(link.type == "resource_link" and str(link.uri) == "file:///readme.txt", "its second links the file", link)
    try:
        await c.get_prompt("summarise-file", {})
        check(False, "a missing required argument is refused")
    except error as e:
        check(e.error.code == -32602 and "path" in e.error.message, "a missing argument is invalid params, named", e)

    done = await c.complete(types.PromptReference(type="ref/prompt", name="summarise-file"), {"name": "path", "value": "re"})
    check(done.completion.values == ["readme.txt"], "a prompt's argument completes over the workspace", done)
    done = await c.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="file:///{+path}"), {"name": "path", "value": "re"}
    )
    check("readme.txt" in done.completion.values, "a template's variable completes", done)

    if not stateless:
        await c.subscribe_resource("file:///readme.txt")
        check(True, "a served URI can be subscribed to")
        await c.unsubscribe_resource("file:///readme.txt")
        check(True, "and unsubscribed from")
        try:
            await c.subscribe_resource("nope://x")
            check(False, "subscribing to an unknown URI is refused")
        except error as e:
            check(e.error.code == -32002, "subscribing to an unknown URI is resource-not-found", e)
    print(f"all {common.checks} served checks passed ({label})")


@asynccontextmanager
async def connect(generation, mode, transport, target):
    """The client, the SDK's types module and its error class."""
    if generation == "1":
        import mcp.types as types
        from mcp.shared.exceptions import McpError

        async with common.session(transport, target) as s:
            await s.initialize()
            yield s, types, McpError
    else:
        import mcp_types as types
        from mcp import Client, MCPError

        async with Client(common.server(transport, target), mode=mode) as c:
            yield c, types, MCPError


async def main():
    generation, mode, transport, *target = sys.argv[1:]
    label = f"sdk{generation} {mode} {transport}"
    async with connect(generation, mode, transport, target) as (c, types, error):
        # A 2026-07-28 client has no session to subscribe in (it would listen instead).
        await checks(c, types, error, label, stateless=generation == "2" and mode == "auto")


asyncio.run(main())

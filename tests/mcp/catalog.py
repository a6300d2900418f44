"""Check the tool catalog as an MCP client sees it, with the official MCP Python SDK 2.x (legacy
mode: the initialize handshake, so `notifications/tools/list_changed` reaches the client).

    python catalog.py SCENARIO stdio TOOLHOST_BIN [ARGS...]

Scenarios (the server's plugins and config are the caller's, tests/all/catalog.rs):
- metadata: files, text, web (granted a host) and hostile; no catalog config. Titles, the four
  hints, icons and `_meta` of tools/list; `count_words` claimed by text and hostile is listed by
  neither and reported under the result's `_meta`, and calling it names both plugins.
- prefix: text and hostile with `[plugin.hostile] prefix = "h_"`: both `count_words` callable.
- search: `[catalog] mode = "search"`, `pin = ["echo"]`: the list is echo and find_tools; a
  find_tools call adds what it found to the list (with list_changed) and that tool is callable.

Prints one `ok: ...` line per check and, last, `all N catalog checks passed (SCENARIO)`.
"""

import asyncio
import sys

import common
import mcp_types as types
from common import check, meta_of, server, text_of
from mcp import Client, MCPError


async def metadata(c):
    listed = await c.list_tools()
    tools = {t.name: t for t in listed.tools}
    echo = tools["echo"]
    check(echo.title == "Echo text", "echo's title is its manifest's", echo)
    a = echo.annotations
    check(
        a.read_only_hint is True and a.destructive_hint is False and a.idempotent_hint is True and a.open_world_hint is False,
        "echo: readOnlyHint, not destructive, idempotentHint, not open-world",
        a,
    )
    check(
        echo.icons and echo.icons[0].src.startswith("data:image/png;base64,") and echo.icons[0].mime_type == "image/png",
        "echo's icon is its manifest's data: URI with its MIME type",
        echo.icons,
    )
    meta = meta_of(echo)
    limits = meta.get("toolhost/limits", {})
    check(
        limits.get("timeoutMs") == 10000 and limits.get("memoryMb") == 64 and limits.get("outputLimit") == 10000,
        "echo's _meta carries its limits",
        meta,
    )
    check(meta.get("toolhost/plugin") == {"name": "text", "version": "0.1.0"}, "echo's _meta names its plugin and version", meta)
    delete = tools["delete"]
    check(delete.title == "delete", "a tool without a title is titled by its name", delete)
    check(
        delete.annotations.destructive_hint is True and delete.annotations.read_only_hint is False
        and delete.annotations.idempotent_hint is False,
        "delete is destructive, not read-only, not idempotent",
        delete.annotations,
    )
    check(not delete.icons, "a tool without icons has none", delete.icons)
    search = tools["web_search"]
    check(search.annotations.open_world_hint is True, "a tool of a plugin granted network access is open-world", search.annotations)
    check(tools["read"].annotations.open_world_hint is False, "a tool without network is not", tools["read"].annotations)

    check("count_words" not in tools, "count_words, claimed by text and hostile, is listed by neither", sorted(tools))
    conflicts = meta_of(listed).get("toolhost/conflicts", [])
    check(
        len(conflicts) == 1 and "`count_words`" in conflicts[0] and "`text`" in conflicts[0] and "`hostile`" in conflicts[0],
        "the list result's _meta reports the conflict, naming both plugins",
        meta_of(listed),
    )
    try:
        await c.call_tool("count_words", {"text": "a b"})
        check(False, "calling an ambiguous name fails")
    except MCPError as e:
        check(
            "plugin `hostile`" in str(e) and "plugin `text`" in str(e) and "prefix" in str(e),
            "calling the ambiguous name fails naming both plugins and the config line",
            e,
        )


async def prefix(c):
    names = {t.name for t in (await c.list_tools()).tools}
    check("count_words" in names and "h_count_words" in names, "both count_words are listed, one prefixed", sorted(names))
    r = await c.call_tool("count_words", {"text": "one two three"})
    check(not r.is_error and '"words":3' in text_of(r), "text's count_words answers", r)
    r = await c.call_tool("h_count_words", {"text": "one two three"})
    check(not r.is_error and text_of(r) == "42", "hostile's count_words answers under its prefixed name", r)


async def search(c, changed):
    names = [t.name for t in (await c.list_tools()).tools]
    check(names == ["echo", "find_tools"], "search mode lists the pinned tool and find_tools", names)
    tools = {t.name: t for t in (await c.list_tools()).tools}
    check(tools["find_tools"].annotations.read_only_hint is True, "find_tools is read-only", tools["find_tools"])
    r = await c.call_tool("find_tools", {"query": "count the words of a text"})
    check(not r.is_error and '"name":"count_words"' in text_of(r), "find_tools finds count_words", r)
    await asyncio.wait_for(changed.wait(), 10)
    check(True, "tools/list_changed after find_tools revealed tools")
    names = [t.name for t in (await c.list_tools()).tools]
    check("count_words" in names, "the found tool is listed from then on", names)
    r = await c.call_tool("count_words", {"text": "one two"})
    check(not r.is_error and '"words":2' in text_of(r), "the found tool is callable", r)
    r = await c.call_tool("read", {"path": "x.txt"})
    check("unknown tool" not in text_of(r), "an unlisted tool is callable by name too", r)


async def main():
    scenario, transport, *target = sys.argv[1:]
    assert transport == "stdio"
    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(server("stdio", target), mode="legacy", message_handler=on_message) as c:
        if scenario == "metadata":
            await metadata(c)
        elif scenario == "prefix":
            await prefix(c)
        else:
            await search(c, changed)
    print(f"all {common.checks} catalog checks passed ({scenario})")


asyncio.run(main())

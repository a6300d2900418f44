"""MCP Apps (#62) over MCP with the official MCP Python SDK 1.x:

    python apps.py stdio TOOLHOST_BIN [ARGS...]

`toolhost serve --mcp` serves `datakit` (whose `word_freq` has the app `ui://datakit/chart`).
The client, advertising the Apps extension, finds the tool's `_meta.ui.resourceUri`, lists the
page with the extension's MIME type and reads it with its `_meta.ui`.
"""

import asyncio
import sys

import common
import mcp.types as types
from common import as_dict, check, meta_of, session

MIME = "text/html;profile=mcp-app"


async def main():
    transport, *target = sys.argv[1:]
    async with session(transport, target) as s:
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        ui = meta_of(tools["word_freq"]).get("ui", {})
        check(ui.get("resourceUri") == "ui://datakit/chart", "word_freq names its app", ui)
        listed = {str(r.uri): r for r in (await s.list_resources()).resources}
        page = listed.get("ui://datakit/chart")
        check(page is not None and page.mimeType == MIME, "the page is listed with the extension's MIME type", listed.keys())
        read = await s.read_resource("ui://datakit/chart")
        content = read.contents[0]
        check(content.mimeType == MIME, "the page is read with the extension's MIME type", content.mimeType)
        check(isinstance(content, types.TextResourceContents) and content.text.lower().startswith("<!doctype html"), "the page is HTML")
        meta = meta_of(content)
        check(meta.get("ui", {}).get("prefersBorder") is True, "its _meta.ui says what the app declared", meta)
        check("csp" not in meta.get("ui", {}), "no origin the operator did not allow", meta)
    print(f"all {common.checks} apps checks passed")


asyncio.run(main())

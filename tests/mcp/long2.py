"""Progress over MCP 2026-07-28 (#29), with the official MCP Python SDK 2.x in its default mode:
`notifications/progress` for a request that carries a `progressToken`, on the request's own
response stream over HTTP, in order and ending at the total; a flood coalesced.

    python long2.py stdio TOOLHOST_BIN [ARGS...]
    python long2.py http http://127.0.0.1:PORT/mcp

Prints one `ok: ...` line per check and `MCP long checks passed (sdk2 TRANSPORT)`.
"""

import asyncio
import sys
import time

from common import check, server, text_of
from mcp import Client


async def main():
    transport, target = sys.argv[1], sys.argv[2:]
    async with Client(server(transport, target), mode="auto") as c:
        check(c.protocol_version == "2026-07-28", "negotiated 2026-07-28", c.protocol_version)
        await c.list_tools()
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        r = await c.call_tool("tick", {"n": 20, "ms": 10, "trail": ""}, progress_callback=on_progress)
        check(not r.is_error and text_of(r) == "counted to 20", "tick answers (no tasks extension declared)", r)
        check(len(seen) >= 2, "progress notifications arrived", seen)
        check(all(a[0] < b[0] for a, b in zip(seen, seen[1:])), "progress increases with every notification", seen)
        check(seen[-1] == (20.0, 20.0, "step 20 of 20"), "the last notification is at the total", seen)

        seen.clear()
        started = time.monotonic()
        r = await c.call_tool("flood", {"n": 300000}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
        check(not r.is_error, "the flood ends", r)
        check(len(seen) <= elapsed * 10 + 3, f"a flood is coalesced ({len(seen)} notifications in {elapsed:.2f} s)")
        check(seen and seen[-1][0] == 300000.0, "the flood's last report arrives", seen[-3:])
    print(f"MCP long checks passed (sdk2 {transport})")


asyncio.run(main())

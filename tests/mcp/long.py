"""Long-running tools over MCP (#29), with the official MCP Python SDK 1.x (the handshake
revisions): progress notifications, a flood coalesced, `notifications/cancelled` stopping the
work, the time limit and task support in each tool's `_meta`, and a plain result for a tool
that may run as a task (this client does not take tasks).

    python long.py stdio TOOLHOST_BIN [ARGS...]
    python long.py http http://127.0.0.1:PORT/mcp

Run in the server's workspace (the trail files are read from the current directory). Prints
one `ok: ...` line per check and `MCP long checks passed (TRANSPORT)`.
"""

import asyncio
import sys
import time

import mcp.types as types
from common import check, session, size, text_of, wait_until


async def main():
    transport, target = sys.argv[1], sys.argv[2:]
    async with session(transport, target) as s:
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        meta = tools["tick"].meta or {}
        check(meta.get("toolhost/timeoutMs") == 120000, "tick's _meta has the time limit it gets", meta)
        check(meta.get("toolhost/taskSupport") == "optional", "tick's _meta says it may run as a task", meta)
        check((tools["flood"].meta or {}).get("toolhost/taskSupport") == "forbidden", "flood never runs as a task")

        # Progress, in order, ending at the total.
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        r = await s.call_tool("tick", {"n": 20, "ms": 10, "trail": ""}, progress_callback=on_progress)
        check(not r.isError and text_of(r) == "counted to 20", "a task-optional tool gives this client a plain result", r)
        check(len(seen) >= 2, "progress notifications arrived", seen)
        check(all(a[0] < b[0] for a, b in zip(seen, seen[1:])), "progress increases with every notification", seen)
        check(seen[-1] == (20.0, 20.0, "step 20 of 20"), "the last notification is at the total", seen)

        # A flood: about ten notifications a second reach the client, the last always.
        seen.clear()
        started = time.monotonic()
        r = await s.call_tool("flood", {"n": 300000}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
        check(not r.isError, "the flood ends", r)
        check(len(seen) <= elapsed * 10 + 3, f"a flood is coalesced ({len(seen)} notifications in {elapsed:.2f} s)", seen[:20])
        check(seen and seen[-1][0] == 300000.0, "the flood's last report arrives", seen[-3:])

        # notifications/cancelled stops the work: the trail stops growing.
        trail = f"trail-{transport}.txt"
        request_id = s._request_id  # the id the next request gets (the SDK counts from 0)
        call = asyncio.create_task(s.call_tool("tick", {"n": 100000000, "ms": 10, "trail": trail}))
        await wait_until(30, "the trail grows", lambda: size(trail) >= 3)
        await s.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id, reason="the test cancels it")
                )
            )
        )
        # The server answers a cancelled request with nothing (or, at most, an error we ignore);
        # what matters is that the work stops.
        await asyncio.sleep(0.3)
        before = size(trail)
        await asyncio.sleep(0.4)
        check(before > 0 and size(trail) == before, "after notifications/cancelled the plugin's trail stops growing",
              (before, size(trail)))
        call.cancel()
        try:
            await call
        except BaseException:
            pass

        # The server goes on serving.
        r = await s.call_tool("tick", {"n": 2, "ms": 0, "trail": ""})
        check(not r.isError and text_of(r) == "counted to 2", "calls after the cancel are served", r)
    print(f"MCP long checks passed ({transport})")


asyncio.run(main())

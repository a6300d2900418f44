"""Drive a fleet of `toolhost serve --mcp --http` replicas behind nginx (tests/all/fleet.rs)
with the official MCP Python SDK 2.x: in its default mode (2026-07-28, stateless) every danger
confirmation asked and answered through the balancer runs its call once, and a replayed
`requestState` is refused; in legacy mode (2025 session) the session keeps working.

    python fleet2.py --rounds N --replays N --token TOKEN http://127.0.0.1:PORT/mcp

`--token` is the fleet's `[mcp] tokens` value: every replica draws its own local key, so a
client confirming through a balancer authenticates with a token the replicas share.

Exits non-zero with a message on the first failed check; prints `ok: ...` per check and, last,
`all N fleet checks passed`.
"""

import argparse
import asyncio
import os

import common
import mcp_types as types
from common import check, server, ws
from mcp import Client, MCPError


def client(url, token, mode, **kwargs):
    return Client(server("http", [url], token), mode=mode, **kwargs)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--replays", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("url")
    args = p.parse_args()
    accept = {"confirm": {"action": "accept", "content": {"approve": True}}}
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with client(args.url, args.token, "auto", elicitation_callback=elicit) as c:
        check(c.protocol_version == "2026-07-28", "negotiated protocol 2026-07-28", c.protocol_version)
        # The SDK drives both rounds itself: the question, the user's answer, the retry.
        for i in range(args.rounds):
            path = f"sdk-{i}.txt"
            open(ws(path), "w").write("delete me")
            r = await c.call_tool("delete", {"path": path})
            check(not r.is_error and len(asked) == i + 1 and path in asked[-1], f"round {i}: asked, and the call ran", r)
            check(not os.path.exists(ws(path)), f"round {i}: the file is gone")
        # By hand, to keep the state and replay it.
        s = c.session
        last = "sdk-replayed.txt"
        open(ws(last), "w").write("delete me")
        q = await s.call_tool("delete", {"path": last}, allow_input_required=True)
        check(isinstance(q, types.InputRequiredResult) and q.request_state, "asked by hand", q)
        state = q.request_state
        r = await s.call_tool("delete", {"path": last}, input_responses=accept, request_state=state, allow_input_required=True)
        check(isinstance(r, types.CallToolResult) and not r.is_error, "the answer by hand ran the call", r)
        open(ws(last), "w").write("again")
        for i in range(args.replays):
            try:
                r = await s.call_tool("delete", {"path": last}, input_responses=accept, request_state=state, allow_input_required=True)
                check(False, f"replay {i} is refused", r)
            except MCPError as e:
                check("already used" in str(e), f"replay {i} is refused as already used", e)
        check(os.path.exists(ws(last)), "no replay ran")

    async with client(args.url, args.token, "legacy") as c:
        check(c.protocol_version == "2025-11-25", "a legacy session through the balancer", c.protocol_version)
        for i in range(5):
            listed = await c.list_tools()
            check("delete" in [t.name for t in listed.tools], f"session request {i} is served")
        r = await c.call_tool("read", {"path": "keep.txt"})
        check(not r.is_error and "keep me" in "".join(x.text for x in r.content if x.type == "text"), "a call in the session", r)

    print(f"all {common.checks} fleet checks passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())

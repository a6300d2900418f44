"""Make MCP tool calls over streamable HTTP with the official MCP Python SDK 1.x, one after
the other, as a client of `toolhost serve --mcp --http` does (tests/all/service.rs).

    python calls.py URL TOKEN|- CLIENT_NAME CALLS_JSON

CALLS_JSON is a list of {"name": ..., "arguments": {...}}. Prints one JSON line per call as soon
as it is answered: {"name", "isError", "text"} for a result, {"name", "error"} for a JSON-RPC
error. Exits non-zero only if the session itself fails.
"""

import asyncio
import json
import sys
from datetime import timedelta

import mcp.types as types
from mcp import ClientSession, McpError
from mcp.client.streamable_http import streamablehttp_client


async def main():
    url, token, client_name, calls = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    headers = {"Authorization": f"Bearer {token}"} if token != "-" else None
    info = types.Implementation(name=client_name, version="1.0")
    async with streamablehttp_client(url, headers=headers, timeout=60, sse_read_timeout=120) as (read, write, _):
        async with ClientSession(
            read, write, client_info=info, read_timeout_seconds=timedelta(seconds=120)
        ) as session:
            await session.initialize()
            for c in calls:
                try:
                    r = await session.call_tool(c["name"], c.get("arguments", {}))
                    text = "".join(b.text for b in r.content if getattr(b, "type", "") == "text")
                    line = {"name": c["name"], "isError": bool(r.isError), "text": text}
                except McpError as e:
                    line = {"name": c["name"], "error": str(e.error.message)}
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

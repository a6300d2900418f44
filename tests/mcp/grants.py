"""A grant question over MCP elicitation (#31), with the official MCP Python SDK 1.x:

    python grants.py URL TOOLHOST_BIN [ARGS...]

`toolhost serve --mcp` serves `web` with `[plugin.web] on_missing = "ask"` and no host granted;
`fetch URL` (a loopback server) needs `net localhost`. A client with elicitation is asked (allow
once runs the call; a refusal fails it and is not asked again); one without is not asked and
gets the refusal with its note. Prints one `ok: ...` line per check.
"""

import asyncio
import os
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def check(cond, what, detail=""):
    if not cond:
        print(f"FAILED: {what}\n{detail}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    url, target = sys.argv[1], sys.argv[2:]
    params = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    asked = []
    answers = [{"allow": True}, {"allow": False}]

    async def elicit(context, p):
        asked.append(p.message)
        return types.ElicitResult(action="accept", content=answers[len(asked) - 1])

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as s:
            await s.initialize()
            r = await s.call_tool("fetch", {"url": url})
            check(not r.isError and "hello from the test server" in text_of(r), "allow once runs the call", r)
            check(len(asked) == 1 and "web wants to send a request to localhost" in asked[0], "the question names plugin and host", asked)
            r = await s.call_tool("fetch", {"url": url})
            check(r.isError and "denied plugin `web` net localhost" in text_of(r), "a refusal fails the call", r)
            r = await s.call_tool("fetch", {"url": url})
            check(r.isError and len(asked) == 2, "a refusal is not asked again in the session", asked)

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("fetch", {"url": url})
            check(r.isError and "[note: the host refused" in text_of(r), "without elicitation: refused with the note", r)

    print("all grant checks passed")


if __name__ == "__main__":
    asyncio.run(main())

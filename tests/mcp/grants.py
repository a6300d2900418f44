"""A grant question over MCP elicitation (#31), with the official MCP Python SDK 1.x:

    python grants.py URL TOOLHOST_BIN [ARGS...]

`toolhost serve --mcp` serves `web` with `[plugin.web] on_missing = "ask"` and no host granted;
`fetch URL` (a loopback server) needs `net localhost`. A client with elicitation is asked (allow
once runs the call; a refusal fails it and is not asked again); one without is not asked and
gets the refusal with its note. Prints one `ok: ...` line per check.
"""

import asyncio
import sys

from common import answering, check, session, text_of


async def main():
    url, target = sys.argv[1], sys.argv[2:]
    elicit, asked = answering([{"allow": True}, {"allow": False}])

    async with session("stdio", target, elicitation_callback=elicit) as s:
        await s.initialize()
        r = await s.call_tool("fetch", {"url": url})
        check(not r.isError and "hello from the test server" in text_of(r), "allow once runs the call", r)
        check(len(asked) == 1 and "web wants to send a request to localhost" in asked[0], "the question names plugin and host", asked)
        r = await s.call_tool("fetch", {"url": url})
        check(r.isError and "denied plugin `web` net localhost" in text_of(r), "a refusal fails the call", r)
        r = await s.call_tool("fetch", {"url": url})
        check(r.isError and len(asked) == 2, "a refusal is not asked again in the session", asked)

    async with session("stdio", target) as s:
        await s.initialize()
        r = await s.call_tool("fetch", {"url": url})
        check(r.isError and "[note: the host refused" in text_of(r), "without elicitation: refused with the note", r)

    print("all grant checks passed")


if __name__ == "__main__":
    asyncio.run(main())

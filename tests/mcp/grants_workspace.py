"""The workspace asked about over MCP elicitation (#31), with the official MCP Python SDK 1.x:

    python grants_workspace.py TOOLHOST_BIN [ARGS...]

`toolhost serve --mcp` serves `files` with `[plugin.files] on_missing = "ask"` and the workspace
not granted; `read README.txt` fails on the path and the client is asked about exactly the
workspace (allow once reads the file; the next call is asked again, and a refusal fails it).
Prints one `ok: ...` line per check.
"""

import asyncio
import sys

from common import answering, check, session, text_of


async def main():
    target = sys.argv[1:]
    elicit, asked = answering([{"allow": True}, {"allow": False}])

    async with session("stdio", target, elicitation_callback=elicit) as s:
        await s.initialize()
        r = await s.call_tool("read", {"path": "README.txt"})
        check(not r.isError and "read me" in text_of(r), "allow once reads the file", r)
        check(
            len(asked) == 1 and "files wants to read and write the directory " in asked[0],
            "the question names the plugin and the workspace",
            asked,
        )
        r = await s.call_tool("read", {"path": "README.txt"})
        check(r.isError and "denied plugin `files` fs rw " in text_of(r), "asked again, and a refusal fails the call", r)
        check(len(asked) == 2, "once holds for one call", asked)

    print("all workspace grant checks passed")


if __name__ == "__main__":
    asyncio.run(main())

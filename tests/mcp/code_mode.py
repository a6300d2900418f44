"""Code mode over MCP with the official MCP Python SDK 1.x (#61):

    python code_mode.py stdio TOOLHOST_BIN [ARGS...]

`toolhost serve --mcp` serves `files` and `text` with `[code_mode] enabled`, the workspace
holding a.txt and b.txt. The client lists `run_script`, runs a script that reads and counts,
and runs scripts whose dangerous inner call (`delete`) it is asked about by elicitation: the
first it declines (a.txt stays), the second it approves (b.txt goes).
"""

import asyncio
import json
import sys

import common
import mcp.types as types
from common import check, session, text_of


async def main():
    transport, *target = sys.argv[1:]
    asked = []
    answers = [False, True]

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": answers[len(asked) - 1]})

    async with session(transport, target, elicitation_callback=elicit) as s:
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        check("run_script" in tools, "run_script is listed", sorted(tools))
        d = tools["run_script"].description
        check("declare const tools" in d and "count_words(args:" in d, "its description declares the tools", d)

        code = "const t = await tools.read({path: 'a.txt'}); return (await tools.count_words({text: t})).words"
        r = await s.call_tool("run_script", {"code": code})
        data = json.loads(text_of(r))
        check(not r.isError and data["result"] == 4 and data["calls"] == 2, "a script reads and counts", r)

        r = await s.call_tool("run_script", {"code": "return await tools.delete({path: 'a.txt'})"})
        check(r.isError and "denied" in text_of(r), "a declined inner call fails the script", r)
        check(len(asked) == 1 and "delete" in asked[0], "the person was asked about the inner call", asked)

        r = await s.call_tool("run_script", {"code": "return await tools.delete({path: 'b.txt'})"})
        check(not r.isError, "an approved inner call runs", r)
        check(len(asked) == 2, "asked once more", asked)

    print(f"all {common.checks} code mode checks passed")


asyncio.run(main())

"""What the MCP test clients in this folder share: a check per `ok: ...` line (the first that
fails ends the run), the text of a tool's result, a file of the workspace (a trail a tool
writes), waiting for a condition, a model as a plain dict, and the server under test reached
with the official MCP Python SDK of either generation.

The scripts are run as `python tests/mcp/SCRIPT.py …` (by tests/all, in the server's workspace):
Python puts a script's own folder first on its path, so `import common` finds this file. The
SDK's modules are imported where they are used: 1.x and 2.x name them differently.
"""

import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager


# How many checks have passed (a script that prints the count reads `common.checks`).
checks = 0


def check(cond, what, detail=""):
    global checks
    if not cond:
        print(f"FAILED: {what}\n{detail}", file=sys.stderr)
        sys.exit(1)
    checks += 1
    print(f"ok: {what}", flush=True)


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def ws(name):
    """A path in the workspace (the scripts run in it)."""
    return os.path.join(os.getcwd(), name)


def size(name):
    """The size of a file, 0 while there is none."""
    try:
        return os.path.getsize(name)
    except OSError:
        return 0


def as_dict(x):
    """A schema or `_meta` as a plain dict, whether the SDK gives a dict or a model."""
    if x is None:
        return {}
    return x if isinstance(x, dict) else x.model_dump(by_alias=True, exclude_none=True)


def meta_of(x):
    return as_dict(getattr(x, "meta", None))


def wait_until_blocking(secs, what, cond):
    until = time.monotonic() + secs
    while not cond():
        if time.monotonic() > until:
            check(False, what, f"not within {secs} s")
        time.sleep(0.01)


async def wait_until(secs, what, cond):
    until = time.monotonic() + secs
    while not cond():
        if time.monotonic() > until:
            check(False, what, f"not within {secs} s")
        await asyncio.sleep(0.01)


def answering(answers):
    """An SDK 1.x elicitation callback that accepts each question with the next of `answers`,
    and the list of the questions it was asked."""
    import mcp.types as types

    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=answers[len(asked) - 1])

    return elicit, asked


def stdio_params(target):
    """The server a client starts over stdio: `target` is its command line, run with this
    process's environment."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))


@asynccontextmanager
async def session(transport, target, token=None, **session_kwargs):
    """A `ClientSession` of SDK 1.x (not initialized) over `transport`: `stdio` starts the
    server `target` names; `http` reaches the URL `target[0]`, sending `token`, if any, as
    `Authorization: Bearer …`."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if transport == "stdio":
        async with stdio_client(stdio_params(target)) as (read, write):
            async with ClientSession(read, write, **session_kwargs) as s:
                yield s
    else:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with streamablehttp_client(target[0], headers=headers) as (read, write, _):
            async with ClientSession(read, write, **session_kwargs) as s:
                yield s


def server(transport, target, token=None):
    """What an SDK 2.x `Client` connects to over `transport` (see `session`)."""
    if transport == "stdio":
        return stdio_params(target)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) if token else None
    return streamable_http_client(target[0], http_client=http)

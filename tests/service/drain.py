"""Drive one MCP session through a graceful shutdown with the official MCP Python SDK — 1.x or
2.x, whichever `mcp` this Python has — taking its orders from stdin so the test decides the
timing (tests/all/drain.rs).

    python drain.py MODE http URL TOKEN|-
    python drain.py MODE stdio TOOLHOST [ARGS...]

MODE is `legacy` (the initialize handshake: a session over HTTP) or, with 2.x, `auto`
(2026-07-28: stateless over HTTP). Over stdio the server is started here on a pair of pipes,
framed exactly as the SDK's own stdio transport frames it, so that its stdin can be closed
(`eof`) while its answers are still read; the session on top is the SDK's own.

Orders, one JSON object a line:
  {"tag": T, "call": NAME, "arguments": {...}}  start a call; when answered prints
      {"tag": T, "isError": bool, "text": ...}, or {"tag": T, "error": MESSAGE} for an error
  {"tag": T, "notify": true}  send notifications/roots/list_changed; prints {"tag": T, "sent": true}
  {"eof": true}               stdio: close the server's stdin
End of input: wait for the calls still open, leave the session (a DELETE over HTTP) and print
{"closed": true, "exit": STATUS} (the server's exit status over stdio). Once connected it
prints {"ready": true, "pid": PID} (PID over stdio only). Exits non-zero only if the session
itself fails — the failure this test exists to catch.
"""

import importlib.metadata
import json
import subprocess
import sys
from contextlib import asynccontextmanager

import anyio

SDK2 = importlib.metadata.version("mcp").startswith("2.")

if SDK2:
    import mcp_types as types
    from mcp import Client, MCPError as McpError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.message import SessionMessage

    def parse(line):
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)

    def dump(message):
        return message.model_dump_json(by_alias=True, exclude_unset=True)
else:
    import mcp.types as types
    from mcp import ClientSession, McpError
    from mcp.client.streamable_http import streamablehttp_client
    from mcp.shared.message import SessionMessage

    def parse(line):
        return types.JSONRPCMessage.model_validate_json(line)

    def dump(message):
        return message.model_dump_json(by_alias=True, exclude_none=True)


def say(obj):
    print(json.dumps(obj), flush=True)


class Pipes:
    """The server on two pipes: newline-delimited JSON-RPC, as the SDKs' stdio transports."""

    def __init__(self, argv):
        self.argv = argv
        self.process = None

    @asynccontextmanager
    async def streams(self):
        self.process = await anyio.open_process(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
        )
        read_writer, read_stream = anyio.create_memory_object_stream(0)
        write_stream, write_reader = anyio.create_memory_object_stream(0)

        async def reader():
            async with read_writer:
                buffer = b""
                async for chunk in self.process.stdout:
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.strip():
                            await read_writer.send(SessionMessage(parse(line)))

        async def writer():
            async with write_reader:
                async for m in write_reader:
                    try:
                        await self.process.stdin.send((dump(m.message) + "\n").encode())
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        pass  # stdin closed on purpose (`eof`): the answers still come

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()

    async def eof(self):
        await self.process.stdin.aclose()

    async def exit_status(self):
        try:
            await self.process.stdin.aclose()
        except Exception:
            pass
        with anyio.move_on_after(30):
            return await self.process.wait()
        self.process.kill()
        return "still running after 30 s"


@asynccontextmanager
async def session(mode, transport, target):
    """A connected session whatever the SDK: something with call(name, args) and notify()."""
    if SDK2:
        if transport == "http":
            url, token = target
            headers = {"Authorization": f"Bearer {token}"} if token != "-" else None
            server = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        else:
            server = target.streams()
        async with Client(server, mode=mode, read_timeout_seconds=120) as c:
            await c.list_tools()
            yield Session(lambda n, a: c.call_tool(n, a), c.send_roots_list_changed)
    else:
        from datetime import timedelta

        if transport == "http":
            url, token = target
            headers = {"Authorization": f"Bearer {token}"} if token != "-" else None
            streams = streamablehttp_client(url, headers=headers, timeout=60, sse_read_timeout=120)
        else:
            streams = target.streams()
        async with streams as s:
            read, write = s[0], s[1]
            info = types.Implementation(name="drain-client", version="1.0")
            async with ClientSession(
                read, write, client_info=info, read_timeout_seconds=timedelta(seconds=120)
            ) as c:
                await c.initialize()
                # As clients do (and the SDK checks results against the listed outputSchema).
                await c.list_tools()
                yield Session(lambda n, a: c.call_tool(n, a), c.send_roots_list_changed)


class Session:
    def __init__(self, call, notify):
        self.call = call
        self.notify = notify


async def main():
    mode, transport, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    pipes = Pipes(rest) if transport == "stdio" else None
    target = pipes if pipes else (rest[0], rest[1])
    status = None
    async with session(mode, transport, target) as s:
        say({"ready": True, "pid": pipes.process.pid if pipes else None})

        async def call(order):
            try:
                r = await s.call(order["call"], order.get("arguments", {}))
                text = "".join(getattr(b, "text", "") for b in r.content)
                is_error = r.isError if hasattr(r, "isError") else r.is_error
                say({"tag": order["tag"], "isError": bool(is_error), "text": text})
            except McpError as e:
                say({"tag": order["tag"], "error": str(e)})

        async def notify(order):
            await s.notify()
            say({"tag": order["tag"], "sent": True})

        orders = anyio.wrap_file(sys.stdin)
        async with anyio.create_task_group() as tg:
            async for line in orders:
                if not line.strip():
                    continue
                order = json.loads(line)
                if "call" in order:
                    tg.start_soon(call, order)
                elif "notify" in order:
                    tg.start_soon(notify, order)
                elif order.get("eof"):
                    await pipes.eof()
                    say({"eof": True})
        if pipes:
            status = await pipes.exit_status()
    say({"closed": True, "exit": status})


if __name__ == "__main__":
    anyio.run(main)

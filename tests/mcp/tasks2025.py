"""The 2025-11-25 experimental MCP tasks (#29), with the official MCP Python SDK 1.x and its
task client (`session.experimental`): the `tasks` capability, `execution.taskSupport` in
`tools/list`, a task-augmented `tools/call` answered with a task, polled to `completed` and its
result fetched, `tasks/list`, `tasks/cancel` stopping the work, a tool whose taskSupport is
`forbidden` refusing a task, and (over HTTP, where two clients share one server) another
client unable to see or cancel the task.

    python tasks2025.py stdio TOOLHOST_BIN [ARGS...]
    python tasks2025.py http http://127.0.0.1:PORT/mcp

Run in the server's workspace (trail files are read from the current directory). Prints one
`ok: ...` line per check and `MCP 2025-11-25 task checks passed (TRANSPORT)`.
"""

import asyncio
import sys
import warnings

import mcp.types as types
from common import check, session, size, text_of, wait_until
from mcp.shared.exceptions import McpError


# The SDK marks its task API deprecated (2.x has none); it is what speaks 2025-11-25 tasks.
warnings.simplefilter("ignore", DeprecationWarning)


# Progress notifications the server sent, as (token, progress, total).
PROGRESS = []


async def on_message(message):
    root = getattr(message, "root", None)
    if isinstance(root, types.ProgressNotification):
        PROGRESS.append((root.params.progressToken, root.params.progress, root.params.total))


def connect(transport, target, name):
    info = types.Implementation(name=name, version="0")
    return session(transport, target, client_info=info, message_handler=on_message)


async def error_code(coro):
    try:
        await coro
    except McpError as e:
        return e.error.code, e.error.message
    return None, None


async def main():
    transport, target = sys.argv[1], sys.argv[2:]
    async with connect(transport, target, "tasks-a") as s:
        init = await s.initialize()
        check(init.protocolVersion == "2025-11-25", "the session speaks 2025-11-25", init.protocolVersion)
        caps = init.capabilities.tasks
        check(caps is not None and caps.requests is not None and caps.requests.tools is not None
              and caps.requests.tools.call is not None and caps.list is not None and caps.cancel is not None,
              "the server declares tasks (list, cancel, tools/call)", init.capabilities)
        tools = {t.name: t for t in (await s.list_tools()).tools}
        check(tools["tick"].execution is not None and tools["tick"].execution.taskSupport == "optional",
              "tick's execution.taskSupport is optional", tools["tick"])
        check(tools["flood"].execution is not None and tools["flood"].execution.taskSupport == "forbidden",
              "flood's execution.taskSupport is forbidden", tools["flood"])
        check(tools["chore"].execution is not None and tools["chore"].execution.taskSupport == "required",
              "chore's execution.taskSupport is required", tools["chore"])

        # A task-augmented call: a task at once, polled to completed, its result fetched.
        created = await s.experimental.call_tool_as_task("tick", {"n": 30, "ms": 20, "trail": ""})
        task_id = created.task.taskId
        check(created.task.status == "working" and task_id, "a task-augmented call answers with a working task",
              created)
        statuses = [st.status async for st in s.experimental.poll_task(task_id)]
        check(statuses and statuses[-1] == "completed", "tasks/get polls the task to completed", statuses)
        result = await s.experimental.get_task_result(task_id, types.CallToolResult)
        check(not result.isError and text_of(result) == "counted to 30", "tasks/result gives the call's result",
              result)
        related = (result.meta or {}).get("io.modelcontextprotocol/related-task", {})
        check(related.get("taskId") == task_id, "the result names its task", result.meta)

        # The request's progressToken stays valid for the task's life (checked over stdio, where
        # every notification reaches the client; over HTTP they go to the session's stream).
        created = await s.experimental.call_tool_as_task("tick", {"n": 8, "ms": 20, "trail": ""},
                                                         meta={"progressToken": "task-progress"})
        await s.experimental.get_task_result(created.task.taskId, types.CallToolResult)
        if transport == "stdio":
            await wait_until(10, "the task's last progress arrives",
                             lambda: ("task-progress", 8.0, 8.0) in PROGRESS)
            mine = [p for t, p, _ in PROGRESS if t == "task-progress"]
            check(all(a < b for a, b in zip(mine, mine[1:])),
                  "notifications/progress with the request's token follow the task, increasing", mine)

        # tasks/result blocks until the task ends.
        created = await s.experimental.call_tool_as_task("tick", {"n": 10, "ms": 30, "trail": ""})
        result = await s.experimental.get_task_result(created.task.taskId, types.CallToolResult)
        check(text_of(result) == "counted to 10", "tasks/result waits for a running task's end", result)

        # tasks/cancel stops the work: the task is cancelled in the answer, the trail stops.
        trail = f"trail-2025-{transport}.txt"
        created = await s.experimental.call_tool_as_task("tick", {"n": 100000000, "ms": 10, "trail": trail})
        long_id = created.task.taskId
        await wait_until(30, "the task's trail grows", lambda: size(trail) >= 3)
        listed = [t.taskId for t in (await s.experimental.list_tasks()).tasks]
        check(task_id in listed and long_id in listed, "tasks/list shows the client's tasks", listed)

        if transport == "http":
            # Another client of the same name and no token: its session, not a name it can
            # choose, owns the task (#55: a name is no identity).
            async with connect(transport, target, "tasks-a") as other:
                await other.initialize()
                code, message = await error_code(other.experimental.get_task(long_id))
                check(code == -32602 and "unknown task" in message, "another client cannot see the task",
                      (code, message))
                code, _ = await error_code(other.experimental.cancel_task(long_id))
                check(code == -32602, "another client cannot cancel the task", code)
                mine = [t.taskId for t in (await other.experimental.list_tasks()).tasks]
                check(long_id not in mine and task_id not in mine, "another client's tasks/list is its own", mine)
            check(size(trail) > 0 and (await s.experimental.get_task(long_id)).status == "working",
                  "the task runs on after the other client's attempts")

        cancelled = await s.experimental.cancel_task(long_id)
        check(cancelled.status == "cancelled", "tasks/cancel answers with the task cancelled", cancelled)
        await asyncio.sleep(0.2)
        before = size(trail)
        await asyncio.sleep(0.4)
        check(before > 0 and size(trail) == before, "after tasks/cancel the plugin's trail stops growing",
              (before, size(trail)))
        got = await s.experimental.get_task(long_id)
        check(got.status == "cancelled" and "tasks/cancel" in (got.statusMessage or ""),
              "tasks/get says cancelled, and by whom", got)
        code, message = await error_code(s.experimental.cancel_task(long_id))
        check(code == -32602 and "already ended" in message, "a task that ended cannot be cancelled again",
              (code, message))

        # The same caps as the 2026-07-28 tasks: the fifth running task of a client is refused
        # (`[mcp] tasks_max_running_per_client`, 4 by default).
        running = [(await s.experimental.call_tool_as_task("tick", {"n": 100000000, "ms": 10, "trail": ""})).task.taskId
                   for _ in range(4)]
        code, message = await error_code(s.experimental.call_tool_as_task("tick", {"n": 1, "ms": 0, "trail": ""}))
        check(code is not None and "tasks_max_running_per_client = 4" in message,
              "a fifth running task is refused, naming the setting", (code, message))
        for t in running:
            await s.experimental.cancel_task(t)

        # A tool whose taskSupport is forbidden refuses a task (-32601, as 2025-11-25 says).
        code, message = await error_code(s.experimental.call_tool_as_task("flood", {"n": 10}))
        check(code == -32601 and "taskSupport: forbidden" in message, "a forbidden tool refuses a task",
              (code, message))

        # A tool whose taskSupport is required: refused as a plain call, served as a task.
        code, message = await error_code(s.call_tool("chore", {"n": 3, "ms": 0}))
        check(code == -32601 and "runs only as a task" in message, "a required tool refuses a plain call",
              (code, message))
        created = await s.experimental.call_tool_as_task("chore", {"n": 3, "ms": 0})
        result = await s.experimental.get_task_result(created.task.taskId, types.CallToolResult)
        check(text_of(result) == "counted to 3", "a required tool runs as a task", result)

        # A tool that fails: the task is `failed` (2025-11-25: isError), its result the error.
        created = await s.experimental.call_tool_as_task("tick", {"n": 1, "ms": 0, "trail": "no-such-dir/x"})
        statuses = [st.status async for st in s.experimental.poll_task(created.task.taskId)]
        check(statuses[-1] == "failed", "a tool result with isError makes the task failed", statuses)
        result = await s.experimental.get_task_result(created.task.taskId, types.CallToolResult)
        check(result.isError and "cannot open" in text_of(result), "tasks/result gives the tool's error", result)

        # Arguments the tool does not take: refused at once, no task.
        code, message = await error_code(s.experimental.call_tool_as_task("tick", {"n": "many"}))
        check(code == -32602, "a task request with bad arguments is invalid params", (code, message))

        # An unknown task id.
        code, _ = await error_code(s.experimental.get_task("no-such-task"))
        check(code == -32602, "an unknown task id is invalid params", code)

        # A plain call still gets a plain result.
        r = await s.call_tool("tick", {"n": 2, "ms": 0, "trail": ""})
        check(not r.isError and text_of(r) == "counted to 2", "a plain call of a task-optional tool is plain", r)
    print(f"MCP 2025-11-25 task checks passed ({transport})")


asyncio.run(main())

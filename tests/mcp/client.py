"""Drive `toolhost serve --mcp` with the official MCP Python SDK (a client this project did
not write) and check what a real client sees.

    python client.py --plugins DIR --new-plugin versioned.wasm stdio TOOLHOST_BIN [ARGS...]
    python client.py --plugins DIR --new-plugin versioned.wasm [--token KEY] http http://127.0.0.1:PORT/mcp

Over HTTP, `--token` is sent as `Authorization: Bearer …`: the key a server without [mcp] tokens
printed at start, which a client must present to be asked about dangerous calls.

Exits non-zero with a message on the first failed check; prints one `ok: ...` line per check.
"""

import argparse
import asyncio
import json
import os
import shutil
import time

import common
import mcp.types as types
from common import check, session, text_of
from mcp import McpError


def connect(args, **session_kwargs):
    return session(args.transport, args.target, args.token, **session_kwargs)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--plugins", required=True)
    p.add_argument("--new-plugin", required=True)
    p.add_argument("--token")
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("target", nargs=argparse.REMAINDER)
    args = p.parse_args()

    list_changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            list_changed.set()

    async with connect(args, message_handler=on_message) as s:
        init = await s.initialize()
        check(init.serverInfo.name == "toolhost", "initialize: server is toolhost", init)
        check(
            init.capabilities.tools is not None and init.capabilities.tools.listChanged,
            "initialize: tools with listChanged",
            init.capabilities,
        )

        # The files plugin's skill, through the SDK's own resources API.
        skill_md = "skill://files/workspace-files/SKILL.md"
        check(init.capabilities.resources is not None, "initialize: resources", init.capabilities)
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        check(skill_md in listed, "resources/list has the files plugin's skill", listed)
        read = await s.read_resource(skill_md)
        check(
            read.contents[0].mimeType == "text/markdown"
            and read.contents[0].text.startswith("---\nname: workspace-files\n"),
            "resources/read returns the skill's SKILL.md as text",
            read.contents[0].mimeType,
        )

        # The plugins' own resources, templates, prompts and completion.
        templates = [t.uriTemplate for t in (await s.list_resource_templates()).resourceTemplates]
        check("file:///{+path}" in templates, "resources/templates/list has the files plugin's template", templates)
        read = await s.read_resource("file:///keep.txt")
        check(read.contents[0].text == "keep me", "resources/read of a template's URI runs the files plugin", read.contents[0])
        check(init.capabilities.prompts is not None, "initialize: prompts", init.capabilities)
        prompts = {p.name: p for p in (await s.list_prompts()).prompts}
        check(
            "summarise-file" in prompts and [a.name for a in prompts["summarise-file"].arguments] == ["path", "style"],
            "prompts/list has the text plugin's prompt and its arguments",
            sorted(prompts),
        )
        got = await s.get_prompt("summarise-file", {"path": "keep.txt"})
        check(
            "`keep.txt`" in got.messages[0].content.text and got.messages[1].content.type == "resource_link"
            and str(got.messages[1].content.uri) == "file:///keep.txt",
            "prompts/get returns the prompt's text and its resource link",
            got.messages,
        )
        done = await s.complete(types.ResourceTemplateReference(type="ref/resource", uri="file:///{+path}"), {"name": "path", "value": "ke"})
        check(done.completion.values == ["keep.txt"], "completion/complete completes the template's path", done.completion)

        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name in ["echo", "count_words", "split_task", "read", "delete"]:
            check(name in tools, f"tools/list has {name}", sorted(tools))
        check(tools["delete"].annotations.destructiveHint is True, "delete is destructive")
        check(tools["read"].annotations.readOnlyHint is True, "read is read-only")
        check(tools["echo"].annotations.destructiveHint is False, "echo is not destructive")
        check(
            (tools["count_words"].outputSchema or {}).get("required") == ["words", "lines", "chars"]
            and tools["echo"].outputSchema is None,
            "count_words has the outputSchema its manifest declares; echo has none",
            tools["count_words"],
        )
        schema = tools["split_task"].inputSchema
        check(
            schema["type"] == "object"
            and schema["properties"]["subtasks"]["type"] == "array"
            and schema["required"] == ["title", "subtasks"],
            "split_task inputSchema is the JSON Schema of its params",
            json.dumps(schema),
        )

        r = await s.call_tool("echo", {"text": "hello, MCP"})
        check(not r.isError and text_of(r) == "hello, MCP", "call echo succeeds", r)

        r = await s.call_tool(
            "split_task",
            {"title": "Launch", "subtasks": [{"title": "design", "days": 2}, {"title": "build", "days": 3}]},
        )
        check(not r.isError and "design" in text_of(r), "call with a JSON argument succeeds", r)

        r = await s.call_tool("read", {"path": "no-such-file.txt"})
        check(r.isError and "no-such-file.txt" in text_of(r), "a failing call is isError with the error text", r)

        r = await s.call_tool("echo", {})
        check(r.isError and "needs the argument `text`" in text_of(r), "bad arguments are isError for the model", r)

        try:
            await s.call_tool("ech", {"text": "x"})
            check(False, "unknown tool is a protocol error")
        except McpError as e:
            check("unknown tool `ech`" in str(e) and "echo" in str(e), "unknown tool is a protocol error naming close tools", e)

        r = await s.call_tool("delete", {"path": "keep.txt"})
        check(
            r.isError and "does not support elicitation" in text_of(r) and "policy" in text_of(r),
            "dangerous call refused without elicitation, saying how the operator can allow it",
            r,
        )
        check(os.path.exists(os.path.join(os.getcwd(), "keep.txt")), "the refused call did not run")

        # Several calls in flight at once are served concurrently.
        started = time.monotonic()
        results = await asyncio.gather(
            *[s.call_tool("count_words", {"text": f"one two three {i}"}) for i in range(8)]
        )
        check(
            all(not r.isError and '"words":4' in text_of(r) for r in results),
            "8 concurrent calls all answered correctly",
            results,
        )
        check(
            results[0].structuredContent is not None and results[0].structuredContent["words"] == 4,
            "a tool's JSON object output is also structuredContent",
            results[0],
        )
        usage = (results[0].meta or {}).get("toolhost/usage") or {}
        check(
            usage.get("wall_us", 0) > 0 and "peak_memory_kb" in usage and "busy_us" in usage,
            "what the call cost is in _meta[\"toolhost/usage\"]",
            results[0],
        )

        # Hot reload: a new plugin file gives the client a list_changed and a new tool.
        shutil.copy(args.new_plugin, os.path.join(args.plugins, ".new.tmp"))
        os.rename(os.path.join(args.plugins, ".new.tmp"), os.path.join(args.plugins, "versioned.wasm"))
        await asyncio.wait_for(list_changed.wait(), 30)
        check(True, "notifications/tools/list_changed received after a plugin file was added")
        tools = {t.name for t in (await s.list_tools()).tools}
        check("which" in tools and "nap" in tools, "tools/list shows the new plugin's tools", sorted(tools))
        r = await s.call_tool("which", {})
        check(not r.isError and text_of(r) == "v1", "the new tool is called", r)

        started = time.monotonic()
        naps = await asyncio.gather(*[s.call_tool("nap", {"ms": 600}) for _ in range(4)])
        took = time.monotonic() - started
        check(all(text_of(r) == "slept 600 ms" for r in naps), "4 concurrent 600 ms calls answered", naps)
        check(took < 2.0, f"they ran concurrently ({took:.2f} s for 4 x 0.6 s)")

    # A client that supports elicitation is asked; its answer decides.
    answers = []

    async def elicit(context, params):
        answers.append(params.message)
        approve = len(answers) == 1  # yes the first time, no the second
        return types.ElicitResult(action="accept", content={"approve": approve})

    async with connect(args, elicitation_callback=elicit) as s:
        await s.initialize()
        r = await s.call_tool("delete", {"path": "keep.txt"})
        check(not r.isError, "dangerous call runs after the user approves through elicitation", r)
        check("delete" in answers[0] and "keep.txt" in answers[0], "the question names the tool and its arguments", answers)
        check(not os.path.exists(os.path.join(os.getcwd(), "keep.txt")), "the approved call ran")
        r = await s.call_tool("delete", {"path": "other.txt"})
        check(r.isError and "did not approve" in text_of(r), "a declined elicitation refuses the call", r)
        check(os.path.exists(os.path.join(os.getcwd(), "other.txt")), "the declined call did not run")

    print(f"all {common.checks} MCP checks passed ({args.transport})")


if __name__ == "__main__":
    asyncio.run(main())

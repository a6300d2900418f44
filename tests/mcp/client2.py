"""Drive `toolhost serve --mcp` with the official MCP Python SDK 2.x, in its default mode
(protocol 2026-07-28: no initialize, `subscriptions/listen`, multi-round-trip `tools/call`) or
in legacy mode (the initialize handshake and server-to-client elicitation).

    python client2.py --mode auto|legacy --plugins DIR --new-plugin versioned.wasm \
        [--token TOKEN] [--expiry-s N] stdio TOOLHOST_BIN [ARGS...]
    python client2.py ... http http://127.0.0.1:PORT/mcp

Exits non-zero with a message on the first failed check; prints one `ok: ...` line per check
and, last, `all N MCP checks passed (sdk2 MODE TRANSPORT)`.
"""

import argparse
import asyncio
import json
import os
import shutil
import time

import common
import mcp_types as types
from common import as_dict, check, server, text_of, ws
from mcp import Client, MCPError


def client(args, **kwargs):
    return Client(server(args.transport, args.target, args.token), mode=args.mode, **kwargs)


def add_custom_section(path):
    """Change a component's bytes (and so its SHA-256) without changing what it does: append a
    custom section, which is valid at the end of a component."""
    name = b"toolhost-test"
    payload = str(time.time()).encode()
    body = bytes([len(name)]) + name + payload
    with open(path, "rb") as f:
        data = f.read()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data + b"\x00" + bytes([len(body)]) + body)
    os.rename(tmp, path)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["auto", "legacy"], required=True)
    p.add_argument("--plugins", required=True)
    p.add_argument("--new-plugin", required=True)
    p.add_argument("--token")
    p.add_argument("--expiry-s", type=float, default=0)
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("target", nargs=argparse.REMAINDER)
    args = p.parse_args()
    modern = args.mode == "auto"
    label = f"sdk2 {args.mode} {args.transport}"

    legacy_changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            legacy_changed.set()

    async with client(args, message_handler=on_message) as c:
        want = "2026-07-28" if modern else "2025-11-25"
        check(c.protocol_version == want, f"negotiated protocol {want}", c.protocol_version)
        if c.server_info is not None or not modern:
            check(c.server_info.name == "toolhost", "the server is toolhost", c.server_info)
        caps = c.server_capabilities
        check(caps.tools is not None and caps.tools.list_changed, "tools capability with listChanged", caps)

        # The files plugin's skill, through the SDK's own resources API.
        skill_md = "skill://files/workspace-files/SKILL.md"
        check(caps.resources is not None and caps.resources.list_changed, "resources capability with listChanged", caps)
        uris = [str(r.uri) for r in (await c.list_resources()).resources]
        check(skill_md in uris, "resources/list has the files plugin's skill", uris)
        read = await c.read_resource(skill_md)
        check(
            read.contents[0].mime_type == "text/markdown"
            and read.contents[0].text.startswith("---\nname: workspace-files\n"),
            "resources/read returns the skill's SKILL.md as text",
            read.contents[0].mime_type,
        )

        # The plugins' own resources, templates, prompts and completion.
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        check("file:///{+path}" in templates, "resources/templates/list has the files plugin's template", templates)
        read = await c.read_resource("file:///keep.txt")
        check(read.contents[0].text == "keep me", "resources/read of a template's URI runs the files plugin", read.contents[0])
        check(caps.prompts is not None, "prompts capability", caps)
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        check(
            "summarise-file" in prompts and [a.name for a in prompts["summarise-file"].arguments] == ["path", "style"],
            "prompts/list has the text plugin's prompt and its arguments",
            sorted(prompts),
        )
        got = await c.get_prompt("summarise-file", {"path": "keep.txt"})
        check(
            "`keep.txt`" in got.messages[0].content.text and got.messages[1].content.type == "resource_link"
            and str(got.messages[1].content.uri) == "file:///keep.txt",
            "prompts/get returns the prompt's text and its resource link",
            got.messages,
        )
        done = await c.complete(types.ResourceTemplateReference(uri="file:///{+path}"), {"name": "path", "value": "ke"})
        check(done.completion.values == ["keep.txt"], "completion/complete completes the template's path", done.completion)

        listed = await c.list_tools(cache_mode="bypass")
        names = [t.name for t in listed.tools]
        check(names == sorted(names), "tools/list is in name order", names)
        again = await c.list_tools(cache_mode="bypass")
        check([t.name for t in again.tools] == names, "tools/list order is the same every time")
        tools = {t.name: t for t in listed.tools}
        for name in ["echo", "count_words", "split_task", "read", "delete"]:
            check(name in tools, f"tools/list has {name}", names)
        check(tools["delete"].annotations.destructive_hint is True, "delete is destructive")
        check(tools["read"].annotations.read_only_hint is True, "read is read-only")
        check(tools["echo"].annotations.destructive_hint is False, "echo is not destructive")
        check(
            as_dict(tools["count_words"].output_schema).get("required") == ["words", "lines", "chars"]
            and tools["echo"].output_schema is None,
            "count_words has the outputSchema its manifest declares; echo has none",
            tools["count_words"],
        )
        schema = tools["split_task"].input_schema
        check(
            schema["type"] == "object"
            and schema["properties"]["subtasks"]["type"] == "array"
            and schema["required"] == ["title", "subtasks"],
            "split_task inputSchema is the JSON Schema of its params",
            json.dumps(schema),
        )
        if modern:
            scope = "private" if args.token else "public"
            check(
                listed.ttl_ms == 10000 and listed.cache_scope == scope,
                f"tools/list carries ttlMs 10000 and cacheScope {scope}",
                listed,
            )

        r = await c.call_tool("echo", {"text": "hello, MCP"})
        check(not r.is_error and text_of(r) == "hello, MCP", "call echo succeeds", r)
        r = await c.call_tool(
            "split_task",
            {"title": "Launch", "subtasks": [{"title": "design", "days": 2}, {"title": "build", "days": 3}]},
        )
        check(not r.is_error and "design" in text_of(r), "call with a JSON argument succeeds", r)
        r = await c.call_tool("read", {"path": "no-such-file.txt"})
        check(r.is_error and "no-such-file.txt" in text_of(r), "a failing call is isError with the error text", r)
        r = await c.call_tool("echo", {})
        check(r.is_error and "needs the argument `text`" in text_of(r), "bad arguments are isError for the model", r)
        try:
            await c.call_tool("ech", {"text": "x"})
            check(False, "unknown tool is a protocol error")
        except MCPError as e:
            check("unknown tool `ech`" in str(e) and "echo" in str(e), "unknown tool is a protocol error naming close tools", e)

        r = await c.call_tool("delete", {"path": "keep.txt"})
        check(
            r.is_error and "does not support elicitation" in text_of(r) and "policy" in text_of(r),
            "dangerous call refused for a client without elicitation, saying how the operator can allow it",
            r,
        )
        check(os.path.exists(ws("keep.txt")), "the refused call did not run")

        results = await asyncio.gather(*[c.call_tool("count_words", {"text": f"one two three {i}"}) for i in range(8)])
        check(all(not r.is_error and '"words":4' in text_of(r) for r in results), "8 concurrent calls all answered correctly", results)
        check(
            results[0].structured_content is not None and results[0].structured_content["words"] == 4,
            "a tool's JSON object output is also structuredContent",
            results[0],
        )

        # Hot reload: a new plugin file reaches the client as list_changed, the way its revision
        # delivers it (a subscriptions/listen stream on 2026-07-28, a session notification before).
        if modern:
            async with c.listen(tools_list_changed=True, resources_list_changed=True) as sub:
                check(sub.honored.tools_list_changed is True, "subscriptions/listen honours toolsListChanged", sub.honored)
                check(
                    sub.honored.resources_list_changed is True,
                    "subscriptions/listen honours resourcesListChanged",
                    sub.honored,
                )
                await c.list_tools()  # warm the SDK's response cache: the event must evict it
                shutil.copy(args.new_plugin, os.path.join(args.plugins, ".new.tmp"))
                os.rename(os.path.join(args.plugins, ".new.tmp"), os.path.join(args.plugins, "versioned.wasm"))
                # A reload changes what may be read too: both events come, in either order.
                kinds = set()
                while not {"ToolsListChanged", "ResourcesListChanged"} <= kinds:
                    event = await asyncio.wait_for(sub.__anext__(), 30)
                    kinds.add(type(event).__name__)
                check(True, "tools and resources list_changed events on the listen stream")
        else:
            shutil.copy(args.new_plugin, os.path.join(args.plugins, ".new.tmp"))
            os.rename(os.path.join(args.plugins, ".new.tmp"), os.path.join(args.plugins, "versioned.wasm"))
            await asyncio.wait_for(legacy_changed.wait(), 30)
            check(True, "notifications/tools/list_changed received after a plugin file was added")
        names = {t.name for t in (await c.list_tools()).tools}
        check("which" in names and "nap" in names, "tools/list shows the new plugin's tools", sorted(names))
        r = await c.call_tool("which", {})
        check(not r.is_error and text_of(r) == "v1", "the new tool is called", r)
        started = time.monotonic()
        naps = await asyncio.gather(*[c.call_tool("nap", {"ms": 600}) for _ in range(4)])
        took = time.monotonic() - started
        check(all(text_of(r) == "slept 600 ms" for r in naps), "4 concurrent 600 ms calls answered", naps)
        check(took < 2.0, f"they ran concurrently ({took:.2f} s for 4 x 0.6 s)")

    # A client that supports elicitation is asked; its answer decides.
    asked = []
    answers = []

    async def elicit(context, params):
        asked.append(params.message)
        action, approve = answers.pop(0)
        return types.ElicitResult(action=action, content={"approve": approve} if action == "accept" else None)

    async with client(args, elicitation_callback=elicit) as c:
        answers.append(("accept", True))
        r = await c.call_tool("delete", {"path": "keep.txt"})
        check(not r.is_error, "dangerous call runs after the user approves", r)
        check(
            "delete" in asked[0] and "files" in asked[0] and "keep.txt" in asked[0],
            "the question names the tool, its plugin and its arguments",
            asked,
        )
        check(not os.path.exists(ws("keep.txt")), "the approved call ran")
        answers.append(("accept", False))
        r = await c.call_tool("delete", {"path": "other.txt"})
        check(r.is_error and "did not approve" in text_of(r), "accept without approve refuses the call", r)
        answers.append(("decline", None))
        r = await c.call_tool("delete", {"path": "other.txt"})
        check(r.is_error and "decline" in text_of(r), "a declined question refuses the call", r)
        answers.append(("cancel", None))
        r = await c.call_tool("delete", {"path": "other.txt"})
        check(r.is_error and "cancel" in text_of(r), "a cancelled question refuses the call", r)
        check(os.path.exists(ws("other.txt")), "the refused calls did not run")

        if modern:
            await mrtr_state_checks(c, args)

    print(f"all {common.checks} MCP checks passed ({label})")


async def mrtr_state_checks(c, args):
    """Drive the rounds by hand: what a client could send instead of the state it was given."""
    s = c.session
    accept = {"confirm": {"action": "accept", "content": {"approve": True}}}

    async def ask(path):
        r = await s.call_tool("delete", {"path": path}, allow_input_required=True)
        check(isinstance(r, types.InputRequiredResult), f"delete {path} answers InputRequiredResult", r)
        return r

    async def refused(path, state, responses, want, what):
        open(ws(path), "w").write("still here")
        try:
            r = await s.call_tool("delete", {"path": path}, input_responses=responses, request_state=state, allow_input_required=True)
            check(False, what, r)
        except MCPError as e:
            check(want in str(e), what, e)
        check(os.path.exists(ws(path)), f"{what}: nothing ran")

    first = await ask("a.txt")
    req = first.input_requests["confirm"]
    check(req.method == "elicitation/create" and "a.txt" in req.params.message, "the input request is a form elicitation naming the arguments", req)
    check(bool(first.request_state), "a requestState comes with it", first)

    state = first.request_state
    forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    await refused("a.txt", forged, accept, "not issued by this toolhost", "a forged requestState is refused")
    await refused("a.txt", "made-up", accept, "not issued by this toolhost", "a made-up requestState is refused")
    await refused("b.txt", state, accept, "other arguments", "a requestState replayed for other arguments is refused")
    await refused("a.txt", None, accept, "no requestState", "inputResponses without a requestState are refused")

    open(ws("a.txt"), "w").write("delete me")
    r = await s.call_tool("delete", {"path": "a.txt"}, input_responses=accept, request_state=state, allow_input_required=True)
    check(isinstance(r, types.CallToolResult) and not r.is_error, "the genuine state with accept runs the call", r)
    check(not os.path.exists(ws("a.txt")), "the approved call ran once")
    await refused("a.txt", state, accept, "already used", "the same state replayed is refused")

    # The plugin changes between the question and the answer.
    pending = await ask("c.txt")
    files = next(f for f in os.listdir(args.plugins) if f.startswith("files") and f.endswith(".wasm"))
    async with c.listen(tools_list_changed=True) as sub:
        add_custom_section(os.path.join(args.plugins, files))
        await asyncio.wait_for(sub.__anext__(), 30)
    await refused("c.txt", pending.request_state, accept, "changed since", "a requestState from before the plugin changed is refused")

    if args.expiry_s:
        late = await ask("d.txt")
        await asyncio.sleep(args.expiry_s + 0.5)
        await refused("d.txt", late.request_state, accept, "expired", "an expired requestState is refused")


if __name__ == "__main__":
    asyncio.run(main())

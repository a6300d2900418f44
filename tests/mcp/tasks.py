"""MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) and an HTTP client that
goes away (#29), with a raw JSON-RPC client that follows the 2026-07-28 specification: no
official SDK speaks the tasks extension yet (the Python SDK 1.x has the 2025-11-25 experimental
tasks, tested by `tasks2025.py`; 2.x has none).

    python tasks.py stdio TOOLHOST_BIN [ARGS...]        # tasks, caps, ownership, shutdown
    python tasks.py http-disconnect http://HOST:PORT/mcp # a dropped request stops its call

Run in the server's workspace (trail files are read from the current directory); the stdio
server must be configured with `[mcp] tasks_max_running = 3`, `tasks_max_running_per_client =
2` and a short `[serve] shutdown_grace_ms`. Prints one `ok: ...` line per check and
`MCP task checks passed (MODE)`.
"""

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from common import check, size
from common import wait_until_blocking as wait_until


TASKS = "io.modelcontextprotocol/tasks"


def meta(client="raw-a", tasks=True):
    caps = {"extensions": {TASKS: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }


class Stdio:
    """A 2026-07-28 client over the server's stdin/stdout: one JSON-RPC message per line."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def request(self, method, params, client="raw-a", tasks=True, timeout=60):
        self.next_id += 1
        rid = self.next_id
        params = dict(params, _meta=meta(client, tasks))
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        until = time.monotonic() + timeout
        while True:
            msg = self.lines.get(timeout=max(0.01, until - time.monotonic()))
            if msg is None:
                check(False, f"{method}: the server closed stdout", "".join(self.stderr))
            if msg.get("id") == rid:
                return msg

    def result(self, method, params, **kw):
        msg = self.request(method, params, **kw)
        check("result" in msg, f"{method} succeeds", msg)
        return msg["result"]

    def error(self, method, params, **kw):
        msg = self.request(method, params, **kw)
        check("error" in msg, f"{method} is refused", msg)
        return msg["error"]


def tick(n, ms, trail=""):
    return {"name": "tick", "arguments": {"n": n, "ms": ms, "trail": trail}}


def poll(c, task_id, until_status, client="raw-a", secs=30):
    until = time.monotonic() + secs
    while True:
        r = c.result("tasks/get", {"taskId": task_id}, client=client)
        if r["status"] in until_status or time.monotonic() > until:
            return r
        time.sleep(0.05)


def stdio_checks(argv):
    c = Stdio(argv)
    tools = {t["name"]: t for t in c.result("tools/list", {})["tools"]}
    check(tools["tick"]["_meta"]["toolhost/taskSupport"] == "optional", "tick may run as a task", tools["tick"])
    check(tools["chore"]["_meta"]["toolhost/taskSupport"] == "required", "chore runs only as a task")

    # A client that does not declare the extension gets a plain result, or a clear refusal.
    r = c.result("tools/call", tick(2, 0), tasks=False)
    check(r.get("resultType", "complete") == "complete" and r["content"][0]["text"] == "counted to 2",
          "without the tasks extension: a plain result", r)
    e = c.error("tools/call", {"name": "chore", "arguments": {"n": 1, "ms": 0}}, tasks=False)
    check(e["code"] == -32021 and TASKS in json.dumps(e), "a task-only tool asks for the extension (-32021)", e)

    # A task: its id at once, progress while it runs, then the result.
    r = c.result("tools/call", tick(30, 20))
    check(r.get("resultType") == "task" and r["status"] == "working" and r["taskId"], "tools/call answers with a task", r)
    check(r.get("pollIntervalMs", 0) > 0 and r.get("ttlMs", 0) >= 120000, "the task says how to poll and how long it lives", r)
    task = r["taskId"]
    wait_until(30, "progress shows in tasks/get",
               lambda: c.result("tasks/get", {"taskId": task}).get("_meta", {}).get("toolhost/progress", {}).get("done", 0) > 0)
    g = c.result("tasks/get", {"taskId": task})
    if g["status"] == "working":
        check("of 30" in g.get("statusMessage", ""), "the status message is the latest progress", g)
    g = poll(c, task, {"completed", "failed", "cancelled"})
    check(g["status"] == "completed" and g["result"]["content"][0]["text"] == "counted to 30",
          "the task completes with the call's result", g)
    check(g["resultType"] == "complete", "tasks/get is a complete result", g)
    e = c.error("tasks/get", {"taskId": task}, client="raw-b")
    check("unknown task" in e["message"], "another client cannot see the task", e)
    e = c.error("tasks/get", {"taskId": "no-such-task"})
    check("unknown task" in e["message"], "an unknown task id is refused", e)

    # tasks/cancel stops the work: the trail stops growing, the task ends cancelled.
    r = c.result("tools/call", tick(100000000, 10, "task-trail.txt"))
    task = r["taskId"]
    wait_until(30, "the task's trail grows", lambda: size("task-trail.txt") >= 3)
    ack = c.result("tasks/cancel", {"taskId": task})
    check(ack.get("resultType", "complete") == "complete", "tasks/cancel is acknowledged", ack)
    g = poll(c, task, {"cancelled", "completed", "failed"})
    check(g["status"] == "cancelled" and "tasks/cancel" in g.get("statusMessage", ""), "the task ends cancelled", g)
    before = size("task-trail.txt")
    time.sleep(0.4)
    check(before > 0 and size("task-trail.txt") == before, "the cancelled task's trail stops growing")

    # Caps: two running tasks per client, three in all.
    mine = [c.result("tools/call", tick(100000000, 50))["taskId"] for _ in range(2)]
    e = c.error("tools/call", tick(1, 0))
    check("tasks_max_running_per_client = 2" in e["message"], "a third task of one client is refused, naming the cap", e)
    other = c.result("tools/call", tick(100000000, 50), client="raw-b")["taskId"]
    e = c.error("tools/call", tick(1, 0), client="raw-c")
    check("tasks_max_running = 3" in e["message"], "a fourth task in all is refused, naming the cap", e)
    e = c.error("tasks/cancel", {"taskId": other})
    check("unknown task" in e["message"], "a client cannot cancel another's task", e)
    for t in mine:
        c.result("tasks/cancel", {"taskId": t})
    for t in mine:
        check(poll(c, t, {"cancelled"})["status"] == "cancelled", "a capped client's task is cancelled")
    r = c.result("tools/call", {"name": "chore", "arguments": {"n": 2, "ms": 0}})
    check(r.get("resultType") == "task", "with room again, a task starts", r)
    # It ends at once (n = 2, no wait), but on a loaded machine maybe after a SIGTERM sent now:
    # then the shutdown would cancel it too. Only raw-b's long task is to be still running.
    check(poll(c, r["taskId"], {"completed", "failed", "cancelled"})["status"] == "completed",
          "the quick task completes", r)

    # A shutdown ends the task still running as cancelled, and says so.
    c.proc.send_signal(signal.SIGTERM)
    code = c.proc.wait(timeout=30)
    time.sleep(0.2)
    err = "".join(c.stderr)
    check(code == 0, "the server exits 0 after SIGTERM", err)
    check("1 MCP task ended cancelled by the shutdown" in err, "the shutdown reports the task it cancelled", err)


def http_disconnect(url):
    u = urllib.parse.urlparse(url)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": dict(tick(100000000, 10, "http-trail.txt"), _meta=meta(tasks=False))}).encode()
    head = (f"POST {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: tick\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(head + body)
    wait_until(30, "the trail grows while the request is open", lambda: size("http-trail.txt") >= 3)
    s.close()
    time.sleep(0.3)
    before = size("http-trail.txt")
    time.sleep(0.4)
    check(before > 0 and size("http-trail.txt") == before, "a client that goes away stops its call (the trail stops)")


def main():
    mode, target = sys.argv[1], sys.argv[2:]
    if mode == "stdio":
        stdio_checks(target)
    else:
        http_disconnect(target[0])
    print(f"MCP task checks passed ({mode})")


main()

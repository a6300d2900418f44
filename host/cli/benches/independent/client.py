#!/usr/bin/env python3
"""An MCP client that shares no code with toolhost: Python's standard library only.

Issue #57 measured `toolhost serve --mcp` with an independent client, client and server pinned to
one CPU, against a do-nothing server measured the same way. The benchmark (host/cli/benches/
independent/rows.rs) runs this script once per server process:

    client.py stdio CALLS WARMUP -- COMMAND...     # the server on this process's stdin/stdout
    client.py http CALLS WARMUP stdout|stderr -- COMMAND...
                                                   # the server prints its http://…/mcp URL there
    client.py http-stateless CALLS WARMUP stdout|stderr -- COMMAND...
                                                   # the same, 2026-07-28 stateless calls

It pins itself to CPU 0 (the server it starts inherits that), opens a 2025-06-18 session (or, for
`http-stateless`, none: each call carries the 2026-07-28 headers and `_meta`), makes
WARMUP then CALLS sequential `tools/call`s of `echo`, checks every answer, and prints one JSON
line: {"p50_us": …, "p99_us": …, "calls": CALLS}.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "independent-bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(i, stateless=False):
    params = {"name": "echo", "arguments": {"text": "hello"}}
    if stateless:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "independent-bench", "version": "0"},
        }
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


def check(answer, i):
    """An answer is the response to request `i`, and not an error."""
    if answer.get("id") != i or "result" not in answer:
        raise SystemExit(f"request {i}: unexpected answer {answer!r}")


def percentiles(samples):
    samples.sort()
    at = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
    return at(0.50) / 1e3, at(0.99) / 1e3


def over_stdio(command, calls, warmup):
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out, answers = server.stdin, server.stdout

    def ask(message, wait):
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()
        if wait:
            line = answers.readline()
            if not line:
                raise SystemExit("the server closed its stdout")
            return json.loads(line)

    try:
        ask(INITIALIZE, True)
        ask(INITIALIZED, False)
        samples = []
        for i in range(1, warmup + calls + 1):
            message = call(i)
            start = time.perf_counter_ns()
            answer = ask(message, True)
            elapsed = time.perf_counter_ns() - start
            check(answer, i)
            if i > warmup:
                samples.append(elapsed)
        return samples
    finally:
        server.kill()
        server.wait()


def over_http(command, calls, warmup, url_on, stateless):
    where = subprocess.PIPE
    server = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=where if url_on == "stdout" else subprocess.DEVNULL,
        stderr=where if url_on == "stderr" else subprocess.DEVNULL,
    )
    try:
        stream = server.stdout if url_on == "stdout" else server.stderr
        url = None
        for line in stream:
            words = (w.rstrip(",.") for w in line.decode(errors="replace").split())
            url = next((w for w in words if w.startswith("http://") and w.endswith("/mcp")), None)
            if url:
                break
        if url is None:
            raise SystemExit("the server exited before printing its URL")
        # Keep reading the stream: a full pipe would stall the server, not measure it.
        threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
        return http_calls(urllib.parse.urlsplit(url), calls, warmup, stateless)
    finally:
        server.kill()
        server.wait()


def http_calls(url, calls, warmup, stateless):
    conn = http.client.HTTPConnection(url.hostname, url.port)
    conn.connect()
    # One small request per call: without TCP_NODELAY, Nagle's algorithm holds it.
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }

    def post(message):
        conn.request("POST", url.path, body=json.dumps(message).encode(), headers=headers)
        response = conn.getresponse()
        body = response.read()
        return response, body

    if stateless:
        headers.update({"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo"})
    else:
        response, _ = post(INITIALIZE)
        session = response.getheader("mcp-session-id")
        if session:
            headers["mcp-session-id"] = session
        post(INITIALIZED)
    samples = []
    for i in range(1, warmup + calls + 1):
        message = call(i, stateless)
        start = time.perf_counter_ns()
        response, body = post(message)
        elapsed = time.perf_counter_ns() - start
        if response.status != 200:
            raise SystemExit(f"request {i}: HTTP {response.status}: {body[:200]!r}")
        check(json.loads(body), i)
        if i > warmup:
            samples.append(elapsed)
    conn.close()
    return samples


def main(argv):
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1 :]
    transport, calls, warmup = head[0], int(head[1]), int(head[2])
    if hasattr(os, "sched_setaffinity") and os.environ.get("INDEPENDENT_UNPINNED") is None:
        os.sched_setaffinity(0, {0})
    if transport == "stdio":
        samples = over_stdio(command, calls, warmup)
    elif transport in ("http", "http-stateless"):
        samples = over_http(command, calls, warmup, head[3], transport == "http-stateless")
    else:
        raise SystemExit(f"unknown transport {transport!r}: stdio, http or http-stateless")
    p50, p99 = percentiles(samples)
    print(json.dumps({"p50_us": p50, "p99_us": p99, "calls": len(samples)}))


if __name__ == "__main__":
    main(sys.argv[1:])

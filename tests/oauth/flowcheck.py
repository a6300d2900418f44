"""A check of tests/mcp/oauth_flow.py by hand, outside the suite, before toolhost speaks OAuth:
the authorization server (tests/oauth/server.mjs), a stand-in MCP resource server (the MCP
Python SDK's own FastMCP, its JWTs checked with PyJWT against the server's JWKS: audience,
issuer, signature, scope `mcp:tools`) and oauth_flow.py against them, as alice and as bob.

    PY=target/pyenv/bin/python   # the venv `cargo xtask test` makes (mcp==1.30.0 and PyJWT)
    $PY tests/oauth/flowcheck.py

Prints oauth_flow.py's JSON line per run, then `N passed, N failed`.
"""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
passed, failed = 0, 0


def check(what, ok, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {detail}"))


def resource_server(issuer, port):
    """The stand-in: FastMCP on 127.0.0.1:port/mcp, protected by `issuer`'s JWTs; its one tool
    `whoami` answers `GREETING SUB GROUPS` from the token it was called with."""
    import urllib.request

    import jwt
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.fastmcp import FastMCP

    resource = f"http://127.0.0.1:{port}/mcp"
    with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration") as r:
        keys = jwt.PyJWKClient(json.load(r)["jwks_uri"])

    class Verifier:
        async def verify_token(self, token):
            try:
                key = keys.get_signing_key_from_jwt(token).key
                c = jwt.decode(token, key, algorithms=["ES256", "RS256"], audience=resource, issuer=issuer)
            except jwt.PyJWTError as e:
                print(f"refused a token: {e}", file=sys.stderr)
                return None
            return AccessToken(token=token, client_id=c["client_id"], scopes=c.get("scope", "").split(),
                               expires_at=c["exp"], resource=resource, subject=c["sub"], claims=c)

    auth = AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=["mcp:tools"],
                        validate_token_resource=True)
    mcp = FastMCP("stand-in", host="127.0.0.1", port=port, token_verifier=Verifier(), auth=auth)

    @mcp.tool()
    def whoami(greeting: str = "hello") -> str:
        token = get_access_token()
        return f"{greeting} {token.subject} {','.join(token.claims.get('groups', []))}"

    mcp.run(transport="streamable-http")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"the stand-in resource server did not listen on 127.0.0.1:{port}")


def flow(mcp_url, issuer, *args):
    """oauth_flow.py's exit code, its JSON line (or None) and its stderr."""
    run = subprocess.run([sys.executable, str(ROOT / "tests/mcp/oauth_flow.py"), mcp_url, issuer, *args],
                         capture_output=True, text=True, timeout=120)
    out = json.loads(run.stdout) if run.returncode == 0 else None
    print("    ", run.stdout.strip() or run.stderr.strip().splitlines()[-1])
    return run.returncode, out, run.stderr


def main():
    if sys.argv[1:2] == ["--resource-server"]:
        return resource_server(sys.argv[2], int(sys.argv[3]))
    auth = subprocess.Popen(["node", str(ROOT / "tests/oauth/server.mjs"), "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    issuer = auth.stdout.readline().split()[1]
    port = free_port()
    rs = subprocess.Popen([sys.executable, __file__, "--resource-server", issuer, str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        code, out, err = flow(url, issuer, "whoami", '{"greeting": "hi"}')
        check("alice: the flow ends in a tool call", code == 0, err[-2000:])
        if out:
            claims = out["claims"]
            check("alice: her token names her, her group, the resource and the issuer",
                  claims["sub"] == "alice" and claims["groups"] == ["ops"] and claims["aud"] == url
                  and claims["iss"] == issuer and out["scope"] == "mcp:tools", claims)
            check("alice: tools listed, the call answered", out["tools"] == ["whoami"]
                  and out["result"]["text"] == "hi alice ops", out)
        code, out, err = flow(url, issuer, "whoami", "--login", "bob")
        check("bob: in group users", code == 0 and out["result"]["text"] == "hello bob users", err[-2000:])
        code, _, err = flow(url, "http://127.0.0.1:1", "whoami")
        check("another issuer than the resource names: refused", code != 0 and "not at http://127.0.0.1:1" in err, err[-500:])
    finally:
        rs.kill()
        auth.kill()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

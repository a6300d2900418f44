"""A check of tests/oauth/server.mjs by hand, outside the suite: starts it, asks it for tokens
the ways the integration tests will, and checks what comes back.

    python3 tests/oauth/selfcheck.py

Needs node and oidc-provider (`cargo xtask test` installs it into target/oauth-server, or set
TOOLHOST_TEST_OIDC_PROVIDER); python3's standard library only. JWT signatures are checked with
node's crypto against the server's JWKS. Prints one line per check and `N passed, N failed`.
"""

import base64
import hashlib
import json
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET = {
    "toolhost-test": "toolhost-test-secret-0123456789",
    "toolhost-short": "toolhost-short-secret-0123456789",
    "toolhost-rs256": "toolhost-rs256-secret-0123456789",
    "toolhost-opaque": "toolhost-opaque-secret-0123456789",
    "toolhost-introspector": "toolhost-introspector-secret-0123456789",
    "toolhost-introspector-post": "toolhost-introspector-secret-0123456789",
}
RESOURCE = "http://127.0.0.1:9999/mcp"
CONSOLE_REDIRECT = "http://127.0.0.1:8765/console/callback"

passed, failed = 0, 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def start_server():
    """The server on a free port, its stdin kept open (it exits when that closes); its issuer."""
    proc = subprocess.Popen(
        ["node", str(HERE / "server.mjs"), "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("listening "):
        sys.exit(f"server.mjs did not start: {line!r}\n{proc.stderr.read()}")
    return proc, line.removeprefix("listening ")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are followed by hand, so the one to the client's redirect_uri can be taken."""

    def redirect_request(self, *args, **kwargs):
        return None


def opener(jar=None):
    handlers = [NoRedirect()]
    if jar is not None:
        handlers.append(urllib.request.HTTPCookieProcessor(jar))
    return urllib.request.build_opener(*handlers)


def fetch(url, form=None, headers=None, jar=None, body=None):
    """(status, headers, body text) of a GET, or of a POST of `form` (or of raw `body`)."""
    data = body if body is not None else (urllib.parse.urlencode(form).encode() if form is not None else None)
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener(jar).open(req) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def fetch_json(url, form=None, headers=None, body=None):
    status, _, text = fetch(url, form, headers, body=body)
    return status, json.loads(text) if text else None


def basic(client):
    raw = f"{urllib.parse.quote(client)}:{urllib.parse.quote(SECRET[client])}".encode()
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


def token(issuer, client, resource=RESOURCE, scope="mcp:tools"):
    form = {"grant_type": "client_credentials", "client_id": client, "client_secret": SECRET[client],
            "resource": resource, "scope": scope}
    status, body = fetch_json(f"{issuer}/token", form)
    assert status == 200, (status, body)
    return body["access_token"]


def b64json(part):
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def decode(jwt):
    header, payload, _ = jwt.split(".")
    return b64json(header), b64json(payload)


VERIFY_JS = r"""
const crypto = require('node:crypto');
const [jwt, jwksText] = process.argv.slice(1);
const [h, p, s] = jwt.split('.');
const header = JSON.parse(Buffer.from(h, 'base64url'));
const jwk = JSON.parse(jwksText).keys.find((k) => k.kid === header.kid);
if (!jwk) { console.log('no key'); process.exit(0); }
const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
const options = header.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key;
console.log(crypto.verify('sha256', Buffer.from(`${h}.${p}`), options, Buffer.from(s, 'base64url')) ? 'valid' : 'invalid');
"""


def verify(jwt, jwks):
    """'valid', 'invalid' or 'no key': the JWT's signature against the JWKS, by node's crypto."""
    out = subprocess.run(["node", "-e", VERIFY_JS, jwt, json.dumps(jwks)], capture_output=True, text=True)
    return out.stdout.strip() or out.stderr


def introspect(issuer, token, client="toolhost-introspector"):
    if client == "toolhost-introspector":
        return fetch_json(f"{issuer}/token/introspection", {"token": token}, basic(client))[1]
    form = {"token": token, "client_id": client, "client_secret": SECRET[client]}
    return fetch_json(f"{issuer}/token/introspection", form)[1]


def check_discovery(issuer):
    _, d = fetch_json(f"{issuer}/.well-known/openid-configuration")
    for field in ["jwks_uri", "registration_endpoint", "introspection_endpoint", "revocation_endpoint",
                  "token_endpoint", "authorization_endpoint"]:
        check(f"discovery lists {field}", field in d, d)
    check("discovery: issuer is the URL printed", d["issuer"] == issuer, d["issuer"])
    check("discovery: PKCE S256", d.get("code_challenge_methods_supported") == ["S256"], d)
    _, rfc8414 = fetch_json(f"{issuer}/.well-known/oauth-authorization-server")
    check("RFC 8414 metadata is the same document", rfc8414 == d)
    return d


def check_jwt(issuer, jwks):
    jwt = token(issuer, "toolhost-test")
    header, claims = decode(jwt)
    print("     decoded header:", json.dumps(header))
    print("     decoded claims:", json.dumps(claims))
    check("JWT header: alg ES256, typ at+jwt, a kid", header.get("alg") == "ES256"
          and header.get("typ") == "at+jwt" and header.get("kid", "").startswith("es256-"), header)
    want = {"aud": RESOURCE, "iss": issuer, "scope": "mcp:tools", "client_id": "toolhost-test",
            "sub": "toolhost-test"}
    check("JWT claims aud, iss, scope, client_id, sub", all(claims.get(k) == v for k, v in want.items()), claims)
    check("JWT claims jti, iat, exp; lives 600 s",
          "jti" in claims and claims["exp"] - claims["iat"] == 600, claims)
    check("JWT signature verifies against the JWKS", verify(jwt, jwks) == "valid", verify(jwt, jwks))
    both = decode(token(issuer, "toolhost-test", scope="mcp:tools mcp:admin mcp:unknown"))[1]
    check("unknown scopes are dropped, known ones granted", both["scope"] == "mcp:tools mcp:admin", both)


def check_short_and_rs256(issuer, jwks):
    claims = decode(token(issuer, "toolhost-short"))[1]
    check("toolhost-short: exp - iat == 2", claims["exp"] - claims["iat"] == 2, claims)
    jwt = token(issuer, "toolhost-rs256")
    header = decode(jwt)[0]
    check("toolhost-rs256: alg RS256, its kid", header["alg"] == "RS256" and header["kid"].startswith("rs256-"),
          header)
    check("toolhost-rs256: signature verifies", verify(jwt, jwks) == "valid")


def check_opaque(issuer):
    opaque = token(issuer, "toolhost-test", resource="urn:toolhost:opaque")
    check("urn:toolhost:opaque gives an opaque token", opaque.count(".") == 0, opaque)
    active = introspect(issuer, opaque)
    print("     introspection:", json.dumps(active))
    check("introspection (basic auth): active, aud, client_id, scope",
          active.get("active") is True and active.get("aud") == "urn:toolhost:opaque"
          and active.get("client_id") == "toolhost-test" and active.get("scope") == "mcp:tools", active)
    check("introspection (client_secret_post): active",
          introspect(issuer, opaque, "toolhost-introspector-post").get("active") is True)
    check("another client may not introspect it", introspect(issuer, opaque, "toolhost-opaque") == {"active": False})
    form = {"token": opaque, "client_id": "toolhost-test", "client_secret": SECRET["toolhost-test"]}
    status, _, _ = fetch(f"{issuer}/token/revocation", form)
    check("revocation answers 200", status == 200, status)
    check("after revocation: inactive", introspect(issuer, opaque) == {"active": False})
    per_client = token(issuer, "toolhost-opaque")
    got = introspect(issuer, per_client)
    check("toolhost-opaque: opaque for a loopback resource, aud the resource",
          per_client.count(".") == 0 and got.get("active") and got.get("aud") == RESOURCE, got)


def check_errors(issuer):
    form = {"grant_type": "client_credentials", "client_id": "toolhost-test", "client_secret": "wrong",
            "resource": RESOURCE}
    status, body = fetch_json(f"{issuer}/token", form)
    check("a wrong secret: 401 invalid_client", status == 401 and body["error"] == "invalid_client", body)
    form = {**form, "client_secret": SECRET["toolhost-test"], "resource": "https://elsewhere.example/mcp"}
    status, body = fetch_json(f"{issuer}/token", form)
    check("a foreign resource: 400 invalid_target", status == 400 and body["error"] == "invalid_target", body)


def check_rotation(issuer, jwks_uri):
    before = token(issuer, "toolhost-test")
    old = decode(before)[0]["kid"]
    status, rotated = fetch_json(f"{issuer}/test/rotate", body=b"")
    kids = [k["kid"] for k in fetch_json(jwks_uri)[1]["keys"]]
    check("rotate: a new kid, the old one gone from the JWKS",
          status == 200 and rotated["previous"] == old and rotated["kid"] in kids and old not in kids,
          (status, rotated, kids))
    after = token(issuer, "toolhost-test")
    check("rotate: new tokens carry the new kid and verify",
          decode(after)[0]["kid"] == rotated["kid"] and verify(after, fetch_json(jwks_uri)[1]) == "valid")
    check("rotate: an old token's key is no longer published",
          verify(before, fetch_json(jwks_uri)[1]) == "no key")
    status, kept = fetch_json(f"{issuer}/test/rotate?keep=1", body=b"")
    kids = [k["kid"] for k in fetch_json(jwks_uri)[1]["keys"]]
    check("rotate?keep=1: both the new and the previous key published",
          status == 200 and kept["kid"] in kids and kept["previous"] in kids, kids)


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def form_action(html, base):
    found = re.search(r'<form[^>]*action="([^"]+)"', html)
    assert found, f"no form in {html[:500]}"
    return urllib.parse.urljoin(base, found.group(1))


def authorize(authorize_url, redirect_uri, login):
    """Drive the development login and consent pages like a browser would, up to the redirect to
    `redirect_uri`; its query parameters."""
    jar = CookieJar()
    url, form = authorize_url, None
    for _ in range(20):
        status, headers, body = fetch(url, form, jar=jar)
        form = None
        if status in (302, 303):
            url = urllib.parse.urljoin(url, headers["Location"])
            if url.startswith(redirect_uri):
                return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
            continue
        assert status == 200, (status, body[:500])
        if 'name="prompt" value="login"' in body:
            url, form = form_action(body, url), {"prompt": "login", "login": login, "password": "any"}
        elif 'name="prompt" value="consent"' in body:
            url, form = form_action(body, url), {"prompt": "consent"}
        else:
            raise AssertionError(f"a page with neither login nor consent: {body[:500]}")
    raise AssertionError("too many redirects")


def check_authorization_code(issuer, discovery, jwks):
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(8)
    params = {"response_type": "code", "client_id": "toolhost-console", "redirect_uri": CONSOLE_REDIRECT,
              "scope": "mcp:tools", "resource": RESOURCE, "code_challenge": challenge,
              "code_challenge_method": "S256", "state": state}
    got = authorize(discovery["authorization_endpoint"] + "?" + urllib.parse.urlencode(params),
                    CONSOLE_REDIRECT, "alice")
    check("authorization code: a code and our state back", "code" in got and got.get("state") == state, got)
    form = {"grant_type": "authorization_code", "client_id": "toolhost-console", "code": got["code"],
            "redirect_uri": CONSOLE_REDIRECT, "code_verifier": verifier, "resource": RESOURCE}
    status, body = fetch_json(discovery["token_endpoint"], form)
    check("authorization code: exchanged for a token", status == 200, body)
    header, claims = decode(body["access_token"])
    print("     user token claims:", json.dumps(claims))
    check("user token: sub alice, groups [ops], aud, scope, client_id",
          claims.get("sub") == "alice" and claims.get("groups") == ["ops"] and claims.get("aud") == RESOURCE
          and claims.get("scope") == "mcp:tools" and claims.get("client_id") == "toolhost-console", claims)
    check("user token verifies", verify(body["access_token"], jwks) == "valid")
    params.pop("code_challenge")
    params.pop("code_challenge_method")
    status, headers, _ = fetch(discovery["authorization_endpoint"] + "?" + urllib.parse.urlencode(params))
    where = urllib.parse.parse_qs(urllib.parse.urlsplit(headers.get("Location", "")).query)
    check("authorization without PKCE is refused", where.get("error") == ["invalid_request"], (status, where))


def check_registration(issuer, discovery):
    metadata = {"redirect_uris": ["http://127.0.0.1:33418/callback"], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "client_name": "selfcheck", "scope": "mcp:tools"}
    status, body = fetch_json(discovery["registration_endpoint"], body=json.dumps(metadata).encode(),
                              headers={"Content-Type": "application/json"})
    check("dynamic client registration (with an MCP scope, as the MCP SDK does): 201 and a client_id", status == 201 and "client_id" in body, body)


def main():
    proc, issuer = start_server()
    try:
        print("started:", f"listening {issuer}")
        discovery = check_discovery(issuer)
        jwks = fetch_json(discovery["jwks_uri"])[1]
        check_jwt(issuer, jwks)
        check_short_and_rs256(issuer, jwks)
        check_opaque(issuer)
        check_errors(issuer)
        check_authorization_code(issuer, discovery, jwks)
        check_registration(issuer, discovery)
        check_rotation(issuer, discovery["jwks_uri"])
        proc.stdin.close()
        exited = proc.wait(timeout=5)
        check("closing its stdin stops the server", exited == 0, exited)
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

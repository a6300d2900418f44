"""An MCP client that authorizes itself the way the official MCP Python SDK 1.x does (#60), then
lists the tools and calls one:

    python tests/mcp/oauth_flow.py MCP_URL ISSUER TOOL [ARGUMENTS_JSON] [--login NAME]

The SDK's `OAuthClientProvider` runs the whole OAuth 2.1 flow of the MCP specification: the
server's 401, its protected resource metadata (RFC 9728), the authorization server's metadata,
dynamic client registration (RFC 7591), the authorization code with PKCE and the `resource`
parameter (RFC 8707), the token. Only the browser is played here, headlessly: the SDK's redirect
handler drives the authorization server's own login and consent pages (oidc-provider's
development interactions, run by tests/oauth/server.mjs) with httpx, signed in as NAME (alice
unless told), and the code and state of the final redirect go to the SDK's callback handler.

Prints one JSON line: the issuer the SDK was sent to, the client it registered, the scope and
claims of its access token, the tools listed and the call's result. Exits non-zero, saying what
went wrong, if any step fails (also if the SDK was sent to another issuer than ISSUER).
"""

import argparse
import asyncio
import base64
import json
import re
import sys
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

# Never contacted: the headless browser stops at the redirect to it and takes the code.
REDIRECT_URI = "http://127.0.0.1:8766/oauth/callback"


class MemoryStorage:
    """The SDK's TokenStorage, kept for this one run."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def form_action(html, page_url):
    """The absolute URL a page's (only) form posts to."""
    found = re.search(r'<form[^>]*action="([^"]+)"', html)
    if not found:
        raise RuntimeError(f"no form on the page at {page_url}: {html[:300]}")
    return urljoin(page_url, found.group(1).replace("&amp;", "&"))


def page_prompt(html):
    """Which development interaction a page is: 'login', 'consent', or None."""
    found = re.search(r'name="prompt" value="(\w+)"', html)
    return found.group(1) if found else None


async def authorize(authorize_url, redirect_uri, login):
    """What a user's browser does between the authorization request and the redirect back to
    the client: follow the redirects, sign in as `login` (any password does on the development
    pages), consent, until the redirect to `redirect_uri`; that redirect's query parameters
    (`code`, `state`, `iss`; or `error`)."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        url, form = authorize_url, None
        for _ in range(20):
            response = await (browser.post(url, data=form) if form else browser.get(url))
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                form = None
                if url.startswith(redirect_uri):
                    return dict(parse_qsl(urlsplit(url).query))
                continue
            if response.status_code != 200:
                raise RuntimeError(f"the authorization server answered {response.status_code} at {url}: "
                                   f"{response.text[:500]}")
            prompt = page_prompt(response.text)
            if prompt == "login":
                form = {"prompt": "login", "login": login, "password": "any"}
            elif prompt == "consent":
                form = {"prompt": "consent"}
            else:
                raise RuntimeError(f"a page that is neither the login nor the consent page at {url}: "
                                   f"{response.text[:500]}")
            url = form_action(response.text, url)
        raise RuntimeError(f"more than 20 steps from {authorize_url} without reaching {redirect_uri}")


class HeadlessBrowser:
    """The SDK's redirect and callback handlers: the redirect handler runs `authorize`, the
    callback handler hands over its code and state."""

    def __init__(self, login, issuer, redirect_uri=REDIRECT_URI):
        self.login = login
        self.issuer = issuer.rstrip("/")
        self.redirect_uri = redirect_uri
        self.answer = None

    async def redirect_handler(self, authorization_url):
        # Before anyone signs in: the server must have sent the SDK to the issuer under test.
        if not authorization_url.startswith(self.issuer + "/"):
            raise RuntimeError(f"the SDK was sent to authorize at {authorization_url}, not at {self.issuer}")
        self.answer = await authorize(authorization_url, self.redirect_uri, self.login)

    async def callback_handler(self):
        if not self.answer or "code" not in self.answer:
            raise RuntimeError(f"the authorization server sent no code back: {self.answer}")
        return self.answer["code"], self.answer.get("state")


def jwt_claims(token):
    """The claims of a JWT access token (not verified: the server under test did that), or None
    for an opaque one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    return json.loads(base64.urlsafe_b64decode(payload))


def oauth_provider(mcp_url, browser):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    # A public client (no secret, PKCE), the common shape of an MCP client; the scope is left
    # to the SDK (the 401's scope, or the protected resource metadata's scopes_supported).
    metadata = OAuthClientMetadata(
        client_name="toolhost oauth_flow.py",
        redirect_uris=[browser.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=MemoryStorage(),
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
        timeout=60,
    )


def result_of(result):
    return {
        "isError": bool(result.isError),
        "text": "".join(c.text for c in result.content if getattr(c, "type", "") == "text"),
        "structured": result.structuredContent,
    }


async def run(mcp_url, issuer, tool, arguments, login):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    browser = HeadlessBrowser(login, issuer)
    provider = oauth_provider(mcp_url, browser)
    async with httpx.AsyncClient(auth=provider, timeout=httpx.Timeout(30, read=300)) as http:
        async with streamable_http_client(mcp_url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool(tool, arguments)
    context = provider.context
    token = context.current_tokens
    return {
        "issuer": issuer,
        "client_id": context.client_info.client_id,
        "resource": context.get_resource_url(),
        "scope": token.scope,
        "claims": jwt_claims(token.access_token),
        "tools": [t.name for t in tools.tools],
        "result": result_of(result),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mcp_url")
    parser.add_argument("issuer")
    parser.add_argument("tool")
    parser.add_argument("arguments", nargs="?", default="{}", help="the tool's arguments, a JSON object")
    parser.add_argument("--login", default="alice", help="the user who signs in (default alice)")
    args = parser.parse_args()
    try:
        out = asyncio.run(run(args.mcp_url, args.issuer, args.tool, json.loads(args.arguments), args.login))
    except Exception as e:  # noqa: BLE001 - the one line a test reads says what failed
        # An exception group (anyio's task groups) says more in its leaves.
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"oauth_flow.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

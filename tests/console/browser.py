"""The web console in a real browser: Debian's Chromium driven by Playwright.

Run by tests/all/console.rs against a `toolhost serve --http` it started, as
`python browser.py SCENARIO`, with the environment telling where things are:

  CONSOLE_URL   the console (http://127.0.0.1:PORT/)
  LOGIN_URL     without [mcp] tokens, the login link toolhost printed (main)
  CHROMIUM      the system Chromium (no browser is ever downloaded)
  AXE_JS        axe-core's axe.min.js (npm, pinned, under target/)
  SHOTS         folder for the screenshots
  and per scenario: EXPECTED_TOOLS, PLUGINS, WORKSPACE, V2, V3 (main); TOKEN (login);
  LOGIN, ISSUER, EXPECTED_TOOLS, ABSENT_TOOLS (signin: a person signs in at the authorization
  server's own login and consent pages).

Every page must load without a console error, a page error or a failed request, and axe-core
must find no serious or critical accessibility violation. Prints `N passed, 0 failed` (the
checks made) and exits 0, or raises with what went wrong.
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

URL = os.environ["CONSOLE_URL"].rstrip("/") + "/"
SHOTS = Path(os.environ["SHOTS"])
AXE = Path(os.environ["AXE_JS"]).read_text()
# Chromium without the background services a closed network refuses, as root in CI.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
]
PAGES = ["tools", "plugins", "resources", "activity", "audit", "metrics"]
TIMEOUT = 15_000

checks = []


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    checks.append(what)


def passed(what):
    """Record a check whose `expect(...)` calls above it would have raised."""
    checks.append(what)


class Watch:
    """Console errors, page errors and failed requests of a page, for the whole scenario."""

    def __init__(self, page, allowed_status=(), only=None):
        self.problems = []
        self.allowed = set(allowed_status)
        # Only what happens on the console's own pages, when `only` is its URL (the
        # authorization server's pages are not the console's to judge).
        self.only = only
        self.calls = 0
        page.on("console", self.console)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", self.failed)
        page.on("response", self.response)
        page.on("request", self.request)

    def expected(self, url, text):
        """A refusal this scenario provokes on purpose (the login page's 401, a POST's 403)."""
        return any(url == u and str(s) in text for u, s in self.allowed)

    def ours(self, url):
        return self.only is None or (url or "").startswith(self.only)

    def console(self, m):
        if m.type != "error" or not self.ours(m.location.get("url")):
            return
        if m.text.startswith("Failed to load resource") and self.expected(m.location.get("url"), m.text):
            return
        self.problems.append(f"console error: {m.text} ({m.location.get('url')})")

    def failed(self, r):
        # The feed's stream is cut when the browser navigates or closes: not a failure; nor is
        # the body of a refusal provoked on purpose, left unread when the page moves on.
        if "/console/api/events" in r.url or any(r.url == u for u, _ in self.allowed) or not self.ours(r.url):
            return
        self.problems.append(f"request failed: {r.method} {r.url}: {r.failure}")

    def response(self, r):
        if r.status >= 400 and (r.request.url, r.status) not in self.allowed and self.ours(r.url):
            self.problems.append(f"request failed: {r.request.method} {r.url}: HTTP {r.status}")

    def request(self, r):
        if r.url.endswith("/console/api/call"):
            self.calls += 1

    def assert_clean(self, where):
        check(not self.problems, f"{where}: no console errors or failed requests: {self.problems}")


def axe(page, where):
    # Evaluated through the debugging protocol, which the page's CSP does not apply to (an
    # injected <script> would be refused, as it should be).
    page.evaluate(AXE)
    result = page.evaluate("async () => await axe.run(document, { resultTypes: ['violations'] })")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    check(not bad, f"{where}: no serious accessibility violations: {bad}")


def shot(page, name):
    page.screenshot(path=str(SHOTS / f"console-{name}.png"))


def launch(p):
    return p.chromium.launch(executable_path=os.environ["CHROMIUM"], args=ARGS, headless=True)


def goto_page(page, name):
    page.click(f"nav a[data-page={name}]")
    expect(page.locator(f"#page-{name}")).to_be_visible()
    expect(page.locator(f"nav a[data-page={name}]")).to_have_attribute("aria-current", "page")


def pick(page, tool):
    page.fill("#tool-search", "")
    page.select_option("#tool-flag", "")
    page.click(f"#tool-list button[data-tool={tool}]")
    expect(page.locator("#tool-title")).to_contain_text(tool)


def local_server(text):
    """A loopback HTTP server answering every GET with `text`, in a thread."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def swap(src, dst):
    """Drop a new version into the plugins folder the way a deploy does: write, then rename."""
    tmp = Path(dst).with_name(f".{Path(dst).name}.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def main_scenario(p):
    browser = launch(p)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page)
    # Signed in by the link toolhost printed (no [mcp] tokens), which lands on the console.
    page.goto(os.environ.get("LOGIN_URL", URL))
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__stay = 42")

    # Every tool of `cargo xtask plugins` is listed.
    expected = set(os.environ["EXPECTED_TOOLS"].split(","))
    page.wait_for_selector("#tool-list button[data-tool]")
    listed = set(page.eval_on_selector_all("#tool-list button[data-tool]", "bs => bs.map(b => b.dataset.tool)"))
    check(expected <= listed, f"the tools page lists every tool: missing {sorted(expected - listed)}")
    page.fill("#tool-search", "count")
    expect(page.locator("#tool-list button[data-tool]")).not_to_have_count(len(listed))
    check(
        "count_words" in page.eval_on_selector_all("#tool-list button[data-tool]", "bs => bs.map(b => b.dataset.tool)"),
        "search keeps count_words",
    )

    # The try form runs count_words and shows the structured result.
    pick(page, "count_words")
    page.fill("#arg-0", "one two three")
    page.click("#run")
    expect(page.locator("#result h3")).to_contain_text("success")
    expect(page.locator("#result")).to_contain_text('"words": 3')
    expect(page.locator("#result")).to_contain_text("Result (structured)")
    passed("count_words ran from the try form with a structured result")
    shot(page, "tools")

    # A bad JSON parameter shows an inline error and sends nothing.
    pick(page, "split_task")
    before = watch.calls
    page.fill("#arg-0", "launch")
    page.fill("#arg-1", '[{"title": "design",')
    page.click("#run")
    expect(page.locator("#arg-1-error")).to_be_visible()
    expect(page.locator("#arg-1-error")).to_contain_text("must be valid JSON")
    expect(page.locator("#arg-1")).to_have_attribute("aria-invalid", "true")
    page.fill("#arg-1", '{"title": "design"}')
    page.click("#run")
    expect(page.locator("#arg-1-error")).to_contain_text("must be an array")
    page.wait_for_timeout(300)
    check(watch.calls == before, "a bad JSON parameter sends nothing")
    page.fill("#arg-1", '[{"title": "design", "days": 2}]')
    page.click("#run")
    expect(page.locator("#result h3")).to_contain_text("success")
    check(watch.calls == before + 1, "fixed, it is sent once")

    # A dangerous tool is not run until confirmed.
    ws = Path(os.environ["WORKSPACE"])
    (ws / "gone.txt").write_text("bye")
    pick(page, "delete")
    page.fill("#arg-0", "gone.txt")
    before = watch.calls
    page.click("#run")
    expect(page.locator("#confirm")).to_have_attribute("open", "")
    page.wait_for_timeout(200)
    check(watch.calls == before and (ws / "gone.txt").exists(), "nothing runs while the question is open")
    shot(page, "confirm")
    axe(page, "danger confirmation")
    page.keyboard.press("Escape")
    expect(page.locator("#result")).to_contain_text("Not run")
    check(watch.calls == before and (ws / "gone.txt").exists(), "cancelled: not run")
    page.click("#run")
    page.click("#confirm-ok")
    expect(page.locator("#result h3")).to_contain_text("success")
    check(watch.calls == before + 1 and not (ws / "gone.txt").exists(), "confirmed: run once")

    # A refused call shows the note with the config line to paste.
    pick(page, "fetch")
    page.fill("#arg-0", "https://example.com/")
    page.click("#run")
    expect(page.locator("#result h3")).to_contain_text("tool_error")
    expect(page.locator("#result")).to_contain_text("[plugin.web] net")
    passed("a refused call shows the grant's config line")

    # Under `on_missing = "ask"` it also shows a pending-grant card; Deny refuses it for the
    # session, Allow once (for a loopback server) runs the call.
    card = page.locator("#grant-card")
    expect(card).to_contain_text("web wants to send a request to example.com")
    expect(card).to_contain_text("net example.com")
    axe(page, "pending-grant card")
    shot(page, "grant-card")
    page.click("#grant-deny")
    expect(page.locator("#result")).to_contain_text("denied plugin `web` net example.com")
    expect(page.locator("#grant-card")).to_have_count(0)
    server = local_server("hello from the browser test")
    page.fill("#arg-0", f"http://127.0.0.1:{server.server_address[1]}/")
    page.click("#run")
    expect(card).to_contain_text("web wants to send a request to 127.0.0.1")
    before = watch.calls
    page.click("#grant-once")
    expect(page.locator("#result h3")).to_contain_text("success")
    expect(page.locator("#result")).to_contain_text("hello from the browser test")
    check(watch.calls == before + 1, "allow once sends the call once more")
    server.shutdown()
    passed("the pending-grant card is answered in the page: deny, then allow once")

    # Every page: loads clean, passes axe, has a screenshot (the feed now has calls).
    for name in PAGES:
        goto_page(page, name)
        if name == "plugins":
            page.wait_for_selector("#plugins-body article")
        if name == "resources":
            page.wait_for_selector("#resources-list article")
        if name == "activity":
            page.wait_for_selector("#feed li")
        if name == "audit":
            page.wait_for_selector("#audit-table tbody tr")
        if name == "metrics":
            page.wait_for_selector("#metrics-body .chart svg")
        axe(page, f"{name} page")
        shot(page, name)

    # Audit: filter, then export what the filter shows.
    goto_page(page, "audit")
    page.fill("#audit-tool", "count_words")
    page.click("#audit-form button[type=submit]")
    expect(page.locator("#audit-status")).to_contain_text("1 of 1 matching")
    check(
        page.eval_on_selector_all("#audit-table tbody tr td:nth-child(2)", "ts => ts.map(t => t.textContent)") == ["count_words"],
        "the audit filter keeps only count_words",
    )
    href = page.get_attribute("#audit-export", "href")
    export = page.request.get(URL.rstrip("/") + href)
    lines = [json.loads(l) for l in export.text().splitlines()]
    check(export.ok and len(lines) == 1 and lines[0]["tool"] == "count_words" and lines[0]["front_end"] == "console",
          f"the export is the filtered JSONL: {lines}")

    # Resources: the files plugin's skill is listed with its files; Read shows SKILL.md.
    goto_page(page, "resources")
    card = page.locator("#resources-list article", has_text="workspace-files")
    expect(card).to_contain_text("skill of files")
    expect(card).to_contain_text("Read references/errors.md")
    card.get_by_role("button", name="Read SKILL.md").click()
    expect(page.locator("#resource-view pre")).to_contain_text("name: workspace-files")
    expect(page.locator("#resource-title")).to_be_focused()
    axe(page, "resources page with a file read")
    shot(page, "resource-read")
    passed("the resources page lists the skills' files and reads one")

    # A plugin's static resource and a template: read by running the plugin.
    schema = page.locator("#resources-list article", has_text="resource of text")
    expect(schema).to_contain_text("text://split-task/subtask.schema.json")
    schema.get_by_role("button", name="Read subtask-schema").click()
    expect(page.locator("#resource-view pre")).to_contain_text('"title":"Subtask"')
    expect(page.locator("#resource-view")).to_contain_text("application/schema+json")
    Path(os.environ["WORKSPACE"], "notes dir").mkdir(exist_ok=True)
    Path(os.environ["WORKSPACE"], "notes dir", "a.md").write_text("read through a template\n")
    template = page.locator("#resources-list article", has_text="template of files")
    path = template.get_by_label("path of file:///{+path}")
    path.fill("notes d")  # files completes the template's path: the datalist offers the folder
    expect(page.locator(f"#{path.get_attribute('list')} option")).to_have_count(1)
    check(page.eval_on_selector(f"#{path.get_attribute('list')} option", "o => o.value") == "notes dir/",
          "the template's path completes to the folder")
    path.fill("notes dir/a.md")
    template.get_by_role("button", name="Read").click()
    expect(page.locator("#resource-title")).to_have_text("file:///notes%20dir/a.md")
    expect(page.locator("#resource-view pre")).to_contain_text("read through a template")
    axe(page, "resources page with a template read")
    passed("the resources page reads a static resource and fills a template")

    # Prompts: the text plugin's prompt, got with its arguments; the messages under their roles.
    goto_page(page, "prompts")
    card = page.locator("#prompts-list article", has_text="prompt of text")
    expect(card).to_contain_text("Summarise a file")
    card.get_by_label("path of summarise-file").fill("notes dir/a.md")
    card.get_by_label("style of summarise-file").fill("bullets")
    card.get_by_role("button", name="Get summarise-file").click()
    expect(page.locator("#prompt-view")).to_contain_text("Summarise the file `notes dir/a.md` of the workspace (bullets)")
    expect(page.locator("#prompt-view")).to_contain_text("file:///notes%20dir/a.md")
    expect(page.locator("#prompt-title")).to_be_focused()
    axe(page, "prompts page with a prompt got")
    passed("the prompts page gets a prompt with its arguments")

    # Keyboard only: the nav and a tool can be reached and used with Tab and Enter.
    page.reload()
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__stay = 42")
    page.keyboard.press("Tab")
    check(page.evaluate("document.activeElement.className") == "skip", "the first Tab reaches the skip link")
    page.keyboard.press("Tab")
    focused = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    check(focused == "solid", f"the focused nav link has a visible outline ({focused})")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#page-plugins")).to_be_visible()
    passed("the nav works from the keyboard")

    # Dropping a new version: `~ which` in the feed, the new tool in the list, no page reload.
    goto_page(page, "activity")
    swap(os.environ["V2"], Path(os.environ["PLUGINS"]) / "versioned.wasm")
    expect(page.locator("#feed")).to_contain_text("~ which (v0.1.0 → v0.2.0)", timeout=20_000)
    expect(page.locator("#feed")).to_contain_text("+ added_in_v2")
    goto_page(page, "tools")
    expect(page.locator("#tool-list button[data-tool=added_in_v2]")).to_have_count(1)
    check(page.evaluate("window.__stay") == 42, "the new version showed up without reloading the page")

    # Approving a held version from the plugins page makes its tools callable.
    goto_page(page, "plugins")
    swap(os.environ["V3"], Path(os.environ["PLUGINS"]) / "versioned.wasm")
    held = page.locator("article.card.held", has_text="versioned")
    expect(held).to_be_visible(timeout=20_000)
    expect(held).to_contain_text("net example.com")
    axe(page, "plugins page with a held version")
    shot(page, "plugins-held")
    page.click("text=Approve versioned v0.3.0")
    expect(page.locator("#plugins-status")).to_contain_text("Approved versioned v0.3.0: it is serving now")
    expect(held).to_have_count(0)
    goto_page(page, "tools")
    pick(page, "which")
    expect(page.locator("#tool-detail")).to_contain_text("versioned v0.3.0")
    page.click("#run")
    expect(page.locator("#result")).to_contain_text("v3")
    check(page.evaluate("window.__stay") == 42, "approved and called without reloading the page")

    # The feed: pause holds new events back, filter narrows, clear empties.
    goto_page(page, "activity")
    page.click("#feed-pause")
    expect(page.locator("#feed-pause")).to_have_attribute("aria-pressed", "true")
    shown = page.locator("#feed li").count()
    page.evaluate(
        "async () => { const s = await (await fetch('/console/api/session')).json();"
        " await fetch('/console/api/call', {method: 'POST', headers: {'Content-Type': 'application/json',"
        " 'X-CSRF-Token': s.csrf}, body: JSON.stringify({tool: 'which'})}); }"
    )
    expect(page.locator("#feed-status")).to_contain_text("1 new while paused")
    check(page.locator("#feed li").count() == shown, "paused: the new call is held back")
    page.click("#feed-pause")
    expect(page.locator("#feed li")).to_have_count(shown + 1)
    page.click("#feed-pause")
    page.fill("#feed-filter", "which")
    visible = page.eval_on_selector_all("#feed li:not([hidden])", "ls => ls.map(l => l.textContent)")
    check(visible and all("which" in t for t in visible), f"the filter keeps only matching events: {visible}")
    page.click("#feed-clear")
    check(page.locator("#feed li").count() == 0 and shown > 0, "clear empties the feed")
    page.click("#feed-pause")
    expect(page.locator("#feed-pause")).to_have_attribute("aria-pressed", "false")

    # Narrow window (400 px): still usable, still accessible.
    page.set_viewport_size({"width": 400, "height": 800})
    goto_page(page, "tools")
    pick(page, "count_words")
    axe(page, "tools page at 400 px")
    shot(page, "tools-narrow")
    width = page.evaluate("document.documentElement.scrollWidth")
    check(width <= 400, f"no horizontal scrolling at 400 px (content is {width} px wide)")

    watch.assert_clean("the console")
    browser.close()


def login_scenario(p):
    browser = launch(p)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page, allowed_status={(URL, 401), (URL.rstrip("/") + "/console/login", 401)})
    r = page.goto(URL)
    check(r.status == 401, f"without a session / asks for the token (HTTP {r.status})")
    expect(page.locator("#token")).to_be_visible()
    check(page.locator("#page-tools").count() == 0, "the login form shows nothing of the console")
    axe(page, "login page")
    shot(page, "login")
    page.fill("#token", "not-the-token-0123456789")
    page.click("button[type=submit]")
    expect(page.locator("#failed")).to_be_visible()
    page.fill("#token", os.environ["TOKEN"])
    page.click("button[type=submit]")
    expect(page.locator("#live")).to_have_text("live")
    page.wait_for_selector("#tool-list button[data-tool=count_words]")
    cookie = next(c for c in context.cookies() if c["name"] == "toolhost_console")
    check(cookie["httpOnly"] and cookie["sameSite"] == "Strict", f"the session cookie is HttpOnly, SameSite=Strict: {cookie}")
    watch.allowed.add((URL.rstrip("/") + "/console/api/call", 403))
    status = page.evaluate(
        "async () => (await fetch('/console/api/call', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({tool: 'count_words', arguments: {text: 'a'}})})).status"
    )
    check(status == 403, f"a POST without the CSRF token is refused in the browser too (HTTP {status})")
    # Signing out: the feed's reconnection is refused too, as it should be.
    watch.allowed.add((URL.rstrip("/") + "/console/api/events", 401))
    page.click("#signout button")
    expect(page.locator("#token")).to_be_visible()
    watch.allowed.add((URL, 401))
    watch.assert_clean("the signed-in console")
    browser.close()


def signin_scenario(p):
    """A person signs in at the authorization server (its real login and consent pages), sees
    the tools the operator's policy lets them list, runs one; a replayed return is refused."""
    browser = launch(p)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page, allowed_status={(URL, 401)}, only=URL)
    returns = []
    page.on("request", lambda r: returns.append(r.url) if "/console/callback" in r.url else None)
    r = page.goto(URL)
    check(r.status == 401, f"without a session / offers the sign-in (HTTP {r.status})")
    link = page.locator("#signin")
    expect(link).to_have_text(f"Sign in with {os.environ['ISSUER']}")
    check(page.locator("#token").count() == 0, "no token form without [mcp] tokens")
    axe(page, "sign-in page")
    link.click()
    # The authorization server's development login page, then its consent page.
    page.wait_for_selector("input[name=login]")
    check(page.url.startswith(os.environ["ISSUER"]), f"the browser is at the authorization server: {page.url}")
    page.fill("input[name=login]", os.environ["LOGIN"])
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.click("button:has-text('Continue')")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#who")).to_have_text(f"Signed in as {os.environ['LOGIN']}")
    check(page.url == URL, f"the sign-in lands on the console: {page.url}")
    cookie = next(c for c in context.cookies() if c["name"] == "toolhost_console")
    check(cookie["httpOnly"] and cookie["sameSite"] == "Strict", f"the session cookie is HttpOnly, SameSite=Strict: {cookie}")
    # The tools the policy lets this person list, and no other.
    page.wait_for_selector("#tool-list button[data-tool]")
    listed = set(page.eval_on_selector_all("#tool-list button[data-tool]", "bs => bs.map(b => b.dataset.tool)"))
    expected = {t for t in os.environ["EXPECTED_TOOLS"].split(",") if t}
    absent = {t for t in os.environ["ABSENT_TOOLS"].split(",") if t}
    check(expected <= listed, f"lists {sorted(expected)}: {sorted(listed)}")
    check(not (absent & listed), f"does not list {sorted(absent)}: {sorted(listed)}")
    pick(page, "count_words")
    page.fill("#arg-0", "one two three")
    page.click("#run")
    expect(page.locator("#result h3")).to_contain_text("success")
    passed("count_words ran as the signed-in person")
    shot(page, f"signin-{os.environ['LOGIN']}")
    watch.assert_clean("the signed-in console")
    # The return, replayed in another browser holding its state cookie: refused, no session.
    back = next(u for u in returns if "code=" in u)
    state = dict(kv.split("=", 1) for kv in back.split("?", 1)[1].split("&"))["state"]
    other = browser.new_context()
    other.add_cookies([{"name": "toolhost_signin", "value": state, "url": URL.rstrip("/") + "/console/callback"}])
    replay = other.new_page()
    r = replay.goto(back)
    check(r.status == 400, f"a replayed return is refused (HTTP {r.status})")
    expect(replay.locator("#signin-failed")).to_contain_text("already used")
    check(
        not any(c["name"] == "toolhost_console" for c in other.cookies()),
        "a replayed return opens no session",
    )
    browser.close()


def run_with_app(p, tool, arg):
    """Signed in by the printed link, `tool` run with `arg` from its form: the browser and page."""
    browser = launch(p)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    page.goto(os.environ["LOGIN_URL"])
    expect(page.locator("#live")).to_have_text("live")
    page.wait_for_selector(f"#tool-list button[data-tool={tool}]")
    pick(page, tool)
    page.fill("#arg-0", arg)
    page.click("#run")
    expect(page.locator("#result h3")).to_contain_text("success")
    return browser, page


def app_frame(page):
    """The Playwright frame of the app shown under the outcome."""
    import re

    return next(f for f in page.frames if re.search(r"/console/app\?uri=", f.url))


def apps_scenario(p):
    """A tool's app: datakit's chart of word_freq, in a sandboxed frame that reaches nothing."""
    browser, page = run_with_app(p, "word_freq", "apple pear apple plum apple pear")
    expect(page.locator("#app-frame")).to_have_attribute("sandbox", "allow-scripts")
    app = page.frame_locator("#app-frame")
    expect(app.locator(".bar")).to_have_count(3)
    expect(app.locator("#status")).to_have_text("3 words")
    passed("running word_freq shows datakit's chart of its result in a sandboxed frame")
    shot(page, "app")
    frame = app_frame(page)

    def inside(script):
        return frame.evaluate(script)

    got = inside("() => { try { return 'read: ' + document.cookie } catch (e) { return 'blocked: ' + e.name } }")
    check(got.startswith("blocked"), f"the app cannot read the console's cookie: {got}")
    got = inside("() => { try { return 'read: ' + parent.document.title } catch (e) { return 'blocked: ' + e.name } }")
    check(got.startswith("blocked"), f"the app cannot reach the console's page (its CSRF token): {got}")
    got = inside("() => fetch('/console/api/session').then(() => 'fetched', () => 'blocked')")
    check(got == "blocked", f"the app cannot call the console's API: {got}")
    got = inside("() => fetch('https://example.com/').then(() => 'fetched', () => 'blocked')")
    check(got == "blocked", f"the app cannot fetch an origin it did not declare: {got}")
    before = page.url
    inside("() => { try { top.location.href = 'https://example.com/' } catch (e) {} }")
    page.wait_for_timeout(500)
    check(page.url == before, f"the app cannot navigate the console away: {page.url}")
    ask = """([id, method, params]) => new Promise((resolve) => {
        addEventListener('message', (e) => { if (e.data && e.data.id === id) resolve(e.data) });
        parent.postMessage({jsonrpc: '2.0', id, method, params}, '*');
    })"""
    got = frame.evaluate(ask, [901, "tools/call", {"name": "delete", "arguments": {"path": "x"}}])
    check("error" in got and "own plugin" in got["error"]["message"], f"the app cannot call another plugin's tool: {got}")
    got = frame.evaluate(ask, [902, "tools/call", {"name": "word_freq", "arguments": {"text": "a a b"}}])
    text = got.get("result", {}).get("content", [{}])[0].get("text", "")
    check("2\ta" in text and got["result"]["isError"] is False, f"the app calls its own plugin's tool through the bridge: {got}")
    got = frame.evaluate(ask, [903, "ui/open-link", {"url": "https://example.com/"}])
    check("error" in got, f"the console opens no link for an app: {got}")
    got = frame.evaluate(ask, [904, "no/such-method", {}])
    check(got.get("error", {}).get("code") == -32601, f"an unknown bridge method is an error: {got}")
    got = frame.evaluate(ask, [905, "tools/call", {"name": "word_freq", "arguments": {"text": "x" * (1 << 20)}}])
    check("too large" in got.get("error", {}).get("message", ""), f"an oversized bridge message is refused: {str(got)[:200]}")
    browser.close()


def hostile_app_scenario(p):
    """tests/fixtures/apps/inspector: a page that tries everything from the console's frame."""
    browser, page = run_with_app(p, "ls", ".")
    expect(page.locator("#app h4")).to_contain_text("plugin files")
    # Its call of the dangerous `delete` waits for the person, who declines.
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-title")).to_contain_text("The app asks to run delete")
    page.click("#confirm-cancel")
    expect(page.frame_locator("#app-frame").locator("#state")).to_have_text("done")
    frame = app_frame(page)
    r = frame.evaluate("() => window.results")
    for attempt in ["cookie", "parent", "storage", "api", "network", "popup"]:
        check(str(r.get(attempt, "")).startswith("blocked"), f"the hostile app's {attempt} attempt is blocked: {r.get(attempt)}")
    check("error" in r["foreign"] and "own plugin" in r["foreign"]["error"]["message"], f"no other plugin's tool: {r['foreign']}")
    check(r["appOnly"].get("result", {}).get("isError") is False, f"its app-only tool runs: {r['appOnly']}")
    dangerous = r["dangerous"].get("result", {})
    check(dangerous.get("isError") is True and "did not confirm" in dangerous["content"][0]["text"], f"the declined delete did not run: {r['dangerous']}")
    check(page.url.startswith(os.environ["CONSOLE_URL"].rstrip("/")), f"the console was not navigated away: {page.url}")
    check(len(browser.contexts[0].pages) == 1, "no window was opened")
    browser.close()


SCENARIOS = {
    "main": main_scenario,
    "login": login_scenario,
    "signin": signin_scenario,
    "apps": apps_scenario,
    "hostile_app": hostile_app_scenario,
}

if __name__ == "__main__":
    SHOTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as p:
        SCENARIOS[sys.argv[1]](p)
    print(f"console browser checks ({sys.argv[1]}, {time.monotonic() - started:.1f} s):")
    print(f"{len(checks)} passed, 0 failed")

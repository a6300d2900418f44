//! `web`: reach the web through the host's HTTP import. The plugin asks for any host (`*`);
//! what it can actually reach is what the operator grants in `[plugin.web] net = [...]`.
//!
//! `web_search` asks the search backend the operator configures, as environment variables
//! given in `[plugin.web] settings`: `SEARCH_URL` (the backend's endpoint) and
//! `SEARCH_BACKEND` — `searxng` (a SearXNG instance's JSON API, the default) or `brave` (the
//! Brave Search API, keyed by the `search_key` secret, sent by the host in the
//! `X-Subscription-Token` header). `browse` opens a page in the operator's browser with the
//! granted `xdg-open` (Linux, needs `DISPLAY` or `WAYLAND_DISPLAY`) or `open` (macOS).

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The search backends `web_search` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `GET {SEARCH_URL}?q=…&format=json` → `{"results": [{"title", "url", "content"}]}`.
    Searxng,
    /// `GET {SEARCH_URL}?q=…&count=N` with `X-Subscription-Token` →
    /// `{"web": {"results": [{"title", "url", "description"}]}}`.
    Brave,
}

/// The Brave Search API endpoint, used when `SEARCH_URL` is not set for `brave`.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// Results returned at most.
pub const MAX_HITS: usize = 10;

impl Backend {
    pub fn parse(name: &str) -> Result<Backend, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "" | "searxng" => Ok(Backend::Searxng),
            "brave" => Ok(Backend::Brave),
            other => Err(format!("SEARCH_BACKEND {other:?} is not supported; use `searxng` or `brave`")),
        }
    }

    /// The request URL for `query` against `base`.
    pub fn url(self, base: &str, query: &str) -> String {
        let sep = if base.contains('?') { '&' } else { '?' };
        let q = percent_encode(query);
        match self {
            Backend::Searxng => format!("{base}{sep}q={q}&format=json"),
            Backend::Brave => format!("{base}{sep}q={q}&count={MAX_HITS}"),
        }
    }

    /// The hits in a backend's JSON answer.
    pub fn hits(self, body: &serde_json::Value) -> Result<Vec<Hit>, String> {
        let (list, snippet_key) = match self {
            Backend::Searxng => (body.get("results"), "content"),
            Backend::Brave => (body.pointer("/web/results"), "description"),
        };
        let Some(list) = list else {
            // Brave leaves `web` out when nothing matched.
            if self == Backend::Brave && body.get("type").is_some() {
                return Ok(Vec::new());
            }
            return Err("the search backend's answer has no result list (is SEARCH_BACKEND right?)".into());
        };
        let list = list.as_array().ok_or("the search backend's result list is not an array")?;
        let text = |v: &serde_json::Value, k: &str| {
            v.get(k).and_then(|s| s.as_str()).map(|s| html_to_text(s).replace('\n', " ")).unwrap_or_default()
        };
        Ok(list
            .iter()
            .filter_map(|r| {
                let url = r.get("url")?.as_str()?.to_string();
                Some(Hit { title: text(r, "title"), url, snippet: text(r, snippet_key) })
            })
            .take(MAX_HITS)
            .collect())
    }
}

/// `1. Title\n   URL\n   snippet` per hit.
pub fn render_hits(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("no results for {query:?}");
    }
    let mut out = String::new();
    for (i, h) in hits.iter().enumerate() {
        let title = if h.title.is_empty() { "(no title)" } else { h.title.as_str() };
        out.push_str(&format!("{}. {title}\n   {}\n", i + 1, h.url));
        if !h.snippet.is_empty() {
            out.push_str(&format!("   {}\n", h.snippet));
        }
    }
    out.trim_end().to_string()
}

/// Percent-encode everything but unreserved characters (RFC 3986), for a query parameter.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A URL `browse` may hand to the browser: http or https, no spaces or control characters,
/// never something a launcher could read as an option.
pub fn check_browse_url(url: &str) -> Result<&str, String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!("{url:?} is not an http or https URL; browse opens web pages only"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) || url.len() > 8192 {
        return Err("the URL contains spaces or control characters (or is too long)".into());
    }
    Ok(url)
}

/// Readable text of an HTML page: the title, then the visible text with block elements on their
/// own lines; scripts, styles and markup removed, entities decoded, blank runs collapsed.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::new();
    let mut title = String::new();
    let lower = html.to_ascii_lowercase();
    let mut i = 0;
    let bytes = html.as_bytes();
    let mut in_title = false;
    while i < bytes.len() {
        if bytes[i] == b'<' {
            // Comments.
            if lower[i..].starts_with("<!--") {
                i = lower[i..].find("-->").map(|e| i + e + 3).unwrap_or(bytes.len());
                continue;
            }
            let end = match lower[i..].find('>') {
                Some(e) => i + e,
                None => break,
            };
            let tag = &lower[i + 1..end];
            let name: String =
                tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            let closing = tag.starts_with('/');
            if !closing && matches!(name.as_str(), "script" | "style" | "noscript" | "svg" | "template") {
                let close = format!("</{name}");
                i = lower[end..].find(&close).map(|e| end + e).unwrap_or(bytes.len());
                i = lower[i..].find('>').map(|e| i + e + 1).unwrap_or(bytes.len());
                continue;
            }
            if name == "title" {
                in_title = !closing;
            }
            if matches!(
                name.as_str(),
                "p" | "div"
                    | "br"
                    | "tr"
                    | "h1"
                    | "h2"
                    | "h3"
                    | "h4"
                    | "h5"
                    | "h6"
                    | "section"
                    | "article"
                    | "header"
                    | "footer"
                    | "ul"
                    | "ol"
                    | "table"
                    | "pre"
                    | "blockquote"
                    | "hr"
            ) {
                out.push('\n');
            }
            if name == "li" && !closing {
                out.push_str("\n- ");
            }
            i = end + 1;
            continue;
        }
        let next = lower[i..].find('<').map(|e| i + e).unwrap_or(bytes.len());
        let text = decode_entities(&html[i..next]);
        if in_title {
            title.push_str(&text);
        } else {
            out.push_str(&text);
        }
        i = next;
    }
    let mut lines: Vec<String> = Vec::new();
    for line in out.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() && lines.last().is_some_and(|l: &String| l.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    let body = lines.join("\n").trim().to_string();
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if title.is_empty() { body } else { format!("# {title}\n\n{body}") }
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..semi];
        let ch = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            _ if ent.starts_with("#x") || ent.starts_with("#X") => {
                u32::from_str_radix(&ent[2..], 16).ok().and_then(char::from_u32)
            }
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The part of `value` at JSON `pointer` (all of it for none), pretty-printed.
pub fn select(value: serde_json::Value, pointer: Option<String>) -> Result<String, String> {
    let part = match pointer.as_deref() {
        None | Some("") => &value,
        Some(p) => value.pointer(p).ok_or_else(|| format!("nothing at JSON pointer {p:?}"))?,
    };
    serde_json::to_string_pretty(part).map_err(|e| e.to_string())
}

#[toolhost_sdk::plugin(
    net = "*",
    secret = "api_token",
    secret = "search_key",
    env = "SEARCH_URL",
    env = "SEARCH_BACKEND",
    env = "DISPLAY",
    env = "WAYLAND_DISPLAY",
    exec = "xdg-open",
    exec = "open"
)]
mod tools {
    use super::{BRAVE_URL, Backend, check_browse_url, html_to_text, render_hits, select};
    use toolhost_sdk::{http, process};

    /// Search the web and return up to 10 results, each with its title, URL and a snippet.
    /// Uses the search backend the operator configured (a SearXNG instance or the Brave
    /// Search API).
    /// - `query`: what to search for; commas are part of it
    #[tool(rest, output_limit = 8000, read_only, category = "web")]
    pub fn web_search(query: String) -> Result<String, String> {
        let query = query.trim();
        if query.is_empty() {
            return Err("the search query is empty".into());
        }
        let backend = Backend::parse(&std::env::var("SEARCH_BACKEND").unwrap_or_default())?;
        let base = match (std::env::var("SEARCH_URL"), backend) {
            (Ok(u), _) if !u.trim().is_empty() => u.trim().to_string(),
            (_, Backend::Brave) => BRAVE_URL.to_string(),
            (_, Backend::Searxng) => {
                return Err("no search backend is configured; the operator sets [plugin.web] settings = { SEARCH_URL = \"https://searx.example.org/search\" } (a SearXNG instance; or SEARCH_BACKEND = \"brave\" with the `search_key` secret) and grants its host in net".into());
            }
        };
        let mut req = http::Request::get(&backend.url(&base, query)).header("accept", "application/json");
        if backend == Backend::Brave {
            req = req.secret_header("x-subscription-token", "search_key", "");
        }
        let resp = req.send()?.error_for_status()?;
        let body: serde_json::Value = resp.json()?;
        Ok(render_hits(query, &backend.hits(&body)?))
    }

    /// Open a web page in the operator's browser (their screen, not the model's: the page's
    /// content does not come back). On Linux runs `xdg-open URL` and needs a desktop session;
    /// on macOS `open URL`. Refused when there is no desktop.
    /// - `url`: an http or https URL
    #[tool(danger, category = "web")]
    pub fn browse(url: String) -> Result<String, String> {
        let url = check_browse_url(&url)?;
        let desktop =
            ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty()));
        let (program, out) = if desktop {
            ("xdg-open", process::run("xdg-open", &[url]))
        } else {
            // No X11/Wayland session visible: only macOS's `open` can still show a page.
            ("open", process::run("open", &[url]).map_err(|e| {
                format!(
                    "no desktop to open a browser on: DISPLAY and WAYLAND_DISPLAY are not set for plugin `web` (the operator grants them with [plugin.web] env = [\"DISPLAY\", \"WAYLAND_DISPLAY\"]), and on macOS: {e}"
                )
            }))
        };
        let out = out?;
        if !out.success() {
            let why = out.stderr_text();
            return Err(format!("{program} could not open {url} (exit {:?}): {}", out.code, why.trim()));
        }
        Ok(format!("opened {url} in the browser"))
    }

    /// Fetch a web page and return its readable text (HTML markup, scripts and styles removed).
    /// - `url`: an http or https URL the operator allows
    #[tool(output_limit = 20000, read_only, category = "web")]
    pub fn fetch(url: String) -> Result<String, String> {
        let resp =
            http::Request::get(&url).header("accept", "text/html, text/plain;q=0.9, */*;q=0.5").send()?;
        let resp = resp.error_for_status()?;
        let ctype = resp.header("content-type").unwrap_or("").to_ascii_lowercase();
        let text = resp.text();
        let mut out = if ctype.contains("html") || (ctype.is_empty() && text.trim_start().starts_with('<')) {
            html_to_text(&text)
        } else if ctype.starts_with("text/")
            || ctype.contains("json")
            || ctype.contains("xml")
            || ctype.is_empty()
        {
            text
        } else {
            return Err(format!("{} is {ctype}, not text", resp.url));
        };
        if resp.truncated {
            out.push_str("\n[the page was cut at the host's response size limit]");
        }
        Ok(out)
    }

    /// Fetch JSON from a URL and return it pretty-printed, or only the part at a JSON pointer.
    /// - `url`: an http or https URL the operator allows
    /// - `pointer`: a JSON pointer such as `/items/0/name` (optional)
    #[tool(output_limit = 20000, read_only, category = "web")]
    pub fn http_json(url: String, pointer: Option<String>) -> Result<String, String> {
        let resp =
            http::Request::get(&url).header("accept", "application/json").send()?.error_for_status()?;
        if resp.truncated {
            return Err(format!("{} is larger than the host's response size limit", resp.url));
        }
        let value: serde_json::Value = resp.json()?;
        select(value, pointer)
    }

    /// GET a JSON API with the operator's `api_token` secret sent as a bearer token (the token
    /// is added by the host; the plugin never sees it).
    /// - `url`: an API URL the operator allows for the token
    /// - `pointer`: a JSON pointer into the answer (optional)
    #[tool(output_limit = 20000, read_only, category = "web")]
    pub fn api_get(url: String, pointer: Option<String>) -> Result<String, String> {
        let resp = http::Request::get(&url)
            .header("accept", "application/json")
            .secret_header("authorization", "api_token", "Bearer ")
            .send()?
            .error_for_status()?;
        let value: serde_json::Value = resp.json()?;
        select(value, pointer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_backends_build_urls_and_read_answers() {
        assert_eq!(
            Backend::Searxng.url("http://h/search", "a, b & c"),
            "http://h/search?q=a%2C%20b%20%26%20c&format=json"
        );
        assert_eq!(Backend::Brave.url("http://h/s?x=1", "q"), "http://h/s?x=1&q=q&count=10");
        let sx = serde_json::json!({"results": [{"title": "T &amp; U", "url": "https://a/", "content": "<b>s</b>nip"}]});
        assert_eq!(
            Backend::Searxng.hits(&sx).unwrap(),
            [Hit { title: "T & U".into(), url: "https://a/".into(), snippet: "snip".into() }]
        );
        let br = serde_json::json!({"type": "search", "web": {"results": [{"title": "B", "url": "https://b/", "description": "d"}]}});
        assert_eq!(Backend::Brave.hits(&br).unwrap()[0].snippet, "d");
        assert!(Backend::Brave.hits(&serde_json::json!({"type": "search"})).unwrap().is_empty());
        assert!(Backend::parse("google").is_err());
    }

    #[test]
    fn browse_takes_web_urls_only() {
        assert!(check_browse_url("https://example.com/a?b=c").is_ok());
        assert!(check_browse_url("file:///etc/passwd").is_err());
        assert!(check_browse_url("-a Terminal").is_err());
        assert!(check_browse_url("https://x/ --option").is_err());
    }

    #[test]
    fn readable_text() {
        let html = "<html><head><title>Hi &amp; bye</title><style>p{}</style></head><body>\
            <script>alert('x<y')</script><h1>Head</h1><p>One&nbsp;two &#x41;&#66;</p><!-- c --><ul><li>a</li><li>b</li></ul></body></html>";
        assert_eq!(html_to_text(html), "# Hi & bye\n\nHead\n\nOne two AB\n\n- a\n- b");
    }
}

//! `web`: reach the web through the host's HTTP import. The plugin asks for any host (`*`);
//! what it can actually reach is what the operator grants in `[plugin.web] net = [...]`.

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
                "p" | "div" | "br" | "tr" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "section"
                    | "article" | "header" | "footer" | "ul" | "ol" | "table" | "pre" | "blockquote" | "hr"
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

#[toolhost_sdk::plugin(net = "*", secret = "api_token")]
mod tools {
    use super::{html_to_text, select};
    use toolhost_sdk::http;

    /// Fetch a web page and return its readable text (HTML markup, scripts and styles removed).
    /// - `url`: an http or https URL the operator allows
    #[tool(output_limit = 20000, read_only, category = "web")]
    pub fn fetch(url: String) -> Result<String, String> {
        let resp = http::Request::get(&url).header("accept", "text/html, text/plain;q=0.9, */*;q=0.5").send()?;
        let resp = resp.error_for_status()?;
        let ctype = resp.header("content-type").unwrap_or("").to_ascii_lowercase();
        let text = resp.text();
        let mut out = if ctype.contains("html") || (ctype.is_empty() && text.trim_start().starts_with('<')) {
            html_to_text(&text)
        } else if ctype.starts_with("text/") || ctype.contains("json") || ctype.contains("xml") || ctype.is_empty() {
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
        let resp = http::Request::get(&url).header("accept", "application/json").send()?.error_for_status()?;
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
    use super::html_to_text;

    #[test]
    fn readable_text() {
        let html = "<html><head><title>Hi &amp; bye</title><style>p{}</style></head><body>\
            <script>alert('x<y')</script><h1>Head</h1><p>One&nbsp;two &#x41;&#66;</p><!-- c --><ul><li>a</li><li>b</li></ul></body></html>";
        assert_eq!(html_to_text(html), "# Hi & bye\n\nHead\n\nOne two AB\n\n- a\n- b");
    }
}

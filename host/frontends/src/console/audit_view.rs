//! `GET /console/api/audit` and `audit.jsonl`: the audit trail (the current file `[audit]`
//! writes; rotated files are left alone), filtered by tool, plugin, outcome and time range —
//! the newest lines as JSON for the page, or every matching line as JSONL to download.
//!
//! The lines are shown as written: their arguments were redacted and cut when they were
//! written (`service`), so no secret's value is in them.

use super::{Body, Console, Early, full, json, json_error};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The page reads at most this much of the end of the file.
const PAGE_WINDOW: u64 = 8 * 1024 * 1024;
/// The export reads at most this much of the end of the file.
const EXPORT_WINDOW: u64 = 256 * 1024 * 1024;
/// Lines the page shows by default, and at most.
const PAGE_LINES: usize = 200;
const PAGE_MAX: usize = 5000;

/// The filters of a query string.
#[derive(Debug, Default, PartialEq)]
pub struct Filter {
    pub tool: Option<String>,
    pub plugin: Option<String>,
    /// `ok`, `error` (any failure) or one error kind.
    pub outcome: Option<String>,
    /// RFC 3339 times (UTC, as the trail writes them), inclusive.
    pub from: Option<String>,
    pub to: Option<String>,
    pub limit: usize,
}

impl Filter {
    pub fn parse(query: Option<&str>) -> Filter {
        let mut f = Filter { limit: PAGE_LINES, ..Filter::default() };
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let v = v.trim().to_string();
            if v.is_empty() {
                continue;
            }
            match &*k {
                "tool" => f.tool = Some(v),
                "plugin" => f.plugin = Some(v),
                "outcome" => f.outcome = Some(v),
                "from" => f.from = Some(v),
                "to" => f.to = Some(v),
                "limit" => f.limit = v.parse().unwrap_or(PAGE_LINES).clamp(1, PAGE_MAX),
                _ => {}
            }
        }
        f
    }

    pub fn matches(&self, line: &Value) -> bool {
        let s = |k: &str| line.get(k).and_then(Value::as_str);
        if self.tool.as_deref().is_some_and(|t| s("tool") != Some(t)) {
            return false;
        }
        if self.plugin.as_deref().is_some_and(|p| s("plugin") != Some(p)) {
            return false;
        }
        match self.outcome.as_deref() {
            None => {}
            Some("error") if s("outcome") == Some("ok") => return false,
            Some("error") => {}
            Some(o) if s("outcome") != Some(o) => return false,
            Some(_) => {}
        }
        let time = s("time").unwrap_or("");
        // RFC 3339 UTC times of one format compare as strings; a bound may be a prefix
        // (`2026-11-30`), which `to` extends to the end of what it names.
        if self.from.as_deref().is_some_and(|f| time < f) {
            return false;
        }
        if self.to.as_deref().is_some_and(|t| time > t && !time.starts_with(t)) {
            return false;
        }
        true
    }
}

/// The last `window` bytes of `path`, from the first whole line on.
fn tail(path: &Path, window: u64) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(window);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(window).read_to_end(&mut buf)?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        let cut = text.find('\n').map_or(text.len(), |i| i + 1);
        text.drain(..cut);
    }
    Ok(text)
}

/// Audit lines as written, with their parsed JSON.
type Lines = Vec<(String, Value)>;

/// The matching lines of the audit file's last `window` bytes, oldest first, and whether the
/// window left older lines out.
fn read(c: &Console, filter: &Filter, window: u64) -> Result<(Lines, bool), Early> {
    let Some(path) = c.service.audit_path() else {
        return Err(Box::new(json_error(
            StatusCode::NOT_FOUND,
            "the audit trail is off ([audit] enabled = false, or its file could not be opened)",
        )));
    };
    let text = match tail(path, window) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Box::new(json_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("cannot read the audit trail {}: {e}", path.display()),
            )));
        }
    };
    let cut = std::fs::metadata(path).is_ok_and(|m| m.len() > window);
    let lines = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok().map(|v| (l.to_string(), v)))
        .filter(|(_, v)| filter.matches(v))
        .collect();
    Ok((lines, cut))
}

/// `GET /console/api/audit?tool=&plugin=&outcome=&from=&to=&limit=`: the newest matching lines.
pub fn page(c: &Console, query: Option<&str>) -> Response<Body> {
    let filter = Filter::parse(query);
    let (lines, cut) = match read(c, &filter, PAGE_WINDOW) {
        Ok(l) => l,
        Err(resp) => return *resp,
    };
    let total = lines.len();
    let newest: Vec<Value> = lines.into_iter().rev().take(filter.limit).map(|(_, v)| v).collect();
    json(
        StatusCode::OK,
        &serde_json::json!({
            "file": c.service.audit_path(),
            "matching": total,
            "shown": newest.len(),
            "olderNotRead": cut,
            "lines": newest,
        }),
    )
}

/// `GET /console/api/audit.jsonl?…`: every matching line, oldest first, as written.
pub fn export(c: &Console, query: Option<&str>) -> Response<Body> {
    let filter = Filter::parse(query);
    let (lines, _) = match read(c, &filter, EXPORT_WINDOW) {
        Ok(l) => l,
        Err(resp) => return *resp,
    };
    let mut body = String::new();
    for (l, _) in lines {
        body.push_str(&l);
        body.push('\n');
    }
    let mut resp = full(StatusCode::OK, "application/x-ndjson", body);
    resp.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"toolhost-audit.jsonl\""),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_by_tool_plugin_outcome_and_time() {
        let line = json!({"tool": "read", "plugin": "files", "outcome": "denied", "time": "2026-11-30T19:04:05.123Z"});
        let f = |q: &str| Filter::parse(Some(q)).matches(&line);
        assert!(f(""));
        assert!(f("tool=read&plugin=files&outcome=error"));
        assert!(f("outcome=denied&from=2026-11-30&to=2026-11-30"));
        assert!(f("from=2026-11-30T19:04:05.123Z&to=2026-11-30T19:04:05.123Z"));
        assert!(!f("tool=write"));
        assert!(!f("plugin=text"));
        assert!(!f("outcome=ok"));
        assert!(!f("outcome=timeout"));
        assert!(!f("from=2026-12-01"));
        assert!(!f("to=2026-11-29"));
        assert_eq!(Filter::parse(Some("limit=999999")).limit, PAGE_MAX);
    }

    #[test]
    fn the_tail_starts_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
        assert_eq!(tail(&p, 1000).unwrap().lines().count(), 3);
        assert_eq!(tail(&p, 10).unwrap(), "{\"n\":3}\n");
    }
}

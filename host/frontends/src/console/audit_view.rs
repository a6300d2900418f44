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
use std::collections::VecDeque;
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

/// Each line of the audit file's last `window` bytes that `filter` matches, oldest first, given
/// to `keep` as written and parsed (one at a time: only what `keep` keeps stays in memory), on
/// a thread of its own — reading and parsing up to [`EXPORT_WINDOW`] takes seconds, which no
/// async worker may spend. Then `keep`'s result, and whether the window left older lines out.
async fn scan<K: Send + 'static>(
    c: &Console,
    filter: Filter,
    window: u64,
    mut keep: impl FnMut(K, &str, Value) -> K + Send + 'static,
    kept: K,
) -> Result<(K, bool), Early> {
    let Some(path) = c.service.audit_path() else {
        return Err(Box::new(json_error(
            StatusCode::NOT_FOUND,
            "the audit trail is off ([audit] enabled = false, or its file could not be opened)",
        )));
    };
    let path = path.to_path_buf();
    let at = path.display().to_string();
    let scanned = tokio::task::spawn_blocking(move || {
        let text = match tail(&path, window) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let cut = std::fs::metadata(&path).is_ok_and(|m| m.len() > window);
        let mut kept = kept;
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line)
                && filter.matches(&v)
            {
                kept = keep(kept, line, v);
            }
        }
        Ok((kept, cut))
    })
    .await;
    match scanned {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) => Err(Box::new(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot read the audit trail {at}: {e}"),
        ))),
        Err(e) => Err(Box::new(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("reading the audit trail {at} failed: {e}"),
        ))),
    }
}

/// `GET /console/api/audit?tool=&plugin=&outcome=&from=&to=&limit=`: the newest matching lines.
pub async fn page(c: &Console, query: Option<&str>) -> Response<Body> {
    let filter = Filter::parse(query);
    let limit = filter.limit;
    // The matching lines counted, the newest `limit` kept.
    let keep = move |(mut total, mut newest): (usize, VecDeque<Value>), _: &str, v: Value| {
        total += 1;
        newest.push_back(v);
        if newest.len() > limit {
            newest.pop_front();
        }
        (total, newest)
    };
    let ((total, newest), cut) = match scan(c, filter, PAGE_WINDOW, keep, (0, VecDeque::new())).await {
        Ok(l) => l,
        Err(resp) => return *resp,
    };
    let newest: Vec<Value> = newest.into_iter().rev().collect();
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
pub async fn export(c: &Console, query: Option<&str>) -> Response<Body> {
    let keep = |mut body: String, line: &str, _: Value| {
        body.push_str(line);
        body.push('\n');
        body
    };
    let (body, _) = match scan(c, Filter::parse(query), EXPORT_WINDOW, keep, String::new()).await {
        Ok(l) => l,
        Err(resp) => return *resp,
    };
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

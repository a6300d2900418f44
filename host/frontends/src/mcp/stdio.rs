//! MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, as rmcp frames it, with two
//! things rmcp's own transport does not do (issue #32):
//!
//! - **Every message is answered.** A line longer than the message limit (`[mcp]
//!   max_message_kb`, the same cap as an HTTP body) is read through without being kept — memory
//!   stays at the limit whatever its length — and answered with a JSON-RPC error naming the
//!   limit, carrying the request's `id` (found by [`IdScanner`] at the top level of the object,
//!   wherever it sits in the line), or `null` when there is none. rmcp discards such a line with
//!   a log line, and its client waits forever. A line that is JSON but not a message gets
//!   `Invalid Request` with its `id` too; a line that is not JSON is ignored (answering garbage
//!   can start an echo storm), as the official SDKs do.
//! - **End of input is a shutdown, not an abort.** With `hold_eof`, the end of stdin is
//!   reported to the caller and the transport then waits: the session stays open for the calls
//!   in flight to finish (or be cancelled at the grace period) and their answers to be written,
//!   until the caller ends it. rmcp alone gives them five seconds and then drops them.
//! - **The common call skips rmcp's service loop** (`stdio_direct.rs`): decided as the HTTP
//!   front door decides it, run on a task of its own and answered by this transport's writer.

use super::stdio_direct::{Read, StdioDirect};
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The JSON-RPC error code of a message over the size limit.
pub(crate) const TOO_LARGE_CODE: i64 = -32600;

/// The stdio transport: a bounded line reader on `R`, one writer on `W` shared by every answer.
pub(crate) struct StdioTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    max_line: usize,
    /// Set while reading through a line over the limit: its bytes so far and its `id`.
    oversized: Option<(u64, IdScanner)>,
    write: Arc<tokio::sync::Mutex<W>>,
    /// Told when stdin ends; `None`: the end of stdin ends the session at once.
    hold_eof: Option<tokio::sync::watch::Sender<bool>>,
    /// Requests received and not answered yet.
    pending: Arc<std::sync::atomic::AtomicUsize>,
    /// The session negotiated 2025-11-25 (set when its `initialize` answer is written).
    revision_2025: Arc<std::sync::atomic::AtomicBool>,
    /// The calls answered without rmcp's service loop (see `stdio_direct.rs`), when on.
    direct: Option<Arc<StdioDirect>>,
    /// A call being decided there: kept here, so a `receive` dropped by rmcp's loop while it
    /// waits loses nothing (the next one goes on with it).
    deciding: Option<std::pin::Pin<Box<dyn Future<Output = Read> + Send>>>,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> StdioTransport<R, W> {
    pub(crate) fn new(
        read: R,
        write: W,
        max_line: usize,
        hold_eof: Option<tokio::sync::watch::Sender<bool>>,
    ) -> Self {
        StdioTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            max_line,
            oversized: None,
            write: Arc::new(tokio::sync::Mutex::new(write)),
            hold_eof,
            pending: Arc::default(),
            revision_2025: Arc::default(),
            direct: None,
            deciding: None,
        }
    }

    /// Answer the session's common calls without rmcp's service loop (see `stdio_direct.rs`).
    pub(crate) fn with_direct(mut self, direct: Arc<StdioDirect>) -> Self {
        self.direct = Some(direct);
        self
    }

    /// What became of a call decided by the direct path: rmcp's message again, or answered.
    fn decided(&mut self, read: Read) -> Option<RxJsonRpcMessage<RoleServer>> {
        match read {
            Read::Rmcp(m) => {
                self.pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return Some(m);
            }
            Read::Answered(line) => self.answer(line),
            Read::Running(call) => {
                self.pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if let Some(direct) = &self.direct {
                    direct.run(call, self.write.clone(), self.pending.clone());
                }
            }
        }
        None
    }

    /// The number of requests received and not answered yet, as it changes.
    pub(crate) fn pending(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        self.pending.clone()
    }

    /// Write `line` (and a newline) in its own task: `receive` must never be left half-way
    /// through a write when rmcp drops it to serve another event.
    fn answer(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let write = self.write.clone();
        tokio::spawn(async move {
            let mut w = write.lock().await;
            if w.write_all(&line).await.is_ok() {
                let _ = w.flush().await;
            }
        });
    }

    /// Read until a whole line is in `self.line` (true) or the input ends (false). Lines over
    /// the limit are read through and answered here. Cancellation-safe: every byte taken from
    /// the buffer is accounted for in `self` before the next await.
    async fn next_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                if let Some((len, scan)) = self.oversized.take() {
                    self.too_large(len, &scan); // cut short by the end of input: still answered
                }
                return Ok(false);
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            let mut done = false;
            match &mut self.oversized {
                Some((len, scan)) => {
                    scan.feed(chunk);
                    *len += take as u64;
                    if newline.is_some() {
                        let (len, scan) = self.oversized.take().unwrap_or_default();
                        self.too_large(len, &scan);
                    }
                }
                None if self.line.len() + take > self.max_line + 1 => {
                    // Over the limit: from here on only its id is looked for.
                    let mut scan = IdScanner::default();
                    scan.feed(&self.line);
                    scan.feed(chunk);
                    let len = (self.line.len() + take) as u64;
                    self.line = Vec::new(); // give the memory back
                    if newline.is_some() {
                        self.too_large(len, &scan);
                    } else {
                        self.oversized = Some((len, scan));
                    }
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    done = newline.is_some();
                }
            }
            self.read.consume(take);
            if done {
                return Ok(true);
            }
        }
    }

    fn too_large(&self, len: u64, scan: &IdScanner) {
        let id = scan.id();
        tracing::warn!(
            bytes = len,
            limit = self.max_line,
            "an MCP message over the size limit was answered with an error and not read"
        );
        let message = format!(
            "message too large: {} KiB, over the limit of {} KiB for one MCP message ([mcp] max_message_kb); \
             nothing of it was read or run — pass large content as a file the tool can read",
            len.div_ceil(1024),
            self.max_line / 1024
        );
        self.answer(error_line(id, TOO_LARGE_CODE, &message));
    }
}

/// A JSON-RPC error response as one line of JSON.
fn error_line(id: serde_json::Value, code: i64, message: &str) -> Vec<u8> {
    let e = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    serde_json::to_vec(&e).unwrap_or_default()
}

impl<R, W> rmcp::transport::Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let pending = self.pending.clone();
        let revision_2025 = self.revision_2025.clone();
        if let (Some(direct), rmcp::model::JsonRpcMessage::Response(r)) = (&self.direct, &item) {
            direct.answering(&r.result);
        }
        async move {
            let answer = match &item {
                rmcp::model::JsonRpcMessage::Response(_) => true,
                rmcp::model::JsonRpcMessage::Error(e) => e.id.is_some(),
                _ => false,
            };
            if answer {
                super::stdio_direct::answered(&pending);
            }
            let mut line = match &item {
                // 2025-11-25: the `tasks` capability rmcp's types cannot carry (see tasks2025.rs).
                rmcp::model::JsonRpcMessage::Response(r)
                    if matches!(r.result, rmcp::model::ServerResult::InitializeResult(_)) =>
                {
                    let mut v = serde_json::to_value(&item).map_err(std::io::Error::other)?;
                    let v2025 = super::tasks2025::declare_tasks(&mut v);
                    revision_2025.store(v2025, std::sync::atomic::Ordering::SeqCst);
                    serde_json::to_vec(&v).map_err(std::io::Error::other)?
                }
                _ => serde_json::to_vec(&item).map_err(std::io::Error::other)?,
            };
            line.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&line).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(deciding) = &mut self.deciding {
                let read = deciding.await;
                self.deciding = None;
                match self.decided(read) {
                    Some(m) => return Some(m),
                    None => continue,
                }
            }
            match self.next_line().await {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    break;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // 2025-11-25: the task requests rmcp's types cannot carry (see tasks2025.rs).
            let renamed = if self.revision_2025.load(std::sync::atomic::Ordering::SeqCst) {
                super::tasks2025::rename(text)
            } else {
                None
            };
            let text = renamed.as_deref().unwrap_or(text);
            // A call in the usual shape is read in one pass (see `decode.rs`); the rest by rmcp.
            let read = match super::decode::tools_call(text) {
                Some(m) => {
                    if let Some(direct) = &self.direct
                        && let Some(client) = direct.client()
                    {
                        self.deciding = Some(Box::pin(direct.clone().decide(m, client)));
                        continue;
                    }
                    Ok(m)
                }
                None => serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text),
            };
            match read {
                Ok(m) => {
                    if let Some(direct) = &self.direct {
                        direct.saw(&m);
                    }
                    if matches!(m, rmcp::model::JsonRpcMessage::Request(_)) {
                        self.pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    return Some(m);
                }
                Err(e) if e.is_syntax() || e.is_eof() => {
                    tracing::debug!("ignoring a line that is not JSON: {e}");
                }
                Err(e) => {
                    let value: serde_json::Value = serde_json::from_slice(text).unwrap_or_default();
                    let method = value.get("method").and_then(|m| m.as_str()).unwrap_or("");
                    if value.get("id").is_none() && !method.is_empty() {
                        // A notification rmcp does not know (another protocol's, or a newer
                        // revision's): ignored, as rmcp does.
                        tracing::debug!(method, "ignoring an unknown notification");
                        continue;
                    }
                    let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
                    self.answer(error_line(id, -32600, &format!("invalid request: {e}")));
                }
            }
        }
        match &self.hold_eof {
            Some(tx) => {
                // The session stays open until the caller ends it (see the module docs).
                let _ = tx.send(true);
                std::future::pending().await
            }
            None => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        w.flush().await
    }
}

/// Finds the `id` member of a JSON object streamed through it a piece at a time, in constant
/// memory: it follows strings and nesting, and keeps only the top-level keys it is reading and
/// the value of `id` (up to [`IdScanner::MAX_ID`] bytes).
#[derive(Debug, Default)]
pub(crate) struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: reading a key (its first bytes), or the value after `"id":`.
    key: Option<Vec<u8>>,
    /// The last complete top-level key, until its value starts.
    last_key: Option<Vec<u8>>,
    /// The raw text of the `id` value being read, or read.
    id: Option<Vec<u8>>,
    reading_id: bool,
    id_done: bool,
    /// At depth 1, between `:` and the value: the next value is a member's value, not a key.
    expect_value: bool,
    broken: bool,
}

impl IdScanner {
    const MAX_ID: usize = 256;

    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.broken {
            if self.in_string {
                // Inside a string: jump to the next quote or backslash.
                if self.escaped {
                    self.escaped = false;
                    self.keep(&bytes[..1]);
                    bytes = &bytes[1..];
                    continue;
                }
                let Some(i) = memchr::memchr2(b'"', b'\\', bytes) else {
                    self.keep(bytes);
                    return;
                };
                self.keep(&bytes[..=i]);
                if bytes[i] == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    self.string_ended();
                }
                bytes = &bytes[i + 1..];
                continue;
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            if self.reading_id && !self.id_done {
                // A string, or a number (`true`, `null`…) that ends at a delimiter.
                let empty = self.id.as_ref().is_some_and(Vec::is_empty);
                if empty && b.is_ascii_whitespace() {
                    continue;
                } else if empty && b == b'"' {
                    self.in_string = true;
                    self.keep(b"\"");
                    continue;
                } else if empty && matches!(b, b'{' | b'[') {
                    self.id = None; // an object or array is no id
                    self.id_done = true;
                } else if matches!(b, b',' | b'}') || b.is_ascii_whitespace() {
                    self.id_done = true;
                } else {
                    self.keep(&[b]);
                    continue;
                }
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && !self.expect_value {
                        self.key = Some(Vec::new());
                    }
                }
                b'{' | b'[' => {
                    if self.depth == 0 && b == b'[' {
                        self.broken = true; // a batch: no single id
                    }
                    self.depth += 1;
                    self.expect_value = false;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.expect_value = false;
                }
                b':' if self.depth == 1 => {
                    self.expect_value = true;
                    if self.last_key.take().as_deref() == Some(b"id") && self.id.is_none() {
                        self.reading_id = true;
                        self.id = Some(Vec::new());
                    }
                }
                b',' if self.depth == 1 => self.expect_value = false,
                b if b.is_ascii_whitespace() => {}
                _ => {}
            }
        }
    }

    /// Keep string bytes that belong to a key being read or to the id's value.
    fn keep(&mut self, bytes: &[u8]) {
        if self.reading_id && !self.id_done {
            if let Some(id) = &mut self.id {
                if id.len() + bytes.len() > Self::MAX_ID {
                    self.id = None; // too long to be an id worth echoing
                    self.id_done = true;
                } else {
                    id.extend_from_slice(bytes);
                }
            }
        } else if let Some(k) = &mut self.key
            && k.len() < 8
        {
            k.extend_from_slice(bytes);
        }
    }

    fn string_ended(&mut self) {
        if self.reading_id && !self.id_done {
            self.id_done = true;
            return;
        }
        if let Some(mut k) = self.key.take() {
            k.pop(); // the closing quote
            self.last_key = Some(k);
        }
    }

    /// The `id`, if the object had a readable one.
    pub(crate) fn id(&self) -> serde_json::Value {
        match &self.id {
            Some(raw) if self.id_done || !raw.is_empty() => serde_json::from_slice(raw)
                .ok()
                .filter(|v: &serde_json::Value| v.is_string() || v.is_number())
                .unwrap_or(serde_json::Value::Null),
            _ => serde_json::Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(text: &str, piece: usize) -> serde_json::Value {
        let mut s = IdScanner::default();
        for chunk in text.as_bytes().chunks(piece) {
            s.feed(chunk);
        }
        s.id()
    }

    #[test]
    fn the_id_is_found_wherever_it_is_and_however_the_line_is_cut() {
        let big = "x\\\"y".repeat(1000);
        let cases = [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"a":"{big}"}}}}"#),
                serde_json::json!(7),
            ),
            (
                format!(r#"{{"method":"tools/call","params":{{"id":1,"a":"{big}"}},"id":"abc"}}"#),
                serde_json::json!("abc"),
            ),
            (
                format!(r#"{{ "params" : {{"x":["id",{{"id":3}}]}}, "id" : -12 , "m":"{big}"}}"#),
                serde_json::json!(-12),
            ),
            (
                format!(r#"{{"method":"notifications/x","params":{{"id":5,"t":"{big}"}}}}"#),
                serde_json::Value::Null,
            ),
            (format!(r#"{{"idx":1,"a":"{big}","id":"q\"uote"}}"#), serde_json::json!("q\"uote")),
            (format!(r#"[{{"id":1,"a":"{big}"}}]"#), serde_json::Value::Null),
            (format!(r#"{{"id":{{"not":"an id"}},"a":"{big}"}}"#), serde_json::Value::Null),
            (format!(r#"{{"a":"{big}""#), serde_json::Value::Null),
        ];
        for (text, want) in cases {
            for piece in [1, 2, 3, 7, 64, 100_000] {
                assert_eq!(id_of(&text, piece), want, "{piece}: {}", &text[..60.min(text.len())]);
            }
        }
    }
}

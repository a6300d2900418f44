//! The `[TOOL]` parser: a state machine that splits a model's reply into ordered prose, calls
//! and per-call parse errors. It runs in time linear in the input, never panics, and never
//! yields a half-parsed call: a malformed call becomes a [`ParseError`] for that call only, and
//! parsing resumes after it.
//!
//! This file depends only on `crate::call`, serde and std, so the fuzz targets (`fuzz/`) can
//! compile it on its own.

use crate::call::ToolCall;
use serde::Serialize;

/// Opening marker of a call.
pub const OPEN: &str = "[TOOL]";
/// Closing marker of a call.
pub const CLOSE: &str = "[/TOOL]";
/// `[TOOL]` markers parsed in one reply at most; later ones become errors.
pub const MAX_CALLS: usize = 64;
/// Bytes in one argument at most.
pub const MAX_ARG_BYTES: usize = 1024 * 1024;

/// One piece of a reply, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Segment {
    /// Prose between calls, verbatim.
    Text { text: String },
    /// A well-formed call.
    Call { call: ToolCall, raw: String },
    /// A malformed call: never executed.
    Error { error: ParseError, raw: String },
}

/// What was wrong with a call and where (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParseError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (line {}, column {})", self.message, self.line, self.column)
    }
}

/// Split `reply` into prose, calls and errors.
///
/// Linear time: the main loop only moves forward; at most [`MAX_CALLS`] call bodies are
/// parsed (any further `[TOOL]` becomes an error without being parsed), and the search for
/// the next `[/TOOL]` is cached, so a reply full of unclosed calls is not rescanned per call.
pub fn parse(reply: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut pos = 0; // byte offset of the first unconsumed char
    let mut attempts = 0;
    let mut lines = LineIndex::new(reply);
    let mut closes = NextClose::default();
    while let Some(rel) = reply[pos..].find(OPEN) {
        let start = pos + rel;
        if start > pos {
            push_text(&mut out, &reply[pos..start]);
        }
        let body = start + OPEN.len();
        attempts += 1;
        if attempts > MAX_CALLS {
            let (line, column) = lines.at(start);
            let end = recovery_point(reply, body, &mut closes);
            out.push(Segment::Error {
                error: ParseError {
                    message: format!(
                        "too many calls in one reply (at most {MAX_CALLS}); this one was not parsed"
                    ),
                    line,
                    column,
                },
                raw: reply[start..end].to_string(),
            });
            pos = end;
            continue;
        }
        match parse_call(reply, body) {
            Ok((call, end)) => {
                out.push(Segment::Call { call, raw: reply[start..end].to_string() });
                pos = end;
            }
            Err((message, at)) => {
                let (line, column) = lines.at(at.max(start));
                let end = recovery_point(reply, body, &mut closes);
                out.push(Segment::Error {
                    error: ParseError { message, line, column },
                    raw: reply[start..end].to_string(),
                });
                pos = end;
            }
        }
    }
    if pos < reply.len() {
        push_text(&mut out, &reply[pos..]);
    }
    out
}

/// Only the calls of a parsed reply.
pub fn calls(segments: &[Segment]) -> impl Iterator<Item = &ToolCall> {
    segments.iter().filter_map(|s| match s {
        Segment::Call { call, .. } => Some(call),
        _ => None,
    })
}

fn push_text(out: &mut Vec<Segment>, text: &str) {
    if let Some(Segment::Text { text: prev }) = out.last_mut() {
        prev.push_str(text);
    } else {
        out.push(Segment::Text { text: text.to_string() });
    }
}

/// The next `[/TOOL]` at or after a position, remembered between lookups (positions only grow).
#[derive(Default)]
struct NextClose {
    /// `Some(Some(i))`: the next close is at `i`; `Some(None)`: there is none after `from`.
    found: Option<Option<usize>>,
    from: usize,
}

impl NextClose {
    fn at_or_after(&mut self, reply: &str, pos: usize) -> Option<usize> {
        match self.found {
            Some(Some(i)) if i >= pos => return Some(i),
            Some(None) if pos >= self.from => return None,
            _ => {}
        }
        let found = reply[pos..].find(CLOSE).map(|i| pos + i);
        self.found = Some(found);
        self.from = pos;
        found
    }
}

/// After a malformed call, resume at the end of its `[/TOOL]` — unless another `[TOOL]` starts
/// first (the call was never closed), in which case resume there.
fn recovery_point(reply: &str, body: usize, closes: &mut NextClose) -> usize {
    let next_close = closes.at_or_after(reply, body);
    // Only look for the next open up to the close: that bounds the scan.
    let window_end = next_close.unwrap_or(reply.len());
    let next_open = reply[body..window_end].find(OPEN).map(|i| body + i);
    match (next_open, next_close) {
        (Some(o), _) => o,
        (None, Some(c)) => c + CLOSE.len(),
        (None, None) => reply.len(),
    }
}

type PResult<T> = Result<T, (String, usize)>;

/// A cursor over the reply.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }
}

fn describe(c: Option<char>) -> String {
    match c {
        None => "the end of the reply".into(),
        Some(c) if c.is_whitespace() => format!("{:?}", c),
        Some(c) => format!("`{c}`"),
    }
}

/// Parse `name(args) [/TOOL]` starting right after `[TOOL]`; returns the call and the byte
/// offset just past `[/TOOL]`.
fn parse_call(s: &str, body: usize) -> PResult<(ToolCall, usize)> {
    let mut c = Cursor { s, pos: body };
    c.skip_ws();
    let name_start = c.pos;
    while c.peek().is_some_and(|ch| ch == '_' || ch.is_alphanumeric() || ch == '-' || ch == '.') {
        c.bump();
    }
    let name = &s[name_start..c.pos];
    if name.is_empty() {
        if c.rest().starts_with(CLOSE) {
            return Err(("empty call: expected a tool name like `read(\"path\")`".into(), c.pos));
        }
        return Err((format!("expected a tool name, found {}", describe(c.peek())), c.pos));
    }
    c.skip_ws();
    if c.peek() != Some('(') {
        return Err((
            format!(
                "expected `(` after tool name `{name}`, found {}; write `{name}()` for no arguments",
                describe(c.peek())
            ),
            c.pos,
        ));
    }
    let open_paren = c.pos;
    c.bump();
    let args = parse_args(&mut c, open_paren)?;
    c.skip_ws();
    if !c.rest().starts_with(CLOSE) {
        let found =
            if c.rest().starts_with(OPEN) { "the next `[TOOL]`".to_string() } else { describe(c.peek()) };
        return Err((format!("expected `{CLOSE}` after the arguments of `{name}`, found {found}"), c.pos));
    }
    c.pos += CLOSE.len();
    Ok((ToolCall { name: name.to_string(), args }, c.pos))
}

fn parse_args(c: &mut Cursor, open_paren: usize) -> PResult<Vec<String>> {
    let mut args = Vec::new();
    loop {
        c.skip_ws();
        match c.peek() {
            None => return Err(("unclosed `(`: the arguments never end".into(), open_paren)),
            Some(')') => {
                c.bump();
                return Ok(args);
            }
            Some(',') => {
                return Err((
                    "empty argument: two commas in a row, or a comma right after `(`".into(),
                    c.pos,
                ));
            }
            _ => {}
        }
        if c.rest().starts_with(CLOSE) || c.rest().starts_with(OPEN) {
            return Err(("unclosed `(`: the call ends before its `)`".into(), open_paren));
        }
        let arg_start = c.pos;
        let arg = parse_arg(c)?;
        if arg.len() > MAX_ARG_BYTES {
            return Err((format!("argument {} is over {} KiB", args.len() + 1, MAX_ARG_BYTES / 1024), c.pos));
        }
        args.push(arg);
        c.skip_ws();
        // A string that swallowed a `[/TOOL]` and then does not end the argument list was almost
        // certainly never closed: say so, at its opening quote.
        let swallowed_close = c.s[arg_start..c.pos].contains(CLOSE);
        if swallowed_close && !matches!(c.peek(), Some(',') | Some(')')) {
            return Err((
                "unterminated string: it runs past `[/TOOL]`; close the quote before the marker".into(),
                arg_start,
            ));
        }
        if c.rest().starts_with(CLOSE) || c.rest().starts_with(OPEN) {
            return Err(("unclosed `(`: the call ends before its `)`".into(), open_paren));
        }
        match c.peek() {
            Some(',') => {
                c.bump();
                c.skip_ws();
                // A trailing comma before `)` is tolerated, as models write them.
                if c.peek() == Some(')') {
                    c.bump();
                    return Ok(args);
                }
            }
            Some(')') => {
                c.bump();
                return Ok(args);
            }
            None => return Err(("unclosed `(`: the arguments never end".into(), open_paren)),
            other => {
                return Err((
                    format!("expected `,` or `)` after argument {}, found {}", args.len(), describe(other)),
                    c.pos,
                ));
            }
        }
    }
}

fn parse_arg(c: &mut Cursor) -> PResult<String> {
    match c.peek() {
        Some('"') => quoted(c, '"', '"', true),
        Some('\'') => quoted(c, '\'', '\'', true),
        Some('“') => quoted(c, '“', '”', false),
        Some('‘') => quoted(c, '‘', '’', false),
        Some('„') => quoted(c, '„', '“', false),
        Some('{') | Some('[') => json_value(c),
        _ => bare(c),
    }
}

/// A quoted string. With `escapes`, JSON-style escapes are decoded (`\"`, `\\`, `\n`, `\uXXXX`
/// with surrogate pairs, and `\'`); an unknown escape keeps its backslash.
fn quoted(c: &mut Cursor, open: char, close: char, escapes: bool) -> PResult<String> {
    let start = c.pos;
    c.bump();
    let mut out = String::new();
    loop {
        let Some(ch) = c.bump() else {
            return Err((
                format!("unterminated string: the `{open}` here is never closed with `{close}`"),
                start,
            ));
        };
        if ch == close {
            return Ok(out);
        }
        if ch == '\\' && escapes {
            let esc_at = c.pos - 1;
            match c.bump() {
                Some('"') => out.push('"'),
                Some('\'') => out.push('\''),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('u') => out.push(unicode_escape(c, esc_at)?),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => {
                    return Err((
                        format!("unterminated string: the `{open}` here is never closed with `{close}`"),
                        start,
                    ));
                }
            }
        } else {
            out.push(ch);
        }
        if out.len() > MAX_ARG_BYTES {
            return Err((format!("string argument is over {} KiB", MAX_ARG_BYTES / 1024), start));
        }
    }
}

fn hex4(c: &mut Cursor, at: usize) -> PResult<u32> {
    let digits = c.rest().get(..4).filter(|d| d.chars().all(|h| h.is_ascii_hexdigit()));
    let Some(d) = digits else {
        return Err(("bad `\\u` escape: expected four hex digits".into(), at));
    };
    let v = u32::from_str_radix(d, 16).map_err(|_| ("bad `\\u` escape".to_string(), at))?;
    c.pos += 4;
    Ok(v)
}

fn unicode_escape(c: &mut Cursor, at: usize) -> PResult<char> {
    let hi = hex4(c, at)?;
    if (0xD800..0xDC00).contains(&hi) {
        if c.rest().starts_with("\\u") {
            c.pos += 2;
            let lo = hex4(c, at)?;
            if (0xDC00..0xE000).contains(&lo) {
                let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return char::from_u32(cp).ok_or_else(|| ("bad surrogate pair".to_string(), at));
            }
        }
        return Err(("bad `\\u` escape: a high surrogate must be followed by a low one".into(), at));
    }
    char::from_u32(hi).ok_or_else(|| ("bad `\\u` escape: a lone low surrogate".to_string(), at))
}

/// A bare JSON object or array, kept as raw text: brackets are balanced, strings inside are
/// skipped with their escapes, so commas, parentheses and quotes inside are content.
fn json_value(c: &mut Cursor) -> PResult<String> {
    let start = c.pos;
    let mut stack: Vec<char> = Vec::new();
    while let Some(ch) = c.bump() {
        match ch {
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                if stack.pop() != Some(ch) {
                    return Err((
                        format!("unbalanced brackets in JSON argument: unexpected `{ch}`"),
                        c.pos - 1,
                    ));
                }
                if stack.is_empty() {
                    return Ok(c.s[start..c.pos].to_string());
                }
            }
            '"' => {
                let str_start = c.pos - 1;
                loop {
                    match c.bump() {
                        None => return Err(("unterminated string inside JSON argument".into(), str_start)),
                        Some('\\') => {
                            c.bump();
                        }
                        Some('"') => break,
                        Some(_) => {}
                    }
                }
            }
            _ => {}
        }
        if c.pos - start > MAX_ARG_BYTES {
            return Err((format!("JSON argument is over {} KiB", MAX_ARG_BYTES / 1024), start));
        }
        if stack.len() > 256 {
            return Err(("JSON argument is nested more than 256 levels deep".into(), c.pos - 1));
        }
    }
    Err((format!("unbalanced brackets in JSON argument: {} never closed", stack.len()), start))
}

/// Unquoted text up to the next top-level `,` or `)`, trimmed. Parentheses inside nest.
fn bare(c: &mut Cursor) -> PResult<String> {
    let start = c.pos;
    let mut depth = 0usize;
    loop {
        if c.rest().starts_with(CLOSE) || c.rest().starts_with(OPEN) {
            break;
        }
        match c.peek() {
            None => break,
            Some(',') if depth == 0 => break,
            Some(')') if depth == 0 => break,
            Some('(') => depth += 1,
            Some(')') => depth -= 1,
            Some('"') | Some('\'') if c.pos > start => {
                // A quote in the middle of a bare word is content (e.g. don't).
            }
            _ => {}
        }
        c.bump();
    }
    let text = c.s[start..c.pos].trim_end();
    if text.is_empty() {
        return Err((format!("expected an argument, found {}", describe(c.peek())), start));
    }
    Ok(text.to_string())
}

/// Byte offset → (line, column), 1-based, columns in characters. Queries come in
/// non-decreasing order, so it walks forward from the previous answer (linear overall).
struct LineIndex<'a> {
    s: &'a str,
    offset: usize,
    line: usize,
    column: usize,
}

impl<'a> LineIndex<'a> {
    fn new(s: &'a str) -> Self {
        LineIndex { s, offset: 0, line: 1, column: 1 }
    }
    fn at(&mut self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.s.len());
        while !self.s.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.offset {
            *self = LineIndex::new(self.s);
        }
        for ch in self.s[self.offset..offset].chars() {
            if ch == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.offset = offset;
        (self.line, self.column)
    }
}

//! The `[TOOL]` parser: a state machine that splits a model's reply into ordered prose, calls,
//! per-call parse errors and examples. It runs in time linear in the input, never panics, and
//! never yields a half-parsed call: a malformed call becomes a [`ParseError`] for that call only,
//! and parsing resumes after it.
//!
//! Models that write Chinese switch to full-width punctuation mid-reply, so the syntax of a call
//! also accepts what a Chinese input method produces for the protocol's ASCII characters (see
//! [`OPEN_BRACKETS`], [`CLOSE_BRACKETS`], [`SLASHES`], `（` `）` and the quotes in `parse_arg`).
//! A full-width comma `，` is never a separator: it is text, as in `search(苹果，香蕉)`. Corner
//! brackets `「」` `『』` are text, never quotes (decided in issue #32: they mark quotations and
//! titles that belong to the value, and text cannot run into the next call).
//!
//! A quote never runs into the next call: the markers inside a call's arguments must pair up
//! (see `Markers`), or the quote is unterminated and parsing resumes at the next marker.
//!
//! A call written inside Markdown code (a fenced block or an inline code span) is an example a
//! model is showing, not a request: it becomes a [`Segment::Example`] and is never run.
//!
//! It depends only on `crate::call`, serde and std.
//!
//! The rooms: `marker` finds the markers (and checks the ones inside arguments pair up), `code`
//! reads where the reply's Markdown code is, `syntax` parses one call's name and argument list,
//! `arg` scans one argument (quoted, JSON or bare); this file is the state machine over a reply.

mod arg;
mod code;
mod marker;
mod syntax;
#[cfg(test)]
mod tests;

use crate::call::ToolCall;
use code::Code;
use marker::{Marker, NextClose, find_marker, recovery_point};
use serde::Serialize;
use syntax::parse_call;

/// Opening marker of a call, as the prompt teaches it.
pub const OPEN: &str = "[TOOL]";
/// Closing marker of a call, as the prompt teaches it.
pub const CLOSE: &str = "[/TOOL]";
/// The brackets a marker may open with: ASCII, full-width (an input method's full-width mode)
/// and the lenticular bracket (what a Chinese input method gives for `[`).
pub const OPEN_BRACKETS: [char; 3] = ['[', '［', '【'];
/// The brackets a marker may close with (any of them, whichever opened it).
pub const CLOSE_BRACKETS: [char; 3] = [']', '］', '】'];
/// The slash of a closing marker: ASCII or full-width.
pub const SLASHES: [char; 2] = ['/', '／'];
/// `[TOOL]` markers parsed in one reply at most; later ones become errors.
pub const MAX_CALLS: usize = 64;
/// Examples (markers inside Markdown code) parsed in one reply at most; later ones stay prose.
pub const MAX_EXAMPLES: usize = 64;
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
    /// A well-formed call inside Markdown code: an example, never executed.
    Example { call: ToolCall, raw: String, code: InCode },
}

impl Segment {
    /// The part of the reply this segment covers, verbatim (the segments of a reply, joined,
    /// are the reply).
    pub fn source(&self) -> &str {
        match self {
            Segment::Text { text } => text,
            Segment::Call { raw, .. } | Segment::Error { raw, .. } | Segment::Example { raw, .. } => raw,
        }
    }
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

/// Which kind of Markdown code an example sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeKind {
    /// A block between fence lines of three or more backticks or tildes.
    FencedBlock,
    /// Text between backtick runs of the same length, within one paragraph.
    Span,
}

/// The Markdown code an example sits in: its kind and where it starts (1-based line and column
/// of its opening fence line or backticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct InCode {
    pub kind: CodeKind,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for InCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            CodeKind::FencedBlock => "a Markdown code block (the fence",
            CodeKind::Span => "an inline code span (the backticks",
        };
        write!(f, "inside {what} at line {}, column {})", self.line, self.column)
    }
}

/// Split `reply` into prose, calls, errors and examples.
///
/// Linear time: the main loop only moves forward; at most [`MAX_CALLS`] call bodies and
/// [`MAX_EXAMPLES`] example bodies are parsed (any further `[TOOL]` becomes an error, or prose
/// in code, without being parsed), the search for the next `[/TOOL]` is cached, so a reply full
/// of unclosed calls is not rescanned per call, and the Markdown structure is read in one pass.
pub fn parse(reply: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut pos = 0; // byte offset of the first unconsumed char
    let mut attempts = 0;
    let mut examples = 0;
    let mut lines = LineIndex::new(reply);
    let mut closes = NextClose::default();
    let mut code: Option<Code> = None; // read at the first marker: most replies have none
    while let Some((start, open_len)) = find_marker(reply, pos, Marker::Open) {
        if start > pos {
            push_text(&mut out, &reply[pos..start]);
        }
        let body = start + open_len;
        let code = code.get_or_insert_with(|| Code::new(reply));
        if let Some(region) = code.region_at(start) {
            examples += 1;
            if examples > MAX_EXAMPLES {
                push_text(&mut out, &reply[start..region.end]);
                pos = region.end;
                continue;
            }
            // The example must end inside its code: parse only up to the code's end.
            match parse_call(&reply[..region.end], body) {
                Ok((call, end)) => {
                    let (line, column) = lines.at(region.start);
                    let code = InCode { kind: region.kind, line, column };
                    out.push(Segment::Example { call, raw: reply[start..end].to_string(), code });
                    pos = end;
                }
                Err(_) => {
                    // Half a call in code is an example too, but nothing to report: it is prose.
                    push_text(&mut out, &reply[start..body]);
                    pos = body;
                }
            }
            continue;
        }
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
                // What looks like Markdown inside a call's arguments is the argument's text.
                code.skip_to(end);
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

/// Only the calls of a parsed reply (not the examples).
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

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

use crate::call::ToolCall;
use serde::Serialize;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Open,
    Close,
}

/// The marker `s` starts with, if any, and its length in bytes: an opening bracket, a slash for
/// a closing marker, `TOOL`, a closing bracket.
fn marker_at(s: &str) -> Option<(Marker, usize)> {
    let bracket = s.chars().next().filter(|c| OPEN_BRACKETS.contains(c))?;
    let mut len = bracket.len_utf8();
    let mut kind = Marker::Open;
    if let Some(slash) = s[len..].chars().next().filter(|c| SLASHES.contains(c)) {
        kind = Marker::Close;
        len += slash.len_utf8();
    }
    let after = s[len..].strip_prefix("TOOL")?;
    let end = after.chars().next().filter(|c| CLOSE_BRACKETS.contains(c))?;
    Some((kind, len + "TOOL".len() + end.len_utf8()))
}

/// The first marker of `kind` that starts at or after `from`: its start and length. Each `TOOL`
/// in the text is looked at once, with the two characters before it.
fn find_marker(s: &str, from: usize, kind: Marker) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = s[at..].find("TOOL") {
        let t = at + i;
        let mut back = s[from..t].chars().rev();
        let start = match (kind, back.next(), back.next()) {
            (Marker::Open, Some(b), _) if OPEN_BRACKETS.contains(&b) => Some(t - b.len_utf8()),
            (Marker::Close, Some(sl), Some(b)) if SLASHES.contains(&sl) && OPEN_BRACKETS.contains(&b) => {
                Some(t - sl.len_utf8() - b.len_utf8())
            }
            _ => None,
        };
        if let Some(start) = start
            && let Some((k, len)) = marker_at(&s[start..])
            && k == kind
        {
            return Some((start, len));
        }
        at = t + "TOOL".len();
    }
    None
}

/// The next `[/TOOL]` at or after a position, remembered between lookups (positions only grow).
#[derive(Default)]
struct NextClose {
    /// `Some(Some((i, len)))`: the next close is at `i`; `Some(None)`: none after `from`.
    found: Option<Option<(usize, usize)>>,
    from: usize,
}

impl NextClose {
    fn at_or_after(&mut self, reply: &str, pos: usize) -> Option<(usize, usize)> {
        match self.found {
            Some(Some((i, len))) if i >= pos => return Some((i, len)),
            Some(None) if pos >= self.from => return None,
            _ => {}
        }
        let found = find_marker(reply, pos, Marker::Close);
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
    let window_end = next_close.map_or(reply.len(), |(c, _)| c);
    let next_open = find_marker(&reply[..window_end], body, Marker::Open).map(|(o, _)| o);
    match (next_open, next_close) {
        (Some(o), _) => o,
        (None, Some((c, len))) => c + len,
        (None, None) => reply.len(),
    }
}

/// Where Markdown code is, read the way a Markdown renderer (CommonMark) would show the reply,
/// in one pass; [`Code::region_at`] then walks it forward as the parser asks.
///
/// - A fence line is a line that starts, after any indentation, with three or more backticks or
///   tildes (a backtick fence's info string has no backtick). It opens a block that ends after
///   the next fence line of the same character, at least as long, with nothing after it — or at
///   the end of the reply.
/// - Outside blocks, a run of N backticks opens a code span that ends at the next run of exactly
///   N backticks in the same paragraph (no blank line or fence line between); a run with no such
///   partner is a literal backtick.
/// - Indented code blocks, HTML `<code>` and backslash-escaped backticks are not recognised:
///   models write fences.
///
/// What looks like Markdown inside a call that ran (`skip_to`) is argument text, not structure.
struct Code {
    len: usize,
    fences: Vec<Fence>,
    runs: Vec<Run>,
    /// Starts of blank lines and fence lines: a code span does not cross them.
    breaks: Vec<usize>,
    fi: usize,
    ri: usize,
    bi: usize,
    region: Option<Region>,
}

struct Fence {
    /// The first fence character.
    start: usize,
    /// Just past the line (and its newline).
    end: usize,
    ch: char,
    len: usize,
    /// Nothing after the fence characters: the line can close a block.
    bare: bool,
}

struct Run {
    start: usize,
    len: usize,
    /// The index of the next run of the same length.
    next_same: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    kind: CodeKind,
}

impl Code {
    fn new(s: &str) -> Code {
        let mut fences = Vec::new();
        let mut runs = Vec::new();
        let mut breaks = Vec::new();
        let mut line_start = 0;
        for line in s.split_inclusive('\n') {
            let content = line.trim_end_matches(['\n', '\r']);
            let trimmed = content.trim_start_matches([' ', '\t']);
            if trimmed.trim_end().is_empty() {
                breaks.push(line_start);
            } else if let Some((ch, len, bare)) = fence_line(trimmed) {
                let indent = content.len() - trimmed.len();
                fences.push(Fence {
                    start: line_start + indent,
                    end: line_start + line.len(),
                    ch,
                    len,
                    bare,
                });
                breaks.push(line_start);
            } else {
                let bytes = content.as_bytes();
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i] == b'`' {
                        let run_start = i;
                        while i < bytes.len() && bytes[i] == b'`' {
                            i += 1;
                        }
                        runs.push(Run { start: line_start + run_start, len: i - run_start, next_same: None });
                    } else {
                        i += 1;
                    }
                }
            }
            line_start += line.len();
        }
        let mut last_of_len: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for (i, run) in runs.iter_mut().enumerate().rev() {
            run.next_same = last_of_len.insert(run.len, i);
        }
        Code { len: s.len(), fences, runs, breaks, fi: 0, ri: 0, bi: 0, region: None }
    }

    /// The code region that contains byte `at`, if any. Calls come with growing `at`; every
    /// fence line and backtick run is looked at once over all calls.
    fn region_at(&mut self, at: usize) -> Option<Region> {
        loop {
            if let Some(r) = self.region {
                if at < r.end {
                    return Some(r);
                }
                self.region = None;
            }
            let fence = self.fences.get(self.fi).map(|f| f.start).filter(|&p| p < at);
            let run = self.runs.get(self.ri).map(|r| r.start).filter(|&p| p < at);
            match (fence, run) {
                (None, None) => return None,
                (Some(f), r) if r.is_none_or(|r| f < r) => self.open_fence(),
                _ => self.open_span(),
            }
        }
    }

    fn open_fence(&mut self) {
        let open = &self.fences[self.fi];
        let mut j = self.fi + 1;
        let end = loop {
            match self.fences.get(j) {
                None => break self.len,
                Some(f) if f.ch == open.ch && f.len >= open.len && f.bare => break f.end,
                Some(_) => j += 1,
            }
        };
        self.region = Some(Region { start: open.start, end, kind: CodeKind::FencedBlock });
        self.skip_to(end);
    }

    fn open_span(&mut self) {
        let run = &self.runs[self.ri];
        while self.breaks.get(self.bi).is_some_and(|&b| b <= run.start) {
            self.bi += 1;
        }
        let limit = self.breaks.get(self.bi).copied().unwrap_or(self.len);
        match run.next_same.map(|k| &self.runs[k]) {
            Some(close) if close.start < limit => {
                let region = Region { start: run.start, end: close.start + close.len, kind: CodeKind::Span };
                self.region = Some(region);
                self.skip_to(region.end);
            }
            _ => self.ri += 1, // no partner: a literal backtick
        }
    }

    /// Forget the Markdown before `end` (inside a region just opened, or a call that ran).
    fn skip_to(&mut self, end: usize) {
        while self.fences.get(self.fi).is_some_and(|f| f.start < end) {
            self.fi += 1;
        }
        while self.runs.get(self.ri).is_some_and(|r| r.start < end) {
            self.ri += 1;
        }
    }
}

/// A fence line (after its indentation): the fence character, how many, and whether nothing
/// follows them.
fn fence_line(t: &str) -> Option<(char, usize, bool)> {
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.len() - t.trim_start_matches(ch).len();
    if len < 3 {
        return None;
    }
    let info = &t[len..];
    if ch == '`' && info.contains('`') {
        return None; // ```x``` on one line is a code span, not a fence
    }
    Some((ch, len, info.trim().is_empty()))
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
        Some('`') => "a backtick".into(),
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
        if matches!(marker_at(c.rest()), Some((Marker::Close, _))) {
            return Err(("empty call: expected a tool name like `read(\"path\")`".into(), c.pos));
        }
        return Err((format!("expected a tool name, found {}", describe(c.peek())), c.pos));
    }
    c.skip_ws();
    if !matches!(c.peek(), Some('(' | '（')) {
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
    let found = match marker_at(c.rest()) {
        Some((Marker::Close, len)) => {
            c.pos += len;
            return Ok((ToolCall { name: name.to_string(), args }, c.pos));
        }
        Some((Marker::Open, _)) => "the next `[TOOL]`".to_string(),
        None => describe(c.peek()),
    };
    Err((format!("expected `{CLOSE}` after the arguments of `{name}`, found {found}"), c.pos))
}

fn parse_args(c: &mut Cursor, open_paren: usize) -> PResult<Vec<String>> {
    let mut args = Vec::new();
    let mut markers = Markers::default();
    loop {
        c.skip_ws();
        match c.peek() {
            None => return Err(("unclosed `(`: the arguments never end".into(), open_paren)),
            Some(')' | '）') => {
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
        if marker_at(c.rest()).is_some() {
            return Err(("unclosed `(`: the call ends before its `)`".into(), open_paren));
        }
        let arg_start = c.pos;
        let arg = parse_arg(c)?;
        if let Err(message) = markers.check(&c.s[arg_start..c.pos]) {
            return Err((message.into(), arg_start));
        }
        if arg.len() > MAX_ARG_BYTES {
            return Err((format!("argument {} is over {} KiB", args.len() + 1, MAX_ARG_BYTES / 1024), c.pos));
        }
        args.push(arg);
        c.skip_ws();
        // A string that swallowed a `[/TOOL]` and then does not end the argument list was almost
        // certainly never closed: say so, at its opening quote.
        let swallowed_close = find_marker(&c.s[..c.pos], arg_start, Marker::Close).is_some();
        if swallowed_close && !matches!(c.peek(), Some(',' | ')' | '）')) {
            return Err((
                "unterminated string: it runs past `[/TOOL]`; close the quote before the marker".into(),
                arg_start,
            ));
        }
        if marker_at(c.rest()).is_some() {
            return Err(("unclosed `(`: the call ends before its `)`".into(), open_paren));
        }
        match c.peek() {
            Some(',') => {
                c.bump();
                c.skip_ws();
                // A trailing comma before `)` is tolerated, as models write them.
                if matches!(c.peek(), Some(')' | '）')) {
                    c.bump();
                    return Ok(args);
                }
            }
            Some(')' | '）') => {
                c.bump();
                return Ok(args);
            }
            None => return Err(("unclosed `(`: the arguments never end".into(), open_paren)),
            Some('，') => {
                return Err((
                    format!(
                        "expected `,` or `)` after argument {}, found a full-width comma `，`, which is \
                         text and never separates arguments; write `,` between arguments",
                        args.len()
                    ),
                    c.pos,
                ));
            }
            other => {
                return Err((
                    format!("expected `,` or `)` after argument {}, found {}", args.len(), describe(other)),
                    c.pos,
                ));
            }
        }
    }
}

/// The markers inside a call's arguments must pair up the way a quoted call would: each
/// `[TOOL]` closed by a `[/TOOL]` inside the same argument, and no `[TOOL]` after a `[/TOOL]`
/// that closed nothing (in that argument or an earlier one). An argument that breaks this runs
/// into the next call — its quote was never closed where the model meant — so it is
/// unterminated: the call is an error and parsing resumes at the next marker, where the call
/// the model meant next runs on its own (issue #32). `"[/TOOL] inside"` and `"show [TOOL] f()
/// [/TOOL]"` stay content; `\u005b` writes a bracket that is no marker. One pass over the text.
#[derive(Default)]
struct Markers {
    /// A `[/TOOL]` that closed nothing.
    stray_close: bool,
}

impl Markers {
    fn check(&mut self, raw: &str) -> Result<(), &'static str> {
        let mut open = false; // a `[TOOL]` in this argument not closed yet
        let mut at = 0;
        while let Some(i) = raw[at..].find("TOOL") {
            let t = at + i;
            at = t + "TOOL".len();
            let mut back = raw[..t].chars().rev();
            let start = match (back.next(), back.next()) {
                (Some(b), _) if OPEN_BRACKETS.contains(&b) => t - b.len_utf8(),
                (Some(sl), Some(b)) if SLASHES.contains(&sl) && OPEN_BRACKETS.contains(&b) => {
                    t - sl.len_utf8() - b.len_utf8()
                }
                _ => continue,
            };
            match marker_at(&raw[start..]) {
                Some((Marker::Open, _)) if self.stray_close => {
                    return Err(
                        "unterminated string: it runs past `[/TOOL]`; close the quote before the marker",
                    );
                }
                Some((Marker::Open, _)) => open = true,
                Some((Marker::Close, _)) if open => open = false,
                Some((Marker::Close, _)) => self.stray_close = true,
                None => {}
            }
        }
        if open {
            return Err(
                "unterminated string: it runs into the `[TOOL]` of the next call; close the quote before \
                        the marker",
            );
        }
        Ok(())
    }
}

fn parse_arg(c: &mut Cursor) -> PResult<String> {
    match c.peek() {
        Some('"') => quoted(c, '"', '"', true),
        Some('\'') => quoted(c, '\'', '\'', true),
        Some('“') => quoted(c, '“', '”', false),
        Some('‘') => quoted(c, '‘', '’', false),
        Some('„') => quoted(c, '„', '“', false),
        // Full-width quotation marks, from an input method's full-width mode.
        Some('＂') => quoted(c, '＂', '＂', false),
        Some('＇') => quoted(c, '＇', '＇', false),
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

/// Unquoted text up to the next top-level `,`, `)` or `）`, trimmed. Parentheses of either width
/// nest; a full-width comma `，` is text.
fn bare(c: &mut Cursor) -> PResult<String> {
    let start = c.pos;
    let mut depth = 0usize;
    loop {
        if marker_at(c.rest()).is_some() {
            break;
        }
        match c.peek() {
            None => break,
            Some(',') if depth == 0 => break,
            Some(')' | '）') if depth == 0 => break,
            Some('(' | '（') => depth += 1,
            Some(')' | '）') => depth -= 1,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn one_call(input: &str) -> ToolCall {
        match parse(input).as_slice() {
            [Segment::Call { call, .. }] => call.clone(),
            other => panic!("expected one call for {input:?}, got {other:?}"),
        }
    }

    fn error_message(input: &str) -> String {
        match parse(input).as_slice() {
            [Segment::Error { error, .. }] => error.message.clone(),
            other => panic!("expected one error for {input:?}, got {other:?}"),
        }
    }

    #[test]
    fn the_issue_example_is_one_call_with_one_argument() {
        assert_eq!(one_call("[TOOL] echo（“苹果，香蕉”）[/TOOL]"), ToolCall::new("echo", ["苹果，香蕉"]));
    }

    #[test]
    fn every_marker_form_delimits_a_call() {
        for open in OPEN_BRACKETS {
            for close in CLOSE_BRACKETS {
                for slash in SLASHES {
                    let input = format!("a {open}TOOL{close} ls(\".\") {open}{slash}TOOL{close} b");
                    let segs = parse(&input);
                    assert_eq!(calls(&segs).count(), 1, "{input}: {segs:?}");
                    assert_eq!(segs.len(), 3, "{input}: {segs:?}");
                }
            }
        }
        // Anything else around TOOL is prose.
        for input in [
            "「TOOL」 ls() 「/TOOL」",
            "［ＴＯＯＬ］ ls() ［／ＴＯＯＬ］",
            "(TOOL) ls() (/TOOL)",
            "[TOOL ls() [/TOOL]",
        ] {
            assert_eq!(calls(&parse(input)).count(), 0, "{input}");
        }
    }

    #[test]
    fn full_width_parentheses_delimit_only_the_argument_list() {
        assert_eq!(one_call("[TOOL] f（a, b）[/TOOL]").args, ["a", "b"]);
        assert_eq!(one_call("[TOOL] f（\"a）\"）[/TOOL]").args, ["a）"]);
        assert_eq!(one_call("[TOOL] f（[\"（\", \"）\"]）[/TOOL]").args, ["[\"（\", \"）\"]"]);
        assert_eq!(one_call("[TOOL] f(x（y）z) [/TOOL]").args, ["x（y）z"]);
        assert_eq!(one_call("[TOOL] f（）[/TOOL]").args, Vec::<String>::new());
        assert_eq!(one_call("[TOOL] f(\"a\",）[/TOOL]").args, ["a"]);
    }

    #[test]
    fn a_full_width_comma_is_never_a_separator() {
        assert_eq!(one_call("[TOOL] search(苹果，香蕉) [/TOOL]").args, ["苹果，香蕉"]);
        assert_eq!(one_call("[TOOL] search(“苹果，香蕉”) [/TOOL]").args, ["苹果，香蕉"]);
        let message = error_message("[TOOL] copy(\"a\"，\"b\") [/TOOL]");
        assert!(message.contains("full-width comma") && message.contains("write `,`"), "{message}");
    }

    #[test]
    fn full_width_quotes_quote_without_escapes() {
        assert_eq!(one_call("[TOOL] f(＂a, \"b\" \\n＂) [/TOOL]").args, ["a, \"b\" \\n"]);
        assert_eq!(one_call("[TOOL] f(＇x＇, ＂y＂) [/TOOL]").args, ["x", "y"]);
        // Corner brackets are text: in Chinese prose they mark quotations and titles.
        assert_eq!(one_call("[TOOL] f(「x」) [/TOOL]").args, ["「x」"]);
    }

    #[test]
    fn calls_in_markdown_code_are_examples_and_never_calls() {
        let reply = "Use it like this:\n\n```text\n[TOOL] delete(\"all\") [/TOOL]\n```\n\nor inline: \
                     `[TOOL] delete(\"x\") [/TOOL]`; now: [TOOL] ls(\".\") [/TOOL]";
        let segs = parse(reply);
        assert_eq!(calls(&segs).map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ls"]);
        let examples: Vec<_> = segs
            .iter()
            .filter_map(|s| match s {
                Segment::Example { call, code, .. } => Some((call.args[0].as_str(), *code)),
                _ => None,
            })
            .collect();
        assert_eq!(
            examples,
            [
                ("all", InCode { kind: CodeKind::FencedBlock, line: 3, column: 1 }),
                ("x", InCode { kind: CodeKind::Span, line: 7, column: 12 }),
            ]
        );
        assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
        assert_eq!(examples[0].1.to_string(), "inside a Markdown code block (the fence at line 3, column 1)");
    }

    #[test]
    fn markdown_inside_a_call_that_ran_is_argument_text() {
        // The argument opens a fence and a code span that never close; the next call still runs.
        let segs = parse("[TOOL] write(\"a.md\", \"`x\n```\n\") [/TOOL]\nthen ` [TOOL] ls(\".\") [/TOOL]");
        assert_eq!(calls(&segs).count(), 2, "{segs:?}");
    }

    #[test]
    fn a_failed_call_does_not_hide_the_fence_it_runs_into() {
        let segs = parse("[TOOL] read(\"a\")\n```\n[TOOL] delete(\"x\") [/TOOL]\n```\n");
        assert!(matches!(&segs[0], Segment::Error { .. }), "{segs:?}");
        assert!(matches!(&segs[1], Segment::Example { call, .. } if call.name == "delete"), "{segs:?}");
        assert_eq!(calls(&segs).count(), 0);
    }

    #[test]
    fn the_example_cap_holds() {
        let reply =
            format!("```\n{}```\n[TOOL] ls() [/TOOL]", "[TOOL] f() [/TOOL]\n".repeat(MAX_EXAMPLES + 5));
        let segs = parse(&reply);
        let examples = segs.iter().filter(|s| matches!(s, Segment::Example { .. })).count();
        assert_eq!(examples, MAX_EXAMPLES);
        assert_eq!(calls(&segs).count(), 1, "the call after the block still runs");
        assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
    }

    /// Issue #32: a quote that is never closed must not swallow the next call.
    #[test]
    fn an_unterminated_typographic_quote_does_not_swallow_the_next_call() {
        let reply = "[TOOL] echo（“没有结束）[/TOOL] 然后 [TOOL] echo（“好”）[/TOOL]";
        let segs = parse(reply);
        assert!(
            matches!(&segs[0], Segment::Error { error, raw }
                if error.message.contains("unterminated string") && raw.ends_with("[/TOOL]")),
            "{segs:?}"
        );
        assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("echo", ["好"])]);
        assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
        // Every kind of quote, and a JSON argument, the same way.
        for (open, close) in
            [("“", "”"), ("‘", "’"), ("„", "“"), ("＂", "＂"), ("＇", "＇"), ("\"", "\""), ("'", "'")]
        {
            let reply = format!("[TOOL] a({open}x) [/TOOL] b [TOOL] a({open}y{close}) [/TOOL]");
            let segs = parse(&reply);
            assert!(matches!(&segs[0], Segment::Error { .. }), "{reply}: {segs:?}");
            assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["y"])], "{reply}");
        }
        let segs = parse("[TOOL] a({\"k\": \"x) [/TOOL] b [TOOL] a({\"k\": \"y\"}) [/TOOL]");
        assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["{\"k\": \"y\"}"])]);
        // A quote that runs into the next call before any `[/TOOL]`: also unterminated.
        let segs = parse("[TOOL] a(“x [TOOL] a(“y”) [/TOOL]");
        assert!(matches!(&segs[0], Segment::Error { error, .. } if error.message.contains("unterminated")));
        assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["y"])], "{segs:?}");
    }

    #[test]
    fn markers_inside_a_quote_are_content_when_they_pair_up() {
        assert_eq!(
            one_call("[TOOL] echo(\"[/TOOL] inside string\") [/TOOL]").args,
            ["[/TOOL] inside string"]
        );
        assert_eq!(one_call("[TOOL] echo(“a 【/TOOL】 b”) [/TOOL]").args, ["a 【/TOOL】 b"]);
        assert_eq!(
            one_call("[TOOL] write(\"p.md\", \"call it as [TOOL] ls() [/TOOL] here\") [/TOOL]").args,
            ["p.md", "call it as [TOOL] ls() [/TOOL] here"]
        );
        // An escaped bracket is no marker: the way to write a lone `[TOOL]` in an argument.
        assert_eq!(
            one_call("[TOOL] echo(\"\\u005bTOOL] starts a call\") [/TOOL]").args,
            ["[TOOL] starts a call"]
        );
        let segs = parse("[TOOL] echo(\"a lone [TOOL] here\") [/TOOL]");
        assert!(
            matches!(&segs[0], Segment::Error { error, .. } if error.message.contains("runs into the `[TOOL]`")),
            "{segs:?}"
        );
        assert_eq!(calls(&segs).count(), 0);
    }

    /// Decided for issue #32: `「…」` and `『…』` are text, never quotes. In Chinese and Japanese
    /// prose they mark quotations and titles that are part of the value (`search(「三体」)`), and
    /// being text they cannot run into the next call; a model that needs a comma inside an
    /// argument writes the `"…"` the prompt teaches.
    #[test]
    fn corner_brackets_are_text_and_never_quote() {
        assert_eq!(one_call("[TOOL] search(「三体」) [/TOOL]").args, ["「三体」"]);
        assert_eq!(one_call("[TOOL] search(『題名』) [/TOOL]").args, ["『題名』"]);
        assert_eq!(one_call("[TOOL] f(「a, b」) [/TOOL]").args, ["「a", "b」"]);
        assert_eq!(one_call("[TOOL] f(“「a, b」”) [/TOOL]").args, ["「a, b」"]);
        let segs = parse("[TOOL] f(「没有结束) [/TOOL] [TOOL] f(『好』) [/TOOL]");
        let ran: Vec<_> = calls(&segs).cloned().collect();
        assert_eq!(ran, [ToolCall::new("f", ["「没有结束"]), ToolCall::new("f", ["『好』"])]);
        let segs = parse("[TOOL] f(「没有结束）[/TOOL] 然后 [TOOL] f（「好」）[/TOOL]");
        assert_eq!(calls(&segs).count(), 2, "{segs:?}");
    }

    use proptest::prelude::*;

    /// Whether the markers in `arg` pair up (written apart from the parser).
    fn paired(arg: &str) -> bool {
        let mut depth = 0i32;
        let mut stray = false;
        let mut i = 0;
        while i < arg.len() {
            match marker_at(&arg[i..]) {
                Some((Marker::Open, len)) => {
                    if stray {
                        return false;
                    }
                    depth = 1;
                    i += len;
                }
                Some((Marker::Close, len)) => {
                    if depth == 0 {
                        stray = true;
                    }
                    depth = 0;
                    i += len;
                }
                None => i += arg[i..].chars().next().map_or(1, char::len_utf8),
            }
        }
        depth == 0
    }

    /// One call of a generated reply: well formed, or with its quote never closed.
    fn arb_reply_call() -> impl Strategy<Value = (bool, String, String)> {
        let quotes = prop_oneof![
            Just(("\"", "\"")),
            Just(("'", "'")),
            Just(("“", "”")),
            Just(("‘", "’")),
            Just(("„", "“")),
            Just(("＂", "＂")),
            Just(("＇", "＇")),
        ];
        (any::<bool>(), "[a-z]{1,6}", "[a-z 苹果好，。）)]{0,8}", quotes, 0usize..3, 0usize..2).prop_map(
            |(good, name, text, (open, close), bracket, paren)| {
                let (o, c) = (["[", "【", "［"][bracket], ["]", "】", "］"][bracket]);
                let (lp, rp) = (["(", "（"][paren], [")", "）"][paren]);
                let arg = text.trim().to_string();
                let close = if good { close } else { "" };
                let raw = format!("{o}TOOL{c} {name}{lp}{open}{arg}{close}{rp} {o}/TOOL{c}");
                (good, raw, format!("{name}\u{0}{arg}"))
            },
        )
    }

    /// A call written with any mix of the accepted forms; arguments are JSON strings.
    fn render_with(call: &ToolCall, forms: &[usize; 6]) -> String {
        let open = format!("{}TOOL{}", OPEN_BRACKETS[forms[0] % 3], CLOSE_BRACKETS[forms[1] % 3]);
        let close = format!(
            "{}{}TOOL{}",
            OPEN_BRACKETS[forms[2] % 3],
            SLASHES[forms[3] % 2],
            CLOSE_BRACKETS[forms[1] % 3]
        );
        let (lp, rp) = (["(", "（"][forms[4] % 2], [")", "）"][forms[5] % 2]);
        let args: Vec<String> = call.args.iter().map(|a| serde_json::to_string(a).unwrap()).collect();
        format!("{open} {}{lp}{}{rp} {close}", call.name, args.join(", "))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn every_form_round_trips_and_is_an_example_in_code(
            name in "[A-Za-z_][A-Za-z0-9_]{0,12}",
            args in proptest::collection::vec(any::<String>(), 0..5),
            forms in proptest::array::uniform6(0usize..6),
            fence in 0usize..3,
        ) {
            let call = ToolCall { name, args };
            let rendered = render_with(&call, &forms);
            prop_assert_eq!(parse(&rendered), vec![Segment::Call { call: call.clone(), raw: rendered.clone() }]);
            let in_code = match fence {
                0 => format!("```\n{rendered}\n```\n"),
                1 => format!("~~~~ text\n{rendered}\n~~~~"),
                _ => {
                    // As a Markdown author does: more backticks than any run inside.
                    let longest = rendered.split(|c| c != '`').map(str::len).max().unwrap_or(0);
                    let ticks = "`".repeat(longest + 1);
                    format!("see {ticks} {rendered} {ticks} here")
                }
            };
            let segs = parse(&in_code);
            prop_assert!(calls(&segs).next().is_none());
            let examples: Vec<&ToolCall> = segs.iter().filter_map(|s| match s {
                Segment::Example { call, .. } => Some(call),
                _ => None,
            }).collect();
            prop_assert_eq!(examples, vec![&call]);
        }

        /// Issue #32: a reply of calls, some with a quote never closed, separated by prose. Every
        /// well-formed call runs, once, exactly as written and in order; no malformed one runs,
        /// and no argument that ran holds a marker.
        #[test]
        fn a_broken_quote_never_swallows_the_calls_after_it(
            parts in proptest::collection::vec((arb_reply_call(), "[a-z 然后，。]{0,6}"), 1..8),
        ) {
            let reply: String = parts.iter().map(|((_, raw, _), prose)| format!("{raw}{prose}")).collect();
            let want: Vec<String> = parts.iter().filter(|((good, ..), _)| *good).map(|((_, _, w), _)| w.clone()).collect();
            let segs = parse(&reply);
            let ran: Vec<String> = calls(&segs).map(|c| format!("{}\u{0}{}", c.name, c.args.join("\u{0}"))).collect();
            prop_assert_eq!(ran, want, "{}", reply);
            prop_assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
        }

        /// Issue #32's property, over token soup: no call that runs holds in its arguments a
        /// `[TOOL]` that is not closed inside them, or that follows a `[/TOOL]` closing nothing —
        /// the shape of a call swallowed by a quote that never ended.
        #[test]
        fn no_argument_that_runs_holds_the_start_of_another_call(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("[TOOL] "), Just("【TOOL】"), Just("[/TOOL]"), Just("【／TOOL】"), Just("echo"), Just("（"),
                    Just("）"), Just("("), Just(")"), Just(","), Just("“"), Just("”"), Just("‘"), Just("’"),
                    Just("＂"), Just("\""), Just("'"), Just("{\"k\": "), Just("}"), Just("「"), Just("」"),
                    Just(" 然后 "), Just("好"),
                ].prop_map(str::to_string),
                0..40,
            )
        ) {
            let input: String = parts.concat();
            let segs = parse(&input);
            for s in &segs {
                if let Segment::Call { raw, .. } = s {
                    // The call's text after its `[TOOL]`: arguments, then its own `[/TOOL]`.
                    let (_, open) = marker_at(raw).unwrap();
                    prop_assert!(paired(&raw[open..]), "{:?} ran {:?}", input, raw);
                }
            }
        }

        #[test]
        fn replies_with_full_width_forms_and_markdown_are_covered(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("[TOOL]"), Just("【TOOL】"), Just("［TOOL］"), Just("[/TOOL]"), Just("【／TOOL】"),
                    Just("［/TOOL］"), Just("（"), Just("）"), Just("("), Just(")"), Just("，"), Just(","),
                    Just("“"), Just("”"), Just("＂"), Just("\""), Just("`"), Just("``"), Just("\n```\n"),
                    Just("\n~~~\n"), Just("\n\n"), Just(" "), Just("f"), Just("[{"), Just("}]"),
                ].prop_map(str::to_string),
                0..60,
            )
        ) {
            let input: String = parts.concat();
            let segs = parse(&input);
            prop_assert_eq!(segs.iter().map(Segment::source).collect::<String>(), input.clone());
            for s in &segs {
                if let Segment::Example { call, raw, .. } = s {
                    // An example is a whole call: alone, it parses as exactly that call.
                    prop_assert_eq!(parse(raw), vec![Segment::Call { call: call.clone(), raw: raw.clone() }]);
                }
            }
        }
    }

    /// Inputs that take quadratic time in a naive parser: full-width markers that never close,
    /// examples that never end, and backtick runs that have no partner (a naive code-span
    /// matcher searches the rest of the reply for each).
    #[test]
    fn adversarial_full_width_and_markdown_inputs_stay_linear() {
        let n = 40_000;
        let mut inputs: Vec<String> = [
            "【TOOL】 a（",
            "［TOOL］ a（“",
            "[TOOL] a(\"x\"，",
            "【/TOOL】［",
            "`[TOOL] a(`",
            "```\n[TOOL] a(\n",
            "~~~\n",
            "` `` ",
            "[TOOL] a(\"`\") [/TOOL]`",
        ]
        .iter()
        .map(|unit| unit.repeat(n))
        .collect();
        inputs.push(format!("```\n{}", "[TOOL] a(“".repeat(n)));
        let mut ladder: String = (1..2_000).map(|k| "`".repeat(k) + " x ").collect();
        ladder.push_str("[TOOL] ls() [/TOOL]");
        inputs.push(ladder);
        for input in inputs {
            let start = std::time::Instant::now();
            let segs = parse(&input);
            assert_eq!(segs.iter().map(Segment::source).collect::<String>(), input);
            // Generous for a loaded debug build; a quadratic parser needs minutes here.
            let head: String = input.chars().take(12).collect();
            assert!(start.elapsed().as_secs() < 20, "{head:?}… took {:?}", start.elapsed());
        }
    }
}

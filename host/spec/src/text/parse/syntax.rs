//! One call's syntax after its `[TOOL]`: the tool's name, the argument list (separators, the
//! markers inside it, the size cap) and the closing `[/TOOL]`.

use super::arg::{Cursor, PResult, describe, parse_arg};
use super::marker::{Marker, Markers, find_marker, marker_at};
use super::{CLOSE, MAX_ARG_BYTES};
use crate::call::ToolCall;

/// Parse `name(args) [/TOOL]` starting right after `[TOOL]`; returns the call and the byte
/// offset just past `[/TOOL]`.
pub(super) fn parse_call(s: &str, body: usize) -> PResult<(ToolCall, usize)> {
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

//! One argument of a call, scanned from a cursor over the reply: a quoted string (ASCII,
//! typographic and full-width quotes; JSON escapes in ASCII quotes), a bare JSON object or array
//! kept as text, or bare text up to the next separator.

use super::MAX_ARG_BYTES;
use super::marker::marker_at;

pub(super) type PResult<T> = Result<T, (String, usize)>;

/// A cursor over the reply.
pub(super) struct Cursor<'a> {
    pub(super) s: &'a str,
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    pub(super) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    pub(super) fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }
    pub(super) fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }
}

pub(super) fn describe(c: Option<char>) -> String {
    match c {
        None => "the end of the reply".into(),
        Some(c) if c.is_whitespace() => format!("{:?}", c),
        Some('`') => "a backtick".into(),
        Some(c) => format!("`{c}`"),
    }
}

pub(super) fn parse_arg(c: &mut Cursor) -> PResult<String> {
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

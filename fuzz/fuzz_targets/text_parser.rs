//! Any reply a model can write: the parser must not panic, must keep every byte of prose, and
//! must never parse more than MAX_CALLS calls. `fuzz/text_parser.dict` gives libFuzzer the
//! protocol's tokens, full-width forms and Markdown fences included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_fuzz::text::{MAX_CALLS, Segment, calls, parse};

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data);
    let segments = parse(&reply);
    assert!(calls(&segments).count() <= MAX_CALLS);
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

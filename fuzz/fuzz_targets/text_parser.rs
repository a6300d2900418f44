//! Any reply a model can write: the parser must not panic, must keep every byte of prose, and
//! must never parse more than MAX_CALLS calls.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_fuzz::text::{MAX_CALLS, Segment, calls, parse};

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data);
    let segments = parse(&reply);
    assert!(calls(&segments).count() <= MAX_CALLS);
    // Segments partition the reply: prose is verbatim and raw call text is a slice of the input.
    let mut rebuilt = String::new();
    for s in &segments {
        match s {
            Segment::Text { text } => rebuilt.push_str(text),
            Segment::Call { raw, .. } | Segment::Error { raw, .. } => rebuilt.push_str(raw),
        }
    }
    assert_eq!(rebuilt, reply, "segments must reassemble the reply");
});

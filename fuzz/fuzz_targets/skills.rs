//! A plugin's `toolhost-skills` section (its JSON, each `SKILL.md`'s YAML front matter): reading
//! it must not panic, and a section that reads must survive an encode/decode round trip with the
//! same skills.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_fuzz::skills;

fuzz_target!(|data: &[u8]| {
    // As a whole file (wasm parsing, section lookup)…
    let _ = skills::read(data);
    // …and as the section's JSON alone.
    if let Ok(section) = skills::decode(data) {
        let back = skills::decode(&skills::encode(&section)).expect("a decoded section encodes and decodes");
        assert_eq!(back, section);
        let read = skills::skills(&section).expect("a decoded section's skills read");
        assert_eq!(skills::skills(&back).expect("and again"), read);
    }
});

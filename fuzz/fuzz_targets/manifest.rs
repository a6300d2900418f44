//! Any file dropped in the plugins folder: reading its manifest must not panic, and a manifest
//! that parses must survive a JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_fuzz::manifest;

fuzz_target!(|data: &[u8]| {
    // As a whole file (wasm parsing, section lookup, JSON, validation)…
    let _ = manifest::read(data);
    // …and as the JSON payload of the section alone.
    if let Ok(m) = manifest::parse(data) {
        let json = serde_json::to_vec(&m).expect("a parsed manifest serializes");
        assert_eq!(manifest::parse(&json).expect("and parses back"), m);
    }
});

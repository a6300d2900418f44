//! Plugins made in a test: a component from WAT text, with a manifest section.

/// A `.wasm` component built from WAT text, with an optional manifest section appended.
pub fn component(wat: &str, manifest: Option<&str>) -> Vec<u8> {
    let mut bytes = wat::parse_str(wat).expect("valid wat");
    if let Some(m) = manifest {
        append_custom_section(&mut bytes, toolhost_spec::manifest::SECTION, m.as_bytes());
    }
    bytes
}

pub fn append_custom_section(bytes: &mut Vec<u8>, name: &str, data: &[u8]) {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    bytes.push(0);
    leb(payload.len(), bytes);
    bytes.extend_from_slice(&payload);
}

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

/// The smallest plugin: `tools.call` answers `ok` to every tool. It exports `tools` only, as
/// every plugin did before resources (the `plugin` world).
pub const OK_COMPONENT: &str = r#"(component
  (core module $m
    (memory (export "mem") 1)
    (global $bump (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $r i32)
      ;; aligned to the third parameter (a power of two)
      (local.set $r (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $r) (local.get 3)))
      (local.get $r))
    (func (export "call") (param i32 i32 i32 i32) (result i32)
      (i32.store8 (i32.const 16) (i32.const 0))
      (i32.store (i32.const 20) (i32.const 32))
      (i32.store (i32.const 24) (i32.const 2))
      (i32.store16 (i32.const 32) (i32.const 0x6b6f))
      (i32.const 16)))
  (core instance $i (instantiate $m))
  (func $call (param "tool" string) (param "args" (list string)) (result (result string (error string)))
    (canon lift (core func $i "call") (memory (core memory $i "mem")) (realloc (core func $i "realloc"))))
  (instance $tools (export "call" (func $call)))
  (export "toolhost:plugin/tools@0.1.0" (instance $tools)))"#;

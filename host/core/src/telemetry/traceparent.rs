//! The W3C Trace Context `traceparent` a caller sends (an HTTP header, or MCP `_meta`), parsed
//! strictly: a malformed one is ignored, never an error for the call.

/// A caller's span: the trace it belongs to and its own id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// `00-<32 hex>-<16 hex>-<2 hex>` (a later version's extra fields are ignored, as the
    /// spec says); `None` for anything else, an all-zero id or version `ff`.
    pub fn parse(text: &str) -> Option<TraceParent> {
        let text = text.trim();
        let mut parts = text.split('-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version.eq_ignore_ascii_case("ff") || !is_lower_hex(version) {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        let mut flag = [0u8; 1];
        if !(is_lower_hex(trace) && is_lower_hex(span) && is_lower_hex(flags)) {
            return None;
        }
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        hex::decode_to_slice(flags, &mut flag).ok()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id, flags: flag[0] })
    }
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "00-{}-{}-{:02x}", hex::encode(self.trace_id), hex::encode(self.span_id), self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_w3c_example_parses_and_prints_back() {
        let t = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::parse(t).unwrap();
        assert_eq!(p.flags, 1);
        assert_eq!(p.to_string(), t);
        // A later version may add fields.
        assert!(TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz").is_some());
    }

    #[test]
    fn malformed_ones_are_ignored() {
        for t in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceParent::parse(t), None, "{t}");
        }
    }
}

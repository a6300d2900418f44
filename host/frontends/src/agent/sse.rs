//! Server-sent events framing, as chat completion streams use it: `data: …` lines, events
//! ended by a blank line, comments (`: …`) and other fields ignored, `\n` or `\r\n` line ends.
//! Bytes arrive in arbitrary pieces, so a line (or a UTF-8 character) may span two of them.

/// An incremental SSE parser: feed it bytes, get the `data` of every completed event.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feed bytes; returns the data payloads of the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(nl) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl;
            let line = self.buf[start..end].strip_suffix(b"\r").unwrap_or(&self.buf[start..end]);
            // `\n` never occurs inside a UTF-8 sequence, so a line is always whole here.
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut out);
        }
        self.buf.drain(..start);
        out
    }

    /// The stream ended: an event not closed by a blank line still counts.
    pub fn finish(&mut self) -> Option<String> {
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            let mut out = Vec::new();
            self.line(rest.trim_end_matches('\r'), &mut out);
            if let Some(d) = out.pop() {
                return Some(d);
            }
        }
        self.has_data.then(|| {
            self.has_data = false;
            std::mem::take(&mut self.data)
        })
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if self.has_data {
                out.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let stream = "data: {\"a\":1}\n\n: keep-alive\n\nevent: x\r\ndata: [\r\ndata: 2]\r\n\r\ndata: é\n\ndata: [DONE]\n\n";
        let bytes = stream.as_bytes();
        for split in 1..bytes.len() {
            let mut p = SseParser::default();
            let mut got = p.push(&bytes[..split]);
            got.extend(p.push(&bytes[split..]));
            assert_eq!(got, ["{\"a\":1}", "[\n2]", "é", "[DONE]"], "split at {split}");
            assert_eq!(p.finish(), None);
        }
    }

    #[test]
    fn an_unterminated_last_event_is_kept() {
        let mut p = SseParser::default();
        assert!(p.push(b"data: {\"x\":1}").is_empty());
        assert_eq!(p.finish().as_deref(), Some("{\"x\":1}"));
        let mut p = SseParser::default();
        assert!(p.push(b"data: tail\n").is_empty());
        assert_eq!(p.finish().as_deref(), Some("tail"));
    }
}

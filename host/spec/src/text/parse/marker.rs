//! The protocol's markers: where one starts (`[TOOL]`, `[/TOOL]` and their full-width forms),
//! the next one of a kind, where parsing resumes after a malformed call, and the rule that the
//! markers inside a call's arguments pair up.

use super::{CLOSE_BRACKETS, OPEN_BRACKETS, SLASHES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Open,
    Close,
}

/// The marker `s` starts with, if any, and its length in bytes: an opening bracket, a slash for
/// a closing marker, `TOOL`, a closing bracket.
pub(super) fn marker_at(s: &str) -> Option<(Marker, usize)> {
    let bracket = s.chars().next().filter(|c| OPEN_BRACKETS.contains(c))?;
    let mut len = bracket.len_utf8();
    let mut kind = Marker::Open;
    if let Some(slash) = s[len..].chars().next().filter(|c| SLASHES.contains(c)) {
        kind = Marker::Close;
        len += slash.len_utf8();
    }
    let after = s[len..].strip_prefix("TOOL")?;
    let end = after.chars().next().filter(|c| CLOSE_BRACKETS.contains(c))?;
    Some((kind, len + "TOOL".len() + end.len_utf8()))
}

/// The first marker of `kind` that starts at or after `from`: its start and length. Each `TOOL`
/// in the text is looked at once, with the two characters before it.
pub(super) fn find_marker(s: &str, from: usize, kind: Marker) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = s[at..].find("TOOL") {
        let t = at + i;
        let mut back = s[from..t].chars().rev();
        let start = match (kind, back.next(), back.next()) {
            (Marker::Open, Some(b), _) if OPEN_BRACKETS.contains(&b) => Some(t - b.len_utf8()),
            (Marker::Close, Some(sl), Some(b)) if SLASHES.contains(&sl) && OPEN_BRACKETS.contains(&b) => {
                Some(t - sl.len_utf8() - b.len_utf8())
            }
            _ => None,
        };
        if let Some(start) = start
            && let Some((k, len)) = marker_at(&s[start..])
            && k == kind
        {
            return Some((start, len));
        }
        at = t + "TOOL".len();
    }
    None
}

/// The next `[/TOOL]` at or after a position, remembered between lookups (positions only grow).
#[derive(Default)]
pub(super) struct NextClose {
    /// `Some(Some((i, len)))`: the next close is at `i`; `Some(None)`: none after `from`.
    found: Option<Option<(usize, usize)>>,
    from: usize,
}

impl NextClose {
    pub(super) fn at_or_after(&mut self, reply: &str, pos: usize) -> Option<(usize, usize)> {
        match self.found {
            Some(Some((i, len))) if i >= pos => return Some((i, len)),
            Some(None) if pos >= self.from => return None,
            _ => {}
        }
        let found = find_marker(reply, pos, Marker::Close);
        self.found = Some(found);
        self.from = pos;
        found
    }
}

/// After a malformed call, resume at the end of its `[/TOOL]` — unless another `[TOOL]` starts
/// first (the call was never closed), in which case resume there.
pub(super) fn recovery_point(reply: &str, body: usize, closes: &mut NextClose) -> usize {
    let next_close = closes.at_or_after(reply, body);
    // Only look for the next open up to the close: that bounds the scan.
    let window_end = next_close.map_or(reply.len(), |(c, _)| c);
    let next_open = find_marker(&reply[..window_end], body, Marker::Open).map(|(o, _)| o);
    match (next_open, next_close) {
        (Some(o), _) => o,
        (None, Some((c, len))) => c + len,
        (None, None) => reply.len(),
    }
}

/// The markers inside a call's arguments must pair up the way a quoted call would: each
/// `[TOOL]` closed by a `[/TOOL]` inside the same argument, and no `[TOOL]` after a `[/TOOL]`
/// that closed nothing (in that argument or an earlier one). An argument that breaks this runs
/// into the next call — its quote was never closed where the model meant — so it is
/// unterminated: the call is an error and parsing resumes at the next marker, where the call
/// the model meant next runs on its own (issue #32). `"[/TOOL] inside"` and `"show [TOOL] f()
/// [/TOOL]"` stay content; `\u005b` writes a bracket that is no marker. One pass over the text.
#[derive(Default)]
pub(super) struct Markers {
    /// A `[/TOOL]` that closed nothing.
    stray_close: bool,
}

impl Markers {
    pub(super) fn check(&mut self, raw: &str) -> Result<(), &'static str> {
        let mut open = false; // a `[TOOL]` in this argument not closed yet
        let mut at = 0;
        while let Some(i) = raw[at..].find("TOOL") {
            let t = at + i;
            at = t + "TOOL".len();
            let mut back = raw[..t].chars().rev();
            let start = match (back.next(), back.next()) {
                (Some(b), _) if OPEN_BRACKETS.contains(&b) => t - b.len_utf8(),
                (Some(sl), Some(b)) if SLASHES.contains(&sl) && OPEN_BRACKETS.contains(&b) => {
                    t - sl.len_utf8() - b.len_utf8()
                }
                _ => continue,
            };
            match marker_at(&raw[start..]) {
                Some((Marker::Open, _)) if self.stray_close => {
                    return Err(
                        "unterminated string: it runs past `[/TOOL]`; close the quote before the marker",
                    );
                }
                Some((Marker::Open, _)) => open = true,
                Some((Marker::Close, _)) if open => open = false,
                Some((Marker::Close, _)) => self.stray_close = true,
                None => {}
            }
        }
        if open {
            return Err(
                "unterminated string: it runs into the `[TOOL]` of the next call; close the quote before \
                        the marker",
            );
        }
        Ok(())
    }
}

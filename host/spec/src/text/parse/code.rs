//! Where a reply's Markdown code is (fenced blocks and inline code spans), read in one pass and
//! walked forward as the parser asks: a call inside code is an example, never run.

use super::CodeKind;

/// Where Markdown code is, read the way a Markdown renderer (CommonMark) would show the reply,
/// in one pass; [`Code::region_at`] then walks it forward as the parser asks.
///
/// - A fence line is a line that starts, after any indentation, with three or more backticks or
///   tildes (a backtick fence's info string has no backtick). It opens a block that ends after
///   the next fence line of the same character, at least as long, with nothing after it — or at
///   the end of the reply.
/// - Outside blocks, a run of N backticks opens a code span that ends at the next run of exactly
///   N backticks in the same paragraph (no blank line or fence line between); a run with no such
///   partner is a literal backtick.
/// - Indented code blocks, HTML `<code>` and backslash-escaped backticks are not recognised:
///   models write fences.
///
/// What looks like Markdown inside a call that ran (`skip_to`) is argument text, not structure.
pub(super) struct Code {
    len: usize,
    fences: Vec<Fence>,
    runs: Vec<Run>,
    /// Starts of blank lines and fence lines: a code span does not cross them.
    breaks: Vec<usize>,
    fi: usize,
    ri: usize,
    bi: usize,
    region: Option<Region>,
}

struct Fence {
    /// The first fence character.
    start: usize,
    /// Just past the line (and its newline).
    end: usize,
    ch: char,
    len: usize,
    /// Nothing after the fence characters: the line can close a block.
    bare: bool,
}

struct Run {
    start: usize,
    len: usize,
    /// The index of the next run of the same length.
    next_same: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Region {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) kind: CodeKind,
}

impl Code {
    pub(super) fn new(s: &str) -> Code {
        let mut fences = Vec::new();
        let mut runs = Vec::new();
        let mut breaks = Vec::new();
        let mut line_start = 0;
        for line in s.split_inclusive('\n') {
            let content = line.trim_end_matches(['\n', '\r']);
            let trimmed = content.trim_start_matches([' ', '\t']);
            if trimmed.trim_end().is_empty() {
                breaks.push(line_start);
            } else if let Some((ch, len, bare)) = fence_line(trimmed) {
                let indent = content.len() - trimmed.len();
                fences.push(Fence {
                    start: line_start + indent,
                    end: line_start + line.len(),
                    ch,
                    len,
                    bare,
                });
                breaks.push(line_start);
            } else {
                let bytes = content.as_bytes();
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i] == b'`' {
                        let run_start = i;
                        while i < bytes.len() && bytes[i] == b'`' {
                            i += 1;
                        }
                        runs.push(Run { start: line_start + run_start, len: i - run_start, next_same: None });
                    } else {
                        i += 1;
                    }
                }
            }
            line_start += line.len();
        }
        let mut last_of_len: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for (i, run) in runs.iter_mut().enumerate().rev() {
            run.next_same = last_of_len.insert(run.len, i);
        }
        Code { len: s.len(), fences, runs, breaks, fi: 0, ri: 0, bi: 0, region: None }
    }

    /// The code region that contains byte `at`, if any. Calls come with growing `at`; every
    /// fence line and backtick run is looked at once over all calls.
    pub(super) fn region_at(&mut self, at: usize) -> Option<Region> {
        loop {
            if let Some(r) = self.region {
                if at < r.end {
                    return Some(r);
                }
                self.region = None;
            }
            let fence = self.fences.get(self.fi).map(|f| f.start).filter(|&p| p < at);
            let run = self.runs.get(self.ri).map(|r| r.start).filter(|&p| p < at);
            match (fence, run) {
                (None, None) => return None,
                (Some(f), r) if r.is_none_or(|r| f < r) => self.open_fence(),
                _ => self.open_span(),
            }
        }
    }

    fn open_fence(&mut self) {
        let open = &self.fences[self.fi];
        let mut j = self.fi + 1;
        let end = loop {
            match self.fences.get(j) {
                None => break self.len,
                Some(f) if f.ch == open.ch && f.len >= open.len && f.bare => break f.end,
                Some(_) => j += 1,
            }
        };
        self.region = Some(Region { start: open.start, end, kind: CodeKind::FencedBlock });
        self.skip_to(end);
    }

    fn open_span(&mut self) {
        let run = &self.runs[self.ri];
        while self.breaks.get(self.bi).is_some_and(|&b| b <= run.start) {
            self.bi += 1;
        }
        let limit = self.breaks.get(self.bi).copied().unwrap_or(self.len);
        match run.next_same.map(|k| &self.runs[k]) {
            Some(close) if close.start < limit => {
                let region = Region { start: run.start, end: close.start + close.len, kind: CodeKind::Span };
                self.region = Some(region);
                self.skip_to(region.end);
            }
            _ => self.ri += 1, // no partner: a literal backtick
        }
    }

    /// Forget the Markdown before `end` (inside a region just opened, or a call that ran).
    pub(super) fn skip_to(&mut self, end: usize) {
        while self.fences.get(self.fi).is_some_and(|f| f.start < end) {
            self.fi += 1;
        }
        while self.runs.get(self.ri).is_some_and(|r| r.start < end) {
            self.ri += 1;
        }
    }
}

/// A fence line (after its indentation): the fence character, how many, and whether nothing
/// follows them.
fn fence_line(t: &str) -> Option<(char, usize, bool)> {
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.len() - t.trim_start_matches(ch).len();
    if len < 3 {
        return None;
    }
    let info = &t[len..];
    if ch == '`' && info.contains('`') {
        return None; // ```x``` on one line is a code span, not a fence
    }
    Some((ch, len, info.trim().is_empty()))
}

//! Pages of the lists the specification paginates and toolhost pages: `resources/list`,
//! `resources/templates/list`, `prompts/list` and `skills/list`, at most `[mcp] page_size`
//! items each. A cursor names where the next page starts and a fingerprint of the whole list's
//! keys, so a list that changed between two pages (a reload) is an error rather than a page
//! that skips or repeats items, and any replica serving the same plugins takes it.
//! `tools/list` is one page: many clients read only the first, and a large catalog has search
//! mode (`[catalog] mode`) instead.

use std::hash::{Hash, Hasher};

/// Why a cursor names no page (invalid params, as the specification asks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadCursor {
    #[error("unknown cursor {0:?}: give the `nextCursor` of the page before, or none for the first page")]
    Unknown(String),
    #[error(
        "the list changed since cursor {0:?} was given (plugins were reloaded): list again from the first page"
    )]
    Stale(String),
}

impl From<BadCursor> for rmcp::ErrorData {
    fn from(e: BadCursor) -> rmcp::ErrorData {
        rmcp::ErrorData::invalid_params(e.to_string(), None)
    }
}

/// One page of `all` (in order, each with its `key`: a URI or a name) from `cursor` (`None`: the
/// first page), at most `size` items, and the cursor of the next page if there is one.
pub fn page<T>(
    mut all: Vec<T>,
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), BadCursor> {
    let print = fingerprint(all.iter().map(key));
    let start = match cursor {
        None => 0,
        Some(c) => {
            let (offset, of) = parse(c).ok_or_else(|| BadCursor::Unknown(c.to_string()))?;
            if of != print || offset > all.len() {
                return Err(BadCursor::Stale(c.to_string()));
            }
            offset
        }
    };
    let end = start.saturating_add(size.max(1)).min(all.len());
    let next = (end < all.len()).then(|| format!("{end}.{print:016x}"));
    all.truncate(end);
    all.drain(..start);
    Ok((all, next))
}

/// `OFFSET.FINGERPRINT`.
fn parse(cursor: &str) -> Option<(usize, u64)> {
    let (offset, print) = cursor.split_once('.')?;
    let offset = offset.parse().ok().filter(|o| *o > 0)?;
    (print.len() == 16).then_some(())?;
    Some((offset, u64::from_str_radix(print, 16).ok()?))
}

/// The same for the same keys in the same order, in every process of this build.
fn fingerprint<'a>(keys: impl Iterator<Item = &'a str>) -> u64 {
    // `DefaultHasher::new()` has fixed keys: the same in every process of one build.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for k in keys {
        k.hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("docs://{i}")).collect()
    }

    #[test]
    fn pages_follow_each_other_and_end_without_a_cursor() {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (items, next) = page(keys(7), |k| k, cursor.as_deref(), 3).unwrap();
            assert!(items.len() <= 3 && !items.is_empty());
            seen.extend(items);
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, keys(7));
        assert_eq!(page(keys(3), |k| k, None, 3).unwrap().1, None, "one full page has no next");
        assert_eq!(page(Vec::<String>::new(), |k| k, None, 3).unwrap(), (Vec::new(), None));
    }

    #[test]
    fn a_foreign_or_stale_cursor_is_refused() {
        let (_, next) = page(keys(7), |k| k, None, 3).unwrap();
        let next = next.unwrap();
        for bad in ["", "x", "3", "0.0000000000000000", "3.zz", "-1.0000000000000000"] {
            assert_eq!(page(keys(7), |k| k, Some(bad), 3), Err(BadCursor::Unknown(bad.into())), "{bad:?}");
        }
        let e = page(keys(8), |k| k, Some(&next), 3).unwrap_err();
        assert_eq!(e, BadCursor::Stale(next.clone()));
        assert!(e.to_string().contains("list again from the first page"), "{e}");
    }
}

//! Suggestions for a tool name that is not served: the served names close to it.

use super::Registry;

impl Registry {
    /// Registered tool names close to `name`, best first.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let lower = name.to_lowercase();
        let mut scored: Vec<(usize, &String)> = self
            .tools
            .keys()
            .filter_map(|k| {
                let kl = k.to_lowercase();
                let d = edit_distance(&lower, &kl);
                let close =
                    d <= (name.chars().count() / 3).max(2) || kl.contains(&lower) || lower.contains(&kl);
                close.then_some((d, k))
            })
            .collect();
        scored.sort();
        scored.into_iter().take(5).map(|(_, k)| k.clone()).collect()
    }
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::content_hash;

    #[test]
    fn distance_and_hash() {
        assert_eq!(edit_distance("read", "reed"), 1);
        assert_eq!(edit_distance("", "ls"), 2);
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
    }
}

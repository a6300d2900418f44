//! Finding tools in a large catalog: a BM25 index (the `bm25` crate) over each exposed tool's
//! name, title, description, category, parameter names and descriptions, and plugin name. Names
//! weigh most (they are repeated in the indexed text); identifiers are split into words
//! (`api_get`, `readFile`), words are lowercased, common English words dropped and the rest
//! stemmed (Snowball English), so "reading files" finds `read_file`.

use bm25::{Document, SearchEngine, SearchEngineBuilder, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};
use toolhost_spec::manifest::ToolSpec;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have", "how", "i",
    "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "one", "or", "so", "some", "that", "the",
    "their", "them", "then", "there", "these", "this", "to", "tool", "tools", "use", "want", "was", "we",
    "what", "when", "which", "who", "will", "with", "you", "your",
];

/// Lowercased, stemmed words of a text; identifiers split at `_`, `-`, `.` and case changes.
pub struct Words(Stemmer);

impl Default for Words {
    fn default() -> Self {
        Words(Stemmer::create(Algorithm::English))
    }
}

impl Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut prev_lower = false;
        let flush = |w: &mut String, out: &mut Vec<String>| {
            if !w.is_empty() {
                let lower = w.to_lowercase();
                if !STOP_WORDS.contains(&lower.as_str()) {
                    out.push(self.0.stem(&lower).into_owned());
                }
                w.clear();
            }
        };
        for c in text.chars() {
            if !c.is_alphanumeric() {
                flush(&mut word, &mut words);
                prev_lower = false;
                continue;
            }
            // `readFile` → read, file (a capital after a lowercase letter starts a word).
            if c.is_uppercase() && prev_lower {
                flush(&mut word, &mut words);
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.push(c);
        }
        flush(&mut word, &mut words);
        words
    }
}

/// The indexed text of one tool, under the name it is exposed as.
pub fn document_text(name: &str, spec: &ToolSpec, plugin: &str) -> String {
    let mut text = String::new();
    // The name three times and the title twice: what a tool is called says most about it.
    for _ in 0..3 {
        text.push_str(name);
        text.push(' ');
    }
    if let Some(title) = &spec.title {
        text.push_str(&format!("{title} {title} "));
    }
    text.push_str(&spec.description);
    if let Some(c) = &spec.category {
        text.push_str(&format!(" {c}"));
    }
    for p in &spec.params {
        text.push_str(&format!(" {} {}", p.name, p.description));
    }
    text.push_str(&format!(" {plugin}"));
    text
}

/// A BM25 index of a catalog, built once per registry snapshot.
pub struct Index {
    engine: SearchEngine<u32, u32, Words>,
    names: Vec<String>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("tools", &self.names.len()).finish()
    }
}

impl Index {
    /// Index `(exposed name, indexed text)` pairs.
    pub fn build(tools: impl IntoIterator<Item = (String, String)>) -> Index {
        let mut names = Vec::new();
        let mut docs = Vec::new();
        for (i, (name, text)) in tools.into_iter().enumerate() {
            names.push(name);
            docs.push(Document::new(i as u32, text));
        }
        let engine =
            SearchEngineBuilder::<u32, u32, Words>::with_tokenizer_and_documents(Words::default(), docs)
                .build();
        Index { engine, names }
    }

    /// The exposed names of the best `limit` matches for `query`, best first (ties by name).
    pub fn search(&self, query: &str, limit: usize) -> Vec<&str> {
        let mut hits: Vec<(f32, &str)> = self
            .engine
            .search(query, None)
            .into_iter()
            .filter_map(|r| Some((r.score, self.names.get(r.document.id as usize)?.as_str())))
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        hits.into_iter().take(limit).map(|(_, n)| n).collect()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_and_words_stem() {
        let w = Words::default();
        assert_eq!(w.tokenize("readFile api_get notes.list"), ["read", "file", "api", "get", "note", "list"]);
        assert_eq!(w.tokenize("Reading the files"), ["read", "file"]);
        assert_eq!(w.tokenize("HTTP2 requests"), ["http2", "request"]);
    }

    #[test]
    fn the_best_match_comes_first() {
        let index = Index::build([
            ("read_file".to_string(), "read_file read_file Read a file from the workspace".to_string()),
            ("send_mail".to_string(), "send_mail send_mail Send an email message".to_string()),
            ("list_dir".to_string(), "list_dir list_dir List the entries of a directory".to_string()),
        ]);
        assert_eq!(index.search("how do I read what a file holds", 2)[0], "read_file");
        assert_eq!(index.search("email someone", 1), ["send_mail"]);
        assert_eq!(index.search("directory entries", 5)[0], "list_dir");
        assert!(index.search("zebra", 5).is_empty());
    }
}

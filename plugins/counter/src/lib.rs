//! `counter`: counters kept between calls in the plugin's own key-value store (bucket
//! `default`, granted with `--allow-kv counter=default`). `count` is one atomic `increment`, so
//! calls running at once never lose a count.

#[toolhost_sdk::plugin(
    description = "Named counters kept between calls, counted atomically",
    kv = "default"
)]
mod tools {
    use toolhost_sdk::kv;

    /// Add `by` to the counter `name` (0 when new) and say its new value.
    ///
    /// - `name`: the counter
    /// - `by`: how much to add (negative to subtract); 1 when left out
    #[tool(category = "state")]
    pub fn count(name: String, by: Option<i64>) -> Result<String, String> {
        let n = kv::open("default")?.increment(&name, by.unwrap_or(1))?;
        Ok(n.to_string())
    }

    /// Every counter and its value, one per line.
    #[tool(category = "state", read_only)]
    pub fn counters() -> Result<String, String> {
        let b = kv::open("default")?;
        let mut out = Vec::new();
        for key in b.keys()? {
            let value = b.get_text(&key)?.unwrap_or_default();
            out.push(format!("{key}: {value}"));
        }
        Ok(if out.is_empty() { "no counters yet".into() } else { out.join("\n") })
    }

    /// Forget the counter `name`.
    ///
    /// - `name`: the counter
    #[tool(category = "state")]
    pub fn reset(name: String) -> Result<String, String> {
        kv::open("default")?.delete(&name)?;
        Ok(format!("{name} reset"))
    }
}

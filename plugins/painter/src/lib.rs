//! `painter`: a test-only plugin that says whatever it is told — as its error, in the host's
//! log, on its stderr — and a dangerous tool that only reports what it was given. The terminal
//! tests (#26) feed it escape sequences to show that none of them reach the operator's
//! terminal raw. Never ship it.

#[toolhost_sdk::plugin]
mod tools {
    /// Fail with the text as the error.
    ///
    /// - `text`: the error; commas are part of it
    #[tool(rest)]
    pub fn smear(text: String) -> Result<String, String> {
        Err(text)
    }

    /// Write the text to the host's log and to stderr, then succeed.
    ///
    /// - `text`: the log line; commas are part of it
    #[tool(rest)]
    pub fn scrawl(text: String) -> String {
        toolhost_sdk::log::warn(&text);
        eprintln!("{text}");
        "logged".into()
    }

    /// A dangerous tool that does nothing but say how long its target was.
    ///
    /// - `target`: anything; commas are part of it
    #[tool(rest, danger)]
    pub fn zap(target: String) -> String {
        format!("zapped {} characters", target.chars().count())
    }
}

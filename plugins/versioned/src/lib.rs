//! `versioned`: a test-only plugin built twice — as 0.1.0 and, with `--features v2`, as 0.2.0
//! with one more tool — so the hot-reload tests can replace a plugin with a real new version;
//! `--features v3` builds 0.3.0, which requests network access (for the approval tests).

/// Sleep, then answer.
fn nap_for(ms: u64) -> String {
    std::thread::sleep(std::time::Duration::from_millis(ms));
    format!("slept {ms} ms")
}

#[cfg(not(any(feature = "v2", feature = "v3")))]
#[toolhost_sdk::plugin(version = "0.1.0")]
mod tools {
    /// Which build of the plugin is answering.
    #[tool]
    pub fn which() -> String {
        "v1".into()
    }

    /// Sleep, then answer (a long call for in-flight reload tests).
    ///
    /// - `ms`: milliseconds to sleep
    #[tool]
    pub fn nap(ms: u64) -> String {
        super::nap_for(ms)
    }
}

#[cfg(all(feature = "v2", not(feature = "v3")))]
#[toolhost_sdk::plugin(version = "0.2.0")]
mod tools {
    /// Which build of the plugin is answering.
    #[tool]
    pub fn which() -> String {
        "v2".into()
    }

    /// Sleep, then answer (a long call for in-flight reload tests).
    ///
    /// - `ms`: milliseconds to sleep
    #[tool]
    pub fn nap(ms: u64) -> String {
        super::nap_for(ms)
    }

    /// Only in v2.
    #[tool]
    pub fn added_in_v2() -> String {
        "new".into()
    }
}

/// v3 asks for network access that v1 and v2 did not: a reload to it waits for approval.
#[cfg(feature = "v3")]
#[toolhost_sdk::plugin(version = "0.3.0", net = "example.com")]
mod tools {
    /// Which build of the plugin is answering.
    #[tool]
    pub fn which() -> String {
        "v3".into()
    }

    /// Sleep, then answer (a long call for in-flight reload tests).
    ///
    /// - `ms`: milliseconds to sleep
    #[tool]
    pub fn nap(ms: u64) -> String {
        super::nap_for(ms)
    }
}

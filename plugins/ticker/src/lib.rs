//! `ticker`: a test-only plugin for long calls (#29). `tick` counts slowly, reporting progress
//! and appending a byte to a file at every step, so a test can see both what a client is told
//! and whether the work really stopped (the file stops growing); `flood` reports progress in
//! a tight loop; `chore` runs only as an MCP task. Never ship it.

use std::io::Write;

/// Count to `n`, a step every `ms` milliseconds (0: as fast as it can), appending one byte to
/// `trail` (when not empty) and reporting progress at every step.
fn count(n: u64, ms: u64, trail: &str) -> Result<String, String> {
    let mut file = if trail.is_empty() {
        None
    } else {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(trail);
        Some(f.map_err(|e| format!("cannot open `{trail}`: {e}"))?)
    };
    for i in 1..=n {
        if ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        if let Some(f) = file.as_mut() {
            f.write_all(b".").map_err(|e| format!("cannot write `{trail}`: {e}"))?;
        }
        toolhost_sdk::progress(i, Some(n), &format!("step {i} of {n}"));
    }
    Ok(format!("counted to {n}"))
}

#[toolhost_sdk::plugin(fs = "workspace:rw")]
mod tools {
    /// Count to `n` slowly, reporting progress and leaving a trail.
    ///
    /// - `n`: steps
    /// - `ms`: milliseconds per step (0: no pause)
    /// - `trail`: a workspace file that grows by a byte per step ("" for none)
    #[tool(timeout_ms = 120000, task_support = "optional")]
    pub fn tick(n: u64, ms: u64, trail: String) -> Result<String, String> {
        super::count(n, ms, &trail)
    }

    /// Report progress `n` times in a tight loop, then answer.
    ///
    /// - `n`: reports
    #[tool(timeout_ms = 120000)]
    pub fn flood(n: u64) -> String {
        for i in 1..=n {
            toolhost_sdk::progress(i, Some(n), "flooding");
        }
        format!("reported {n} times")
    }

    /// Count to `n` slowly; runs only as an MCP task.
    ///
    /// - `n`: steps
    /// - `ms`: milliseconds per step
    #[tool(timeout_ms = 120000, task_support = "required")]
    pub fn chore(n: u64, ms: u64) -> Result<String, String> {
        super::count(n, ms, "")
    }
}

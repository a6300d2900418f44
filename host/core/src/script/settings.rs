//! `[code_mode]`: whether the host offers `run_script`, and the limits of a script.

use crate::settings::invalid::Invalid;
use serde::Deserialize;

/// The resolved `[code_mode]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeModeSettings {
    /// Offer `run_script` on every front end (off by default).
    pub enabled: bool,
    /// Inner tool calls one script may make.
    pub max_calls: u32,
    /// A script's time limit, its inner calls included, milliseconds.
    pub timeout_ms: u64,
    /// The script sandbox's memory limit, MiB (the inner calls' own sandboxes have theirs).
    pub memory_mb: u64,
    /// Bytes of the script's console output returned with its result.
    pub log_bytes: usize,
    /// Bytes of the meta-tool's description (its `tools` declarations are cut to fit).
    pub description_bytes: usize,
    /// Scripts that may run at once (each holds a sandbox of the instance pool, besides the
    /// `[limits] concurrency` of tool calls); more wait for one to end, within their time limit.
    pub concurrency: u32,
}

impl Default for CodeModeSettings {
    fn default() -> Self {
        CodeModeSettings {
            enabled: false,
            max_calls: 100,
            timeout_ms: 60_000,
            memory_mb: 64,
            log_bytes: 16 * 1024,
            description_bytes: 16 * 1024,
            concurrency: 4,
        }
    }
}

/// The most inner calls a script may be allowed.
const MAX_CALLS: u32 = 10_000;

/// `[code_mode]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCodeMode {
    enabled: Option<bool>,
    max_calls: Option<u32>,
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    log_bytes: Option<usize>,
    description_bytes: Option<usize>,
    concurrency: Option<u32>,
}

impl RawCodeMode {
    pub fn resolve(self) -> Result<CodeModeSettings, Invalid> {
        let d = CodeModeSettings::default();
        let max_calls = self.max_calls.unwrap_or(d.max_calls);
        if !(1..=MAX_CALLS).contains(&max_calls) {
            return Err(Invalid::out_of_range("code_mode.max_calls", max_calls, 1, u64::from(MAX_CALLS)));
        }
        let timeout_ms = self.timeout_ms.unwrap_or(d.timeout_ms);
        if !(100..=3_600_000).contains(&timeout_ms) {
            return Err(Invalid::out_of_range("code_mode.timeout_ms", timeout_ms, 100, 3_600_000));
        }
        let memory_mb = self.memory_mb.unwrap_or(d.memory_mb);
        if !(16..=4096).contains(&memory_mb) {
            return Err(Invalid::out_of_range("code_mode.memory_mb", memory_mb, 16, 4096));
        }
        let log_bytes = self.log_bytes.unwrap_or(d.log_bytes);
        if log_bytes > 1 << 20 {
            return Err(Invalid::out_of_range("code_mode.log_bytes", log_bytes, 0, 1 << 20));
        }
        let description_bytes = self.description_bytes.unwrap_or(d.description_bytes);
        if !(1024..=1 << 20).contains(&description_bytes) {
            return Err(Invalid::out_of_range(
                "code_mode.description_bytes",
                description_bytes,
                1024,
                1 << 20,
            ));
        }
        let concurrency = self.concurrency.unwrap_or(d.concurrency);
        if !(1..=64).contains(&concurrency) {
            return Err(Invalid::out_of_range("code_mode.concurrency", concurrency, 1, 64));
        }
        Ok(CodeModeSettings {
            enabled: self.enabled.unwrap_or(d.enabled),
            max_calls,
            timeout_ms,
            memory_mb,
            log_bytes,
            description_bytes,
            concurrency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CodeModeSettings, String> {
        toml::from_str::<RawCodeMode>(text).map_err(|e| e.to_string())?.resolve().map_err(|e| e.to_string())
    }

    #[test]
    fn off_by_default_and_limits_checked() {
        assert_eq!(parse("").unwrap(), CodeModeSettings::default());
        assert!(!CodeModeSettings::default().enabled);
        let s = parse("enabled = true\nmax_calls = 5").unwrap();
        assert!(s.enabled && s.max_calls == 5);
        assert!(parse("max_calls = 0").unwrap_err().contains("code_mode.max_calls"));
        assert!(parse("max_calls = 10001").unwrap_err().contains("code_mode.max_calls"));
        assert!(parse("memory_mb = 8").unwrap_err().contains("code_mode.memory_mb"));
        assert!(parse("timeout_ms = 10").unwrap_err().contains("code_mode.timeout_ms"));
        assert!(parse("description_bytes = 10").unwrap_err().contains("code_mode.description_bytes"));
        assert!(parse("concurrency = 0").unwrap_err().contains("code_mode.concurrency"));
        assert!(parse("nope = 1").unwrap_err().contains("nope"));
    }
}

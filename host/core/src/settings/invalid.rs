//! A key of the config its owner refuses: which key (`plugin.web.net[0]`, `limits.memory_mb`)
//! and what is wrong with its value. Every section's resolution — core's here, the
//! capabilities', the catalog's, the front ends' in their crates — returns this, and
//! [`ConfigFile`](super::ConfigFile) adds the file. A leaf: it imports nothing of the crate, so
//! the sections' owners can name it without depending on anything else of `settings`.

use std::fmt;

/// A refused key of the config: `key` is its full path (`mcp.tokens[2]`, `plugin.web.exec[0].args`),
/// `problem` what is wrong.
#[derive(Debug)]
pub struct Invalid {
    pub key: String,
    pub problem: Problem,
}

/// What is wrong with a key's value. The shapes most keys share are their own variants (a
/// caller or a test can ask "out of range?" without reading the text); the rest is said in
/// words.
#[derive(Debug)]
pub enum Problem {
    /// `KEY = VALUE is outside LO..=HI`, then `note` (`" (limits.concurrency)"`, or empty).
    OutOfRange { value: String, lo: u64, hi: u64, note: String },
    /// `KEY must be at least MIN`, then `note`; with `also`, every key is named (`a, b and c
    /// must be at least 1`): any of them was below.
    TooSmall { min: u64, also: Vec<String>, note: &'static str },
    /// The key names a `[secrets.NAME]` that is not defined.
    NoSecret(String),
    /// `name` (an entry of the key) is not an environment variable's name, `why`.
    NotVariableName { name: String, why: &'static str },
    /// `KEY = VALUE` (as written, quoted for text), then what is wrong with it.
    Value { value: String, is: String },
    /// A value's own error, e.g. a host pattern's or an origin's.
    Because(Box<dyn std::error::Error + Send + Sync>),
    /// `KEY: ` and the words.
    Says(String),
    /// `KEY ` and the words (`must not be empty`).
    Is(String),
}

impl Invalid {
    pub fn new(key: impl Into<String>, problem: Problem) -> Invalid {
        Invalid { key: key.into(), problem }
    }

    /// `KEY: WORDS`.
    pub fn says(key: impl Into<String>, words: impl Into<String>) -> Invalid {
        Invalid::new(key, Problem::Says(words.into()))
    }

    /// `KEY WORDS`.
    pub fn is(key: impl Into<String>, words: impl Into<String>) -> Invalid {
        Invalid::new(key, Problem::Is(words.into()))
    }

    /// `KEY = VALUE IS` (`value` as the message shows it: quoted, for text).
    pub fn value(key: impl Into<String>, value: impl Into<String>, is: impl Into<String>) -> Invalid {
        Invalid::new(key, Problem::Value { value: value.into(), is: is.into() })
    }

    /// `KEY = VALUE is outside LO..=HI`.
    pub fn out_of_range(key: impl Into<String>, value: impl fmt::Display, lo: u64, hi: u64) -> Invalid {
        Invalid::new(key, Problem::OutOfRange { value: value.to_string(), lo, hi, note: String::new() })
    }

    /// `KEY = VALUE is outside LO..=HI NOTE` (`note`: `" (limits.concurrency)"`, the key the
    /// bound comes from).
    pub fn out_of_range_noting(
        key: impl Into<String>,
        value: impl fmt::Display,
        (lo, hi): (u64, u64),
        note: impl Into<String>,
    ) -> Invalid {
        Invalid::new(key, Problem::OutOfRange { value: value.to_string(), lo, hi, note: note.into() })
    }

    /// `KEY must be at least 1`.
    pub fn at_least_one(key: impl Into<String>) -> Invalid {
        Invalid::new(key, Problem::TooSmall { min: 1, also: Vec::new(), note: "" })
    }

    /// `KEY, ALSO… and LAST must be at least 1`: keys checked together.
    pub fn each_at_least_one(key: impl Into<String>, also: Vec<String>) -> Invalid {
        Invalid::new(key, Problem::TooSmall { min: 1, also, note: "" })
    }

    /// `Ok` if `name` (an entry of `key`) is an environment variable's name.
    pub fn check_variable_name(key: impl FnOnce() -> String, name: &str) -> Result<(), Invalid> {
        toolhost_spec::env_name::check(name)
            .map_err(|why| Invalid::new(key(), Problem::NotVariableName { name: name.to_string(), why }))
    }

    /// `KEY: ERROR`, the value's own error.
    pub fn because(key: impl Into<String>, error: impl std::error::Error + Send + Sync + 'static) -> Invalid {
        Invalid::new(key, Problem::Because(Box::new(error)))
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        match &self.problem {
            Problem::OutOfRange { value, lo, hi, note } => {
                write!(f, "{key} = {value} is outside {lo}..={hi}{note}")
            }
            Problem::TooSmall { min, also, note } => {
                f.write_str(key)?;
                for (i, k) in also.iter().enumerate() {
                    f.write_str(if i + 1 == also.len() { " and " } else { ", " })?;
                    f.write_str(k)?;
                }
                write!(f, " must be at least {min}{note}")
            }
            Problem::NoSecret(s) => write!(
                f,
                "{key}: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\""
            ),
            Problem::NotVariableName { name, why } => {
                write!(f, "{key}: {name:?} is not a variable name ({why})")
            }
            Problem::Value { value, is } => write!(f, "{key} = {value} {is}"),
            Problem::Because(e) => write!(f, "{key}: {e}"),
            Problem::Says(words) => write!(f, "{key}: {words}"),
            Problem::Is(words) => write!(f, "{key} {words}"),
        }
    }
}

// The inner error of `Because` is part of the message, so it is not also a `source`: the CLI
// prints an error's whole chain, and would say it twice.
impl std::error::Error for Invalid {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_names_the_key_as_before() {
        let range = Invalid::new(
            "limits.plugin_concurrency",
            Problem::OutOfRange { value: "9".into(), lo: 1, hi: 4, note: " (limits.concurrency)".into() },
        );
        assert_eq!(range.to_string(), "limits.plugin_concurrency = 9 is outside 1..=4 (limits.concurrency)");
        assert_eq!(
            Invalid::at_least_one("tool.x.timeout_ms").to_string(),
            "tool.x.timeout_ms must be at least 1"
        );
        let joint = Invalid::new(
            "net.timeout_ms",
            Problem::TooSmall {
                min: 1,
                also: vec!["net.max_response_kb".into(), "net.max_requests_per_call".into()],
                note: "",
            },
        );
        assert_eq!(
            joint.to_string(),
            "net.timeout_ms, net.max_response_kb and net.max_requests_per_call must be at least 1"
        );
        assert_eq!(
            Invalid::new("model.api_key_secret", Problem::NoSecret("k".into())).to_string(),
            "model.api_key_secret: no secret `k` is defined; add [secrets.k] with env = \"VAR\" or file = \"path\""
        );
        let var = Invalid::new(
            "plugin.a.env[0]",
            Problem::NotVariableName { name: "A=B".into(), why: "contains `=`" },
        );
        assert_eq!(var.to_string(), "plugin.a.env[0]: \"A=B\" is not a variable name (contains `=`)");
        assert_eq!(
            Invalid::is("telemetry.service_name", "must not be empty").to_string(),
            "telemetry.service_name must not be empty"
        );
    }
}

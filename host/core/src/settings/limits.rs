//! The per-call limits: written once here, in [`for_each_limit!`], and taken by `[limits]` (the
//! defaults), `[plugin.NAME]` and `[tool.NAME]` alike, each section's values overriding the one
//! before (see `Config::limits_for`).

use super::invalid::{Invalid, Problem};
use serde::Deserialize;

/// Calls `$m!` with the list of per-call limits — name, type, default, doc — so the resolved
/// [`Limits`], the optional [`LimitOverrides`] and every raw section carrying them inline are
/// generated from one list (the x-macro pattern). A limit added here is a key of all three
/// sections at once.
macro_rules! for_each_limit {
    ($m:ident $(; $($arg:tt)*)?) => {
        $m! {
            [$($($arg)*)?]
            /// Wall-clock time of one call (ms).
            timeout_ms: u64 = 10_000,
            /// Linear memory of one call's instance (MiB).
            memory_mb: u64 = 64,
            /// Characters of output handed back; the rest is cut and marked `truncated`.
            output_limit: usize = 10_000,
            /// Bytes of one resource a plugin reads (KiB): text is cut at a character before
            /// it, bytes at it, and the read is marked `truncated`.
            resource_kb: u64 = 1024,
            /// Bytes one call may write to granted directories (writes, appends, `set-size`
            /// growth, holes), MiB.
            write_mb: u64 = 64,
            /// Files and directories one call may create in granted directories.
            create_limit: u32 = 1000,
            /// Bytes of `log` messages kept per call (KiB); the rest is counted and dropped.
            log_kb: u64 = 64,
            /// `log` lines kept per call; the rest is counted and dropped.
            log_lines: u32 = 1000,
        }
    };
}
pub(crate) use for_each_limit;

macro_rules! define_limits {
    ([] $($(#[$doc:meta])* $field:ident: $ty:ty = $default:expr,)*) => {
        /// Per-call limits, every one set.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Limits {
            $($(#[$doc])* pub $field: $ty,)*
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $($field: $default,)* }
            }
        }

        /// Optional overrides of [`Limits`] for one plugin or tool.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct LimitOverrides {
            $($(#[$doc])* pub $field: Option<$ty>,)*
        }

        impl LimitOverrides {
            /// Override `l`'s fields with the ones set here.
            pub fn apply(&self, l: &mut Limits) {
                $(if let Some(v) = self.$field { l.$field = v; })*
            }
        }

        impl From<Limits> for LimitOverrides {
            fn from(l: Limits) -> Self {
                LimitOverrides { $($field: Some(l.$field),)* }
            }
        }
    };
}
for_each_limit!(define_limits);

/// A raw config section with its own keys and the per-call limits inline: the struct as
/// written, with every limit added as an optional key and `limit_overrides()` to read them.
macro_rules! section_with_limits {
    ([$(#[$meta:meta])* $vis:vis struct $name:ident { $($own:tt)* }]
     $($(#[$doc:meta])* $field:ident: $ty:ty = $default:expr,)*) => {
        $(#[$meta])*
        $vis struct $name {
            $($own)*
            $($(#[$doc])* $field: Option<$ty>,)*
        }

        impl $name {
            fn limit_overrides(&self) -> $crate::settings::limits::LimitOverrides {
                $crate::settings::limits::LimitOverrides { $($field: self.$field,)* }
            }
        }
    };
}
pub(crate) use section_with_limits;

for_each_limit!(section_with_limits; #[derive(Debug, Default, Deserialize)] #[serde(deny_unknown_fields)] pub(crate) struct RawLimits {
    stack_kb: Option<usize>,
    max_plugin_mb: Option<u64>,
    concurrency: Option<u32>,
    /// Default cap on one plugin's concurrent calls (default: half of `concurrency`).
    plugin_concurrency: Option<u32>,
    /// Log lines per second per plugin, across its calls (burst: ten seconds' worth).
    log_rate: Option<u32>,
    /// The longest time limit a tool's manifest may ask for (`timeoutMs`), in ms.
    max_timeout_ms: Option<u64>,
});

/// How long a tool may ask to run (`timeoutMs` in its manifest) unless `[limits]
/// max_timeout_ms` says otherwise: five minutes.
pub const DEFAULT_MAX_TIMEOUT_MS: u64 = 300_000;

/// The `[limits]` section, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSettings {
    pub limits: Limits,
    pub stack_kb: usize,
    pub max_plugin_bytes: u64,
    pub concurrency: u32,
    pub plugin_concurrency: u32,
    pub log_rate: u32,
    pub max_timeout_ms: u64,
}

impl RawLimits {
    pub(crate) fn resolve(self) -> Result<LimitSettings, Invalid> {
        let mut limits = Limits::default();
        self.limit_overrides().apply(&mut limits);
        check("limits", &limits.into())?;
        let stack_kb = self.stack_kb.unwrap_or(512);
        if !(64..=64 * 1024).contains(&stack_kb) {
            return Err(Invalid::out_of_range("limits.stack_kb", stack_kb, 64, 65536));
        }
        let concurrency = self.concurrency.unwrap_or(32);
        if !(1..=1024).contains(&concurrency) {
            return Err(Invalid::out_of_range("limits.concurrency", concurrency, 1, 1024));
        }
        let plugin_concurrency = match self.plugin_concurrency {
            Some(c) if !(1..=concurrency).contains(&c) => {
                let bounds = (1, concurrency.into());
                return Err(Invalid::out_of_range_noting(
                    "limits.plugin_concurrency",
                    c,
                    bounds,
                    " (limits.concurrency)",
                ));
            }
            Some(c) => c,
            None => default_plugin_concurrency(concurrency),
        };
        let log_rate = self.log_rate.unwrap_or(100);
        if log_rate == 0 {
            let lines = Problem::TooSmall { min: 1, also: Vec::new(), note: " (lines per second)" };
            return Err(Invalid::new("limits.log_rate", lines));
        }
        let max_plugin_mb = self.max_plugin_mb.unwrap_or(64);
        if max_plugin_mb == 0 {
            return Err(Invalid::at_least_one("limits.max_plugin_mb"));
        }
        let max_timeout_ms = self.max_timeout_ms.unwrap_or(DEFAULT_MAX_TIMEOUT_MS);
        if !(1..=toolhost_spec::manifest::MAX_TIMEOUT_MS).contains(&max_timeout_ms) {
            let bounds = (1, toolhost_spec::manifest::MAX_TIMEOUT_MS);
            return Err(Invalid::out_of_range_noting(
                "limits.max_timeout_ms",
                max_timeout_ms,
                bounds,
                " (a day)",
            ));
        }
        Ok(LimitSettings {
            limits,
            stack_kb,
            max_plugin_bytes: max_plugin_mb * 1024 * 1024,
            concurrency,
            plugin_concurrency,
            log_rate,
            max_timeout_ms,
        })
    }
}

/// Check the limits a section sets, naming the section (`limits`, `plugin.files`, `tool.read`).
pub fn check(key: &str, l: &LimitOverrides) -> Result<(), Invalid> {
    if l.timeout_ms == Some(0) {
        return Err(Invalid::at_least_one(format!("{key}.timeout_ms")));
    }
    if let Some(mb) = l.memory_mb
        && !(1..=4096).contains(&mb)
    {
        return Err(Invalid::out_of_range(format!("{key}.memory_mb"), mb, 1, 4096));
    }
    if l.output_limit == Some(0) {
        return Err(Invalid::at_least_one(format!("{key}.output_limit")));
    }
    // Zero is a valid quota (a call may write nothing) for write_mb and create_limit; a
    // log cap of zero would hide even the line saying what was dropped, so it needs 1.
    if l.log_kb == Some(0) || l.log_lines == Some(0) {
        return Err(Invalid::each_at_least_one(format!("{key}.log_kb"), vec![format!("{key}.log_lines")]));
    }
    Ok(())
}

/// One plugin may use half the call slots unless the operator says otherwise, so a saturated
/// plugin always leaves room for the others.
pub fn default_plugin_concurrency(concurrency: u32) -> u32 {
    (concurrency / 2).max(1)
}

//! `GET /metrics`: the service's counters in the Prometheus text format (version 0.0.4),
//! encoded by the official client (`prometheus-client`), never formatted by hand.
//!
//! Label values are bounded: `tool` is a registered tool's name (a name no tool has is counted
//! as `(unknown)`, so a client cannot grow the series without limit), `outcome` is `ok` or an
//! [`ErrorKind`](toolhost_core::ErrorKind), `decision`/`by` come from fixed sets, and
//! `identity` is one of the first [`MAX_IDENTITIES`] identities seen (the rest are `(other)`).

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use toolhost_core::registry::Registry;

type Labels = Vec<(String, String)>;

/// The `Content-Type` of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// The tool label of a call to a name no registered tool has.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// Identities given a series of their own in `toolhost_identity_calls_total`; later ones share
/// [`OTHER_IDENTITY`]'s.
pub const MAX_IDENTITIES: usize = 200;
/// The identity label of the identities past [`MAX_IDENTITIES`].
pub const OTHER_IDENTITY: &str = "(other)";

/// Every metric `serve` exports.
#[derive(Debug)]
pub struct Metrics {
    registry: prometheus_client::registry::Registry,
    calls: Family<Labels, Counter>,
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    waiting: Gauge,
    danger: Family<Labels, Counter>,
    reads: Family<Labels, Counter>,
    kv_ops: Family<Labels, Counter>,
    kv_written: Family<Labels, Counter>,
    identity_calls: Family<Labels, Counter>,
    /// The identities with a series of their own.
    identities: std::sync::Mutex<std::collections::HashSet<String>>,
    reloads: Counter,
    reload_failures: Counter,
    plugins_loaded: Gauge,
    plugins_pending: Gauge,
    tools_loaded: Gauge,
    /// Each tool's series, found by its name without building a label set per call: its
    /// duration histogram and its counter per outcome (shared handles into the families).
    per_tool: std::sync::RwLock<std::collections::HashMap<String, ToolSeries>>,
}

#[derive(Debug, Clone)]
struct ToolSeries {
    duration: Histogram,
    outcomes: Vec<(String, Counter)>,
}

fn latency_histogram() -> Histogram {
    // 1 ms … 32 s, doubling: from an echo to a call at a generous timeout.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: prometheus_client::registry::Registry::default(),
            calls: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            in_flight: Gauge::default(),
            waiting: Gauge::default(),
            danger: Family::default(),
            reads: Family::default(),
            kv_ops: Family::default(),
            kv_written: Family::default(),
            identity_calls: Family::default(),
            identities: Default::default(),
            reloads: Counter::default(),
            reload_failures: Counter::default(),
            plugins_loaded: Gauge::default(),
            plugins_pending: Gauge::default(),
            tools_loaded: Gauge::default(),
            per_tool: Default::default(),
        };
        let r = &mut m.registry;
        // Counters get their `_total` suffix from the encoder.
        r.register(
            "toolhost_calls",
            "Tool calls finished, by tool and outcome (ok or the error kind)",
            m.calls.clone(),
        );
        r.register(
            "toolhost_call_duration_seconds",
            "Time from a call's arrival to its outcome, waiting for a slot included, by tool",
            m.duration.clone(),
        );
        r.register("toolhost_calls_in_flight", "Calls admitted and not yet finished", m.in_flight.clone());
        r.register(
            "toolhost_calls_waiting",
            "Calls waiting for a call slot (the plugin's or the host's concurrency)",
            m.waiting.clone(),
        );
        r.register(
            "toolhost_danger_decisions",
            "Decisions about dangerous calls, by decision (allow, deny, asked) and who made it",
            m.danger.clone(),
        );
        r.register(
            "toolhost_resource_reads",
            "Reads of resources the host serves (skills' files), by plugin, method (resources/read, skills/get, console) and outcome (ok, not_found)",
            m.reads.clone(),
        );
        r.register(
            "toolhost_kv_operations",
            "Key-value store operations of plugins' calls (each key of a batch counts), by plugin",
            m.kv_ops.clone(),
        );
        r.register(
            "toolhost_kv_written_bytes",
            "Bytes of values plugins' calls wrote to their key-value stores, by plugin",
            m.kv_written.clone(),
        );
        r.register(
            "toolhost_identity_calls",
            "Tool calls finished, by the identity that made them (a static token's or an OAuth principal's key; the first 200, then (other)) and outcome",
            m.identity_calls.clone(),
        );
        r.register("toolhost_reloads", "Registry swaps after the plugins folder changed", m.reloads.clone());
        r.register(
            "toolhost_reload_failures",
            "Plugin files that failed to load on a reload (the last good version keeps serving)",
            m.reload_failures.clone(),
        );
        r.register("toolhost_plugins_loaded", "Plugins serving tools", m.plugins_loaded.clone());
        r.register(
            "toolhost_plugins_pending_approval",
            "Plugin versions held until their larger request is approved",
            m.plugins_pending.clone(),
        );
        r.register("toolhost_tools_loaded", "Tools registered", m.tools_loaded.clone());
        m
    }

    /// Export the audit trail's count of `fdatasync`s (`toolhost_audit_syncs_total`).
    pub fn count_audit_syncs(&mut self, syncs: Counter) {
        self.registry.register(
            "toolhost_audit_syncs",
            "Syncs of the audit file: for its lines as [audit] fsync says (each line with \"always\", at most one per interval with \"interval\"), at rotation, at shutdown",
            syncs,
        );
    }

    /// Count one read of a resource (`plugin` empty: no such resource).
    pub fn read(&self, plugin: &str, method: &str, outcome: &str) {
        let labels: Labels = vec![
            ("plugin".into(), plugin.into()),
            ("method".into(), method.into()),
            ("outcome".into(), outcome.into()),
        ];
        self.reads.get_or_create(&labels).inc();
    }

    /// Count a call's key-value operations and the bytes it wrote, for `plugin`.
    pub fn kv(&self, plugin: &str, ops: u64, written: u64) {
        let labels: Labels = vec![("plugin".into(), plugin.into())];
        self.kv_ops.get_or_create(&labels).inc_by(ops);
        self.kv_written.get_or_create(&labels).inc_by(written);
    }

    /// Count one finished call made by `identity` (`Principal::key`).
    pub fn identity_call(&self, identity: &str, outcome: &str) {
        let label = {
            let mut seen = self.identities.lock().unwrap_or_else(|p| p.into_inner());
            if seen.contains(identity) || seen.len() < MAX_IDENTITIES && seen.insert(identity.to_string()) {
                identity
            } else {
                OTHER_IDENTITY
            }
        };
        let labels: Labels = vec![("identity".into(), label.into()), ("outcome".into(), outcome.into())];
        self.identity_calls.get_or_create(&labels).inc();
    }

    /// Count one finished call.
    pub fn call(&self, tool: &str, outcome: &str, seconds: f64) {
        {
            let known = self.per_tool.read().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = known.get(tool)
                && let Some((_, c)) = s.outcomes.iter().find(|(o, _)| o == outcome)
            {
                c.inc();
                s.duration.observe(seconds);
                return;
            }
        }
        // First call of this tool with this outcome: its series are created in the families.
        let labels = |with_outcome: bool| {
            let mut l: Labels = vec![("tool".into(), tool.to_string())];
            if with_outcome {
                l.push(("outcome".into(), outcome.to_string()));
            }
            l
        };
        let counter = self.calls.get_or_create(&labels(true)).clone();
        let duration = self.duration.get_or_create(&labels(false)).clone();
        counter.inc();
        duration.observe(seconds);
        let mut known = self.per_tool.write().unwrap_or_else(|p| p.into_inner());
        let s =
            known.entry(tool.to_string()).or_insert_with(|| ToolSeries { duration, outcomes: Vec::new() });
        if !s.outcomes.iter().any(|(o, _)| o == outcome) {
            s.outcomes.push((outcome.to_string(), counter));
        }
    }

    /// Count one danger decision.
    pub fn danger(&self, decision: &str, by: &str) {
        self.danger
            .get_or_create(&vec![("decision".into(), decision.into()), ("by".into(), by.into())])
            .inc();
    }

    /// One registry swap, with `failures` files that failed to load in it.
    pub fn reload(&self, failures: usize) {
        self.reloads.inc();
        self.reload_failures.inc_by(failures as u64);
    }

    pub(crate) fn in_flight(&self) -> &Gauge {
        &self.in_flight
    }

    /// Counts a call as waiting for a slot until dropped.
    pub fn waiting(&self) -> WaitingGuard {
        self.waiting.inc();
        WaitingGuard(self.waiting.clone())
    }

    /// The text exposition, with the registry gauges taken from `registry` now.
    pub fn encode(&self, registry: &Registry) -> String {
        self.plugins_loaded.set(registry.plugins().len() as i64);
        self.plugins_pending.set(registry.pending().len() as i64);
        self.tools_loaded.set(registry.tools().count() as i64);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// See [`Metrics::waiting`].
#[derive(Debug)]
pub struct WaitingGuard(Gauge);

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_per_tool_and_outcome_after_the_first() {
        let m = Metrics::new();
        for _ in 0..3 {
            m.call("echo", "ok", 0.0005);
        }
        m.call("echo", "timeout", 2.0);
        m.call("other", "ok", 0.01);
        let text = m.encode(&Registry::default());
        let has = |l: &str| text.lines().any(|x| x == l);
        assert!(has(r#"toolhost_calls_total{tool="echo",outcome="ok"} 3"#), "{text}");
        assert!(has(r#"toolhost_calls_total{tool="echo",outcome="timeout"} 1"#), "{text}");
        assert!(has(r#"toolhost_calls_total{tool="other",outcome="ok"} 1"#), "{text}");
        assert!(has(r#"toolhost_call_duration_seconds_count{tool="echo"} 4"#), "{text}");
    }

    #[test]
    fn identities_past_the_cap_share_one_series() {
        let m = Metrics::new();
        for i in 0..MAX_IDENTITIES + 5 {
            m.identity_call(&format!("token:t{i}"), "ok");
        }
        m.identity_call("token:t0", "ok");
        let text = m.encode(&Registry::default());
        let has = |l: &str| text.lines().any(|x| x == l);
        assert!(has(r#"toolhost_identity_calls_total{identity="token:t0",outcome="ok"} 2"#), "{text}");
        assert!(has(r#"toolhost_identity_calls_total{identity="(other)",outcome="ok"} 5"#), "{text}");
        let series = text.lines().filter(|l| l.starts_with("toolhost_identity_calls_total{")).count();
        assert_eq!(series, MAX_IDENTITIES + 1, "bounded: the first identities, then (other)");
    }
}

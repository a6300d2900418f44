//! `GET /console/api/metrics`: calls/s, p50/p99 latency and errors by kind, in all and per
//! tool, over the last minutes — computed from the very text `/metrics` serves (sampled every
//! [`INTERVAL`], parsed back), so the charts and a Prometheus server can never disagree.

use super::Console;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the counters are sampled.
pub const INTERVAL: Duration = Duration::from_secs(5);
/// Samples kept: ten minutes.
const KEEP: usize = 121;
/// Tools charted at most (the busiest).
const MAX_TOOLS: usize = 24;

/// The counters at one moment.
#[derive(Debug, Default, Clone)]
struct Sample {
    /// Milliseconds since the Unix epoch.
    at_ms: f64,
    /// (tool, outcome) → calls finished.
    calls: BTreeMap<(String, String), f64>,
    /// tool → (bucket bound in seconds, cumulative count), bounds ascending, `+Inf` last.
    buckets: BTreeMap<String, Vec<(f64, f64)>>,
    in_flight: f64,
    waiting: f64,
}

/// The samples of the last minutes.
#[derive(Debug, Default)]
pub struct Charts {
    samples: Mutex<VecDeque<Sample>>,
}

/// A sample's labels, in order.
type Labels = Vec<(String, String)>;

/// `name{k="v",…} value` lines of the Prometheus text format (comments skipped).
fn parse_line(line: &str) -> Option<(&str, Labels, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    let mut labels = Vec::new();
    let mut rest = &line[name_end..];
    if let Some(r) = rest.strip_prefix('{') {
        let mut chars = r.char_indices().peekable();
        let end = loop {
            // key
            while chars.peek().is_some_and(|(_, c)| *c == ',' || *c == ' ') {
                chars.next();
            }
            match chars.peek().copied() {
                Some((i, '}')) => break i,
                None => return None,
                Some(_) => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return None;
            }
            let mut value = String::new();
            let mut escaped = false;
            for (_, c) in chars.by_ref() {
                match (escaped, c) {
                    (true, 'n') => {
                        value.push('\n');
                        escaped = false;
                    }
                    (true, c) => {
                        value.push(c);
                        escaped = false;
                    }
                    (false, '\\') => escaped = true,
                    (false, '"') => break,
                    (false, c) => value.push(c),
                }
            }
            labels.push((key.trim().to_string(), value));
        };
        rest = &r[end + 1..];
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        v => v.parse().ok()?,
    };
    Some((name, labels, value))
}

fn label<'a>(labels: &'a [(String, String)], k: &str) -> Option<&'a str> {
    labels.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
}

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

impl Sample {
    fn parse(text: &str, at_ms: f64) -> Sample {
        let mut s = Sample { at_ms, ..Sample::default() };
        for line in text.lines() {
            let Some((name, labels, v)) = parse_line(line) else { continue };
            match name {
                "toolhost_calls_total" => {
                    if let (Some(t), Some(o)) = (label(&labels, "tool"), label(&labels, "outcome")) {
                        s.calls.insert((t.to_string(), o.to_string()), v);
                    }
                }
                "toolhost_call_duration_seconds_bucket" => {
                    if let (Some(t), Some(le)) = (label(&labels, "tool"), label(&labels, "le")) {
                        let le =
                            if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::INFINITY) };
                        s.buckets.entry(t.to_string()).or_default().push((le, v));
                    }
                }
                "toolhost_calls_in_flight" => s.in_flight = v,
                "toolhost_calls_waiting" => s.waiting = v,
                _ => {}
            }
        }
        for b in s.buckets.values_mut() {
            b.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        s
    }
}

/// The `q` quantile (0..1) of the calls counted between two cumulative bucket lists, in
/// milliseconds, interpolated inside its bucket; `None` without calls.
fn quantile(before: Option<&Vec<(f64, f64)>>, after: &[(f64, f64)], q: f64) -> Option<f64> {
    let was = |le: f64| before.and_then(|b| b.iter().find(|(l, _)| *l == le)).map(|(_, c)| *c).unwrap_or(0.0);
    let delta: Vec<(f64, f64)> = after.iter().map(|(le, c)| (*le, (c - was(*le)).max(0.0))).collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let target = q * total;
    let mut prev = (0.0, 0.0);
    for (le, cum) in delta {
        if cum >= target {
            if le.is_infinite() {
                return Some(prev.0 * 1000.0);
            }
            let inside = cum - prev.1;
            let frac = if inside > 0.0 { (target - prev.1) / inside } else { 1.0 };
            return Some((prev.0 + (le - prev.0) * frac) * 1000.0);
        }
        prev = (le, cum);
    }
    Some(prev.0 * 1000.0)
}

/// One chart's series: calls/s, p50 and p99 (ms), errors/s by kind.
#[derive(Default)]
struct Series {
    calls: Vec<f64>,
    p50: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
    errors: BTreeMap<String, Vec<f64>>,
    total: f64,
}

impl Series {
    fn json(&self) -> Value {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        json!({
            "callsPerSecond": self.calls.iter().map(|v| round(*v)).collect::<Vec<_>>(),
            "p50Ms": self.p50.iter().map(|v| v.map(round)).collect::<Vec<_>>(),
            "p99Ms": self.p99.iter().map(|v| v.map(round)).collect::<Vec<_>>(),
            "errorsPerSecond": self.errors.iter().map(|(k, v)| (k.clone(), json!(v.iter().map(|x| round(*x)).collect::<Vec<_>>()))).collect::<serde_json::Map<_, _>>(),
            "calls": self.total,
        })
    }
}

/// One interval's counts over all tools: for the p50/p99 of all calls, every tool's buckets
/// merged into one list (before and after, keyed by the bound's bits).
#[derive(Default)]
struct Interval {
    before: BTreeMap<u64, f64>,
    after: BTreeMap<u64, f64>,
    calls: f64,
    errors: BTreeMap<String, f64>,
}

impl Series {
    /// Point `i`: `tool`'s calls between samples `a` and `b` (`secs` apart), also counted
    /// into `interval`.
    fn add_tool(
        &mut self,
        tool: &str,
        (a, b): (&Sample, &Sample),
        secs: f64,
        i: usize,
        interval: &mut Interval,
    ) {
        let delta = |k: &(String, String)| {
            (b.calls.get(k).copied().unwrap_or(0.0) - a.calls.get(k).copied().unwrap_or(0.0)).max(0.0)
        };
        let mut calls = 0.0;
        let mut errors: BTreeMap<String, f64> = BTreeMap::new();
        for k in b.calls.keys().filter(|(t, _)| t == tool) {
            let d = delta(k);
            calls += d;
            if k.1 != "ok" {
                *errors.entry(k.1.clone()).or_default() += d;
            }
        }
        self.calls.push(calls / secs);
        self.total += calls;
        let after = b.buckets.get(tool).cloned().unwrap_or_default();
        self.p50.push(quantile(a.buckets.get(tool), &after, 0.5));
        self.p99.push(quantile(a.buckets.get(tool), &after, 0.99));
        for (kind, n) in &errors {
            let v = self.errors.entry(kind.clone()).or_insert_with(|| vec![0.0; i]);
            v.push(n / secs);
            *interval.errors.entry(kind.clone()).or_default() += n;
        }
        for v in self.errors.values_mut() {
            v.resize(i + 1, 0.0);
        }
        interval.calls += calls;
        for (le, c) in a.buckets.get(tool).into_iter().flatten() {
            *interval.before.entry(le.to_bits()).or_default() += c;
        }
        for (le, c) in &after {
            *interval.after.entry(le.to_bits()).or_default() += c;
        }
    }

    /// Point `i` of all calls: `interval`'s counts over `secs`.
    fn add_all(&mut self, interval: Interval, secs: f64, i: usize) {
        let sorted = |m: BTreeMap<u64, f64>| {
            let mut v: Vec<(f64, f64)> = m.into_iter().map(|(k, c)| (f64::from_bits(k), c)).collect();
            v.sort_by(|x, y| x.0.total_cmp(&y.0));
            v
        };
        let (before, after) = (sorted(interval.before), sorted(interval.after));
        self.calls.push(interval.calls / secs);
        self.total += interval.calls;
        self.p50.push(quantile(Some(&before), &after, 0.5));
        self.p99.push(quantile(Some(&before), &after, 0.99));
        for (kind, n) in interval.errors {
            let v = self.errors.entry(kind).or_insert_with(|| vec![0.0; i]);
            v.push(n / secs);
        }
        for v in self.errors.values_mut() {
            v.resize(i + 1, 0.0);
        }
    }
}

impl Charts {
    /// Sample the console's counters now and every `every` while the console lives.
    pub fn sample_every(console: &Arc<Console>, every: Duration) {
        let me = Arc::downgrade(console);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(c) = me.upgrade() else { return };
                let s = Sample::parse(&c.service.metrics_text(), now_ms());
                let mut samples = c.charts.samples.lock().unwrap_or_else(|p| p.into_inner());
                samples.push_back(s);
                while samples.len() > KEEP {
                    samples.pop_front();
                }
            }
        });
    }

    /// The charts' data: one point per interval between samples (the last one ends now).
    pub fn series(&self, c: &Console) -> Value {
        let mut samples: Vec<Sample> =
            self.samples.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
        let now = Sample::parse(&c.service.metrics_text(), now_ms());
        let (in_flight, waiting) = (now.in_flight, now.waiting);
        if samples.last().is_none_or(|l| now.at_ms - l.at_ms >= 500.0) {
            samples.push(now);
        }
        let mut times = Vec::new();
        let mut all = Series::default();
        let mut per_tool: BTreeMap<String, Series> = BTreeMap::new();
        let tools: std::collections::BTreeSet<String> =
            samples.iter().flat_map(|s| s.calls.keys().map(|(t, _)| t.clone())).collect();
        for pair in samples.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let secs = ((b.at_ms - a.at_ms) / 1000.0).max(0.001);
            times.push(b.at_ms.round());
            let i = times.len() - 1;
            let mut interval = Interval::default();
            for tool in &tools {
                per_tool.entry(tool.clone()).or_default().add_tool(tool, (a, b), secs, i, &mut interval);
            }
            all.add_all(interval, secs, i);
        }
        let mut busiest: Vec<(String, Series)> =
            per_tool.into_iter().filter(|(_, s)| s.total > 0.0).collect();
        busiest.sort_by(|a, b| b.1.total.total_cmp(&a.1.total).then(a.0.cmp(&b.0)));
        busiest.truncate(MAX_TOOLS);
        json!({
            "intervalSeconds": INTERVAL.as_secs(),
            "times": times,
            "all": all.json(),
            "tools": busiest.iter().map(|(t, s)| { let mut v = s.json(); v["tool"] = json!(t); v }).collect::<Vec<_>>(),
            "inFlight": in_flight,
            "waiting": waiting,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_text_is_read_back() {
        let m = crate::service::metrics::Metrics::new();
        m.call("count_words", "ok", 0.003);
        m.call("count_words", "ok", 0.003);
        m.call("count_words", "timeout", 10.0);
        m.call("(unknown)", "unknown_tool", 0.0);
        let s = Sample::parse(&m.encode(&Default::default()), 0.0);
        assert_eq!(s.calls[&("count_words".into(), "ok".into())], 2.0);
        assert_eq!(s.calls[&("count_words".into(), "timeout".into())], 1.0);
        assert_eq!(s.calls[&("(unknown)".into(), "unknown_tool".into())], 1.0);
        let b = &s.buckets["count_words"];
        assert_eq!(b.last().unwrap(), &(f64::INFINITY, 3.0));
        // Two of three calls took 3 ms: the median is in the (2 ms, 4 ms] bucket; the p99 in
        // the one holding 10 s.
        let p50 = quantile(None, b, 0.5).unwrap();
        assert!((2.0..=4.0).contains(&p50), "{p50}");
        let p99 = quantile(None, b, 0.99).unwrap();
        assert!((8_000.0..=16_384.0).contains(&p99), "{p99}");
        assert_eq!(quantile(Some(b), b, 0.5), None, "no calls in between");
        let (name, labels, v) = parse_line(r#"x{a="q\"uote",b="back\\slash"} 7"#).unwrap();
        assert_eq!((name, v), ("x", 7.0));
        assert_eq!(labels, [("a".to_string(), "q\"uote".to_string()), ("b".into(), "back\\slash".into())]);
    }
}

//! The manifest as `inspect` prints it.

use super::requests;
use crate::term;
use toolhost_core::Config;
use toolhost_spec::manifest::Manifest;

/// Human-readable manifest, as `inspect` prints it; every field the file chose through
/// [`term::line`], so none can draw lines or sequences of its own.
pub fn render_manifest(m: &Manifest) -> String {
    let mut out =
        format!("plugin {} {} (manifest format {})\n", term::line(&m.name), term::line(&m.version), m.format);
    if !m.description.is_empty() {
        out.push_str(&format!("  {}\n", term::line(&m.description)));
    }
    out.push_str(&format!("requests: {}\n", requests(m)));
    for t in &m.tools {
        out.push_str(&format!("\n{}\n  {}\n", term::line(&t.signature()), term::line(&t.description)));
        for (i, p) in t.params.iter().enumerate() {
            let ty = match &p.ty {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let json = if t.is_json(i) { ", json" } else { "" };
            let opt = if p.optional { ", optional" } else { "" };
            let rest = if t.rest && i + 1 == t.params.len() { ", takes the rest" } else { "" };
            out.push_str(&format!(
                "  - {} ({}{json}{opt}{rest}): {}\n",
                term::line(&p.name),
                term::line(&ty),
                term::line(&p.description)
            ));
        }
        let mut flags = Vec::new();
        if t.danger {
            flags.push("danger".to_string());
        }
        if t.read_only {
            flags.push("read-only".to_string());
        }
        if let Some(l) = t.output_limit {
            flags.push(format!("output limit {l}"));
        }
        if let Some(c) = &t.category {
            flags.push(format!("category {}", term::line(c)));
        }
        if let Some(ms) = t.timeout_ms {
            flags.push(format!("asks for {ms} ms"));
        }
        if let Some(ts) = t.task_support {
            flags.push(format!("task {}", ts.as_str()));
        }
        if !flags.is_empty() {
            out.push_str(&format!("  [{}]\n", flags.join(", ")));
        }
    }
    out
}

/// What this host would grant each tool of `m` (`read 30000 ms, write 10000 ms`): its
/// manifest's `timeoutMs` up to `[limits] max_timeout_ms`, the operator's
/// `[plugin.X]`/`[tool.X]` overrides applied.
pub fn time_limits(m: &Manifest, cfg: &Config) -> String {
    let limits: Vec<String> = m
        .tools
        .iter()
        .map(|t| format!("{} {} ms", term::line(&t.name), cfg.limits_for_tool(&m.name, t).timeout_ms))
        .collect();
    limits.join(", ")
}

//! `toolhost inspect FILE`: the manifest embedded in a plugin file, its signature and SHA-256
//! (reads the file; never compiles or runs it).

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Context;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_spec::manifest::Manifest;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin file
    pub file: PathBuf,
    /// Print the manifest as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let cfg = Settings::resolve(g)?.core;
    let Args { file, json } = a;
    let manifest = toolhost_core::registry::inspect_file(&file, cfg.max_plugin_bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let signature = toolhost_core::registry::signing::describe(&cfg.trust, &manifest.name, &bytes);
    // What `[trust] allow_unsigned` and `[approvals.plugin.NAME] sha256` pin.
    let digest = format!("sha256:{}", toolhost_spec::digest::sha256_hex(&bytes));
    if json {
        println!("{}", term::to_json(&manifest)?);
        // stdout stays the manifest alone (embed-manifest reads it)
        eprintln!("{}\nfile: {digest}", term::text(&signature));
    } else {
        print!("{}", render_manifest(&manifest));
        // What this host would grant each tool: its manifest's `timeoutMs` up to
        // `[limits] max_timeout_ms`, the operator's [plugin.X]/[tool.X] overrides applied.
        let limits: Vec<String> = manifest
            .tools
            .iter()
            .map(|t| {
                format!("{} {} ms", term::line(&t.name), cfg.limits_for_tool(&manifest.name, t).timeout_ms)
            })
            .collect();
        println!("time limits here: {}", limits.join(", "));
        println!("{}", term::text(&signature));
        println!("file: {digest}");
    }
    Ok(ExitCode::SUCCESS)
}

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

pub(crate) fn requests(m: &Manifest) -> String {
    let c = &m.capabilities;
    let mut parts: Vec<String> = c.fs.iter().map(|f| format!("fs {}:{}", f.path, f.mode)).collect();
    parts.extend(c.env.iter().map(|e| format!("env {e}")));
    parts.extend(c.net.iter().map(|n| format!("net {n}")));
    parts.extend(c.secrets.iter().map(|s| format!("secret {s}")));
    parts.extend(c.exec.iter().map(|e| format!("exec {e}")));
    if parts.is_empty() { "nothing".into() } else { term::line(&parts.join(", ")).into_owned() }
}

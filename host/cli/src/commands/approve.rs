//! `toolhost approve PLUGIN`: record what a plugin now requests (and how it presents its tools)
//! as approved; `--print` writes nothing and prints the `[approvals.plugin.NAME]` entry instead.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_core::Config;
use toolhost_spec::manifest::Manifest;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin name (as `list` shows it)
    pub plugin: String,
    /// Write nothing: print the `[approvals.plugin.NAME]` entry that pins the plugin's current
    /// request in toolhost.toml (for a read-only plugins folder, or replicas sharing one)
    #[arg(long)]
    pub print: bool,
    /// With --print: also pin this exact file by its SHA-256 (any rebuild then needs a new entry)
    #[arg(long, requires = "print")]
    pub sha256: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let cfg = Settings::resolve(g)?.core;
    approve(&cfg, &a.plugin, a.print.then_some(a.sha256))?;
    Ok(ExitCode::SUCCESS)
}

/// `toolhost approve PLUGIN`: record the plugin's current request as approved; with `print`
/// (`Some(with_sha256)`), print the config entry that pins it instead and write nothing.
fn approve(cfg: &Config, plugin: &str, print: Option<bool>) -> Result<()> {
    use toolhost_core::registry::approvals::Approvals;
    let (candidates, _) =
        toolhost_core::discovery::scan(&cfg.plugins_dir, cfg.max_plugin_bytes, |_, bytes| {
            toolhost_spec::manifest::read(bytes).ok()
        })
        .with_context(|| format!("cannot scan {}", cfg.plugins_dir.display()))?;
    let mut names = Vec::new();
    let mut found: Option<(Manifest, PathBuf, [u8; 32])> = None;
    for (c, manifest) in candidates {
        let Some(m) = manifest else { continue };
        if m.name == plugin {
            found = Some((m, c.path, c.hash));
            break;
        }
        names.push(m.name);
    }
    let Some((m, file, hash)) = found else {
        bail!(
            "no plugin named `{plugin}` in {} (found: {})",
            cfg.plugins_dir.display(),
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        );
    };
    if let Some(with_sha256) = print {
        print!("{}", toolhost_core::registry::approvals::lock_entry(&m, &file, &hash, with_sha256));
        return Ok(());
    }
    if cfg.approvals.locked || cfg.approvals.plugins.contains_key(plugin) {
        bail!(
            "plugin `{plugin}` is approved in [approvals] of {} (the config decides, not {}); paste the entry \
             `toolhost approve {plugin} --print` prints into the config instead",
            cfg.source.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the config".into()),
            toolhost_core::registry::approvals::FILE
        );
    }
    let mut approvals = Approvals::load(&cfg.plugins_dir);
    let new = approvals.pending(&m);
    approvals.approve_by(&m, &toolhost_core::identity::Principal::local());
    approvals.save().with_context(|| {
        format!("cannot write {}", cfg.plugins_dir.join(toolhost_core::registry::approvals::FILE).display())
    })?;
    println!(
        "approved plugin `{plugin}` v{} ({}): requests {}",
        term::line(&m.version),
        term::line(&toolhost_core::discovery::file_name(&file)),
        crate::report::requests(&m)
    );
    if !new.is_empty() {
        println!("newly approved: {}", term::line(&new.join(", ")));
    }
    let grant = cfg.plugin(plugin);
    let cx = toolhost_core::capability::GrantContext {
        plugin,
        request: &m.capabilities,
        grant: &grant,
        secrets: &cfg.secrets,
    };
    let missing = toolhost_core::capability::Grants::effective(&cx).1;
    for miss in missing {
        println!("not granted:    {} — grant with {}", term::line(&miss.what), term::line(&miss.how));
    }
    Ok(())
}

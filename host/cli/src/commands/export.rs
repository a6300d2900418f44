//! `toolhost export server.json`: the deployment described for MCP registries — an MCP registry
//! `server.json` (schema 2025-12-11) naming the server, where it is reachable (`--url`, a
//! streamable HTTP remote), and, under `_meta`'s publisher-provided key, the plugins it loads and
//! the tools it exposes, as `tools/list` presents them (titles and hints from the one
//! presentation function).

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::Config;
use toolhost_core::registry::Registry;

/// The server.json schema this writes.
pub const SERVER_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// The `_meta` key registries keep for what the publisher adds.
pub const PUBLISHER_META: &str = "io.modelcontextprotocol.registry/publisher-provided";
/// The registry's cap on `description`.
const MAX_DESCRIPTION: usize = 100;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to write: `server.json` (an MCP registry entry for this deployment)
    #[arg(value_parser = ["server.json"])]
    pub what: String,
    /// The server's registry name, reverse-DNS `NAMESPACE/NAME` (your own namespace, e.g.
    /// io.github.you/tools)
    #[arg(long, default_value = "local/toolhost")]
    pub name: String,
    /// Where clients reach it over streamable HTTP (`serve --http`), e.g. https://tools.example.com/mcp
    #[arg(long)]
    pub url: Option<String>,
    /// The server's version (default: toolhost's)
    #[arg(long)]
    pub version: Option<String>,
    /// At most 100 characters (default: how many tools from how many plugins)
    #[arg(long)]
    pub description: Option<String>,
    /// Write to this file instead of stdout
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// What `server.json` says besides the registry's contents.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub url: Option<String>,
    pub version: String,
    pub description: Option<String>,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let (host, _) =
        crate::session::open_reporting(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let info = ServerInfo {
        name: a.name,
        url: a.url,
        version: a.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string()),
        description: a.description,
    };
    let doc = server_json(&host.registry.load_full(), &host.config, &info)?;
    let text = format!("{}\n", serde_json::to_string_pretty(&doc)?);
    match &a.output {
        Some(path) => {
            toolhost_core::files::write_atomic(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {}", term::line(&path.display().to_string()));
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The `server.json` document for `registry` under `config`; errors name the field the
/// registry's schema would refuse.
pub fn server_json(registry: &Registry, config: &Config, info: &ServerInfo) -> Result<Value> {
    check_name(&info.name)?;
    let tools: Vec<&toolhost_core::registry::ToolEntry> = registry.tools().collect();
    let description = info.description.clone().unwrap_or_else(|| {
        format!("{} sandboxed WebAssembly tools from {} plugins", tools.len(), registry.plugins().len())
    });
    let n = description.chars().count();
    if n == 0 || n > MAX_DESCRIPTION {
        bail!("--description is {n} characters; a registry takes 1 to {MAX_DESCRIPTION}");
    }
    if let Some(url) = &info.url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        bail!("--url {url:?}: a remote is an http:// or https:// URL");
    }
    let plugins: Vec<Value> = registry
        .plugins()
        .iter()
        .map(|p| {
            json!({
                "name": &*p.name,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "sha256": hex::encode(p.hash),
            })
        })
        .collect();
    let tools: Vec<Value> = tools
        .iter()
        .map(|e| {
            let view = toolhost_core::view::ToolView::new(e, config);
            json!({
                "name": view.name(),
                "title": view.title(),
                "description": view.spec.description,
                "plugin": view.plugin,
                "annotations": {
                    "readOnlyHint": view.advertise_read_only(),
                    "destructiveHint": view.dangerous,
                    "idempotentHint": view.idempotent(),
                    "openWorldHint": view.open_world,
                },
            })
        })
        .collect();
    let mut doc = json!({
        "$schema": SERVER_SCHEMA,
        "name": info.name,
        "title": "toolhost",
        "description": description,
        "version": info.version,
        "_meta": {
            PUBLISHER_META: {
                "toolhost": {
                    "version": env!("CARGO_PKG_VERSION"),
                    "search": registry.search().is_some(),
                    "plugins": plugins,
                    "tools": tools,
                }
            }
        }
    });
    if let Some(url) = &info.url {
        doc["remotes"] = json!([{ "type": "streamable-http", "url": url }]);
    }
    Ok(doc)
}

/// `--name`: NAMESPACE/NAME as the registry's schema takes it (3 to 200 characters).
fn check_name(name: &str) -> Result<()> {
    let valid = name.len() >= 3
        && name.len() <= 200
        && name.split_once('/').is_some_and(|(ns, n)| {
            !ns.is_empty()
                && !n.is_empty()
                && ns.chars().all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
                && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        });
    if !valid {
        bail!("--name {name:?}: a registry name is NAMESPACE/NAME in reverse-DNS form (io.github.you/tools)");
    }
    Ok(())
}

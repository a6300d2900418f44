//! `toolhost kv`: the operator's view of the plugins' key-value stores — list, get, delete,
//! export to JSON lines, import, purge. Reads the stores where `[kv]` says they are; never
//! loads or runs a plugin.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::capability::kv::{Pair, PluginStore, Stores};

pub const AFTER_HELP: &str = "\
Each plugin has a store of its own (an SQLite file PLUGIN.sqlite3 in [kv] dir, by default
~/.local/state/toolhost/kv), holding the buckets its manifest requests and the operator grants
([plugin.NAME] kv = [\"default\"] or --allow-kv NAME=default). Removing a plugin leaves its
store: `toolhost kv purge PLUGIN` deletes it.

An export is one JSON object a line: {\"bucket\", \"key\", \"value\"} for text, {\"bucket\",
\"key\", \"base64\"} for other bytes. An import sets every line or none (a bad line, or one
over a [kv] limit, leaves the store as it was).

Examples:
  toolhost kv list
  toolhost kv get notes default note:1
  toolhost kv export notes > notes.jsonl
  toolhost kv import notes notes.jsonl
  toolhost kv purge notes";

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: KvCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum KvCommand {
    /// The stores, their buckets, keys and sizes (one plugin's with PLUGIN)
    List { plugin: Option<String> },
    /// Print a value (text as it is; other bytes as base64)
    Get { plugin: String, bucket: String, key: String },
    /// Delete a key
    Delete { plugin: String, bucket: String, key: String },
    /// Write a store (or one bucket of it) as JSON lines to standard output
    Export {
        plugin: String,
        #[arg(long)]
        bucket: Option<String>,
    },
    /// Set every pair of a JSON-lines FILE (as `export` writes) in a store, all or none
    Import { plugin: String, file: PathBuf },
    /// Delete a plugin's whole store
    Purge { plugin: String },
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let settings = Settings::resolve(g)?;
    super::async_runtime()?.block_on(run_on(Stores::new(settings.core.kv.clone()), a))
}

async fn run_on(stores: Stores, a: Args) -> Result<ExitCode> {
    let where_ = match &stores.settings().backend {
        toolhost_core::capability::kv::Backend::Sqlite { dir } => dir.display().to_string(),
        toolhost_core::capability::kv::Backend::Redis { url } => {
            toolhost_core::capability::kv::redis::shown(url)
        }
    };
    let store = |plugin: &str| -> Result<Arc<PluginStore>> {
        match stores.existing(plugin)? {
            Some(s) => Ok(s),
            None => bail!("plugin `{}` has no key-value store in {where_}", term::line(plugin)),
        }
    };
    let mut out = std::io::stdout().lock();
    match a.command {
        KvCommand::List { plugin } => {
            let plugins = match plugin {
                Some(p) => vec![p],
                None => stores.plugins().await?,
            };
            if plugins.is_empty() {
                writeln!(out, "no key-value stores in {where_}")?;
            }
            for p in plugins {
                let s = store(&p)?;
                let (keys, bytes) = s.usage().await?;
                writeln!(out, "{} ({keys} keys, {bytes} bytes; {})", term::line(&p), s.location())?;
                for b in s.buckets().await? {
                    writeln!(out, "  {}: {} keys, {} bytes", term::line(&b.name), b.keys, b.bytes)?;
                }
            }
        }
        KvCommand::Get { plugin, bucket, key } => match store(&plugin)?.get(&bucket, &key).await? {
            Some(v) => match String::from_utf8(v) {
                Ok(text) => writeln!(out, "{}", term::stdout_text(&text))?,
                Err(e) => {
                    writeln!(out, "{}", base64::engine::general_purpose::STANDARD.encode(e.as_bytes()))?
                }
            },
            None => bail!(
                "no key {key:?} in bucket `{}` of plugin `{}`",
                term::line(&bucket),
                term::line(&plugin)
            ),
        },
        KvCommand::Delete { plugin, bucket, key } => {
            let s = store(&plugin)?;
            if !s.exists(&bucket, &key).await? {
                bail!(
                    "no key {key:?} in bucket `{}` of plugin `{}`",
                    term::line(&bucket),
                    term::line(&plugin)
                );
            }
            s.delete(&bucket, &key).await?;
            eprintln!(
                "deleted {key:?} from bucket `{}` of plugin `{}`",
                term::line(&bucket),
                term::line(&plugin)
            );
        }
        KvCommand::Export { plugin, bucket } => {
            for (b, (k, v)) in store(&plugin)?.entries(bucket.as_deref()).await? {
                writeln!(out, "{}", export_line(&b, &k, v))?;
            }
        }
        KvCommand::Import { plugin, file } => {
            let entries = read_import(&file)?;
            let s = stores.of(&plugin)?;
            s.import(&entries)
                .await
                .with_context(|| format!("nothing of {} was imported", file.display()))?;
            eprintln!("imported {} pairs into plugin `{}`'s store", entries.len(), term::line(&plugin));
        }
        KvCommand::Purge { plugin } => {
            if !stores
                .purge(&plugin)
                .await
                .with_context(|| format!("cannot delete plugin `{plugin}`'s store"))?
            {
                bail!("plugin `{}` has no key-value store in {where_}", term::line(&plugin));
            }
            eprintln!("deleted plugin `{}`'s key-value store", term::line(&plugin));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One exported pair: text as `value`, other bytes as `base64`.
fn export_line(bucket: &str, key: &str, value: Vec<u8>) -> String {
    let body = match String::from_utf8(value) {
        Ok(text) => serde_json::json!({ "bucket": bucket, "key": key, "value": text }),
        Err(e) => serde_json::json!({
            "bucket": bucket, "key": key,
            "base64": base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
        }),
    };
    body.to_string()
}

/// Every line of `file` as (bucket, (key, value)); the first bad line is an error naming it.
fn read_import(file: &std::path::Path) -> Result<Vec<(String, Pair)>> {
    let f = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{} line {}", file.display(), i + 1);
        let v: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("{}: not JSON", at()))?;
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let (Some(bucket), Some(key)) = (text("bucket"), text("key")) else {
            bail!("{}: needs \"bucket\" and \"key\" (text)", at());
        };
        // A bucket of one MCP session is stored as `NAME@` and 16 hex digits.
        let (name, session) = bucket.split_once('@').unwrap_or((&bucket, "0000000000000000"));
        let session_ok = session.len() == 16 && session.bytes().all(|b| b.is_ascii_hexdigit());
        if !toolhost_spec::manifest::is_bucket_name(name) || !session_ok {
            bail!("{}: bucket {bucket:?} {}", at(), toolhost_spec::manifest::BUCKET_RULE);
        }
        let value = match (text("value"), text("base64")) {
            (Some(t), None) => t.into_bytes(),
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .with_context(|| format!("{}: \"base64\" is not base64", at()))?,
            _ => bail!("{}: needs exactly one of \"value\" (text) and \"base64\"", at()),
        };
        out.push((bucket, (key, value)));
    }
    Ok(out)
}

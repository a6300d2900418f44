//! `list`'s report: the table of exposed tools with the catalog's notes, each plugin's
//! requested, granted and missing capabilities, its skills, resources, templates and prompts, what waits for approval or failed to load; and
//! the same as a JSON document for programs.

use super::requests;
use crate::term;
use std::sync::Arc;
use toolhost_core::Config;
use toolhost_core::capability::net::NetGrant;
use toolhost_core::registry::{LoadedPlugin, Registry, skills};

/// The `list` table.
pub fn render_list(reg: &Registry, config: &Config) -> String {
    let mut out = tools_table(reg, config);
    catalog_notes(reg, &mut out);
    out.push_str("\nPLUGINS\n");
    for p in reg.plugins() {
        plugin_entry(reg, config, p, &mut out);
    }
    load_notes(reg, &mut out);
    out
}

/// The exposed tools, one row each: signature, plugin, flags, time limit, description.
fn tools_table(reg: &Registry, config: &Config) -> String {
    let mut rows: Vec<[String; 5]> =
        vec![["TOOL".into(), "PLUGIN".into(), "FLAGS".into(), "TIMEOUT".into(), "DESCRIPTION".into()]];
    for t in reg.tools() {
        let view = toolhost_core::view::ToolView::new(t, config);
        let s = view.spec;
        let flags = view.flags();
        let field = |s: &str| term::line(s).into_owned();
        // A renamed tool shows its own name beside its plugin's.
        let plugin = if t.own_name() == t.name() {
            t.plugin.name.to_string()
        } else {
            format!("{}: {}", t.plugin.name, t.own_name())
        };
        rows.push([
            field(&s.signature()),
            field(&plugin),
            field(&flags.join(",")),
            seconds(view.limits.timeout_ms),
            field(&s.description),
        ]);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let mut out = String::new();
    for r in &rows {
        let line = format!("{:w0$}  {:w1$}  {:w2$}  {:w3$}  {}", r[0], r[1], r[2], r[3], r[4]);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if reg.tools().next().is_none() {
        out.push_str("(no tools loaded)\n");
    }
    out
}

/// Search mode, tool names several plugins claim, and the tools the operator's selection hides.
fn catalog_notes(reg: &Registry, out: &mut String) {
    if let Some(search) = reg.search() {
        out.push_str(&format!(
            "\nSEARCH MODE: front ends list {} and the tools [catalog] pin names; the other tools are found with it\n",
            search.spec.name
        ));
    }
    if !reg.conflicts().is_empty() {
        out.push_str("\nCONFLICTS\n");
        for c in reg.conflicts() {
            out.push_str(&format!("  ! {}\n", term::line(&c.message())));
        }
    }
    if !reg.hidden().is_empty() {
        out.push_str("\nHIDDEN\n");
        for h in reg.hidden() {
            out.push_str(&format!(
                "  {} ({}): hidden, {}\n",
                term::line(&h.tool),
                term::line(&h.plugin),
                term::line(&h.why)
            ));
        }
    }
}

/// One plugin under PLUGINS: requested, granted, missing, the grants asked and answered for it,
/// shared-write warnings, its signer.
fn plugin_entry(reg: &Registry, config: &Config, p: &LoadedPlugin, out: &mut String) {
    let granted: Vec<String> = p
        .grants
        .fs
        .iter()
        .map(|f| format!("fs {}:{} → {}", f.name, f.mode, f.host_path.display()))
        .chain(p.grants.env.iter().map(|(k, _)| format!("env {k}")))
        .chain(net_granted(&p.grants.net))
        .chain(p.grants.exec.granted.iter().map(|g| format!("exec {}", g.grant.describe())))
        .chain(p.grants.kv.granted.iter().map(|b| format!("kv {b}")))
        .collect();
    out.push_str(&format!(
        "{} {} ({})\n  requested: {}\n  granted:   {}\n",
        term::line(&p.name),
        term::line(&p.manifest.version),
        term::line(&toolhost_core::discovery::file_name(&p.file)),
        requests(&p.manifest),
        if granted.is_empty() { "nothing".into() } else { term::line(&granted.join(", ")).into_owned() }
    ));
    for m in &p.missing {
        out.push_str(&format!("  missing:   {} — grant with {}\n", term::line(&m.what), term::line(&m.how)));
    }
    for g in config.asked.iter().filter(|g| g.plugin == *p.name) {
        out.push_str(&format!(
            "  asked:     {} — {} on {} ({}{}) in {}; undo with `toolhost revoke {} {}`\n",
            term::line(&g.item.to_string()),
            if g.deny { "refused \"never\"" } else { "allowed \"always\"" },
            term::line(&g.granted),
            term::line(&g.by),
            g.who.as_deref().map(|w| format!(", by {}", term::line(w))).unwrap_or_default(),
            config.grants_file.display(),
            term::line(&g.plugin),
            term::line(&g.item.to_string()),
        ));
    }
    for n in reg.shared_write_notes(p, &config.workspace) {
        out.push_str(&format!("  warning:   {n}\n"));
    }
    if let Some(signer) = &p.signer {
        out.push_str(&format!("  signed by: {}\n", term::line(&signer.to_string())));
    }
    for s in p.skills.iter() {
        out.push_str(&format!("  {}\n", skill_line(&s.name, s.files.len(), s.size())));
    }
    for a in p.apps.iter() {
        out.push_str(&app_lines(a));
    }
    out.push_str(&served_lines(&p.manifest, Some(&p.prompt_names)));
}

/// An app (MCP Apps) as `list` shows it: its page, the tools it shows and those only it calls,
/// and the origins it declared, each as allowed or withheld (`[plugin.NAME] app_domains`).
pub fn app_lines(a: &toolhost_core::registry::apps::LoadedApp) -> String {
    let mut out =
        format!("  app:       {} — shows {}", term::line(&a.uri), term::line(&a.spec.tools.join(", ")));
    if !a.spec.app_only.is_empty() {
        out.push_str(&format!("; calls {} (app-only)", term::line(&a.spec.app_only.join(", "))));
    }
    out.push('\n');
    for (list, origins) in a.csp.lists() {
        for o in origins {
            out.push_str(&format!("    {list}: {} (allowed)\n", term::line(o)));
        }
    }
    for o in &a.withheld {
        out.push_str(&format!(
            "    withheld:  {} (declared; allow it with [plugin.NAME] app_domains)\n",
            term::line(o)
        ));
    }
    out
}

/// A manifest's resources, templates and prompts as `list` and `inspect` show them, a line
/// each: `  resource:  URI — NAME`, `  template:  TEMPLATE — NAME`, `  prompt:    NAME(arg,
/// opt?) — TITLE`, with `(its own: NAME)` when the catalog serves it under another name
/// (`names`: per prompt, the name it is served under; `None`: its own).
pub fn served_lines(m: &toolhost_spec::Manifest, names: Option<&[String]>) -> String {
    let statics =
        m.resources.iter().map(|r| format!("resource:  {} — {}", term::line(&r.uri), term::line(&r.name)));
    let templates = m
        .resource_templates
        .iter()
        .map(|t| format!("template:  {} — {}", term::line(&t.uri_template), term::line(&t.name)));
    let prompts = m.prompts.iter().enumerate().map(|(i, p)| {
        let args: Vec<String> =
            p.arguments.iter().map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" })).collect();
        let about = p.title.as_deref().unwrap_or(&p.description);
        let name = names.and_then(|n| n.get(i)).unwrap_or(&p.name);
        let own =
            if *name == p.name { String::new() } else { format!(" (its own: {})", term::line(&p.name)) };
        format!("prompt:    {}({}){own} — {}", term::line(name), args.join(", "), term::line(about))
    });
    statics.chain(templates).chain(prompts).map(|l| format!("  {l}\n")).collect()
}

/// A skill as `list` and `inspect` show it: `skill:     NAME — N files, SIZE`.
pub fn skill_line(name: &str, files: usize, bytes: u64) -> String {
    let files = if files == 1 { "1 file".to_string() } else { format!("{files} files") };
    format!("skill:     {} — {files}, {}", term::line(name), size(bytes))
}

/// A size as `list` shows it: `812 bytes`, `3.4 KiB`.
fn size(bytes: u64) -> String {
    if bytes < 1024 { format!("{bytes} bytes") } else { format!("{:.1} KiB", bytes as f64 / 1024.0) }
}

/// What waits for approval, the load warnings, and the files that failed to load.
fn load_notes(reg: &Registry, out: &mut String) {
    if !reg.pending().is_empty() {
        out.push_str("\nPENDING APPROVAL\n");
        for p in reg.pending() {
            out.push_str(&format!("  ? {}\n", term::line(&p.to_string())));
        }
    }
    if !reg.warnings().is_empty() {
        out.push_str("\nWARNINGS\n");
        for w in reg.warnings() {
            out.push_str(&format!("  {}\n", term::line(&w.to_string())));
        }
    }
    if !reg.failures().is_empty() {
        out.push_str("\nNOT LOADED\n");
        for f in reg.failures() {
            out.push_str(&format!(
                "  ! {}: {}\n",
                term::line(&toolhost_core::discovery::file_name(&f.file)),
                term::line(&f.reason)
            ));
        }
    }
}

/// A time limit as `list` shows it: `10s`, `2.5s`, `300s`.
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{}s", ms / 1000) } else { format!("{}s", ms as f64 / 1000.0) }
}

/// `list --json`: [`list_json`], with the grants allowed "always" when asked (where and when:
/// the `toolhost.grants.toml`) and each tool's effective time limit (manifest `timeoutMs` up to
/// `[limits] max_timeout_ms`, the operator's overrides applied).
pub fn list_document(reg: &Registry, config: &Config) -> serde_json::Value {
    let mut doc = list_json(reg);
    doc["asked"] = config
        .asked
        .iter()
        .map(|g| {
            serde_json::json!({
                "plugin": g.plugin,
                "item": g.item.to_string(),
                "granted": g.granted,
                "by": g.by,
                "who": g.who,
                "answer": if g.deny { "never" } else { "always" },
                "file": config.grants_file,
            })
        })
        .collect::<Vec<_>>()
        .into();
    let limits: serde_json::Map<String, serde_json::Value> = reg
        .tools()
        .map(|t| {
            let view = toolhost_core::view::ToolView::new(t, config);
            (view.spec.name.clone(), view.limits.timeout_ms.into())
        })
        .collect();
    doc["timeoutMs"] = limits.into();
    doc
}

/// The `list --json` document.
pub fn list_json(reg: &Registry) -> serde_json::Value {
    use serde_json::json;
    let plugins: Vec<_> = reg
        .plugins()
        .iter()
        .map(|p| {
            // Each exposed tool: its manifest entry and the name it is exposed under.
            let registered: Vec<_> = reg
                .tools()
                .filter(|e| Arc::ptr_eq(&e.plugin, p))
                .map(|e| {
                    let mut t = serde_json::to_value(e.own_spec()).unwrap_or_default();
                    t["exposedAs"] = e.name().into();
                    t
                })
                .collect();
            json!({
                "name": &*p.name,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "file": p.file,
                "requested": p.manifest.capabilities,
                "granted": {
                    "fs": p.grants.fs.iter().map(|f| json!({"path": f.name, "mode": f.mode, "hostPath": f.host_path})).collect::<Vec<_>>(),
                    "env": p.grants.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                    "net": net_granted_hosts(&p.grants.net),
                    "netPrivate": p.grants.net.private,
                    "secrets": p.grants.net.secrets.iter().map(|s| &s.name).collect::<Vec<_>>(),
                    "exec": p.grants.exec.granted.iter().map(|g| json!({
                        "name": g.grant.name,
                        "program": g.grant.program,
                        "args": g.grant.args.as_ref().map(|a| a.iter().map(|p| p.text.clone()).collect::<Vec<_>>()),
                        "env": g.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                        "cwd": g.grant.cwd,
                        "write": g.grant.write,
                        "fs": g.grant.fs.iter().map(|p| json!({"path": p.path, "mode": p.mode})).collect::<Vec<_>>(),
                        "network": g.grant.network,
                        "detach": g.grant.detach,
                    })).collect::<Vec<_>>(),
                    "kv": p.grants.kv.granted,
                },
                "missing": p.missing.iter().map(|m| json!({"what": m.what, "grant": m.how})).collect::<Vec<_>>(),
                "tools": registered,
                "signer": p.signer,
                "skills": p.skills.iter().map(|s| json!({
                    "name": s.name,
                    "uri": skills::uri(&p.name, &s.name, toolhost_spec::skills::SKILL_MD),
                    "description": s.description,
                    "files": s.files.len(),
                    "bytes": s.size(),
                })).collect::<Vec<_>>(),
                "apps": p.apps.iter().map(|a| json!({
                    "name": a.spec.name,
                    "uri": a.uri,
                    "title": a.spec.title,
                    "description": a.spec.description,
                    "tools": a.spec.tools,
                    "appOnly": a.spec.app_only,
                    "declared": a.spec.csp,
                    "allowed": a.csp,
                    "withheld": a.withheld,
                    "bytes": a.spec.html.len(),
                })).collect::<Vec<_>>(),
                "resources": p.manifest.resources,
                "resourceTemplates": p.manifest.resource_templates,
                "prompts": p.manifest.prompts.iter().zip(&p.prompt_names).map(|(spec, name)| {
                    let mut v = serde_json::to_value(spec).unwrap_or_default();
                    v["servedAs"] = json!(name);
                    v
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "plugins": plugins,
        "failures": reg.failures(),
        "warnings": reg.warnings(),
        "conflicts": reg.conflicts().iter().map(|c| json!({
            "name": c.name,
            "claims": c.claims,
            "kept": c.kept,
            "message": c.message(),
        })).collect::<Vec<_>>(),
        "hidden": reg.hidden(),
        "search": reg.search().is_some(),
        "pending": reg.pending(),
    })
}

/// Granted host patterns that can match something the plugin requested.
fn net_granted_hosts(net: &NetGrant) -> Vec<String> {
    net.granted
        .iter()
        .filter(|g| net.requested.iter().any(|r| toolhost_spec::host_pattern::overlaps(r, g)))
        .cloned()
        .collect()
}

fn net_granted(net: &NetGrant) -> Vec<String> {
    let mut out: Vec<String> = net_granted_hosts(net).into_iter().map(|h| format!("net {h}")).collect();
    if net.private && !out.is_empty() {
        out.push("private addresses".into());
    }
    out.extend(net.secrets.iter().map(|s| format!("secret {}", s.name)));
    out
}

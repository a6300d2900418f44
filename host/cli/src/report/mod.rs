//! What the CLI prints about plugins and tools, shared by the commands that print it: the
//! manifest as `inspect` shows it, the one-line summary of a plugin's requests (`inspect`,
//! `list`, `approve`), and the `list` table and JSON document. Every field a plugin chose goes
//! through [`term`] (so none can draw lines or sequences of its own); nothing here reads
//! arguments or prints.

mod list;
mod manifest;

pub use list::{list_document, list_json, render_list, served_lines, skill_line};
pub use manifest::{render_manifest, time_limits};

use crate::term;
use toolhost_spec::manifest::Manifest;

/// A plugin's requests on one line (`fs workspace:rw, env HOME, net example.com`), or
/// `nothing`.
pub fn requests(m: &Manifest) -> String {
    let c = &m.capabilities;
    let mut parts: Vec<String> = c.fs.iter().map(|f| format!("fs {}:{}", f.path, f.mode)).collect();
    parts.extend(c.env.iter().map(|e| format!("env {e}")));
    parts.extend(c.net.iter().map(|n| format!("net {n}")));
    parts.extend(c.secrets.iter().map(|s| format!("secret {s}")));
    parts.extend(c.exec.iter().map(|e| format!("exec {e}")));
    parts.extend(c.kv.iter().map(|b| format!("kv {b}")));
    if parts.is_empty() { "nothing".into() } else { term::line(&parts.join(", ")).into_owned() }
}

//! What the CLI prints about plugins and tools, shared by the commands that print it: the
//! manifest as `inspect` shows it, the one-line summary of a plugin's requests (`inspect`,
//! `list`, `approve`), and the `list` table and JSON document. Every field a plugin chose goes
//! through [`term`] (so none can draw lines or sequences of its own); nothing here reads
//! arguments or prints.

mod list;
mod manifest;

pub use list::{app_lines, list_document, list_json, render_list, served_lines, skill_line};
pub use manifest::{render_manifest, time_limits};

use crate::term;
use toolhost_spec::manifest::Manifest;

/// A plugin's requests on one line (`fs workspace:rw, env HOME, net example.com`), or
/// `nothing`.
pub fn requests(m: &Manifest) -> String {
    let parts = m.capabilities.described();
    if parts.is_empty() { "nothing".into() } else { term::line(&parts.join(", ")).into_owned() }
}

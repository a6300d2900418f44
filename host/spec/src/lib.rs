//! toolhost-spec: what a plugin and a model write, and the rules for it — with no engine, no
//! async runtime and no I/O beyond reading bytes (and a project's `skills/` and `apps/`
//! folders, for a build). The lowest layer of toolhost (see ARCHITECTURE.md): the host's crates, the fuzz targets and the SDK macro depend on it, and it
//! builds for `wasm32-wasip2` as well.
//!
//! - [`manifest`]: the manifest embedded in a plugin file — types, reading the custom section
//!   (without compiling anything), validation with errors naming the field, embedding;
//! - [`schema`]: the JSON Schema of a tool's arguments;
//! - [`call`]: [`ToolCall`], a tool name and its arguments;
//! - [`text`]: the `[TOOL] name(args) [/TOOL]` parser, the call renderer and marker escaping;
//! - [`host_pattern`]: host patterns (`*.example.com`) and how they match and overlap;
//! - [`digest`]: SHA-256 and hex; [`env_name`]: the rule for environment variable names;
//! - [`skills`]: a plugin's skills (MCP's skills extension) — the `toolhost-skills` section, its
//!   rules, the skills and their front matter; and a project's `skills/` folder collected;
//! - [`apps`]: a plugin's apps (MCP Apps, `io.modelcontextprotocol/ui`) — the `toolhost-apps`
//!   section of HTML pages, its rules, the origins a page may reach and the Content-Security-Policy
//!   built from them; and a project's `apps/` folder collected;
//! - [`prompts`]: a plugin's prompts and their arguments, and their rules;
//! - [`resources`]: a plugin's resources and resource templates, their rules, and the matching
//!   of a URI against a template;
//! - [`sections`]: a named custom section found in a component; its top-level sections: the
//!   digest of its code, the `toolhost dev` marker.

pub mod apps;
pub mod call;
pub mod digest;
pub mod env_name;
pub mod host_pattern;
pub mod manifest;
pub mod schema;
pub mod sections;
pub mod skills;
pub mod text;

pub use call::ToolCall;
pub use host_pattern::HostPattern;
pub use manifest::{Manifest, ManifestError, ToolSpec, prompts, resources};

//! The embedded manifest: found in a `.wasm` file's `toolhost-manifest` custom section (in the
//! component or any nested core module), parsed from JSON and validated strictly — all without
//! compiling or running the plugin.
//!
//! The rooms: `read` finds the section and parses it, `validate` holds a manifest to the rules
//! (one function per concern), `rules` are the rules themselves, public so that the SDK macro
//! applies the same ones, and `embed` writes a manifest into a component built without the SDK.

mod embed;
pub mod prompts;
mod read;
pub mod resources;
mod rules;
#[cfg(test)]
mod tests;
mod validate;

pub use embed::embed;
pub use read::{find_section, parse, parse_checked_before, parse_file_text, read};
pub use rules::{
    BUCKET_RULE, JSON_TYPES, MAX_BUCKET, MAX_NAME, MAX_PROGRAM, Text, TextProblem, icon_problem,
    is_bucket_name, is_exec_request, is_plugin_name, is_tool_name, schema_too_large, text_problem, type_name,
    type_phrase, value_has_type, value_kind,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Name of the custom section that holds the manifest JSON.
pub const SECTION: &str = "toolhost-manifest";
/// Manifest format versions this host understands.
pub const FORMATS: &[u32] = &[1];

// Caps on the manifest's free text, checked at load. Descriptions reach the model (the `[TOOL]`
// prompt, the OpenAI `tools` array, MCP `tools/list`) and the operator's terminal, so a plugin
// must not be able to fill a prompt with megabytes or hide control characters in it. Lengths
// are in characters (Unicode scalar values: what Python's `len` and JavaScript's
// `[...s].length` count). The three SDKs check the same numbers when they build a manifest.

/// The plugin's `description`, in characters.
pub const MAX_PLUGIN_DESCRIPTION: usize = 1024;
/// A tool's `description`, in characters.
pub const MAX_TOOL_DESCRIPTION: usize = 4096;
/// A param's `description`, in characters.
pub const MAX_PARAM_DESCRIPTION: usize = 1024;
/// The plugin's `version` and a tool's `category`, in characters (one line each).
pub const MAX_LABEL: usize = 64;
/// A param's schema object (`type`) or a tool's `outputSchema`, as compact JSON, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// A tool's `title`, in characters (one line).
pub const MAX_TITLE: usize = 128;
/// Icons one tool may have.
pub const MAX_ICONS: usize = 4;
/// One icon's `src` (a `data:` URI), in bytes: about 6 KiB of image. Every `tools/list`
/// carries it, for every tool.
pub const MAX_ICON_BYTES: usize = 8 * 1024;
/// The image types an icon may be. SVG is not among them: an SVG image can carry script.
pub const ICON_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// What went wrong reading a plugin's manifest. The file name is added by the caller.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// The bytes are not a component (not WebAssembly, a core module, unreadable).
    #[error(transparent)]
    NotComponent(#[from] crate::sections::NotComponent),
    #[error("is not valid WebAssembly: {0}")]
    Malformed(String),
    #[error(
        "has no `{SECTION}` custom section: build it with toolhost-sdk, or embed one with `toolhost embed-manifest`"
    )]
    Missing,
    #[error("has {0} `{SECTION}` sections; exactly one is allowed")]
    Duplicate(usize),
    #[error("manifest is not valid JSON: {0}")]
    Json(String),
    #[error("manifest field `{field}`: {message}")]
    Field { field: String, message: String },
}

fn field(field: impl Into<String>, message: impl Into<String>) -> ManifestError {
    ManifestError::Field { field: field.into(), message: message.into() }
}

/// A plugin's self-description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// Manifest format version.
    pub format: u32,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub capabilities: Capabilities,
    pub tools: Vec<ToolSpec>,
    /// Static resources it serves by URI (read by running its `resources` export).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<resources::ResourceSpec>,
    /// Resource templates: families of URIs it reads on demand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<resources::ResourceTemplateSpec>,
    /// Prompts: message templates a person picks (got by running its `prompts` export).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<prompts::PromptSpec>,
}

/// What a plugin asks the operator for. Only a request: the operator's grants decide.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Directories by logical name (`workspace` or a name the operator maps to a path).
    #[serde(default)]
    pub fs: Vec<FsRequest>,
    /// Environment variable names.
    #[serde(default)]
    pub env: Vec<String>,
    /// Network hosts (`example.com`, `*.example.com`).
    #[serde(default)]
    pub net: Vec<String>,
    /// Named secrets.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Programs to run through the host, by name (`git`), or `*` for any the operator grants;
    /// the operator maps each name to an executable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<String>,
    /// Key-value buckets (`wasi:keyvalue`) by name, e.g. `default`; the operator grants each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kv: Vec<String>,
}

impl Capabilities {
    /// Each request as its kind and what it names (`fs workspace:ro`, `net api.example.com`,
    /// `kv default`), in the manifest's order, kind by kind: what `list`, `inspect` and the
    /// console show a plugin asking for.
    pub fn described(&self) -> Vec<String> {
        self.fs
            .iter()
            .map(|f| format!("fs {}:{}", f.path, f.mode))
            .chain(self.env.iter().map(|e| format!("env {e}")))
            .chain(self.net.iter().map(|n| format!("net {n}")))
            .chain(self.secrets.iter().map(|s| format!("secret {s}")))
            .chain(self.exec.iter().map(|e| format!("exec {e}")))
            .chain(self.kv.iter().map(|b| format!("kv {b}")))
            .collect()
    }
}

/// A filesystem request: a logical directory and an access mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsRequest {
    pub path: String,
    pub mode: FsMode,
}

/// Read-only or read-write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FsMode {
    #[serde(rename = "ro")]
    ReadOnly,
    #[serde(rename = "rw")]
    ReadWrite,
}

impl std::fmt::Display for FsMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsMode::ReadOnly => "ro",
            FsMode::ReadWrite => "rw",
        })
    }
}

/// One tool, with the fields users of the original tool registry know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub params: Vec<ParamSpec>,
    pub arg_count: usize,
    /// Per param: the argument must be valid JSON. Empty means "none".
    #[serde(default)]
    pub parse_json: Vec<bool>,
    /// The last param takes all remaining args joined with `,`.
    #[serde(default)]
    pub rest: bool,
    /// Max characters of output handed back.
    #[serde(default)]
    pub output_limit: Option<usize>,
    #[serde(default)]
    pub danger: bool,
    /// The tool only reads (MCP `readOnlyHint`).
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub category: Option<String>,
    /// The JSON Schema of the tool's result (an object schema). A tool that declares one
    /// promises a JSON object matching it: the executor checks every result against it, and
    /// MCP advertises it as `outputSchema` and sends the result as `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The time limit the tool asks for (ms), e.g. longer than the host's default for a tool
    /// that hashes large files. Only a request: the host grants at most its
    /// `[limits] max_timeout_ms`, and the operator's `[plugin.X]`/`[tool.X] timeout_ms` win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Whether the tool may or must run as an MCP task (`forbidden` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// A human-readable name for people (MCP `title`); the tool's name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Calling the tool again with the same arguments has no further effect (MCP
    /// `idempotentHint`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
    /// Icons for people (MCP `icons`): `data:` URIs only, so a client never fetches anything
    /// because of a plugin; see [`icon_problem`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// A tool's icon: an image inlined as a `data:` URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Icon {
    /// `data:image/png;base64,…` (one of [`ICON_TYPES`]), at most [`MAX_ICON_BYTES`].
    pub src: String,
    /// `48x48`, `any`, …
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `light` or `dark`: the theme the icon is drawn for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// The image type its `data:` URI declares (`image/png`).
    pub fn mime_type(&self) -> Option<&str> {
        self.src.strip_prefix("data:")?.split_once(';').map(|(t, _)| t)
    }
}

/// Whether a tool may run as an MCP task (a call answered at once with a task id, its result
/// fetched later), as in MCP's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Always answered directly (the default).
    #[default]
    Forbidden,
    /// Run as a task when the client can take one.
    Optional,
    /// Only ever run as a task: a client that cannot take one is refused.
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// The longest time limit a manifest may ask for (one day); the operator's
/// `[limits] max_timeout_ms` caps what is granted.
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub name: String,
    /// A JSON Schema type name (`"string"`) or a whole schema object.
    #[serde(rename = "type")]
    pub ty: Value,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub optional: bool,
    /// What the tool uses when the argument is left off (an optional param only): shown to the
    /// model as the schema's `default` and in usage lines. A text param's default is a string;
    /// a JSON param's matches its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

impl ToolSpec {
    /// A tool of the host's own (`find_tools`, `run_script`): one text parameter that takes the
    /// rest of the arguments, nothing else declared.
    pub fn host_tool(name: &str, title: &str, description: String, param: &str, about: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description,
            params: vec![ParamSpec {
                name: param.into(),
                ty: Value::String("string".into()),
                description: about.into(),
                optional: false,
                default: None,
            }],
            arg_count: 1,
            parse_json: vec![false],
            rest: true,
            output_limit: None,
            danger: false,
            read_only: false,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: Some(title.into()),
            idempotent: false,
            icons: Vec::new(),
        }
    }

    /// Whether argument `i` must be JSON.
    pub fn is_json(&self, i: usize) -> bool {
        self.parse_json.get(i).copied().unwrap_or(false)
    }

    /// Number of params the caller must give.
    pub fn required_count(&self) -> usize {
        self.params.iter().filter(|p| !p.optional).count()
    }

    /// `name(path, content…, count: integer?)`: `?` on optional params, `…` on a rest param,
    /// and the type of a JSON param (`number`, `integer`, `boolean`; `json` for an array, an
    /// object or a schema).
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut s = p.name.clone();
                if self.is_json(i) {
                    s.push_str(": ");
                    s.push_str(match type_name(&p.ty) {
                        Some(t @ ("number" | "integer" | "boolean")) => t,
                        _ => "json",
                    });
                }
                if p.optional {
                    s.push('?');
                }
                if self.rest && i + 1 == self.params.len() {
                    s.push('…');
                }
                s
            })
            .collect();
        format!("{}({})", self.name, params.join(", "))
    }
}

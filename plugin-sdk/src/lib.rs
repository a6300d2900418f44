//! toolhost-sdk: write toolhost tool plugins as ordinary Rust functions.
//!
//! ```text
//! #[toolhost_sdk::plugin(fs = "workspace:ro")]
//! mod tools {
//!     /// Count the words in a text.
//!     ///
//!     /// - `text`: the text to count; commas are part of it
//!     #[tool(rest, category = "text")]
//!     pub fn count_words(text: String) -> String {
//!         text.split_whitespace().count().to_string()
//!     }
//! }
//! ```
//!
//! Build the crate as a `cdylib` for `wasm32-wasip2` and drop the `.wasm` in the host's plugins
//! folder. The macro writes, from the code itself:
//! - the embedded manifest (custom section `toolhost-manifest`): the doc comment's first
//!   paragraph is the description, lines ``- `param`: text`` describe parameters, the signature
//!   gives `params`, `argCount` and `parseJson` (`String` is plain text; any other type is JSON,
//!   parsed with serde; `Option<T>` is optional and may only trail);
//! - the export of the `toolhost:plugin` world and the dispatch from tool name to function;
//! - the crate's skills, when it has a `skills/` folder next to its `Cargo.toml`
//!   (`skills/NAME/SKILL.md` and the files beside it, custom section `toolhost-skills`), checked
//!   with the host's rules: a broken rule is a compile error naming the file.
//!
//! `#[plugin(...)]` options: `name`, `version`, `description` (default: from Cargo.toml), and
//! capability requests `fs = "workspace:rw"` (or `:ro`), `env = "VAR"`, `net = "host"`,
//! `secret = "NAME"`, `exec = "git"` (a program run through [`process::run`]; `"*"`: any
//! program the operator grants), each
//! repeatable. A request is only a request: the operator grants.
//!
//! `#[resource(uri = "docs://guide", mime_type = "text/markdown")]` on a function without
//! parameters serves one resource; `#[resource_template(uri = "file:///{+path}")]` on a function
//! with a `path: String` parameter (one per variable, named as it) serves every URI the
//! template matches (`{name}`: one path segment, `{+name}`: any text). The doc comment's first
//! paragraph is the description; `name` (the function's by default), `title`, `mime_type` and
//! `size` (static only) are options. The function returns `String` or `&'static str` (text),
//! `Vec<u8>` (bytes), or a `Result` of those; it runs in the same sandbox as a tool call. The
//! host lists them (MCP `resources/list`, `resources/templates/list`, `toolhost list`) from the
//! manifest, without running anything.
//!
//! `#[prompt(name = "summarise-file", title = "…")]` on a function whose parameters are its
//! arguments (`String` required, `Option<String>` optional, described by ``- `arg`: text``
//! lines) offers a prompt (MCP `prompts/get`); it returns `String` (one user message),
//! `Vec<prompt::Message>` (see [`prompt`]), or a `Result` of those. `#[complete(prompt =
//! "NAME", argument = "ARG")]` (or `template = "file:///{+path}"`) on a function taking
//! `value: String` (and `context: Vec<(String, String)>`, the other arguments given) and
//! returning `Vec<String>` completes that argument as a person types (MCP
//! `completion/complete`).
//!
//! `#[tool(...)]` options: `danger`, `read_only`, `rest` (the last `String` param takes all
//! remaining arguments joined with `,`), `output_limit = N` (characters), `category = "…"`,
//! `name = "…"`, `output_schema = r#"{"type": "object", …}"#` (the JSON Schema of the result,
//! which must then be a JSON object matching it: the host checks every result, and MCP clients
//! get it as `structuredContent`), `timeout_ms = N` (the time limit the tool asks for, from 1 ms
//! to a day; the host grants at most its `[limits] max_timeout_ms`, five minutes by default),
//! `task_support = "optional"` (or `"required"`, `"forbidden"`: whether an MCP client that
//! takes tasks gets a task id at once instead of waiting). `#[schema = r#"{…}"#]` on a JSON
//! parameter gives its JSON Schema.
//!
//! A long tool says how far it has come with [`progress`]; the host shows it to whoever waits
//! (MCP `notifications/progress`, the bar of `toolhost call`, MCP `tasks/get`).
//!
//! Free text is held to the host's caps when the macro expands (a compile error at the doc
//! comment or option): a tool's description at most 4096 characters, a parameter's and the
//! plugin's 1024, `version` and `category` 64 on one line, no control characters (tabs are fine);
//! a schema at most 16 KiB of JSON. So are names: the plugin's `[A-Za-z_][A-Za-z0-9_-]*`, a
//! tool's and a parameter's `[A-Za-z_][A-Za-z0-9_]*`, each at most 64 characters; and requests:
//! `env` a variable name, `net` a host pattern without spaces, `exec` a program name (at most
//! 255 characters, never a path) or `"*"`. What expands is what the host loads; the SDKs agree on
//! these rules case by case (`tests/sdk-conformance`).
//!
//! A tool returns `String`, `&'static str`, `serde_json::Value`, or a `Result` of those (or of
//! `()`) with any `Display` error: `Err` reaches the model as the tool's error message.

// wit-bindgen's generated glue is FFI and must use `unsafe`; it is confined to `__bindings`.
#![allow(unsafe_code)]

pub use toolhost_sdk_macros::plugin;

extern crate self as toolhost_sdk;

#[doc(hidden)]
pub mod __bindings {
    // `wit` is a link to the workspace's `wit/`, so the packaged crate carries the WIT it was
    // built from (a path outside the crate would not be in it).
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin-full",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        runtime_path: "::toolhost_sdk::__private::wit_bindgen::rt",
        // `wasi:keyvalue` (see `kv`) is a `wasi:` package: generated here like ours.
        generate_all,
    });
}

/// A resource's body, for a resource function that returns text or bytes as it finds them
/// (`Contents::Text`, `Contents::Blob`).
pub use crate::__bindings::exports::toolhost::plugin::resources::Contents;

/// A prompt's messages (see `#[prompt]`): text said by the user or the assistant, and links to
/// resources for the client to read.
///
/// ```ignore
/// vec![prompt::user(format!("Summarise {path}.")), prompt::link(format!("file:///{path}"), path)]
/// ```
pub mod prompt {
    pub use crate::__bindings::exports::toolhost::plugin::prompts::Message;
    use crate::__bindings::exports::toolhost::plugin::prompts::{Content, ResourceLink, Role};

    /// Text the user says.
    pub fn user(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: Content::Text(text.into()) }
    }

    /// Text the assistant says.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message { role: Role::Assistant, content: Content::Text(text.into()) }
    }

    /// A link (from the user) to the resource `uri`, named `name`, for the client to read.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Message {
        let link = ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None };
        Message { role: Role::User, content: Content::ResourceLink(link) }
    }
}

/// Write to the host's log. Lines are attributed to the calling plugin and tool by the host.
pub mod log {
    use crate::__bindings::toolhost::plugin::host::{self, Level};

    /// Log at `debug` level.
    pub fn debug(message: &str) {
        host::log(Level::Debug, message);
    }
    /// Log at `info` level.
    pub fn info(message: &str) {
        host::log(Level::Info, message);
    }
    /// Log at `warn` level.
    pub fn warn(message: &str) {
        host::log(Level::Warn, message);
    }
    /// Log at `error` level.
    pub fn error(message: &str) {
        host::log(Level::Error, message);
    }
}

/// Report how far the running call has come: `done` units of work out of `total` (when known),
/// with a short `message` for the person waiting. Call it as often as is natural (every file,
/// every MiB): the host forwards at most about ten reports a second (always the last one),
/// keeps `done` from going backwards and cuts messages past 200 characters. A report costs
/// a host call and nothing else; it never fails.
///
/// ```ignore
/// for (i, chunk) in chunks.iter().enumerate() {
///     hasher.update(chunk);
///     toolhost_sdk::progress(i as u64 + 1, Some(chunks.len() as u64), "hashing");
/// }
/// ```
pub fn progress(done: u64, total: Option<u64>, message: &str) {
    crate::__bindings::toolhost::plugin::host::progress(done, total, message);
}

/// Outbound HTTP through the host. Only hosts the operator granted to this plugin (and that its
/// manifest requests with `net = "..."`) are reachable; everything else is an `Err` naming
/// the missing grant.
///
/// ```ignore
/// let page = toolhost_sdk::http::get("https://example.com/")?;
/// let text = page.text();
/// let api = toolhost_sdk::http::Request::get("https://api.github.com/user")
///     .header("accept", "application/json")
///     .secret_header("authorization", "github", "Bearer ") // the host fills in the token
///     .send()?;
/// ```
pub mod http {
    use crate::__bindings::toolhost::plugin::http as wit;

    /// A response. An HTTP error status is still a response: check [`Response::status`].
    #[derive(Debug, Clone)]
    pub struct Response {
        pub status: u16,
        /// The URL that answered, after redirects.
        pub url: String,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
        /// The body was cut at the host's response size cap.
        pub truncated: bool,
    }

    impl Response {
        /// The body as text (invalid UTF-8 replaced).
        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }

        /// The body parsed as JSON.
        pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
            serde_json::from_slice(&self.body)
                .map_err(|e| format!("{}: response is not valid JSON: {e}", self.url))
        }

        /// The first header named `name` (case-insensitive).
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }

        /// `Ok(self)` for a 2xx status, otherwise an error naming the status and URL.
        pub fn error_for_status(self) -> Result<Response, String> {
            if (200..300).contains(&self.status) {
                Ok(self)
            } else {
                let snippet: String = self.text().chars().take(200).collect();
                Err(format!("{} answered HTTP {}: {snippet}", self.url, self.status))
            }
        }
    }

    /// A request being built.
    #[derive(Debug, Clone)]
    pub struct Request {
        inner: wit::Request,
    }

    impl Request {
        /// A request with any method.
        pub fn new(method: &str, url: &str) -> Request {
            Request {
                inner: wit::Request {
                    method: method.to_string(),
                    url: url.to_string(),
                    headers: Vec::new(),
                    secret_headers: Vec::new(),
                    body: None,
                },
            }
        }
        pub fn get(url: &str) -> Request {
            Request::new("GET", url)
        }
        pub fn post(url: &str) -> Request {
            Request::new("POST", url)
        }
        /// Add a header.
        pub fn header(mut self, name: &str, value: &str) -> Request {
            self.inner.headers.push((name.to_string(), value.to_string()));
            self
        }
        /// Add a header whose value is `prefix` + the granted secret `secret`, filled in by the
        /// host. The plugin never sees the value.
        pub fn secret_header(mut self, name: &str, secret: &str, prefix: &str) -> Request {
            self.inner.secret_headers.push(wit::SecretHeader {
                name: name.to_string(),
                secret: secret.to_string(),
                prefix: prefix.to_string(),
            });
            self
        }
        /// Set the body.
        pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
            self.inner.body = Some(body.into());
            self
        }
        /// Set a JSON body and its content type.
        pub fn json<T: serde::Serialize>(self, value: &T) -> Request {
            let body = serde_json::to_vec(value).unwrap_or_default();
            self.header("content-type", "application/json").body(body)
        }
        /// Send it through the host.
        pub fn send(self) -> Result<Response, String> {
            let r = wit::send(&self.inner)?;
            Ok(Response {
                status: r.status,
                url: r.url,
                headers: r.headers,
                body: r.body,
                truncated: r.truncated,
            })
        }
    }

    /// `GET url`.
    pub fn get(url: &str) -> Result<Response, String> {
        Request::get(url).send()
    }
}

/// Running programs through the host. Only programs the manifest requests (`exec = "git"`)
/// and the operator grants can run; the host runs the granted executable with exactly these
/// arguments (no shell: `;` or `$(…)` in an argument are just characters), an empty
/// environment plus what the operator grants, stdin closed, in the workspace, its output
/// capped and everything it started killed at the call's deadline. Anything else is an `Err`
/// naming the missing grant.
///
/// ```ignore
/// let out = toolhost_sdk::process::run("git", &["log", "--oneline", "-5"])?;
/// if !out.success() { return Err(out.stderr_text()); }
/// let log = out.stdout_text();
/// ```
pub mod process {
    use crate::__bindings::toolhost::plugin::process as wit;

    /// What a program did.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Output {
        /// The exit code; `None` if it ended by a signal or the host stopped it.
        pub code: Option<i32>,
        pub stdout: Vec<u8>,
        pub stderr: Vec<u8>,
        /// The output passed the host's cap: the program was stopped there.
        pub truncated: bool,
    }

    impl Output {
        /// Exit code 0.
        pub fn success(&self) -> bool {
            self.code == Some(0)
        }
        /// stdout as text (invalid UTF-8 replaced).
        pub fn stdout_text(&self) -> String {
            String::from_utf8_lossy(&self.stdout).into_owned()
        }
        /// stderr as text (invalid UTF-8 replaced).
        pub fn stderr_text(&self) -> String {
            String::from_utf8_lossy(&self.stderr).into_owned()
        }
    }

    /// Run `program` — a name the plugin requests (`"git"`) or its granted absolute path —
    /// with `args`, and wait for it. A non-zero exit is `Ok`; `Err` is a refusal or a failure
    /// to start.
    pub fn run<S: AsRef<str>>(program: &str, args: &[S]) -> Result<Output, String> {
        let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
        let o = wit::run(program, &args)?;
        Ok(Output { code: o.code, stdout: o.stdout, stderr: o.stderr, truncated: o.truncated })
    }
}

pub mod kv;

/// Re-exported so plugin authors need no direct dependency for JSON parameters.
pub use serde;
pub use serde_json;

#[doc(hidden)]
pub mod __private {
    pub use crate::__bindings::exports::toolhost::plugin::resources::{
        Contents, Guest as ResourcesGuest, ReadRequest,
    };
    pub use crate::__bindings::exports::toolhost::plugin::tools::Guest;
    pub use wit_bindgen;

    /// What a resource function may return: text (`String`, `&'static str`), bytes
    /// (`Vec<u8>`), or a `Result` of either whose error is the read's error.
    pub trait IntoContents {
        fn into_contents(self) -> Result<Contents, String>;
    }

    impl IntoContents for String {
        fn into_contents(self) -> Result<Contents, String> {
            Ok(Contents::Text(self))
        }
    }

    impl IntoContents for &'static str {
        fn into_contents(self) -> Result<Contents, String> {
            Ok(Contents::Text(self.to_string()))
        }
    }

    impl IntoContents for Contents {
        fn into_contents(self) -> Result<Contents, String> {
            Ok(self)
        }
    }

    impl IntoContents for Vec<u8> {
        fn into_contents(self) -> Result<Contents, String> {
            Ok(Contents::Blob(self))
        }
    }

    impl<T: IntoContents, E: Display> IntoContents for Result<T, E> {
        fn into_contents(self) -> Result<Contents, String> {
            self.map_err(|e| e.to_string())?.into_contents()
        }
    }

    pub use crate::__bindings::exports::toolhost::plugin::completion::{
        CompleteRequest, Guest as CompletionGuest, Target as CompletionTarget,
    };
    pub use crate::__bindings::exports::toolhost::plugin::prompts::{
        GetRequest, Guest as PromptsGuest, Prompt,
    };

    /// What a prompt function may return: `String` (one user message), messages, or a
    /// `Result` of those whose error is the prompt's error.
    pub trait IntoPrompt {
        fn into_prompt(self) -> Result<Prompt, String>;
    }

    impl IntoPrompt for String {
        fn into_prompt(self) -> Result<Prompt, String> {
            vec![crate::prompt::user(self)].into_prompt()
        }
    }

    impl IntoPrompt for Vec<crate::prompt::Message> {
        fn into_prompt(self) -> Result<Prompt, String> {
            Ok(Prompt { description: None, messages: self })
        }
    }

    impl<T: IntoPrompt, E: Display> IntoPrompt for Result<T, E> {
        fn into_prompt(self) -> Result<Prompt, String> {
            self.map_err(|e| e.to_string())?.into_prompt()
        }
    }

    /// What a completion function may return: values, or a `Result` of them.
    pub trait IntoValues {
        fn into_values(self) -> Result<Vec<String>, String>;
    }

    impl IntoValues for Vec<String> {
        fn into_values(self) -> Result<Vec<String>, String> {
            Ok(self)
        }
    }

    impl<E: Display> IntoValues for Result<Vec<String>, E> {
        fn into_values(self) -> Result<Vec<String>, String> {
            self.map_err(|e| e.to_string())
        }
    }

    /// The argument `name` of a prompt request, if it was given.
    pub fn prompt_argument(req: &GetRequest, name: &str) -> Option<String> {
        req.arguments.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    }

    /// The value of the template variable `name` in `req` (the host matched the URI).
    pub fn variable(req: &ReadRequest, name: &str) -> Result<String, String> {
        req.variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("the host sent no value for `{name}` of {}", req.uri))
    }

    use serde::de::DeserializeOwned;
    use std::fmt::Display;

    /// The arguments of one call, as the host checked them against the manifest.
    pub struct Args {
        tool: String,
        args: Vec<Option<String>>,
    }

    impl Args {
        pub fn new(tool: &str, args: Vec<String>) -> Self {
            Args { tool: tool.to_string(), args: args.into_iter().map(Some).collect() }
        }

        fn take(&mut self, i: usize) -> Option<String> {
            self.args.get_mut(i).and_then(Option::take)
        }

        pub fn text(&mut self, i: usize, name: &str) -> Result<String, String> {
            self.take(i).ok_or_else(|| self.missing(i, name))
        }

        pub fn opt_text(&mut self, i: usize) -> Result<Option<String>, String> {
            Ok(self.take(i))
        }

        pub fn json<T: DeserializeOwned>(&mut self, i: usize, name: &str) -> Result<T, String> {
            let raw = self.take(i).ok_or_else(|| self.missing(i, name))?;
            self.decode(&raw, name)
        }

        pub fn opt_json<T: DeserializeOwned>(&mut self, i: usize, name: &str) -> Result<Option<T>, String> {
            match self.take(i) {
                None => Ok(None),
                Some(raw) => self.decode(&raw, name).map(Some),
            }
        }

        fn decode<T: DeserializeOwned>(&self, raw: &str, name: &str) -> Result<T, String> {
            serde_json::from_str(raw).map_err(|e| {
                format!("{}: argument `{name}` does not have the expected shape: {e}", self.tool)
            })
        }

        fn missing(&self, i: usize, name: &str) -> String {
            format!("{}: argument {} (`{name}`) is missing", self.tool, i + 1)
        }
    }

    /// What a tool function may return.
    #[diagnostic::on_unimplemented(
        message = "a tool cannot return `{Self}`",
        label = "this return type",
        note = "return `String`, `&'static str`, `serde_json::Value`, or `Result<T, E>` with T one of those (or `()`) and E: Display"
    )]
    pub trait IntoToolResult {
        fn into_tool_result(self) -> Result<String, String>;
    }

    /// The success values a tool may return.
    pub trait ToolOutput {
        fn into_output(self) -> String;
    }

    impl ToolOutput for String {
        fn into_output(self) -> String {
            self
        }
    }
    impl ToolOutput for &'static str {
        fn into_output(self) -> String {
            self.to_string()
        }
    }
    impl ToolOutput for serde_json::Value {
        fn into_output(self) -> String {
            self.to_string()
        }
    }
    impl ToolOutput for () {
        fn into_output(self) -> String {
            "ok".to_string()
        }
    }

    impl IntoToolResult for String {
        fn into_tool_result(self) -> Result<String, String> {
            Ok(self)
        }
    }
    impl IntoToolResult for &'static str {
        fn into_tool_result(self) -> Result<String, String> {
            Ok(self.to_string())
        }
    }
    impl IntoToolResult for serde_json::Value {
        fn into_tool_result(self) -> Result<String, String> {
            Ok(self.to_string())
        }
    }
    impl<T: ToolOutput, E: Display> IntoToolResult for Result<T, E> {
        fn into_tool_result(self) -> Result<String, String> {
            self.map(ToolOutput::into_output).map_err(|e| e.to_string())
        }
    }
}

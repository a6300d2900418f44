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
//! - the export of the `toolhost:plugin` world and the dispatch from tool name to function.
//!
//! `#[plugin(...)]` options: `name`, `version`, `description` (default: from Cargo.toml), and
//! capability requests `fs = "workspace:rw"` (or `:ro`), `env = "VAR"`, `net = "host"`,
//! `secret = "NAME"`, each repeatable. A request is only a request: the operator grants.
//!
//! `#[tool(...)]` options: `danger`, `read_only`, `rest` (the last `String` param takes all
//! remaining arguments joined with `,`), `output_limit = N` (characters), `category = "…"`,
//! `name = "…"`. `#[schema = r#"{…}"#]` on a JSON parameter gives its JSON Schema.
//!
//! A tool returns `String`, `&'static str`, `serde_json::Value`, or a `Result` of those (or of
//! `()`) with any `Display` error: `Err` reaches the model as the tool's error message.

// wit-bindgen's generated glue is FFI and must use `unsafe`; it is confined to `__bindings`.
#![allow(unsafe_code)]

pub use toolhost_sdk_macros::plugin;

extern crate self as toolhost_sdk;

#[doc(hidden)]
pub mod __bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        runtime_path: "::toolhost_sdk::__private::wit_bindgen::rt",
    });
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

/// Re-exported so plugin authors need no direct dependency for JSON parameters.
pub use serde;
pub use serde_json;

#[doc(hidden)]
pub mod __private {
    pub use crate::__bindings::exports::toolhost::plugin::tools::Guest;
    pub use wit_bindgen;

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

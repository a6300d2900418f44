//! A tool call as every front end produces it. Kept free of the rest of the crate so the
//! parser that produces it can be compiled on its own (the fuzz targets do).

use serde::{Deserialize, Serialize};

/// A request to run one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    pub args: Vec<String>,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ToolCall { name: name.into(), args: args.into_iter().map(Into::into).collect() }
    }
}

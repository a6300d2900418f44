//! The front ends through which models reach the tools. Each one parses its own wire format
//! into [`crate::ToolCall`]s and renders [`crate::Outcome`]s back; all of them call the one
//! executor.

pub mod mcp;
pub mod openai;
pub mod text;

//! Subcommands whose logic lives outside `cli.rs` (which keeps only their clap variant and
//! the dispatch line).

pub mod chat;

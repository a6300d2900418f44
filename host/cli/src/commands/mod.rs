//! Subcommands whose logic lives in their own files: clap arguments and the command's logic.
//! `cli.rs` keeps only their enum variants and dispatch lines.

pub mod chat;
pub mod install;
pub mod keygen;
pub mod publish;
pub mod sign;

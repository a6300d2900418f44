//! Subcommands that live in their own files: clap arguments and the command's logic. `cli.rs`
//! holds only their enum variants and dispatch lines.

pub mod install;
pub mod keygen;
pub mod publish;
pub mod sign;

//! Where `--help` sends a reader for more: every subcommand's help ends with the chapter of the
//! book (`docs/src` in the repository, built by `cargo xtask docs`) that explains it.

use clap::CommandFactory;

/// The chapter of the book (a file of `docs/src`) for the top-level help and for each
/// subcommand. A test checks that every subcommand has one and that each file exists.
pub const CHAPTERS: &[(&str, &str)] = &[
    ("toolhost", "quick-start.md"),
    ("list", "quick-start.md"),
    ("inspect", "manifest.md"),
    ("export", "catalog.md"),
    ("run", "text-protocol.md"),
    ("prompt", "text-protocol.md"),
    ("read", "resources.md"),
    ("kv", "key-value.md"),
    ("get-prompt", "prompts.md"),
    ("complete", "prompts.md"),
    ("schema", "openai.md"),
    ("serve", "service.md"),
    ("revoke", "network-and-secrets.md"),
    ("policy", "identities.md"),
    ("console", "console.md"),
    ("dev", "hot-reload.md"),
    ("build", "plugins.md"),
    ("new", "plugins.md"),
    ("embed-manifest", "manifest.md"),
    ("approve", "network-and-secrets.md"),
    ("chat", "chat.md"),
    ("publish", "registry.md"),
    ("install", "registry.md"),
    ("sign", "registry.md"),
    ("keygen", "registry.md"),
    ("call", "call-semantics.md"),
    ("test", "plugins.md"),
];

/// The line that ends a command's help.
pub fn pointer(chapter: &str) -> String {
    format!("The book: docs/src/{chapter} in the toolhost repository (`cargo xtask docs` builds it)")
}

fn with_pointer(cmd: clap::Command, chapter: &str) -> clap::Command {
    let help = match cmd.get_after_help() {
        Some(h) => format!("{h}\n\n{}", pointer(chapter)),
        None => pointer(chapter),
    };
    cmd.after_help(help)
}

/// The command line's definition with each help's pointer into the book.
pub fn command() -> clap::Command {
    let mut cmd = super::Cli::command();
    for (name, chapter) in CHAPTERS {
        cmd = if *name == "toolhost" {
            with_pointer(cmd, chapter)
        } else {
            cmd.mut_subcommand(*name, |sub| with_pointer(sub, chapter))
        };
    }
    cmd
}

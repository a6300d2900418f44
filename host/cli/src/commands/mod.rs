//! One file per subcommand, each with its clap arguments and its logic (cargo's layout);
//! [`run()`] dispatches a parsed command line to them.

pub mod approve;
pub mod book;
pub mod build;
pub mod call;
pub mod chat;
pub mod complete;
pub mod dev;
pub mod embed_manifest;
pub mod export;
pub mod get_prompt;
pub mod inspect;
pub mod install;
pub mod keygen;
pub mod kv;
pub mod list;
pub mod new;
pub mod policy;
pub mod prompt;
pub mod publish;
pub mod read;
pub mod revoke;
pub mod run;
pub mod schema;
pub mod serve;
pub mod sign;
pub mod test;

use crate::args::GlobalArgs;
use crate::settings::Settings;
use anyhow::Result;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Plugins are WebAssembly components (*.wasm) in the plugins folder; each carries its own manifest.
Nothing is granted to any plugin unless toolhost.toml or a flag grants it: no files, no environment,
no network, no secrets. A new version of a plugin that requests more than was approved waits for
`toolhost approve PLUGIN`.

Examples:
  toolhost --plugins target/plugins list
  toolhost --plugins target/plugins inspect target/plugins/files.wasm
  toolhost --plugins target/plugins --workspace ./scratch --allow-write files call write notes.txt 'hello, world'
  toolhost --plugins target/plugins call split_task Launch '[{\"title\": \"design\", \"days\": 2}]'
  toolhost --plugins target/plugins --allow-net web=example.com call fetch https://example.com/
  toolhost --plugins target/plugins --allow-run sys=git call -y run git status
  toolhost --plugins target/plugins serve --mcp        # an MCP server over stdio

Logging: -v / -vv, or TOOLHOST_LOG=debug (tracing filter syntax). Logs go to stderr. The MCP
library's own debug lines (which show arguments and results verbatim) stay off unless
TOOLHOST_LOG names `rmcp` explicitly.";

/// A dynamic plugin host for AI-agent tools: drop a .wasm in a folder, get a sandboxed tool.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands; each one's arguments and logic are in `commands/NAME.rs`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the exposed tools, tools hidden by the config and names several plugins claim, the
    /// plugins with their requested/granted/missing capabilities, and files that failed to load
    List(list::Args),
    /// Show the manifest embedded in a .wasm file and its skills (reads it; never compiles or
    /// runs it)
    Inspect(inspect::Args),
    /// Write this deployment as an MCP registry `server.json` (its plugins' tools under `_meta`)
    Export(export::Args),
    /// Run every `[TOOL] name(args) [/TOOL]` call in a model's reply, in order, and print the
    /// feedback block for the conversation (exit code 1 if any call failed or did not parse)
    Run(run::Args),
    /// Print the prompt section that teaches a model the [TOOL] protocol and lists the exposed
    /// tools (in search mode `find_tools` and the pinned ones); --skills adds the instructions
    /// of their plugins' skills
    Prompt(prompt::Args),
    /// Print a resource the host serves (a plugin's skill file, skill://PLUGIN/SKILL/FILE, or a
    /// resource a plugin declares, read by running it), or write it to a file with --out
    Read(read::Args),
    /// The plugins' key-value stores: list buckets and sizes, get, delete, export to JSON lines,
    /// import, purge a removed plugin's data
    #[command(after_help = kv::AFTER_HELP)]
    Kv(kv::Args),
    /// Print one of the plugins' prompts with its arguments (NAME=VALUE), as MCP's
    /// prompts/get gives it: its messages, each under its role
    GetPrompt(get_prompt::Args),
    /// Print what a plugin offers for a prompt's argument or a resource template's variable
    /// (MCP completion/complete), one value a line
    Complete(complete::Args),
    /// Print the tool definitions for function calling (in search mode `find_tools` and the
    /// pinned tools)
    Schema(schema::Args),
    /// Load the plugins and keep the registry live while files in the folder change, printing
    /// each change: `+ tool`, `~ tool: what changed`, `- tool`, `! file: reason`, `? plugin
    /// waiting for approval`, `! tool name … is claimed by …`. With --mcp, serve the tools to MCP
    /// clients (stdio, or streamable HTTP with --http) and send them `tools/list_changed` on
    /// every change; over HTTP also the web console at /
    #[command(after_help = serve::AFTER_HELP)]
    Serve(serve::Args),
    /// Serve over HTTP on a free loopback port and open the web console in a browser (tools
    /// with a form to try them, plugins and approvals, the live activity feed, the audit
    /// trail, metrics): `serve --http 127.0.0.1:0 --open`
    Console(serve::ConsoleArgs),
    /// Rebuild a plugin project (Rust, Python or JavaScript) on every save and drop the .wasm
    /// into the plugins folder (created if missing); a running `toolhost serve` picks it up
    #[command(after_help = dev::AFTER_HELP)]
    Dev(dev::Args),
    /// Build a plugin project into a .wasm with its manifest derived from the code and
    /// embedded: a Rust crate (cargo, wasm32-wasip2), a Python project (componentize-py) or a
    /// JavaScript project (jco componentize). The result is checked with the host's own
    /// manifest reader before it is written
    #[command(after_help = build::AFTER_HELP)]
    Build(build::Args),
    /// Create a plugin project with one example tool and a test; it builds with
    /// `toolhost build` and loads unchanged
    New(new::Args),
    /// Embed a manifest into a component built without toolhost-sdk (componentize-py,
    /// componentize-js, TinyGo, …); the manifest has the fields `inspect --json` shows.
    /// `--skills DIR` embeds a skills folder too (docs/src/skills.md)
    EmbedManifest(embed_manifest::Args),
    /// Approve what a plugin now requests (a new version asking for more than the version
    /// approved before is held until then); approval grants nothing by itself, the grants in
    /// toolhost.toml still decide
    Approve(approve::Args),
    /// Remove a grant allowed "always" (or a refusal answered "never") when toolhost asked, from
    /// toolhost.grants.toml beside the config: `toolhost revoke web net api.github.com`
    Revoke(revoke::Args),
    /// The operator's rules ([policy] file): `toolhost policy check --sub alice --group ops
    /// --tool delete --dangerous` decides one request offline and names the rule that decided
    Policy(policy::Args),
    /// Talk to a model (OpenAI, or a local OpenAI-compatible server: Ollama, llama.cpp, vLLM,
    /// LM Studio) that uses the tools: the agent loop, streamed, with the registry kept live
    Chat(chat::ChatArgs),
    /// Push a plugin to an OCI registry (the component as the layer, its manifest as the config)
    Publish(publish::Args),
    /// Pull a plugin from an OCI registry into the plugins folder and record it in toolhost.lock
    Install(install::Args),
    /// Sign a plugin with an Ed25519 key (a signature section inside the file)
    Sign(sign::Args),
    /// Write a key pair for signing plugins
    Keygen(keygen::Args),
    /// Call one tool and print its outcome (exit code 1 if the call fails, 130 if Ctrl-C
    /// cancelled it); its progress is shown while it runs
    Call(call::Args),
    /// Run a plugin project's own tests, then call each of its tools once through the host
    #[command(after_help = test::AFTER_HELP)]
    Test(test::Args),
}

/// Run a parsed command line.
/// The async runtime a command runs on: one worker per core, the core count read once for the
/// process (`parallel::cores`, which the plugins folder's reading uses too: each reading opens
/// the cgroup's quota files). `TOKIO_WORKER_THREADS`, when set, still decides.
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(toolhost_core::parallel::cores());
    }
    builder.enable_all().build()
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    let g = &cli.global;
    match cli.command {
        Command::List(a) => list::run(g, a),
        Command::Inspect(a) => inspect::run(g, a),
        Command::Export(a) => export::run(g, a),
        Command::Run(a) => run::run(g, a),
        Command::Prompt(a) => prompt::run(g, a),
        Command::Read(a) => read::run(g, a),
        Command::Kv(a) => kv::run(g, a),
        Command::GetPrompt(a) => get_prompt::run(g, a),
        Command::Complete(a) => complete::run(g, a),
        Command::Schema(a) => schema::run(g, a),
        Command::Serve(a) => serve::run(g, a),
        Command::Console(a) => serve::run_console(g, a),
        Command::Dev(a) => dev::run(g, a),
        Command::Build(a) => build::run(g, a),
        Command::New(a) => new::run(a),
        Command::EmbedManifest(a) => embed_manifest::run(a),
        Command::Approve(a) => approve::run(g, a),
        Command::Revoke(a) => revoke::run(g, a),
        Command::Policy(a) => policy::run(g, a),
        Command::Chat(a) => chat::run(g, a),
        Command::Publish(a) => publish::run(&Settings::resolve(g)?, &a),
        Command::Install(a) => install::run(&Settings::resolve(g)?, &a),
        Command::Sign(a) => sign::run(&a),
        Command::Keygen(a) => keygen::run(&a),
        Command::Call(a) => call::run(g, a),
        Command::Test(a) => test::run(g, a),
    }
}

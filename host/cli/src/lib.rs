//! The command line: clap definitions and one function per subcommand. Exit codes: 0 success,
//! 1 a tool call failed, 2 bad usage or configuration.

use crate::Toolhost;
use crate::config::{Config, DangerPolicy};
use crate::executor::{AlwaysConfirm, Confirm, TerminalConfirm, ToolCall};
use crate::manifest::{FsMode, Manifest};
use crate::protocol::{openai, text};
use crate::registry::{self, Registry};
use crate::reload::{Change, Reloader, WatchHandle};
use crate::term;
use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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
  toolhost --plugins target/plugins --allow-run system=git call -y run git status
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

/// Options that apply to every subcommand.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Config file [default: ./toolhost.toml if it exists, else built-in defaults that grant nothing]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Plugins folder (overrides `plugins` in the config)
    #[arg(long, global = true, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// The workspace directory that `fs` grants named "workspace" refer to (overrides the config)
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Grant PLUGIN read-only access to the workspace (`*` = every plugin that requests it)
    #[arg(long = "allow-read", global = true, value_name = "PLUGIN")]
    pub allow_read: Vec<String>,
    /// Grant PLUGIN read-write access to the workspace (`*` = every plugin that requests it)
    #[arg(long = "allow-write", global = true, value_name = "PLUGIN")]
    pub allow_write: Vec<String>,
    /// Grant PLUGIN the host environment variable VAR, if it requests it
    #[arg(long = "allow-env", global = true, value_name = "PLUGIN=VAR")]
    pub allow_env: Vec<String>,
    /// Grant PLUGIN HTTP access to HOST (`example.com`, `*.example.com`, `*`), if it requests it
    #[arg(long = "allow-net", global = true, value_name = "PLUGIN=HOST")]
    pub allow_net: Vec<String>,
    /// Let PLUGIN run PROGRAM (a name, resolved now by your PATH, or an absolute path) with any
    /// arguments, an empty environment, in the workspace (read-only to it, no network), if it
    /// requests it; its tools become dangerous (confirmed per call) unless `[tool.NAME] danger =
    /// false`
    #[arg(long = "allow-run", global = true, value_name = "PLUGIN=PROGRAM")]
    pub allow_run: Vec<String>,
    /// Do not read or write the compiled-code cache (default: ~/.cache/toolhost)
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Danger policy for tools marked dangerous (overrides the config)
    #[arg(long, global = true, value_enum, value_name = "POLICY")]
    pub danger: Option<DangerPolicy>,
    /// More log output on stderr (-v info, -vv debug)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the registered tools, the plugins with their requested/granted/missing
    /// capabilities, and files that failed to load
    List {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Show the manifest embedded in a .wasm file (reads it; never compiles or runs it)
    Inspect {
        /// The plugin file
        file: PathBuf,
        /// Print the manifest as JSON
        #[arg(long)]
        json: bool,
    },
    /// Run every `[TOOL] name(args) [/TOOL]` call in a model's reply, in order, and print the
    /// feedback block for the conversation (exit code 1 if any call failed or did not parse)
    Run {
        /// File holding the reply; `-` or nothing reads standard input
        file: Option<PathBuf>,
        /// Input format: a text reply, or an OpenAI assistant message with `tool_calls`
        #[arg(long, value_enum, default_value_t = ReplyFormat::Text)]
        format: ReplyFormat,
        /// Print the structured result as JSON instead of the feedback block
        #[arg(long)]
        json: bool,
        /// Confirm dangerous tools without asking
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Print the prompt section that teaches a model the [TOOL] protocol and lists every tool
    Prompt,
    /// Print the tool definitions for function calling
    Schema {
        /// Which definitions
        #[arg(long, value_enum, default_value_t = SchemaFormat::Openai)]
        format: SchemaFormat,
    },
    /// Load the plugins and keep the registry live while files in the folder change, printing
    /// each change: `+ tool`, `~ tool (v0.1.0 → v0.2.0)`, `- tool`, `! file: reason`,
    /// `? plugin waiting for approval`. With --mcp, serve the tools to MCP clients (stdio, or
    /// streamable HTTP with --http) and send them `tools/list_changed` on every change
    #[command(after_help = "\
MCP client configuration (e.g. Claude Desktop, VS Code, Cursor):
  {\"mcpServers\": {\"toolhost\": {\"command\": \"toolhost\",
      \"args\": [\"--config\", \"/path/to/toolhost.toml\", \"serve\", \"--mcp\"]}}}
Over HTTP: toolhost serve --mcp --http 127.0.0.1:8765, then point the client at http://127.0.0.1:8765/mcp
With [mcp] tokens in toolhost.toml, HTTP clients must send Authorization: Bearer <token>

As a service (--mcp): GET /healthz (alive), /readyz (loaded, not shutting down) and /metrics
(Prometheus text format, behind the token when tokens are configured) over HTTP. On SIGTERM or
SIGINT no new call is accepted (HTTP: 503 with Retry-After), calls in flight finish within
[serve] shutdown_grace_ms (default 15000), the rest are cancelled with an error to their
clients, and the process exits 0; a second signal exits at once. Every call is appended to the
audit trail: [audit] file (default $XDG_STATE_HOME/toolhost/audit.jsonl). See deploy/ for a
systemd unit, a container recipe and a Kubernetes example.")]
    Serve {
        /// Quiet time after the last file event before the folder is rescanned
        #[arg(long, value_name = "MS", default_value_t = 150)]
        debounce_ms: u64,
        /// Speak MCP: over stdin/stdout (only protocol messages on stdout; changes and logs go to stderr)
        #[arg(long)]
        mcp: bool,
        /// With --mcp: streamable HTTP at http://ADDR/mcp instead of stdio (use a loopback address
        /// such as 127.0.0.1:8765; port 0 picks a free port)
        #[arg(long, value_name = "ADDR", requires = "mcp")]
        http: Option<std::net::SocketAddr>,
        /// With --http: also accept this Host header value (localhost, 127.0.0.1 and ::1 always are)
        #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
        allow_host: Vec<String>,
        /// With --http: accept requests from this browser origin (e.g. http://localhost:3000);
        /// by default any request with an Origin header is refused
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// With --http: serve on a non-loopback address even though no `[mcp] tokens` are
        /// configured, so anyone who can reach the address can call the tools
        #[arg(long = "allow-unauthenticated-remote", requires = "http")]
        allow_unauthenticated_remote: bool,
    },
    /// Rebuild a plugin project (Rust, Python or JavaScript) on every save and drop the .wasm
    /// into the plugins folder (created if missing); a running `toolhost serve` picks it up
    Dev {
        /// The plugin project: a Rust crate (Cargo.toml), a Python project (pyproject.toml with
        /// [tool.toolhost], or app.py) or a JS project (package.json with "toolhost")
        #[arg(default_value = ".")]
        path: PathBuf,
        /// Quiet time after the last source change before rebuilding
        #[arg(long, value_name = "MS", default_value_t = 150)]
        debounce_ms: u64,
    },
    /// Build a plugin project into a .wasm with its manifest derived from the code and
    /// embedded: a Rust crate (cargo, wasm32-wasip2), a Python project (componentize-py) or a
    /// JavaScript project (jco componentize). The result is checked with the host's own
    /// manifest reader before it is written
    #[command(after_help = "\
Toolchains are installed at pinned versions on first use into $TOOLHOST_TOOLCHAINS
(default: $XDG_CACHE_HOME/toolhost/toolchains): componentize-py for Python (needs python3),
jco + componentize-qjs for JavaScript (needs node and npm). Nothing is installed globally.

Examples:
  toolhost new notes --lang python && toolhost build notes
  toolhost build . --install ./plugins")]
    Build {
        /// The plugin project's folder
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Where to write the component [default: DIR/NAME.wasm]
        #[arg(long, short, value_name = "FILE", conflicts_with = "install")]
        output: Option<PathBuf>,
        /// Install into this plugins folder as NAME.wasm (write-then-rename, safe while a host
        /// watches the folder)
        #[arg(long, value_name = "PLUGINS_DIR")]
        install: Option<PathBuf>,
    },
    /// Create a plugin project with one example tool and a test; it builds with
    /// `toolhost build` and loads unchanged
    New {
        /// The plugin's name (lower-case letters, digits, `_`, `-`); also the folder's name
        name: String,
        /// The language
        #[arg(long, value_enum, default_value_t = crate::build::Lang::Rust)]
        lang: crate::build::Lang,
        /// Create the project inside this folder [default: the current folder]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Rust only: the toolhost-sdk folder the project depends on [default: the plugin-sdk/
        /// of the checkout toolhost was built from]
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
    /// Embed a manifest into a component built without toolhost-sdk (componentize-py,
    /// componentize-js, TinyGo, …); the manifest has the fields `inspect --json` shows
    EmbedManifest {
        /// The component (.wasm)
        input: PathBuf,
        /// The manifest: a .toml file, or JSON
        #[arg(long, short)]
        manifest: PathBuf,
        /// Where to write the result [default: replace INPUT]
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Approve what a plugin now requests (a new version asking for more than the version
    /// approved before is held until then); approval grants nothing by itself, the grants in
    /// toolhost.toml still decide
    Approve {
        /// The plugin name (as `list` shows it)
        plugin: String,
        /// Write nothing: print the `[approvals.plugin.NAME]` entry that pins the plugin's current
        /// request in toolhost.toml (for a read-only plugins folder, or replicas sharing one)
        #[arg(long)]
        print: bool,
        /// With --print: also pin this exact file by its SHA-256 (any rebuild then needs a new entry)
        #[arg(long, requires = "print")]
        sha256: bool,
    },
    /// Talk to a model (OpenAI, or a local OpenAI-compatible server: Ollama, llama.cpp, vLLM,
    /// LM Studio) that uses the tools: the agent loop, streamed, with the registry kept live
    Chat(crate::commands::chat::ChatArgs),
    /// Push a plugin to an OCI registry (the component as the layer, its manifest as the config)
    Publish(crate::commands::publish::Args),
    /// Pull a plugin from an OCI registry into the plugins folder and record it in toolhost.lock
    Install(crate::commands::install::Args),
    /// Sign a plugin with an Ed25519 key (a signature section inside the file)
    Sign(crate::commands::sign::Args),
    /// Write a key pair for signing plugins
    Keygen(crate::commands::keygen::Args),
    /// Call one tool and print its outcome (exit code 1 if the call fails)
    Call {
        /// Tool name
        tool: String,
        /// Arguments, as the model would give them (JSON params as JSON text)
        args: Vec<String>,
        /// Confirm a dangerous tool without asking
        #[arg(long, short = 'y')]
        yes: bool,
        /// Print the outcome as JSON: {"success": true, "data": …} or {"success": false, "error": …}
        #[arg(long)]
        json: bool,
    },
}

/// Input format of `toolhost run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplyFormat {
    /// A model reply with `[TOOL] … [/TOOL]` calls
    Text,
    /// An OpenAI assistant message (or chat completion) with `tool_calls`; prints `role: "tool"` messages
    Openai,
}

/// Output format of `toolhost schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaFormat {
    /// The `tools` array of the OpenAI chat completions API
    Openai,
}

/// Entry point for the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let chain = e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
            eprintln!("toolhost: {}", term::text(&chain));
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        // Compilation progress (rare: compiled code is cached) is shown by default.
        0 => "warn,toolhost::runtime=info",
        1 => "info",
        _ => "debug",
    };
    let spec = std::env::var("TOOLHOST_LOG").ok().filter(|s| !s.trim().is_empty());
    let mut filter = spec
        .as_deref()
        .and_then(|s| tracing_subscriber::EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    // rmcp's debug and trace lines carry every request and response verbatim: tool arguments
    // and results, secrets among them (the audit trail redacts those; a log cannot). They stay
    // off unless the operator names rmcp explicitly in TOOLHOST_LOG.
    let rmcp_named = spec.as_deref().is_some_and(|s| s.contains("rmcp"));
    if !rmcp_named && let Ok(d) = "rmcp=info".parse() {
        filter = filter.add_directive(d);
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Plugins' log lines, captured output and file names are in there: rendered by `term`.
        .with_writer(term::LogStderr)
        // Colour only for a person at a terminal, never into pipes and log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
    if rmcp_named {
        tracing::warn!(
            "TOOLHOST_LOG names rmcp: its debug lines show tool arguments and results verbatim, secrets included"
        );
    }
}

/// Resolve the configuration from the file and the command-line overrides.
pub fn resolve_config(g: &GlobalArgs) -> Result<Config> {
    let mut cfg = Config::load(g.config.as_deref())?;
    if let Some(p) = &g.plugins {
        cfg.plugins_dir = std::path::absolute(p).with_context(|| format!("bad --plugins {}", p.display()))?;
    }
    if let Some(w) = &g.workspace {
        if !w.is_dir() {
            bail!("--workspace {}: not a directory", w.display());
        }
        cfg.set_workspace(w);
    }
    for p in &g.allow_read {
        cfg.grant_workspace(p, FsMode::ReadOnly);
    }
    for p in &g.allow_write {
        cfg.grant_workspace(p, FsMode::ReadWrite);
    }
    for pv in &g.allow_env {
        let Some((plugin, var)) = pv.split_once('=') else {
            bail!("--allow-env takes PLUGIN=VAR, got {pv:?}");
        };
        cfg.grant_env(plugin, var)?;
    }
    for ph in &g.allow_net {
        let Some((plugin, host)) = ph.split_once('=') else {
            bail!("--allow-net takes PLUGIN=HOST, got {ph:?}");
        };
        cfg.grant_net(plugin, host)?;
    }
    for pp in &g.allow_run {
        let Some((plugin, program)) = pp.split_once('=') else {
            bail!("--allow-run takes PLUGIN=PROGRAM, got {pp:?}");
        };
        cfg.grant_run(plugin, program)?;
    }
    if let Some(d) = g.danger {
        cfg.danger = d;
    }
    if g.no_cache {
        cfg.cache_dir = None;
    }
    // Programs are run confined or not at all (unless the operator opts out): say so now.
    crate::process::confine::check_support(crate::process::confine::landlock_abi(), &cfg)
        .map_err(anyhow::Error::msg)?;
    Ok(cfg)
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Inspect { file, json } => {
            let cfg = resolve_config(&cli.global)?;
            let manifest = registry::inspect_file(&file, cfg.max_plugin_bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let signature = crate::signing::describe(&cfg.trust, &manifest.name, &bytes);
            // What `[trust] allow_unsigned` and `[approvals.plugin.NAME] sha256` pin.
            let digest = format!("sha256:{}", crate::discovery::hex(&crate::registry::content_hash(&bytes)));
            if json {
                println!("{}", term::to_json(&manifest)?);
                // stdout stays the manifest alone (embed-manifest reads it)
                eprintln!("{}\nfile: {digest}", term::text(&signature));
            } else {
                print!("{}", render_manifest(&manifest));
                println!("{}", term::text(&signature));
                println!("file: {digest}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List { json } => {
            let host = open(&cli.global, Arc::new(crate::executor::NoConfirm))?;
            let reg = host.registry.load_full();
            if json {
                println!("{}", term::to_json(&list_json(&reg))?);
            } else {
                print!("{}", render_list(&reg, &host.config));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { file, format, json, yes } => {
            let reply = read_input(file.as_deref())?;
            let confirm: Arc<dyn Confirm> =
                if yes { Arc::new(AlwaysConfirm) } else { Arc::new(TerminalConfirm) };
            let host = open_reporting(&cli.global, confirm)?;
            crate::service::Service::attach_audit(
                &host,
                if format == ReplyFormat::Text { "text" } else { "openai" },
            )?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            match format {
                ReplyFormat::Text => {
                    let results = rt.block_on(text::execute(&host.executor, &reply));
                    if json {
                        println!("{}", term::to_json(&text::results_json(&results))?);
                    } else {
                        // Shown rendered on a terminal; as is into a pipe, which feeds it to a
                        // model (the conversation needs the outcomes exactly).
                        print!("{}", term::stdout_text(&text::feedback(&reply, &results)));
                    }
                    let all_ok = results.iter().all(|(seg, o)| {
                        !matches!(seg, text::Segment::Error { .. }) && o.as_ref().is_none_or(|o| o.success)
                    });
                    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
                }
                ReplyFormat::Openai => {
                    let message =
                        openai::parse_message(&reply).map_err(|e| anyhow::anyhow!("--format openai: {e}"))?;
                    let results = rt.block_on(openai::execute(&host.executor, &message));
                    let messages: Vec<_> = results.iter().map(|(m, _)| m).collect();
                    println!("{}", term::to_json(&messages)?);
                    let all_ok = results.iter().all(|(_, o)| o.success);
                    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
                }
            }
        }
        Command::EmbedManifest { input, manifest, output } => {
            let text = std::fs::read_to_string(&manifest)
                .with_context(|| format!("cannot read {}", manifest.display()))?;
            let is_toml = manifest.extension().is_some_and(|e| e == "toml");
            let parsed = crate::manifest::parse_file_text(&text, is_toml)
                .map_err(|e| anyhow::anyhow!("{}: {e}", manifest.display()))?;
            let bytes = std::fs::read(&input).with_context(|| format!("cannot read {}", input.display()))?;
            let out_bytes = crate::manifest::embed(&bytes, &parsed)
                .map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))?;
            let out = output.unwrap_or_else(|| input.clone());
            let tmp = out.with_file_name(format!(
                ".{}.tmp",
                out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ));
            std::fs::write(&tmp, out_bytes)
                .and_then(|_| std::fs::rename(&tmp, &out))
                .with_context(|| format!("cannot write {}", out.display()))?;
            eprintln!(
                "embedded manifest of `{}` ({} tools) into {}",
                term::line(&parsed.name),
                parsed.tools.len(),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Publish(a) => crate::commands::publish::run(&resolve_config(&cli.global)?, &a),
        Command::Install(a) => crate::commands::install::run(&resolve_config(&cli.global)?, &a),
        Command::Sign(a) => crate::commands::sign::run(&a),
        Command::Keygen(a) => crate::commands::keygen::run(&a),
        Command::Approve { plugin, print, sha256 } => {
            let cfg = resolve_config(&cli.global)?;
            approve(&cfg, &plugin, print.then_some(sha256))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Prompt => {
            let host = open_reporting(&cli.global, Arc::new(crate::executor::NoConfirm))?;
            print!("{}", term::stdout_text(&text::prompt(&host.registry.load(), &host.config)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { format: SchemaFormat::Openai } => {
            let host = open_reporting(&cli.global, Arc::new(crate::executor::NoConfirm))?;
            let tools = openai::tools(&host.registry.load(), &host.config)?;
            println!("{}", term::to_json(&tools)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { debounce_ms, mcp, http, allow_host, allow_origin, allow_unauthenticated_remote } => {
            let cfg = resolve_config(&cli.global)?;
            if !cfg.plugins_dir.is_dir() {
                bail!("plugins folder {} does not exist (pass --plugins DIR)", cfg.plugins_dir.display());
            }
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let debounce = Duration::from_millis(debounce_ms);
            if mcp {
                let tokens =
                    if http.is_some() { crate::protocol::mcp::load_tokens(&cfg)? } else { Vec::new() };
                if let Some(addr) = http {
                    crate::protocol::mcp::check_exposure(addr, &tokens, allow_unauthenticated_remote)?;
                }
                let options = crate::protocol::mcp::HttpOptions {
                    allowed_hosts: allow_host,
                    allowed_origins: allow_origin,
                    tokens,
                    service: None,
                    limits: cfg.serve.http,
                };
                let r = rt.block_on(serve_mcp(cfg, debounce, http, options));
                // The stdio transport's blocked read of stdin must not hold the exit.
                rt.shutdown_timeout(Duration::from_millis(500));
                r
            } else {
                rt.block_on(serve(cfg, debounce))
            }
        }
        Command::Build { dir, output, install } => {
            let project = crate::build::Project::locate(&dir)?;
            eprintln!("toolhost build: {} project {} …", project.lang(), project.dir().display());
            let built = project.build(&crate::build::Toolchains::from_env())?;
            let to = match (output, install) {
                (Some(out), _) => {
                    built.write(&out)?;
                    out
                }
                (None, Some(plugins)) => built.install(&plugins)?,
                (None, None) => {
                    let out = project.dir().join(format!("{}.wasm", built.manifest.name));
                    built.write(&out)?;
                    out
                }
            };
            let tools: Vec<String> = built.manifest.tools.iter().map(|t| t.signature()).collect();
            eprintln!(
                "toolhost build: {} {} ({} tool{}: {}) in {:.1}s → {} ({} KiB)",
                built.manifest.name,
                term::line(&built.manifest.version),
                tools.len(),
                if tools.len() == 1 { "" } else { "s" },
                tools.join(", "),
                built.seconds,
                to.display(),
                built.bytes.len() / 1024
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::New { name, lang, dir, sdk } => {
            let parent = dir.unwrap_or_else(|| PathBuf::from("."));
            let created = crate::scaffold::create(&parent, &name, lang, sdk.as_deref())?;
            println!("created {} ({lang})", created.display());
            println!("next: toolhost build {0} && toolhost --plugins {0} list", created.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Dev { path, debounce_ms } => {
            let cfg = resolve_config(&cli.global)?;
            std::fs::create_dir_all(&cfg.plugins_dir)
                .with_context(|| format!("cannot create plugins folder {}", cfg.plugins_dir.display()))?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(dev(cfg, &path, Duration::from_millis(debounce_ms)))
        }
        Command::Chat(args) => crate::commands::chat::run(&cli.global, args),
        Command::Call { tool, args, yes, json } => {
            let confirm: Arc<dyn Confirm> =
                if yes { Arc::new(AlwaysConfirm) } else { Arc::new(TerminalConfirm) };
            let host = open_reporting(&cli.global, confirm)?;
            crate::service::Service::attach_audit(&host, "cli")?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let outcome = rt.block_on(host.call(&ToolCall { name: tool, args }));
            if json {
                println!("{}", term::to_json(&outcome)?);
            } else if outcome.success {
                // Rendered on a terminal; byte for byte into a pipe or a file.
                let data = outcome.data.as_deref().unwrap_or("");
                println!("{}", term::stdout_text(data));
            } else {
                let kind = outcome.kind.map(|k| k.to_string()).unwrap_or_default();
                eprintln!("error[{kind}]: {}", term::text(outcome.error.as_deref().unwrap_or("")));
            }
            Ok(if outcome.success { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

/// Print registry changes as they happen.
fn print_change(change: &Change) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for line in change.lines() {
        let _ = writeln!(out, "{}", term::line(&line));
    }
    let _ = out.flush();
}

/// Print registry changes on stderr (stdout belongs to a protocol).
fn eprint_change(change: &Change) {
    for line in change.lines() {
        eprintln!("toolhost: {}", term::line(&line));
    }
}

async fn serve_mcp(
    cfg: Config,
    debounce: Duration,
    http: Option<std::net::SocketAddr>,
    options: crate::protocol::mcp::HttpOptions,
) -> Result<ExitCode> {
    use crate::protocol::mcp::{McpServer, serve_http, serve_stdio_until};
    // From the start, SIGTERM/SIGINT end the process cleanly: during the first load by stopping
    // it, later by draining the calls in flight (see `service::shutdown`).
    let mut signals =
        crate::service::shutdown::Signals::install().context("cannot install signal handlers")?;
    let (host, reloader) = unloaded_host(cfg)?;
    let service =
        Arc::new(crate::service::Service::for_command(&host.config, host.registry.clone(), "mcp", true)?);
    host.executor.attach_service(service.clone());
    if let Some(path) = service.audit_path() {
        eprintln!("toolhost: audit trail in {}", path.display());
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn({
        let service = service.clone();
        async move {
            let (name, _) = signals.recv().await;
            service.lifecycle.stop_admitting();
            eprintln!("toolhost: {name}: no new calls; finishing the calls in flight");
            let s = service.clone();
            signals.exit_on_next(move || s.sync());
            let _ = stop_tx.send(true);
        }
    });
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let mut server = McpServer::new(host.executor.clone(), Some(reloader.clone()))?
        .with_approval_ttl(host.config.mcp.approval_ttl)?;
    if http.is_some() && !options.tokens.is_empty() {
        server = server.private_listing();
    }
    let load = async {
        let watch = load_and_watch(&host, &reloader, debounce, eprint_change).await?;
        // Reloads are counted from here: the first load is not one.
        service.watch_reloads(&reloader);
        let mut changes = reloader.subscribe();
        tokio::spawn(async move {
            while let Ok(c) = changes.recv().await {
                eprint_change(&c);
            }
        });
        service.lifecycle.set_ready();
        anyhow::Ok(watch)
    };
    match http {
        None => {
            let _watch = tokio::select! {
                w = load => w?,
                () = stopped() => return Ok(ExitCode::SUCCESS),
            };
            eprintln!("toolhost: MCP over stdio, watching {}", host.config.plugins_dir.display());
            serve_stdio_until(server, stopped(), Some(service.clone())).await?;
        }
        Some(addr) => {
            // Listening before the plugins are loaded: the probes answer (`/readyz` is 503 until
            // they are) while a cold start compiles, and MCP requests get 503 until then.
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr()?;
            if !options.tokens.is_empty() {
                let names: Vec<&str> = options.tokens.iter().map(|t| t.name.as_str()).collect();
                eprintln!(
                    "toolhost: MCP over HTTP requires a bearer token (accepting: {})",
                    names.join(", ")
                );
            } else if !bound.ip().is_loopback() {
                tracing::warn!(
                    "MCP over HTTP on {bound}, which is not a loopback address: anyone who can reach it can call the tools"
                );
            }
            let options = crate::protocol::mcp::HttpOptions { service: Some(service.clone()), ..options };
            eprintln!(
                "toolhost: listening on http://{bound} (/healthz, /readyz; /mcp once the plugins are loaded)"
            );
            let serving = tokio::spawn(serve_http(server, listener, options, stopped()));
            let _watch = tokio::select! {
                w = load => w?,
                () = stopped() => {
                    serving.await??;
                    return Ok(ExitCode::SUCCESS);
                }
            };
            eprintln!(
                "toolhost: MCP over streamable HTTP at http://{bound}/mcp, watching {} (Ctrl-C to stop)",
                host.config.plugins_dir.display()
            );
            serving.await??;
        }
    }
    service.sync();
    eprintln!("toolhost: stopped");
    Ok(ExitCode::SUCCESS)
}

/// A host whose registry follows the folder: initial load (printed as additions), then a watch.
async fn live_host(cfg: Config, debounce: Duration) -> Result<(Toolhost, Arc<Reloader>, WatchHandle)> {
    live_host_with(cfg, debounce, print_change).await
}

async fn live_host_with(
    cfg: Config,
    debounce: Duration,
    print_change: fn(&Change),
) -> Result<(Toolhost, Arc<Reloader>, WatchHandle)> {
    let (host, reloader) = unloaded_host(cfg)?;
    let watch = load_and_watch(&host, &reloader, debounce, print_change).await?;
    Ok((host, reloader, watch))
}

/// A host with an empty registry and the reloader that will fill it.
fn unloaded_host(cfg: Config) -> Result<(Toolhost, Arc<Reloader>)> {
    let runtime = crate::runtime::Runtime::for_config(&cfg)?;
    let host = Toolhost::from_parts(
        runtime,
        Arc::new(cfg),
        Registry::default(),
        Arc::new(crate::executor::NoConfirm),
    );
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    Ok((host, reloader))
}

/// The initial load (printed as additions), then the watch.
async fn load_and_watch(
    host: &Toolhost,
    reloader: &Arc<Reloader>,
    debounce: Duration,
    print_change: fn(&Change),
) -> Result<WatchHandle> {
    let r = reloader.clone();
    let initial = tokio::task::spawn_blocking(move || r.rescan()).await??;
    print_change(&initial);
    if host.registry.load().tools().next().is_none() {
        eprintln!("toolhost: no tools yet in {}", host.config.plugins_dir.display());
    }
    Ok(reloader.watch(debounce)?)
}

async fn serve(cfg: Config, debounce: Duration) -> Result<ExitCode> {
    let (host, reloader, _watch) = live_host(cfg, debounce).await?;
    let mut changes = reloader.subscribe();
    let mut signals =
        crate::service::shutdown::Signals::install().context("cannot install signal handlers")?;
    eprintln!("toolhost: watching {} (Ctrl-C to stop)", host.config.plugins_dir.display());
    loop {
        tokio::select! {
            _ = signals.recv() => return Ok(ExitCode::SUCCESS),
            change = changes.recv() => match change {
                Ok(c) => print_change(&c),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => eprintln!("toolhost: {n} changes not shown"),
                Err(_) => return Ok(ExitCode::SUCCESS),
            },
        }
    }
}

async fn dev(cfg: Config, path: &std::path::Path, debounce: Duration) -> Result<ExitCode> {
    use notify::Watcher;
    let project = crate::build::Project::locate(path)?;
    let toolchains = crate::build::Toolchains::from_env();
    let plugins_dir = cfg.plugins_dir.clone();
    let (_host, reloader, _watch) = live_host(cfg, debounce).await?;
    let mut changes = reloader.subscribe();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let p = project.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res
            && crate::reload::is_change(&ev)
            && ev.paths.iter().any(|path| p.is_source(path))
        {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(project.dir(), notify::RecursiveMode::Recursive)?;
    eprintln!(
        "toolhost dev: watching {} ({}) → {} (Ctrl-C to stop)",
        project.dir().display(),
        project.lang(),
        plugins_dir.display()
    );
    let build = |p: crate::build::Project, t: crate::build::Toolchains, dir: std::path::PathBuf| async move {
        eprintln!("toolhost dev: building {} …", p.dir().display());
        let result = tokio::task::spawn_blocking(move || {
            let built = p.build(&t)?;
            crate::dev::approve_own_build(&dir, &built.manifest);
            let to = built.install(&dir)?;
            anyhow::Ok((built.seconds, to))
        })
        .await;
        match result {
            Ok(Ok((secs, to))) => eprintln!("toolhost dev: built in {secs:.1}s → {}", to.display()),
            Ok(Err(e)) => eprintln!("toolhost dev: {}", term::text(&format!("{e:#}"))),
            Err(e) => eprintln!("toolhost dev: build task failed: {e}"),
        }
    };
    build(project.clone(), toolchains.clone(), plugins_dir.clone()).await;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            change = changes.recv() => {
                if let Ok(c) = change { print_change(&c) }
            }
            ev = rx.recv() => {
                if ev.is_none() { return Ok(ExitCode::SUCCESS) }
                while let Ok(Some(())) = tokio::time::timeout(debounce, rx.recv()).await {}
                build(project.clone(), toolchains.clone(), plugins_dir.clone()).await;
            }
        }
    }
}

/// `toolhost approve PLUGIN`: record the plugin's current request as approved; with `print`
/// (`Some(with_sha256)`), print the config entry that pins it instead and write nothing.
fn approve(cfg: &Config, plugin: &str, print: Option<bool>) -> Result<()> {
    use crate::approvals::Approvals;
    let (candidates, _) = crate::discovery::scan(&cfg.plugins_dir, cfg.max_plugin_bytes)
        .with_context(|| format!("cannot scan {}", cfg.plugins_dir.display()))?;
    let mut names = Vec::new();
    let mut found: Option<(Manifest, PathBuf)> = None;
    for c in &candidates {
        let Ok(m) = crate::manifest::read(&c.bytes) else { continue };
        if m.name == plugin {
            found = Some((m, c.path.clone()));
            break;
        }
        names.push(m.name);
    }
    let Some((m, file)) = found else {
        bail!(
            "no plugin named `{plugin}` in {} (found: {})",
            cfg.plugins_dir.display(),
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        );
    };
    if let Some(with_sha256) = print {
        let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let hash = crate::registry::content_hash(&bytes);
        print!("{}", crate::approvals::lock_entry(&m, &file, &hash, with_sha256));
        return Ok(());
    }
    if cfg.approvals.locked || cfg.approvals.plugins.contains_key(plugin) {
        bail!(
            "plugin `{plugin}` is approved in [approvals] of {} (the config decides, not {}); paste the entry \
             `toolhost approve {plugin} --print` prints into the config instead",
            cfg.source.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the config".into()),
            crate::approvals::FILE
        );
    }
    let mut approvals = Approvals::load(&cfg.plugins_dir);
    let new = approvals.pending(&m);
    approvals.approve(&m);
    approvals.save().with_context(|| {
        format!("cannot write {}", cfg.plugins_dir.join(crate::approvals::FILE).display())
    })?;
    println!(
        "approved plugin `{plugin}` v{} ({}): requests {}",
        term::line(&m.version),
        term::line(&crate::discovery::file_name(&file)),
        requests(&m)
    );
    if !new.is_empty() {
        println!("newly approved: {}", term::line(&new.join(", ")));
    }
    let missing =
        crate::sandbox::Grants::effective(plugin, &m.capabilities, &cfg.plugin(plugin), &cfg.secrets).1;
    for miss in missing {
        println!("not granted:    {} — grant with {}", term::line(&miss.what), term::line(&miss.how));
    }
    Ok(())
}

fn read_input(file: Option<&std::path::Path>) -> Result<String> {
    use std::io::Read;
    match file {
        Some(p) if p != std::path::Path::new("-") => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
        _ => {
            // Invalid UTF-8 from a model is replaced, not fatal: the parser sees U+FFFD.
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).context("cannot read the reply from standard input")?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

fn open(g: &GlobalArgs, confirm: Arc<dyn Confirm>) -> Result<Toolhost> {
    let cfg = resolve_config(g)?;
    if !cfg.plugins_dir.is_dir() {
        bail!(
            "plugins folder {} does not exist (set `plugins` in toolhost.toml or pass --plugins DIR)",
            cfg.plugins_dir.display()
        );
    }
    Toolhost::load(cfg, confirm)
}

/// Load the plugins for a command that shows no table of them (`call`, `run`, `prompt`,
/// `schema`): each file that failed to load is reported once, here. The registry itself only
/// returns failures; `list` shows them in its table and `serve` as `!` lines.
fn open_reporting(g: &GlobalArgs, confirm: Arc<dyn Confirm>) -> Result<Toolhost> {
    let host = open(g, confirm)?;
    for f in host.registry.load().failures() {
        tracing::warn!("skipped {f}");
    }
    Ok(host)
}

/// Human-readable manifest, as `inspect` prints it; every field the file chose through
/// [`term::line`], so none can draw lines or sequences of its own.
pub fn render_manifest(m: &Manifest) -> String {
    let mut out =
        format!("plugin {} {} (manifest format {})\n", term::line(&m.name), term::line(&m.version), m.format);
    if !m.description.is_empty() {
        out.push_str(&format!("  {}\n", term::line(&m.description)));
    }
    out.push_str(&format!("requests: {}\n", requests(m)));
    for t in &m.tools {
        out.push_str(&format!("\n{}\n  {}\n", term::line(&t.signature()), term::line(&t.description)));
        for (i, p) in t.params.iter().enumerate() {
            let ty = match &p.ty {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let json = if t.is_json(i) { ", json" } else { "" };
            let opt = if p.optional { ", optional" } else { "" };
            let rest = if t.rest && i + 1 == t.params.len() { ", takes the rest" } else { "" };
            out.push_str(&format!(
                "  - {} ({}{json}{opt}{rest}): {}\n",
                term::line(&p.name),
                term::line(&ty),
                term::line(&p.description)
            ));
        }
        let mut flags = Vec::new();
        if t.danger {
            flags.push("danger".to_string());
        }
        if t.read_only {
            flags.push("read-only".to_string());
        }
        if let Some(l) = t.output_limit {
            flags.push(format!("output limit {l}"));
        }
        if let Some(c) = &t.category {
            flags.push(format!("category {}", term::line(c)));
        }
        if !flags.is_empty() {
            out.push_str(&format!("  [{}]\n", flags.join(", ")));
        }
    }
    out
}

fn requests(m: &Manifest) -> String {
    let c = &m.capabilities;
    let mut parts: Vec<String> = c.fs.iter().map(|f| format!("fs {}:{}", f.path, f.mode)).collect();
    parts.extend(c.env.iter().map(|e| format!("env {e}")));
    parts.extend(c.net.iter().map(|n| format!("net {n}")));
    parts.extend(c.secrets.iter().map(|s| format!("secret {s}")));
    parts.extend(c.exec.iter().map(|e| format!("exec {e}")));
    if parts.is_empty() { "nothing".into() } else { term::line(&parts.join(", ")).into_owned() }
}

/// The `list` table.
pub fn render_list(reg: &Registry, config: &Config) -> String {
    let mut rows: Vec<[String; 4]> =
        vec![["TOOL".into(), "PLUGIN".into(), "FLAGS".into(), "DESCRIPTION".into()]];
    for t in reg.tools() {
        let view = crate::view::ToolView::new(t, config);
        let s = view.spec;
        let flags = view.flags();
        let field = |s: &str| term::line(s).into_owned();
        rows.push([
            field(&s.signature()),
            field(&t.plugin.name),
            field(&flags.join(",")),
            field(&s.description),
        ]);
    }
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    let w2 = rows.iter().map(|r| r[2].chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for r in &rows {
        let line = format!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if reg.tools().next().is_none() {
        out.push_str("(no tools loaded)\n");
    }
    out.push_str("\nPLUGINS\n");
    for p in reg.plugins() {
        let granted: Vec<String> = p
            .grants
            .fs
            .iter()
            .map(|f| format!("fs {}:{} → {}", f.name, f.mode, f.host_path.display()))
            .chain(p.grants.env.iter().map(|(k, _)| format!("env {k}")))
            .chain(net_granted(&p.grants.net))
            .chain(p.grants.exec.granted.iter().map(|g| format!("exec {}", g.grant.describe())))
            .collect();
        out.push_str(&format!(
            "{} {} ({})\n  requested: {}\n  granted:   {}\n",
            term::line(&p.name),
            term::line(&p.manifest.version),
            term::line(&crate::discovery::file_name(&p.file)),
            requests(&p.manifest),
            if granted.is_empty() { "nothing".into() } else { term::line(&granted.join(", ")).into_owned() }
        ));
        for m in &p.missing {
            out.push_str(&format!(
                "  missing:   {} — grant with {}\n",
                term::line(&m.what),
                term::line(&m.how)
            ));
        }
        for n in crate::process::shared_write_notes(&p.grants.exec, reg.plugins(), &config.workspace) {
            out.push_str(&format!("  warning:   {n}\n"));
        }
        if let Some(signer) = &p.signer {
            out.push_str(&format!("  signed by: {}\n", term::line(&signer.to_string())));
        }
    }
    if !reg.pending().is_empty() {
        out.push_str("\nPENDING APPROVAL\n");
        for p in reg.pending() {
            out.push_str(&format!("  ? {}\n", term::line(&p.to_string())));
        }
    }
    if !reg.warnings().is_empty() {
        out.push_str("\nWARNINGS\n");
        for w in reg.warnings() {
            out.push_str(&format!("  {}\n", term::line(&w.to_string())));
        }
    }
    if !reg.failures().is_empty() {
        out.push_str("\nNOT LOADED\n");
        for f in reg.failures() {
            out.push_str(&format!(
                "  ! {}: {}\n",
                term::line(&crate::discovery::file_name(&f.file)),
                term::line(&f.reason)
            ));
        }
    }
    out
}

/// The `list --json` document.
pub fn list_json(reg: &Registry) -> serde_json::Value {
    use serde_json::json;
    let plugins: Vec<_> = reg
        .plugins()
        .iter()
        .map(|p| {
            let registered: Vec<_> = p
                .manifest
                .tools
                .iter()
                .filter(|t| reg.get(&t.name).is_some_and(|e| Arc::ptr_eq(&e.plugin, p)))
                .collect();
            json!({
                "name": &*p.name,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "file": p.file,
                "requested": p.manifest.capabilities,
                "granted": {
                    "fs": p.grants.fs.iter().map(|f| json!({"path": f.name, "mode": f.mode, "hostPath": f.host_path})).collect::<Vec<_>>(),
                    "env": p.grants.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                    "net": net_granted_hosts(&p.grants.net),
                    "netPrivate": p.grants.net.private,
                    "secrets": p.grants.net.secrets.iter().map(|s| &s.name).collect::<Vec<_>>(),
                    "exec": p.grants.exec.granted.iter().map(|g| json!({
                        "name": g.grant.name,
                        "program": g.grant.program,
                        "args": g.grant.args.as_ref().map(|a| a.iter().map(|p| p.text.clone()).collect::<Vec<_>>()),
                        "env": g.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                        "cwd": g.grant.cwd,
                        "write": g.grant.write,
                        "fs": g.grant.fs.iter().map(|p| json!({"path": p.path, "mode": p.mode})).collect::<Vec<_>>(),
                        "network": g.grant.network,
                        "detach": g.grant.detach,
                    })).collect::<Vec<_>>(),
                },
                "missing": p.missing.iter().map(|m| json!({"what": m.what, "grant": m.how})).collect::<Vec<_>>(),
                "tools": registered,
                "signer": p.signer,
            })
        })
        .collect();
    json!({
        "plugins": plugins,
        "failures": reg.failures(),
        "warnings": reg.warnings(),
        "pending": reg.pending(),
    })
}

/// Granted host patterns that can match something the plugin requested.
fn net_granted_hosts(net: &crate::net::NetGrant) -> Vec<String> {
    net.granted
        .iter()
        .filter(|g| net.requested.iter().any(|r| crate::net::patterns_overlap(r, g)))
        .cloned()
        .collect()
}

fn net_granted(net: &crate::net::NetGrant) -> Vec<String> {
    let mut out: Vec<String> = net_granted_hosts(net).into_iter().map(|h| format!("net {h}")).collect();
    if net.private && !out.is_empty() {
        out.push("private addresses".into());
    }
    out.extend(net.secrets.iter().map(|s| format!("secret {}", s.name)));
    out
}

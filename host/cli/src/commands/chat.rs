//! `toolhost chat`: the agent loop of [`toolhost_frontends::agent`] on the terminal. This file only
//! resolves the model settings, keeps the registry live (as `serve` does), reads lines and
//! renders the loop's events: streamed text, a compact card per tool call, confirmations,
//! Ctrl-C to cancel the running step.

use crate::args::GlobalArgs;
use crate::term;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::Toolhost;
use toolhost_core::executor::{AlwaysConfirm, Confirm, NoConfirm};
use toolhost_core::registry::Registry;
use toolhost_core::registry::reload::{Change, Reloader};
use toolhost_frontends::agent::{
    Agent, AgentOptions, ApiKey, Cancel, ClientOptions, Conversation, Event, Message, ModelClient, Protocol,
    Stop, TurnResult,
};

/// Lines of a tool's output shown in its card.
const CARD_LINES: usize = 4;
/// Characters per card line.
const CARD_WIDTH: usize = 110;

/// `toolhost chat` options.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The model: --model/--base-url, else [model] in toolhost.toml, else OPENAI_BASE_URL, else
https://api.openai.com/v1. The API key is never a flag: --api-key-env VAR or [model] api_key_env
names an environment variable, [model] api_key_secret a [secrets.NAME] entry; without either,
OPENAI_API_KEY is used for the default or OPENAI_BASE_URL endpoint only.

Examples:
  ollama pull qwen2.5:7b
  toolhost --plugins target/plugins --allow-write files chat \\
      --base-url http://localhost:11434/v1 --model qwen2.5:7b
  toolhost --plugins target/plugins chat --model gpt-4o-mini --once \"Count the words of 'a b c'\"
  llama-server -m model.gguf --port 8080 --jinja   # then --base-url http://localhost:8080/v1

In the chat: /tools lists the tools, /skills the plugins' skills, /read URI attaches a
resource (a skill's file: skill://PLUGIN/SKILL/FILE) to the conversation, /clear starts over,
/exit (or Ctrl-D) quits; Ctrl-C cancels the running request or tool call and keeps the
conversation.")]
pub struct ChatArgs {
    /// The model name the server knows (e.g. qwen2.5:7b, gpt-4o-mini)
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The API root of an OpenAI-compatible server (e.g. http://localhost:11434/v1)
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Read the API key from this environment variable
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Tool protocol: native function calling, the [TOOL] text protocol, or auto (native when
    /// the endpoint accepts `tools`) [default: auto]
    #[arg(long, value_parser = protocol_parser())]
    pub protocol: Option<Protocol>,
    /// Model requests per user turn at most [default: 20]
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// The system prompt (the text protocol appends its tools section)
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Ask one question, print the final answer and exit (`-` reads it from standard input)
    #[arg(long, value_name = "QUESTION")]
    pub once: Option<String>,
    /// With --once: print the whole transcript as JSON instead of the answer
    #[arg(long, requires = "once")]
    pub json: bool,
    /// Append every message of the conversation to FILE as JSON lines
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Confirm dangerous tools without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Put the skills of the tools' plugins (their SKILL.md instructions, up to 24 KiB) into
    /// the system message
    #[arg(long)]
    pub skills: bool,
    /// Quiet time after the last change in the plugins folder before it is rescanned
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub debounce_ms: u64,
}

/// `--protocol`: one of the names `[model] protocol` takes.
fn protocol_parser() -> impl clap::builder::TypedValueParser<Value = Protocol> {
    use clap::builder::TypedValueParser;
    let names = Protocol::ALL.map(|p| clap::builder::PossibleValue::new(p.as_str()));
    clap::builder::PossibleValuesParser::new(names).map(|s| s.parse::<Protocol>().unwrap_or_default())
}

/// Run `toolhost chat`.
pub fn run(global: &GlobalArgs, args: ChatArgs) -> Result<ExitCode> {
    let settings = crate::settings::Settings::resolve(global)?;
    let cfg = &settings.core;
    if !cfg.plugins_dir.is_dir() {
        bail!(
            "plugins folder {} does not exist (set `plugins` in toolhost.toml or pass --plugins DIR)",
            cfg.plugins_dir.display()
        );
    }
    let client = ModelClient::new(client_options(&settings, &args)?).map_err(anyhow::Error::msg)?;
    let options = AgentOptions {
        protocol: args.protocol.or(settings.frontends.model.protocol).unwrap_or_default(),
        max_steps: args.max_steps.or(settings.frontends.model.max_steps).unwrap_or(20).max(1),
        system: args
            .system
            .clone()
            .or(settings.frontends.model.system.clone())
            .unwrap_or_else(|| toolhost_frontends::agent::DEFAULT_SYSTEM.into()),
        skills: args.skills,
        ..AgentOptions::default()
    };
    let rt = super::async_runtime()?;
    let code = rt.block_on(chat(settings, client, options, args));
    // The line reader may be blocked on the terminal; do not wait for it.
    rt.shutdown_background();
    code
}

/// The model settings: flags, then `[model]`, then the `OPENAI_*` variables.
pub fn client_options(settings: &crate::settings::Settings, args: &ChatArgs) -> Result<ClientOptions> {
    let m = &settings.frontends.model;
    let cfg = &settings.core;
    let env_base = std::env::var("OPENAI_BASE_URL").ok().filter(|v| !v.is_empty());
    let explicit_base = args.base_url.clone().or(m.base_url.clone());
    let implicit = explicit_base.is_none();
    let base_url = explicit_base.or(env_base).unwrap_or_else(|| "https://api.openai.com/v1".into());
    let Some(model) = args.model.clone().or(m.model.clone()) else {
        bail!(
            "no model given: pass --model NAME or set [model] model = \"NAME\" in toolhost.toml \
             (e.g. qwen2.5:7b with Ollama, gpt-4o-mini with OpenAI)"
        );
    };
    let mut o = ClientOptions::new(base_url, model);
    if let Some(var) = args.api_key_env.as_ref().or(m.api_key_env.as_ref()) {
        let value = std::env::var(var).ok().filter(|v| !v.is_empty()).with_context(|| {
            format!("the API key variable {var} is not set (named by --api-key-env or [model] api_key_env)")
        })?;
        o.api_key = Some(ApiKey::new(value));
        o.key_source = format!("read from the environment variable {var}");
    } else if let Some(name) = &m.api_key_secret {
        let source =
            cfg.secrets.get(name).with_context(|| format!("[model] api_key_secret: no secret `{name}`"))?;
        let value = source.read().map_err(|e| anyhow::anyhow!("[model] api_key_secret: {e}"))?;
        o.api_key = Some(ApiKey::new(value));
        o.key_source = format!("from [secrets.{name}]");
    } else if implicit && let Some(value) = std::env::var("OPENAI_API_KEY").ok().filter(|v| !v.is_empty()) {
        o.api_key = Some(ApiKey::new(value));
        o.key_source = "read from the environment variable OPENAI_API_KEY".into();
    }
    o.temperature = m.temperature;
    if let Some(s) = m.timeout_s {
        o.idle_timeout = Duration::from_secs(s);
    }
    Ok(o)
}

async fn chat(
    settings: crate::settings::Settings,
    client: ModelClient,
    options: AgentOptions,
    args: ChatArgs,
) -> Result<ExitCode> {
    let crate::settings::Settings { core: cfg, frontends, flag_plugins, .. } = settings;
    let reader = LineReader::spawn();
    // Questions go to the terminal itself (`/dev/tty`), not through the line reader: an
    // answer is only taken once toolhost asked, whatever was typed or piped before.
    let confirm: Arc<dyn Confirm> =
        if args.yes { Arc::new(AlwaysConfirm) } else { Arc::new(crate::confirm::TerminalConfirm) };
    let (host, reloader) = open_host(cfg, &frontends).await?;
    let changes = reloader.subscribe();
    let _watch = reloader.watch(Duration::from_millis(args.debounce_ms))?;
    let registry = host.registry.load_full();
    crate::settings::unknown_flag_plugins(&flag_plugins, &registry, &host.config.plugins_dir)?;
    for f in registry.failures() {
        eprintln!("toolhost: not loaded: {}", term::line(&f.to_string()));
    }
    for p in registry.pending() {
        eprintln!("toolhost: ? {}", term::line(&p.to_string()));
    }
    for c in registry.conflicts() {
        eprintln!("toolhost: ! {}", term::line(&c.message()));
    }
    let agent = Agent::new(host.executor.clone(), client, options).with_confirm(confirm);
    let transcript = match &args.transcript {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open transcript {}", path.display()))?,
        ),
        None => None,
    };
    if let Some(question) = &args.once {
        return once(&agent, question, args.json, transcript).await;
    }
    let tools = registry.tools().count();
    println!(
        "toolhost chat · {} at {} · protocol {} · {tools} tool{} from {}",
        agent.client().options().model,
        agent.client().options().base_url,
        agent.options().protocol,
        if tools == 1 { "" } else { "s" },
        host.config.plugins_dir.display(),
    );
    println!(
        "/tools lists them, /skills the skills, /read URI attaches one, /clear starts over, /exit or Ctrl-D quits, Ctrl-C cancels a running step"
    );
    interactive(&agent, &host, &reader, changes, transcript).await
}

/// What `--max-steps` is called where a turn's stop explains itself.
const MAX_STEPS_HINT: &str = "--max-steps N or [model] max_steps";

/// The host with the plugins folder read once, the audit trail and the terminal's grant
/// questions attached, and the reloader that keeps it live.
async fn open_host(
    cfg: toolhost_core::Config,
    frontends: &toolhost_frontends::Settings,
) -> Result<(Toolhost, Arc<Reloader>)> {
    let runtime = toolhost_core::engine::Runtime::for_config(&cfg)?;
    let host = Toolhost::from_parts(runtime, Arc::new(cfg), Registry::default(), Arc::new(NoConfirm));
    toolhost_frontends::service::Service::attach_audit(&host, frontends, "chat")?;
    host.executor.attach_grant_asker(Arc::new(crate::confirm::TerminalGrants));
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    let r = reloader.clone();
    tokio::task::spawn_blocking(move || r.rescan()).await??;
    Ok((host, reloader))
}

/// `--once`: one question (`-` reads it from standard input), the answer (or with `json` the
/// transcript) on stdout, the cards on stderr; exit code 1 unless the model answered.
async fn once(
    agent: &Agent,
    question: &str,
    json: bool,
    mut transcript: Option<std::fs::File>,
) -> Result<ExitCode> {
    let question = if question == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("cannot read the question from standard input")?;
        s
    } else {
        question.to_string()
    };
    let mut conv = Conversation::new();
    let mut messages = Vec::new();
    let mut render = Renderer::new(false);
    let mut sink = |ev: Event| {
        if let Event::Message(m) = &ev {
            record(&mut transcript, m);
            messages.push(m.clone());
        }
        render.event(&ev);
    };
    let result = run_turn(agent, &mut conv, question, &mut sink).await?;
    if json {
        let out = serde_json::json!({
            "answer": result.answer,
            "stop": stop_name(&result.stop),
            "steps": result.steps,
            "messages": messages,
        });
        println!("{}", term::to_json(&out)?);
    } else {
        println!("{}", term::stdout_text(result.answer.trim_end()));
    }
    if let Some(why) = result.explain(MAX_STEPS_HINT) {
        eprintln!("toolhost: {}", term::text(&why));
    }
    Ok(if result.stop == Stop::Answer { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The conversation on the terminal: the registry's changes printed between turns, a line read
/// at the prompt, a slash command or a turn; Ctrl-C at the prompt or Ctrl-D quits.
async fn interactive(
    agent: &Agent,
    host: &Toolhost,
    reader: &LineReader,
    mut changes: tokio::sync::broadcast::Receiver<Arc<Change>>,
    mut transcript: Option<std::fs::File>,
) -> Result<ExitCode> {
    let mut conv = Conversation::new();
    loop {
        while let Ok(c) = changes.try_recv() {
            for line in c.lines() {
                println!("toolhost: {}", term::line(&line));
            }
        }
        print!("\n> ");
        let _ = std::io::stdout().flush();
        let line = tokio::select! {
            l = reader.read() => l,
            _ = tokio::signal::ctrl_c() => { println!(); return Ok(ExitCode::SUCCESS) }
        };
        let Some(line) = line else {
            println!();
            return Ok(ExitCode::SUCCESS);
        };
        let mut input = line.trim().to_string();
        match slash_command(&input, &mut conv, host).await {
            Slash::Exit => return Ok(ExitCode::SUCCESS),
            Slash::Done => continue,
            Slash::Ask(question) => input = question,
            Slash::NotOne => {}
        }
        let mut render = Renderer::new(true);
        let mut sink = |ev: Event| {
            if let Event::Message(m) = &ev {
                record(&mut transcript, m);
            }
            render.event(&ev);
        };
        let result = run_turn(agent, &mut conv, input, &mut sink).await;
        render.end_line();
        match result {
            Ok(r) => {
                if let Some(why) = r.explain(MAX_STEPS_HINT) {
                    println!("({})", term::text(&why));
                }
            }
            Err(e) => eprintln!("toolhost: {}", term::text(&e.to_string())),
        }
    }
}

/// What a line typed at the prompt was, when it was no question for the model.
enum Slash {
    Exit,
    /// An empty line or a slash command, done.
    Done,
    /// A prompt picked (`/NAME ARG=VALUE…`): its messages are in the conversation, and this is
    /// its last user message, the question to ask now.
    Ask(String),
    NotOne,
}

async fn slash_command(input: &str, conv: &mut Conversation, host: &Toolhost) -> Slash {
    match input {
        "" => Slash::Done,
        "/exit" | "/quit" => Slash::Exit,
        "/clear" => {
            *conv = Conversation::new();
            println!("(new conversation)");
            Slash::Done
        }
        "/tools" => {
            print!("{}", tools_list(&host.registry.load()));
            Slash::Done
        }
        "/skills" => {
            print!("{}", skills_list(&host.registry.load()));
            Slash::Done
        }
        "/prompts" => {
            print!("{}", crate::attach::prompts_list(&host.registry.load()));
            Slash::Done
        }
        "/help" => {
            println!(
                "/tools     list the tools\n/skills    list the plugins' skills\n/read URI  attach a resource (a skill's file, a plugin's resource) to the conversation\n/prompts   list the plugins' prompts; /NAME ARG=VALUE… asks one\n/clear     start a new conversation\n/exit      quit (or Ctrl-D)\nCtrl-C cancels the running request or tool call"
            );
            Slash::Done
        }
        _ if input.starts_with("/read") => {
            match crate::attach::resource(input.trim_start_matches("/read").trim(), &host.executor).await {
                Ok((message, note)) => {
                    conv.messages.push(message);
                    println!("{note}");
                }
                Err(e) => println!("{e:#}"),
            }
            Slash::Done
        }
        _ if input.starts_with('/') && crate::attach::is_prompt(input, &host.registry.load()) => {
            match crate::attach::prompt(input, &host.executor).await {
                Ok((messages, question)) => {
                    conv.messages.extend(messages);
                    Slash::Ask(question)
                }
                Err(e) => {
                    println!("{e:#}");
                    Slash::Done
                }
            }
        }
        _ => Slash::NotOne,
    }
}

/// One turn, with Ctrl-C cancelling it (the loop then finishes cleanly).
async fn run_turn(
    agent: &Agent,
    conv: &mut Conversation,
    input: String,
    sink: &mut (dyn FnMut(Event) + Send),
) -> Result<TurnResult, toolhost_frontends::agent::AgentError> {
    let cancel = Cancel::new();
    let turn = agent.turn(conv, input, &cancel, sink);
    tokio::pin!(turn);
    tokio::select! {
        r = &mut turn => r,
        _ = tokio::signal::ctrl_c() => {
            cancel.cancel();
            turn.await
        }
    }
}

fn stop_name(s: &Stop) -> &'static str {
    match s {
        Stop::Answer => "answer",
        Stop::StepLimit(_) => "step_limit",
        Stop::Repeating { .. } => "repeating",
        Stop::Cancelled => "cancelled",
    }
}

fn record(file: &mut Option<std::fs::File>, m: &Message) {
    if let Some(f) = file {
        let line = serde_json::to_string(m).unwrap_or_default();
        if let Err(e) = writeln!(f, "{line}").and_then(|_| f.flush()) {
            eprintln!("toolhost: cannot write the transcript: {e}");
            *file = None;
        }
    }
}

fn tools_list(reg: &Registry) -> String {
    let mut out = String::new();
    for t in reg.tools() {
        let s = t.spec();
        let danger = if s.danger { " [danger]" } else { "" };
        out.push_str(&format!("  {}{danger} — {}\n", term::line(&s.signature()), term::line(&s.description)));
    }
    if out.is_empty() {
        out.push_str("  (no tools)\n");
    }
    out
}

/// The skills of the loaded plugins, one line each with the URI of their instructions.
fn skills_list(reg: &Registry) -> String {
    use toolhost_core::registry::skills;
    let mut out = String::new();
    for (plugin, s) in skills::all(reg.plugins()) {
        let at = skills::uri(plugin, &s.name, toolhost_spec::skills::SKILL_MD);
        out.push_str(&format!(
            "  {} — {} ({})\n",
            term::line(&s.name),
            term::line(&s.description),
            term::line(&at)
        ));
    }
    if out.is_empty() {
        out.push_str("  (no skills)\n");
    }
    out
}

/// Draws events: streamed text on stdout (interactive only) and a card per tool call
/// (stdout when interactive, stderr with --once, whose stdout is the answer). Everything the
/// model or a tool chose goes through [`term`]: tokens keep their lines, card lines do not.
struct Renderer {
    interactive: bool,
    mid_line: bool,
    /// A tool card's progress line is on screen (redrawn in place, cleared at the card's end).
    bar: bool,
}

impl Renderer {
    fn new(interactive: bool) -> Renderer {
        Renderer { interactive, mid_line: false, bar: false }
    }

    /// Take a progress line off the screen.
    fn clear_bar(&mut self) {
        if self.bar {
            self.out("\r\x1b[2K");
            self.bar = false;
        }
    }

    fn out(&mut self, s: &str) {
        if self.interactive {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(s.as_bytes());
            let _ = o.flush();
        } else {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(s.as_bytes());
        }
    }

    fn end_line(&mut self) {
        if self.mid_line {
            self.out("\n");
            self.mid_line = false;
        }
    }

    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Token(t) if self.interactive => {
                self.out(&term::text(t));
                self.mid_line = !t.ends_with('\n');
            }
            Event::Retrying { attempt, max_tries, wait, reason } => {
                self.end_line();
                self.out(&format!(
                    "  ↻ {}; retrying in {:.1} s (try {} of {max_tries})\n",
                    term::line(reason),
                    wait.as_secs_f64(),
                    attempt + 1
                ));
            }
            Event::Notice(n) => {
                self.end_line();
                self.out(&format!("  note: {}\n", term::line(n)));
            }
            Event::ToolStart { name, args, .. } => {
                self.end_line();
                self.out(&format!("  ▸ {}\n", cut(&term::line(&format!("{name}({args})")), CARD_WIDTH)));
            }
            // The card's bar, redrawn in place while the tool runs (interactive only: with
            // --once, stderr gets the finished card alone).
            Event::ToolProgress { progress, .. } if self.interactive => {
                let line = format!("\r\x1b[2K    {}", progress_bar(progress));
                self.out(&cut(&line, CARD_WIDTH + 8));
                self.bar = true;
            }
            Event::ToolEnd { outcome, elapsed, .. } => {
                self.clear_bar();
                let status = match (outcome.success, outcome.kind) {
                    (true, _) if outcome.truncated => "✓ success (truncated)".to_string(),
                    (true, _) => "✓ success".to_string(),
                    (false, Some(k)) => format!("✗ {k}"),
                    (false, None) => "✗ error".to_string(),
                };
                let mut card = format!("    {status} · {}\n", duration(*elapsed));
                let text = outcome.text().trim_end();
                let lines: Vec<&str> = text.lines().collect();
                for l in lines.iter().take(CARD_LINES) {
                    card.push_str(&format!("    │ {}\n", cut(&term::line(l), CARD_WIDTH)));
                }
                if lines.len() > CARD_LINES {
                    card.push_str(&format!("    │ … {} more lines\n", lines.len() - CARD_LINES));
                }
                self.out(&card);
            }
            _ => {}
        }
    }
}

/// `[█████·····]  50% 5/10 hashing` (a known total) or `⋯ 5 hashing`; the message escaped.
fn progress_bar(p: &toolhost_core::executor::Progress) -> String {
    const WIDTH: usize = 20;
    let message = term::line(&p.message);
    match (p.fraction(), p.total) {
        (Some(f), Some(t)) => {
            let full = (f * WIDTH as f64).round() as usize;
            let bar = "█".repeat(full) + &"·".repeat(WIDTH - full.min(WIDTH));
            format!("[{bar}] {:>3}% {}/{t} {message}", (f * 100.0).round() as u32, p.done)
        }
        _ => format!("⋯ {} {message}", p.done),
    }
}

fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn cut(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Reads standard input one line at a time, on request, in a thread of its own (the prompt;
/// danger questions read the terminal itself). A line read for a request that was cancelled
/// meanwhile is kept for the next request.
struct LineReader {
    requests: std::sync::mpsc::Sender<tokio::sync::oneshot::Sender<Option<String>>>,
}

impl LineReader {
    fn spawn() -> LineReader {
        let (tx, rx) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<Option<String>>>();
        std::thread::spawn(move || {
            let mut kept: Option<Option<String>> = None;
            for reply in rx {
                let line = kept.take().unwrap_or_else(|| {
                    let mut s = String::new();
                    match std::io::stdin().read_line(&mut s) {
                        Ok(0) | Err(_) => None,
                        Ok(_) => Some(s),
                    }
                });
                if let Err(line) = reply.send(line) {
                    kept = Some(line);
                }
            }
        });
        LineReader { requests: tx }
    }

    /// The next line, or `None` at end of input.
    async fn read(&self) -> Option<String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.requests.send(tx).ok()?;
        rx.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::progress_bar;
    use toolhost_core::executor::Progress;

    #[test]
    fn the_card_bar_shows_the_fraction_and_escapes_the_message() {
        let p = |done, total, message: &str| Progress { done, total, message: message.into() };
        assert_eq!(
            progress_bar(&p(5, Some(10), "half")),
            format!("[{}{}]  50% 5/10 half", "█".repeat(10), "·".repeat(10))
        );
        assert_eq!(progress_bar(&p(7, None, "files")), "⋯ 7 files");
        assert!(!progress_bar(&p(1, Some(2), "\u{202e}evil")).contains('\u{202e}'), "bidi escaped");
    }
}

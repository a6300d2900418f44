//! The agent loop: send the conversation to an OpenAI-compatible model, read the reply, run
//! its tool calls through the executor, append the results, and ask again until the model
//! answers — in either tool protocol:
//!
//! - **native** function calling: the `tools` array built from the registry, the model's
//!   `tool_calls`, one `role: "tool"` message per call with the outcome JSON;
//! - **text**: the `[TOOL]` prompt section in the system message, the reply parsed for calls,
//!   the results block as the next user message — for models without function calling.
//!
//! `auto` tries native and falls back to text when the endpoint refuses `tools`.
//!
//! Messages go in, [`Event`]s come out; rendering is the caller's business (`toolhost chat`
//! is one caller). The registry snapshot is read for every request, so a plugin added,
//! replaced or removed by a reloader shows in the next request. A [`Cancel`] stops the
//! running request or call and leaves the conversation consistent: every tool call has its
//! result, partial text is kept.

mod client;
pub(crate) mod settings;
mod sse;
mod step;

pub use client::{
    ApiKey, ClientEvent, ClientOptions, Message, ModelClient, ModelError, Reply, RetryPolicy, WireFunction,
    WireToolCall,
};
pub use sse::SseParser;

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use step::StepEnd;
use toolhost_core::executor::{Confirm, Executor, Outcome, Progress};
use toolhost_core::registry::Registry;
use {crate::openai, crate::text};

/// Which tool protocol the loop speaks with the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Function calling when the endpoint accepts `tools`, the text protocol otherwise
    #[default]
    Auto,
    /// OpenAI function calling (`tools`, `tool_calls`, `role: "tool"` messages)
    Native,
    /// The `[TOOL] name(args) [/TOOL]` text protocol, taught in the system message
    Text,
}

impl Protocol {
    /// Every protocol, as written in `[model] protocol` and `--protocol`.
    pub const ALL: [Protocol; 3] = [Protocol::Auto, Protocol::Native, Protocol::Text];
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Protocol, String> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.to_string() == s)
            .ok_or_else(|| format!("{s:?} is not a protocol; use auto, native or text"))
    }
}

impl Protocol {
    /// As written in `[model] protocol` and `--protocol`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Auto => "auto",
            Protocol::Native => "native",
            Protocol::Text => "text",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The system prompt when the operator gives none.
pub const DEFAULT_SYSTEM: &str = "You are a helpful assistant. Use the tools when they help with the user's \
request; when you have what you need, answer the user directly and concisely.";

/// Message given to the model for a call the user cancelled.
pub const CANCELLED: &str = "cancelled by the user (Ctrl-C) before it finished";

/// How the loop behaves.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub protocol: Protocol,
    /// Model requests per user turn at most.
    pub max_steps: usize,
    /// The system prompt (the text protocol appends its tools section to it).
    pub system: String,
    /// The same call failing with the same error this many times in one turn stops the turn.
    pub repeat_limit: usize,
    /// Put the skills of the listed tools' plugins into the system message (see
    /// [`text::skills_section`]), whatever the protocol.
    pub skills: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            protocol: Protocol::Auto,
            max_steps: 20,
            system: DEFAULT_SYSTEM.into(),
            repeat_limit: 3,
            skills: false,
        }
    }
}

/// The conversation so far, without the system message (the loop writes that for every
/// request from the current registry).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Conversation {
    pub messages: Vec<Message>,
    /// Search mode: tools `find_tools` returned in this conversation, offered as functions from
    /// then on (a model calls only the functions it is given).
    #[serde(default)]
    pub found: std::collections::BTreeSet<String>,
    /// The system message last sent, to report it again only when it changes.
    #[serde(skip)]
    last_system: Option<String>,
}

impl Conversation {
    pub fn new() -> Conversation {
        Conversation::default()
    }
}

/// What happens during a turn, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A request is about to go to the model.
    Request { step: usize, protocol: Protocol },
    /// Text of the model's reply as it streams in.
    Token(String),
    /// A request failed and will be sent again; text streamed since the last `Request`
    /// belongs to the failed try.
    Retrying { attempt: u32, max_tries: u32, wait: Duration, reason: String },
    /// Something the user should know (a protocol fallback, a reply cut at the output limit).
    Notice(String),
    /// A tool call is about to run (a danger confirmation may follow).
    ToolStart { id: String, name: String, args: String },
    /// A running tool call reported progress (coalesced by the host: about ten a second at
    /// most, the last always).
    ToolProgress { id: String, name: String, progress: Progress },
    /// A tool call finished (or did not run: unknown tool, bad arguments, denied, cancelled,
    /// a `[TOOL]` call that did not parse).
    ToolEnd { id: String, name: String, args: String, outcome: Outcome, elapsed: Duration },
    /// A message was added to the conversation (system messages when they change), for
    /// transcripts.
    Message(Message),
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The model answered without calling a tool.
    Answer,
    /// `max_steps` requests were made without a final answer.
    StepLimit(usize),
    /// The model kept making the same failing call.
    Repeating { call: String, times: usize, error: String },
    /// The caller cancelled.
    Cancelled,
}

/// The end of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnResult {
    /// The final answer (or the last text the model wrote, if the turn stopped otherwise).
    pub answer: String,
    pub stop: Stop,
    /// Requests made.
    pub steps: usize,
}

impl TurnResult {
    /// A sentence for the user when the turn did not end with an answer.
    pub fn explain(&self, max_steps_hint: &str) -> Option<String> {
        match &self.stop {
            Stop::Answer => None,
            Stop::StepLimit(n) => Some(format!(
                "stopped after {n} model requests without a final answer (raise the limit with {max_steps_hint})"
            )),
            Stop::Repeating { call, times, error } => {
                Some(format!("stopped: the model made the same failing call {times} times: {call} → {error}"))
            }
            Stop::Cancelled => Some("cancelled; the conversation is kept".into()),
        }
    }
}

/// A turn that could not finish: the model server failed, or the tools cannot be offered.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Tools(#[from] openai::NameError),
}

/// A cancellation signal for one turn (Ctrl-C in `toolhost chat`).
#[derive(Debug, Clone)]
pub struct Cancel(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Cancel(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once [`Cancel::cancel`] was called.
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// The loop, bound to an executor and a model.
pub struct Agent {
    executor: Arc<Executor>,
    client: ModelClient,
    options: AgentOptions,
    confirm: Option<Arc<dyn Confirm>>,
    /// `auto` once decided: `Native` after a request with tools succeeded, `Text` after the
    /// endpoint refused them.
    resolved: Mutex<Option<Protocol>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("client", &self.client).field("options", &self.options).finish()
    }
}

type Sink<'a> = &'a mut (dyn FnMut(Event) + Send);

impl Agent {
    pub fn new(executor: Arc<Executor>, client: ModelClient, options: AgentOptions) -> Agent {
        Agent { executor, client, options, confirm: None, resolved: Mutex::new(None) }
    }

    /// Ask `confirm` (instead of the executor's own) about dangerous tools.
    pub fn with_confirm(mut self, confirm: Arc<dyn Confirm>) -> Agent {
        self.confirm = Some(confirm);
        self
    }

    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    pub fn client(&self) -> &ModelClient {
        &self.client
    }

    /// The protocol in use: the configured one, or what `auto` decided (`Auto` until then).
    pub fn protocol(&self) -> Protocol {
        match self.options.protocol {
            Protocol::Auto => {
                self.resolved.lock().map(|r| r.unwrap_or(Protocol::Auto)).unwrap_or(Protocol::Auto)
            }
            p => p,
        }
    }

    /// The system message for `protocol` over `registry`.
    pub fn system_message(&self, registry: &Registry, protocol: Protocol) -> String {
        let config = self.executor.config();
        let skills = if self.options.skills { text::skills_section(registry, config) } else { String::new() };
        match protocol {
            Protocol::Text => format!(
                "{}\n\n{}{skills}\nWhen you have the final answer, reply without any [TOOL] call.\n",
                self.options.system.trim_end(),
                text::prompt(registry, &self.executor.listing(registry, &Self::caller()))
            ),
            _ if skills.is_empty() => self.options.system.clone(),
            _ => format!("{}\n{skills}", self.options.system.trim_end()),
        }
    }

    /// One user turn: append `user` to the conversation, then request, run tools and repeat
    /// until the model answers, the step limit is reached, the model repeats a failing call,
    /// or `cancel` fires. Messages are appended to `conv` as they are made; on an error the
    /// conversation keeps what happened before it.
    pub async fn turn(
        &self,
        conv: &mut Conversation,
        user: impl Into<String>,
        cancel: &Cancel,
        events: Sink<'_>,
    ) -> Result<TurnResult, AgentError> {
        // Appended after the system message is reported, so transcripts read in order.
        let mut user = Some(Message::user(user));
        let mut failures: HashMap<String, usize> = HashMap::new();
        let mut steps = 0;
        let mut last_text = String::new();
        while steps < self.options.max_steps {
            let (protocol, tools, request) = self.next_request(conv, &mut user, events)?;
            steps += 1;
            events(Event::Request { step: steps, protocol });
            let (result, partial) = self.ask_model(&request, tools.as_ref(), cancel, events).await;
            let reply = match result {
                None => {
                    if !partial.is_empty() {
                        push(conv, Message::assistant(partial.clone(), Vec::new()), events);
                    }
                    return Ok(TurnResult { answer: partial, stop: Stop::Cancelled, steps });
                }
                Some(Err(ModelError::ToolsUnsupported { detail }))
                    if self.options.protocol == Protocol::Auto && tools.is_some() =>
                {
                    self.resolve(Protocol::Text);
                    events(Event::Notice(format!(
                        "the endpoint does not accept function calling ({detail}); using the [TOOL] text protocol"
                    )));
                    steps -= 1;
                    continue;
                }
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(r)) => r,
            };
            if self.options.protocol == Protocol::Auto && tools.is_some() {
                self.resolve(Protocol::Native);
            }
            if reply.finish_reason.as_deref() == Some("length") {
                events(Event::Notice("the reply was cut at the model's output limit".into()));
            }
            last_text = reply.content.clone();
            let outcome = match protocol {
                Protocol::Text => self.run_text(conv, &reply, cancel, events, &mut failures).await,
                _ => self.run_native(conv, reply, cancel, events, &mut failures).await,
            };
            match outcome {
                StepEnd::Answer => return Ok(TurnResult { answer: last_text, stop: Stop::Answer, steps }),
                StepEnd::Continue => {}
                StepEnd::Stop(stop) => return Ok(TurnResult { answer: last_text, stop, steps }),
            }
        }
        if let Some(u) = user.take() {
            push(conv, u, events);
        }
        Ok(TurnResult { answer: last_text, stop: Stop::StepLimit(steps), steps })
    }

    /// The next request of a turn: its protocol, its `tools` array (none for the text
    /// protocol, or when there is no tool) and its messages (the system message first). The
    /// system message is reported when it changed, and `user` appended after it.
    fn next_request(
        &self,
        conv: &mut Conversation,
        user: &mut Option<Message>,
        events: Sink<'_>,
    ) -> Result<(Protocol, Option<serde_json::Value>, Vec<Message>), AgentError> {
        let registry = self.executor.registry();
        let protocol = match self.protocol() {
            Protocol::Auto => Protocol::Native,
            p => p,
        };
        let system = self.system_message(&registry, protocol);
        if conv.last_system.as_deref() != Some(system.as_str()) {
            conv.last_system = Some(system.clone());
            events(Event::Message(Message::system(system.clone())));
        }
        if let Some(u) = user.take() {
            push(conv, u, events);
        }
        let tools = match protocol {
            Protocol::Text => None,
            _ => {
                Some(self.functions(&registry, conv)?).filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            }
        };
        let mut request = Vec::with_capacity(conv.messages.len() + 1);
        request.push(Message::system(system));
        request.extend(conv.messages.iter().cloned());
        Ok((protocol, tools, request))
    }

    /// Send `request`, its text streamed to `events`: the reply, or `None` when `cancel` fired
    /// first; and the text the try under way streamed (a retry starts it again).
    async fn ask_model(
        &self,
        request: &[Message],
        tools: Option<&serde_json::Value>,
        cancel: &Cancel,
        events: Sink<'_>,
    ) -> (Option<Result<Reply, ModelError>>, String) {
        let mut partial = String::new();
        let result = {
            let mut on_event = |ev: ClientEvent| match ev {
                ClientEvent::Token(t) => {
                    partial.push_str(&t);
                    events(Event::Token(t));
                }
                ClientEvent::Retrying { attempt, max_tries, wait, reason } => {
                    partial.clear();
                    events(Event::Retrying { attempt, max_tries, wait, reason });
                }
            };
            tokio::select! {
                r = self.client.complete(request, tools, &mut on_event) => Some(r),
                _ = cancel.cancelled() => None,
            }
        };
        (result, partial)
    }

    /// The `tools` array: what the catalog lists, plus in search mode the tools `find_tools`
    /// returned in this conversation.
    fn functions(
        &self,
        registry: &Registry,
        conv: &Conversation,
    ) -> Result<serde_json::Value, openai::NameError> {
        let config = self.executor.config();
        let caller = Self::caller();
        let mut views = self.executor.listing(registry, &caller);
        if registry.search().is_some() {
            let listed: Vec<String> = views.iter().map(|v| v.name().to_string()).collect();
            let found = conv.found.iter().filter(|n| !listed.contains(n)).filter_map(|n| registry.get(n));
            views.extend(
                found
                    .map(|entry| toolhost_core::view::ToolView::new(entry, config))
                    .filter(|v| self.executor.may_list(v, &caller)),
            );
        }
        openai::tools(&views)
    }

    /// Who the conversation's calls are made as, and whose list of tools the model is offered:
    /// the local user.
    pub(super) fn caller() -> toolhost_core::executor::CallContext {
        toolhost_core::executor::CallContext::local(None)
    }

    fn resolve(&self, p: Protocol) {
        if let Ok(mut r) = self.resolved.lock()
            && (r.is_none() || p == Protocol::Text)
        {
            *r = Some(p);
        }
    }
}

fn push(conv: &mut Conversation, m: Message, events: Sink<'_>) {
    conv.messages.push(m.clone());
    events(Event::Message(m));
}

/// Arguments as the cards show them: JSON strings, each cut to 60 characters.
pub fn display_args(args: &[String]) -> String {
    args.iter()
        .map(|a| serde_json::to_string(&shorten(a, 60)).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(", ")
}

fn shorten(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

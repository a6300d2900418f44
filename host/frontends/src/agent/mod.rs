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

pub use client::{
    ApiKey, ClientEvent, ClientOptions, Message, ModelClient, ModelError, Reply, RetryPolicy, WireFunction,
    WireToolCall,
};
pub use sse::SseParser;

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::executor::{self, CallContext, CallControl, Progress, ProgressSink};
use toolhost_core::executor::{CallRequest, Confirm, ErrorKind, Executor, Outcome, PreparedCall};
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
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            protocol: Protocol::Auto,
            max_steps: 20,
            system: DEFAULT_SYSTEM.into(),
            repeat_limit: 3,
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
        match protocol {
            Protocol::Text => format!(
                "{}\n\n{}\nWhen you have the final answer, reply without any [TOOL] call.\n",
                self.options.system.trim_end(),
                text::prompt(registry, self.executor.config())
            ),
            _ => self.options.system.clone(),
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
                _ => Some(self.functions(&registry, conv)?)
                    .filter(|t| t.as_array().is_some_and(|a| !a.is_empty())),
            };
            let mut request = Vec::with_capacity(conv.messages.len() + 1);
            request.push(Message::system(system));
            request.extend(conv.messages.iter().cloned());
            steps += 1;
            events(Event::Request { step: steps, protocol });
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
                    r = self.client.complete(&request, tools.as_ref(), &mut on_event) => Some(r),
                    _ = cancel.cancelled() => None,
                }
            };
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

    /// The `tools` array: what the catalog lists, plus in search mode the tools `find_tools`
    /// returned in this conversation.
    fn functions(
        &self,
        registry: &Registry,
        conv: &Conversation,
    ) -> Result<serde_json::Value, openai::NameError> {
        let config = self.executor.config();
        let mut tools = openai::tools(registry, config)?;
        if registry.search().is_some()
            && let Some(list) = tools.as_array_mut()
        {
            let listed: Vec<String> =
                toolhost_core::view::listing(registry, config).iter().map(|v| v.name().to_string()).collect();
            for entry in conv.found.iter().filter(|n| !listed.contains(n)).filter_map(|n| registry.get(n)) {
                list.push(openai::function(&toolhost_core::view::ToolView::new(entry, config))?);
            }
        }
        Ok(tools)
    }

    fn resolve(&self, p: Protocol) {
        if let Ok(mut r) = self.resolved.lock()
            && (r.is_none() || p == Protocol::Text)
        {
            *r = Some(p);
        }
    }

    async fn run_native(
        &self,
        conv: &mut Conversation,
        reply: Reply,
        cancel: &Cancel,
        events: Sink<'_>,
        failures: &mut HashMap<String, usize>,
    ) -> StepEnd {
        let calls = reply.tool_calls.clone();
        push(conv, Message::assistant(reply.content, reply.tool_calls), events);
        if calls.is_empty() {
            return StepEnd::Answer;
        }
        let mut repeated = None;
        for (i, tc) in calls.iter().enumerate() {
            if cancel.is_cancelled() {
                for rest in &calls[i..] {
                    let o = Outcome::err(ErrorKind::Cancelled, CANCELLED);
                    push(conv, Message::tool(&rest.id, outcome_json(&o)), events);
                }
                return StepEnd::Stop(Stop::Cancelled);
            }
            let ctx = CallContext::default();
            let prepared = match openai::request(tc) {
                Ok(request) => self.executor.prepare(request, &ctx).await.map_err(Box::new),
                Err(refused) => Err(refused),
            };
            let args = match &prepared {
                Ok(p) => display_args(&p.call().args),
                Err(_) => shorten(&tc.function.arguments, 120),
            };
            let name = tc.function.name.clone();
            events(Event::ToolStart { id: tc.id.clone(), name: name.clone(), args: args.clone() });
            let started = Instant::now();
            let outcome = match prepared {
                Ok(p) => self.call(&tc.id, &p, cancel, events).await,
                Err(refused) => *refused,
            };
            let elapsed = started.elapsed();
            note_found(conv, &name, &outcome);
            events(Event::ToolEnd {
                id: tc.id.clone(),
                name: name.clone(),
                args: args.clone(),
                outcome: outcome.clone(),
                elapsed,
            });
            push(conv, Message::tool(&tc.id, outcome_json(&outcome)), events);
            if repeated.is_none() {
                repeated = self.note_failure(failures, &name, &args, &outcome);
            }
        }
        if cancel.is_cancelled() {
            return StepEnd::Stop(Stop::Cancelled);
        }
        match repeated {
            Some(stop) => StepEnd::Stop(stop),
            None => StepEnd::Continue,
        }
    }

    async fn run_text(
        &self,
        conv: &mut Conversation,
        reply: &Reply,
        cancel: &Cancel,
        events: Sink<'_>,
        failures: &mut HashMap<String, usize>,
    ) -> StepEnd {
        push(conv, Message::assistant(reply.content.clone(), Vec::new()), events);
        let segments = text::parse(&reply.content);
        // A reply with no call (examples inside code are never run) is the answer.
        if segments.iter().all(|s| matches!(s, text::Segment::Text { .. } | text::Segment::Example { .. })) {
            return StepEnd::Answer;
        }
        let mut results = Vec::with_capacity(segments.len());
        let mut repeated = None;
        let mut n = 0;
        for seg in segments {
            let (name, args, outcome, shown, elapsed) = match &seg {
                // An example is reported back as `skipped` by the feedback block, never run.
                text::Segment::Text { .. } | text::Segment::Example { .. } => {
                    results.push((seg, None));
                    continue;
                }
                text::Segment::Call { call, .. } => {
                    n += 1;
                    let args = display_args(&call.args);
                    events(Event::ToolStart {
                        id: n.to_string(),
                        name: call.name.clone(),
                        args: args.clone(),
                    });
                    let started = Instant::now();
                    let outcome = if cancel.is_cancelled() {
                        Outcome::err(ErrorKind::Cancelled, CANCELLED)
                    } else {
                        match self
                            .executor
                            .prepare(CallRequest::Positional(call), &CallContext::default())
                            .await
                        {
                            Ok(p) => self.call(&n.to_string(), &p, cancel, events).await,
                            Err(refused) => refused,
                        }
                    };
                    note_found(conv, &call.name, &outcome);
                    (call.name.clone(), args, Some(outcome.clone()), outcome, started.elapsed())
                }
                text::Segment::Error { error, raw } => {
                    // Never run; the feedback block reports it, the event shows it as a failure.
                    n += 1;
                    let raw = shorten(raw.trim(), 120);
                    events(Event::ToolStart { id: n.to_string(), name: "[TOOL]".into(), args: raw.clone() });
                    let shown =
                        Outcome::err(ErrorKind::BadArguments, format!("this call was not run: {error}"));
                    ("[TOOL]".to_string(), raw, None, shown, Duration::ZERO)
                }
            };
            events(Event::ToolEnd {
                id: n.to_string(),
                name: name.clone(),
                args: args.clone(),
                outcome: shown.clone(),
                elapsed,
            });
            if repeated.is_none() {
                repeated = self.note_failure(failures, &name, &args, &shown);
            }
            results.push((seg, outcome));
        }
        let block = text::feedback("", &results);
        push(conv, Message::user(block.trim_start()), events);
        if cancel.is_cancelled() {
            return StepEnd::Stop(Stop::Cancelled);
        }
        match repeated {
            Some(stop) => StepEnd::Stop(stop),
            None => StepEnd::Continue,
        }
    }

    /// Run `prepared` (event id `id`), its progress as [`Event::ToolProgress`]; `cancel` stops
    /// it through the executor, so a cancelled call is still counted and audited.
    async fn call(
        &self,
        id: &str,
        prepared: &PreparedCall<'_>,
        cancel: &Cancel,
        events: Sink<'_>,
    ) -> Outcome {
        let call = prepared.call();
        let stop = executor::Cancel::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let sink: Arc<dyn ProgressSink> = Arc::new(move |p: &Progress| {
            let _ = tx.send(p.clone());
        });
        let control = CallControl::default().with_cancel(stop.clone()).with_progress(sink);
        let confirm = self.confirm.clone().unwrap_or_else(|| self.executor.confirm().clone());
        let ctx = CallContext::default();
        let run = self.executor.run(prepared, &*confirm, &ctx, &control);
        tokio::pin!(run);
        let mut outcome = loop {
            tokio::select! {
                o = &mut run => break o,
                Some(p) = rx.recv() => {
                    events(Event::ToolProgress { id: id.to_string(), name: call.name.clone(), progress: p });
                }
                () = cancel.cancelled(), if !stop.is_cancelled() => stop.cancel("the user (Ctrl-C)"),
            }
        };
        while let Ok(p) = rx.try_recv() {
            events(Event::ToolProgress { id: id.to_string(), name: call.name.clone(), progress: p });
        }
        if outcome.kind == Some(ErrorKind::Cancelled) && cancel.is_cancelled() {
            outcome.error = Some(CANCELLED.into());
        }
        outcome
    }

    fn note_failure(
        &self,
        failures: &mut HashMap<String, usize>,
        name: &str,
        args: &str,
        outcome: &Outcome,
    ) -> Option<Stop> {
        if outcome.success || outcome.kind == Some(ErrorKind::Cancelled) {
            return None;
        }
        let error = outcome.error.clone().unwrap_or_default();
        let key = format!("{name}\u{0}{args}\u{0}{error}");
        let n = failures.entry(key).or_insert(0);
        *n += 1;
        (*n >= self.options.repeat_limit.max(1)).then(|| Stop::Repeating {
            call: format!("{name}({args})"),
            times: *n,
            error: shorten(&error, 200),
        })
    }
}

enum StepEnd {
    Answer,
    Continue,
    Stop(Stop),
}

/// Remember the tools a successful `find_tools` call returned.
fn note_found(conv: &mut Conversation, name: &str, outcome: &Outcome) {
    if name != toolhost_core::catalog::FIND_TOOLS || !outcome.success {
        return;
    }
    let Some(found) = outcome.data.as_deref().and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
    else {
        return;
    };
    for t in found["tools"].as_array().into_iter().flatten() {
        if let Some(n) = t["name"].as_str() {
            conv.found.insert(n.to_string());
        }
    }
}

fn push(conv: &mut Conversation, m: Message, events: Sink<'_>) {
    conv.messages.push(m.clone());
    events(Event::Message(m));
}

fn outcome_json(o: &Outcome) -> String {
    serde_json::to_string(o).unwrap_or_else(|_| "{\"success\":false}".into())
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

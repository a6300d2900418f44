//! One step's tool calls: run those of a reply (native `tool_calls`, or `[TOOL]` calls in the
//! text), each through the executor, their results appended to the conversation, and a
//! failing call the model keeps repeating stopped.

use super::{
    Agent, CANCELLED, Cancel, Conversation, Event, Message, Reply, Sink, Stop, display_args, push, shorten,
};
use crate::{openai, text};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::executor::{self, CallControl, Progress, ProgressSink};
use toolhost_core::executor::{CallRequest, ErrorKind, Outcome, PreparedCall};

impl Agent {
    pub(super) async fn run_native(
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
            let ctx = Agent::caller();
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

    pub(super) async fn run_text(
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
                    let outcome = self.text_call(call, &n.to_string(), cancel, events).await;
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

    /// Prepare and run one `[TOOL]` call (event id `id`), unless `cancel` fired before it.
    async fn text_call(
        &self,
        call: &toolhost_core::ToolCall,
        id: &str,
        cancel: &Cancel,
        events: Sink<'_>,
    ) -> Outcome {
        if cancel.is_cancelled() {
            return Outcome::err(ErrorKind::Cancelled, CANCELLED);
        }
        match self.executor.prepare(CallRequest::Positional(call), &Agent::caller()).await {
            Ok(p) => self.call(id, &p, cancel, events).await,
            Err(refused) => refused,
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
        let ctx = Agent::caller();
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

pub(super) enum StepEnd {
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

/// The outcome as the model reads it: the seed contract, without the operator's `usage` (what
/// OpenAI's `tool` messages carry too).
fn outcome_json(o: &Outcome) -> String {
    o.model_json()
}

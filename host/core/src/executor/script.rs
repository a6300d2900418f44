//! Code mode's `run_script`: the script in a fresh runner sandbox (its memory and time limits,
//! no WASI), and each `tools.NAME(args)` it makes as a full call through this executor — the
//! same caller, identity, policy, grants, danger policy, quotas and audit (the script's call
//! its parent) as if the model had made it. Inner calls run one at a time, in the order the
//! script makes them; dropping the script's call (a cancel, a timeout) drops the inner call
//! in flight.

use super::prepare::PreparedCall;
use super::*;
use crate::script::{Answer, Failure, InnerCall};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;
use wasmtime::component::{InstancePre, Linker};

/// What the script's inner calls came to so far.
#[derive(Default)]
struct Tally {
    calls: u32,
    busy_us: u64,
    /// Tools refused in this script (`denied`, `forbidden`): never asked or run again by it.
    refused: HashSet<String>,
}

impl Executor {
    /// Run the script of `prepared` (call number `id`) on behalf of `ctx`. Boxed as a trait
    /// object: its inner calls are calls, whose futures hold this one.
    pub(super) fn run_script<'a>(
        &'a self,
        prepared: &'a PreparedCall<'_>,
        confirm: &'a dyn Confirm,
        ctx: &'a CallContext,
        id: u64,
        control: &'a CallControl,
        approved: HashSet<String>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(self.script_call(prepared, confirm, ctx, id, control, approved))
    }

    /// Where no one can be asked while a script runs (`Confirm::asks_in_the_moment` is false:
    /// a 2026-07-28 stateless request), the tools its first lines declare (`// confirm: a, b`)
    /// that would be asked about ([`crate::view::ToolView`]'s policy is `ask`) are asked about
    /// once, before it runs: one question, bound to the exact script and runner. The tools
    /// approved are then not asked about again in this script (each is still under the rest of
    /// its policy, and a tool it calls undeclared is refused). Elsewhere nothing is asked here:
    /// each dangerous inner call is asked when the script makes it.
    pub(super) async fn confirm_declared(
        &self,
        prepared: &PreparedCall<'_>,
        confirm: &dyn Confirm,
        note: &Noter<'_>,
    ) -> Result<HashSet<String>, Outcome> {
        if confirm.asks_in_the_moment() {
            return Ok(HashSet::new());
        }
        let code = prepared.call.args.first().map(String::as_str).unwrap_or_default();
        let asked: Vec<String> = crate::script::declared_tools(code)
            .into_iter()
            .filter(|name| {
                prepared.registry.lookup(name).is_some_and(|entry| {
                    crate::view::ToolView::new(entry, &self.config).call_policy == Some(DangerPolicy::Ask)
                })
            })
            .collect();
        if asked.is_empty() {
            return Ok(HashSet::new());
        }
        let req = DangerRequest {
            tool: crate::script::RUN_SCRIPT.into(),
            plugin: "toolhost".into(),
            args: prepared.call.args.clone(),
            plugin_hash: crate::script::runner_hash(),
            notes: vec![format!(
                "the script declares these tools, which need your confirmation; approved, it may call them \
                 without asking again: {}",
                asked.join(", ")
            )],
        };
        let confirm: &dyn Confirm =
            if prepared.answerable() { confirm } else { &super::policy::NotThisCaller };
        let decision = confirm.confirm(&req).await;
        let by = confirm.decided_by();
        let decided = |decision| note(&|r| r.danger = Some(DangerRecord { decision, by }));
        match decision {
            Decision::Deny(why) => {
                decided(if confirm.pending() { DangerDecision::Asked } else { DangerDecision::Deny });
                Err(Outcome::err(ErrorKind::Denied, why))
            }
            Decision::Allow => {
                decided(DangerDecision::Allow);
                Ok(asked.into_iter().collect())
            }
        }
    }

    async fn script_call(
        &self,
        prepared: &PreparedCall<'_>,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        id: u64,
        control: &CallControl,
        approved: HashSet<String>,
    ) -> Outcome {
        let settings = &self.config.code_mode;
        let code = prepared.call.args.first().map(String::as_str).unwrap_or_default();
        let runner = match self.script_runner().await {
            Ok(r) => r,
            Err(o) => return o,
        };
        let started = std::time::Instant::now();
        let deadline = started + Duration::from_millis(settings.timeout_ms);
        // A sandbox of the pool's share for scripts; waiting for one is part of the time limit.
        let Ok(Ok(_permit)) = tokio::time::timeout_at(deadline.into(), self.scripts.acquire()).await else {
            return Outcome::err(
                ErrorKind::Busy,
                format!(
                    "all {} script sandboxes stayed busy for the script's time limit ([code_mode] concurrency)",
                    settings.concurrency
                ),
            );
        };
        let door = Arc::new(Door::default());
        let mut store = self.script_store(ScriptState {
            door: door.clone(),
            started,
            deadline,
            limiter: MemoryLimiter::new(settings.memory_mb),
        });
        let guest = std::pin::pin!(BusyTimed::new(Box::pin(async move {
            let ran = run_runner(&mut store, &runner.pre, code).await;
            (ran, store.data().limiter.hit, store.data().limiter.peak_bytes())
        })));
        let mut tally = Tally::default();
        let inner = InnerConfirm { outer: confirm, approved, refused_here: AtomicBool::new(false) };
        // Its inner calls: the same caller, this call their parent (in the audit trail, and in
        // OpenTelemetry the children of its span).
        let trace_parent = crate::telemetry::current_parent().or(ctx.trace_parent);
        let parent = CallContext { parent: Some(id), trace_parent, ..ctx.clone() };
        let answered = AtomicU64::new(0);
        // In a block of its own: the driver's borrow of the tally ends with the script.
        let ran = {
            let driver = std::pin::pin!(async {
                loop {
                    let call = std::future::poll_fn(|_| door.call()).await;
                    let answer = self.inner_call(&call, &inner, &parent, &mut tally).await;
                    door.answer(answer);
                    answered.fetch_add(1, Ordering::Relaxed);
                    if let Some(sink) = &control.progress {
                        let plural = if tally.calls == 1 { "" } else { "s" };
                        let message =
                            format!("{} tool call{plural} made; the last: {}", tally.calls, call.name);
                        sink.report(&Progress { done: u64::from(tally.calls), total: None, message }).await;
                    }
                }
            });
            tokio::time::timeout(
                Duration::from_millis(settings.timeout_ms) + super::run::WALL_CLOCK_GRACE,
                one_task(guest, driver, &answered),
            )
            .await
        };
        let wall = started.elapsed();
        let ((ran, memory_hit, peak), busy, _) = match ran {
            Ok(ran) => ran,
            Err(_) => return self.script_timeout(&tally),
        };
        let mut outcome = match ran {
            Ok(answer) => self.script_answer(answer, memory_hit, &tally),
            Err(e) => self.script_trapped(&e, memory_hit, &tally),
        };
        outcome.usage = Some(Usage {
            busy_us: micros(busy) + tally.busy_us,
            wall_us: micros(wall),
            peak_memory_kb: peak / 1024,
            inner_calls: tally.calls,
            ..Usage::default()
        });
        outcome
    }

    /// A store for one script: its memory limit, and its deadline checked at each epoch tick
    /// (a busy script yields to the other tasks in between).
    fn script_store(&self, state: ScriptState) -> Store<ScriptState> {
        let mut store = Store::new(&self.runtime.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_callback(|s| {
            Ok(if std::time::Instant::now() >= s.data().deadline {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Yield(1)
            })
        });
        store.set_epoch_deadline(1);
        store
    }

    /// The runner, compiled and linked on the first script (off the async workers: compiling
    /// takes seconds when the compile cache is cold).
    async fn script_runner(&self) -> Result<Arc<Runner>, Outcome> {
        if let Some(r) = self.script.get() {
            return r.clone().map_err(|e| Outcome::err(ErrorKind::HostError, e));
        }
        let runtime = self.runtime.clone();
        let built = tokio::task::spawn_blocking(move || Runner::new(&runtime))
            .await
            .map_err(anyhow::Error::from)
            .and_then(|r| r)
            .map(Arc::new)
            .map_err(|e| {
                format!("code mode cannot start its script sandbox: {}", crate::registry::chain(&e))
            });
        let kept = self.script.get_or_init(|| built).clone();
        kept.map_err(|e| Outcome::err(ErrorKind::HostError, e))
    }

    /// One `tools.NAME(args)` of a script, as a full call of its caller (`parent`).
    async fn inner_call(
        &self,
        call: &InnerCall,
        confirm: &InnerConfirm<'_>,
        parent: &CallContext,
        tally: &mut Tally,
    ) -> Result<String, Failure> {
        let fail = |kind: &str, message: String| Err(Failure { kind: kind.into(), message });
        let max = self.config.code_mode.max_calls;
        if tally.calls >= max {
            return fail(
                "too_many_calls",
                format!(
                    "a script may make at most {max} tool calls ([code_mode] max_calls); this one was not made"
                ),
            );
        }
        if call.name == crate::script::RUN_SCRIPT {
            return fail("unknown_tool", "a script cannot run a script: call the tools themselves".into());
        }
        if tally.refused.contains(&call.name) {
            return fail(
                "denied",
                format!("`{}` was refused earlier in this script, and a script cannot ask again", call.name),
            );
        }
        let args: serde_json::Value = match serde_json::from_str(&call.args) {
            Ok(v) => v,
            Err(e) => return fail("bad_arguments", format!("the arguments are not JSON: {e}")),
        };
        tally.calls += 1;
        let positional;
        let request = match &args {
            serde_json::Value::Object(map) => CallRequest::Named { name: &call.name, args: map },
            serde_json::Value::Array(items) => {
                let args = items.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
                positional = ToolCall { name: call.name.clone(), args: args.collect() };
                CallRequest::Positional(&positional)
            }
            _ => return fail("bad_arguments", "arguments are an object (by name) or a list".into()),
        };
        confirm.refused_here.store(false, Ordering::Relaxed);
        let outcome = match self.prepare(request, parent).await {
            Ok(prepared) => {
                // Boxed as a trait object: a call's future holds this one (the recursion).
                let run: std::pin::Pin<Box<dyn Future<Output = Outcome> + Send + '_>> =
                    Box::pin(self.run(&prepared, confirm, parent, &NO_CONTROL));
                run.await
            }
            Err(refused) => refused,
        };
        tally.busy_us += outcome.usage.as_ref().map_or(0, |u| u.busy_us);
        if outcome.success {
            return Ok(inner_value(&outcome));
        }
        let kind = outcome.kind.unwrap_or(ErrorKind::ToolError);
        if matches!(kind, ErrorKind::Denied | ErrorKind::Forbidden) {
            tally.refused.insert(call.name.clone());
        }
        fail(kind.as_str(), outcome.text().to_string())
    }

    /// A script's answer as the meta-tool's outcome: its value, console output and calls; or
    /// its error with its line and column.
    fn script_answer(&self, answer: String, memory_hit: bool, tally: &Tally) -> Outcome {
        let answer: Answer = match serde_json::from_str(&answer) {
            Ok(a) => a,
            Err(e) => {
                return Outcome::err(
                    ErrorKind::HostError,
                    format!("the script runner's answer is not readable: {e}"),
                );
            }
        };
        let (console, _) = truncate(answer.logs.join("\n"), self.config.code_mode.log_bytes);
        if !answer.ok && memory_hit {
            // QuickJS turned the refused growth into an exception the script did not survive.
            return self.script_out_of_memory(tally);
        }
        if !answer.ok {
            let Some(error) = answer.error else {
                return Outcome::err(
                    ErrorKind::HostError,
                    "the script runner failed without an error".to_string(),
                );
            };
            let mut text = format!("{error}");
            if let (Some(tool), Some(kind)) = (&error.tool, &error.tool_kind) {
                text.push_str(&format!(" (an uncaught failure of `{tool}`: {kind})"));
            }
            text.push_str(&format!("\n[{} tool calls made]", tally.calls));
            if !console.is_empty() {
                text.push_str(&format!("\nconsole:\n{console}"));
            }
            return Outcome::err(ErrorKind::ToolError, text);
        }
        // What the inner calls cost, for the model too: how many, and their busy time.
        let data = serde_json::json!({
            "result": answer.value,
            "console": console,
            "calls": tally.calls,
            "calls_busy_ms": (tally.busy_us as f64 / 100.0).round() / 10.0,
        });
        let (data, cut) = truncate(data.to_string(), self.config.limits.output_limit);
        Outcome::ok(data, cut)
    }

    /// The script's sandbox trapped: its memory or time limit, or a crash of the runner.
    fn script_trapped(&self, e: &wasmtime::Error, memory_hit: bool, tally: &Tally) -> Outcome {
        let settings = &self.config.code_mode;
        if memory_hit || e.downcast_ref::<MemoryLimitExceeded>().is_some() {
            return self.script_out_of_memory(tally);
        }
        if let Some(Trap::Interrupt) = e.downcast_ref::<Trap>() {
            return self.script_timeout(tally);
        }
        let limits =
            Limits { timeout_ms: settings.timeout_ms, memory_mb: settings.memory_mb, ..self.config.limits };
        super::run::classify_trap("the script", limits, e, false, "")
    }

    fn script_out_of_memory(&self, tally: &Tally) -> Outcome {
        Outcome::err(
            ErrorKind::MemoryLimit,
            format!(
                "the script was stopped: it went past its memory limit of {} MiB ([code_mode] memory_mb) after {} tool calls",
                self.config.code_mode.memory_mb, tally.calls
            ),
        )
    }

    fn script_timeout(&self, tally: &Tally) -> Outcome {
        Outcome::err(
            ErrorKind::Timeout,
            format!(
                "the script was stopped: it ran past its time limit of {} ms ([code_mode] timeout_ms) after {} tool calls",
                self.config.code_mode.timeout_ms, tally.calls
            ),
        )
    }
}

/// The script and its driver polled as one future: when the driver has answered an inner call,
/// the script is resumed at once, in the same poll, rather than woken through the scheduler
/// (each inner call would otherwise cost a trip back to the runtime and down every future that
/// holds this one); and the driver is polled each time the script suspends, so the [`Door`]
/// between them needs no waker. The script still yields at its epoch ticks.
async fn one_task<T>(
    mut guest: std::pin::Pin<&mut impl Future<Output = T>>,
    mut driver: std::pin::Pin<&mut impl Future<Output = ()>>,
    answered: &AtomicU64,
) -> T {
    std::future::poll_fn(|cx| {
        loop {
            if let std::task::Poll::Ready(ran) = guest.as_mut().poll(cx) {
                return std::task::Poll::Ready(ran);
            }
            let before = answered.load(Ordering::Relaxed);
            if driver.as_mut().poll(cx).is_ready() {
                unreachable!("the driver never ends while the script runs");
            }
            if answered.load(Ordering::Relaxed) == before {
                return std::task::Poll::Pending;
            }
        }
    })
    .await
}

/// What a script's store holds: the way to its inner calls, its clock, its deadline and its
/// memory limit. Nothing else: the runner imports no WASI.
struct ScriptState {
    /// Inner calls go to the executor's driver of this script through it.
    door: Arc<Door>,
    started: Instant,
    deadline: Instant,
    limiter: MemoryLimiter,
}

/// Where a script's inner call passes to its driver and its answer back: one call at a time
/// (the runner makes one and waits for its answer). Neither side registers a waker: the
/// script and its driver are polled as one ([`one_task`]), the driver each time the script
/// suspends and the script each time the driver answered, so handing a call over costs no
/// wake-up through the runtime. (This holds while the runner's import is a host future polled
/// on the script's fiber, as without wasmtime's `component-model-async`: with it, look again.)
#[derive(Default)]
struct Door(Mutex<Turn>);

#[derive(Default)]
enum Turn {
    #[default]
    Idle,
    Asked(InnerCall),
    Answered(Result<String, Failure>),
}

impl Door {
    fn turn(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The script makes `call` (its import is synchronous in the runner: one at a time).
    fn ask(&self, call: InnerCall) {
        let mut turn = self.turn();
        debug_assert!(matches!(*turn, Turn::Idle), "a script's call made before the last was answered");
        *turn = Turn::Asked(call);
    }

    /// The driver takes the call the script made, if it made one.
    fn call(&self) -> Poll<InnerCall> {
        let mut turn = self.turn();
        match std::mem::take(&mut *turn) {
            Turn::Asked(call) => Poll::Ready(call),
            other => {
                *turn = other;
                Poll::Pending
            }
        }
    }

    /// The driver answers the call it took.
    fn answer(&self, answer: Result<String, Failure>) {
        let mut turn = self.turn();
        debug_assert!(matches!(*turn, Turn::Idle), "an answer given twice, or to no call");
        *turn = Turn::Answered(answer);
    }

    /// The script takes the answer to its call, once given.
    fn answered(&self) -> Poll<Result<String, Failure>> {
        let mut turn = self.turn();
        match std::mem::take(&mut *turn) {
            Turn::Answered(answer) => Poll::Ready(answer),
            other => {
                *turn = other;
                Poll::Pending
            }
        }
    }
}

/// The runner component (`crate::script::RUNNER`), compiled and linked once per host.
pub(super) struct Runner {
    pre: InstancePre<ScriptState>,
}

impl Runner {
    /// Compile (or load from the compile cache) and link the runner: its only imports are
    /// `call`, answered by the script's driver, and `now`.
    fn new(runtime: &crate::engine::Runtime) -> anyhow::Result<Runner> {
        let component = runtime.component("the script runner", crate::script::RUNNER)?;
        let mut linker = Linker::<ScriptState>::new(&runtime.engine);
        let mut tools = linker.instance("toolhost:script/tools@0.1.0")?;
        tools.func_wrap_async("call", |store, (name, args): (String, String)| {
            let door = store.data().door.clone();
            door.ask(InnerCall { name, args });
            Box::new(async move { Ok((std::future::poll_fn(|_| door.answered()).await,)) })
        })?;
        tools
            .func_wrap("now", |store, (): ()| Ok((store.data().started.elapsed().as_secs_f64() * 1000.0,)))?;
        Ok(Runner { pre: linker.instantiate_pre(&component)? })
    }
}

/// Run the script in a fresh instance of the runner: its JSON answer.
async fn run_runner(
    store: &mut Store<ScriptState>,
    pre: &InstancePre<ScriptState>,
    code: &str,
) -> wasmtime::Result<String> {
    let instance = pre.instantiate_async(&mut *store).await?;
    let run = instance.get_typed_func::<(&str,), (String,)>(&mut *store, "run")?;
    let (answer,) = run.call_async(&mut *store, (code,)).await?;
    Ok(answer)
}

/// An inner call's value for the script, as JSON: the structured result as it is, text that
/// is JSON parsed, other text as a string.
fn inner_value(outcome: &Outcome) -> String {
    if let Some(s) = &outcome.structured {
        return s.to_string();
    }
    let data = outcome.data.as_deref().unwrap_or_default();
    match serde_json::from_str::<serde_json::Value>(data) {
        Ok(v) if v.is_object() || v.is_array() => data.to_string(),
        _ => serde_json::Value::String(data.to_string()).to_string(),
    }
}

/// Who answers a dangerous inner call: the script's front end when it can ask a person in the
/// middle of a call; otherwise no one, and the refusal tells the model to call the tool
/// itself. A script never answers: it has no way to.
struct InnerConfirm<'a> {
    outer: &'a dyn Confirm,
    /// The tools the person approved before the script ran (see `Executor::confirm_declared`).
    approved: HashSet<String>,
    /// This inner call was refused here, not by the front end.
    refused_here: AtomicBool,
}

impl Confirm for InnerConfirm<'_> {
    fn confirm<'a>(
        &'a self,
        req: &'a DangerRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        if self.approved.contains(&req.tool) {
            return Box::pin(std::future::ready(Decision::Allow));
        }
        if !self.outer.asks_in_the_moment() {
            self.refused_here.store(true, Ordering::Relaxed);
            let why = format!(
                "`{}` needs a person's confirmation, which cannot be asked in the middle of a script here; \
                 call `{}` directly (not from run_script), or declare it in the script's first line \
                 (`// confirm: {}`) to have it asked about before the script runs",
                req.tool, req.tool, req.tool
            );
            return Box::pin(std::future::ready(Decision::Deny(why)));
        }
        Box::pin(async move {
            let mut req = req.clone();
            req.notes.push("asked for a call a script (run_script) makes".to_string());
            self.outer.confirm(&req).await
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if self.refused_here.load(Ordering::Relaxed) { DecidedBy::NoOne } else { self.outer.decided_by() }
    }

    fn grants(&self) -> Option<&dyn AskGrant> {
        self.outer.grants().filter(|_| self.outer.asks_in_the_moment())
    }

    fn asks_in_the_moment(&self) -> bool {
        self.outer.asks_in_the_moment()
    }
}

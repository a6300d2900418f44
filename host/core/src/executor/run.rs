//! One call in its sandbox: the store with each capability's per-call state, the call slot, the
//! guest's run under its deadline, and what came of it (outcome, usage, refusals).

use super::*;
use crate::capability::{Asked, CallSetup, Calls};
use toolhost_spec::manifest::FsMode;

/// Epoch ticks a guest runs between yields to the async runtime: one, 5–9 ms (a tick may wait
/// for the kernel's own, see `engine::TICK`), so a cancelled busy guest stops within 10 ms. A
/// short call a tick happens to land in yields once, at once (a few µs, for about one call in
/// a thousand of 10 µs).
const YIELD_TICKS: u64 = 1;
/// Extra wall-clock time past the epoch deadline before the guard fires (covers host calls
/// that block, such as a guest sleeping, which epochs cannot interrupt).
pub(super) const WALL_CLOCK_GRACE: Duration = Duration::from_millis(500);

/// What the guest's run returned, how long it was busy, and when it ended.
type GuestRun = (
    Result<wasmtime::Result<Result<String, String>>, tokio::time::error::Elapsed>,
    Duration,
    std::time::Instant,
);

impl Executor {
    /// One run of `entry` with `args` in a fresh sandbox: the plugin's grants with what a human
    /// granted for this call (`extra`), a call slot, each capability's part of the call, the
    /// guest's run, and what came of it.
    pub(super) async fn run_sandbox(
        &self,
        entry: &ToolEntry,
        args: &[String],
        limits: Limits,
        watch: Watch<'_>,
        extra: &[crate::settings::GrantItem],
    ) -> Ran {
        let plugin = &entry.plugin;
        let workspace = (!extra.is_empty()).then(|| self.config.workspace_grant(FsMode::ReadWrite));
        let grants = match &workspace {
            None => std::borrow::Cow::Borrowed(&plugin.grants),
            Some(workspace) => {
                plugin.grants.with_asked(&Asked { items: extra, workspace, secrets: &self.config.secrets })
            }
        };
        let code = match self.linked(plugin, || format!("tool `{}`", entry.spec().name)).await {
            Ok(code) => code,
            Err(o) => return Ran::only(o),
        };
        let (stdout, stderr) = CappedPipe::pair(STDIO_CAPTURE_BYTES);
        let wasi = match crate::sandbox::wasi_ctx(&grants, stdout.clone(), stderr.clone()) {
            Ok(w) => w,
            Err(e) => {
                let why = format!("cannot set up the sandbox for `{}`: {e}", entry.spec().name);
                return Ran::only(Outcome::err(ErrorKind::HostError, why));
            }
        };
        // The deadline counts from the call's arrival: waiting for a slot is part of it.
        let arrived = std::time::Instant::now();
        let deadline = arrived + Duration::from_millis(limits.timeout_ms);
        let share = self.shares.plugin(&plugin.name, &self.config);
        let slot = match self.slot(entry, &share, arrived, deadline, watch).await {
            Ok(slot) => slot,
            Err(o) => return Ran::only(o),
        };
        // A call that found its slots free started when it arrived (no second clock read).
        let started = if slot.waited { std::time::Instant::now() } else { arrived };
        let setup = CallSetup {
            plugin: &plugin.name,
            tool: entry.shared_name(),
            limits: &limits,
            deadline,
            config: &self.config,
            workspace: &self.workspace,
            log_bucket: Some(share.log.clone()),
            kv: &self.kv,
            session: watch.ctx.session.as_ref(),
            principal: watch.ctx.principal.as_ref(),
        };
        // Moved once, into the store (the call's state is large: every move of it is a copy).
        let state =
            HostState::new(wasi, MemoryLimiter::new(limits.memory_mb), Calls::prepare(&grants, &setup));
        let watched = watch.sink.is_some() || watch.observer.is_some();
        let (mut store, progress) = self.new_store(state, watched);
        let forwarder = progress.map(|rx| control::Forwarder::new(rx, move |p: Progress| watch.deliver(p)));
        let (result, busy, ended) =
            run_guest(&mut store, &code.tools, entry, args, deadline, forwarder.as_ref()).await;
        let times = (busy, started.duration_since(arrived), ended - started);
        let ran = self.ran(store, entry, &limits, result, times, (stdout, stderr));
        drop(slot);
        ran
    }

    /// The plugin's linked code: a plugin loaded from the warm compile cache is linked on first
    /// use (see `registry::Code`), off the async workers, as it blocks for about a millisecond.
    pub(super) async fn linked<'e>(
        &self,
        plugin: &'e Arc<LoadedPlugin>,
        what: impl FnOnce() -> String,
    ) -> Result<&'e crate::engine::Linked, Outcome> {
        if !plugin.code.is_ready() {
            let p = plugin.clone();
            let _ = tokio::task::spawn_blocking(move || p.code.get().map(drop).map_err(str::to_string)).await;
        }
        plugin.code.get().map_err(|e| Outcome::err(ErrorKind::HostError, format!("{}: {e}", what())))
    }

    /// The call's store: its memory limit, its deadline, and its progress `watched` when someone
    /// follows it (a front end's sink, an observer): the reports' receiver then.
    pub(super) fn new_store(
        &self,
        state: HostState,
        watched: bool,
    ) -> (Store<HostState>, Option<tokio::sync::watch::Receiver<Option<Progress>>>) {
        let mut store = Store::new(&self.runtime.engine, state);
        let progress = watched.then(|| {
            let (p, rx) = ProgressCall::watched();
            store.data_mut().calls.progress = p;
            rx
        });
        store.limiter(|s| &mut s.limiter);
        // Every few ticks the guest yields to the async runtime (so a busy guest cannot starve
        // other calls or the host's own tasks); past its deadline it is interrupted. The
        // deadline is read from the store (the call's `NetCall` holds it): the callback
        // captures nothing, so wasmtime boxes a zero-sized closure, without allocating.
        store.epoch_deadline_callback(|s| {
            Ok(if std::time::Instant::now() >= s.data().calls.net.deadline {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Yield(YIELD_TICKS)
            })
        });
        store.set_epoch_deadline(YIELD_TICKS);
        (store, progress)
    }

    /// What the finished run came to: its outcome (output redacted and cut, or the failure
    /// classified), its usage, what the host refused it and the paths it tried outside its
    /// grants; the guest's stdout and stderr to the host's log.
    fn ran(
        &self,
        mut store: Store<HostState>,
        entry: &ToolEntry,
        limits: &Limits,
        result: Result<wasmtime::Result<Result<String, String>>, tokio::time::error::Elapsed>,
        (busy, queued, wall): (Duration, Duration, Duration),
        (stdout, stderr): (CappedPipe, CappedPipe),
    ) -> Ran {
        let (plugin, spec) = (&entry.plugin, entry.spec());
        let calls = &mut store.data_mut().calls;
        let mut refused = std::mem::take(&mut calls.net.refused);
        refused.append(&mut calls.exec.refused);
        refused.append(&mut calls.kv.refused);
        let outside = std::mem::take(&mut calls.fs.paths);
        let net = calls.net.grant.clone();
        let memory_hit = store.data().limiter.hit;
        let usage = self.usage(store.data(), limits, busy, queued, wall);
        drop(store);
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let (out, err) = (redact_owned(out, &net), redact_owned(err, &net));
        // A path is the guest's text too: it may hold a secret.
        let outside: Vec<String> = outside.into_iter().map(|p| redact_owned(p, &net)).collect();
        log_stdio(&plugin.name, &spec.name, "stdout", &out, out_dropped);
        log_stdio(&plugin.name, &spec.name, "stderr", &err, err_dropped);
        let mut outcome = outcome_of(entry, limits, result, &net, memory_hit, &err);
        if let Some(q) = &usage.quota {
            // The plugin failed after its quota stopped a write: say which limit, and how to
            // raise it (a plugin that carried on and succeeded has it in `usage` only).
            let (plugin, tool) = (plugin.name.to_string(), spec.name.clone());
            outcome.add_note(Note::Quota { plugin, tool, limit: q.clone() });
        }
        outcome.usage = Some(usage);
        Ran { outcome, refused, outside }
    }

    /// A slot of `share`: a free one at once, or one waited for (see [`Self::wait_for_slot`]).
    async fn slot<'a>(
        &'a self,
        entry: &ToolEntry,
        share: &'a slots::PluginShare,
        arrived: std::time::Instant,
        deadline: std::time::Instant,
        watch: Watch<'_>,
    ) -> Result<slots::Slot<'a>, Outcome> {
        match self.shares.try_acquire(share) {
            Some(slot) => Ok(slot),
            None => self.wait_for_slot(entry, share, arrived, deadline, watch).await,
        }
    }

    /// Wait for a slot of `share` until `deadline` — if the observer lets the call wait (it
    /// refuses when too many calls wait already: `busy` at once), and only while its client is
    /// there: a call whose client went away ([`CallControl::gone`]) is dropped before it runs.
    async fn wait_for_slot<'a>(
        &'a self,
        entry: &ToolEntry,
        share: &'a slots::PluginShare,
        arrived: std::time::Instant,
        deadline: std::time::Instant,
        watch: Watch<'_>,
    ) -> Result<slots::Slot<'a>, Outcome> {
        let (plugin, tool) = (&entry.plugin.name, &entry.spec().name);
        let place = match self.observer.get().map(|o| o.wait(watch.call, watch.ctx)) {
            Some(Err(why)) => {
                // Not louder: a flood of refusals must not flood the log.
                tracing::debug!(plugin = &**plugin, tool, "call refused: {why}");
                return Err(Outcome::err(ErrorKind::Busy, why));
            }
            Some(Ok(place)) => place,
            None => None,
        };
        let acquire = self.shares.acquire(share, deadline.into());
        let acquired = match watch.gone {
            None => acquire.await,
            Some(gone) => tokio::select! {
                biased;
                () = gone.cancelled() => {
                    let o = gone.gone_outcome(tool, arrived.elapsed().as_millis());
                    tracing::info!(plugin = &**plugin, tool, "{}", o.text());
                    return Err(o);
                }
                acquired = acquire => acquired,
            },
        };
        drop(place);
        acquired.map_err(|busy| {
            Outcome::err(ErrorKind::Busy, busy.message(plugin, tool, arrived.elapsed().as_millis()))
        })
    }

    /// The cost of the call, from the store's meters; logs what the log limits dropped.
    pub(super) fn usage(
        &self,
        state: &HostState,
        limits: &Limits,
        busy: Duration,
        queued: Duration,
        wall: Duration,
    ) -> Usage {
        let calls = &state.calls;
        let log = &calls.log.budget;
        if let Some(note) = log.dropped_note(limits, self.config.log_rate) {
            tracing::warn!(plugin = &**state.plugin(), tool = &**state.tool(), "{note}");
        }
        Usage {
            busy_us: micros(busy),
            wall_us: micros(wall),
            queued_us: micros(queued),
            peak_memory_kb: state.limiter.peak_bytes() / 1024,
            written_bytes: calls.quota.written(),
            created: calls.quota.created(),
            http_requests: calls.net.requests,
            http_sent_bytes: calls.net.sent_bytes,
            http_received_bytes: calls.net.received_bytes,
            log_lines: log.lines,
            log_dropped: log.dropped_lines,
            kv_ops: calls.kv.ops,
            kv_written_bytes: calls.kv.written_bytes,
            quota: calls.quota.hit().map(|h| calls.quota.message(h)),
            inner_calls: 0,
        }
    }
}

/// What one run in the sandbox came to: its outcome, what the host refused it (for a grant
/// question and the outcome's note), and the paths it tried outside its grants.
pub(super) struct Ran {
    pub(super) outcome: Outcome,
    pub(super) refused: Vec<Refusal>,
    pub(super) outside: Vec<String>,
}

impl Ran {
    /// A run that ended before the guest did anything.
    fn only(outcome: Outcome) -> Ran {
        Ran { outcome, refused: Vec::new(), outside: Vec::new() }
    }
}

/// One call as those around it see it: who made it (and whether they are still there, for a
/// call waiting for a slot), and who follows its progress — the front end's sink and the
/// observer.
#[derive(Clone, Copy)]
pub(super) struct Watch<'a> {
    pub(super) call: &'a ToolCall,
    pub(super) ctx: &'a CallContext,
    pub(super) gone: Option<&'a Cancel>,
    pub(super) id: u64,
    pub(super) sink: Option<&'a Arc<dyn ProgressSink>>,
    pub(super) observer: Option<&'a Arc<dyn CallObserver>>,
}

impl Watch<'_> {
    async fn deliver(self, p: Progress) {
        if let Some(o) = self.observer {
            o.progress(self.id, self.call, &p);
        }
        if let Some(s) = self.sink {
            s.report(&p).await;
        }
    }
}

/// Run the guest's tool `entry` with `args` in `store` until `deadline` (and a grace past it for
/// a host call that blocks), its progress forwarded — the last report before the outcome.
async fn run_guest<F: Fn(Progress) -> Fut, Fut: Future<Output = ()>>(
    store: &mut Store<HostState>,
    pre: &crate::engine::PluginPre<HostState>,
    entry: &ToolEntry,
    args: &[String],
    deadline: std::time::Instant,
    forwarder: Option<&control::Forwarder<F>>,
) -> GuestRun {
    // On the heap: wasmtime's instantiation and call futures are most of a call's future
    // (several KiB), and every `async fn` layer above this one would otherwise copy them once
    // more per call; one allocation copies them once.
    let run = Box::pin(async {
        let instance = pre.instantiate_async(&mut *store).await?;
        // The plugin is called with its own name for the tool, whatever it is exposed as.
        instance.toolhost_plugin_tools().call_call(&mut *store, entry.own_name(), args).await
    });
    // From the deadline already computed: no clock read.
    let guard = tokio::time::Instant::from_std(deadline + WALL_CLOCK_GRACE);
    let guest = std::pin::pin!(tokio::time::timeout_at(guard, run));
    let guest = BusyTimed::new(guest);
    match forwarder {
        None => guest.await,
        Some(f) => f.around(guest).await,
    }
}

/// The outcome of a finished run: the tool's result (a granted secret's value never reaches
/// the model, whatever the plugin did; cut at the output limit, or checked against its
/// `outputSchema`), its error, or its failure classified (timeout, trap, memory).
fn outcome_of(
    entry: &ToolEntry,
    limits: &Limits,
    result: Result<wasmtime::Result<Result<String, String>>, tokio::time::error::Elapsed>,
    net: &NetGrant,
    memory_hit: bool,
    stderr: &str,
) -> Outcome {
    let (spec, limit) = (entry.spec(), limits.output_limit);
    match result {
        Err(_elapsed) => Outcome::err(ErrorKind::Timeout, timeout_message(&what(spec), *limits)),
        Ok(Ok(Ok(data))) => {
            let data = redact_owned(data, net);
            match entry.output_validator() {
                Some(Ok(validator)) => structured_outcome(spec, validator, data, limit),
                Some(Err(e)) => Outcome::err(ErrorKind::HostError, e.to_string()),
                None => {
                    let (data, truncated) = truncate(data, limit);
                    Outcome::ok(data, truncated)
                }
            }
        }
        Ok(Ok(Err(message))) => {
            let message = outcome::without_os_error_numbers(&message);
            Outcome::err(ErrorKind::ToolError, truncate(redact_owned(message, net), limit).0)
        }
        Ok(Err(e)) => classify_trap(&what(spec), *limits, &e, memory_hit, stderr),
    }
}

/// How messages name a tool's run: ``tool `NAME` ``.
fn what(spec: &ToolSpec) -> String {
    format!("tool `{}`", spec.name)
}

/// `what` (``tool `NAME` ``, ``resource URI``) ran out of time.
pub(super) fn timeout_message(what: &str, limits: Limits) -> String {
    format!("{what} timed out after {} ms (limit: timeout_ms)", limits.timeout_ms)
}

/// A run of `what` (see [`timeout_message`]) that trapped, classified.
pub(super) fn classify_trap(
    what: &str,
    limits: Limits,
    e: &wasmtime::Error,
    memory_hit: bool,
    stderr: &str,
) -> Outcome {
    if memory_hit || e.downcast_ref::<MemoryLimitExceeded>().is_some() {
        return Outcome::err(
            ErrorKind::MemoryLimit,
            format!("{what} exceeded its memory limit of {} MiB (limit: memory_mb)", limits.memory_mb),
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Outcome::err(ErrorKind::Timeout, timeout_message(what, limits)),
        Some(Trap::StackOverflow) => Outcome::err(
            ErrorKind::StackOverflow,
            format!("{what} overflowed its wasm stack (too deep recursion)"),
        ),
        trap => {
            let trap = trap
                .map(|t| t.to_string())
                .unwrap_or_else(|| e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": "));
            // A Rust guest's panic is on its stderr just before the trap: `thread '…' panicked
            // at FILE:LINE:COL:` and the message on the next line.
            let lines: Vec<&str> = stderr.lines().collect();
            let panic = lines.iter().rposition(|l| l.contains("panicked")).map(|i| {
                let mut p = lines[i].trim().to_string();
                if p.ends_with(':')
                    && let Some(next) = lines.get(i + 1)
                {
                    p.push(' ');
                    p.push_str(next.trim());
                }
                p
            });
            let mut msg = format!("{what} crashed: {trap}");
            if let Some(p) = panic {
                msg.push_str(&format!(" ({})", p.chars().take(500).collect::<String>()));
            }
            Outcome::err(ErrorKind::Trap, msg)
        }
    }
}

pub(super) fn log_stdio(plugin: &str, tool: &str, stream: &str, text: &str, dropped: usize) {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        tracing::info!(plugin, tool, stream, "{line}");
    }
    if dropped > 0 {
        tracing::info!(plugin, tool, stream, "… {dropped} more bytes dropped");
    }
}

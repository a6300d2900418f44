//! One run of a plugin's export other than a tool call — a resource read, a prompt got, an
//! argument completed — in a fresh sandbox, as a tool call runs: the plugin's grants, the
//! operator's `[plugin.NAME]` limits, a slot of its share, its deadline; no questions are
//! asked. Where each export is in the component was found when its code linked
//! ([`crate::engine::Linked`]; a component of the world `plugin` has none of them).

use super::*;
use crate::bindings::{completion, prompts, resources};
use crate::capability::{CallSetup, Calls};

/// What the guest is asked.
pub(super) enum Export {
    Read(resources::ReadRequest),
    Get(prompts::GetRequest),
    Complete(completion::CompleteRequest),
}

impl Export {
    /// The export's interface name, for the message when a component lacks it.
    fn interface(&self) -> &'static str {
        match self {
            Export::Read(_) => "resources",
            Export::Get(_) => "prompts",
            Export::Complete(_) => "completion",
        }
    }

    /// The request with where its export is in `code`'s component; `None`: it has none.
    fn bind(self, code: &crate::engine::Linked) -> Option<Bound<'_>> {
        Some(match self {
            Export::Read(req) => Bound::Read(code.resources.as_ref()?, req),
            Export::Get(req) => Bound::Get(code.prompts.as_ref()?, req),
            Export::Complete(req) => Bound::Complete(code.completion.as_ref()?, req),
        })
    }
}

/// A request and its export, found.
enum Bound<'a> {
    Read(&'a resources::GuestIndices, resources::ReadRequest),
    Get(&'a prompts::GuestIndices, prompts::GetRequest),
    Complete(&'a completion::GuestIndices, completion::CompleteRequest),
}

/// What the guest answered.
pub(super) enum Answer {
    Read(resources::Contents),
    Get(prompts::Prompt),
    Complete(Vec<String>),
}

/// Why a run gave no answer: out of time or memory, a trap, no slot, no such export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub kind: ErrorKind,
    pub message: String,
}

impl RunFailure {
    /// An answer of another export than the one asked (which the bindings make impossible).
    pub(super) fn mismatched(what: &str) -> RunFailure {
        RunFailure {
            kind: ErrorKind::HostError,
            message: format!("{what}: the plugin answered another export"),
        }
    }
}

impl From<Outcome> for RunFailure {
    fn from(o: Outcome) -> RunFailure {
        RunFailure { kind: o.kind.unwrap_or(ErrorKind::HostError), message: o.text().to_string() }
    }
}

/// A finished run: the guest's answer or its error message (secrets redacted, OS error numbers
/// gone), what it cost, and the secrets to redact from what it answered.
pub(super) struct ExportRan {
    pub(super) answer: Result<Answer, String>,
    pub(super) usage: Usage,
    pub(super) net: Arc<NetGrant>,
}

/// What one guest export returned within its deadline.
type GuestAnswer = Result<wasmtime::Result<Result<Answer, String>>, tokio::time::error::Elapsed>;

impl Executor {
    /// Run `export` in `plugin`: `what` names it in messages (``resource URI``, ``prompt
    /// `NAME` ``), `label` in the log (the resource's or prompt's name).
    pub(super) async fn run_export(
        &self,
        plugin: &Arc<LoadedPlugin>,
        what: &str,
        label: &str,
        export: Export,
    ) -> Result<ExportRan, RunFailure> {
        let code = self.linked(plugin, || what.to_string()).await?;
        let failed = |kind, message| RunFailure { kind, message };
        let interface = export.interface();
        let Some(bound) = export.bind(code) else {
            let why =
                format!("{what}: the plugin exports no `{interface}` interface (built before it existed?)");
            return Err(failed(ErrorKind::HostError, why));
        };
        let limits = self.config.limits_for_plugin(&plugin.name);
        let (stdout, stderr) = CappedPipe::pair(STDIO_CAPTURE_BYTES);
        let wasi = crate::sandbox::wasi_ctx(&plugin.grants, stdout.clone(), stderr.clone()).map_err(|e| {
            failed(ErrorKind::HostError, format!("cannot set up the sandbox for {what}: {e}"))
        })?;
        let arrived = std::time::Instant::now();
        let deadline = arrived + Duration::from_millis(limits.timeout_ms);
        let share = self.shares.plugin(&plugin.name, &self.config);
        let slot = match self.shares.try_acquire(&share) {
            Some(slot) => slot,
            None => self.shares.acquire(&share, deadline.into()).await.map_err(|busy| {
                failed(ErrorKind::Busy, busy.message(&plugin.name, what, arrived.elapsed().as_millis()))
            })?,
        };
        let started = std::time::Instant::now();
        let label: Arc<str> = Arc::from(label);
        let setup = CallSetup {
            plugin: &plugin.name,
            tool: &label,
            limits: &limits,
            deadline,
            config: &self.config,
            workspace: &self.workspace,
            log_bucket: Some(share.log.clone()),
            kv: &self.kv,
            // A read, a prompt or a completion belongs to no session: buckets scoped per
            // session are refused to it.
            session: None,
            // Nor is it anyone's: buckets scoped per identity are refused to it.
            principal: None,
        };
        let calls = Calls::prepare(&plugin.grants, &setup);
        let state = HostState::new(wasi, MemoryLimiter::new(limits.memory_mb), calls);
        let (mut store, _) = self.new_store(state, false);
        let run = Box::pin(invoke(&mut store, &code.tools, bound));
        let guard = tokio::time::Instant::from_std(deadline + run::WALL_CLOCK_GRACE);
        let (result, busy, ended) = BusyTimed::new(std::pin::pin!(tokio::time::timeout_at(guard, run))).await;
        let usage = self.usage(store.data(), &limits, busy, started - arrived, ended - started);
        let memory_hit = store.data().limiter.hit;
        let net = store.data().calls.net.grant.clone();
        drop((store, slot));
        let (err, dropped) = stderr.take();
        run::log_stdio(&plugin.name, &label, "stderr", &redact_owned(err.clone(), &net), dropped);
        let (out, dropped) = stdout.take();
        run::log_stdio(&plugin.name, &label, "stdout", &redact_owned(out, &net), dropped);
        let answer = judged(result, what, &limits, memory_hit, &err, &net)?;
        Ok(ExportRan { answer, usage, net })
    }
}

/// Instantiate `pre` in `store` and call the export `bound` found.
async fn invoke(
    store: &mut Store<HostState>,
    pre: &crate::engine::PluginPre<HostState>,
    bound: Bound<'_>,
) -> wasmtime::Result<Result<Answer, String>> {
    let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
    Ok(match bound {
        Bound::Read(indices, req) => {
            indices.load(&mut *store, &instance)?.call_read(&mut *store, &req).await?.map(Answer::Read)
        }
        Bound::Get(indices, req) => {
            indices.load(&mut *store, &instance)?.call_get(&mut *store, &req).await?.map(Answer::Get)
        }
        Bound::Complete(indices, req) => indices
            .load(&mut *store, &instance)?
            .call_complete(&mut *store, &req)
            .await?
            .map(Answer::Complete),
    })
}

/// The guest's answer or error message, or why the run failed: a trap, the deadline and the
/// memory limit as for a tool call.
fn judged(
    result: GuestAnswer,
    what: &str,
    limits: &Limits,
    memory_hit: bool,
    stderr: &str,
    net: &NetGrant,
) -> Result<Result<Answer, String>, RunFailure> {
    match result {
        Err(_elapsed) => {
            Err(RunFailure { kind: ErrorKind::Timeout, message: run::timeout_message(what, *limits) })
        }
        Ok(Err(trap)) => Err(run::classify_trap(what, *limits, &trap, memory_hit, stderr).into()),
        Ok(Ok(Err(message))) => {
            let message = outcome::without_os_error_numbers(&redact_owned(message, net));
            Ok(Err(truncate(message, 1000).0))
        }
        Ok(Ok(Ok(answer))) => Ok(Ok(answer)),
    }
}

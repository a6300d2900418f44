//! Running toolhost as a service (`serve`, #17): graceful shutdown ([`shutdown`]), the metrics
//! behind `/metrics` (`metrics.rs`) and the audit trail ([`audit`]).
//!
//! Whoever wants to see each call as it finishes (the console's activity feed) subscribes with
//! [`Service::subscribe_calls`]: a bounded broadcast, built only while someone listens, that
//! never slows a call (a subscriber that falls behind is told how many it missed).
//!
//! A [`Service`] is attached to the executor as its `CallObserver`
//! (`Executor::attach_observer`) and sees every call of every front end: it admits the call (or refuses it while shutting down), races it against
//! the end of the grace period, then counts it and writes its audit line. Without one (library
//! use, one-off commands without `[audit] file`), the executor runs calls exactly as before.

pub mod audit;
pub(crate) mod metrics;
pub mod places;
mod reads;
pub(crate) mod settings;
pub mod shutdown;

use arc_swap::ArcSwap;
use audit::AuditLog;
use metrics::Metrics;
use shutdown::Lifecycle;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::capability::net::{NetGrant, redact, redaction_set};
use toolhost_core::executor::observer::{CallRun, SharedRecord};
use toolhost_core::executor::{CallObserver, ErrorKind, Outcome, Progress, ToolCall};
use toolhost_core::registry::Registry;
use toolhost_core::registry::reload::Reloader;
use toolhost_core::settings::Config;

/// Arguments longer than this (in characters) are cut in the audit trail, keeping a prefix of
/// [`AUDIT_ARG_PREFIX`] characters and the SHA-256 of the whole (redacted) argument.
pub const AUDIT_ARG_MAX: usize = 256;
pub const AUDIT_ARG_PREFIX: usize = 64;

pub use settings::{AuditSettings, HttpLimits, ServeSettings};
pub use toolhost_core::executor::{CallContext, CallRecord, DangerRecord};

/// The service side of a running host: lifecycle, metrics, audit.
#[derive(Debug)]
pub struct Service {
    pub lifecycle: Lifecycle,
    pub metrics: Metrics,
    audit: Option<Arc<AuditLog>>,
    registry: Arc<ArcSwap<Registry>>,
    front_end: &'static str,
    /// Every secret the config defines (and every MCP token), to redact from audited arguments.
    secrets: NetGrant,
    /// Finished calls, for whoever subscribed ([`Service::subscribe_calls`]).
    calls: tokio::sync::broadcast::Sender<Arc<CallEvent>>,
    /// Calls that started or reported progress, for whoever subscribed
    /// ([`Service::subscribe_running`]).
    running: tokio::sync::broadcast::Sender<Arc<RunningEvent>>,
    /// When each call admitted while someone followed running calls started, and its front end.
    running_calls: std::sync::Mutex<std::collections::HashMap<u64, (std::time::SystemTime, &'static str)>>,
    /// Calls waiting for a slot (`[serve] max_waiting_calls`, `max_waiting_calls_per_peer`).
    waiting: Arc<places::Places>,
}

/// Running-call events kept for a subscriber that has not read them yet (they are only the
/// latest state of each call: one missed is replaced by the next).
pub const RUNNING_EVENTS_BUFFER: usize = 1024;

/// A call that is running, as [`Service::subscribe_running`] publishes it: when it was
/// admitted (`done` 0, no message) and at each progress report the executor forwards (at most
/// about ten a second per call, the last always). Its [`CallEvent`] with the same `id` ends it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunningEvent {
    /// The call's number ([`toolhost_core::executor::CallRecord::id`]).
    pub id: u64,
    pub tool: String,
    pub plugin: Option<Arc<str>>,
    pub front_end: &'static str,
    /// When the call was admitted.
    #[serde(serialize_with = "rfc3339")]
    pub started: std::time::SystemTime,
    pub done: u64,
    pub total: Option<u64>,
    pub message: String,
}

fn rfc3339<S: serde::Serializer>(t: &std::time::SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&audit::rfc3339(*t))
}

/// Finished calls kept for a subscriber that has not read them yet; past this it is told how
/// many it missed (`RecvError::Lagged`).
pub const CALL_EVENTS_BUFFER: usize = 4096;

/// One finished call, as [`Service::subscribe_calls`] publishes it: what the audit line says,
/// without the arguments, plus what the call cost. Cheap to build (the call path pays for it
/// while someone listens); formatted only when serialized.
#[derive(Debug, Clone)]
pub struct CallEvent {
    pub time: std::time::SystemTime,
    pub tool: String,
    /// The plugin that served it (unset: no such tool).
    pub plugin: Option<Arc<toolhost_core::registry::LoadedPlugin>>,
    pub front_end: &'static str,
    pub client: Option<String>,
    pub token: Option<String>,
    /// Who the caller authenticated as (a static token's or an OAuth principal).
    pub who: Option<Arc<toolhost_core::identity::Principal>>,
    /// `ok` or the error kind.
    pub outcome: &'static str,
    pub duration: Duration,
    pub danger: Option<DangerRecord>,
    pub truncated: bool,
    pub usage: Option<toolhost_core::usage::Usage>,
    /// The call's number: the [`RunningEvent`]s with this `id` were about this call.
    pub id: u64,
    /// The code-mode script's call this call was made by.
    pub parent: Option<u64>,
}

impl serde::Serialize for CallEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("CallEvent", 15)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("parent", &self.parent)?;
        st.serialize_field("time", &audit::rfc3339(self.time))?;
        st.serialize_field("tool", &self.tool)?;
        st.serialize_field("plugin", &self.plugin.as_ref().map(|p| &*p.name))?;
        st.serialize_field("version", &self.plugin.as_ref().map(|p| &p.manifest.version))?;
        st.serialize_field("front_end", self.front_end)?;
        st.serialize_field("client", &self.client)?;
        st.serialize_field("token", &self.token)?;
        st.serialize_field("who", &self.who)?;
        st.serialize_field("outcome", self.outcome)?;
        st.serialize_field("duration_ms", &((self.duration.as_secs_f64() * 1e6).round() / 1e3))?;
        st.serialize_field("danger", &self.danger)?;
        st.serialize_field("truncated", &self.truncated)?;
        st.serialize_field("usage", &self.usage)?;
        st.end()
    }
}

impl Service {
    /// The service for a command whose calls come from `front_end` (`mcp`, `cli`, `text`, …):
    /// opens the audit file `[audit]` names (for `serve`, the default file when none is named).
    /// A named file that cannot be opened is an error; the default one only a warning.
    pub fn for_command(
        config: &Config,
        settings: &crate::Settings,
        registry: Arc<ArcSwap<Registry>>,
        front_end: &'static str,
        serve: bool,
    ) -> anyhow::Result<Service> {
        let a = &settings.audit;
        let audit = match a.file_for(serve) {
            None => None,
            Some(path) => match AuditLog::open(&path, a.max_bytes, a.keep) {
                Ok(log) => Some(log.with_durability(a.durability)),
                Err(e) if a.file.is_some() => {
                    anyhow::bail!(
                        "[audit] file {}: cannot open it for appending: {e} (fix the path or its permissions, or set [audit] enabled = false)",
                        path.display()
                    )
                }
                Err(e) => {
                    tracing::warn!(
                        "audit trail off: cannot open the default {}: {e} (set [audit] file in toolhost.toml)",
                        path.display()
                    );
                    None
                }
            },
        };
        Ok(Service::new(config, settings, registry, front_end, audit))
    }

    /// For one-off commands (`call`, `run`, `chat`): attach a service to `host` only when
    /// `[audit] file` is set, so their calls are audited too.
    pub fn attach_audit(
        host: &toolhost_core::Toolhost,
        settings: &crate::Settings,
        front_end: &'static str,
    ) -> anyhow::Result<()> {
        if settings.audit.file_for(false).is_some() {
            let s = Service::for_command(&host.config, settings, host.registry.clone(), front_end, false)?;
            host.executor.attach_observer(Arc::new(s));
        }
        Ok(())
    }

    pub fn new(
        config: &Config,
        settings: &crate::Settings,
        registry: Arc<ArcSwap<Registry>>,
        front_end: &'static str,
        audit: Option<AuditLog>,
    ) -> Service {
        // The set telemetry redacts with too; the front ends' own secrets are in the config's
        // (`extra_secrets`) when the CLI read them, and added here for an embedder's.
        let secrets = redaction_set(config.secret_sources().chain(settings.secret_sources()));
        let mut metrics = Metrics::new();
        if let Some(a) = &audit {
            metrics.count_audit_syncs(a.syncs());
        }
        Service {
            lifecycle: Lifecycle::new(settings.serve.shutdown_grace),
            metrics,
            audit: audit.map(Arc::new),
            registry,
            front_end,
            secrets,
            calls: tokio::sync::broadcast::channel(CALL_EVENTS_BUFFER).0,
            running: tokio::sync::broadcast::channel(RUNNING_EVENTS_BUFFER).0,
            running_calls: Default::default(),
            waiting: places::Places::new(
                settings.serve.max_waiting_calls,
                settings.serve.max_waiting_calls_per_peer,
            ),
        }
    }

    /// Also redact `value`, a secret the process made itself (the local key), from audited
    /// arguments, as `[secret NAME redacted]`.
    pub fn redacting(mut self, name: &str, value: &str) -> Service {
        self.secrets.secrets.push(toolhost_core::capability::net::GrantedSecret {
            name: name.into(),
            value: value.into(),
            hosts: vec![],
        });
        self
    }

    /// Where the audit trail goes, if anywhere.
    pub fn audit_path(&self) -> Option<&Path> {
        self.audit.as_ref().map(|a| a.path())
    }

    /// The `/metrics` text.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(&self.registry.load())
    }

    /// Every call finished from now on (see [`CallEvent`]); a receiver that falls more than
    /// [`CALL_EVENTS_BUFFER`] behind is told how many it missed.
    pub fn subscribe_calls(&self) -> tokio::sync::broadcast::Receiver<Arc<CallEvent>> {
        self.calls.subscribe()
    }

    /// Every call admitted from now on and its progress (see [`RunningEvent`]); while nobody
    /// subscribes, calls' progress is not watched for the service at all.
    pub fn subscribe_running(&self) -> tokio::sync::broadcast::Receiver<Arc<RunningEvent>> {
        self.running.subscribe()
    }

    /// Publish that call `id` runs (`p`: its latest progress), if anyone listens.
    fn publish_running(&self, id: u64, call: &ToolCall, p: Option<&Progress>) {
        if self.running.receiver_count() == 0 {
            return;
        }
        let (started, front_end) = self
            .running_calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .copied()
            .unwrap_or((std::time::SystemTime::now(), self.front_end));
        let _ = self.running.send(Arc::new(RunningEvent {
            id,
            tool: call.name.clone(),
            plugin: self.registry.load().get(&call.name).map(|e| e.plugin.name.clone()),
            front_end,
            started,
            done: p.map_or(0, |p| p.done),
            total: p.and_then(|p| p.total),
            message: p.map(|p| p.message.clone()).unwrap_or_default(),
        }));
    }

    /// Count the reloader's registry swaps and failures for as long as it runs.
    pub fn watch_reloads(self: &Arc<Self>, reloader: &Reloader) {
        let mut rx = reloader.subscribe();
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(change) => match me.upgrade() {
                        Some(s) => s.metrics.reload(change.failures.len()),
                        None => return,
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Stop admitting calls, let those in flight finish within the grace period, cancel the
    /// rest, and sync the audit file.
    pub async fn shutdown(&self) -> shutdown::Drained {
        let grace = self.lifecycle.grace();
        let n = self.lifecycle.stop_admitting();
        crate::say!(
            "toolhost: shutting down: {n} call{} in flight, grace period {} ms",
            if n == 1 { "" } else { "s" },
            grace.as_millis()
        );
        let drained = self.lifecycle.drain().await;
        if drained.cancelled > 0 {
            crate::say!(
                "toolhost: cancelled {} call{} still running after {} ms (serve.shutdown_grace_ms)",
                drained.cancelled,
                if drained.cancelled == 1 { "" } else { "s" },
                grace.as_millis()
            );
        }
        self.sync();
        drained
    }

    /// Force the audit trail to disk.
    pub fn sync(&self) {
        if let Some(a) = &self.audit {
            a.sync();
        }
    }

    /// Count the call and write its audit line; returns the line's number (0: none written).
    fn finish(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        rec: &CallRecord,
        o: &Outcome,
        took: Duration,
    ) -> u64 {
        let outcome = o.kind.map_or("ok", ErrorKind::as_str);
        let tool = if rec.plugin.is_some() { call.name.as_str() } else { metrics::UNKNOWN_TOOL };
        self.metrics.call(tool, outcome, took.as_secs_f64());
        if let Some(who) = &ctx.principal {
            self.metrics.identity_call(&who.key(), outcome);
        }
        if let Some(d) = rec.danger {
            self.metrics.danger(d.decision.as_str(), d.by.as_str());
        }
        let plugin = rec.plugin.as_ref();
        if let (Some(p), Some(u)) = (plugin, &o.usage)
            && u.kv_ops > 0
        {
            self.metrics.kv(&p.name, u.kv_ops, u.kv_written_bytes);
        }
        // Built only while someone listens: with no subscriber a call pays one short lock.
        if self.calls.receiver_count() > 0 {
            let _ = self.calls.send(Arc::new(CallEvent {
                time: std::time::SystemTime::now(),
                tool: call.name.clone(),
                plugin: plugin.cloned(),
                front_end: ctx.front_end.unwrap_or(self.front_end),
                client: ctx.client.clone(),
                token: ctx.token.clone(),
                who: ctx.principal.clone(),
                outcome,
                duration: took,
                danger: rec.danger,
                truncated: o.truncated,
                usage: o.usage.clone(),
                id: rec.id,
                parent: ctx.parent,
            }));
        }
        let Some(audit) = &self.audit else { return 0 };
        // Serialized straight from borrowed fields (no JSON tree per call); keys in name order.
        #[derive(serde::Serialize)]
        struct Line<'a> {
            args: AuditArgs<'a>,
            client: Option<&'a str>,
            danger: Option<&'a DangerRecord>,
            duration_ms: f64,
            front_end: &'a str,
            /// The grant questions asked during the call: item, answer, who answered.
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            grants: &'a [toolhost_core::executor::GrantRecord],
            /// The call's number in this process (a script's inner calls name it as `parent`).
            id: u64,
            outcome: &'a str,
            /// The code-mode script's call this call was made by.
            #[serde(skip_serializing_if = "Option::is_none")]
            parent: Option<u64>,
            plugin: Option<&'a str>,
            sha256: Option<HexHash<'a>>,
            time: Rfc3339Millis,
            token: Option<&'a str>,
            tool: &'a str,
            truncated: bool,
            version: Option<&'a str>,
            /// Who the caller authenticated as.
            #[serde(skip_serializing_if = "Option::is_none")]
            who: Option<&'a toolhost_core::identity::Principal>,
        }
        audit.append(&Line {
            args: AuditArgs { service: self, args: &call.args },
            client: ctx.client.as_deref(),
            danger: rec.danger.as_ref(),
            duration_ms: (took.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
            front_end: ctx.front_end.unwrap_or(self.front_end),
            grants: &rec.grants,
            id: rec.id,
            outcome,
            parent: ctx.parent,
            plugin: plugin.map(|p| &*p.name),
            sha256: plugin.map(|p| HexHash(&p.hash)),
            time: Rfc3339Millis(std::time::SystemTime::now()),
            token: ctx.token.as_deref(),
            tool: &call.name,
            truncated: o.truncated,
            version: plugin.map(|p| p.manifest.version.as_str()),
            who: ctx.principal.as_deref(),
        })
    }

    /// With `[audit] fsync = "always"`, wait (off the async workers) until audit line `n` is on
    /// disk: the call's answer is sent only then.
    async fn durable(&self, n: u64) {
        if let Some(audit) = self.audit.as_ref().filter(|a| n > 0 && a.syncs_each_line()) {
            let audit = audit.clone();
            let _ = tokio::task::spawn_blocking(move || audit.make_durable(n)).await;
        }
    }

    /// An argument as the audit trail keeps it: secrets redacted, a long one cut to a prefix
    /// plus the SHA-256 of the whole (redacted) text.
    fn audit_arg<'a>(&self, arg: &'a str) -> std::borrow::Cow<'a, str> {
        let redacted = redact(arg, &self.secrets);
        // Shorter in bytes is shorter in chars: no count needed.
        if redacted.len() <= AUDIT_ARG_MAX {
            return redacted;
        }
        let chars = redacted.chars().count();
        if chars <= AUDIT_ARG_MAX {
            return redacted;
        }
        let prefix: String = redacted.chars().take(AUDIT_ARG_PREFIX).collect();
        format!("{prefix}…[{chars} chars, sha256:{}]", toolhost_spec::digest::sha256_hex(redacted.as_bytes()))
            .into()
    }
}

/// A call's arguments as its audit line keeps them ([`Service::audit_arg`]), written into the
/// line one by one (no list of them built first).
struct AuditArgs<'a> {
    service: &'a Service,
    args: &'a [String],
}

impl serde::Serialize for AuditArgs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.args.iter().map(|a| self.service.audit_arg(a)))
    }
}

/// A time as [`audit::rfc3339`] writes it, written into the audit line without a `String`.
struct Rfc3339Millis(std::time::SystemTime);

impl serde::Serialize for Rfc3339Millis {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&audit::rfc3339_display(self.0))
    }
}

/// A plugin's SHA-256 as hex, written into its audit line without a `String` of its own.
struct HexHash<'a>(&'a [u8; 32]);

impl serde::Serialize for HexHash<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 64];
        hex::encode_to_slice(self.0, &mut buf).map_err(serde::ser::Error::custom)?;
        s.serialize_str(std::str::from_utf8(&buf).map_err(serde::ser::Error::custom)?)
    }
}

impl CallObserver for Service {
    /// Admit the call (or refuse it while shutting down), race it against the end of the grace
    /// period, then count it and write its audit line.
    fn observe<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a CallContext,
        record: SharedRecord,
        run: CallRun<'a>,
    ) -> CallRun<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let snapshot = |r: &SharedRecord| r.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(ticket) = self.lifecycle.admit() else {
                let rec = CallRecord {
                    plugin: self.registry.load().get(&call.name).map(|e| e.plugin.clone()),
                    ..snapshot(&record)
                };
                let o = Outcome::err(
                    ErrorKind::Unavailable,
                    "toolhost is shutting down and accepts no new calls; retry (another replica, or this \
                     service once it has restarted, will answer)",
                );
                let line = self.finish(call, ctx, &rec, &o, started.elapsed());
                self.durable(line).await;
                return o;
            };
            self.metrics.in_flight().inc();
            tracing::debug!(tool = call.name, "call admitted");
            // Followed by a live view (the console's feed) only while someone subscribes.
            let id = record.lock().unwrap_or_else(|p| p.into_inner()).id;
            let watched = self.running.receiver_count() > 0;
            if watched {
                let front_end = ctx.front_end.unwrap_or(self.front_end);
                let mut m = self.running_calls.lock().unwrap_or_else(|e| e.into_inner());
                m.insert(id, (std::time::SystemTime::now(), front_end));
                drop(m);
                self.publish_running(id, call, None);
            }
            let outcome = tokio::select! {
                biased;
                o = run => o,
                // The call's future (and its sandbox, programs and requests) is dropped here.
                // The client did not cancel it: to the client the service is `unavailable`
                // (retry elsewhere, or once it has restarted), even though the work was stopped.
                () = self.lifecycle.cancelled() => Outcome::err(
                    ErrorKind::Unavailable,
                    format!(
                        "toolhost is shutting down and `{}` did not finish within the grace period ({} ms, \
                         serve.shutdown_grace_ms); it was stopped and may have partly run: retry it",
                        call.name,
                        self.lifecycle.grace().as_millis()
                    ),
                ),
            };
            self.metrics.in_flight().dec();
            if watched {
                self.running_calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            }
            // Read in place: the call has ended, nothing else writes its record now.
            let line = {
                let rec = record.lock().unwrap_or_else(|p| p.into_inner());
                self.finish(call, ctx, &rec, &outcome, started.elapsed())
            };
            self.durable(line).await;
            // The ticket goes last: once the drain sees no call in flight, every line is durable.
            drop(ticket);
            outcome
        })
    }

    /// A call may wait for a slot while the caps of waiting calls allow (each holds its
    /// arguments, and over HTTP its request, in memory); past them it is answered `busy` at once.
    fn wait(&self, call: &ToolCall, ctx: &CallContext) -> Result<Option<Box<dyn Send>>, String> {
        let peer = places::Peer::of(ctx);
        match self.waiting.take(peer.clone()) {
            Ok(place) => Ok(Some(Box::new((place, self.metrics.waiting())))),
            Err(places::Full::Total { max }) => Err(format!(
                "tool `{}` found every call slot taken and {max} calls already waiting for one, the most \
                 [serve] max_waiting_calls = {max} in toolhost.toml allows: retry later",
                call.name
            )),
            Err(places::Full::Peer { max }) => Err(format!(
                "tool `{}` found every call slot taken and {max} calls of this client ({}) already waiting \
                 for one, the most [serve] max_waiting_calls_per_peer = {max} in toolhost.toml allows: retry later",
                call.name,
                peer.map(|p| p.to_string()).unwrap_or_default()
            )),
        }
    }

    fn wants_progress(&self) -> bool {
        self.running.receiver_count() > 0
    }

    fn progress(&self, id: u64, call: &ToolCall, progress: &Progress) {
        self.publish_running(id, call, Some(progress));
    }

    fn read<'a>(
        &'a self,
        read: toolhost_core::executor::ResourceRead<'a>,
    ) -> toolhost_core::executor::observer::ReadDone<'a> {
        Box::pin(self.record_read(read))
    }
}

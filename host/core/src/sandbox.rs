//! The per-call sandbox: turns the effective grants of one plugin into a fresh WASI context and
//! store state, in one place.
//!
//! **What a plugin gets by default: nothing.** No preopened directory (only an empty stand-in
//! as `/` in which every open and look-up is refused, so that the host sees — and can name —
//! a path outside every grant: see `capability::fs`), no environment
//! variables, no arguments, closed stdin, no network (no sockets, no name lookup), and
//! stdout/stderr captured into bounded buffers that go to the host's log — never to the
//! host's own stdout. Clocks and random numbers are available (they grant no access).
//! Every other capability is an explicit grant computed by [`Grants::effective`].

use crate::capability::fs::{FsGrant, FsView, OutsideGrants, Preopens};
use crate::capability::log::LogCall;
use crate::capability::net::{NetCall, NetGrant};
use crate::capability::process::{ExecGrants, ProcessCall};
use crate::capability::progress::ProgressCall;
use crate::capability::quota::{CallMeter, QuotaView};
use crate::capability::{Missing, MissingKind};
use crate::settings::{PluginConfig, SecretSource};
use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use toolhost_spec::manifest::Capabilities;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Bytes of guest stdout/stderr kept per call (the rest is counted and dropped).
pub const STDIO_CAPTURE_BYTES: usize = 64 * 1024;

/// Open WASI handles (files, directories, streams, pollables) one call may hold at once. Each
/// open file is a host file descriptor: without a cap, one call could exhaust the host's
/// descriptor limit (and starve every other call). 32 concurrent calls × 256 stays well under
/// common limits.
pub const MAX_HANDLES: usize = 256;

/// What one plugin is actually allowed: its request intersected with the operator's grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    pub fs: Vec<FsGrant>,
    pub env: Vec<(String, String)>,
    /// Hosts (request and grant), private-address permission and secrets.
    pub net: Arc<NetGrant>,
    /// Programs it may run (request ∩ grant).
    pub exec: Arc<ExecGrants>,
    /// The granted directories, opened once and shared by the calls (see `capability::fs::Preopens`).
    pub preopens: Preopens,
}

impl Grants {
    /// Request ∩ grant. A directory is granted at the lower of the two modes; an env var only
    /// if both name it (its value is read from the host environment now).
    /// A secret is granted if both name it and `secrets` (the operator's `[secrets.NAME]`)
    /// defines it; its value is read now.
    pub fn effective(
        plugin: &str,
        request: &Capabilities,
        grant: &PluginConfig,
        secrets: &BTreeMap<String, SecretSource>,
    ) -> (Grants, Vec<Missing>) {
        let mut out = Grants::default();
        let mut missing = Vec::new();
        let (fs, fs_missing) = crate::capability::fs::effective(plugin, &request.fs, &grant.fs);
        out.fs = fs;
        missing.extend(fs_missing);
        for var in &request.env {
            if let Some(value) = grant.settings.get(var) {
                out.env.push((var.clone(), value.clone()));
            } else if grant.env.iter().any(|g| g == var) {
                if let Ok(value) = std::env::var(var) {
                    out.env.push((var.clone(), value));
                }
            } else {
                missing.push(Missing {
                    kind: MissingKind::Env(var.clone()),
                    what: format!("env {var}"),
                    how: format!(
                        "[plugin.{plugin}] env = [\"{var}\"] or settings = {{ {var} = \"value\" }}  (or --allow-env {plugin}={var})"
                    ),
                });
            }
        }
        let (net, net_missing) = crate::capability::net::effective(plugin, request, grant, secrets);
        missing.extend(net_missing);
        out.net = Arc::new(net);
        let (exec, exec_missing) = crate::capability::process::effective(plugin, &request.exec, &grant.exec);
        out.exec = Arc::new(exec);
        missing.extend(exec_missing);
        (out, missing)
    }

    /// A fresh WASI context with exactly these grants (see the module docs for the defaults).
    pub fn wasi_ctx(&self, stdout: CappedPipe, stderr: CappedPipe) -> io::Result<WasiCtx> {
        let mut b = WasiCtxBuilder::new();
        // File operations run inline rather than on tokio's blocking pool: for the small local
        // files tools touch, the thread hand-off costs more than the I/O (set before preopens).
        b.allow_blocking_current_thread(true);
        b.stdout(stdout).stderr(stderr);
        b.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        // Bound what a guest can make the host allocate through `get-random-bytes`.
        b.max_random_size(1024 * 1024);
        for (k, v) in &self.env {
            b.env(k, v);
        }
        self.preopens.build(&self.fs, b)
    }

    /// Whether calls get the no-access directory that reports paths outside every grant (see
    /// `capability::fs`).
    pub fn guards_outside(&self) -> bool {
        crate::capability::fs::guards_outside(&self.fs)
    }

    /// [`Grants::wasi_ctx`] with the directories `extra` a human granted on top (opened for
    /// this call only, never kept in the shared preopens).
    pub fn wasi_ctx_with(
        &self,
        extra: &[FsGrant],
        stdout: CappedPipe,
        stderr: CappedPipe,
    ) -> io::Result<WasiCtx> {
        if extra.is_empty() {
            return self.wasi_ctx(stdout, stderr);
        }
        let mut fs = self.fs.clone();
        fs.extend(extra.iter().cloned());
        let g = Grants {
            fs,
            env: self.env.clone(),
            net: self.net.clone(),
            exec: self.exec.clone(),
            preopens: Preopens::default(),
        };
        g.wasi_ctx(stdout, stderr)
    }

    /// [`Grants::guards_outside`] with the directories `extra` on top.
    pub fn guards_outside_with(&self, extra: &[FsGrant]) -> bool {
        if extra.is_empty() {
            return self.guards_outside();
        }
        let fs: Vec<FsGrant> = self.fs.iter().chain(extra).cloned().collect();
        crate::capability::fs::guards_outside(&fs)
    }
}

/// Store data for one call.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    /// Outbound HTTP for this call (the plugin's name, its grant and secrets, budget, deadline);
    /// `log` and `progress` read the name and the secrets to redact from here.
    pub net: NetCall,
    /// Programs this call may run.
    pub process: ProcessCall,
    /// Bytes written and entries created in granted directories, against the call's quota.
    pub meter: Arc<CallMeter>,
    /// The `log` import: what it kept and dropped in this call.
    pub log: LogCall,
    /// The `progress` import: the call's latest report, for whoever watches it.
    pub progress: ProgressCall,
    /// What the call tried outside its granted directories.
    pub outside: OutsideGrants,
}

/// What one call's store holds besides WASI: each capability's limits and state for the call
/// (the executor fills every field; nothing is defaulted, so no part is built twice).
pub struct CallParts {
    pub limiter: MemoryLimiter,
    pub net: NetCall,
    /// The tool (its exposed name) and the log budget (the plugin is named by `net`).
    pub log: LogCall,
    pub meter: CallMeter,
    pub process: ProcessCall,
}

impl HostState {
    /// The state of one call's store: `wasi` and the call's `parts`, no progress watched
    /// (the executor sets [`HostState::progress`] when someone follows the call).
    pub fn new(wasi: WasiCtx, parts: CallParts) -> Self {
        let CallParts { limiter, net, log, meter, process } = parts;
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HANDLES);
        let progress = ProgressCall::none();
        HostState {
            wasi,
            table,
            limiter,
            net,
            meter: Arc::new(meter),
            log,
            progress,
            process,
            outside: OutsideGrants::default(),
        }
    }
}

impl HostState {
    /// The plugin this call runs (held by the call's `net` part).
    pub fn plugin(&self) -> &Arc<str> {
        &self.net.plugin
    }

    /// The tool's exposed name (held by the call's `log` part).
    pub fn tool(&self) -> &Arc<str> {
        &self.log.tool
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The `host` interface is two capabilities, `log` and `progress`, each with its own part of
/// the store: the linker hands the interface this view of both ([`HostInterface`]), and of the
/// call's net part: the plugin's name, and its secrets, redacted from what either passes on.
pub struct HostView<'a> {
    log: &'a mut LogCall,
    progress: &'a mut ProgressCall,
    net: &'a NetCall,
}

impl HostState {
    /// The `host` interface's view of this store.
    pub fn host_view(&mut self) -> HostView<'_> {
        HostView { log: &mut self.log, progress: &mut self.progress, net: &self.net }
    }
}

/// The [`wasmtime::component::HasData`] of the `host` interface: its data is a [`HostView`].
pub struct HostInterface;

impl wasmtime::component::HasData for HostInterface {
    type Data<'a> = HostView<'a>;
}

impl crate::bindings::host::Host for HostView<'_> {
    fn log(&mut self, level: crate::bindings::host::Level, message: String) {
        self.log.log(level, message, &self.net.plugin, &self.net.grant);
    }

    fn progress(&mut self, done: u64, total: Option<u64>, message: String) {
        self.progress.report(done, total, message, &self.net.grant);
    }
}

impl FsView for HostState {
    fn outside(&mut self) -> &mut OutsideGrants {
        &mut self.outside
    }
}

impl QuotaView for HostState {
    fn meter(&self) -> &Arc<CallMeter> {
        &self.meter
    }
}

/// Caps the total linear memory (and table size) of one call's store, and remembers whether
/// the cap was hit so the outcome can say "memory limit" rather than a generic trap.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub hit: bool,
}

/// Raised into the guest when it grows past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit_mb} MiB exceeded (tried to grow to {wanted_mb} MiB)")]
pub struct MemoryLimitExceeded {
    pub limit_mb: u64,
    pub wanted_mb: u64,
}

impl MemoryLimiter {
    pub fn new(limit_mb: u64) -> Self {
        MemoryLimiter { limit: (limit_mb as usize).saturating_mul(1024 * 1024), used: 0, hit: false }
    }

    /// The most linear memory the call held at once (wasm memories never shrink, so this is
    /// what it holds now).
    pub fn peak_bytes(&self) -> u64 {
        self.used as u64
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used.saturating_add(desired.saturating_sub(current));
        if total > self.limit {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit_mb: (self.limit / (1024 * 1024)) as u64,
                wanted_mb: (total / (1024 * 1024)) as u64,
            }));
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables cost a pointer per element; 1M elements is far beyond any real plugin.
        Ok(desired <= 1_000_000)
    }
}

/// Captures a guest's stdout or stderr: keeps the first `cap` bytes, counts and drops the rest.
/// Never fails a write, so a chatty guest is not turned into a crashing one.
#[derive(Clone)]
pub struct CappedPipe {
    /// Both streams of a call share one allocation ([`CappedPipe::pair`]); `which` is this one.
    inner: Arc<[Mutex<Captured>; 2]>,
    which: usize,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: usize,
    cap: usize,
}

impl CappedPipe {
    pub fn new(cap: usize) -> Self {
        CappedPipe::pair(cap).0
    }

    /// Two pipes, a call's stdout and stderr, each keeping `cap` bytes, in one allocation.
    pub fn pair(cap: usize) -> (CappedPipe, CappedPipe) {
        let captured = || Mutex::new(Captured { cap, ..Default::default() });
        let inner = Arc::new([captured(), captured()]);
        (CappedPipe { inner: inner.clone(), which: 0 }, CappedPipe { inner, which: 1 })
    }

    fn captured(&self) -> std::sync::MutexGuard<'_, Captured> {
        self.inner[self.which].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, buf: &[u8]) {
        let mut c = self.captured();
        let room = c.cap.saturating_sub(c.bytes.len());
        let take = room.min(buf.len());
        c.bytes.extend_from_slice(&buf[..take]);
        c.dropped += buf.len() - take;
    }

    /// What was captured, as lossy UTF-8, and how many bytes were dropped.
    pub fn take(&self) -> (String, usize) {
        let mut c = self.captured();
        let bytes = std::mem::take(&mut c.bytes);
        // Valid UTF-8 (the usual case) is kept as it is, not copied.
        let text =
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (text, std::mem::take(&mut c.dropped))
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use toolhost_spec::manifest::{FsMode, FsRequest};

    fn grant(mode: FsMode) -> PluginConfig {
        PluginConfig {
            fs: vec![FsGrant {
                name: "workspace".into(),
                host_path: PathBuf::from("/ws"),
                mode,
                create: false,
            }],
            ..Default::default()
        }
    }

    fn request(mode: FsMode) -> Capabilities {
        Capabilities { fs: vec![FsRequest { path: "workspace".into(), mode }], ..Default::default() }
    }

    #[test]
    fn effective_is_the_intersection() {
        let (g, missing) = Grants::effective(
            "files",
            &request(FsMode::ReadWrite),
            &grant(FsMode::ReadOnly),
            &BTreeMap::new(),
        );
        assert_eq!(g.fs[0].mode, FsMode::ReadOnly);
        assert_eq!(missing.len(), 1, "rw requested, ro granted: the difference is reported");
        let (g, missing) = Grants::effective(
            "files",
            &request(FsMode::ReadOnly),
            &grant(FsMode::ReadWrite),
            &BTreeMap::new(),
        );
        assert_eq!(g.fs[0].mode, FsMode::ReadOnly, "never more than requested");
        assert!(missing.is_empty());
        let (g, missing) =
            Grants::effective("files", &Capabilities::default(), &grant(FsMode::ReadWrite), &BTreeMap::new());
        assert!(g.fs.is_empty(), "a grant the plugin did not request is not given");
        assert!(missing.is_empty());
        let (g, missing) = Grants::effective(
            "files",
            &request(FsMode::ReadOnly),
            &PluginConfig::default(),
            &BTreeMap::new(),
        );
        assert!(g.fs.is_empty());
        assert!(missing[0].how.contains("--allow-read files"), "{:?}", missing[0]);
    }

    #[test]
    fn env_needs_request_and_grant() {
        // SAFETY-free: reads PATH, which every test environment has.
        let req = Capabilities { env: vec!["PATH".into(), "HOME".into()], ..Default::default() };
        let grant = PluginConfig { env: vec!["PATH".into(), "SHELL".into()], ..Default::default() };
        let (g, missing) = Grants::effective("p", &req, &grant, &BTreeMap::new());
        assert_eq!(g.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["PATH"]);
        assert_eq!(missing[0].what, "env HOME");
    }

    #[test]
    fn capped_pipe_keeps_a_prefix_and_counts_the_rest() {
        let p = CappedPipe::new(4);
        p.push(b"abcdef");
        p.push(b"gh");
        assert_eq!(p.take(), ("abcd".to_string(), 4));
        // Bytes that are not UTF-8 (here a cut character) come out replaced, not dropped.
        p.push(&"é".as_bytes()[..1]);
        p.push(b"z");
        assert_eq!(p.take(), ("\u{FFFD}z".to_string(), 0));
    }

    #[test]
    fn a_pair_of_pipes_keeps_each_stream_apart() {
        let (out, err) = CappedPipe::pair(4);
        out.push(b"out!!");
        err.push(b"e");
        assert_eq!(out.take(), ("out!".to_string(), 1));
        assert_eq!(err.take(), ("e".to_string(), 0));
    }

    #[test]
    fn limiter_counts_all_memories() {
        let mut l = MemoryLimiter::new(1);
        assert!(l.memory_growing(0, 600 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 300 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 200 * 1024, None).is_err());
        assert!(l.hit);
    }

    /// The `host` interface's `progress` and `log` get the plugin's secrets from the call's net
    /// grant (through [`HostView`]): a secret value in a progress message is redacted.
    #[test]
    fn the_host_view_redacts_the_plugins_secrets_from_progress_messages() {
        use crate::bindings::host::Host as _;
        use crate::capability::log::CallLog;
        use crate::capability::net::GrantedSecret;
        let secret = GrantedSecret { name: "gh".into(), value: "s3cr3t-value".into(), hosts: vec![] };
        let grant = NetGrant { secrets: vec![secret], ..Default::default() };
        let plugin: Arc<str> = Arc::from("p");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut state = HostState::new(
            WasiCtx::builder().build(),
            CallParts {
                limiter: MemoryLimiter::new(16),
                net: NetCall::new(plugin.clone(), Arc::new(grant), Default::default(), deadline),
                log: LogCall { tool: Arc::from("t"), budget: CallLog::new(&Default::default(), None) },
                meter: CallMeter::new(1, 1),
                process: ProcessCall::none(plugin),
            },
        );
        let (progress, rx) = ProgressCall::watched();
        state.progress = progress;
        state.host_view().progress(1, None, "token=s3cr3t-value".into());
        assert_eq!(rx.borrow().as_ref().unwrap().message, "token=[secret gh redacted]");
    }
}

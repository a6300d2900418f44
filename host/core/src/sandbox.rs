//! The per-call sandbox: turns the effective grants of one plugin into a fresh WASI context and
//! store state, in one place.
//!
//! **What a plugin gets by default: nothing.** No preopened directory, no environment
//! variables, no arguments, closed stdin, no network (no sockets, no name lookup), and
//! stdout/stderr captured into bounded buffers that go to the host's log — never to the
//! host's own stdout. Clocks and random numbers are available (they grant no access).
//! Every other capability is an explicit grant computed by [`Grants::effective`].

use crate::config::{FsGrant, PluginConfig, SecretSource};
use crate::manifest::{Capabilities, FsMode};
use crate::net::{GrantedSecret, NetCall, NetGrant, patterns_overlap};
use crate::quota::CallMeter;
use crate::share::CallLog;
use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

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
    pub exec: Arc<crate::process::ExecGrants>,
    /// The granted directories, opened once and shared by the calls (see [`Preopens`]).
    pub preopens: Preopens,
}

/// The granted directories opened once, for every call's WASI context to share (a clone of
/// the filesystem context: the same directory handles, no `open`/`close` per call). Each call
/// checks with one `stat` per directory that its path still leads to the directory that was
/// opened, and opens them afresh when it does not (a directory replaced, or missing: that call
/// then fails as it would without the cache).
#[derive(Clone, Default)]
pub struct Preopens(Arc<arc_swap::ArcSwapOption<PreopenSet>>);

struct PreopenSet {
    fs: wasmtime_wasi::filesystem::WasiFilesystemCtx,
    /// (device, inode) of each granted directory when it was opened, in grant order.
    ids: Vec<(u64, u64)>,
}

/// A cache, not part of what is granted: grants compare equal whatever it holds.
impl PartialEq for Preopens {
    fn eq(&self, _: &Preopens) -> bool {
        true
    }
}
impl Eq for Preopens {}
impl std::fmt::Debug for Preopens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Preopens")
    }
}

/// (device, inode) of each path, or `None` if one cannot be read.
fn dir_ids(fs: &[FsGrant]) -> Option<Vec<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    fs.iter().map(|g| std::fs::metadata(&g.host_path).ok().map(|m| (m.dev(), m.ino()))).collect()
}

/// A capability the plugin requested and the operator did not grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub kind: MissingKind,
    pub what: String,
    /// The config line that would grant it.
    pub how: String,
}

/// Which capability a [`Missing`] entry is about, so a failure can be matched with the grant
/// that would have prevented it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissingKind {
    /// A directory (by its grant name, e.g. `workspace`).
    Fs(String),
    Env(String),
    /// A requested host pattern.
    Net(String),
    Secret(String),
    /// A requested program.
    Exec(String),
}

impl Missing {
    /// Whether the host's refusal `r`, recorded during a call, is explained by this missing
    /// grant.
    pub fn explains(&self, r: &crate::net::Refusal) -> bool {
        use crate::net::Refusal;
        match (&self.kind, r) {
            (MissingKind::Net(pattern), Refusal::Host(host)) => crate::net::host_matches(pattern, host),
            (MissingKind::Secret(a), Refusal::Secret(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the host can see a refusal of this capability when it happens. Network and
    /// secret use goes through the host's `http` import, which records every refusal; a
    /// directory or variable that is not granted simply does not exist for the guest.
    pub fn observable(&self) -> bool {
        matches!(self.kind, MissingKind::Net(_) | MissingKind::Secret(_))
    }
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
        for req in &request.fs {
            match grant.fs.iter().find(|g| g.name == req.path) {
                Some(g) => {
                    let mode = req.mode.min(g.mode);
                    out.fs.push(FsGrant { mode, ..g.clone() });
                    if mode < req.mode {
                        missing.push(Missing {
                            kind: MissingKind::Fs(req.path.clone()),
                            what: format!("fs {}:{} (granted {})", req.path, req.mode, g.mode),
                            how: fs_hint(plugin, &req.path, req.mode),
                        });
                    }
                }
                None => missing.push(Missing {
                    kind: MissingKind::Fs(req.path.clone()),
                    what: format!("fs {}:{}", req.path, req.mode),
                    how: fs_hint(plugin, &req.path, req.mode),
                }),
            }
        }
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
        let mut net = NetGrant {
            requested: request.net.clone(),
            granted: grant.net.clone(),
            private: grant.net_private,
            secrets: Vec::new(),
        };
        for host in &request.net {
            if !grant.net.iter().any(|g| patterns_overlap(host, g)) {
                let how = if host.contains('*') {
                    format!(
                        "[plugin.{plugin}] net = [\"example.com\"] with the hosts you allow  (or --allow-net {plugin}=HOST)"
                    )
                } else {
                    format!("[plugin.{plugin}] net = [\"{host}\"]  (or --allow-net {plugin}={host})")
                };
                missing.push(Missing {
                    kind: MissingKind::Net(host.clone()),
                    what: format!("net {host}"),
                    how,
                });
            }
        }
        for secret in &request.secrets {
            let source = secrets.get(secret);
            let how = format!(
                "[plugin.{plugin}] secrets = [\"{secret}\"] and [secrets.{secret}] env = \"VAR\" (or file = \"path\")"
            );
            match (grant.secrets.iter().any(|s| s == secret), source) {
                (true, Some(src)) => match src.read() {
                    Ok(value) => net.secrets.push(GrantedSecret {
                        name: secret.clone(),
                        value,
                        hosts: src.hosts.clone(),
                    }),
                    Err(why) => missing.push(Missing {
                        kind: MissingKind::Secret(secret.clone()),
                        what: format!("secret {secret} ({why})"),
                        how,
                    }),
                },
                _ => missing.push(Missing {
                    kind: MissingKind::Secret(secret.clone()),
                    what: format!("secret {secret}"),
                    how,
                }),
            }
        }
        out.net = Arc::new(net);
        let (exec, exec_missing) = crate::process::effective(plugin, &request.exec, &grant.exec);
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
        if self.fs.is_empty() {
            return Ok(b.build());
        }
        let ids = dir_ids(&self.fs);
        if let (Some(ids), Some(set)) = (&ids, &*self.preopens.0.load())
            && *ids == set.ids
        {
            let mut ctx = b.build();
            *ctx.filesystem() = set.fs.clone();
            return Ok(ctx);
        }
        self.open_dirs(&mut b)?;
        let mut ctx = b.build();
        // Kept for the next calls only if no directory changed while they were opened.
        if let Some(before) = ids
            && dir_ids(&self.fs).as_ref() == Some(&before)
        {
            let fs = ctx.filesystem().clone();
            self.preopens.0.store(Some(Arc::new(PreopenSet { fs, ids: before })));
        }
        Ok(ctx)
    }

    fn open_dirs(&self, b: &mut WasiCtxBuilder) -> io::Result<()> {
        for fs in &self.fs {
            let perms = match fs.mode {
                FsMode::ReadOnly => FsPerms::ReadOnly,
                FsMode::ReadWrite => FsPerms::ReadWrite,
            };
            b.preopened_dir(&fs.host_path, fs.guest_path(), perms).map_err(|e| {
                io::Error::other(format!(
                    "cannot open granted directory {} ({}): {e}",
                    fs.host_path.display(),
                    fs.name
                ))
            })?;
        }
        Ok(())
    }
}

fn fs_hint(plugin: &str, name: &str, mode: FsMode) -> String {
    if name == "workspace" {
        let flag = if mode == FsMode::ReadWrite { "--allow-write" } else { "--allow-read" };
        format!(
            "[plugin.{plugin}] fs = [{{ path = \"workspace\", mode = \"{mode}\" }}]  (or {flag} {plugin})"
        )
    } else {
        format!("[plugin.{plugin}] fs = [{{ path = \"/some/dir\", name = \"{name}\", mode = \"{mode}\" }}]")
    }
}

/// Store data for one call.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub plugin: Arc<str>,
    pub tool: String,
    /// Outbound HTTP for this call (grants, budget, deadline).
    pub net: NetCall,
    /// Programs this call may run (none unless [`HostState::with_process`]).
    pub process: crate::process::ProcessCall,
    /// Bytes written and entries created in granted directories, against the call's quota.
    pub meter: Arc<CallMeter>,
    /// What the `log` import kept and dropped in this call.
    pub log: CallLog,
}

impl HostState {
    pub fn new(wasi: WasiCtx, limiter: MemoryLimiter, plugin: Arc<str>, tool: String, net: NetCall) -> Self {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HANDLES);
        let limits = crate::config::Limits::default();
        let process = crate::process::ProcessCall::none(plugin.clone());
        HostState {
            wasi,
            table,
            limiter,
            plugin,
            tool,
            net,
            meter: Arc::new(CallMeter::new(limits.write_mb, limits.create_limit)),
            log: CallLog::new(&limits, None),
            process,
        }
    }

    /// Let this call run the programs `process` grants.
    pub fn with_process(mut self, process: crate::process::ProcessCall) -> Self {
        self.process = process;
        self
    }

    /// Set the call's disk quota and log budget (the defaults of [`crate::config::Limits`]
    /// otherwise).
    pub fn with_budgets(mut self, meter: CallMeter, log: CallLog) -> Self {
        self.meter = Arc::new(meter);
        self.log = log;
        self
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
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
    inner: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: usize,
    cap: usize,
}

impl CappedPipe {
    pub fn new(cap: usize) -> Self {
        CappedPipe { inner: Arc::new(Mutex::new(Captured { cap, ..Default::default() })) }
    }

    fn push(&self, buf: &[u8]) {
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = c.cap.saturating_sub(c.bytes.len());
        let take = room.min(buf.len());
        c.bytes.extend_from_slice(&buf[..take]);
        c.dropped += buf.len() - take;
    }

    /// What was captured, as lossy UTF-8, and how many bytes were dropped.
    pub fn take(&self) -> (String, usize) {
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = std::mem::take(&mut c.bytes);
        (String::from_utf8_lossy(&bytes).into_owned(), std::mem::take(&mut c.dropped))
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
    use crate::manifest::FsRequest;
    use std::path::PathBuf;

    fn grant(mode: FsMode) -> PluginConfig {
        PluginConfig {
            fs: vec![FsGrant { name: "workspace".into(), host_path: PathBuf::from("/ws"), mode }],
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
    }

    #[test]
    fn limiter_counts_all_memories() {
        let mut l = MemoryLimiter::new(1);
        assert!(l.memory_growing(0, 600 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 300 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 200 * 1024, None).is_err());
        assert!(l.hit);
    }
}

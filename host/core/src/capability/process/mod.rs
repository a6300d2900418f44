//! Running programs for plugins: the host side of the `toolhost:plugin/process` import, the
//! operator's `exec` grants, and the spawn itself (`tokio::process`).
//!
//! A plugin never starts a process. It names a program its manifest requests (`exec`), and
//! the host runs the executable the operator granted under that name, deny by default:
//! 1. the per-call budget ([`MAX_RUNS_PER_CALL`]);
//! 2. the program: a plain name (`git`) is looked up among the operator's grants only — never
//!    in `PATH` or the working directory; an absolute path must be exactly a granted path; a
//!    relative path (`./x`, `bin/sh`) is refused;
//! 3. the program must be both requested by the manifest and granted by the operator;
//! 4. the arguments: at most [`MAX_ARGS`] of at most [`MAX_ARGS_BYTES`] in all, no NUL, and
//!    matching one of the grant's argument patterns if it has any;
//! 5. the spawn: argv only (no shell, so `;`, `|`, `$(…)` are literal characters of one
//!    argument), a cleared environment plus the variables granted for that program (by name,
//!    and `set_env` values), stdin `/dev/null`, no other descriptor of the host's, cwd the
//!    workspace (or the grant's `cwd`), its own session and process group, and **confined by
//!    the operating system** ([`confine`]: Landlock to the system paths, its working directory
//!    — read-only unless `write = true` — and the grant's `fs` paths; no network unless
//!    `network = true`; PID and IPC namespaces of its own; no keys, vsock or terminal
//!    injection);
//! 6. stdout and stderr are captured up to [`MAX_OUTPUT_BYTES`] each; past that the process
//!    group is killed and the output marked truncated;
//! 7. at the call's deadline the whole process group is killed (and with it the program's PID
//!    namespace), the child reaped, and the call ends as a timeout. When the program exits,
//!    every process it left behind is killed too, `setsid` and double forks included, unless
//!    the grant says `detach = true` (desktop launchers such as `xdg-open`, whose whole point
//!    is an application that outlives them; their output is not captured).
//!
//! Every refusal names the grant that would allow it. A plugin granted any program has all its
//! tools marked dangerous unless the operator says `[tool.NAME] danger = false`.

mod capability;
pub mod confine;
mod error;
pub mod settings;

pub use capability::Process;
pub use error::ProcessError;
pub use settings::{ArgPattern, ExecGrant, ExecPath, ProcessSettings, RawExec, RawProcess, resolve_in_path};

use crate::bindings::process::{Host, Output};
use crate::capability::fs::FsGrant;
use crate::capability::{Missing, MissingKind};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use toolhost_spec::manifest::FsMode;

/// Bytes kept of each of stdout and stderr; past this the process group is killed.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// Programs one call may run.
pub const MAX_RUNS_PER_CALL: u32 = 16;
/// Arguments per run.
pub const MAX_ARGS: usize = 1024;
/// Total bytes of arguments per run.
pub const MAX_ARGS_BYTES: usize = 256 * 1024;
/// How long the pipes are still read after the program exits (a process it left behind may
/// hold them open; its output after that is not waited for).
const DRAIN_GRACE: Duration = Duration::from_millis(100);
/// How long reaping a killed child may take before it is left to tokio's orphan reaper.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// A granted program with the values of its environment variables (read at load time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedProgram {
    pub grant: ExecGrant,
    pub env: Vec<(String, String)>,
}

/// What one plugin may run: the names it requested and the programs granted for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecGrants {
    pub requested: Vec<String>,
    pub granted: Vec<GrantedProgram>,
}

impl ExecGrants {
    pub fn is_empty(&self) -> bool {
        self.granted.is_empty()
    }
}

fn grant_hint(plugin: &str, name: &str) -> String {
    let path = resolve_in_path(name).unwrap_or_else(|| PathBuf::from(format!("/usr/bin/{name}")));
    format!(
        "[plugin.{plugin}] exec = [{{ program = \"{}\" }}]  (or --allow-run {plugin}={name})",
        path.display()
    )
}

/// Request ∩ grant: a granted program is given only if the manifest requests its name (or
/// `*`, any program the operator grants).
pub fn effective(plugin: &str, requested: &[String], granted: &[ExecGrant]) -> (ExecGrants, Vec<Missing>) {
    let mut out = ExecGrants { requested: requested.to_vec(), granted: Vec::new() };
    let mut missing = Vec::new();
    for name in requested {
        let any = name == "*";
        if !granted.iter().any(|g| any || &g.name == name) {
            let how = if any {
                format!(
                    "[plugin.{plugin}] exec = [{{ program = \"/usr/bin/git\" }}] with the programs you allow  (or --allow-run {plugin}=PROGRAM)"
                )
            } else {
                grant_hint(plugin, name)
            };
            missing.push(Missing {
                kind: MissingKind::Exec(name.clone()),
                what: format!("exec {name}"),
                how,
            });
        }
    }
    for g in granted.iter().filter(|g| is_requested(requested, &g.name)) {
        let mut env: Vec<(String, String)> =
            g.env.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v))).collect();
        env.extend(g.set_env.iter().cloned());
        out.granted.push(GrantedProgram { grant: g.clone(), env });
    }
    (out, missing)
}

/// For each program in `exec` whose working directory (or `fs` path) overlaps a directory a
/// loaded plugin may write: `git runs over files plugins can write (files: /home/me/ws)`. Such a
/// program reads what a plugin planted (a repository's hooks, a build file), so it is shown in
/// `list` and in every danger confirmation of the plugin's tools.
pub fn shared_write_notes<'a>(
    exec: &ExecGrants,
    writable: impl Iterator<Item = (&'a str, &'a FsGrant)> + Clone,
    workspace: &Path,
) -> Vec<String> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let overlap = |a: &Path, b: &Path| a.starts_with(b) || b.starts_with(a);
    let mut notes = Vec::new();
    for g in &exec.granted {
        let dirs: Vec<PathBuf> = g.grant.dirs(workspace).map(real).collect();
        let writers: Vec<String> = writable
            .clone()
            .filter(|(_, f)| f.mode == FsMode::ReadWrite)
            .filter(|(_, f)| {
                let path = real(&f.host_path);
                dirs.iter().any(|d| overlap(d, &path))
            })
            .map(|(p, f)| format!("{p}: {}", f.host_path.display()))
            .collect();
        if !writers.is_empty() {
            notes.push(format!(
                "{} runs over files plugins can write ({})",
                g.grant.name,
                writers.join(", ")
            ));
        }
    }
    notes
}

fn is_requested(requested: &[String], name: &str) -> bool {
    requested.iter().any(|r| r == name || r == "*")
}

/// The process side of one call's store.
#[derive(Debug, Clone)]
pub struct ProcessCall {
    pub plugin: Arc<str>,
    pub exec: Arc<ExecGrants>,
    /// Default working directory.
    pub workspace: Arc<Path>,
    /// The workspace is the default one, created on first use (`capability::fs`).
    pub create_workspace: bool,
    /// The call's deadline; `None` (a store built without one) runs nothing.
    pub deadline: Option<Instant>,
    pub runs: u32,
    /// `[process]`: how programs are confined.
    pub settings: Arc<ProcessSettings>,
    /// Runs refused because the program, requested by name, is not granted (what a grant
    /// question can be about; see `executor::grant`).
    pub refused: Vec<crate::capability::Refusal>,
}

impl ProcessCall {
    /// A call that may run nothing.
    pub fn none(plugin: Arc<str>) -> ProcessCall {
        ProcessCall {
            plugin,
            exec: Arc::default(),
            workspace: Arc::from(Path::new("/")),
            create_workspace: false,
            deadline: None,
            runs: 0,
            settings: Arc::default(),
            refused: Vec::new(),
        }
    }

    /// Find the granted program `program` names, or say why there is none.
    fn find(&self, program: &str) -> Result<&GrantedProgram, ProcessError> {
        let plugin = self.plugin.clone();
        if program.is_empty() || program.contains('\0') {
            return Err(ProcessError::NotAName { program: program.to_string() });
        }
        let name = program.rsplit('/').next().unwrap_or(program);
        if self.exec.is_empty() {
            return Err(if self.exec.requested.is_empty() {
                ProcessError::NothingRequested { plugin, program: program.to_string() }
            } else {
                ProcessError::NothingGranted {
                    how: grant_hint(&plugin, name),
                    plugin,
                    program: program.to_string(),
                    requested: self.exec.requested.clone(),
                }
            });
        }
        let found = if program.starts_with('/') {
            self.exec.granted.iter().find(|g| g.grant.program.as_os_str() == program)
        } else if program.contains('/') {
            return Err(ProcessError::RelativePath {
                program: program.to_string(),
                example: self.exec.granted[0].grant.name.clone(),
            });
        } else {
            self.exec.granted.iter().find(|g| g.grant.name == program)
        };
        found.ok_or_else(|| {
            let granted: Vec<String> = self.exec.granted.iter().map(|g| g.grant.describe()).collect();
            let program = program.to_string();
            if !is_requested(&self.exec.requested, name) {
                ProcessError::NotRequested {
                    plugin,
                    program,
                    requested: self.exec.requested.clone(),
                    granted,
                }
            } else {
                ProcessError::NotGranted { how: grant_hint(&plugin, name), plugin, program, granted }
            }
        })
    }

    fn check_args(&self, g: &GrantedProgram, args: &[String]) -> Result<(), ProcessError> {
        if args.len() > MAX_ARGS {
            return Err(ProcessError::TooManyArgs { count: args.len() });
        }
        let total: usize = args.iter().map(String::len).sum();
        if total > MAX_ARGS_BYTES {
            return Err(ProcessError::ArgsTooLarge { total });
        }
        if let Some(index) = args.iter().position(|a| a.contains('\0')) {
            return Err(ProcessError::NulInArg { index });
        }
        let Some(patterns) = &g.grant.args else { return Ok(()) };
        if patterns.iter().any(|p| p.matches(args)) {
            return Ok(());
        }
        Err(ProcessError::ArgsNotGranted {
            plugin: self.plugin.clone(),
            name: g.grant.name.clone(),
            program: g.grant.program.clone(),
            args: args.to_vec(),
            patterns: patterns.iter().map(|p| p.text.clone()).collect(),
        })
    }

    /// The program a refusal is for want of, if it is one a grant question can be about: one
    /// the manifest requests by this very name and the operator has not granted.
    fn ungranted<'e>(&self, e: &'e ProcessError) -> Option<&'e str> {
        match e {
            ProcessError::NothingGranted { program, .. } | ProcessError::NotGranted { program, .. }
                if !program.contains('/') && self.exec.requested.iter().any(|r| r == program) =>
            {
                Some(program)
            }
            _ => None,
        }
    }

    /// Serve one `run` from the guest. A refusal or spawn failure is `Ok(Err(..))` for the
    /// plugin (one for want of a grant is also recorded in [`ProcessCall::refused`]); reaching
    /// the call's deadline is a trap (the call ends as a timeout).
    pub async fn run(
        &mut self,
        program: String,
        args: Vec<String>,
    ) -> wasmtime::Result<Result<Output, ProcessError>> {
        let Some(deadline) = self.deadline else {
            return Ok(Err(ProcessError::NoDeadline));
        };
        self.runs += 1;
        if self.runs > MAX_RUNS_PER_CALL {
            return Ok(Err(ProcessError::TooManyRuns));
        }
        let g = match self.find(&program).and_then(|g| self.check_args(g, &args).map(|()| g)) {
            Ok(g) => g.clone(),
            Err(e) => {
                tracing::info!(plugin = &*self.plugin, "refused to run {program:?} {args:?}: {e}");
                if let Some(name) = self.ungranted(&e)
                    && self.refused.len() < 8
                {
                    let name = name.to_string();
                    self.refused.push(crate::capability::Refusal::Program { name, args });
                }
                return Ok(Err(e));
            }
        };
        if Instant::now() >= deadline {
            return Err(wasmtime::Error::new(wasmtime::Trap::Interrupt));
        }
        let cwd = g.grant.cwd.clone().unwrap_or_else(|| self.workspace.to_path_buf());
        if g.grant.cwd.is_none()
            && self.create_workspace
            && !cwd.exists()
            && let Err(e) = crate::capability::fs::create_on_first_use(&cwd)
        {
            return Ok(Err(ProcessError::Workspace(e)));
        }
        tracing::info!(
            plugin = &*self.plugin,
            "running {} {args:?} in {}",
            g.grant.program.display(),
            cwd.display()
        );
        let confinement =
            match confine::Confinement::prepare(&g.grant, &cwd, &self.settings, confine::landlock_abi()) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(
                        plugin = &*self.plugin,
                        "refused to run {}: {e}",
                        g.grant.program.display()
                    );
                    return Ok(Err(e.into()));
                }
            };
        if !confinement.landlocked() {
            tracing::warn!(
                plugin = &*self.plugin,
                "running {} without Landlock ({})",
                g.grant.program.display(),
                confine::OPT_OUT
            );
        }
        spawn(&g, &args, &cwd, deadline, confinement).await
    }
}

/// The process group of a spawned child; dropping it kills the group unless disarmed.
struct Group {
    #[cfg(unix)]
    pgid: Option<rustix::process::Pid>,
    armed: bool,
}

impl Group {
    #[cfg_attr(not(unix), allow(unused_variables))] // no process groups to kill there
    fn new(pid: Option<u32>) -> Group {
        Group {
            // Never 0 or 1: kill(-1) would signal every process the host may signal.
            #[cfg(unix)]
            pgid: pid
                .and_then(|p| i32::try_from(p).ok())
                .filter(|p| *p > 1)
                .and_then(rustix::process::Pid::from_raw),
            armed: true,
        }
    }

    /// SIGKILL every process still in the group.
    fn kill(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // The call was abandoned mid-run (its future dropped): nothing it started outlives it.
        if self.armed {
            self.kill();
        }
    }
}

/// Read `r` into `buf` up to `cap` bytes; past the cap, mark `over` and kill the group.
async fn pump(
    r: Option<impl AsyncRead + Unpin>,
    buf: &std::sync::Mutex<Vec<u8>>,
    over: &AtomicBool,
    group: &Group,
) {
    let Some(mut r) = r else { return };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut b = buf.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_OUTPUT_BYTES - b.len();
        b.extend_from_slice(&chunk[..n.min(room)]);
        if n > room {
            over.store(true, Ordering::Relaxed);
            group.kill();
            return;
        }
    }
}

/// The command for one granted run: only the grant's environment, no stdin, output piped
/// (or discarded when detached), confined, killed if the call's future is dropped.
fn command(
    g: &GrantedProgram,
    args: &[String],
    cwd: &Path,
    confinement: confine::Confinement,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&g.grant.program);
    cmd.args(args)
        .env_clear()
        .envs(g.env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        // If this future is dropped, tokio kills the child and reaps it in the background.
        .kill_on_drop(true);
    if g.grant.detach {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    // Also its own process group (on Linux, its own session), so the deadline can kill
    // everything it started.
    confine::install(&mut cmd, confinement);
    cmd
}

async fn spawn(
    g: &GrantedProgram,
    args: &[String],
    cwd: &Path,
    deadline: Instant,
    confinement: confine::Confinement,
) -> wasmtime::Result<Result<Output, ProcessError>> {
    let program = &g.grant.program;
    let mut child = match command(g, args, cwd, confinement).spawn() {
        Ok(c) => c,
        Err(error) => {
            return Ok(Err(ProcessError::Spawn {
                program: program.clone(),
                name: g.grant.name.clone(),
                cwd: cwd.to_path_buf(),
                error,
            }));
        }
    };
    let mut group = Group::new(child.id());
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (out_buf, err_buf) = (std::sync::Mutex::new(Vec::new()), std::sync::Mutex::new(Vec::new()));
    let over = AtomicBool::new(false);
    let status = {
        let work = async {
            let mut readers = std::pin::pin!(async {
                tokio::join!(pump(out, &out_buf, &over, &group), pump(err, &err_buf, &over, &group))
            });
            let mut drained = false;
            let status = tokio::select! {
                s = child.wait() => s,
                _ = &mut readers => { drained = true; child.wait().await }
            };
            if !drained {
                // The program exited; something it left behind may still hold the pipes.
                let _ = tokio::time::timeout(DRAIN_GRACE, &mut readers).await;
            }
            status
        };
        tokio::time::timeout_at(deadline.into(), work).await
    };
    let status = match status {
        Ok(s) => s,
        Err(_elapsed) => {
            group.kill();
            group.armed = false;
            // Reap it (SIGKILL cannot be ignored, so this is quick); if the kernel is slow,
            // kill_on_drop and tokio's orphan reaper finish the job.
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
            tracing::warn!("killed {} (and its process group) at the call's deadline", program.display());
            return Err(wasmtime::Error::new(wasmtime::Trap::Interrupt));
        }
    };
    if !g.grant.detach {
        // Nothing the program started outlives the call.
        group.kill();
    }
    group.armed = false;
    let status = match status {
        Ok(s) => s,
        Err(error) => return Ok(Err(ProcessError::Wait { program: program.clone(), error })),
    };
    let take = |m: std::sync::Mutex<Vec<u8>>| m.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Ok(Output {
        code: status.code(),
        stdout: take(out_buf),
        stderr: take(err_buf),
        truncated: over.load(Ordering::Relaxed),
    }))
}

impl Host for ProcessCall {
    /// Every check and bound is in [`ProcessCall::run`].
    /// A child span of the call's when telemetry is on: the program's file name and the exit
    /// code (never its arguments).
    async fn run(&mut self, program: String, args: Vec<String>) -> wasmtime::Result<Result<Output, String>> {
        use crate::telemetry::attr;
        let span = crate::telemetry::host_span("process", || {
            let name = std::path::Path::new(&program).file_name().map(|n| n.to_string_lossy().into_owned());
            vec![attr("process.executable.name", name.unwrap_or_default())]
        });
        let r = ProcessCall::run(self, program, args).await;
        span.end(!matches!(r, Ok(Ok(_))), || match &r {
            Ok(Ok(o)) => o.code.map(|c| vec![attr("process.exit.code", i64::from(c))]).unwrap_or_default(),
            _ => vec![attr("error.type", "refused_or_failed")],
        });
        // The guest reads the text; what the host needs of a refusal is recorded in `refused`.
        r.map(|run| run.map_err(|e| e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn only_requested_and_granted_programs_are_given() {
        let g = |p: &str| ExecGrant::new(p.into());
        let (exec, missing) =
            effective("sys", &args(&["git", "xdg-open"]), &[g("/usr/bin/git"), g("/bin/rm")]);
        assert_eq!(exec.granted.len(), 1, "rm was granted but not requested: not given");
        assert_eq!(exec.granted[0].grant.program, PathBuf::from("/usr/bin/git"));
        assert_eq!(missing.len(), 1);
        assert!(missing[0].how.contains("--allow-run sys=xdg-open"), "{:?}", missing[0]);
        let (exec, missing) = effective("sys", &args(&["*"]), &[g("/usr/bin/git"), g("/bin/rm")]);
        assert_eq!(exec.granted.len(), 2, "`*` takes whatever is granted");
        assert!(missing.is_empty());
        let (_, missing) = effective("sys", &args(&["*"]), &[]);
        assert!(missing[0].how.contains("--allow-run sys=PROGRAM"), "{:?}", missing[0]);
    }

    #[test]
    fn a_refusal_for_want_of_a_grant_is_told_by_its_variant() {
        let call = |requested: &[&str], granted: &[&str]| {
            let granted: Vec<ExecGrant> = granted.iter().map(|p| ExecGrant::new(p.into())).collect();
            let (exec, _) = effective("sys", &args(requested), &granted);
            ProcessCall { exec: Arc::new(exec), ..ProcessCall::none(Arc::from("sys")) }
        };
        let c = call(&["git", "xdg-open"], &["/usr/bin/git"]);
        let e = c.find("xdg-open").unwrap_err();
        assert!(matches!(e, ProcessError::NotGranted { .. }), "{e}");
        assert!(e.to_string().contains("the operator can add [plugin.sys] exec = [{ program = \""), "{e}");
        assert_eq!(c.ungranted(&e), Some("xdg-open"), "a question can be about it");
        let e = c.find("rm").unwrap_err();
        assert!(matches!(e, ProcessError::NotRequested { .. }) && c.ungranted(&e).is_none(), "{e}");
        let e = c.find("/usr/bin/xdg-open").unwrap_err();
        assert!(matches!(e, ProcessError::NotGranted { .. }) && c.ungranted(&e).is_none(), "by path: {e}");
        let e = c.find("./git").unwrap_err();
        assert!(matches!(e, ProcessError::RelativePath { .. }) && c.ungranted(&e).is_none(), "{e}");
        let e = c.check_args(c.find("git").unwrap(), &args(&["a\0b"])).unwrap_err();
        assert_eq!(e.to_string(), "argument 1 contains a NUL character");
        let c = call(&["git"], &[]);
        let e = c.find("git").unwrap_err();
        assert!(matches!(e, ProcessError::NothingGranted { .. }) && c.ungranted(&e) == Some("git"), "{e}");
        let e = call(&[], &[]).find("git").unwrap_err();
        assert!(matches!(e, ProcessError::NothingRequested { .. }), "{e}");
    }
}

//! Confinement of the programs run for plugins: what the operating system lets a granted
//! program do, whatever files a plugin planted for it (a repository's hooks, a symlink out of
//! the workspace, a build file).
//!
//! On Linux every granted program runs confined (see [`Confinement`]):
//! - **Landlock** (applied in the child just before `exec`, with `PR_SET_NO_NEW_PRIVS`): read
//!   and execute under the system paths (`[process] system_paths`, default
//!   [`DEFAULT_SYSTEM_PATHS`]), read and write of a few device files under `/dev` ([`DEVICES`]: the
//!   null, zero and full devices, and the random ones), the program file itself, its working
//!   directory read-only (read-write with the grant's `write = true`), and the grant's own `fs`
//!   paths; nothing else of the filesystem. Signals and abstract Unix sockets are scoped to the
//!   sandbox where the kernel has those rules (Landlock ABI 6).
//! - **No network** unless the grant says `network = true`: a network namespace of its own (no
//!   interface but a down loopback: no TCP, no UDP, no abstract Unix sockets of the host),
//!   Landlock's TCP rules where the kernel has them (ABI 4), and `socket(AF_UNIX)` refused by the
//!   seccomp filter (pathname Unix sockets — D-Bus, systemd, Docker — are not covered by Landlock
//!   before ABI 9).
//! - **A seccomp filter** on every run (`confine/seccomp.rs`), network or not: no key system calls (the
//!   operator's session keyring is inherited and no namespace replaces it), no vsock sockets (the
//!   hypervisor's side of a virtual machine; no namespace covers them), no `TIOCSTI`/`TIOCLINUX`
//!   (typing into a terminal), no `io_uring_setup` (whose operations seccomp cannot see).
//! - **Nothing of the host's process**: an IPC namespace of its own (no SysV shared memory,
//!   semaphores or message queues of other processes), a session of its own with no controlling
//!   terminal, and no descriptor but its stdin (`/dev/null`), stdout and stderr (pipes to the host;
//!   `/dev/null` for `detach` grants): every other one is closed at `exec`
//!   (`close_range(CLOSE_RANGE_CLOEXEC)`), whatever the host or its parent left open.
//! - **Nothing outlives the call**: a PID namespace of its own in which the program is PID 1,
//!   so when it exits or is killed the kernel kills every process left in the namespace,
//!   `setsid` and double forks included. Between the host and the program sits one small
//!   supervising process (a fork of the host that only waits and exits with the program's
//!   status); the program gets `PR_SET_PDEATHSIG(SIGKILL)`, so killing the supervisor (the
//!   child the host knows) kills the namespace. `detach = true` grants (launchers whose
//!   applications must outlive them) get no PID namespace, and are still confined by Landlock,
//!   the network rules, the seccomp filter, the IPC and user namespaces and their own session —
//!   and so are the applications they start.
//! - A **user namespace** mapping only the operator's own user and group, so the namespaces can
//!   be made without privileges and a host running as root gives the program no capabilities
//!   over the host (no module loading, no raw I/O, no BPF).
//!
//! Where the kernel has no Landlock, or refuses the namespaces, programs are refused (at start,
//! for Landlock, with a message naming the opt-out) unless the operator sets
//! `[process] allow_unconfined = true`; then the host applies whatever the kernel allows.
//! Elsewhere than Linux there is no confinement, so the opt-out is needed there too.

use super::ExecGrant;
pub use super::settings::DEFAULT_SYSTEM_PATHS;
use super::settings::ProcessSettings;
pub use error::ConfineError;
#[cfg(target_os = "linux")]
pub use error::RulesetProblem;
use std::path::{Path, PathBuf};
use toolhost_spec::manifest::FsMode;

/// Device files (under `/dev`) every granted program may use, and how.
pub const DEVICES: &[(&str, FsMode)] = &[
    ("null", FsMode::ReadWrite),
    ("full", FsMode::ReadWrite),
    ("zero", FsMode::ReadOnly),
    ("random", FsMode::ReadOnly),
    ("urandom", FsMode::ReadOnly),
];

/// The setting that runs programs where the kernel cannot confine them, as messages name it.
pub const OPT_OUT: &str = "[process] allow_unconfined = true";

/// One path a confined program may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub path: PathBuf,
    /// Read-only: read, list, execute. Read-write: everything Landlock knows of, beneath it.
    pub mode: FsMode,
    /// Named by the grant (a missing one refuses the run) rather than a system path or device
    /// (a missing one is skipped).
    pub required: bool,
}

/// Everything one run of `grant` in `cwd` may touch, in order: system paths, devices, the
/// program itself, the working directory, the grant's `fs` paths.
pub fn rules(grant: &ExecGrant, cwd: &Path, settings: &ProcessSettings) -> Vec<Rule> {
    let mut out: Vec<Rule> = settings
        .system_paths
        .iter()
        .map(|p| Rule { path: p.clone(), mode: FsMode::ReadOnly, required: false })
        .collect();
    let dev = Path::new("/dev");
    out.extend(DEVICES.iter().map(|(name, mode)| Rule {
        path: dev.join(name),
        mode: *mode,
        required: false,
    }));
    out.push(Rule { path: grant.program.clone(), mode: FsMode::ReadOnly, required: true });
    let cwd_mode = if grant.write { FsMode::ReadWrite } else { FsMode::ReadOnly };
    out.push(Rule { path: cwd.to_path_buf(), mode: cwd_mode, required: true });
    out.extend(grant.fs.iter().map(|p| Rule { path: p.path.clone(), mode: p.mode, required: true }));
    out
}

/// Refuse `exec` grants at start when the kernel cannot confine them (`abi`: the kernel's
/// Landlock ABI version, 0 for none — see [`landlock_abi`]) and the operator has not opted out.
/// `grants`: each plugin's name and its `exec` grants.
pub fn check_support<'a>(
    abi: i32,
    settings: &ProcessSettings,
    grants: impl Iterator<Item = (&'a str, &'a [ExecGrant])>,
) -> Result<(), ConfineError> {
    if abi >= 1 || settings.allow_unconfined {
        return Ok(());
    }
    let granted: Vec<String> = grants
        .filter(|(_, exec)| !exec.is_empty())
        .map(|(name, exec)| {
            let programs: Vec<String> = exec.iter().map(|g| g.program.display().to_string()).collect();
            format!("plugin `{name}` ({})", programs.join(", "))
        })
        .collect();
    if granted.is_empty() {
        return Ok(());
    }
    Err(ConfineError::Unsupported { granted, reason: no_landlock_reason() })
}

fn no_landlock_reason() -> &'static str {
    if cfg!(target_os = "linux") {
        "this kernel has no Landlock (Linux 5.13 or later, with `landlock` in its lsm= list)"
    } else {
        "this operating system has no Landlock (programs are confined on Linux only)"
    }
}

mod error;

#[cfg(target_os = "linux")]
pub use linux::{Confinement, install, landlock_abi};

#[cfg(not(target_os = "linux"))]
pub use other::{Confinement, install, landlock_abi};

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
))]
mod seccomp;

/// No filter is written for this architecture: keys, vsock, `TIOCSTI` and, without network, Unix
/// sockets stay reachable (see SECURITY.md); TCP and UDP are still cut by the network namespace,
/// and the terminal by the new session.
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64"))
))]
mod seccomp {
    pub(crate) fn install(_network: bool) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::RulesetProblem;
    use super::{ConfineError, ProcessSettings, Rule, no_landlock_reason, rules, seccomp};
    use crate::capability::process::ExecGrant;
    use landlock::{
        ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope,
    };
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::Path;
    use std::sync::OnceLock;
    use toolhost_spec::manifest::FsMode;

    /// The Landlock ABI whose access rights are handled (and tested). The kernel enforces what
    /// it knows of them: older kernels a subset (see SECURITY.md), newer ones exactly these.
    const TARGET_ABI: ABI = ABI::V7;

    /// The kernel's Landlock ABI version; 0 when it has none (asked once).
    #[allow(unsafe_code)]
    pub fn landlock_abi() -> i32 {
        static ABI_VERSION: OnceLock<i32> = OnceLock::new();
        *ABI_VERSION.get_or_init(|| {
            const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
            // SAFETY: with a null attribute, size 0 and the VERSION flag, the system call reads
            // and writes no memory; it only returns the ABI version (or an error).
            let v = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                    LANDLOCK_CREATE_RULESET_VERSION,
                )
            };
            i32::try_from(v).unwrap_or(0).max(0)
        })
    }

    /// Everything the child needs between `fork` and `exec`, prepared in the host (where
    /// allocating and opening files is allowed), so that `Confinement::enter` only makes
    /// system calls on memory that already exists.
    #[derive(Debug)]
    pub struct Confinement {
        /// The Landlock ruleset; `None` only under the opt-out on a kernel without Landlock.
        ruleset: Option<OwnedFd>,
        /// `CLONE_NEW*` flags for `unshare`.
        namespaces: libc::c_int,
        uid_map: Vec<u8>,
        gid_map: Vec<u8>,
        /// The grant's `network`: which seccomp filter (see `seccomp.rs`).
        network: bool,
        /// The opt-out: a namespace the kernel refuses is done without.
        best_effort: bool,
    }

    impl Confinement {
        /// Prepare the confinement of one run of `grant` in `cwd`. `abi`: the kernel's Landlock
        /// ABI version ([`landlock_abi`]).
        pub fn prepare(
            grant: &ExecGrant,
            cwd: &Path,
            settings: &ProcessSettings,
            abi: i32,
        ) -> Result<Confinement, ConfineError> {
            let rules = rules(grant, cwd, settings);
            let ruleset =
                if abi >= 1 {
                    Some(ruleset(&rules, grant.network).map_err(|problem| ConfineError::Ruleset {
                        program: grant.program.clone(),
                        problem,
                    })?)
                } else if settings.allow_unconfined {
                    None
                } else {
                    return Err(ConfineError::NoLandlock {
                        program: grant.program.clone(),
                        reason: no_landlock_reason(),
                    });
                };
            // SysV shared memory, semaphores and message queues (and POSIX message queues) of its
            // own, `detach` grants too: what they start (a browser, an editor) loses only X11's
            // MIT-SHM, which its clients do without when the server cannot attach.
            let mut namespaces = libc::CLONE_NEWUSER | libc::CLONE_NEWIPC;
            if !grant.detach {
                namespaces |= libc::CLONE_NEWPID;
            }
            if !grant.network {
                namespaces |= libc::CLONE_NEWNET;
            }
            let uid = rustix::process::geteuid().as_raw();
            let gid = rustix::process::getegid().as_raw();
            Ok(Confinement {
                ruleset,
                namespaces,
                uid_map: format!("{uid} {uid} 1\n").into_bytes(),
                gid_map: format!("{gid} {gid} 1\n").into_bytes(),
                network: grant.network,
                best_effort: settings.allow_unconfined,
            })
        }

        /// Whether the kernel enforces a Landlock ruleset for this run.
        pub fn landlocked(&self) -> bool {
            self.ruleset.is_some()
        }

        /// In the child, between `fork` and `exec`: a session of its own, enter the namespaces,
        /// make the program PID 1 of its own PID namespace (this process stays behind as its
        /// supervisor and never returns), restrict it, then have `exec` close every descriptor
        /// but stdin, stdout and stderr. Only async-signal-safe system calls on memory prepared
        /// before the fork: no allocation, no locks (the host is multi-threaded).
        #[allow(unsafe_code)]
        fn enter(&self) -> io::Result<()> {
            // SAFETY (whole function): every call is a plain system call (or libc's thin
            // wrapper of one) on integers, on C string literals, or on buffers owned by `self`,
            // which lives in this (forked) address space until `exec`. Nothing allocates, takes
            // a lock or touches the host's threads, which do not exist in this child.
            unsafe {
                // No controlling terminal: no `/dev/tty`, and `TIOCSTI` into the operator's
                // terminal is refused even through a descriptor to it. It is also the process
                // group the host kills (its id is this process's), with the supervisor and,
                // until `exec`, the program in it.
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                let mut pid_namespace = false;
                if self.namespaces != 0 {
                    if libc::unshare(self.namespaces) == 0 {
                        // Without privileges, the group map needs setgroups denied first; a
                        // kernel without the file (before 3.19) does not need it.
                        match write_proc(c"/proc/self/setgroups", b"deny") {
                            Err(e) if e.raw_os_error() != Some(libc::ENOENT) => return Err(e),
                            _ => {}
                        }
                        write_proc(c"/proc/self/uid_map", &self.uid_map)?;
                        write_proc(c"/proc/self/gid_map", &self.gid_map)?;
                        pid_namespace = self.namespaces & libc::CLONE_NEWPID != 0;
                    } else if !self.best_effort {
                        return Err(io::Error::last_os_error());
                    }
                }
                if pid_namespace {
                    // A raw clone, not libc's fork: fork runs atfork handlers and takes
                    // malloc's locks, which another host thread may have held at the first fork.
                    let pid = raw_fork();
                    if pid < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if pid > 0 {
                        supervise(pid as libc::pid_t);
                    }
                    // PID 1 of the namespace: when the supervisor dies, so does the namespace.
                    // (Killed before this line, it takes this process with it anyway: the host
                    // kills the whole process group, and this process is still in it.)
                    if prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                if prctl(libc::PR_SET_NO_NEW_PRIVS, 1) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(fd) = &self.ruleset {
                    let fd = fd.as_raw_fd();
                    if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    libc::close(fd);
                }
                // Under the opt-out, a kernel without seccomp filters is done without too.
                if let Err(e) = seccomp::install(self.network)
                    && !self.best_effort
                {
                    return Err(e);
                }
                close_on_exec_from(3);
            }
            Ok(())
        }
    }

    /// Build the Landlock ruleset for `rules` (paths opened now, in the host).
    fn ruleset(rules: &[Rule], network: bool) -> Result<OwnedFd, RulesetProblem> {
        let err = RulesetProblem::Landlock;
        let mut rs = Ruleset::default().handle_access(AccessFs::from_all(TARGET_ABI)).map_err(err)?;
        if !network {
            rs = rs.handle_access(AccessNet::from_all(TARGET_ABI)).map_err(err)?;
        }
        let mut created = rs.scope(Scope::from_all(TARGET_ABI)).map_err(err)?.create().map_err(err)?;
        for r in rules {
            let Ok(meta) = std::fs::metadata(&r.path) else {
                if r.required {
                    return Err(RulesetProblem::Missing(r.path.clone()));
                }
                continue;
            };
            let fd = match PathFd::new(&r.path) {
                Ok(fd) => fd,
                Err(_) if !r.required => continue,
                Err(error) => return Err(RulesetProblem::Open { path: r.path.clone(), error }),
            };
            let mut access = match r.mode {
                FsMode::ReadOnly => AccessFs::from_read(TARGET_ABI),
                FsMode::ReadWrite => AccessFs::from_all(TARGET_ABI),
            };
            if !meta.is_dir() {
                access &= AccessFs::from_file(TARGET_ABI);
            }
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(err)?;
        }
        Option::<OwnedFd>::from(created).ok_or(RulesetProblem::NotCreated)
    }

    /// Mark every descriptor from `first` up close-on-exec, so the program gets none of the
    /// host's (a file it opened without `O_CLOEXEC`, a terminal it inherited). Marked, not
    /// closed: one of them is the exec-error pipe of `std::process` (already close-on-exec),
    /// through which a failed `exec`, or an error of `Confinement::enter`, reaches the host.
    #[allow(unsafe_code)]
    fn close_on_exec_from(first: libc::c_uint) {
        // SAFETY: system calls on integers and a local struct; all async-signal-safe.
        unsafe {
            if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC) == 0
            {
                return;
            }
            // Before Linux 5.11 (only under the opt-out: Landlock came in 5.13), or under a
            // seccomp policy of the host's own that refuses close_range: one by one, up to the
            // highest descriptor the process may have had (the kernel's default cap at most).
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_max.min(1 << 20) as libc::c_int
            } else {
                1 << 20
            };
            for fd in first as libc::c_int..top {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }

    /// `prctl(option, arg2, 0, 0, 0)`, every argument a full `unsigned long` (the kernel
    /// refuses some options whose unused arguments are not zero).
    #[allow(unsafe_code)]
    fn prctl(option: libc::c_int, arg2: libc::c_ulong) -> libc::c_int {
        let zero: libc::c_ulong = 0;
        // SAFETY: the options used here (no_new_privs, pdeathsig, dumpable) take integers
        // only; prctl is async-signal-safe.
        unsafe { libc::prctl(option, arg2, zero, zero, zero) }
    }

    /// Open, write and close a `/proc/self` file (the namespace maps).
    #[allow(unsafe_code)]
    fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
        // SAFETY: `path` is NUL-terminated and `data` a live buffer of `data.len()` bytes; the
        // descriptor is ours and closed before returning. All three calls are
        // async-signal-safe.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, data.as_ptr().cast(), data.len());
            let err = io::Error::last_os_error();
            libc::close(fd);
            if n != data.len() as isize {
                return Err(err);
            }
        }
        Ok(())
    }

    /// `fork` as a bare system call: the child continues here, returning 0.
    #[allow(unsafe_code)]
    fn raw_fork() -> libc::c_long {
        let flags = libc::SIGCHLD as libc::c_ulong;
        // SAFETY: clone without CLONE_VM (a copy of this single-threaded process, like fork)
        // and without a new stack, TLS or TID pointers. The child only makes system calls until
        // `exec`, so libc's per-thread state it does not update is never used.
        unsafe {
            #[cfg(target_arch = "s390x")]
            {
                libc::syscall(libc::SYS_clone, 0usize, flags)
            }
            #[cfg(not(target_arch = "s390x"))]
            {
                libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize)
            }
        }
    }

    /// The supervisor: a fork of the host between it and the program. It closes every
    /// descriptor (so the host's pipes see their end, and the host's exec-error pipe closes when
    /// the program execs), waits for the program and exits as it did.
    #[allow(unsafe_code)]
    fn supervise(pid: libc::pid_t) -> ! {
        // SAFETY: system calls only, on integers and a local status word; `_exit` never returns.
        unsafe {
            // The host's signal handlers (tokio's, the shutdown's) were copied with the fork and
            // would write to descriptors closed below: the defaults instead (SIGTERM ends it).
            for sig in 1..32 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            // It holds a copy of the host's memory: no core dump, no ptrace by its peers.
            prctl(libc::PR_SET_DUMPABLE, 0);
            if libc::syscall(libc::SYS_close_range, 0 as libc::c_uint, libc::c_uint::MAX, 0 as libc::c_uint)
                != 0
            {
                for fd in 0..4096 {
                    libc::close(fd);
                }
            }
            let mut status: libc::c_int = 0;
            loop {
                let r = libc::waitpid(pid, &mut status, 0);
                if r == pid {
                    break;
                }
                if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    libc::_exit(127);
                }
            }
            if libc::WIFEXITED(status) {
                libc::_exit(libc::WEXITSTATUS(status));
            }
            let sig = libc::WTERMSIG(status);
            // Die of the same signal, so the host sees what the program saw.
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
    }

    /// Confine the program `cmd` will run.
    #[allow(unsafe_code)]
    pub fn install(cmd: &mut tokio::process::Command, c: Confinement) {
        // SAFETY: the closure runs in the forked child before `exec`; `Confinement::enter` is
        // async-signal-safe (system calls on memory prepared before the fork, see there).
        unsafe {
            cmd.pre_exec(move || c.enter());
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use super::{ConfineError, ProcessSettings, no_landlock_reason};
    use crate::capability::process::ExecGrant;
    use std::path::Path;

    pub fn landlock_abi() -> i32 {
        0
    }

    /// No confinement exists here: only the opt-out runs programs.
    #[derive(Debug)]
    pub struct Confinement;

    impl Confinement {
        pub fn prepare(
            grant: &ExecGrant,
            _cwd: &Path,
            settings: &ProcessSettings,
            _abi: i32,
        ) -> Result<Confinement, ConfineError> {
            if settings.allow_unconfined {
                Ok(Confinement)
            } else {
                Err(ConfineError::NoLandlock { program: grant.program.clone(), reason: no_landlock_reason() })
            }
        }

        pub fn landlocked(&self) -> bool {
            false
        }
    }

    /// Only a process group of its own (what the host kills at the deadline).
    pub fn install(cmd: &mut tokio::process::Command, _c: Confinement) {
        #[cfg(unix)]
        cmd.process_group(0);
        #[cfg(not(unix))]
        let _ = cmd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::process::settings::RawProcess;
    use crate::capability::process::{ExecGrant, ExecPath};
    use crate::settings::Config;

    fn grant() -> ExecGrant {
        ExecGrant::new(PathBuf::from("/usr/bin/git"))
    }

    #[test]
    fn rules_name_the_system_the_program_and_its_directories() {
        let settings = ProcessSettings::default();
        let r = rules(&grant(), Path::new("/work/space"), &settings);
        let find = |p: &str| r.iter().find(|r| r.path == Path::new(p)).cloned();
        for p in DEFAULT_SYSTEM_PATHS {
            assert_eq!(find(p), Some(Rule { path: p.into(), mode: FsMode::ReadOnly, required: false }));
        }
        assert_eq!(find("/dev/null").unwrap().mode, FsMode::ReadWrite);
        assert_eq!(find(&format!("/dev/{}", DEVICES[4].0)).unwrap().mode, FsMode::ReadOnly);
        assert_eq!(
            find("/usr/bin/git"),
            Some(Rule { path: "/usr/bin/git".into(), mode: FsMode::ReadOnly, required: true })
        );
        assert_eq!(
            find("/work/space"),
            Some(Rule { path: "/work/space".into(), mode: FsMode::ReadOnly, required: true }),
            "the working directory is read-only by default"
        );
        assert!(find("/tmp").is_none() && find("/home").is_none() && find("/proc").is_none());
        assert!(!r.iter().any(|r| r.mode == FsMode::ReadWrite && !r.path.starts_with("/dev")));

        let g = ExecGrant {
            write: true,
            fs: vec![
                ExecPath { path: "/home/me/.cache".into(), mode: FsMode::ReadWrite },
                ExecPath { path: "/srv/docs".into(), mode: FsMode::ReadOnly },
            ],
            ..grant()
        };
        let settings = ProcessSettings { system_paths: vec!["/nix/store".into()], allow_unconfined: false };
        let r = rules(&g, Path::new("/work/space"), &settings);
        let find = |p: &str| r.iter().find(|r| r.path == Path::new(p)).cloned();
        assert_eq!(find("/work/space").unwrap().mode, FsMode::ReadWrite, "write = true");
        assert_eq!(find("/home/me/.cache").unwrap().mode, FsMode::ReadWrite);
        assert_eq!(find("/srv/docs").unwrap().mode, FsMode::ReadOnly);
        assert!(find("/nix/store").is_some() && find("/usr").is_none(), "system_paths replaces the default");
    }

    #[test]
    fn system_paths_must_be_absolute() {
        let raw: RawProcess = toml::from_str("system_paths = [\"/usr\", \"lib\"]").unwrap();
        let e = raw.resolve().unwrap_err().to_string();
        assert!(e.contains("process.system_paths[1]") && e.contains("absolute"), "{e}");
        let raw: RawProcess = toml::from_str("allow_unconfined = true").unwrap();
        let s = raw.resolve().unwrap();
        assert!(s.allow_unconfined);
        assert_eq!(s.system_paths, ProcessSettings::default().system_paths);
    }

    #[test]
    fn without_landlock_exec_grants_are_refused_unless_the_operator_opts_out() {
        let toml = "[plugin.sys]\nexec = [{ program = \"/usr/bin/git\" }]\n";
        let cfg = Config::from_str_at(toml, Path::new("/"), None).unwrap();
        let e = check_support(0, &cfg.process, cfg.exec_grants()).unwrap_err();
        assert!(
            matches!(&e, ConfineError::Unsupported { granted, .. } if granted == &["plugin `sys` (/usr/bin/git)"])
        );
        let e = e.to_string();
        assert!(e.contains("plugin `sys` (/usr/bin/git)") && e.contains("Landlock"), "{e}");
        assert!(e.contains("[process] allow_unconfined = true"), "{e}");
        assert!(
            check_support(7, &cfg.process, cfg.exec_grants()).is_ok(),
            "a kernel with Landlock confines them"
        );
        assert!(check_support(1, &cfg.process, cfg.exec_grants()).is_ok());
        let cfg =
            Config::from_str_at(&format!("[process]\nallow_unconfined = true\n{toml}"), Path::new("/"), None)
                .unwrap();
        assert!(check_support(0, &cfg.process, cfg.exec_grants()).is_ok(), "the opt-out");
        let cfg = Config::from_str_at("[plugin.sys]\nenv = [\"LANG\"]\n", Path::new("/"), None).unwrap();
        assert!(
            check_support(0, &cfg.process, cfg.exec_grants()).is_ok(),
            "no program granted: nothing to confine"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_ruleset_is_prepared_and_a_missing_granted_path_refuses_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let settings = ProcessSettings::default();
        let sh = PathBuf::from("/bin/sh");
        let g = ExecGrant::new(sh.clone());
        let abi = landlock_abi();
        match Confinement::prepare(&g, dir.path(), &settings, abi) {
            Ok(c) => assert_eq!(c.landlocked(), abi >= 1),
            Err(e) => assert!(abi < 1 && e.to_string().contains(OPT_OUT), "{e}"),
        }
        if abi >= 1 {
            let g = ExecGrant {
                fs: vec![ExecPath { path: dir.path().join("missing"), mode: FsMode::ReadOnly }],
                ..ExecGrant::new(sh.clone())
            };
            let e = Confinement::prepare(&g, dir.path(), &settings, abi).unwrap_err();
            assert!(
                matches!(&e, ConfineError::Ruleset { problem: RulesetProblem::Missing(p), .. } if p.ends_with("missing")),
                "{e}"
            );
            assert!(e.to_string().contains("missing (named by its grant) does not exist"), "{e}");
        }
        // Simulated: a kernel without Landlock.
        let e = Confinement::prepare(&g, dir.path(), &settings, 0).unwrap_err();
        assert!(matches!(e, ConfineError::NoLandlock { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("no Landlock") && e.contains(OPT_OUT), "{e}");
        let opt_out = ProcessSettings { allow_unconfined: true, ..ProcessSettings::default() };
        assert!(!Confinement::prepare(&g, dir.path(), &opt_out, 0).unwrap().landlocked());
    }
}

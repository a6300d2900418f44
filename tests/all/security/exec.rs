//! Programs run for plugins are confined by the operating system (Landlock, namespaces), not
//! only by their argument lists (#26, 1): a repository a plugin planted, a symlink out of the
//! workspace, a daemon that leaves its session, a connection out — each fails, end to end
//! through the real `files` and `sys` plugins.

use crate::process::{all_gone, assert_stopped_growing, procs_with, watch_for};
use crate::support::{Env, Operator, call, err, ok};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use toolhost_core::ErrorKind;
use toolhost_core::executor::Decision;
use toolhost_core::settings::Config;

const GIT: &str = "/usr/bin/git";

/// The absolute path of `name` by this process's PATH.
fn bin(name: &str) -> String {
    toolhost_core::capability::process::resolve_in_path(name)
        .unwrap_or_else(|| panic!("{name} not in PATH"))
        .display()
        .to_string()
}

fn git() -> &'static str {
    assert!(Path::new(GIT).is_file(), "these tests run the real git: install it at {GIT}");
    GIT
}

/// The model's side of the attack, through the `files` plugin: a repository whose config runs
/// `hook` as its fsmonitor on every `git status`.
async fn plant_repository(host: &toolhost_core::Toolhost, hook: &str) {
    for dir in [".git/objects", ".git/refs/heads"] {
        ok(&call(host, "mkdir", &[dir]).await);
    }
    ok(&call(host, "write", &[".git/HEAD", "ref: refs/heads/main\n"]).await);
    let config = format!("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"{hook}\"\n");
    ok(&call(host, "write", &[".git/config", &config]).await);
    ok(&call(host, "write", &["notes.txt", "hello"]).await);
}

/// `files` writes the workspace; `sys` runs git with `grant` (the inside of an exec entry).
fn git_env(grant: &str) -> Env {
    Env::with_toml(
        &[plugin_artifacts::FILES, plugin_artifacts::SYSTEM],
        &format!(
            "[plugin.files]\nfs = [{{ path = \"workspace\", mode = \"rw\" }}]\n[plugin.sys]\nexec = [{{ program = \"{}\", args = [\"status\"]{grant} }}]\n",
            git()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_git_config_writes_nothing_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let pwned = outside.path().join("pwned");
    // The hook proves it ran by writing inside the workspace, and tries to write outside.
    let hook = format!("id > {}; id > ran-confined; echo", pwned.display());

    // The issue's configuration: git granted with `status` only, the workspace shared with
    // `files` (read-write). The program's directory is read-only to it by default.
    let env = git_env("");
    let host = env.host_yes();
    plant_repository(&host, &hook).await;
    let out = call(&host, "run", &["git", "status"]).await;
    assert!(!pwned.exists(), "the planted fsmonitor hook wrote outside the workspace: {out:?}");
    assert!(!env.ws("ran-confined").exists(), "the workspace is read-only to git by default");

    // Even a grant that lets git write its directory keeps the hook in there: it runs,
    // confined, and still cannot write outside.
    let env = git_env(", write = true");
    let host = env.host_yes();
    plant_repository(&host, &hook).await;
    let out = call(&host, "run", &["git", "status"]).await;
    assert!(env.ws("ran-confined").exists(), "the hook ran (confined): {out:?}");
    assert!(!pwned.exists(), "the planted fsmonitor hook wrote outside the workspace: {out:?}");
    let id = std::fs::read_to_string(env.ws("ran-confined")).unwrap();
    assert!(id.starts_with("uid="), "{id}");
}

/// The book's git grant (docs/src/running-programs.md, its `set_env`), as a reader copies it.
fn readme_git_grant() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(crate::support::root().join("docs/src/running-programs.md")).unwrap();
    let block = readme
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("GIT_CONFIG_COUNT"))
        .expect("the README has a git grant with GIT_CONFIG_COUNT");
    let cfg = Config::from_str_at(block, Path::new("/"), None).expect("the README's git grant parses");
    let grant = cfg
        .plugins
        .values()
        .flat_map(|p| &p.exec)
        .find(|g| g.name == "git")
        .expect("the README's block grants git");
    assert!(!grant.set_env.is_empty());
    grant.set_env.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_git_grant_turns_repository_commands_off() {
    let set_env = readme_git_grant();
    let table: Vec<String> = set_env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    let env = git_env(&format!(", write = true, set_env = {{ {} }}", table.join(", ")));
    let host = env.host_yes();
    plant_repository(&host, "id > hook-ran; echo").await;
    let out = ok(&call(&host, "run", &["git", "status"]).await);
    assert!(out.contains("notes.txt"), "git status still works: {out}");
    assert!(!env.ws("hook-ran").exists(), "the README's settings keep the planted fsmonitor from running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_through_an_argument_pattern_reads_nothing_outside() {
    let outside = tempfile::tempdir().unwrap();
    let secret = "the operator's secret, outside the workspace";
    std::fs::write(outside.path().join("secret"), secret).unwrap();
    let env = Env::with_toml(
        &[plugin_artifacts::SYSTEM],
        &format!("[plugin.sys]\nexec = [{{ program = \"{}\", args = [\"notes-*.txt\"] }}]\n", bin("cat")),
    );
    // What a plugin with a writable grant plants in the workspace.
    std::fs::write(env.ws("notes-0.txt"), "my notes").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), env.ws("notes-1.txt")).unwrap();
    let host = env.host_yes();
    assert_eq!(ok(&call(&host, "run", &["cat", "notes-0.txt"]).await), "my notes");
    let o = call(&host, "run", &["cat", "notes-1.txt"]).await;
    let shown = format!("{:?} {:?}", o.data, o.error);
    assert!(!shown.contains(secret), "read through the symlink: {shown}");
    let e = err(&o, ErrorKind::ToolError);
    assert!(e.contains("Permission denied"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_that_leave_the_session_die_with_the_call() {
    let env = Env::with_toml(
        &[plugin_artifacts::SYSTEM],
        &format!(
            "[plugin.sys]\nexec = [{{ program = \"{}\", env = [\"PATH\"], write = true }}]\n",
            bin("sh")
        ),
    );
    let host = env.host_yes();
    // A child in a session of its own, and a daemon (double fork, then a new session); each
    // keeps appending to its file in the workspace.
    let setsid = r#"["-c", "setsid sh -c 'while :; do echo x >> grows-setsid; sleep 0.05; done' > /dev/null 2>&1 & sleep 0.3"]"#;
    let daemon = r#"["-c", "( ( setsid sh -c 'while :; do echo x >> grows-daemon; sleep 0.05; done' > /dev/null 2>&1 & ) & ) ; sleep 0.3"]"#;
    let watch = watch_for("grows-setsid", 1, Duration::from_secs(5));
    ok(&call(&host, "run", &["sh", setsid]).await);
    let seen: Vec<u32> = watch.join().unwrap().into_iter().map(|(p, _)| p).collect();
    assert!(!seen.is_empty(), "the session leader was seen running");
    assert_stopped_growing(&env.ws("grows-setsid"), "a child in its own session");
    assert!(all_gone(&seen) && procs_with("grows-setsid").is_empty(), "{:?}", procs_with("grows-setsid"));

    ok(&call(&host, "run", &["sh", daemon]).await);
    assert_stopped_growing(&env.ws("grows-daemon"), "a double-forked daemon");
    assert!(all_gone(&procs_with("grows-daemon")), "{:?}", procs_with("grows-daemon"));
}

/// A loopback TCP listener and UDP socket; what reached them within `wait`.
struct Listeners {
    tcp: std::net::TcpListener,
    udp: std::net::UdpSocket,
}

impl Listeners {
    fn new() -> Listeners {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        Listeners { tcp, udp }
    }

    fn script(&self) -> String {
        let (t, u) = (self.tcp.local_addr().unwrap().port(), self.udp.local_addr().unwrap().port());
        format!(
            r#"["-c", "echo udp-hello > /dev/udp/127.0.0.1/{u}; echo tcp-hello > /dev/tcp/127.0.0.1/{t}"]"#
        )
    }

    /// (a TCP connection arrived, a UDP datagram arrived)
    fn reached(&self) -> (bool, bool) {
        std::thread::sleep(Duration::from_millis(200));
        let tcp = match self.tcp.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).unwrap();
                let mut got = String::new();
                let _ = s.read_to_string(&mut got);
                got.contains("tcp-hello")
            }
            Err(_) => false,
        };
        let mut buf = [0u8; 64];
        let udp = self.udp.recv(&mut buf).is_ok_and(|n| buf[..n].starts_with(b"udp-hello"));
        (tcp, udp)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_unless_the_grant_says_so() {
    let bash = bin("bash");
    let grant = |extra: &str| {
        Env::with_toml(
            &[plugin_artifacts::SYSTEM],
            &format!("[plugin.sys]\nexec = [{{ program = \"{bash}\"{extra} }}]\n"),
        )
    };
    let env = grant("");
    let l = Listeners::new();
    let o = call(&env.host_yes(), "run", &["bash", &l.script()]).await;
    assert!(!o.success, "connected without a network grant: {o:?}");
    assert_eq!(l.reached(), (false, false), "nothing reached the listeners (TCP, UDP)");

    // The control: the same program, granted the network.
    let env = grant(", network = true");
    let l = Listeners::new();
    ok(&call(&env.host_yes(), "run", &["bash", &l.script()]).await);
    assert_eq!(l.reached(), (true, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_local_unix_sockets_unless_the_grant_says_so() {
    // A local service on a Unix socket outside the workspace (as D-Bus, systemd or Docker are).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let reached = || {
        std::thread::sleep(Duration::from_millis(200));
        match listener.accept() {
            Ok((mut s, _)) => {
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
                true
            }
            Err(_) => false,
        }
    };
    let curl = bin("curl");
    let args = format!(r#"["-s", "-m", "2", "--unix-socket", "{}", "http://local/"]"#, path.display());
    let env = Env::with_toml(
        &[plugin_artifacts::SYSTEM],
        &format!("[plugin.sys]\nexec = [{{ program = \"{curl}\" }}]\n"),
    );
    let o = call(&env.host_yes(), "run", &["curl", &args]).await;
    assert!(!o.success, "{o:?}");
    assert!(!reached(), "a program without network reached a Unix socket outside its grant");
    let env = Env::with_toml(
        &[plugin_artifacts::SYSTEM],
        &format!("[plugin.sys]\nexec = [{{ program = \"{curl}\", network = true }}]\n"),
    );
    let _ = call(&env.host_yes(), "run", &["curl", &args]).await;
    assert!(reached(), "the control: granted the network, it connects");
}

#[test]
fn without_landlock_exec_grants_are_refused_at_start_unless_the_operator_opts_out() {
    let toml = "[plugin.sys]\nexec = [{ program = \"/usr/bin/git\", args = [\"status\"] }]\n";
    let cfg = Config::from_str_at(toml, Path::new("/"), None).unwrap();
    // A kernel without Landlock (ABI 0), simulated.
    let e = toolhost_core::capability::process::confine::check_support(0, &cfg.process, cfg.exec_grants())
        .unwrap_err()
        .to_string();
    assert!(e.contains("plugin `sys` (/usr/bin/git)") && e.contains("no Landlock"), "{e}");
    assert!(e.contains("[process] allow_unconfined = true"), "the message names the opt-out: {e}");
    // The same refusal if a host is built without the start check: the run is refused.
    let grant = &cfg.plugins["sys"].exec[0];
    let e = toolhost_core::capability::process::confine::Confinement::prepare(
        grant,
        Path::new("/"),
        &cfg.process,
        0,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("[process] allow_unconfined = true"), "{e}");

    let cfg =
        Config::from_str_at(&format!("[process]\nallow_unconfined = true\n{toml}"), Path::new("/"), None)
            .unwrap();
    assert!(
        toolhost_core::capability::process::confine::check_support(0, &cfg.process, cfg.exec_grants())
            .is_ok(),
        "the operator opted out"
    );
    let grant = &cfg.plugins["sys"].exec[0];
    toolhost_core::capability::process::confine::Confinement::prepare(grant, Path::new("/"), &cfg.process, 0)
        .unwrap();
    // This kernel has Landlock: the start check passes without the opt-out.
    assert!(
        toolhost_core::capability::process::confine::landlock_abi() >= 1,
        "the test machine's kernel has Landlock"
    );
    let cfg = Config::from_str_at(toml, Path::new("/"), None).unwrap();
    toolhost_core::capability::process::confine::check_support(
        toolhost_core::capability::process::confine::landlock_abi(),
        &cfg.process,
        cfg.exec_grants(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_over_files_plugins_can_write_is_flagged() {
    let env = git_env("");
    let flag = "git runs over files plugins can write";
    let list = toolhost::commands::list::render_list(&env.registry(), &env.config);
    assert!(
        list.contains(&format!("warning:   {flag} (files: {})", env.workspace.path().display())),
        "{list}"
    );
    let recorder = Operator::answering(Decision::Deny("declined by the test".into()));
    let host = env.host_with(recorder.clone());
    err(&call(&host, "run", &["git", "status"]).await, ErrorKind::Denied);
    let asked = recorder.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].notes.iter().any(|n| n.starts_with(flag)), "{:?}", asked[0].notes);

    // Not flagged when no plugin may write where git runs.
    let elsewhere = tempfile::tempdir().unwrap();
    let env = Env::with_toml(
        &[plugin_artifacts::FILES, plugin_artifacts::SYSTEM],
        &format!(
            "[plugin.files]\nfs = [{{ path = \"workspace\", mode = \"ro\" }}]\n[plugin.sys]\nexec = [{{ program = \"{}\", cwd = \"{}\" }}]\n",
            git(),
            elsewhere.path().display()
        ),
    );
    let list = toolhost::commands::list::render_list(&env.registry(), &env.config);
    assert!(!list.contains(flag), "{list}");
}

// ---- what a program shares with the host's process (#55, 3) ----

const PYTHON: &str = "/usr/bin/python3";

/// A model has `sys` run a Python script, by the operator's command line: `toolhost call -y run
/// /usr/bin/python3 '["-c", SCRIPT]'`, with python3 granted to `sys` by a config of its own
/// (`extra`: the rest of the grant) outside the workspace and plugins folder. How toolhost
/// itself was started — descriptors it inherited, a session keyring, a terminal — is each
/// test's to add to [`Python::command`].
struct Python {
    env: Env,
    config: tempfile::TempDir,
}

impl Python {
    fn new(extra: &str) -> Python {
        assert!(Path::new(PYTHON).is_file(), "these tests run the real python3: install it at {PYTHON}");
        let config = tempfile::tempdir().unwrap();
        let toml = format!("[plugin.sys]\nexec = [{{ program = \"{PYTHON}\"{extra} }}]\n");
        std::fs::write(config.path().join("toolhost.toml"), toml).unwrap();
        Python { env: Env::with(&[plugin_artifacts::SYSTEM]), config }
    }

    fn command(&self, script: &str) -> Command {
        let args = serde_json::to_string(&["-c", script]).unwrap();
        let mut cmd = self.env.command();
        cmd.arg("--config")
            .arg(self.config.path().join("toolhost.toml"))
            .args(["call", "-y", "run", PYTHON, &args])
            .stdin(Stdio::null());
        cmd
    }
}

/// Run a `toolhost call` to its end: what it printed (the program's output).
#[track_caller]
fn stdout_of(mut cmd: Command) -> String {
    let o = cmd.output().expect("run toolhost");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "toolhost failed: {out}\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Start `cmd` with this process's `fd` open at `at` without close-on-exec: a descriptor
/// toolhost inherited from whatever started it (a shell's `exec 9>>file`, a leaky launcher).
#[allow(unsafe_code)]
fn inherit(cmd: &mut Command, fd: RawFd, at: RawFd) {
    // SAFETY: the closure runs in the forked child before exec and makes one async-signal-safe
    // system call on integers.
    unsafe {
        cmd.pre_exec(move || {
            let r = if fd == at { libc::fcntl(at, libc::F_SETFD, 0) } else { libc::dup2(fd, at) };
            if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
        });
    }
}

#[test]
fn a_program_gets_no_descriptor_of_the_host_but_its_own_three() {
    let py = Python::new("");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("operators-file");
    std::fs::write(&target, "the operator's file\n").unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&target).unwrap();
    // Landlock checks a file when it is opened: a descriptor opened before writes anywhere.
    let script = r#"
import os, stat
def kind(fd):
    try:
        m = os.fstat(fd).st_mode
    except OSError:
        return None
    return 'fifo' if stat.S_ISFIFO(m) else 'chr' if stat.S_ISCHR(m) else 'file' if stat.S_ISREG(m) else 'other'
null = os.fstat(0).st_rdev
print('std', kind(0), os.major(null), os.minor(null), kind(1), kind(2))
print('others', [fd for fd in range(3, 65536) if kind(fd)])
try:
    os.write(9, b'written by a confined program\n')
    print('write to 9: done')
except OSError as e:
    print('write to 9: errno', e.errno)
"#;
    let mut cmd = py.command(script);
    inherit(&mut cmd, file.as_raw_fd(), 9);
    let out = stdout_of(cmd);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "the operator's file\n", "{out}");
    assert!(out.contains("others []"), "descriptors besides stdin, stdout, stderr: {out}");
    assert!(out.contains(&format!("write to 9: errno {}", libc::EBADF)), "{out}");
    assert!(out.contains("std chr 1 3 fifo fifo"), "stdin is /dev/null, stdout and stderr pipes: {out}");
}

const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;

/// Start `cmd` in a session keyring of its own holding a `user` key `toolhost-test-key` whose
/// value is `secret` (as a login's keyring holds a Kerberos ticket or an ecryptfs key).
#[allow(unsafe_code)]
fn with_session_keyring(cmd: &mut Command, secret: &'static str) {
    // SAFETY: the closure runs in the forked child before exec and makes two async-signal-safe
    // system calls on integers, C string literals and a static string.
    unsafe {
        cmd.pre_exec(move || {
            let null = std::ptr::null::<libc::c_char>();
            if libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, null) < 0
                || libc::syscall(
                    libc::SYS_add_key,
                    c"user".as_ptr(),
                    c"toolhost-test-key".as_ptr(),
                    secret.as_ptr(),
                    secret.len(),
                    KEY_SPEC_SESSION_KEYRING,
                ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn a_program_cannot_use_the_operators_session_keyring() {
    let secret = "the-operators-kerberos-ticket";
    let script = format!(
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SESSION = ctypes.c_long(-3)
key = libc.syscall({keyctl}, 10, SESSION, b'user', b'toolhost-test-key', 0)  # KEYCTL_SEARCH
if key < 0:
    print('search errno', ctypes.get_errno())
else:
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall({keyctl}, 11, ctypes.c_long(key), buf, 256)  # KEYCTL_READ
    print('read', buf.raw[:max(n, 0)].decode())
r = libc.syscall({add_key}, b'user', b'planted', b'x', 1, SESSION)
print('add_key errno', ctypes.get_errno() if r < 0 else 0)
"#,
        keyctl = libc::SYS_keyctl,
        add_key = libc::SYS_add_key
    );
    let py = Python::new("");
    let mut cmd = py.command(&script);
    with_session_keyring(&mut cmd, secret);
    let out = stdout_of(cmd);
    assert!(!out.contains(secret), "the program read the operator's key: {out}");
    let enosys = libc::ENOSYS;
    assert!(out.contains(&format!("search errno {enosys}")), "{out}");
    assert!(out.contains(&format!("add_key errno {enosys}")), "{out}");
}

/// A SysV shared memory segment and message queue of this process's, under one fixed key,
/// removed on drop.
struct SysV {
    key: libc::key_t,
    shm: libc::c_int,
    msg: libc::c_int,
    at: *mut libc::c_void,
}

impl SysV {
    #[allow(unsafe_code)]
    fn new(text: &str) -> SysV {
        let base = 0x7468_0000 | (std::process::id() as libc::key_t & 0xffff);
        for key in (0..64).map(|i| base ^ (i << 16)) {
            let flags = libc::IPC_CREAT | libc::IPC_EXCL | 0o600;
            // SAFETY: shmget, msgget and shmat take integers; the segment is 4096 bytes long, and
            // `text` is shorter, so the copy stays inside it.
            unsafe {
                let shm = libc::shmget(key, 4096, flags);
                if shm < 0 {
                    continue; // a key another process holds
                }
                let msg = libc::msgget(key, flags);
                let at = libc::shmat(shm, std::ptr::null(), 0);
                let ipc = SysV { key, shm, msg, at };
                assert!(msg >= 0 && at as isize != -1, "{}", std::io::Error::last_os_error());
                assert!(text.len() < 4096);
                std::ptr::copy_nonoverlapping(text.as_ptr(), at.cast(), text.len());
                return ipc;
            }
        }
        panic!("no free SysV key");
    }

    #[allow(unsafe_code)]
    fn read(&self) -> String {
        // SAFETY: the segment is attached and 4096 bytes long; nothing else holds a reference.
        let bytes = unsafe { std::slice::from_raw_parts(self.at.cast::<u8>(), 4096) };
        String::from_utf8_lossy(bytes.split(|b| *b == 0).next().unwrap()).into_owned()
    }
}

impl Drop for SysV {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the ids are ours; the address was attached by `new` and is not used after.
        unsafe {
            libc::shmdt(self.at);
            libc::shmctl(self.shm, libc::IPC_RMID, std::ptr::null_mut());
            if self.msg >= 0 {
                libc::msgctl(self.msg, libc::IPC_RMID, std::ptr::null_mut());
            }
        }
    }
}

#[test]
fn a_program_cannot_reach_another_process_sysv_ipc() {
    let text = "shared memory of another process of the operator's";
    let ipc = SysV::new(text);
    let script = format!(
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
shm = libc.shmget({key}, 0, 0)
if shm < 0:
    print('shmget errno', ctypes.get_errno())
else:
    p = libc.shmat(shm, None, 0)
    if p is None or p == ctypes.c_void_p(-1).value:
        print('shmat errno', ctypes.get_errno())
    else:
        print('read', ctypes.string_at(p, 128).split(b'\0')[0].decode())
        ctypes.memmove(p, b'overwritten\0', 12)
q = libc.msgget({key}, 0)
print('msgget errno', ctypes.get_errno() if q < 0 else 0)
"#,
        key = ipc.key
    );
    let out = stdout_of(Python::new("").command(&script));
    assert_eq!(ipc.read(), text, "the program wrote the segment: {out}");
    assert!(!out.contains(text), "the program read the segment: {out}");
    let enoent = libc::ENOENT;
    assert!(out.contains(&format!("shmget errno {enoent}")), "{out}");
    assert!(out.contains(&format!("msgget errno {enoent}")), "{out}");
}

#[test]
fn no_vsock_sockets_even_with_the_network_granted() {
    // Here (a virtual machine with a vsock device) a process of the operator's gets a socket to
    // the hypervisor's side; elsewhere the family may be missing. Either way a confined program
    // gets the filter's answer.
    let script = "import socket\ntry:\n    socket.socket(40, socket.SOCK_STREAM)\n    print('vsock socket made')\nexcept OSError as e:\n    print('vsock errno', e.errno)\n";
    for extra in ["", ", network = true"] {
        let out = stdout_of(Python::new(extra).command(script));
        assert_eq!(out.trim(), format!("vsock errno {}", libc::EACCES), "grant `{extra}`: {out}");
    }
}

/// Typing `TYPED` into a terminal, byte by byte with `TIOCSTI`: `inject(fd)` says `typed` or the
/// errno. What the program prints never contains `TYPED` itself (it is given as hex).
const TYPED: &str = "echo pwned-by-a-confined-program";

fn injector(rest: &str) -> String {
    let hex: String = format!("{TYPED}\n").bytes().map(|b| format!("{b:02x}")).collect();
    format!(
        r#"
import fcntl, os, termios
def inject(fd):
    try:
        for b in bytes.fromhex('{hex}'):
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([b]))
        return 'typed'
    except OSError as e:
        return e.errno
{rest}
"#
    )
}

#[test]
fn a_program_cannot_type_into_the_operators_terminal() {
    use crate::security::terminal::{Pty, openpty};
    // The operator runs toolhost in a terminal, which toolhost also holds at descriptor 10 (as a
    // launcher may leave it); the grant names `/dev/tty` (a program asking for a passphrase).
    let py = Python::new(", fs = [{ path = \"/dev/tty\", mode = \"rw\" }]");
    let script = injector(
        r#"
try:
    fcntl.fcntl(10, fcntl.F_GETFD)
    print('inherited: open', inject(10))
except OSError as e:
    print('inherited: errno', e.errno)
try:
    print('tty: opened', inject(os.open('/dev/tty', os.O_RDWR)))
except OSError as e:
    print('tty: errno', e.errno)
print('std:', [inject(fd) for fd in (0, 1, 2)])
"#,
    );
    let mut cmd = py.command(&script);
    inherit(&mut cmd, 0, 10); // in the child, after stdio: 0 is the terminal
    let (status, out) = Pty::spawn(cmd).finish();
    let out = String::from_utf8_lossy(&out);
    assert!(status.success(), "{out}");
    assert!(!out.contains("pwned-by"), "keystrokes reached the operator's terminal: {out}");
    assert!(out.contains(&format!("inherited: errno {}", libc::EBADF)), "{out}");
    assert!(out.contains(&format!("tty: errno {}", libc::ENXIO)), "no controlling terminal: {out}");
    assert!(!out.contains("typed"), "{out}");

    // A terminal the grant names, which the program makes its own controlling terminal (a new
    // session, then an open): TIOCSTI is refused all the same.
    let (master, slave) = openpty();
    let path = std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd())).unwrap();
    let py = Python::new(&format!(", fs = [{{ path = \"{}\", mode = \"rw\" }}]", path.display()));
    let script = injector(&format!(
        "try:\n    os.setsid()\nexcept OSError:\n    pass\nprint('own terminal:', inject(os.open('{}', os.O_RDWR)))\n",
        path.display()
    ));
    let out = stdout_of(py.command(&script));
    assert!(out.contains(&format!("own terminal: {}", libc::EPERM)), "{out}");
    let mut master = std::fs::File::from(master);
    set_nonblocking(&master);
    let mut echoed = [0u8; 256];
    let n = master.read(&mut echoed).unwrap_or(0);
    assert_eq!(String::from_utf8_lossy(&echoed[..n]), "", "typed into the terminal: {out}");
    drop(slave);
}

#[allow(unsafe_code)]
fn set_nonblocking(f: &std::fs::File) {
    // SAFETY: fcntl on a descriptor `f` owns, with integer arguments.
    let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    assert!(r >= 0, "{}", std::io::Error::last_os_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_cannot_start_is_still_reported() {
    // Descriptors are marked close-on-exec, not closed: std's exec-error pipe still carries a
    // failed exec back. A granted file that is not executable:
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("not-executable");
    std::fs::write(&prog, "#!/bin/sh\necho ran\n").unwrap();
    let env = Env::with_toml(
        &[plugin_artifacts::SYSTEM],
        &format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", prog.display()),
    );
    let o = call(&env.host_yes(), "run", &[prog.to_str().unwrap(), ""]).await;
    let e = err(&o, ErrorKind::ToolError);
    assert!(e.contains("cannot start") && e.contains("Permission denied"), "{e}");
}

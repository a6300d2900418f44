//! Programs run for plugins are confined by the operating system (Landlock, namespaces), not
//! only by their argument lists (#26, 1): a repository a plugin planted, a symlink out of the
//! workspace, a daemon that leaves its session, a connection out — each fails, end to end
//! through the real `files` and `sys` plugins.

use crate::process::{all_gone, assert_stopped_growing, procs_with, watch_for};
use crate::support::{Env, call, err, ok};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_core::ErrorKind;
use toolhost_core::executor::{Confirm, DangerRequest, Decision};
use toolhost_core::settings::Config;

const GIT: &str = "/usr/bin/git";

/// A host for `plugins` configured by `toml` (its workspace and plugins folder are the env's).
fn env_with(plugins: &[&str], toml: &str) -> Env {
    let mut env = Env::with(plugins);
    let mut cfg = Config::from_str_at(toml, env.workspace.path(), None).expect("test config");
    cfg.plugins_dir = env.plugins.path().to_path_buf();
    cfg.cache_dir = None;
    cfg.set_workspace(env.workspace.path());
    env.config = cfg;
    env
}

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
    env_with(
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
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/running-programs.md"),
    )
    .unwrap();
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
    let env = env_with(
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
    let env = env_with(
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
        env_with(
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
    let env = env_with(
        &[plugin_artifacts::SYSTEM],
        &format!("[plugin.sys]\nexec = [{{ program = \"{curl}\" }}]\n"),
    );
    let o = call(&env.host_yes(), "run", &["curl", &args]).await;
    assert!(!o.success, "{o:?}");
    assert!(!reached(), "a program without network reached a Unix socket outside its grant");
    let env = env_with(
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
        .unwrap_err();
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
    .unwrap_err();
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

/// Records what the danger confirmation showed.
#[derive(Default)]
struct Recorder(Mutex<Vec<DangerRequest>>);

impl Confirm for Recorder {
    fn confirm<'a>(
        &'a self,
        req: &'a DangerRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Decision> + Send + 'a>> {
        self.0.lock().unwrap().push(req.clone());
        Box::pin(async { Decision::Deny("declined by the test".into()) })
    }
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
    let recorder = Arc::new(Recorder::default());
    let host = env.host_with(recorder.clone());
    err(&call(&host, "run", &["git", "status"]).await, ErrorKind::Denied);
    let asked = recorder.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].notes.iter().any(|n| n.starts_with(flag)), "{:?}", asked[0].notes);

    // Not flagged when no plugin may write where git runs.
    let elsewhere = tempfile::tempdir().unwrap();
    let env = env_with(
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

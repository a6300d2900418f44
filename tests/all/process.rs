//! Running programs (issue #18): real processes spawned through the `process` import under the
//! operator's `exec` grants, every refusal naming its grant; the `sys` example plugin with
//! fake desktop tools; web search against a real local HTTP server in each backend's format,
//! and `browse` through a granted launcher.

use crate::support::http;
use crate::support::{Env, call, err, ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_core::ErrorKind;
use toolhost_core::capability::process::{ArgPattern, ExecGrant};
use toolhost_core::settings::Config;

/// The absolute path of `name` by this process's PATH (as `--allow-run` resolves it).
fn bin(name: &str) -> String {
    toolhost_core::capability::process::resolve_in_path(name)
        .unwrap_or_else(|| panic!("{name} not in PATH"))
        .display()
        .to_string()
}

fn sys(toml: &str) -> Env {
    Env::with_toml(&[plugin_artifacts::SYSTEM], toml)
}

/// Grants for the reliability matrix: `sys` may run echo (only `hello …`), printf, sleep, yes
/// and env, and its `run` tool is not confirmed per call.
pub fn grant_programs(config: &mut Config) {
    let g = |name: &str, args: Option<&[&str]>| ExecGrant {
        args: args.map(|a| a.iter().map(|p| ArgPattern::new(p)).collect()),
        ..ExecGrant::new(PathBuf::from(bin(name)))
    };
    let p = config.plugins.entry("sys".into()).or_default();
    p.exec = vec![
        g("echo", Some(&["hello *"])),
        g("printf", None),
        g("sleep", None),
        g("yes", None),
        g("env", None),
    ];
    config.tools.entry("run".into()).or_default().danger = Some(false);
}

/// A fake program: a shell script at `dir/name` that prints its name and arguments, one per
/// line in brackets, and appends the same to `dir/calls`.
fn fake(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let log = dir.join("calls");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"{name}\"\nprintf '[%s]\\n' \"$@\"\nprintf '%s' \"{name}\" >> '{}'\nprintf ' [%s]' \"$@\" >> '{}'\necho >> '{}'\n",
        log.display(),
        log.display(),
        log.display()
    );
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_program_runs_and_its_output_comes_back() {
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", bin("echo")));
    let host = env.host_yes();
    assert_eq!(ok(&call(&host, "run", &["echo", "hello world"]).await), "hello world");
    assert_eq!(ok(&call(&host, "run", &[&bin("echo"), "by path"]).await), "by path");

    // Spawning is dangerous by default: with no one to confirm, it is refused...
    let e = err(&call(&env.host(), "run", &["echo", "x"]).await, ErrorKind::Denied);
    assert!(e.contains("dangerous"), "{e}");
    // ...unless the operator says otherwise.
    let env = sys(&format!(
        "[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n[tool.run]\ndanger = false\n",
        bin("echo")
    ));
    assert_eq!(ok(&call(&env.host(), "run", &["echo", "fine"]).await), "fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_metacharacters_stay_one_literal_argument() {
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", bin("printf")));
    let host = env.host_yes();
    let argv = r#"["[%s]\n", "a; rm -rf /", "$(touch pwned)", "`touch pwned`", "*", "x | y > z", "$HOME"]"#;
    let out = ok(&call(&host, "run", &["printf", argv]).await);
    assert_eq!(out, "[a; rm -rf /]\n[$(touch pwned)]\n[`touch pwned`]\n[*]\n[x | y > z]\n[$HOME]");
    assert!(!env.ws("pwned").exists() && !env.ws("z").exists(), "nothing was interpreted by a shell");
}

/// Issue #32: `run` gives the output as printed, less one final newline — no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_removes_exactly_one_final_newline() {
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", bin("printf")));
    let host = env.host_yes();
    for (format, want) in [(r"a\n\n", "a\n"), (r"a", "a"), (r"a\r\n", "a"), (r"\n  b  \n", "\n  b  ")] {
        let argv = serde_json::to_string(&[format]).unwrap();
        assert_eq!(ok(&call(&host, "run", &["printf", &argv]).await), want, "printf {format:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_grant_that_would_allow_them() {
    // Nothing granted at all.
    let host = sys("").host_yes();
    let e = err(&call(&host, "run", &["echo", "x"]).await, ErrorKind::ToolError);
    assert!(e.contains("plugin `sys` cannot run programs") && e.contains("--allow-run sys=echo"), "{e}");

    let env = sys(&format!(
        "[plugin.sys]\nexec = [{{ program = \"{}\", args = [\"hello *\", \"\"] }}]\n",
        bin("echo")
    ));
    let host = env.host_yes();
    assert_eq!(ok(&call(&host, "run", &["echo", "hello there"]).await), "hello there");
    assert_eq!(ok(&call(&host, "run", &["echo", ""]).await), "");
    // An argument outside the patterns.
    let e = err(&call(&host, "run", &["echo", "goodbye"]).await, ErrorKind::ToolError);
    assert!(e.contains("do not match") && e.contains("\"hello *\""), "{e}");
    assert!(e.contains(&format!("[plugin.sys] exec = [{{ program = \"{}\", args", bin("echo"))), "{e}");
    // A program not granted: the hint is the line to add.
    let e = err(&call(&host, "run", &["sleep", "1"]).await, ErrorKind::ToolError);
    assert!(e.contains("program `sleep` is not granted to plugin `sys`"), "{e}");
    assert!(
        e.contains(&format!("program = \"{}\"", bin("sleep"))) && e.contains("--allow-run sys=sleep"),
        "{e}"
    );
    // Relative paths and PATH-dependent names are never resolved.
    for relative in ["./echo", "bin/echo", "../usr/bin/echo"] {
        let e = err(&call(&host, "run", &[relative, "hello"]).await, ErrorKind::ToolError);
        assert!(
            e.contains("relative program path") && e.contains("never looked up in PATH"),
            "{relative}: {e}"
        );
    }
    let e = err(&call(&host, "run", &["sh", "-c id"]).await, ErrorKind::ToolError);
    assert!(e.contains("program `sh` is not granted"), "a name in PATH but not granted: {e}");
    // An absolute path must be exactly the granted one.
    let e = err(&call(&host, "run", &["/usr/bin/../bin/echo", "hello"]).await, ErrorKind::ToolError);
    assert!(e.contains("is not granted"), "{e}");
}

#[test]
fn bad_exec_grants_are_config_errors() {
    let parse =
        |t: &str| Config::from_str_at(t, Path::new("/base"), None).map(|_| ()).unwrap_err().to_string();
    let e = parse("[plugin.sys]\nexec = [{ program = \"echo\" }]");
    assert!(e.contains("plugin.sys.exec[0].program") && e.contains("absolute path"), "{e}");
    let e = parse("[plugin.sys]\nexec = [{ program = \"/bin/echo\", args = [] }]");
    assert!(e.contains("allows no call"), "{e}");
    let e = parse("[plugin.sys]\nexec = [{ program = \"/bin/echo\", shell = true }]");
    assert!(e.contains("unknown field `shell`"), "{e}");
}

/// Whether `pid` is still a live process (a zombie counts as not running).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
    }
}

/// The host's PIDs of the live processes whose command line contains `token` (a confined
/// program runs in a PID namespace of its own: the PIDs it sees itself are not these).
pub fn procs_with(token: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(token.len()).any(|w| w == token.as_bytes()))
        })
        .filter(|pid| running(*pid))
        .collect();
    out.sort();
    out
}

/// The parent of `pid`, as the host sees it.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Watch, on a thread, for `count` live processes whose command line contains `token`; their
/// PIDs and parents as they were then, or what was found when `within` ran out.
pub fn watch_for(
    token: &'static str,
    count: usize,
    within: Duration,
) -> std::thread::JoinHandle<Vec<(u32, Option<u32>)>> {
    std::thread::spawn(move || {
        let until = Instant::now() + within;
        loop {
            let found = procs_with(token);
            if found.len() >= count || Instant::now() > until {
                return found.into_iter().map(|p| (p, parent_of(p))).collect();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    })
}

/// Wait up to 3 s for `pids` to be gone.
pub fn all_gone(pids: &[u32]) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|p| running(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    !pids.iter().any(|p| running(*p))
}

/// Assert that `file` was written, and that nothing writes it any more.
#[track_caller]
pub fn assert_stopped_growing(file: &Path, what: &str) {
    std::thread::sleep(Duration::from_millis(100));
    let before = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    assert!(before > 0, "{what}: {} was never written (the test did not run)", file.display());
    std::thread::sleep(Duration::from_millis(400));
    let after = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    assert_eq!(before, after, "{what}: {} is still being written", file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_past_the_deadline_is_killed_with_its_children() {
    let env = sys(&format!(
        "[limits]\ntimeout_ms = 800\n[plugin.sys]\nexec = [{{ program = \"{}\", env = [\"PATH\"] }}]\n",
        bin("sh")
    ));
    let host = env.host_yes();
    let started = Instant::now();
    // The shell (the child) starts a grandchild and waits for it; both outlive the deadline.
    let watch = watch_for("30.801", 2, Duration::from_secs(5));
    let script = r#"["-c", "sleep 30.801 & wait"]"#;
    let e = err(&call(&host, "run", &["sh", script]).await, ErrorKind::Timeout);
    assert!(e.contains("timed out after 800 ms"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let seen = watch.join().unwrap();
    let pids: Vec<u32> = seen.iter().map(|(p, _)| *p).collect();
    assert_eq!(pids.len(), 2, "the shell and its sleep were seen running: {seen:?}");
    // The shell's parent is the host's own child (the program's supervisor).
    let supervisor = seen.iter().find_map(|(_, parent)| parent.filter(|pp| !pids.contains(pp)));
    assert!(all_gone(&pids), "the child and grandchild are dead: {pids:?}");
    // The host's child was reaped: no zombie of ours is left behind.
    if let Some(sup) = supervisor.filter(|p| *p != std::process::id()) {
        let until = Instant::now() + Duration::from_secs(3);
        while Path::new(&format!("/proc/{sup}")).exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!Path::new(&format!("/proc/{sup}")).exists(), "the child ({sup}) was reaped");
    }
    // The host goes on serving.
    let e = err(&call(&host, "run", &["sh", r#"["-c", "exit 3"]"#]).await, ErrorKind::ToolError);
    assert!(e.contains("sh exited with code 3"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_a_finished_program_are_killed_unless_detached() {
    let sh = bin("sh");
    // The program may write the workspace: its leftover keeps appending to a file there.
    let script = r#"["-c", "(while :; do echo x >> grows; sleep 0.05; done) > /dev/null 2>&1 & sleep 0.3"]"#;
    let env =
        sys(&format!("[plugin.sys]\nexec = [{{ program = \"{sh}\", env = [\"PATH\"], write = true }}]\n"));
    ok(&call(&env.host_yes(), "run", &["sh", script]).await);
    assert_stopped_growing(&env.ws("grows"), "a process left behind by a finished program is killed");

    let script = r#"["-c", "sleep 30 > /dev/null 2>&1 & echo $! > pid"]"#;
    let env = sys(&format!(
        "[plugin.sys]\nexec = [{{ program = \"{sh}\", env = [\"PATH\"], write = true, detach = true }}]\n"
    ));
    ok(&call(&env.host_yes(), "run", &["sh", script]).await);
    let pid: u32 = std::fs::read_to_string(env.ws("pid")).unwrap().trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(running(pid), "a detached launcher's application keeps running");
    let _ = Command::new(sh).arg("-c").arg(format!("kill -9 {pid}")).status();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_is_capped_and_the_program_stopped() {
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", bin("yes")));
    let started = Instant::now();
    let o = call(&env.host_yes(), "run", &["yes", ""]).await;
    let data = ok(&o);
    assert!(
        data.starts_with("[output cut at the host's limit; yes was stopped there]\ny\ny\n"),
        "{data:.200}"
    );
    assert!(o.truncated, "and the tool's own output limit applied too");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_cleared_except_granted_variables() {
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n", bin("env")));
    assert_eq!(ok(&call(&env.host_yes(), "run", &["env", ""]).await), "", "nothing inherited");
    let env = sys(&format!("[plugin.sys]\nexec = [{{ program = \"{}\", env = [\"PATH\"] }}]\n", bin("env")));
    let path = std::env::var("PATH").unwrap();
    assert_eq!(ok(&call(&env.host_yes(), "run", &["env", ""]).await), format!("PATH={path}"));
}

/// The real binary, as an operator runs it.
fn toolhost(env: &Env, secret: &str, args: &[&str]) -> std::process::Output {
    env.command()
        .env("TOOLHOST_TEST_SECRET", secret)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run toolhost")
}

#[test]
fn allow_run_on_the_command_line() {
    let env = Env::with(&[plugin_artifacts::SYSTEM]);
    let secret = "s3cret-in-the-host-environment";
    // The issue's check: the metacharacters reach `echo` as plain characters.
    let o = toolhost(&env, secret, &["--allow-run", "sys=echo", "call", "-y", "run", "echo", "a; rm -rf /"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim_end(), "a; rm -rf /");
    // Dangerous by default: with no terminal to ask, refused, and the message says how.
    let o = toolhost(&env, secret, &["--allow-run", "sys=echo", "call", "run", "echo", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--yes"), "{}", String::from_utf8_lossy(&o.stderr));
    // A secret in the host's environment does not reach the program.
    let o = toolhost(&env, secret, &["--allow-run", "sys=env", "call", "-y", "run", "env", ""]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains(secret) && !out.contains("PATH="), "{out}");
    // `list` shows the granted absolute path, and the tools as dangerous.
    let o = toolhost(&env, secret, &["--allow-run", "sys=echo", "list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("exec {}", bin("echo"))), "{out}");
    assert!(out.lines().any(|l| l.starts_with("run(") && l.contains("danger")), "{out}");
    let o = toolhost(&env, secret, &["list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("missing:   exec *") && out.contains("--allow-run sys=PROGRAM"), "{out}");
    // A name that is not in PATH is an error of the flag, not a silent no-op.
    let o = toolhost(&env, secret, &["--allow-run", "sys=no-such-program-here", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no executable `no-such-program-here` in PATH"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desktop_tools_call_the_granted_launchers() {
    let tools = tempfile::tempdir().unwrap();
    let (wmctrl, gtk) = (fake(tools.path(), "wmctrl"), fake(tools.path(), "gtk-launch"));
    // The fakes log their calls in their own folder: the grants let them write there.
    let log = format!("fs = [{{ path = \"{}\", mode = \"rw\" }}]", tools.path().display());
    let env = sys(&format!(
        "[plugin.sys]\nexec = [{{ program = \"{wmctrl}\", {log} }}, {{ program = \"{gtk}\", {log}, detach = true }}]\n"
    ));
    let host = env.host_yes();
    assert_eq!(ok(&call(&host, "list_apps", &[]).await), "wmctrl\n[-l]\n[-x]\n");
    assert_eq!(
        ok(&call(&host, "open_app", &["org.gnome.Calculator"]).await),
        "started org.gnome.Calculator (with gtk-launch)"
    );
    assert_eq!(
        ok(&call(&host, "close_app", &["Calculator"]).await),
        "asked Calculator to close (with wmctrl)"
    );
    let e = err(&call(&host, "open_app", &["-a Terminal"]).await, ErrorKind::ToolError);
    assert!(e.contains("not an application name"), "{e}");
    let calls = std::fs::read_to_string(tools.path().join("calls")).unwrap();
    assert_eq!(calls, "wmctrl [-l] [-x]\ngtk-launch [org.gnome.Calculator]\nwmctrl [-c] [Calculator]\n");

    // Nothing granted: each platform's refusal is listed with its grant.
    let e = err(&call(&sys("").host_yes(), "list_apps", &[]).await, ErrorKind::ToolError);
    assert!(e.contains("wmctrl: ") && e.contains("osascript: ") && e.contains("--allow-run sys="), "{e}");
}

/// A search backend on loopback: `/searx/search?q=…&format=json` in SearXNG's format, and
/// `/brave?q=…` in the Brave Search API's format (401 without the right token). The first
/// result's title echoes the decoded query.
fn search_server(token: &'static str) -> u16 {
    http::listen(move |got, out| answer(got, out, token))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn answer(got: http::Got, out: &mut std::net::TcpStream, token: &str) {
    let headers: Vec<String> = got.head.lines().map(|h| h.trim_end().to_ascii_lowercase()).collect();
    let target = got.path().to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let param =
        |name: &str| query.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).map(percent_decode);
    let q = param("q").unwrap_or_default();
    let (status, body) = match path {
        "/searx/search" if param("format").as_deref() == Some("json") => (
            "200 OK",
            serde_json::json!({"query": q, "results": [
                {"title": format!("you searched: {q}"), "url": "https://example.org/1", "content": "first <b>snippet</b>"},
                {"title": "Second &amp; last", "url": "https://example.org/2", "content": ""},
                {"title": "no url, skipped"}
            ]})
            .to_string(),
        ),
        "/brave" if headers.iter().any(|h| h == &format!("x-subscription-token: {token}")) => (
            "200 OK",
            serde_json::json!({"type": "search", "web": {"results": [
                {"title": format!("brave: {q}"), "url": "https://example.net/", "description": "from the keyed API"}
            ]}})
            .to_string(),
        ),
        "/brave" => ("401 Unauthorized", "{\"error\": \"missing token\"}".to_string()),
        _ => ("404 Not Found", "{}".to_string()),
    };
    http::reply(out, status, "Content-Type: application/json\r\n", body.as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_asks_the_configured_backend() {
    let token = "brave-token-for-tests";
    let port = search_server(token);
    let web = |settings: &str, extra: &str| {
        Env::with_toml(
            &[plugin_artifacts::WEB],
            &format!(
                "[plugin.web]\nnet = [\"127.0.0.1\"]\nnet_private = true\nsettings = {{ {settings} }}\n{extra}"
            ),
        )
    };
    // SearXNG's JSON API; the commas of the query stay in it (a `rest` tool).
    let env = web(&format!("SEARCH_URL = \"http://127.0.0.1:{port}/searx/search\""), "");
    let host = env.host();
    let out = ok(&call(&host, "web_search", &["rust", " wasm & wasi?"]).await);
    assert_eq!(
        out,
        "1. you searched: rust, wasm & wasi?\n   https://example.org/1\n   first snippet\n2. Second & last\n   https://example.org/2"
    );

    // A keyed API: the key is a secret the host sends in a header; the plugin never sees it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("key"), format!("{token}\n")).unwrap();
    let secret = format!(
        "[secrets.search_key]\nfile = \"{}\"\nhosts = [\"http://127.0.0.1:{port}\"]\n",
        dir.path().join("key").display()
    );
    let brave = format!("SEARCH_BACKEND = \"brave\", SEARCH_URL = \"http://127.0.0.1:{port}/brave\"");
    let env = web(&brave, &format!("secrets = [\"search_key\"]\n{secret}"));
    let out = ok(&call(&env.host(), "web_search", &["toolhost"]).await);
    assert_eq!(out, "1. brave: toolhost\n   https://example.net/\n   from the keyed API");
    // Without the secret granted, the host refuses to send the header and says how to grant it.
    let env = web(&brave, &secret);
    let e = err(&call(&env.host(), "web_search", &["toolhost"]).await, ErrorKind::ToolError);
    assert!(e.contains("secret `search_key` is not granted to plugin `web`"), "{e}");

    // No backend configured: the error is the operator's line to add.
    let env = Env::with_toml(&[plugin_artifacts::WEB], "");
    let e = err(&call(&env.host(), "web_search", &["x"]).await, ErrorKind::ToolError);
    assert!(e.contains("no search backend is configured") && e.contains("[plugin.web] settings"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browse_opens_the_page_with_the_granted_launcher_only_on_a_desktop() {
    let tools = tempfile::tempdir().unwrap();
    let xdg = fake(tools.path(), "xdg-open");
    let grant = format!(
        "exec = [{{ program = \"{xdg}\", fs = [{{ path = \"{}\", mode = \"rw\" }}], detach = true }}]\n",
        tools.path().display()
    );
    // A desktop session (DISPLAY given to the plugin by the operator).
    let env = Env::with_toml(
        &[plugin_artifacts::WEB],
        &format!("[plugin.web]\n{grant}settings = {{ DISPLAY = \":0\" }}\n"),
    );
    let host = env.host_yes();
    assert_eq!(
        ok(&call(&host, "browse", &["https://example.com/a?b=c"]).await),
        "opened https://example.com/a?b=c in the browser"
    );
    assert_eq!(
        std::fs::read_to_string(tools.path().join("calls")).unwrap(),
        "xdg-open [https://example.com/a?b=c]\n"
    );
    let e = err(&call(&host, "browse", &["file:///etc/passwd"]).await, ErrorKind::ToolError);
    assert!(e.contains("not an http or https URL"), "{e}");
    // Dangerous: not run without confirmation.
    err(&call(&env.host(), "browse", &["https://example.com/"]).await, ErrorKind::Denied);
    // No desktop: refused, naming what is missing.
    let env = Env::with_toml(&[plugin_artifacts::WEB], &format!("[plugin.web]\n{grant}"));
    let e = err(&call(&env.host_yes(), "browse", &["https://example.com/"]).await, ErrorKind::ToolError);
    assert!(e.contains("no desktop") && e.contains("DISPLAY"), "{e}");
    assert_eq!(std::fs::read_to_string(tools.path().join("calls")).unwrap().lines().count(), 1);
}

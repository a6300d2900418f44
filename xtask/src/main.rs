//! Project automation (`cargo xtask …`): build the example plugins, run the demo, run the
//! whole test suite exactly as CI does.

mod before;
mod deploy;
mod docs;
mod layers;
mod packages;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

const HELP: &str = "\
cargo xtask <task>

tasks:
  plugins   build the example plugins: the Rust ones for wasm32-wasip2 (files, text, web,
            system are copied into target/plugins/), then the Python (notes) and JavaScript
            (datakit) ones with `toolhost build` (toolchains installed into target/toolchains)
  demo      build the plugins and toolhost, then show `list` and a few calls on a scratch
            workspace (target/demo-workspace): writes, reads, a JSON argument, a search whose
            query has commas, a denied dangerous call, a truncated output and refused
            network calls
  bench [--last-run]
            run the benchmarks (release build) and write BENCHMARKS.md with the machine they
            ran on; TOOLHOST_BENCH_QUICK=1 for a short smoke run; --last-run writes it again
            from the last run's report (target/bench-report.md) without running anything
  fuzz [TARGET] [SECONDS]
            build the fuzz targets (text_parser, manifest, skills) with libFuzzer on the stable
            toolchain and run each (or TARGET) for SECONDS (default 60); crashes are saved
            under fuzz/artifacts/; the corpus grows in target/fuzz-corpus/
  docs      build the book (docs/, mdBook 0.5.4 installed into target/tools on first use)
            into target/book; fails on any mdBook warning and on any relative link or anchor
            of the built pages that resolves to nothing; then runs the docs tests (every toml
            example parses, every Markdown link resolves, the Chinese [TOOL] examples parse)
  layers    check the architecture (ARCHITECTURE.md, “Layers”): no module cycles inside any
            workspace crate (each printed with the file:line of every reference that ties
            it), and every crate depends only on crates of a lower layer; only toolhost-core
            names wasmtime, and toolhost-spec has no wasmtime or tokio in its tree
  deploy    check deploy/kubernetes.yaml against the Kubernetes API schemas
            (kubernetes-validate --strict, pinned in deploy/requirements-validate.txt,
            installed into target/kubevalidate); seconds
  packages [--verify]
            the SDKs as they would be published, checked without publishing: `cargo
            package` of toolhost-sdk with toolhost-sdk-macros and toolhost-spec (the WIT
            inside, no JS or Python), `pip install` of plugin-sdk/python into a fresh venv
            (setuptools pinned, kept in target/package-check), `npm pack --dry-run` of
            plugin-sdk/js (exactly its FILES), all at one version; seconds. --verify also
            compiles each packaged crate on its own (minutes)
  script-runner
            rebuild host/core/script-runner/script-runner.wasm (code mode's sandbox) from
            runner.js and script.wit, with the jco and componentize-qjs `toolhost build`
            installs into target/toolchains (a JavaScript build installs them first); a core
            unit test fails while the committed component is older than its sources
  test      the whole suite, as CI runs it: installs the MCP Python SDK 1.x into
            target/pyenv and 2.x into target/pyenv2 (for the MCP tests), Debian's
            docker-registry if missing (for the distribution tests), redis-server and nginx
            if missing (the fleet tests' replay store and load balancer), and for the console's
            browser tests Debian's chromium if missing, Playwright into target/console-env
            and axe-core into target/console-npm (pinned; no browser download), for the OAuth
            tests oidc-provider into target/oauth-server (pinned), rustfmt check, clippy
            with warnings as errors, the layer, package and deploy checks, the Python and JS SDK tests, then every
            unit and integration test (the test build compiles the Rust plugins itself; the
            Python/JS ones are built with toolchains it installs into target/toolchains);
            prints the MCP check counts per SDK generation, mode and transport
";

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "plugins" => plugins().map(|_| ()),
        "demo" => demo(),
        "test" => test(),
        "bench" => bench(std::env::args().nth(2).as_deref() == Some("--last-run")),
        "layers" => layers::run(&root()),
        "script-runner" => script_runner(),
        "deploy" => deploy::validate(&root()),
        "docs" => docs::run(&root()),
        "packages" => match std::env::args().nth(2).as_deref() {
            None => packages::run(&root(), false),
            Some("--verify") => packages::run(&root(), true),
            Some(other) => bail!("packages: unknown option `{other}` (the one option is --verify)"),
        },
        "fuzz" => {
            let target = std::env::args().nth(2);
            let secs = std::env::args().nth(3).map(|s| s.parse::<u64>()).transpose().context("SECONDS")?;
            fuzz(target.as_deref(), secs.unwrap_or(60))
        }
        "" | "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => bail!("unknown task `{other}`\n\n{HELP}"),
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", shown(cmd));
    let status = cmd.status().with_context(|| format!("cannot run {}", shown(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", shown(cmd));
    }
    Ok(())
}

fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Make sure the wasm target is there (rust-toolchain.toml asks rustup for it too).
fn ensure_target() -> Result<()> {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    match installed {
        Ok(out) if String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == "wasm32-wasip2") => {
            Ok(())
        }
        Ok(_) => run(Command::new("rustup").args(["target", "add", "wasm32-wasip2"])),
        Err(_) => {
            eprintln!("note: rustup not found; assuming the wasm32-wasip2 target is installed");
            Ok(())
        }
    }
}

/// Build the example plugins; copy the shipped ones into target/plugins. Returns that folder.
fn plugins() -> Result<PathBuf> {
    ensure_target()?;
    let root = root();
    let build_dir = root.join("target/plugins-build");
    eprintln!("building the example plugins for wasm32-wasip2 …");
    run(cargo()
        .current_dir(root.join("plugins"))
        .args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&build_dir))?;
    let out = root.join("target/plugins");
    std::fs::create_dir_all(&out)?;
    for name in ["files", "text", "web", "system"] {
        let from = build_dir.join(format!("wasm32-wasip2/release/{name}.wasm"));
        let to = out.join(format!("{name}.wasm"));
        // Write-then-rename, so a running host never sees half a file.
        let tmp = out.join(format!(".{name}.wasm.tmp"));
        std::fs::copy(&from, &tmp).with_context(|| format!("copy {}", from.display()))?;
        std::fs::rename(&tmp, &to)?;
        eprintln!("  {} ({} KiB)", to.display(), std::fs::metadata(&to)?.len() / 1024);
    }
    // The Python and JavaScript examples, built the way their authors would: `toolhost build`.
    eprintln!("building toolhost, then the Python and JavaScript example plugins …");
    run(cargo().current_dir(&root).args(["build", "--quiet", "-p", "toolhost", "--bin", "toolhost"]))?;
    for project in ["plugins/python/notes", "plugins/js/datakit"] {
        run(Command::new(root.join("target/debug/toolhost"))
            .arg("build")
            .arg(root.join(project))
            .arg("--install")
            .arg(&out)
            .env("TOOLHOST_TOOLCHAINS", root.join("target/toolchains")))?;
    }
    Ok(out)
}

/// Rebuild code mode's script runner (see HELP) with the pinned jco `toolhost build` installs.
fn script_runner() -> Result<()> {
    ensure_target()?;
    let root = root();
    let toolchains = root.join("target/toolchains");
    let find_jco = || -> Option<PathBuf> {
        let dirs = std::fs::read_dir(&toolchains).ok()?;
        dirs.flatten()
            .map(|d| d.path())
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("jco-")))
            .map(|p| p.join("node_modules"))
    };
    if find_jco().is_none() {
        eprintln!("installing the JavaScript toolchain with a build of plugins/js/datakit …");
        run(cargo().current_dir(&root).args(["build", "--quiet", "-p", "toolhost", "--bin", "toolhost"]))?;
        let out = tempfile_dir(&root)?;
        run(Command::new(root.join("target/debug/toolhost"))
            .arg("build")
            .arg(root.join("plugins/js/datakit"))
            .arg("--install")
            .arg(&out)
            .env("TOOLHOST_TOOLCHAINS", &toolchains))?;
        let _ = std::fs::remove_dir_all(&out);
    }
    let modules = find_jco().context("jco is not in target/toolchains after a JavaScript build")?;
    let dir = root.join("host/core/script-runner");
    run(Command::new("node").arg(dir.join("build.mjs")).arg(&modules).arg(dir.join("script-runner.wasm")))
}

/// A scratch folder under target/.
fn tempfile_dir(root: &Path) -> Result<PathBuf> {
    let dir = root.join(format!("target/tmp/xtask-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn demo() -> Result<()> {
    let plugins = plugins()?;
    let root = root();
    eprintln!("building toolhost …");
    run(cargo().current_dir(&root).args(["build", "--quiet", "-p", "toolhost", "--bin", "toolhost"]))?;
    let exe = root.join("target/debug/toolhost");
    let ws = root.join("target/demo-workspace");
    let _ = std::fs::remove_dir_all(&ws);
    std::fs::create_dir_all(&ws)?;
    std::fs::write(
        ws.join("README.txt"),
        "A scratch workspace for the toolhost demo.\nWe sell apples, pears (ripe) and plums.\n",
    )?;
    std::fs::write(ws.join("long.txt"), "All work and no play. ".repeat(2000))?;

    // A config like an operator would write: relative paths resolve against its folder.
    let config = root.join("target/demo-toolhost.toml");
    std::fs::write(
        &config,
        "plugins = \"plugins\"\nworkspace = \"demo-workspace\"\n\n[limits]\ntimeout_ms = 5000\n\n[tool.read]\noutput_limit = 120   # the operator's word beats the manifest's 20000\n",
    )?;
    debug_assert!(plugins.starts_with(root.join("target")));
    let base = |cmd: &mut Command| {
        cmd.arg("--config").arg(&config);
    };
    let step = |title: &str, args: &[&str]| -> Result<()> {
        let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        println!("\n### {title}\n$ toolhost {}", quoted.join(" "));
        let mut cmd = Command::new(&exe);
        base(&mut cmd);
        let status = cmd.args(args).stdin(std::process::Stdio::null()).status()?;
        println!("(exit code {})", status.code().unwrap_or(-1));
        Ok(())
    };
    step(
        "the registry: tools from the manifests inside the .wasm files",
        &["--allow-write", "files", "--allow-read", "text", "list"],
    )?;
    step("nothing is granted unless asked: reading without a grant fails", &["call", "read", "README.txt"])?;
    step("a quick grant on the command line", &["--allow-read", "files", "call", "ls", "."])?;
    step(
        "write: a `rest` tool, so commas stay in the content",
        &["--allow-write", "files", "call", "write", "notes.txt", "buy apples", " pears", " plums"],
    )?;
    step("read it back", &["--allow-read", "files", "call", "read", "notes.txt"])?;
    step(
        "search: the query keeps its commas and parentheses",
        &["--allow-read", "text", "call", "search", "apples, pears (ripe)"],
    )?;
    step(
        "split_task: a JSON argument, checked by the host before the plugin runs",
        &[
            "call",
            "split_task",
            "Launch",
            r#"[{"title": "design, review", "days": 2}, {"title": "ship", "days": 1, "owner": "ana"}]"#,
        ],
    )?;
    step("invalid JSON never reaches the plugin", &["call", "split_task", "Launch", r#"[{"title": "a",}]"#])?;
    step(
        "a dangerous tool with no one to confirm it is denied",
        &["--allow-write", "files", "call", "delete", "notes.txt"],
    )?;
    step(
        "output over the tool's limit is truncated and marked",
        &["--allow-read", "files", "call", "--json", "read", "long.txt"],
    )?;
    step("an unknown tool suggests close names", &["call", "raed", "notes.txt"])?;
    step(
        "the web plugin has no network until the operator grants hosts: the error names the grant",
        &["call", "fetch", "https://example.com/"],
    )?;
    step(
        "a granted host that resolves to a loopback address is still refused",
        &["--allow-net", "web=localhost", "call", "fetch", "http://localhost:1/"],
    )?;
    Ok(())
}

fn bench(last_run: bool) -> Result<()> {
    ensure_target()?;
    let root = root();
    let out = root.join("target/bench-report.md");
    if last_run {
        anyhow::ensure!(
            out.is_file(),
            "no report of an earlier run at {}: run `cargo xtask bench`",
            out.display()
        );
    } else {
        // The code-mode rows count tokens with js-tiktoken (o200k_base, bundled: no download).
        let tokenizer =
            npm_install("target/tokenizer", "js-tiktoken", JS_TIKTOKEN, "the code-mode token rows")?;
        run(cargo()
            .current_dir(&root)
            .env("TOOLHOST_BENCH_OUT", &out)
            .env("TOOLHOST_BENCH_TOKENIZER", tokenizer.join("node_modules"))
            // The Python and JavaScript plugins are built with the toolchains the tests use.
            .env("TOOLHOST_TOOLCHAINS", root.join("target/toolchains"))
            .args(["bench", "-p", "toolhost", "--bench", "bench"]))?;
    }
    let report = std::fs::read_to_string(&out)?;
    // The committed report's figures beside this run's, row by row (issue #33).
    let committed = Command::new("git")
        .current_dir(&root)
        .args(["show", "HEAD:BENCHMARKS.md"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let report = match &committed {
        Some(old) => before::add_column(&report, old),
        None => report,
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse::<u64>().unwrap_or(0) / 1024 / 1024)
        })
        .unwrap_or(0);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // When the run ended (the report's time: `--last-run` writes the file later).
    let date = Command::new("date")
        .arg("-u")
        .arg("-r")
        .arg(&out)
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let doc = format!(
        "# Benchmarks\n\n\
         Regenerate with `cargo xtask bench` (release build; about 15 minutes cold on two cores, then about\n\
         ten minutes of measuring). Every figure is measured in the same run as its baseline — a native function\n\
         call and raw wasmtime (`InstancePre::instantiate` + the export call, no toolhost code) — and\n\
         should be read as a ratio: these machines are shared and noisy.\n\n\
         Machine: {cpu}, {cores} cores, {mem} GiB; {rustc}; run {date}.\n\n\
         The last column of a table, \"before\", is the same row of the committed BENCHMARKS.md\n\
         (its main figure, and its ratio where the table has one): compare the ratios, since the\n\
         two runs had different machine noise. \"The default configuration\", first, and \"Targets of\n\
         issue #33\", last, mark each bound met or not met from this run's figures alone.\n\n\
         Method: latency is the p50/p99 of 3000 sequential calls per case after a warm-up, each a\n\
         fresh store and instance; the cases of a table are measured side by side, in turns of 50\n\
         calls each, so they share the machine's noise. Page faults and context switches per call\n\
         come from `/proc/self/stat` and `/proc/self/task/*/status` over a separate pass per case.\n\
         The raw-wasmtime floor is measured with wasmtime's default pool slot reset and with each\n\
         candidate reset strategy; the best is the tuned floor; `read` has its own raw floor.\n\
         Throughput runs 20,000 `echo` calls split over the callers, each case in 3 interleaved\n\
         rounds (the best kept). The per-language rows build the `toolhost new` template of each\n\
         language (pinned toolchains in `target/toolchains`). MCP rows: one client, sequential\n\
         `echo` calls over stdio and over streamable HTTP, against `toolhost serve --mcp` and\n\
         against a do-nothing JSON-RPC server (the benchmark binary itself) over the same\n\
         transport, alternating runs; over stdio also against that server running `echo` on raw\n\
         wasmtime for each call (no toolhost code: the floor of any WebAssembly host). Start-up\n\
         spawns the release `toolhost` binary (`call count_words` with 10 distinct plugins;\n\
         `serve --mcp` to its `tools/list` answer) with an\n\
         empty compile cache and then with a warm one, beside `toolhost --version` (the floor of\n\
         any start); the manifest scan reads, hashes, parses and validates 100 plugin files\n\
         without compiling; reload writes a new version of a plugin into a watched\n\
         folder and polls until a call is answered by it. RSS comes from `/proc/self/status`.\n\
         Capacity (host/cli/benches/capacity/rows.rs): 1,000 MCP HTTP clients against one replica for a\n\
         minute, then stateless `echo` calls/s through nginx (deploy/nginx.conf) with 1 and 3 replicas.\n\n{report}"
    );
    std::fs::write(root.join("BENCHMARKS.md"), doc)?;
    eprintln!("wrote BENCHMARKS.md");
    Ok(())
}

/// Quote an argument the way a POSIX shell user would type it.
fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

fn test() -> Result<()> {
    ensure_target()?;
    let root = root();
    run(cargo().current_dir(&root).args(["fmt", "--all", "--check"]))?;
    // Build every target once, linted as it compiles, while the test tools install (they
    // mostly wait on the network and the disk).
    let lint = clippy_as_compiler()?;
    let mut build = cargo();
    build.current_dir(&root).args(["test", "--workspace", "--all-targets", "--no-run"]).envs(lint.clone());
    eprintln!("$ {} (in the background, with clippy -D warnings as the workspace's compiler)", shown(&build));
    let mut building = build.spawn().with_context(|| format!("cannot run {}", shown(&build)))?;
    let python = ensure_python_mcp()?;
    let python2 = ensure_python_venv("target/pyenv2", "tests/mcp/requirements2.txt")?;
    ensure_registry()?;
    ensure_fleet_parts()?;
    let console = ensure_console_browser()?;
    let oidc_provider = ensure_oauth_server()?;
    let built = building.wait()?;
    if !built.success() {
        bail!("`{}` failed ({built}): a compile error or a clippy warning, above", shown(&build));
    }
    eprintln!("\n== layers ==");
    layers::run(&root)?;
    eprintln!("\n== packages ==");
    packages::run(&root, false)?;
    eprintln!("\n== deploy/kubernetes.yaml against the Kubernetes schemas ==");
    deploy::validate(&root)?;
    sdk_tests()?;
    let summaries = root.join("target/reliability");
    let _ = std::fs::remove_dir_all(&summaries);
    // The Python and JS plugin tests install the pinned componentize-py and jco here on first
    // use (tests/all/polyglot.rs), never globally.
    let mcp_checks = root.join("target/mcp-checks");
    let _ = std::fs::remove_dir_all(&mcp_checks);
    run(cargo()
        .current_dir(&root)
        .args(["test", "--workspace"])
        // The same compiler as the build above, or cargo would build the workspace again.
        .envs(lint)
        .env("TOOLHOST_PYTHON", &python)
        .env("TOOLHOST_TOOLCHAINS", root.join("target/toolchains"))
        .env("TOOLHOST_PYTHON2", &python2)
        .env("TOOLHOST_CONSOLE_PYTHON", &console.python)
        .env("TOOLHOST_CHROMIUM", &console.chromium)
        .env("TOOLHOST_AXE", &console.axe)
        .env("TOOLHOST_TEST_OIDC_PROVIDER", &oidc_provider))?;
    print_reliability_summary(&summaries);
    print_summary("MCP checks per SDK generation, mode and transport", &mcp_checks);
    // A short fuzz smoke run of both parsers (seconds each; long runs: `cargo xtask fuzz`).
    fuzz(None, 10)?;
    Ok(())
}

/// The environment that makes a cargo build lint the workspace's crates as it compiles them:
/// what `cargo clippy -- -D warnings` sets for its `cargo check` (clippy-driver as the workspace
/// wrapper, its arguments joined as cargo-clippy joins them), here for a build that also links
/// and runs. One compile of the dependencies instead of two (a `check` and a build): on a fresh
/// clone that is the 10+ minutes a separate clippy pass spends checking wasmtime. Cargo does not
/// pass the wrapper to dependencies, and the builds tests start (guests for wasm32, `toolhost
/// build`) drop it.
fn clippy_as_compiler() -> Result<Vec<(&'static str, String)>> {
    let out = Command::new("rustc").current_dir(root()).args(["--print", "sysroot"]).output()?;
    anyhow::ensure!(out.status.success(), "`rustc --print sysroot` failed");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let driver = sysroot.join("bin/clippy-driver");
    anyhow::ensure!(
        driver.is_file(),
        "{} is missing: install clippy (`rustup component add clippy`; rust-toolchain.toml asks for it)",
        driver.display()
    );
    Ok(vec![
        ("RUSTC_WORKSPACE_WRAPPER", driver.display().to_string()),
        ("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__".into()),
    ])
}

/// The Python and JavaScript SDKs' own tests, and the tests of the example plugins and the
/// `toolhost new` templates written in those languages (plain CPython and node: no toolchain).
fn sdk_tests() -> Result<()> {
    let root = root();
    let py_sdk = root.join("plugin-sdk/python");
    eprintln!("\n== Python SDK and plugins (unittest) ==");
    run(Command::new("python3")
        .current_dir(&py_sdk)
        .args(["-m", "unittest", "discover", "-s", "tests"])
        .env("PYTHONDONTWRITEBYTECODE", "1"))?;
    for dir in ["plugins/python/notes", "plugin-sdk/python/template"] {
        run(Command::new("python3")
            .current_dir(root.join(dir))
            .args(["-m", "unittest", "discover", "-p", "test_*.py"])
            .env("PYTHONPATH", &py_sdk)
            .env("PYTHONDONTWRITEBYTECODE", "1"))?;
    }
    eprintln!("\n== JavaScript SDK and plugins (node --test) ==");
    let js = root.join("plugin-sdk/js/bin/toolhost-js.mjs");
    run(Command::new("node").current_dir(root.join("plugin-sdk/js")).args(["--test", "test/"]))?;
    for dir in ["plugins/js/datakit", "plugin-sdk/js/template"] {
        run(Command::new("node").arg(&js).arg("test").arg(root.join(dir)))?;
    }
    Ok(())
}

/// The figures the reliability tests recorded (cases run, faults survived, calls lost).
fn print_reliability_summary(dir: &Path) {
    print_summary("reliability summary", dir);
}

const FUZZ_TARGETS: [&str; 3] = ["text_parser", "manifest", "skills"];

/// Build the cargo-fuzz targets in fuzz/ with libFuzzer's coverage instrumentation — the flags
/// `cargo fuzz build --sanitizer none` passes, all of which stable rustc accepts — and run them.
fn fuzz(only: Option<&str>, seconds: u64) -> Result<()> {
    let root = root();
    let fuzz_dir = root.join("fuzz");
    let targets: Vec<&str> = match only {
        Some(t) if FUZZ_TARGETS.contains(&t) => vec![t],
        Some(t) => bail!("unknown fuzz target `{t}`; the targets are {}", FUZZ_TARGETS.join(", ")),
        None => FUZZ_TARGETS.to_vec(),
    };
    let target_dir = root.join("target/fuzz");
    let flags = [
        "-Cpasses=sancov-module",
        "-Cllvm-args=-sanitizer-coverage-level=4",
        "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
        "-Cllvm-args=-sanitizer-coverage-pc-table",
        "-Cllvm-args=-sanitizer-coverage-trace-compares",
        "--cfg",
        "fuzzing",
        "-Cdebug-assertions",
        "-Coverflow-checks",
    ]
    .join(" ");
    // An explicit --target keeps the instrumentation flags off build scripts and proc macros.
    let host = host_triple()?;
    eprintln!("building the fuzz targets ({}) …", targets.join(", "));
    let mut build = cargo();
    build
        .current_dir(&fuzz_dir)
        .args(["build", "--release", "--bins", "--target", &host, "--target-dir"])
        .arg(&target_dir);
    build.env("RUSTFLAGS", flags).env_remove("CARGO_ENCODED_RUSTFLAGS");
    run(&mut build)?;
    for t in targets {
        let corpus = root.join("target/fuzz-corpus").join(t);
        std::fs::create_dir_all(&corpus)?;
        seed_corpus(t, &corpus)?;
        let artifacts = fuzz_dir.join("artifacts").join(t);
        std::fs::create_dir_all(&artifacts)?;
        eprintln!("fuzzing {t} for {seconds} s …");
        let bin = target_dir.join(&host).join("release").join(t);
        let mut fuzzer = Command::new(bin);
        // A target's dictionary (fuzz/TARGET.dict), if it has one: the tokens of its input format.
        let dict = fuzz_dir.join(format!("{t}.dict"));
        if dict.is_file() {
            fuzzer.arg(format!("-dict={}", dict.display()));
        }
        run(fuzzer
            .arg(&corpus)
            .arg(format!("-max_total_time={seconds}"))
            .arg("-max_len=65536")
            .arg("-timeout=5")
            .arg("-rss_limit_mb=1024")
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg("-print_final_stats=1"))
        .with_context(|| format!("fuzz target {t} found a crash; the input is in {}", artifacts.display()))?;
    }
    Ok(())
}

fn host_triple() -> Result<String> {
    let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())).arg("-vV").output()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .context("rustc -vV did not say the host triple")
}

/// Start each fuzzer from the project's own examples: the text-protocol case table and the
/// golden manifests (plus any crash inputs kept as regression seeds in fuzz/regressions/).
fn seed_corpus(target: &str, corpus: &Path) -> Result<()> {
    let root = root();
    match target {
        "text_parser" => {
            let cases: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(root.join("tests/protocol/text_cases.json"))?)?;
            for (i, case) in cases.as_array().into_iter().flatten().enumerate() {
                if let Some(input) = case["input"].as_str() {
                    std::fs::write(corpus.join(format!("case-{i}")), input)?;
                }
            }
        }
        "skills" => {
            // A section with a text and a base64 file, and one whose front matter has more.
            let md = "---\nname: guide\ndescription: How to use the tools.\nmetadata:\n  version: \"1.0\"\n  tags: [a, b]\n---\n# Guide\n";
            let one = serde_json::json!({"format": 1, "files": [
                {"path": "guide/SKILL.md", "text": md},
                {"path": "guide/img/a.png", "base64": "iVBORw0KGgoAAAAN"},
            ]});
            std::fs::write(corpus.join("section-1"), one.to_string())?;
        }
        _ => {
            for entry in std::fs::read_dir(root.join("tests/manifests"))? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "json") {
                    std::fs::copy(&path, corpus.join(path.file_name().unwrap_or_default()))?;
                }
            }
        }
    }
    let regressions = root.join("fuzz/regressions").join(target);
    if regressions.is_dir() {
        for entry in std::fs::read_dir(regressions)? {
            let path = entry?.path();
            std::fs::copy(&path, corpus.join(path.file_name().unwrap_or_default()))?;
        }
    }
    Ok(())
}

/// The lines tests recorded in `dir` (one file per test or run), sorted, under `title`.
fn print_summary(title: &str, dir: &Path) {
    let mut lines: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|s| s.trim().to_string())
        .collect();
    lines.sort();
    eprintln!("\n== {title} ==");
    for l in &lines {
        eprintln!("  {l}");
    }
    if lines.is_empty() {
        eprintln!("  (nothing recorded: were these tests filtered out?)");
    }
}

/// A Python virtual environment in target/pyenv with the official MCP SDK 1.x (the MCP tests
/// drive toolhost with it). Created once; reinstalled when tests/mcp/requirements.txt changes.
fn ensure_python_mcp() -> Result<PathBuf> {
    ensure_python_venv("target/pyenv", "tests/mcp/requirements.txt")
}

/// A Python virtual environment at `venv` (relative to the root) with `requirements` installed.
fn ensure_python_venv(venv: &str, requirements: &str) -> Result<PathBuf> {
    let root = root();
    let shown = requirements;
    let venv = root.join(venv);
    let python = venv.join("bin/python");
    let requirements = root.join(requirements);
    let wanted = std::fs::read_to_string(&requirements).with_context(|| format!("read {shown}"))?;
    let stamp = venv.join("installed-requirements.txt");
    if python.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(python);
    }
    eprintln!("installing {shown} into {} …", venv.display());
    if !python.is_file() {
        let system =
            if Command::new("python3").arg("--version").output().is_ok() { "python3" } else { "python" };
        run(Command::new(system).arg("-m").arg("venv").arg(&venv))
            .context("creating a Python virtual environment (needs python3 with the venv module)")?;
    }
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&requirements))
    .with_context(|| format!("pip install -r {shown}"))?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

/// The reference OCI registry (Debian's `docker-registry`, distribution 2.8) that the
/// distribution tests start on 127.0.0.1. Installed with apt when missing and we are root;
/// otherwise the tests fail with a message saying how to install it.
fn ensure_registry() -> Result<()> {
    if std::env::var_os("TOOLHOST_TEST_REGISTRY").is_some() {
        return Ok(());
    }
    ensure_apt("/usr/bin/docker-registry", "docker-registry", "the distribution tests")
}

/// Debian's `redis-server` and `nginx`, which the fleet tests (#30) start on 127.0.0.1 as the
/// replicas' shared replay store and their load balancer. Installed with apt when missing and
/// we are root.
fn ensure_fleet_parts() -> Result<()> {
    if std::env::var_os("TOOLHOST_TEST_REDIS_SERVER").is_none() {
        ensure_apt("/usr/bin/redis-server", "redis-server", "the fleet tests")?;
    }
    if std::env::var_os("TOOLHOST_TEST_NGINX").is_none() {
        ensure_apt("/usr/sbin/nginx", "nginx", "the fleet tests")?;
    }
    Ok(())
}

/// axe-core (npm) for the console's accessibility check, pinned.
const AXE_CORE: &str = "4.11.0";

/// What the console's browser tests run with.
struct ConsoleBrowser {
    python: PathBuf,
    chromium: PathBuf,
    axe: PathBuf,
}

/// Debian's Chromium (apt, when missing), Playwright from PyPI into target/console-env (launched
/// with the system Chromium: `PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD`, nothing else is fetched) and
/// axe-core from npm into target/console-npm, both at pinned versions.
fn ensure_console_browser() -> Result<ConsoleBrowser> {
    let chromium = PathBuf::from("/usr/bin/chromium");
    ensure_apt("/usr/bin/chromium", "chromium", "the console's browser tests")?;
    // pip installs Playwright's driver only; browsers would come from `playwright install`,
    // which is never run (the tests also set PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD).
    let python = ensure_python_venv("target/console-env", "tests/console/requirements.txt")?;
    let npm = npm_install("target/console-npm", "axe-core", AXE_CORE, "the console's accessibility check")?;
    let axe = npm.join("node_modules/axe-core/axe.min.js");
    Ok(ConsoleBrowser { python, chromium, axe })
}

/// js-tiktoken, for the code-mode bench's token counts (o200k_base ships in the package).
const JS_TIKTOKEN: &str = "1.0.21";
/// oidc-provider (npm), the authorization server the OAuth tests start (tests/oauth/server.mjs),
/// pinned. Its engine warns on Node 20 (it asks for 22) but runs: tests/oauth/selfcheck.py passes.
const OIDC_PROVIDER: &str = "9.13.3";

/// oidc-provider into target/oauth-server at the pinned version (again when the pin changes); the
/// node_modules folder holding it, which tests/oauth/server.mjs imports it from.
fn ensure_oauth_server() -> Result<PathBuf> {
    let npm = npm_install(
        "target/oauth-server",
        "oidc-provider",
        OIDC_PROVIDER,
        "the OAuth tests' authorization server",
    )?;
    Ok(npm.join("node_modules"))
}

/// npm's `package` at `version` in the folder `dir` (relative to the root), installed when missing
/// or when the pin changed (a stamp file records the version installed); the folder. `why` needs
/// it.
fn npm_install(dir: &str, package: &str, version: &str, why: &str) -> Result<PathBuf> {
    let npm = root().join(dir);
    let stamp = npm.join(format!("installed-{package}.txt"));
    let installed = npm.join("node_modules").join(package).join("package.json").is_file()
        && std::fs::read_to_string(&stamp).ok().as_deref() == Some(version);
    if !installed {
        eprintln!("installing {package} {version} into {} …", npm.display());
        std::fs::create_dir_all(&npm)?;
        run(Command::new("npm")
            .current_dir(&npm)
            .args(["install", "--no-audit", "--no-fund", "--no-save", "--prefix", "."])
            .arg(format!("{package}@{version}")))
        .with_context(|| format!("npm install {package} ({why})"))?;
        std::fs::write(&stamp, version)?;
    }
    Ok(npm)
}

/// Debian's `package`, providing `bin`, installed with apt when missing and we are root;
/// otherwise an error saying how to install it (`why` needs it).
fn ensure_apt(bin: &str, package: &str, why: &str) -> Result<()> {
    if Path::new(bin).is_file() {
        return Ok(());
    }
    let root =
        Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        bail!(
            "{bin} is missing and this is not root: run `sudo apt-get install -y {package}` ({why} need it)"
        );
    }
    eprintln!("installing {package} for {why} (apt-get install {package}) …");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        // A fresh machine may have no package lists yet.
        run(Command::new("apt-get").arg("update"))?;
        if !install() {
            bail!("apt-get install {package} failed; {why} need {bin}");
        }
    }
    Ok(())
}

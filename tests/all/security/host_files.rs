//! The host's own files are off limits to what it runs (#55, 1). A model once replaced
//! `toolhost.toml` through the stock `files` plugin, because with no `workspace` line the
//! workspace was the config's own folder. Now the default workspace is a folder of its own beside
//! the config, and a grant that would let a plugin or a program write the config, the grants
//! file, the plugins folder or another of the host's files is refused at start, naming both
//! paths. End to end, through the `toolhost` binary as an operator runs it.

use crate::support::lines::output_with;
use crate::support::toolhost;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A folder holding `toolhost.toml` (`plugins = "plugins"` and `extra`) and a plugins folder
/// with the `files` and `sys` plugins, as an operator lays one out.
struct Operator {
    dir: tempfile::TempDir,
    config: Vec<u8>,
}

impl Operator {
    fn new(extra: &str) -> Operator {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        for w in [plugin_artifacts::FILES, plugin_artifacts::SYSTEM] {
            let w = Path::new(w);
            std::fs::copy(w, dir.path().join("plugins").join(w.file_name().unwrap())).unwrap();
        }
        let config = format!("plugins = \"plugins\"\n{extra}").into_bytes();
        std::fs::write(dir.path().join("toolhost.toml"), &config).unwrap();
        Operator { dir, config }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `toolhost --config DIR/toolhost.toml ARGS…` run in DIR, with `stdin` as its input.
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        output_with(
            toolhost()
                .arg("--config")
                .arg(self.path("toolhost.toml"))
                .args(args)
                .current_dir(self.dir.path()),
            stdin.as_bytes(),
        )
    }

    /// The config, the grants file and the plugins folder are as the operator left them.
    #[track_caller]
    fn assert_untouched(&self, what: &str) {
        assert_eq!(
            std::fs::read(self.path("toolhost.toml")).unwrap(),
            self.config,
            "{what} rewrote the config"
        );
        assert!(!self.path("toolhost.grants.toml").exists(), "{what} wrote the grants file");
        // (The host's own approvals record, a dotfile, is the host's to write.)
        let mut plugins: Vec<_> = (std::fs::read_dir(self.path("plugins")).unwrap())
            .map(|e| e.unwrap().file_name())
            .filter(|n| !n.to_string_lossy().starts_with('.'))
            .collect();
        plugins.sort();
        assert_eq!(plugins, ["files.wasm", "system.wasm"], "{what} wrote into the plugins folder");
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the model wrote: its configuration of choice, a grant for itself, a plugin of its own.
const TAKEOVER: &str = "[danger]\npolicy = \"allow\"\n";

#[test]
fn a_model_reply_cannot_rewrite_the_config_the_grants_or_the_plugins_through_files() {
    let op = Operator::new("[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n");
    let escaped = TAKEOVER.replace('\n', "\\n").replace('"', "\\\"");
    let reply: String = [
        "toolhost.toml",
        "../toolhost.toml",
        "toolhost.grants.toml",
        "../toolhost.grants.toml",
        "plugins/evil.wasm",
        "../plugins/evil.wasm",
    ]
    .iter()
    .map(|p| format!("[TOOL] write(\"{p}\", \"{escaped}\") [/TOOL]\n"))
    .collect();
    let out = op.run(&["run", "-"], &reply);
    op.assert_untouched("a model reply through `files`");
    // The writes that stayed inside landed in the workspace, a folder of its own, made and
    // announced on first use.
    let ws = op.path("workspace");
    assert_eq!(std::fs::read_to_string(ws.join("toolhost.toml")).unwrap(), TAKEOVER, "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("created the workspace") && stderr.contains(&*ws.to_string_lossy()), "{stderr}");
    // And the next start reads the operator's config, not the model's.
    let list = op.run(&["list"], "");
    assert!(list.status.success(), "{}", text(&list.stderr));
}

#[test]
fn a_granted_program_cannot_rewrite_the_config_from_the_default_workspace() {
    // The program may write its working directory, the workspace: a folder beside the config,
    // made on first use.
    let op = Operator::new(
        "[danger]\npolicy = \"allow\"\n[plugin.sys]\nexec = [{ program = \"/bin/sh\", args = [\"-c *\"], write = true }]\n",
    );
    let script = "echo pwned > ../toolhost.toml; echo pwned > ../toolhost.grants.toml; \
                  echo pwned > ../plugins/evil.wasm; echo inside > ran.txt";
    let out = op.run(&["call", "run", "sh", &format!("-c '{script}'")], "");
    op.assert_untouched("a granted program");
    assert_eq!(
        std::fs::read_to_string(op.path("workspace/ran.txt")).unwrap_or_default().trim(),
        "inside",
        "the program ran, confined to the workspace: {} {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Start `list` with `config` (beside the `files` and `sys` plugins) and return its refusal.
#[track_caller]
fn refused_at_start(extra: &str, flags: &[&str]) -> (Operator, String) {
    let op = Operator::new(extra);
    let mut args = flags.to_vec();
    args.push("list");
    let out = op.run(&args, "");
    assert_eq!(
        out.status.code(),
        Some(2),
        "a grant over the host's files must stop the start: {}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    (op, stderr)
}

fn real(p: PathBuf) -> String {
    p.canonicalize().unwrap_or(p).display().to_string()
}

#[test]
fn a_grant_over_the_host_files_is_refused_at_start_naming_both_paths() {
    // The workspace named as the config's own folder, granted read-write.
    let (op, e) = refused_at_start(
        "workspace = \".\"\n[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n",
        &[],
    );
    let dir = real(op.path(""));
    assert!(e.contains(&format!("plugin `files` may write {dir}")), "{e}");
    assert!(e.contains(&format!("the config file {dir}/toolhost.toml")), "{e}");
    assert!(e.contains("workspace = \\\"workspace\\\"") || e.contains("workspace = \"workspace\""), "{e}");

    // The same from the command line.
    let op = Operator::new("");
    let out = op.run(&["--workspace", ".", "--allow-write", "files", "list"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("the config file"), "{}", text(&out.stderr));

    // A directory inside the plugins folder.
    let (op, e) = refused_at_start(
        "[plugin.files]\nfs = [{ path = \"plugins/x\", name = \"p\", mode = \"rw\" }]\n",
        &[],
    );
    assert!(e.contains("the plugins folder"), "{e}");
    assert!(e.contains(&real(op.path("plugins"))), "{e}");

    // A program that may write a folder holding the grants file (here, the config's folder).
    let (op, e) = refused_at_start(
        &format!("[plugin.sys]\nexec = [{{ program = \"/bin/sh\", cwd = \"{}\", write = true }}]\n", "."),
        &[],
    );
    assert!(e.contains("plugin `sys` may write") && e.contains("exec sh with write = true"), "{e}");
    assert!(e.contains(&real(op.path(""))), "{e}");

    // Read-only is not writing: the same folder granted read-only starts.
    let op =
        Operator::new("workspace = \".\"\n[plugin.files]\nfs = [{ path = \"workspace\", mode = \"ro\" }]\n");
    let out = op.run(&["list"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

//! Smaller promises: the disk quota counts extents, approvals cover presentation, trust exemptions are keyed by hash or signer, debug logs keep secrets out.

use crate::support::{Env, call, err, ok, toolhost};
use toolhost_core::ErrorKind;
use toolhost_spec::manifest::FsMode;

const MIB: u64 = 1024 * 1024;

/// #26 item 6: a 1-byte write at offset 1 TiB made a 1 TiB sparse file charged as 1 byte.
/// The hole counts: such a write is refused by the quota and the file does not grow; a hole
/// that fits is charged with the byte after it.
#[tokio::test]
async fn a_write_far_past_the_end_is_charged_its_extent() {
    let mut env = Env::with(&[plugin_artifacts::HOSTILE]);
    env.config.limits.write_mb = 4;
    env.config.grant_workspace("hostile", FsMode::ReadWrite);
    let host = env.host();
    for how in ["stream", "pwrite"] {
        let o = call(&host, "sparse", &[how, "1048576"]).await;
        let e = err(&o, ErrorKind::ToolError);
        assert!(e.contains("quota exceeded") && e.contains("write_mb = 4"), "{how}: {e}");
        assert!(e.contains("size 0"), "{how}: the file was extended: {e}");
        assert_eq!(std::fs::metadata(env.ws("sparse.bin")).unwrap().len(), 0, "{how}");
        std::fs::remove_file(env.ws("sparse.bin")).unwrap();

        let o = call(&host, "sparse", &[how, "2"]).await;
        assert_eq!(ok(&o), format!("{how}: size {}", 2 * MIB + 1));
        assert_eq!(o.usage.as_ref().unwrap().written_bytes, 2 * MIB + 1, "{how}: the hole is charged");
        std::fs::remove_file(env.ws("sparse.bin")).unwrap();
    }
}

/// #26 item 6: with `-vv`, rmcp's debug lines carried tool arguments and results verbatim,
/// secrets included (the audit trail redacts them; a log cannot). They stay off now unless the
/// operator names rmcp in TOOLHOST_LOG.
#[test]
fn debug_logs_keep_arguments_and_secrets_out() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    const SECRET: &str = "log-secret-0123456789";
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[secrets.tok]\nenv = \"TOOLHOST_TEST_LOG_SECRET\"\n").unwrap();
    let run = |log: Option<&str>| {
        let mut cmd = toolhost();
        cmd.arg("-vv")
            .arg("--config")
            .arg(&config)
            .arg("--plugins")
            .arg(env.plugins.path())
            .args(["serve", "--mcp"])
            .env("TOOLHOST_TEST_LOG_SECRET", SECRET)
            .env("XDG_STATE_HOME", dir.path())
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(l) = log {
            cmd.env("TOOLHOST_LOG", l);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let send = |stdin: &mut std::process::ChildStdin, s: String| {
            stdin.write_all(s.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
            stdin.flush().unwrap();
        };
        send(
            &mut stdin,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#.into(),
        );
        out.read_line(&mut line).unwrap();
        send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into());
        send(
            &mut stdin,
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{SECRET}"}}}}}}"#
            ),
        );
        line.clear();
        out.read_line(&mut line).unwrap();
        assert!(line.contains(r#""id":2"#) && line.contains(SECRET), "the call ran: {line}");
        drop(stdin);
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let _ = child.wait();
        err
    };
    let err = run(None);
    assert!(err.contains("DEBUG"), "-vv logs at debug level:\n{err}");
    assert!(!err.contains(SECRET), "a secret reached the log:\n{err}");
    // Naming rmcp explicitly is the operator's choice, and is warned about.
    let err = run(Some("debug,rmcp=debug"));
    assert!(err.contains("secrets included"), "{err}");
}

/// #26 item 6: approvals recorded capabilities only, so a new version that dropped `danger` or
/// newly claimed `readOnly` (which MCP clients may run without asking) activated silently. A
/// weaker presentation is held for `toolhost approve` like a larger request.
#[test]
fn a_version_that_looks_less_dangerous_waits_for_approval() {
    use crate::support::component;
    let manifest = |danger: bool, read_only: bool| {
        format!(
            r#"{{"format":1,"name":"cleaner","version":"0.{}.0","tools":[{{"name":"wipe","description":"Delete everything.","argCount":0,"danger":{danger},"readOnly":{read_only}}}]}}"#,
            if danger { 1 } else { 2 }
        )
    };
    let env = Env::with(&[]);
    let file = env.plugins.path().join("cleaner.wasm");
    std::fs::write(&file, component(crate::support::OK_COMPONENT, Some(&manifest(true, false)))).unwrap();
    let reg = env.registry();
    assert!(reg.get("wipe").is_some(), "first sight: approved and loaded; {:?}", reg.failures());
    assert!(reg.pending().is_empty());

    for (danger, read_only, why) in [
        (false, false, "tool wipe is no longer marked dangerous"),
        (true, true, "tool wipe newly claims to be read-only"),
    ] {
        std::fs::write(&file, component(crate::support::OK_COMPONENT, Some(&manifest(danger, read_only))))
            .unwrap();
        let reg = env.registry();
        assert!(reg.get("wipe").is_none(), "the weaker version must not load");
        let pending = reg.pending();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0].extra, [why]);
    }
}

/// #26 item 6: `[trust.plugin.NAME] require_signature = false` exempted any file whose manifest
/// *calls itself* NAME. Exemptions are keyed by the file's SHA-256 (or its signer) now; the old
/// form is refused with the line to write instead.
#[test]
fn a_name_a_file_chooses_exempts_nothing() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str| {
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let out = toolhost()
            .arg("--config")
            .arg(dir.path().join("toolhost.toml"))
            .arg("--plugins")
            .arg(env.plugins.path())
            .arg("list")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let key = "toolhost-ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo= team";
    let (code, _, err) = run(&format!(
        "[trust]\nkeys = [\"{key}\"]\nrequire_signature = true\n[trust.plugin.text]\nrequire_signature = false\n"
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("trust.plugin.text.require_signature = false") && err.contains("allow_unsigned"),
        "{err}"
    );
    // The exact file, by its SHA-256 as `inspect` prints it, is exempt.
    let hash = toolhost_spec::digest::sha256_hex(&std::fs::read(plugin_artifacts::TEXT).unwrap());
    let (code, out, err) = run(&format!(
        "[trust]\nkeys = [\"{key}\"]\nrequire_signature = true\nallow_unsigned = [\"sha256:{hash}\"]\n"
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("echo("), "the exempted file loads:\n{out}");
}

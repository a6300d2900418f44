//! The config's own tests: reading `toolhost.toml`, resolving grants, limits and asked grants.

use super::*;

fn parsed(text: &str) -> Result<Config, ConfigError> {
    Config::from_str_at(text, Path::new("/base"), Some(PathBuf::from("/base/toolhost.toml")))
}

fn parse(text: &str) -> Config {
    parsed(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The message `text` is refused with.
fn refused(text: &str) -> String {
    refusal(text).to_string()
}

fn refusal(text: &str) -> ConfigError {
    parsed(text).err().unwrap_or_else(|| panic!("{text}: accepted"))
}

/// The key and problem of a refusal a key's owner made.
fn refused_key(text: &str) -> Invalid {
    match refusal(text) {
        ConfigError::Key { error, .. } => error,
        other => panic!("{text}: not a key's refusal: {other}"),
    }
}

#[test]
fn defaults_grant_nothing() {
    let c = parse("");
    assert!(c.plugins.is_empty());
    assert_eq!(c.danger, DangerPolicy::Ask);
    assert_eq!(c.plugins_dir, PathBuf::from("/base/plugins"));
    assert_eq!(c.plugin("files"), PluginConfig::default());
}

#[test]
fn unknown_key_names_key_and_file() {
    let e = refused("[limits]\ntimeout = 5");
    assert!(e.contains("/base/toolhost.toml"), "{e}");
    assert!(e.contains("timeout"), "{e}");
    let e = refused("[plugin.files]\nnetwork = [\"x\"]");
    assert!(e.contains("unknown field `network`"), "{e}");
    let e = refused("[plugin.web]\nnet = [\"https://example.com\"]");
    assert!(e.contains("plugin.web.net[0]") && e.contains("not a host pattern"), "{e}");
    let e = refused("[plugin.web]\nsecrets = [\"gh\"]");
    assert!(e.contains("no secret `gh` is defined"), "{e}");
    let e = refused_key("[plugin.web]\nsecrets = [\"gh\"]");
    assert!(
        e.key == "plugin.web.secrets[0]" && matches!(&e.problem, Problem::NoSecret(s) if s == "gh"),
        "{e}"
    );
    let e = refused("[secrets.gh]\nenv = \"A\"\nfile = \"b\"");
    assert!(e.contains("secrets.gh: give exactly one"), "{e}");
    let e = refused("[secrets.gh]\nenv = \"A\"\nhosts = [\"api.github.com\", \"https://api.github.com/v3\"]");
    assert!(e.contains("secrets.gh.hosts[1]") && e.contains("not an origin"), "{e}");
    let e = refused("[secrets.gh]\nenv = \"A\"\nhosts = [\"ftp://x.org\"]");
    assert!(e.contains("secrets.gh.hosts[0]") && e.contains("scheme `ftp` is not allowed"), "{e}");
}

#[test]
fn secret_hosts_are_origins() {
    let c = parse(
        "[secrets.gh]\nenv = \"A\"\nhosts = [\"api.github.com\", \"http://127.0.0.1:8080\", \"*.example.com:8443\"]\n[secrets.any]\nenv = \"B\"",
    );
    let hosts: Vec<String> = c.secrets["gh"].hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, ["https://api.github.com", "http://127.0.0.1:8080", "https://*.example.com:8443"]);
    assert!(c.secrets["any"].hosts.is_empty(), "no hosts: https on 443, decided by `net`");
}

#[test]
fn grants_and_overrides_resolve() {
    let c = parse(
        r#"
            workspace = "ws"
            [limits]
            timeout_ms = 500
            [danger]
            policy = "deny"
            [plugin.files]
            fs = [{ path = "workspace", mode = "rw" }, { path = "/srv/docs", mode = "ro", name = "docs" }]
            output_limit = 50
            [tool.read]
            output_limit = 70
            [tool.delete]
            danger = true
            "#,
    );
    assert_eq!(c.danger, DangerPolicy::Deny);
    let p = c.plugin("files");
    assert_eq!(p.fs[0].host_path, PathBuf::from("/base/ws"));
    assert_eq!(p.fs[0].guest_path(), ".");
    assert_eq!(p.fs[1].guest_path(), "/docs");
    assert_eq!(c.limits_for("files", "ls", None).output_limit, 50);
    assert_eq!(c.limits_for("files", "ls", Some(20)).output_limit, 20);
    assert_eq!(c.limits_for("files", "read", Some(20)).output_limit, 70);
    assert_eq!(c.limits_for("files", "read", None).timeout_ms, 500);
    assert!(c.tool_marked_dangerous("delete"));
    assert!(!c.tool_marked_dangerous("read"));
}

#[test]
fn a_manifest_may_ask_for_more_time_up_to_the_cap_and_the_operator_has_the_last_word() {
    let spec = |name: &str, timeout_ms| {
        let mut t: toolhost_spec::manifest::ToolSpec = serde_json::from_value(serde_json::json!(
            {"name": name, "description": "d", "argCount": 0}
        ))
        .unwrap();
        t.timeout_ms = timeout_ms;
        t
    };
    let c = parse("[limits]\ntimeout_ms = 1000\nmax_timeout_ms = 60000\n[tool.pinned]\ntimeout_ms = 2000");
    assert_eq!(c.limits_for_tool("p", &spec("plain", None)).timeout_ms, 1000);
    assert_eq!(c.limits_for_tool("p", &spec("long", Some(30_000))).timeout_ms, 30_000);
    assert_eq!(c.limits_for_tool("p", &spec("greedy", Some(600_000))).timeout_ms, 60_000, "capped");
    assert_eq!(c.limits_for_tool("p", &spec("pinned", Some(30_000))).timeout_ms, 2000, "[tool.X] wins");
    assert_eq!(Config::default().max_timeout_ms, limits::DEFAULT_MAX_TIMEOUT_MS);
    assert!(refused("[limits]\nmax_timeout_ms = 0").contains("limits.max_timeout_ms = 0"));
}

#[test]
fn bad_values_are_named() {
    let e = refused_key("[limits]\nmemory_mb = 0");
    assert_eq!(e.key, "limits.memory_mb");
    assert!(matches!(e.problem, Problem::OutOfRange { lo: 1, hi: 4096, .. }), "{e}");
    let e = refused_key("[tool.x]\ntimeout_ms = 0");
    assert_eq!(e.key, "tool.x.timeout_ms");
    assert!(matches!(e.problem, Problem::TooSmall { min: 1, .. }), "{e}");
    assert!(refused("[danger]\npolicy = \"maybe\"").contains("maybe"));
    assert_eq!(refused_key("[plugin.a]\nfs = [{ path = \"/a/b\", mode = \"rw\" }]").key, "plugin.a.fs[0]");
    assert_eq!(refused_key("[plugin.a]\nconcurrency = 0").key, "plugin.a.concurrency");
    assert!(refused("[plugin.a]\nfs = [{ path = \"x\", mode = \"rwx\" }]").contains("rwx"));
}

#[test]
fn on_missing_tool_policy_and_asked_grants_resolve() {
    let mut c = parse(
        "[plugin.web]\non_missing = \"refuse\"\n[plugin.\"*\"]\non_missing = \"ask\"\n[tool.echo]\npolicy = \"deny\"",
    );
    assert_eq!(c.plugin("web").on_missing, Some(OnMissing::Refuse));
    assert_eq!(c.plugin("other").on_missing, Some(OnMissing::Ask), "from [plugin.\"*\"]");
    assert_eq!(c.tools["echo"].policy, Some(DangerPolicy::Deny));
    assert_eq!(c.grants_file, PathBuf::from("/base").join(grants::GRANTS_FILE), "beside the config");
    assert!(refused("[plugin.web]\non_missing = \"maybe\"").contains("maybe"));
    assert!(refused("[tool.echo]\npolicy = \"sometimes\"").contains("sometimes"));
    c.asked.push(AskedGrant {
        plugin: "web".into(),
        item: GrantItem::Net("api.github.com".into()),
        granted: "2026-12-01T00:00:00Z".into(),
        by: "terminal".into(),
        who: None,
        deny: false,
        sha256: Some("00".repeat(32)),
    });
    c.asked.push(AskedGrant {
        plugin: "web".into(),
        item: GrantItem::Net("evil.example.net".into()),
        granted: "2026-12-01T00:00:00Z".into(),
        by: "terminal".into(),
        who: None,
        deny: true,
        sha256: None,
    });
    assert_eq!(
        c.plugin("web").net.hosts,
        ["api.github.com"],
        "an asked grant is a grant, a denied one is not"
    );
    assert_eq!(
        c.plugin_file("web", &[1; 32]).net.hosts,
        ["api.github.com"],
        "kept across versions by default"
    );
    c.plugins.get_mut("web").unwrap().asked_grants = Some(AskedGrants::ThisVersion);
    assert!(c.plugin_file("web", &[1; 32]).net.hosts.is_empty(), "asked for another file");
    assert_eq!(c.plugin_file("web", &[0; 32]).net.hosts, ["api.github.com"], "asked for this file");
    c.plugins.get_mut("web").unwrap().net.hosts.push("api.github.com".into());
    assert_eq!(c.plugin_file("web", &[1; 32]).net.hosts, ["api.github.com"], "granted in the config too");
    assert!(c.plugin("other").net.hosts.is_empty());
}

#[test]
fn asked_programs_add_exact_arguments_and_never_borrow_an_operator_grant() {
    let mut c = parse("");
    let ask = |args: &[&str]| AskedGrant {
        plugin: "git-tool".into(),
        item: GrantItem::Exec {
            program: "/usr/bin/git".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        },
        granted: "2026-12-01T00:00:00Z".into(),
        by: "terminal".into(),
        who: None,
        deny: false,
        sha256: None,
    };
    c.asked.push(ask(&["status"]));
    c.asked.push(ask(&["log"]));
    let exec = c.plugin("git-tool").exec;
    assert_eq!(exec.len(), 1);
    assert_eq!(exec[0].describe(), "/usr/bin/git (args: status | log)");
    assert!(!exec[0].network && !exec[0].write && exec[0].env.is_empty());
    // The operator grants git with the network for `fetch` only: the answers add nothing to it.
    let mut g = ExecGrant::new(PathBuf::from("/usr/bin/git"));
    g.args = Some(vec![crate::capability::process::ArgPattern::new("fetch")]);
    g.network = true;
    c.plugins.entry("git-tool".into()).or_default().exec.push(g.clone());
    assert_eq!(c.plugin("git-tool").exec, [g]);
}

#[test]
fn star_section_applies_to_every_plugin() {
    let mut c = parse("");
    c.grant_workspace("*", FsMode::ReadOnly);
    c.grant_workspace("files", FsMode::ReadWrite);
    assert_eq!(c.plugin("files").fs[0].mode, FsMode::ReadWrite);
    assert_eq!(c.plugin("text").fs[0].mode, FsMode::ReadOnly);
    c.set_workspace(Path::new("/elsewhere"));
    assert_eq!(c.plugin("text").fs[0].host_path, PathBuf::from("/elsewhere"));
}

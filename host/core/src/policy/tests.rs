use super::*;
use crate::identity::Via;
use crate::policy::watch::Policies;

fn policy(text: &str) -> Policy {
    Policy::parse(text, Path::new("policy.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn alice() -> Principal {
    Principal {
        issuer: Some("https://as".into()),
        groups: vec!["ops".into()],
        scopes: vec!["mcp:tools".into()],
        via: Via::Oauth,
        ..Principal::token("alice")
    }
}

fn bob() -> Principal {
    Principal { subject: "bob".into(), groups: vec!["users".into()], ..alice() }
}

fn call<'a>(who: Option<&'a Principal>, tool: &'a str, danger: bool) -> Request<'a> {
    Request {
        action: Action::Call,
        principal: who,
        front_end: "mcp-http",
        resource: Resource::Tool { name: tool, plugin: "files", danger, read_only: !danger },
        args: json!({"path": "notes.txt"}),
    }
}

const RULES: &str = r#"
[[rule]]
id = "ops-anything"
effect = "allow"
actions = ["list", "call", "read"]
when = '"ops" in principal.groups'

[[rule]]
id = "safe-tools"
effect = "allow"
actions = ["list", "call"]
when = '!resource.danger'

[[rule]]
id = "no-secrets"
effect = "deny"
actions = ["call"]
when = 'has(context.args.path) && context.args.path.startsWith(".env")'
"#;

#[test]
fn allow_rules_open_and_deny_rules_close_whatever_allows() {
    let p = policy(RULES);
    let (a, b) = (alice(), bob());
    assert_eq!(p.decide(&call(Some(&a), "delete", true)), Decision::Allow { rule: "ops-anything".into() });
    assert_eq!(p.decide(&call(Some(&b), "delete", true)), Decision::Deny { rule: None });
    assert_eq!(p.decide(&call(Some(&b), "read", false)), Decision::Allow { rule: "safe-tools".into() });
    let mut secret = call(Some(&a), "read", false);
    secret.args = json!({"path": ".env"});
    assert_eq!(p.decide(&secret), Decision::Deny { rule: Some("no-secrets".into()) });
    // Nobody proved anything: a principal with no groups.
    assert!(!p.decide(&call(None, "delete", true)).allowed());
    assert!(p.decide(&call(None, "read", false)).allowed());
}

#[test]
fn an_error_in_a_condition_never_opens_anything() {
    let p = policy(
        r#"
[[rule]]
id = "typo-allow"
effect = "allow"
actions = ["call"]
when = 'principal.no_such_field == "x"'

[[rule]]
id = "typo-deny"
effect = "deny"
actions = ["read"]
when = 'resource.no_such_field'

[[rule]]
id = "read-all"
effect = "allow"
actions = ["read"]
"#,
    );
    let a = alice();
    assert!(!p.decide(&call(Some(&a), "echo", false)).allowed(), "a failing allow does not allow");
    let read = Request {
        action: Action::Read,
        principal: Some(&a),
        front_end: "mcp-http",
        resource: Resource::Uri { uri: "skill://x", plugin: "x" },
        args: serde_json::Value::Null,
    };
    assert_eq!(p.decide(&read), Decision::Deny { rule: Some("typo-deny".into()) }, "a failing deny denies");
}

#[test]
fn errors_name_the_file_line_and_column() {
    let e = Policy::parse(
        "[[rule]]\nid = \"a\"\neffect = \"maybe\"\nactions = [\"call\"]\n",
        Path::new("p.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("p.toml:3:"), "{e}");
    let e = Policy::parse(
        "[[rule]]\nid = \"a\"\neffect = \"allow\"\nactions = [\"call\"]\nwhen = 'principal.sub == '\n",
        Path::new("p.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("p.toml:5:"), "{e}");
    assert!(e.contains("rule `a`"), "{e}");
    let e =
        Policy::parse("[[rule]]\nid = \"a\"\neffect = \"allow\"\nactions = [\"fly\"]\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
    assert!(e.starts_with("p.toml:4:") && e.contains("fly"), "{e}");
    let twice = "[[rule]]\nid = \"a\"\neffect = \"allow\"\nactions = [\"call\"]\n".repeat(2);
    let e = Policy::parse(&twice, Path::new("p.toml")).unwrap_err().to_string();
    assert!(e.starts_with("p.toml:5:") && e.contains("used twice"), "{e}");
}

#[test]
fn a_file_with_an_error_keeps_the_last_good_policy() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, RULES).unwrap();
    let policies = Policies::load(Some(&file)).unwrap();
    assert_eq!(policies.current().unwrap().len(), 3);
    std::fs::write(&file, "[[rule]]\nid = \n").unwrap();
    let e = policies.reload().unwrap_err().to_string();
    assert!(e.contains("policy.toml:2:"), "{e}");
    assert_eq!(policies.current().unwrap().len(), 3, "the last good policy stays");
    std::fs::write(&file, "[[rule]]\nid = \"all\"\neffect = \"allow\"\nactions = [\"call\"]\n").unwrap();
    policies.reload().unwrap();
    assert_eq!(policies.current().unwrap().len(), 1);
    assert!(Policies::load(None).unwrap().current().is_none(), "no file: no policy");
}

fn approve<'a>(who: &'a Principal, plugin: &'a str) -> Request<'a> {
    Request {
        action: Action::Approve,
        principal: Some(who),
        front_end: "console",
        resource: Resource::Plugin { plugin },
        args: serde_json::Value::Null,
    }
}

#[test]
fn approving_a_plugin_is_an_action_of_its_own() {
    let p = policy(
        "[[rule]]\nid = \"ops-approve\"\neffect = \"allow\"\nactions = [\"approve\"]\n\
         when = '\"ops\" in principal.groups && resource.plugin != \"system\"'\n",
    );
    let (a, b) = (alice(), bob());
    assert!(p.decide(&approve(&a, "web")).allowed());
    assert!(!p.decide(&approve(&a, "system")).allowed());
    assert!(!p.decide(&approve(&b, "web")).allowed());
    assert!(!p.decide(&call(Some(&a), "read", false)).allowed(), "approve rules allow no call");
}

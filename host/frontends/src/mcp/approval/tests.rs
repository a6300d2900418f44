//! The sealed confirmations' checks, one refusal per way a state or an answer can be wrong.

use super::*;
use ApprovalError as E;

fn req(args: &[&str]) -> DangerRequest {
    DangerRequest {
        tool: "delete".into(),
        plugin: "files".into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        plugin_hash: [7; 32],
        notes: Vec::new(),
    }
}

fn accept() -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(INPUT_KEY.into(), serde_json::json!({"action": "accept", "content": {"approve": true}}));
    r
}

fn state(a: &Approvals, r: &DangerRequest) -> String {
    a.ask(r).unwrap().request_state.unwrap()
}

/// `Approvals::redeem`, waited for.
fn redeem(
    a: &Approvals,
    s: &str,
    responses: Option<&InputResponses>,
    r: &DangerRequest,
) -> Result<Decision, ApprovalError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(a.redeem(s, responses, r))
}

fn refused(r: Result<Decision, ApprovalError>) -> ApprovalError {
    r.expect_err("refused")
}

#[test]
fn an_accepted_state_allows_once() {
    let a = Approvals::new(DEFAULT_TTL).unwrap();
    let r = req(&["keep.txt"]);
    let s = state(&a, &r);
    assert!(matches!(redeem(&a, &s, Some(&accept()), &r), Ok(Decision::Allow)));
    let e = refused(redeem(&a, &s, Some(&accept()), &r));
    assert!(matches!(&e, E::Replayed { tool } if tool == "delete"), "{e}");
    assert!(e.to_string().contains("already used"), "{e}");
}

#[test]
fn forged_cross_argument_other_plugin_and_expired_states_fail() {
    let a = Approvals::new(DEFAULT_TTL).unwrap();
    let r = req(&["keep.txt"]);
    let s = state(&a, &r);
    let e = refused(redeem(&a, &tamper(&s), Some(&accept()), &r));
    assert!(matches!(e, E::Forged { shared_key: false, .. }), "{e}");
    let other = Approvals::new(DEFAULT_TTL).unwrap();
    assert!(matches!(refused(redeem(&other, &s, Some(&accept()), &r)), E::Forged { .. }));
    assert!(matches!(
        refused(redeem(&a, &s, Some(&accept()), &req(&["other.txt"]))),
        E::OtherArguments { .. }
    ));
    assert!(matches!(
        refused(redeem(&a, &s, Some(&accept()), &req(&["keep", ".txt"]))),
        E::OtherArguments { .. }
    ));
    let mut changed = req(&["keep.txt"]);
    changed.plugin_hash = [8; 32];
    let e = refused(redeem(&a, &s, Some(&accept()), &changed));
    assert!(matches!(&e, E::OtherPluginFile { plugin, .. } if plugin == "files"), "{e}");
    let mut renamed = req(&["keep.txt"]);
    renamed.tool = "remove".into();
    let e = refused(redeem(&a, &s, Some(&accept()), &renamed));
    assert!(matches!(&e, E::OtherTool { issued, tool } if issued == "delete" && tool == "remove"), "{e}");
    let short = Approvals::new(Duration::from_millis(1)).unwrap();
    let s = state(&short, &r);
    std::thread::sleep(Duration::from_millis(20));
    assert!(matches!(refused(redeem(&short, &s, Some(&accept()), &r)), E::Expired { .. }));
    // The precheck refuses the same way before anything runs.
    let e = a.precheck(&tamper(&state(&a, &r)), "delete", "files", &[7; 32]).unwrap_err();
    assert!(matches!(e, E::Forged { .. }), "{e}");
    let e = a.precheck(&state(&a, &r), "delete", "files", &[8; 32]).unwrap_err();
    assert!(matches!(e, E::OtherPluginFile { .. }), "{e}");
    assert!(a.precheck(&state(&a, &r), "delete", "files", &[7; 32]).is_ok());
}

fn grant(item: &str) -> GrantRequest {
    GrantRequest {
        plugin: "files".into(),
        tool: "delete".into(),
        args: vec!["keep.txt".into()],
        item: toolhost_core::settings::GrantItem::Net(item.into()),
        plugin_hash: [7; 32],
    }
}

fn grant_state(a: &Approvals, r: &GrantRequest) -> String {
    a.ask_grant(r).unwrap().request_state.unwrap()
}

fn answer(allow: bool, always: bool) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(
        GRANT_KEY.into(),
        serde_json::json!({"action": "accept", "content": {"allow": allow, "always": always}}),
    );
    r
}

fn redeem_grant(
    a: &Approvals,
    s: &str,
    responses: &InputResponses,
    r: &GrantRequest,
) -> Result<GrantAnswer, ApprovalError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(a.redeem_grant(s, Some(responses), r))
}

#[test]
fn a_grant_state_answers_its_item_once_and_nothing_else() {
    let a = Approvals::new(DEFAULT_TTL).unwrap();
    let r = grant("a.example.org");
    let s = grant_state(&a, &r);
    let e = redeem_grant(&a, &s, &answer(true, false), &grant("b.example.org")).unwrap_err();
    assert!(matches!(&e, E::OtherItem { item, .. } if item == "net b.example.org"), "{e}");
    assert!(e.to_string().contains("not net b.example.org"), "{e}");
    assert!(matches!(redeem_grant(&a, &tamper(&s), &answer(true, false), &r), Err(E::Forged { .. })));
    let mut other = grant("a.example.org");
    other.plugin_hash = [8; 32];
    assert!(matches!(redeem_grant(&a, &s, &answer(true, false), &other), Err(E::OtherPluginFile { .. })));
    // A danger state does not answer a grant question, nor the reverse.
    let danger = state(&a, &req(&["keep.txt"]));
    assert!(matches!(redeem_grant(&a, &danger, &answer(true, false), &r), Err(E::DangerNotGrant { .. })));
    assert!(matches!(
        refused(redeem(&a, &s, Some(&accept()), &req(&["keep.txt"]))),
        E::GrantNotDanger { .. }
    ));
    assert!(matches!(redeem_grant(&a, &s, &answer(true, false), &r), Ok(GrantAnswer::Once)));
    assert!(matches!(redeem_grant(&a, &s, &answer(true, false), &r), Err(E::Replayed { .. })));
    assert!(matches!(
        redeem_grant(&a, &grant_state(&a, &r), &answer(true, true), &r),
        Ok(GrantAnswer::Always)
    ));
    assert!(matches!(
        redeem_grant(&a, &grant_state(&a, &r), &answer(false, true), &r),
        Ok(GrantAnswer::Deny)
    ));
    let short = Approvals::new(Duration::from_millis(1)).unwrap();
    let s = grant_state(&short, &r);
    std::thread::sleep(Duration::from_millis(20));
    assert!(matches!(redeem_grant(&short, &s, &answer(true, false), &r), Err(E::Expired { .. })));
}

/// `s` with one hex digit of its payload changed.
fn tamper(s: &str) -> String {
    let c = if &s[2..3] == "a" { "b" } else { "a" };
    format!("{}{c}{}", &s[..2], &s[3..])
}

#[test]
fn decline_and_missing_answers_do_not_allow() {
    let a = Approvals::new(DEFAULT_TTL).unwrap();
    let r = req(&["keep.txt"]);
    let mut decline = InputResponses::new();
    decline.insert(INPUT_KEY.into(), serde_json::json!({"action": "decline"}));
    assert!(matches!(redeem(&a, &state(&a, &r), Some(&decline), &r), Ok(Decision::Deny(_))));
    let e = refused(redeem(&a, &state(&a, &r), None, &r));
    assert!(matches!(e, E::NoAnswer { key: INPUT_KEY, .. }), "{e}");
    assert!(e.to_string().contains("no inputResponses"), "{e}");
    let mut garbled = InputResponses::new();
    garbled.insert(INPUT_KEY.into(), serde_json::json!({"action": "shrug"}));
    assert!(matches!(refused(redeem(&a, &state(&a, &r), Some(&garbled), &r)), E::BadAnswer { .. }));
    let mut no = InputResponses::new();
    no.insert(INPUT_KEY.into(), serde_json::json!({"action": "accept", "content": {"approve": false}}));
    assert!(matches!(redeem(&a, &state(&a, &r), Some(&no), &r), Ok(Decision::Deny(_))));
}

#[test]
fn a_shared_key_opens_on_every_replica_and_a_per_process_key_does_not() {
    let secret = "0123456789abcdef0123456789abcdef";
    let key = || Some(shared_key(secret).unwrap());
    let a = Approvals::with(key(), DEFAULT_TTL, ReplayStore::memory()).unwrap();
    let b = Approvals::with(key(), DEFAULT_TTL, ReplayStore::memory()).unwrap();
    let r = req(&["keep.txt"]);
    let s = state(&a, &r);
    assert!(matches!(redeem(&b, &s, Some(&accept()), &r), Ok(Decision::Allow)));
    // Another fleet's key, and a replica without the key, both refuse, saying why.
    let other = Approvals::with(
        Some(shared_key(&secret.replace('0', "x")).unwrap()),
        DEFAULT_TTL,
        ReplayStore::memory(),
    )
    .unwrap();
    let e = refused(redeem(&other, &state(&a, &r), Some(&accept()), &r));
    assert!(matches!(e, E::Forged { shared_key: true, .. }), "{e}");
    assert!(e.to_string().contains("not issued by this toolhost fleet"), "{e}");
    let alone = Approvals::new(DEFAULT_TTL).unwrap();
    let e = refused(redeem(&alone, &state(&a, &r), Some(&accept()), &r)).to_string();
    assert!(e.contains("not issued by this toolhost process") && e.contains("no [mcp] approval_key"), "{e}");
    let e = shared_key("short").unwrap_err();
    assert!(matches!(e, E::ShortKey { len: 5 }), "{e}");
    assert!(e.to_string().contains("at least 32"), "{e}");
}

#[test]
fn an_unreachable_replay_store_refuses_and_the_state_stays_good() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let store = ReplayStore::redis(&format!("redis://127.0.0.1:{port}")).unwrap();
    let a = Approvals::with(None, DEFAULT_TTL, store).unwrap();
    let r = req(&["keep.txt"]);
    let e = refused(redeem(&a, &state(&a, &r), Some(&accept()), &r));
    assert!(matches!(e, E::Store(StoreError::Unreachable { .. })), "{e}");
    assert!(e.to_string().contains("replay store"), "{e}");
}

#[test]
fn a_refused_retry_interrupts_the_call_and_only_the_store_is_retryable() {
    let a = Approvals::new(DEFAULT_TTL).unwrap();
    let confirm = MrtrConfirm {
        approvals: &a,
        can_elicit: true,
        request_state: None,
        input_responses: Some(accept()),
        interrupt: Mutex::new(None),
        used: Default::default(),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(matches!(rt.block_on(confirm.confirm(&req(&["keep.txt"]))), Decision::Deny(_)));
    let i = confirm.take_interrupt();
    assert!(matches!(i, Some(Interrupt::Invalid(E::AnswersWithoutState { .. }))), "{i:?}");
    let unavailable = StoreError::Unreachable { shown: "redis://cache".into(), why: "down".into() };
    confirm.refused(E::Store(unavailable));
    assert!(matches!(confirm.take_interrupt(), Some(Interrupt::Unavailable(_))));
}

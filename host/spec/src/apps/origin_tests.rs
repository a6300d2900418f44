//! The origins a page may reach: the checker's table (injection attempts first among the
//! refusals), properties of what it accepts, and the policy built from the origins, which no
//! list can add a directive to.

use super::*;
use proptest::prelude::*;

#[test]
fn origins_are_accepted_in_one_spelling() {
    for (entry, normal) in [
        ("https://example.com", "https://example.com"),
        ("https://example.com/", "https://example.com"),
        ("https://api.example.com:8443", "https://api.example.com:8443"),
        ("wss://live.example.com", "wss://live.example.com"),
        ("https://*.example.com", "https://*.example.com"),
        ("https://*.cdn.example.com:443/", "https://*.cdn.example.com:443"),
        ("http://localhost:5173", "http://localhost:5173"),
        ("ws://127.0.0.1:9000/", "ws://127.0.0.1:9000"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("https://192.0.2.10", "https://192.0.2.10"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("https://a-b.c0.example", "https://a-b.c0.example"),
    ] {
        assert_eq!(check_domain(entry).as_deref(), Ok(normal), "{entry}");
        assert_eq!(check_domain(normal).as_deref(), Ok(normal), "{normal} is its own normal form");
    }
    assert!(is_wildcard("https://*.example.com") && !is_wildcard("https://example.com"));
}

#[test]
fn anything_but_an_origin_is_refused_with_why() {
    let long_host = format!("https://{}.com", "a.".repeat(126));
    let long_label = format!("https://{}.com", "a".repeat(64));
    for (entry, says) in [
        ("https://a.com; script-src *", "whitespace"),
        ("https://a.com;script-src", "`;`"),
        ("https://a.com,https://b.com", "`,`"),
        ("https://a.com'", "`'`"),
        ("https://a.com\"", "`\"`"),
        ("https://a.com\n", "control character (U+000A)"),
        ("https://a.com\0", "control character (U+0000)"),
        ("https://a.com%3B", "`%`"),
        ("https://a.com\\", "`\\`"),
        ("*", "would allow every host"),
        ("https://*", "would allow every host"),
        ("https://*.com", "top-level domain"),
        ("https://*.*.example.com", "not the whole leftmost label"),
        ("https://a.*.example.com", "not the whole leftmost label"),
        ("https://*example.com", "not the whole leftmost label"),
        ("https://*.1.2.3", "wildcard over an IP address"),
        ("'self'", "CSP keyword"),
        ("'unsafe-eval'", "CSP keyword"),
        ("data:", "is a scheme"),
        ("blob:", "is a scheme"),
        ("javascript:alert(1)", "is not an origin"),
        ("javascript://a.com", "scheme \"javascript\""),
        ("ftp://a.com", "scheme \"ftp\""),
        ("example.com", "has no scheme"),
        ("", "is empty"),
        ("https://", "has no host"),
        ("https://a.com/path", "a path"),
        ("https://a.com//", "a path"),
        ("https://a.com?x=1", "a query"),
        ("https://a.com#x", "a fragment"),
        ("https://user@a.com", "user information"),
        ("https://user:pw@a.com", "user information"),
        ("HTTPS://A.COM", "lower case: \"https://a.com\""),
        ("https://Example.com/", "lower case: \"https://example.com\""),
        ("http://example.com", "write `https://example.com`"),
        ("ws://example.com", "write `wss://example.com`"),
        ("http://localhost.evil.com", "only for localhost"),
        ("https://a.com:0", "port \"0\""),
        ("https://a.com:65536", "port"),
        ("https://a.com:*", "port"),
        ("https://a.com:08", "port"),
        ("https://a.com:", "port"),
        ("https://a.com:80:80", "port"),
        ("https://[2001:db8::1]", "IPv6"),
        ("https://[::1]x", "after its host"),
        ("https://a[b.com", "`[`"),
        ("https://1.2.3.999", "neither a name nor an IPv4 address"),
        ("https://a..com", "empty label"),
        ("https://a.com.", "empty label"),
        ("https://-a.com", "starts or ends with `-`"),
        ("https://a_b.com", "`_`"),
        ("https://exämple.com", "`xn--` form"),
        (&long_host, "at most 253"),
        (&long_label, "longer than 63"),
    ] {
        let why = check_domain(entry).expect_err(entry);
        assert!(why.contains(says), "{entry:?}: {why}");
    }
}

const SOURCE_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789.-:/*[]";

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever is accepted is one source expression of safe characters, its own normal form.
    #[test]
    fn an_accepted_origin_is_one_safe_source(
        scheme in prop::sample::select(vec!["https://", "wss://", "http://", ""]),
        rest in "[a-z0-9.*:;,' \"/@?#\\[\\]A-Z_-]{0,24}",
    ) {
        let entry = format!("{scheme}{rest}");
        if let Ok(normal) = check_domain(&entry) {
            prop_assert!(normal.chars().all(|c| SOURCE_CHARS.contains(c)), "{normal}");
            prop_assert_eq!(check_domain(&normal), Ok(normal.clone()));
        }
    }

    /// Whatever the lists hold, the policy has its eleven directives, in order.
    #[test]
    fn no_list_adds_a_directive(lists in prop::array::uniform4(prop::collection::vec(".{0,30}", 0..4))) {
        let [c, r, f, b] = lists;
        let csp = AppCsp { connect_domains: c, resource_domains: r, frame_domains: f, base_uri_domains: b };
        let policy = content_security_policy(&csp);
        prop_assert_eq!(directives(&policy), DIRECTIVES);
    }
}

const DIRECTIVES: [&str; 11] = [
    "default-src",
    "script-src",
    "style-src",
    "img-src",
    "font-src",
    "media-src",
    "connect-src",
    "frame-src",
    "base-uri",
    "object-src",
    "form-action",
];

fn directives(policy: &str) -> Vec<&str> {
    policy.split(';').map(|d| d.split_whitespace().next().unwrap_or_default()).collect()
}

#[test]
fn the_policy_without_origins_grants_nothing_outside() {
    assert_eq!(
        content_security_policy(&AppCsp::default()),
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; font-src 'self'; media-src 'self' data:; connect-src 'none'; \
         frame-src 'none'; base-uri 'self'; object-src 'none'; form-action 'none'"
    );
}

#[test]
fn the_policy_with_origins_names_them_where_declared() {
    let csp = AppCsp {
        connect_domains: vec!["https://api.example.com".into(), "wss://live.example.com".into()],
        resource_domains: vec!["https://*.cdn.example.com".into()],
        frame_domains: vec!["https://www.youtube.com".into()],
        base_uri_domains: vec!["https://example.com".into()],
    };
    let r = "https://*.cdn.example.com";
    assert_eq!(
        content_security_policy(&csp),
        format!(
            "default-src 'none'; script-src 'self' 'unsafe-inline' {r}; style-src 'self' 'unsafe-inline' {r}; \
             img-src 'self' data: {r}; font-src 'self' {r}; media-src 'self' data: {r}; \
             connect-src https://api.example.com wss://live.example.com; frame-src https://www.youtube.com; \
             base-uri https://example.com; object-src 'none'; form-action 'none'"
        )
    );
}

#[test]
fn a_hand_built_list_cannot_inject_into_the_policy() {
    let hostile: Vec<String> = [
        "https://a.com; script-src *",
        "https://a.com;script-src",
        "'unsafe-eval'",
        "*",
        "https://*",
        "data:",
        "https://a.com\nscript-src *",
        "https://b.com,https://c.com",
        "https://a.com'",
        "https://ok.example.com/",
        "https://ok.example.com",
    ]
    .map(String::from)
    .to_vec();
    let csp = AppCsp {
        connect_domains: hostile.clone(),
        resource_domains: hostile.clone(),
        frame_domains: hostile.clone(),
        base_uri_domains: hostile,
    };
    let policy = content_security_policy(&csp);
    assert_eq!(directives(&policy), DIRECTIVES);
    assert_eq!(policy.matches("https://ok.example.com").count(), 8, "each list once, normalized: {policy}");
    for absent in ["unsafe-eval", " * ", "a.com", "b.com", "https://* ", "data:;", "\n"] {
        assert!(!policy.contains(absent), "{absent:?} in {policy}");
    }
}

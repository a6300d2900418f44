//! The telemetry row (issue #30): what a call costs with `[telemetry]` off (the default: one
//! check that no tracer is installed) and on (a span per call, a child span per host call,
//! the call metrics, exported over OTLP/HTTP to a do-nothing collector on loopback). Telemetry
//! is installed once per process, so this runs last: `off` is measured first, then `on`, in the
//! same run on the same host.

use super::{Case, host_case, interleaved, us};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use toolhost_core::executor::{AlwaysConfirm, CallContext, CallControl};
use toolhost_core::telemetry::{self, TraceParent, settings::TelemetrySettings};
use toolhost_core::{ToolCall, Toolhost};

/// An OTLP/HTTP collector that reads each export and answers 200 with an empty body.
fn sink() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                    if out.write_all(ok).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A traced call (a caller's `traceparent`) through the executor, which must succeed.
fn traced_case(host: &Arc<Toolhost>, call: ToolCall) -> Case<'_> {
    let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    Box::new(move || {
        let call = call.clone();
        Box::pin(async move {
            let ctx =
                CallContext { front_end: Some("bench"), trace_parent: parent, ..CallContext::default() };
            let o = host.executor.call_controlled(&call, &AlwaysConfirm, &ctx, &CallControl::default()).await;
            assert!(o.success, "{o:?}");
        })
    })
}

pub fn rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, host: &Arc<Toolhost>, n: usize) {
    assert!(!telemetry::enabled(), "telemetry rows must run before anything installs telemetry");
    let echo = ToolCall::new("echo", ["hello"]);
    let off = interleaved(rt, &mut [host_case(host, echo.clone())], n).remove(0);
    let settings = TelemetrySettings {
        otlp_endpoint: Some(format!("http://127.0.0.1:{}", sink())),
        metrics_interval_ms: 1000,
        ..TelemetrySettings::default()
    };
    let installed = telemetry::install(&settings).unwrap().expect("installed");
    let on = interleaved(rt, &mut [traced_case(host, echo)], n).remove(0);
    installed.shutdown();
    line(String::new());
    line("## Telemetry (issue #30)".into());
    line(String::new());
    line(
        "Per-call cost of `echo(\"hello\")` through the executor with `[telemetry]` off (the default) and on"
            .into(),
    );
    line(
        "(a span per call continuing a caller's `traceparent`, the call metrics; OTLP/HTTP export to a"
            .into(),
    );
    line("do-nothing collector on loopback), measured one after the other in the same run.".into());
    line(String::new());
    line("| what | p50 | p99 | ÷ off |".into());
    line("|---|---|---|---|".into());
    let ratio =
        |m: &super::Measured| format!("{:.2}×", m.stats.p50.as_secs_f64() / off.stats.p50.as_secs_f64());
    line(format!("| per-call cost, telemetry off | {} | {} | 1.00× |", us(off.stats.p50), us(off.stats.p99)));
    line(format!(
        "| per-call cost, telemetry on | {} | {} | {} |",
        us(on.stats.p50),
        us(on.stats.p99),
        ratio(&on)
    ));
}

//! OpenTelemetry: a span per call, a child span per `http` and `process` host call, and the
//! calls' metrics, exported over OTLP (HTTP/protobuf) when `[telemetry] otlp_endpoint` is set.
//!
//! Off (the default) nothing is installed: [`CallSpan::start`] and [`host_span`] check one
//! `OnceLock` and return, no exporter exists and no connection is ever attempted. On, the
//! process's one [`install`] builds the tracer and meter providers (batch span export and
//! periodic metric export, each on its own thread, reqwest's blocking client) and the executor
//! and the capabilities record through them. The front ends only hand in the caller's
//! [`TraceParent`] (`CallContext::trace_parent`).
//!
//! What goes into a span: names (tool, plugin, version, front end), the outcome kind, timings
//! and usage counts, an `http` request's method, host, port and status, a program's file name
//! and exit code. Never an argument value (unless `capture_arguments`, and then with every
//! granted secret value of the plugin replaced), never a URL path or query, never an error
//! message.

pub mod settings;
mod traceparent;

pub use traceparent::TraceParent;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use settings::TelemetrySettings;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The installed tracer and instruments (set once per process by [`install`]).
static ACTIVE: OnceLock<Active> = OnceLock::new();

struct Active {
    tracer: opentelemetry_sdk::trace::SdkTracer,
    calls: Counter<u64>,
    duration: Histogram<f64>,
    capture_arguments: bool,
}

/// Whether telemetry is installed in this process.
pub fn enabled() -> bool {
    ACTIVE.get().is_some()
}

/// The exporters of an [`install`]: [`Installed::shutdown`] exports what is still buffered.
#[derive(Debug)]
pub struct Installed {
    traces: opentelemetry_sdk::trace::SdkTracerProvider,
    metrics: opentelemetry_sdk::metrics::SdkMeterProvider,
}

impl Installed {
    /// Export the spans and metrics not yet sent and stop the exporters' threads (blocking: call
    /// it outside the async runtime, at exit).
    pub fn shutdown(self) {
        if let Err(e) = self.traces.shutdown() {
            tracing::warn!("telemetry: exporting the last spans failed: {e}");
        }
        if let Err(e) = self.metrics.shutdown() {
            tracing::warn!("telemetry: exporting the last metrics failed: {e}");
        }
    }
}

/// Install telemetry for this process as `settings` say: `Ok(None)` when it is off (nothing is
/// built), or when it was installed already.
pub fn install(settings: &TelemetrySettings) -> Result<Option<Installed>, String> {
    let Some(endpoint) = &settings.otlp_endpoint else { return Ok(None) };
    if enabled() {
        return Ok(None);
    }
    let settings::Protocol::HttpProtobuf = settings.protocol;
    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_service_name(settings.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("telemetry.otlp_endpoint: cannot build the span exporter: {e}"))?;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/metrics"))
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("telemetry.otlp_endpoint: cannot build the metric exporter: {e}"))?;
    let traces = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let reader = opentelemetry_sdk::metrics::PeriodicReader::builder(metrics)
        .with_interval(Duration::from_millis(settings.metrics_interval_ms))
        .build();
    let meters = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build();
    let meter = meters.meter("toolhost");
    let active = Active {
        tracer: traces.tracer("toolhost"),
        calls: meter
            .u64_counter("toolhost.calls")
            .with_description("tool calls, by tool and outcome")
            .build(),
        duration: meter
            .f64_histogram("toolhost.call.duration")
            .with_unit("s")
            .with_description("how long a tool call took, from its arrival to its outcome")
            .build(),
        capture_arguments: settings.capture_arguments,
    };
    if ACTIVE.set(active).is_err() {
        return Ok(None);
    }
    Ok(Some(Installed { traces, metrics: meters }))
}

/// What the executor tells the span of a finished call.
#[derive(Debug, Default)]
pub struct Finished<'a> {
    pub plugin: Option<&'a str>,
    pub version: Option<&'a str>,
    /// `ok`, or the error kind (`tool_error`, `timeout`, …).
    pub outcome: &'a str,
    pub usage: Option<&'a crate::usage::Usage>,
    /// The argument values, already redacted; put on the span only under `capture_arguments`.
    pub arguments: Option<&'a [String]>,
}

/// The span of one call (only when telemetry is installed).
#[derive(Debug)]
pub struct CallSpan {
    cx: Context,
    tool: String,
    front_end: &'static str,
    started: Instant,
}

impl CallSpan {
    /// A call's span, a child of `parent` (the caller's span) if there is one, saying `who`
    /// called (`enduser.id`, and the issuer that vouched for it); `None` when telemetry is off.
    pub fn start(
        tool: &str,
        front_end: Option<&'static str>,
        parent: Option<&TraceParent>,
        who: Option<&crate::identity::Principal>,
    ) -> Option<CallSpan> {
        let active = ACTIVE.get()?;
        let parent_cx = match parent {
            None => Context::new(),
            Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from_bytes(p.trace_id),
                SpanId::from_bytes(p.span_id),
                TraceFlags::new(p.flags),
                true,
                TraceState::default(),
            )),
        };
        let front_end = front_end.unwrap_or("embedded");
        let mut attributes = vec![
            KeyValue::new("toolhost.tool", tool.to_string()),
            KeyValue::new("toolhost.front_end", front_end),
        ];
        if let Some(who) = who {
            attributes.push(KeyValue::new("enduser.id", who.subject.clone()));
            if let Some(iss) = &who.issuer {
                attributes.push(KeyValue::new("toolhost.principal.issuer", iss.clone()));
            }
        }
        let span = active
            .tracer
            .span_builder(format!("tools/call {tool}"))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&active.tracer, &parent_cx);
        Some(CallSpan {
            cx: parent_cx.with_span(span),
            tool: tool.to_string(),
            front_end,
            started: Instant::now(),
        })
    }

    /// The context the call runs in (its host calls' spans are children of this one).
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Whether argument values may go on the span.
    pub fn captures_arguments(&self) -> bool {
        ACTIVE.get().is_some_and(|a| a.capture_arguments)
    }

    /// End the span with what the call came to, and count it.
    pub fn finish(self, f: Finished<'_>) {
        let Some(active) = ACTIVE.get() else { return };
        let elapsed = self.started.elapsed();
        let span = self.cx.span();
        let mut attrs = vec![
            KeyValue::new("toolhost.outcome", f.outcome.to_string()),
            KeyValue::new("toolhost.duration_ms", elapsed.as_secs_f64() * 1000.0),
        ];
        if let Some(p) = f.plugin {
            attrs.push(KeyValue::new("toolhost.plugin", p.to_string()));
        }
        if let Some(v) = f.version {
            attrs.push(KeyValue::new("toolhost.plugin.version", v.to_string()));
        }
        if let Some(u) = f.usage {
            let n = |k: &'static str, v: u64| KeyValue::new(k, i64::try_from(v).unwrap_or(i64::MAX));
            attrs.extend([
                n("toolhost.usage.busy_us", u.busy_us),
                n("toolhost.usage.wall_us", u.wall_us),
                n("toolhost.usage.queued_us", u.queued_us),
                n("toolhost.usage.peak_memory_kb", u.peak_memory_kb),
                n("toolhost.usage.written_bytes", u.written_bytes),
                n("toolhost.usage.http_requests", u.http_requests.into()),
                n("toolhost.usage.http_sent_bytes", u.http_sent_bytes),
                n("toolhost.usage.http_received_bytes", u.http_received_bytes),
            ]);
        }
        if active.capture_arguments
            && let Some(args) = f.arguments
        {
            let json = serde_json::to_string(args).unwrap_or_default();
            attrs.push(KeyValue::new("toolhost.arguments", json));
        }
        span.set_attributes(attrs);
        if f.outcome != "ok" {
            // The kind only: an error message can quote arguments.
            span.set_status(Status::error(f.outcome.to_string()));
        }
        span.end();
        let labels = [
            KeyValue::new("toolhost.tool", self.tool),
            KeyValue::new("toolhost.outcome", f.outcome.to_string()),
            KeyValue::new("toolhost.front_end", self.front_end),
        ];
        active.calls.add(1, &labels);
        active.duration.record(elapsed.as_secs_f64(), &labels);
    }
}

/// A host call's span (`http`, `process`), a child of the call's span found in the current
/// context; a no-op when telemetry is off or the host call runs outside a traced call.
#[derive(Debug)]
pub struct HostSpan(Option<Context>);

/// Start the span of a host call; `attrs` is only evaluated when telemetry is on.
pub fn host_span(name: &'static str, attrs: impl FnOnce() -> Vec<KeyValue>) -> HostSpan {
    let Some(active) = ACTIVE.get() else { return HostSpan(None) };
    let parent = Context::current();
    if !parent.has_active_span() {
        return HostSpan(None);
    }
    let span = active
        .tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .with_attributes(attrs())
        .start_with_context(&active.tracer, &parent);
    HostSpan(Some(parent.with_span(span)))
}

impl HostSpan {
    /// End it with `attrs`, as an error if `failed` (no message: it may carry a URL).
    pub fn end(self, failed: bool, attrs: impl FnOnce() -> Vec<KeyValue>) {
        let Some(cx) = self.0 else { return };
        let span = cx.span();
        span.set_attributes(attrs());
        if failed {
            span.set_status(Status::error("failed"));
        }
        span.end();
    }
}

/// The span the current task runs under (a call's, inside [`in_context`]) as a parent for
/// another call: a code-mode script's inner calls are its children. `None` when telemetry is
/// off or no span is current.
pub fn current_parent() -> Option<TraceParent> {
    use opentelemetry::trace::TraceContextExt as _;
    ACTIVE.get()?;
    let cx = Context::current();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

/// Run `fut` inside the call's context, so host calls made while it runs find their parent.
pub fn in_context<F: std::future::Future>(cx: Context, fut: F) -> impl Future<Output = F::Output> {
    use opentelemetry::context::FutureExt as _;
    // Not an `async fn`: that would hold `fut` twice (the argument, and the awaited wrapper).
    fut.with_context(cx)
}

/// A key–value attribute for a span (re-exported so callers need not name `opentelemetry`).
pub fn attr(key: &'static str, value: impl Into<opentelemetry::Value>) -> KeyValue {
    KeyValue::new(key, value)
}

pub use opentelemetry::KeyValue as Attribute;

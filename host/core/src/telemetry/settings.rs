//! `[telemetry]`: where spans and metrics go (OpenTelemetry over OTLP), off unless
//! `otlp_endpoint` is set. A leaf: `settings` reads it; it imports nothing of toolhost but the
//! config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;

/// `[telemetry] service_name` when not set.
pub const DEFAULT_SERVICE_NAME: &str = "toolhost";
/// `[telemetry] metrics_interval_ms` when not set: metrics are exported once a minute.
pub const DEFAULT_METRICS_INTERVAL_MS: u64 = 60_000;

/// The OTLP transport. Only HTTP with protobuf bodies (the `/v1/traces` and `/v1/metrics`
/// paths of an OpenTelemetry Collector's port 4318); gRPC is not built in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum Protocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// `[telemetry]` resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The collector's base URL (`http://otel-collector:4318`): `/v1/traces` and `/v1/metrics`
    /// are appended. `None`: telemetry off — no exporter, no connection.
    pub otlp_endpoint: Option<String>,
    pub protocol: Protocol,
    /// `service.name` of the resource every span and metric carries.
    pub service_name: String,
    /// Put a call's argument values on its span (`toolhost.arguments`), secrets still redacted.
    pub capture_arguments: bool,
    /// How often metrics are exported, in ms.
    pub metrics_interval_ms: u64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            otlp_endpoint: None,
            protocol: Protocol::default(),
            service_name: DEFAULT_SERVICE_NAME.to_string(),
            capture_arguments: false,
            metrics_interval_ms: DEFAULT_METRICS_INTERVAL_MS,
        }
    }
}

/// `[telemetry]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTelemetry {
    otlp_endpoint: Option<String>,
    protocol: Option<Protocol>,
    service_name: Option<String>,
    capture_arguments: Option<bool>,
    metrics_interval_ms: Option<u64>,
}

impl RawTelemetry {
    pub(crate) fn resolve(self) -> Result<TelemetrySettings, Invalid> {
        let d = TelemetrySettings::default();
        let otlp_endpoint = match self.otlp_endpoint {
            None => None,
            Some(e) => {
                const KEY: &str = "telemetry.otlp_endpoint";
                let url = url::Url::parse(&e)
                    .map_err(|err| Invalid::value(KEY, format!("{e:?}"), format!("is not a URL: {err}")))?;
                if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                    let is = "must be an http:// or https:// URL with a host";
                    return Err(Invalid::value(KEY, format!("{e:?}"), is));
                }
                if !url.username().is_empty() || url.password().is_some() {
                    return Err(Invalid::is(KEY, "must not hold credentials"));
                }
                Some(e.trim_end_matches('/').to_string())
            }
        };
        let service_name = self.service_name.unwrap_or(d.service_name);
        if service_name.trim().is_empty() {
            return Err(Invalid::is("telemetry.service_name", "must not be empty"));
        }
        let metrics_interval_ms = self.metrics_interval_ms.unwrap_or(d.metrics_interval_ms);
        if !(100..=3_600_000).contains(&metrics_interval_ms) {
            return Err(Invalid::out_of_range(
                "telemetry.metrics_interval_ms",
                metrics_interval_ms,
                100,
                3_600_000,
            ));
        }
        Ok(TelemetrySettings {
            otlp_endpoint,
            protocol: self.protocol.unwrap_or(d.protocol),
            service_name,
            capture_arguments: self.capture_arguments.unwrap_or(d.capture_arguments),
            metrics_interval_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section of `text`, or its error's message (serde's or the resolution's).
    fn parse(text: &str) -> Result<TelemetrySettings, Box<dyn std::error::Error>> {
        Ok(toml::from_str::<RawTelemetry>(text)?.resolve()?)
    }

    #[test]
    fn off_by_default_and_arguments_never_captured_by_default() {
        let t = parse("").unwrap();
        assert_eq!(t, TelemetrySettings::default());
        assert!(t.otlp_endpoint.is_none() && !t.capture_arguments);
        let t = parse("otlp_endpoint = \"http://127.0.0.1:4318/\"\nprotocol = \"http/protobuf\"").unwrap();
        assert_eq!(t.otlp_endpoint.as_deref(), Some("http://127.0.0.1:4318"));
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (text, want) in [
            ("otlp_endpoint = \"collector:4318\"", "telemetry.otlp_endpoint"),
            ("otlp_endpoint = \"ftp://collector\"", "telemetry.otlp_endpoint"),
            ("otlp_endpoint = \"http://u:p@collector\"", "credentials"),
            ("protocol = \"grpc\"", "grpc"),
            ("service_name = \" \"", "telemetry.service_name"),
            ("metrics_interval_ms = 5", "telemetry.metrics_interval_ms"),
            ("endpoint = \"http://x\"", "unknown field `endpoint`"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}

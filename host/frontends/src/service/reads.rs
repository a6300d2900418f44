//! Reads of the resources the host serves (skills' files, whole skills), seen by the service as
//! calls are: counted (`toolhost_resource_reads_total`) and written to the audit trail, a line
//! of their own (`"kind": "read"`), made durable before the answer as `[audit] fsync` says.

use super::{HexHash, Rfc3339Millis, Service};
use toolhost_core::executor::ResourceRead;

impl Service {
    /// Count and audit `read`; wait as `[audit] fsync` says.
    pub(super) async fn record_read(&self, read: ResourceRead<'_>) {
        let outcome = read.outcome;
        let plugin = read.plugin;
        self.metrics.read(plugin.map_or("", |p| &p.name), read.method, outcome);
        let Some(audit) = &self.audit else { return };
        // Keys in name order, as a call's line.
        #[derive(serde::Serialize)]
        struct Line<'a> {
            bytes: u64,
            client: Option<&'a str>,
            front_end: &'a str,
            kind: &'static str,
            method: &'static str,
            outcome: &'static str,
            plugin: Option<&'a str>,
            sha256: Option<HexHash<'a>>,
            time: Rfc3339Millis,
            token: Option<&'a str>,
            uri: &'a str,
            version: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            who: Option<&'a toolhost_core::identity::Principal>,
        }
        let ctx = read.ctx;
        let line = audit.append(&Line {
            bytes: read.bytes,
            client: ctx.client.as_deref(),
            front_end: ctx.front_end.unwrap_or(self.front_end),
            kind: "read",
            method: read.method,
            outcome,
            plugin: plugin.map(|p| &*p.name),
            sha256: plugin.map(|p| HexHash(&p.hash)),
            time: Rfc3339Millis(std::time::SystemTime::now()),
            token: ctx.token.as_deref(),
            // A URI is the client's text: cut like a long argument, secrets redacted.
            uri: &self.audit_arg(read.uri),
            version: plugin.map(|p| p.manifest.version.as_str()),
            who: ctx.principal.as_deref(),
        });
        self.durable(line).await;
    }
}

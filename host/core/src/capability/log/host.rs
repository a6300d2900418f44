//! The `host` interface, which is two capabilities: `log` (this one) and `progress`. The linker
//! hands the interface a [`HostView`] of both parts of the call, and of its net part: the
//! plugin's name, and its secrets, redacted from what either passes on.

use super::{LogBucket, LogCall};
use crate::capability::net::NetCall;
use crate::capability::progress::ProgressCall;
use crate::capability::{CallSetup, CallState, Calls, Capability, GrantContext, LinkOptions, Missing};
use wasmtime::component::Linker;

/// The log capability (see the module docs of `capability::log`).
pub struct Log;

impl Capability for Log {
    type Grant = ();
    type Call = LogCall;

    fn effective(_: &GrantContext<'_>) -> ((), Vec<Missing>) {
        ((), Vec::new())
    }

    fn prepare(_: &(), setup: &CallSetup<'_>) -> LogCall {
        let bucket: Option<std::sync::Arc<LogBucket>> = setup.log_bucket.clone();
        LogCall { tool: setup.tool.clone(), budget: super::CallLog::new(setup.limits, bucket) }
    }

    /// The whole `host` interface: `log` here, `progress` to its own capability's part.
    fn add_to_linker<S: CallState>(linker: &mut Linker<S>, _: LinkOptions) -> wasmtime::Result<()> {
        crate::bindings::host::add_to_linker::<S, HostInterface>(linker, |s| host_view(s.calls()))
    }
}

/// The `host` interface's view of one call.
pub struct HostView<'a> {
    log: &'a mut LogCall,
    progress: &'a mut ProgressCall,
    net: &'a NetCall,
}

/// The `host` interface's view of `calls`.
pub fn host_view(calls: &mut Calls) -> HostView<'_> {
    HostView { log: &mut calls.log, progress: &mut calls.progress, net: &calls.net }
}

/// The [`wasmtime::component::HasData`] of the `host` interface: its data is a [`HostView`].
pub struct HostInterface;

impl wasmtime::component::HasData for HostInterface {
    type Data<'a> = HostView<'a>;
}

impl crate::bindings::host::Host for HostView<'_> {
    fn log(&mut self, level: crate::bindings::host::Level, message: String) {
        self.log.log(level, message, &self.net.plugin, &self.net.grant);
    }

    fn progress(&mut self, done: u64, total: Option<u64>, message: String) {
        self.progress.report(done, total, message, &self.net.grant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::host::Host as _;
    use crate::capability::net::{GrantedSecret, NetGrant};
    use std::sync::Arc;

    /// The `host` interface's `progress` and `log` get the plugin's secrets from the call's net
    /// grant (through [`HostView`]): a secret value in a progress message is redacted.
    #[test]
    fn the_host_view_redacts_the_plugins_secrets_from_progress_messages() {
        let secret = GrantedSecret { name: "gh".into(), value: "s3cr3t-value".into(), hosts: vec![] };
        let grants = crate::capability::Grants {
            net: Arc::new(NetGrant { secrets: vec![secret], ..Default::default() }),
            ..Default::default()
        };
        let (plugin, tool): (Arc<str>, Arc<str>) = (Arc::from("p"), Arc::from("t"));
        let config = crate::settings::Config::default();
        let workspace: Arc<std::path::Path> = Arc::from(std::path::Path::new("/ws"));
        let setup = CallSetup {
            plugin: &plugin,
            tool: &tool,
            limits: &config.limits,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(5),
            config: &config,
            workspace: &workspace,
            log_bucket: None,
            kv: &Arc::new(crate::capability::kv::Stores::new(config.kv.clone())),
            session: None,
            principal: None,
        };
        let mut calls = Calls::prepare(&grants, &setup);
        let (progress, rx) = ProgressCall::watched();
        calls.progress = progress;
        host_view(&mut calls).progress(1, None, "token=s3cr3t-value".into());
        assert_eq!(rx.borrow().as_ref().unwrap().message, "token=[secret gh redacted]");
    }
}

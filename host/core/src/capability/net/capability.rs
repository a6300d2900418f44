//! The network capability's part of a plugin and of a call (see `capability::Capability`): the
//! effective grant ([`super::effective`]), the hosts and secrets a human's answers add for one
//! call, the call's [`NetCall`], and the `http` import linked to it.

use super::{GrantedSecret, NetCall, NetGrant};
use crate::capability::{Asked, CallSetup, CallState, Capability, GrantContext, LinkOptions, Missing};
use crate::settings::grants::GrantItem;
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

/// The network capability (outbound HTTP through the host, secrets bound to origins).
pub struct Net;

impl Capability for Net {
    type Grant = Arc<NetGrant>;
    type Call = NetCall;

    fn effective(cx: &GrantContext<'_>) -> (Arc<NetGrant>, Vec<Missing>) {
        let (grant, missing) = super::effective(cx.plugin, cx.request, cx.grant, cx.secrets);
        (Arc::new(grant), missing)
    }

    /// A host answered about is granted as asked; a secret is read now, like a granted secret
    /// at load (one that cannot be read stays refused: the call's error says so).
    fn with_asked(grant: &Arc<NetGrant>, asked: &Asked<'_>) -> Option<Arc<NetGrant>> {
        let adds = |i: &&GrantItem| matches!(i, GrantItem::Net(_) | GrantItem::Secret(_));
        if !asked.items.iter().any(|i| adds(&i)) {
            return None;
        }
        let mut g = (**grant).clone();
        for item in asked.items {
            match item {
                GrantItem::Net(host) if !g.granted.contains(host) => g.granted.push(host.clone()),
                GrantItem::Secret(name) if !g.secrets.iter().any(|s| &s.name == name) => {
                    match asked.secrets.get(name).map(|src| (src, src.read())) {
                        Some((src, Ok(value))) => g.secrets.push(GrantedSecret {
                            name: name.clone(),
                            value,
                            hosts: src.hosts.clone(),
                        }),
                        Some((_, Err(why))) => tracing::warn!("{why}"),
                        None => {}
                    }
                }
                _ => {}
            }
        }
        Some(Arc::new(g))
    }

    fn prepare(grant: &Arc<NetGrant>, setup: &CallSetup<'_>) -> NetCall {
        NetCall::new(setup.plugin.clone(), grant.clone(), setup.config.net, setup.deadline)
    }

    fn add_to_linker<S: CallState>(linker: &mut Linker<S>, _: LinkOptions) -> wasmtime::Result<()> {
        crate::bindings::http::add_to_linker::<S, HasSelf<NetCall>>(linker, |s| &mut s.calls().net)
    }
}

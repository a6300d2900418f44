//! The process capability's part of a plugin and of a call (see `capability::Capability`): the
//! effective grant ([`super::effective`]), the programs a human's answers add for one call, the
//! call's [`ProcessCall`], and the `process` import linked to it.

use super::{ArgPattern, ExecGrant, ExecGrants, GrantedProgram, ProcessCall};
use crate::capability::{Asked, CallSetup, CallState, Capability, GrantContext, LinkOptions, Missing};
use crate::settings::grants::GrantItem;
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

/// The process capability (programs run for a plugin, confined by the kernel).
pub struct Process;

impl Capability for Process {
    type Grant = Arc<ExecGrants>;
    type Call = ProcessCall;

    fn effective(cx: &GrantContext<'_>) -> (Arc<ExecGrants>, Vec<Missing>) {
        let (grant, missing) = super::effective(cx.plugin, &cx.request.exec, &cx.grant.exec);
        (Arc::new(grant), missing)
    }

    /// Each program answered about that the manifest requests by name and the operator did not
    /// grant, runnable with exactly the arguments answered about (no environment, in the
    /// workspace, read-only to it, no network — like `--allow-run`).
    fn with_asked(grant: &Arc<ExecGrants>, asked: &Asked<'_>) -> Option<Arc<ExecGrants>> {
        if !asked.items.iter().any(|i| matches!(i, GrantItem::Exec { .. })) {
            return None;
        }
        let operator: Vec<String> = grant.granted.iter().map(|g| g.grant.name.clone()).collect();
        let mut out = (**grant).clone();
        for item in asked.items {
            let GrantItem::Exec { program, args } = item else { continue };
            let asked = ExecGrant::new(std::path::PathBuf::from(program));
            if !out.requested.contains(&asked.name) || operator.contains(&asked.name) {
                continue;
            }
            let pattern = ArgPattern::new(&args.join(" "));
            match out.granted.iter_mut().find(|g| g.grant.name == asked.name) {
                Some(g) if g.grant.program == asked.program => {
                    let list = g.grant.args.get_or_insert_with(Vec::new);
                    if !list.contains(&pattern) {
                        list.push(pattern);
                    }
                }
                Some(_) => {}
                None => out.granted.push(GrantedProgram {
                    grant: ExecGrant { args: Some(vec![pattern]), ..asked },
                    env: Vec::new(),
                }),
            }
        }
        Some(Arc::new(out))
    }

    fn prepare(grant: &Arc<ExecGrants>, setup: &CallSetup<'_>) -> ProcessCall {
        ProcessCall {
            plugin: setup.plugin.clone(),
            exec: grant.clone(),
            workspace: setup.workspace.clone(),
            create_workspace: setup.config.workspace_is_default,
            deadline: Some(setup.deadline),
            runs: 0,
            settings: setup.config.process.clone(),
            refused: Vec::new(),
        }
    }

    fn add_to_linker<S: CallState>(linker: &mut Linker<S>, _: LinkOptions) -> wasmtime::Result<()> {
        crate::bindings::process::add_to_linker::<S, HasSelf<ProcessCall>>(linker, |s| &mut s.calls().exec)
    }
}

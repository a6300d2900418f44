//! The environment capability: variables a plugin requested (`capabilities.env`) that the
//! operator grants — by name from the host's environment (`[plugin.X] env`, `--allow-env`) or
//! with a value of the config's (`settings = { NAME = "value" }`, which wins) — set in the call's
//! WASI context. Nothing else of the host's environment reaches a plugin.

use super::{Capability, GrantContext, Missing, MissingKind};

/// The environment capability (see the module docs).
pub struct Env;

impl Capability for Env {
    /// Each granted variable with its value (read from the host's environment when the plugin
    /// loads).
    type Grant = Vec<(String, String)>;
    /// Nothing per call: the variables are in the WASI context.
    type Call = ();

    fn effective(cx: &GrantContext<'_>) -> (Self::Grant, Vec<Missing>) {
        let (plugin, grant) = (cx.plugin, cx.grant);
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for var in &cx.request.env {
            if let Some(value) = grant.settings.get(var) {
                out.push((var.clone(), value.clone()));
            } else if grant.env.iter().any(|g| g == var) {
                if let Ok(value) = std::env::var(var) {
                    out.push((var.clone(), value));
                }
            } else {
                missing.push(Missing {
                    kind: MissingKind::Env(var.clone()),
                    what: format!("env {var}"),
                    how: format!(
                        "[plugin.{plugin}] env = [\"{var}\"] or settings = {{ {var} = \"value\" }}  (or --allow-env {plugin}={var})"
                    ),
                });
            }
        }
        (out, missing)
    }

    fn prepare(_: &Self::Grant, _: &super::CallSetup<'_>) -> Self::Call {}
}
